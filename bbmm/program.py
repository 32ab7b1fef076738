"""The C program the command line names, compiled and made ready to run: the
compilation through the Python API (:func:`compile_args`), the extra sources, and
everything ``bbmm run`` makes before the run (:func:`prepare_run`: parameters, driver,
devices, inputs, the reference library), on one process or on every rank of an MPI run;
the run itself is :meth:`bbmm.api.Program.execute`'s (one process) or
:func:`bbmm.mpirun.execute_mpi`'s (ranks)."""
from __future__ import annotations

import argparse
import warnings
from typing import Any, NamedTuple

import numpy as np

from .config import RuntimeConfig
from .devargs import make_devices_from_args
from .diagnostic import BBMMWarning, UsageError
from .hostlib import prebuild
from .reference import init_arrays, init_function, reference_library
from .run import check_sizes, parse_params

__all__ = ["sources", "compile_args", "check_init_flags", "Prepared", "prepare_run"]


def sources(args: argparse.Namespace) -> list[str]:
    """The extra C sources of ``bbmm run FILE MORE.c ... --extra-source FILE``."""
    return list(getattr(args, "sources", [])) + list(getattr(args, "extra_sources", []))


def compile_args(args: argparse.Namespace, options: Any = None) -> Any:
    """The program of ``args.file`` compiled through the Python API
    (:func:`bbmm.api.compile`: the same checks of the file, ``-D`` parsing and cache),
    with the compiler's settings ``options``
    (:class:`bbmm.codegen.compile.CompileOptions`; None: the environment and
    ``args.tune``'s): a :class:`bbmm.api.Program`."""
    from bbmm.codegen.compile import CompileOptions

    from .api import compile

    if options is None:
        options = CompileOptions.from_env(tune=getattr(args, "tune", None))
    return compile(args.file, function=args.function, defines=args.defines,
                   include_dirs=args.include_dirs, split_all=getattr(args, "split_all", False),
                   schedule=getattr(args, "schedule", "auto"),
                   reassociate=getattr(args, "reassociate", False), options=options)


def check_init_flags(args: argparse.Namespace) -> None:
    """``--init`` and ``--no-init`` together are a usage error."""
    if args.init and args.no_init:
        raise UsageError("--init and --no-init exclude each other")


class Prepared(NamedTuple):
    """What ``bbmm run`` has made before the run (:func:`prepare_run`)."""

    params: dict[str, int]
    scalars: dict[str, float]
    module: Any
    """The host driver."""
    devices: list[Any]
    init: dict[str, np.ndarray]
    """The inputs, by model name, kept for ``--check``."""
    lib: Any
    """The reference library (``--init``, ``--check``), None when unused."""


def prepare_run(args: argparse.Namespace, prog: Any, config: RuntimeConfig) -> Prepared:
    """What ``bbmm run`` needs after compiling ``prog`` (a :class:`bbmm.api.Program`;
    ``--mpi`` too, on every rank), with the run's settings ``config``: the parameters of
    ``--param``, the driver, the devices, the inputs (``--init``, the file's init
    function, or seeded random data) and the reference library."""
    from bbmm.codegen.compile import out_of_bounds

    scop = prog.compiled.scop
    defaults = dict(scop.param_defaults)
    params, scalars = parse_params(args.param, scop.int_params, scop.float_params, defaults,
                                   dict(scop.c_names),
                                   dict(zip(scop.int_params, scop.int_param_types)))
    if defaults and any(params[p] != v for p, v in defaults.items()):
        for msg in out_of_bounds(scop, params):
            warnings.warn(msg, BBMMWarning, stacklevel=1)
    module = prog.module
    # an empty array, rows beyond 32-bit strides, or arrays beyond the host's memory are
    # refused before anything is built or allocated (the inputs, the host arrays, and
    # with --check the sequential program's copy)
    check_sizes(module, params, copies=3 if getattr(args, "check", False) else 2)
    init_name = args.init or (None if args.no_init else init_function(scop))
    include_dirs = list(prog.include_dirs)
    lib = None
    if init_name or args.check:          # one library for the init function and --check
        lib = reference_library(scop, prog.defines, include_dirs, init=init_name,
                                sources=sources(args))
    devices = make_devices_from_args(args, side=config.side)
    prebuild(module, devices, config.kernels)   # kernels build while the inputs are made
    init, scalars = init_arrays(scop, params, seed=args.seed, scalars=scalars,
                                defines=prog.defines, use_init=not args.no_init,
                                init=init_name, lib=lib, include_dirs=include_dirs)
    return Prepared(params, scalars, module, devices, init, lib)

"""The C program the command line names, compiled and made ready to run: ``-D`` defines,
extra sources, the compilation (:func:`compile_args`), and everything ``bbmm run`` needs
after it (:func:`prepare_run`: parameters, driver, devices, inputs, the reference
library), on one process or on every rank of an MPI run."""
from __future__ import annotations

import argparse
import os
import warnings
from typing import Any

from .config import RuntimeConfig
from .devargs import make_devices_from_args
from .diagnostic import BBMMWarning, UsageError
from .hostlib import prebuild
from .reference import init_arrays, init_function, reference_library
from .run import check_sizes, host_arrays, parse_params

__all__ = ["defines", "sources", "compile_args", "check_init_flags", "prepare_run"]


def sources(args: argparse.Namespace) -> list[str]:
    """The extra C sources of ``bbmm run FILE MORE.c ... --extra-source FILE``."""
    return list(getattr(args, "sources", [])) + list(getattr(args, "extra_sources", []))


def defines(args: argparse.Namespace) -> dict[str, str]:
    """``-D NAME[=VALUE]`` as a dict (a bare name is 1, as cc takes it)."""
    out = {}
    for d in args.defines:
        name, _, value = d.partition("=")
        out[name] = value or "1"
    return out


def compile_args(args: argparse.Namespace, options: Any = None) -> Any:
    """The program of ``args.file`` compiled (the compiler: :mod:`bbmm.codegen`) with the
    command line's ``--schedule``, ``--reassociate``, ``--split-all`` over ``options``
    (:class:`bbmm.codegen.compile.CompileOptions`; None: read from the environment and
    ``args.tune`` now)."""
    from dataclasses import replace

    from bbmm.codegen.compile import CompileOptions, compile_program

    if not os.path.exists(args.file):
        raise UsageError(f"{args.file}: no such file")
    if os.path.isdir(args.file):
        raise UsageError(f"{args.file}: is a directory, not a C file")
    if options is None:
        options = CompileOptions.from_env(tune=getattr(args, "tune", None))
    options = replace(options, split_all=getattr(args, "split_all", False),
                      schedule=getattr(args, "schedule", "auto"),
                      reassociate=getattr(args, "reassociate", False))
    return compile_program(args.file, function=args.function, defines=defines(args),
                           include_dirs=args.include_dirs, options=options)


def check_init_flags(args: argparse.Namespace) -> None:
    """``--init`` and ``--no-init`` together are a usage error."""
    if args.init and args.no_init:
        raise UsageError("--init and --no-init exclude each other")


def prepare_run(args: argparse.Namespace, prog: Any,
                config: RuntimeConfig) -> tuple[Any, ...]:
    """What ``bbmm run`` needs after compiling (``--mpi`` too, on every rank), with the
    run's settings ``config``: ``(params, scalars, module, devices, init, arrays, lib)``;
    ``arrays`` are the host arrays filled with the inputs ``init``, ``lib`` the reference
    library (None when unused)."""
    from bbmm.codegen.compile import load_driver, out_of_bounds

    scop = prog.scop
    defaults = dict(scop.param_defaults)
    params, scalars = parse_params(args.param, scop.int_params, scop.float_params, defaults,
                                   dict(scop.c_names),
                                   dict(zip(scop.int_params, scop.int_param_types)))
    if defaults and any(params[p] != v for p, v in defaults.items()):
        for msg in out_of_bounds(scop, params):
            warnings.warn(msg, BBMMWarning, stacklevel=1)
    module = load_driver(prog)
    # an empty array, rows beyond 32-bit strides, or arrays beyond the host's memory are
    # refused before anything is built or allocated (the inputs, the host arrays, and
    # with --check the sequential program's copy)
    check_sizes(module, params, copies=3 if getattr(args, "check", False) else 2)
    init_name = args.init or (None if args.no_init else init_function(scop))
    lib = None
    if init_name or args.check:          # one library for the init function and --check
        lib = reference_library(scop, defines(args), args.include_dirs, init=init_name,
                                sources=sources(args))
    devices = make_devices_from_args(args, side=config.side)
    prebuild(module, devices, config.kernels)   # kernels build while the inputs are made
    init, scalars = init_arrays(scop, params, seed=args.seed, scalars=scalars,
                                defines=defines(args), use_init=not args.no_init,
                                init=init_name, lib=lib, include_dirs=args.include_dirs)
    arrays = host_arrays(module, params, devices)
    for name, a in arrays.items():
        if name in init:                 # not a local array (an expanded temporary)
            a[...] = init[name]
    return params, scalars, module, devices, init, arrays, lib

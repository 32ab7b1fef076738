"""``python <kernel>_host.py ...``: a generated host driver run on its own, as a program
(the application layer over :mod:`bbmm.run` and, for ``--mpi``, :mod:`bbmm.mpirun`).

.. autofunction:: driver_main
"""
from __future__ import annotations

from types import ModuleType
from typing import Sequence

from .config import RuntimeConfig
from .console import OneLineParser, exit_interrupted, run_with_errors, watch_interrupts
from .devargs import add_device_options, make_devices_from_args, profile_path
from .mpirun import driver_mpi
from .run import (add_run_options, check_output, check_sizes, execute, parse_params,
                  random_inputs, report, report_stream, write_json)


def driver_main(module: ModuleType, argv: Sequence[str] | None = None) -> int:
    """``python <kernel>_host.py ...``: run a generated driver on its own."""
    p = OneLineParser(prog=f"{module.FUNCTION}_host.py",
                      description=f"bbmm driver for {module.FUNCTION} ({module.SOURCE})")
    add_device_options(p)
    add_run_options(p)
    args = p.parse_args(argv)

    config = RuntimeConfig()

    def read() -> int:
        nonlocal config
        config = RuntimeConfig.from_env(tune=args.tune)   # the run's settings, read once
        return 0
    rc = run_with_errors(read)
    if rc:
        return rc
    if args.procs not in ("1", "auto"):
        p.error(f"--procs {args.procs}: a generated driver runs in one process; use "
                f"bbmm run FILE.c --procs {args.procs}, or mpiexec with --mpi")
    if args.mpi:
        return run_with_errors(lambda: driver_mpi(module, args, config))

    def go() -> int:
        profile = profile_path(args)
        check_output(args.json, "--json")
        params, scalars = parse_params(args.param, module.INT_PARAMS, module.FLOAT_PARAMS,
                                       getattr(module, "PARAM_DEFAULTS", None),
                                       getattr(module, "C_NAMES", None),
                                       getattr(module, "INT_TYPES", None))
        check_sizes(module, params, copies=1)
        devices = make_devices_from_args(args, side=config.side)
        arrays = random_inputs(module, params, scalars, devices, args.seed)
        res = execute(module, devices, params, scalars, arrays, tile=args.tile, mode=args.mode,
                      reuse=not args.no_reuse, coherence=args.coherence,
                      progress=False if args.no_progress else None,
                      replay=False if args.no_replay else None, fuse=args.fuse,
                      profile=profile, config=config)
        print(report(res, module.FUNCTION, getattr(module, "RETURNS", None)),
              file=report_stream(args.json))
        if args.json:
            write_json(args.json, res.as_json(module.FUNCTION))
        return 0

    program = argv is None       # run as ``python <kernel>_host.py``, not called
    if program:
        watch_interrupts()       # Ctrl-C ends the driver within a second
    try:
        return run_with_errors(go)
    except KeyboardInterrupt:
        if program:
            exit_interrupted()
        raise

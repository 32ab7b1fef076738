"""A device cap that fits a program: one tile's footprint, measured by a dry run of its
driver (``bbmm.run._Footprint``), for tests whose random tight cap turned out to be below
one tile's boxes: they retry under a cap that fits instead of passing unchecked."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from bbmm.config import RuntimeConfig
from bbmm.run import FIT_SHARE, _Enough, _Footprint, host_arrays, parse_params
from bbmm.codegen.compile import compile_program, load_driver


def tile_footprint(path: str | Path, params: list[str] | dict[str, int], tile: int = 1,
                   ndev: int = 1) -> int:
    """Bytes one tile of ``tile`` rows needs on a device: the union of its boxes per
    array (the largest over the sampled serial iterations), plus the small read-only
    arrays held whole."""
    module = load_driver(compile_program(path))
    items = [f"{k}={v}" for k, v in params.items()] if isinstance(params, dict) else params
    ints, floats = parse_params(items, module.INT_PARAMS, module.FLOAT_PARAMS,
                                getattr(module, "PARAM_DEFAULTS", None),
                                getattr(module, "C_NAMES", None))
    for name, _ in module.FLOAT_PARAMS:
        floats.setdefault(name, 1.5)
    arrays = host_arrays(module, ints, [])
    probe = _Footprint(ndev, arrays)
    try:
        module.run(probe, ints, floats, tile, False)
    except _Enough:
        pass
    whole = sum(arrays[a].nbytes for a in getattr(module, "READ_ONLY", ())
                if a in arrays and arrays[a].nbytes <= RuntimeConfig.from_env().whole)
    return probe.peak + whole


def with_fitting_cap(argv: list[str], run: Callable[[list[str]], tuple[int, str]],
                     footprint: int, tries: int = 4) -> tuple[list[str], int, str]:
    """Run ``argv`` (its ``--device-mem`` replaced) under a cap computed from
    ``footprint``: twice it over :data:`bbmm.run.FIT_SHARE` plus 4 KiB (room for split
    pieces and alignment), doubled while the run still cannot allocate. Returns the
    argv, exit status and stderr of the last run."""
    cap = int(2 * footprint / FIT_SHARE) + 4096
    for _ in range(tries):
        args = list(argv)
        if "--device-mem" in args:
            args[args.index("--device-mem") + 1] = str(cap)
        else:
            args += ["--device-mem", str(cap)]
        rc, err = run(args)
        if not (rc != 0 and "cannot allocate" in err):
            break
        cap *= 2
    return args, rc, err

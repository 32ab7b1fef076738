"""Running a compiled program: devices, host arrays, the driver, ``--check``, the report.

Shared by ``bbmm run`` and by generated drivers run on their own
(``python floyd_host.py --devices 2 --param n=4096``).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from . import settings
from .box import union_volume
from .devargs import profile_path
from .diagnostic import BBMMError, UsageError, format_bytes
from .config import RuntimeConfig
from .hostlib import prebuild
from .profile import write_timeline
from .reference import compare, run_reference
from .reference.calls import _int_ctype
from .runtime import COHERENCE, MODES, Runtime, fuse_slack
from .stats import pace_line
from .version import __version__

DTYPES = {"float": np.float32, "double": np.float64, "int": np.int32, "char": np.int8,
          "unsigned char": np.uint8, "short": np.int16, "unsigned short": np.uint16,
          "unsigned int": np.uint32, "long": np.int64, "unsigned long": np.uint64,
          "_Bool": np.bool_}
"""numpy dtype per array element type (the same as :data:`bbmm.reference._DTYPES`)."""


def parse_params(items: Sequence[str] | None, int_params: Sequence[str],
                 float_params: Sequence[tuple[str, str]],
                 defaults: Mapping[str, int] | None = None,
                 c_names: Mapping[str, str] | None = None,
                 int_types: Mapping[str, str] | None = None) -> tuple[dict[str, int],
                                                                     dict[str, float]]:
    """``["n=64", "alpha=1.5"]`` -> (ints, floats); every integer parameter must be given,
    unless ``defaults`` (the sizes the C program's ``main`` passes) has it. ``c_names``
    (model name -> C name, the driver's ``C_NAMES``): the user names a renamed parameter
    by its C name (``iter=10``); the dicts are keyed by model names (``iter_``). A name
    given twice is an error; an integer must fit its C type (``int_types``: model name ->
    C type, ``int`` where absent) and the kernels' 32-bit ``int`` scalars."""
    public = dict(c_names or {})

    def c(name: str) -> str:
        return public.get(name, name)

    model = {c(n): n for n in int_params} | {c(n): n for n, _ in float_params}
    ints: dict[str, int] = {}
    floats: dict[str, float] = {}
    fnames = {n for n, _ in float_params}
    seen: dict[str, str] = {}
    for item in items or ():
        name, eq, value = item.partition("=")
        name = name.strip()
        if not eq or not name:
            raise UsageError(f"--param {item!r}: expected NAME=VALUE, e.g. --param n=1024")
        if name in seen:
            raise UsageError(f"--param {name} is given twice ({name}={seen[name]} and "
                             f"{name}={value}); give it once")
        seen[name] = value
        m = model.get(name)
        if m in int_params:
            try:
                ints[m] = int(value.strip(), 0)
            except ValueError:
                raise UsageError(f"--param {name}={value}: {name} is an integer parameter") from None
            check_int_param(name, ints[m], (int_types or {}).get(m, "int"))
        elif m in fnames:
            try:
                floats[m] = float(value)
            except ValueError:
                raise UsageError(f"--param {name}={value}: not a number") from None
        else:
            known = ", ".join([c(n) for n in int_params] + sorted(map(c, fnames))) or "none"
            raise UsageError(f"--param {name}: the kernel has no parameter {name!r} "
                             f"(its parameters: {known})")
    for name, value in (defaults or {}).items():
        ints.setdefault(name, int(value))
    missing = [c(p) for p in int_params if p not in ints]
    if missing:
        raise UsageError("missing " + ", ".join(f"--param {p}=VALUE" for p in missing) +
                         f" (the kernel's integer parameters: "
                         f"{', '.join(map(c, int_params))})")
    return ints, floats


INT32 = (-(1 << 31), (1 << 31) - 1)
"""The range of the kernels' integer scalars (OpenCL ``int``) and index strides."""


def int_range(ctype: str) -> tuple[int, int]:
    """The values of the C integer type ``ctype`` (``int``, ``unsigned long``, ``int64_t``
    ...), on this machine's C ABI."""
    import ctypes


    ct = _int_ctype(ctype)
    bits = 8 * ctypes.sizeof(ct)
    if ct(-1).value == -1:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def check_int_param(name: str, value: int, ctype: str = "int") -> None:
    """A :class:`UsageError` unless ``value`` fits both the parameter's C type and the
    kernels' 32-bit ``int``."""
    lo, hi = int_range(ctype)
    if not lo <= value <= hi:
        raise UsageError(f"--param {name}={value}: out of the range of its C type {ctype} "
                         f"[{lo}, {hi}]")
    lo, hi = INT32
    if not lo <= value <= hi:
        raise UsageError(f"--param {name}={value}: out of [{lo}, {hi}], the range of the "
                         f"32-bit int the OpenCL kernels take it as")


def host_memory() -> int | None:
    """Bytes of memory the host can give now (``MemAvailable``, else its physical
    memory); None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_sizes(module: ModuleType, params: Mapping[str, int], copies: int = 2,
                available: int | None = None) -> dict[str, tuple[int, ...]]:
    """The arrays' shapes (:func:`array_shapes`), after checking, before anything is
    allocated, that each array's rows fit the kernels' 32-bit strides and that
    ``copies`` of all the arrays (the inputs kept for ``--check`` and the host arrays
    the devices read and write; three with ``--check``: its result too) fit the host's
    available memory (``available``, default :func:`host_memory`): a
    :class:`UsageError` with the figures otherwise."""
    shapes = array_shapes(module, params)
    c_names = getattr(module, "C_NAMES", {})
    given = ", ".join(f"{c_names.get(k, k)}={v}" for k, v in params.items())
    total, big = 0, []
    for name, shape in shapes.items():
        ctype = module.ARRAYS[name][0]
        elems = 1
        for d in shape:
            elems *= max(0, d)
        nbytes = elems * np.dtype(DTYPES[ctype]).itemsize
        total += nbytes
        big.append((nbytes, name))
        row = elems // max(1, shape[0]) if shape else 1
        if max(shape, default=1) > INT32[1] or row > INT32[1]:
            what = (f"rows of {row} elements" if row > INT32[1] else
                    f"an extent of {max(shape)}")
            raise UsageError(f"{given}: {c_names.get(name, name)}"
                             f"[{']['.join(map(str, shape))}] has {what}, beyond the "
                             f"{INT32[1]} that the kernels' 32-bit int strides and indices "
                             f"take")
    avail = host_memory() if available is None else available
    if avail is not None and total * copies > avail:
        big.sort(reverse=True)
        which = ", ".join(f"{c_names.get(n, n)} {format_bytes(b)}" for b, n in big[:3])
        raise UsageError(f"{given}: the arrays take {format_bytes(total)} ({which}), "
                         f"{copies} copies on the host {format_bytes(total * copies)}, more "
                         f"than the {format_bytes(avail)} of memory the host has available")
    return shapes


def check_output(path: str | None, what: str) -> None:
    """A :class:`UsageError` now, before the run, when ``path`` (``--json``'s) cannot
    be written: a folder, a missing or unwritable parent folder, an unwritable file."""
    if path is None or path == "-":
        return
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise UsageError(f"{what} {path}: is a directory")
    if not os.path.isdir(parent):
        raise UsageError(f"{what} {path}: no such folder {parent}")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise UsageError(f"{what} {path}: not writable")
    if not os.path.exists(path) and not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: folder {parent} is not writable")


def write_json(path: str, doc: Any) -> None:
    """Write ``doc`` to ``path``, or to standard output for ``-`` (a :class:`BBMMError`
    naming the path when that fails)."""
    import sys

    if path == "-":
        json.dump(doc, sys.stdout, indent=1)
        sys.stdout.write("\n")
        sys.stdout.flush()
        return
    try:
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
    except OSError as e:
        raise BBMMError(f"--json {path}: cannot write: {e.strerror or e}") from None


@dataclass
class RunResult:
    """What a run produced: the arrays, the runtime's statistics, and the check."""

    arrays: dict[str, np.ndarray]
    runtime: Runtime
    params: dict[str, int]
    scalars: dict[str, float]
    tile: int
    wall_s: float
    check: str = "skipped"
    mismatches: list[str] = field(default_factory=list)

    def as_json(self, kernel: str) -> dict[str, Any]:
        rt = self.runtime
        st = rt.stats.as_json()
        return {**report_header(), "kernel": kernel, "devices": len(rt.devices),
                "params": self.params,
                "scalars": self.scalars, "tile": self.tile, "mode": rt.mode, "fuse": rt.fuse,
                "reuse": rt.reuse, "replay": rt.replay, "coherence": rt.coherence,
                "check": self.check,
                "mismatches": self.mismatches, "wall_s": self.wall_s,
                "pageable_host_arrays": pageable(self.arrays, rt.devices), **st}


REPORT_FORMAT = "bbmm-run"
"""The ``format`` of ``bbmm run --json`` (single process and over ranks alike); its
fields are documented by ``bbmm/schemas/run.schema.json``."""


def report_header(fmt: str = REPORT_FORMAT) -> dict[str, str]:
    """The first two fields of bbmm's JSON documents: ``format`` and bbmm's ``version``."""
    return {"format": fmt, "version": __version__}


def report_schema() -> dict[str, Any]:
    """The JSON Schema of the single-process run report (``bbmm/schemas/run.schema.json``,
    shipped with the package)."""
    from importlib import resources
    return json.loads(resources.files("bbmm").joinpath("schemas", "run.schema.json")
                      .read_text())


def report_stream(json_path: str | None) -> Any:
    """Where the run's text report goes: stderr when the JSON goes to stdout (``--json -``),
    else stdout."""
    import sys
    return sys.stderr if json_path == "-" else sys.stdout


@contextmanager
def host_profile(folder: str | None, rank: int = 0) -> Iterator[None]:
    """With ``folder`` (``--host-profile``): the host's Python inside profiled
    (cProfile), its statistics written to ``folder/rank<rank>.pstats`` at the end."""
    if folder is None:
        yield
        return
    import cProfile
    prof = cProfile.Profile()
    prof.enable()
    try:
        yield
    finally:
        prof.disable()
        os.makedirs(folder, exist_ok=True)  # an MPI rank on another node than rank 0
        prof.dump_stats(os.path.join(folder, f"rank{rank}.pstats"))


def host_profile_folder(args: argparse.Namespace) -> str | None:
    """``--host-profile DIR``, made if need be; a one-line UsageError where it cannot be
    written, before the run."""
    folder = getattr(args, "host_profile", None)
    if folder is None:
        return None
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--host-profile {folder}: cannot make the folder "
                         f"({e.strerror})") from None
    if not os.access(folder, os.W_OK):
        raise UsageError(f"--host-profile {folder}: the folder is not writable")
    return folder


def pageable(arrays: Mapping[str, np.ndarray], devices: Sequence[Any]) -> list[str]:
    """The host arrays in pageable memory although the devices could use pinned memory
    (the driver refused to pin them, or the caller passed its own): host-device copies
    from them run at 7-14 GB/s instead of 55 on an H200."""
    if not devices or getattr(devices[0], "pinned_empty", None) is None:
        return []
    from .devices.opencl import is_pinned
    return [a for a, x in arrays.items() if x.nbytes and not is_pinned(x)]


def array_shapes(module: ModuleType, params: Mapping[str, int]) -> dict[str, tuple[int, ...]]:
    """The shape of each array of the driver's ARRAYS at ``params``; a
    :class:`UsageError` where one has no element: the model takes every array to hold at
    least one (its context says so, e.g. ``n >= 1`` for ``x[n]``), and parameters outside
    it would leave the boxes and copies undefined."""
    env = dict(params)
    shapes = {name: tuple(int(eval(d, {"__builtins__": {}, "min": min, "max": max}, env))
                          for d in dims) for name, (_, dims) in module.ARRAYS.items()}
    locals_ = getattr(module, "LOCALS", frozenset())
    empty = [f"{name}[{']['.join(module.ARRAYS[name][1])}]" for name, shape in shapes.items()
             if name not in locals_ and any(d < 1 for d in shape)]
    if empty:
        c_names = getattr(module, "C_NAMES", {})
        given = ", ".join(f"{c_names.get(k, k)}={v}" for k, v in params.items())
        raise UsageError(f"{given}: {', '.join(empty)} would have no element; bbmm runs "
                         f"kernels whose arrays have at least one (a program with nothing to "
                         f"do need not run)")
    return shapes


def host_arrays(module: ModuleType, params: Mapping[str, int], devices: Sequence[Any],
                inputs: Mapping[str, np.ndarray] | None = None,
                alloc: Callable[[str, tuple[int, ...], Any], np.ndarray | None] | None = None
                ) -> dict[str, np.ndarray]:
    """Host arrays for the driver's ARRAYS, page-locked where the platform allows, holding
    ``inputs`` (by model name) where given, else zeros (a local array, an expanded
    temporary, is left as allocated: the program writes it before it reads it).
    ``alloc(name, shape, dtype)``: where it gives an array (memory other processes see),
    that array, page-locked by the first device where it can be."""

    out = {}
    pinned = getattr(devices[0], "pinned_empty", None) if devices else None
    pin = getattr(devices[0], "pin", None) if devices else None
    locals_ = getattr(module, "LOCALS", frozenset())
    shapes = array_shapes(module, params)
    for name, (ctype, dims) in module.ARRAYS.items():
        shape = shapes[name]
        dt = DTYPES[ctype]
        a = alloc(name, shape, dt) if alloc is not None else None
        if a is not None:
            a = pin(a) if pin is not None else a
        else:
            a = pinned(shape, dt) if pinned is not None else np.empty(shape, dt)
        if inputs is not None and name in inputs:
            a[...] = inputs[name]
        elif name not in locals_ or a.size == 1:   # (a loop's break flag starts at 0)
            a[...] = 0
        out[name] = a
    return out


def random_inputs(module: ModuleType, params: Mapping[str, int], scalars: dict[str, float],
                  devices: Sequence[Any], seed: int) -> dict[str, np.ndarray]:
    """A generated driver run on its own (``python <kernel>_host.py``, over MPI too): its
    float parameters 1.5 where not given, and host arrays of seeded random data."""
    for name, _ in module.FLOAT_PARAMS:
        scalars.setdefault(name, 1.5)
    arrays = host_arrays(module, params, devices)
    rng = np.random.default_rng(seed)
    for a in arrays.values():
        if a.dtype.kind == "f":
            a[...] = rng.random(a.shape)
        else:
            a[...] = rng.integers(0, 100, a.shape)
    return arrays


PIPELINE_BYTES = 64 << 20
"""The least data per tile when a program is cut into several tiles per device: its copies
take about 1.2 ms at 55 GB/s, far above the host's and the queues' cost per tile (0.1-0.2
ms; blackscholes with 80 MiB on one H200 ran slower in 4 tiles than in one)."""


def default_tile(module: ModuleType, params: Mapping[str, int],
                 arrays: Mapping[str, np.ndarray], ndev: int,
                 split: int = RuntimeConfig.pipeline) -> int:
    """The tile size when none is given: one tile per device (the paper's grid), or, for a
    program with no serial loop and no array that two nests access (blackscholes,
    matmul), up to ``split`` (:attr:`~bbmm.config.RuntimeConfig.pipeline`) tiles per device of at least :data:`PIPELINE_BYTES` each.

    One tile per device reads everything in, then computes, then writes everything back,
    each step waiting for the one before; with several, a tile's read-in (on the side
    queue) runs beside the kernel and the write-back of the tile before it (blackscholes
    on one H200: 25.9 ms in one tile, 17.9 in 16). A program with serial loops keeps one
    tile per device: its data stays resident from one iteration to the next, and more
    tiles would only add host work per iteration. Nor is a program cut whose nests share
    an array: a later nest reads boxes of another shape than an earlier one left (mvt:
    A's columns over A's row blocks), and more row blocks cover them in more pieces, which
    costs copies (mvt in memory: 0.96x in 4 tiles per device, 0.58x in 16)."""
    if split > 1 and getattr(module, "RUNS_ONCE", False) and not getattr(module, "SHARED", True):
        total = sum(a.nbytes for a in arrays.values())
        split = max(1, min(split, total // (max(1, ndev) * PIPELINE_BYTES)))
    else:
        split = 1
    return module.default_tile(params, ndev * split)


FIT_SHARE = 0.75
"""Share of a device's cap that one tile's boxes may fill when bbmm picks the tile (the
rest: alignment, boxes split around resident copies, arrays held whole)."""
FIT_SAMPLES = 16
"""Iterations of each serial loop a dry run of the driver looks at to find a tile's
footprint: the first, the last and evenly spaced ones between (a loop of
``for (i = 0; i < k; i++)`` under ``k`` has its largest boxes at the end, LU's at the
start, a product of a growing and a shrinking extent in the middle)."""
FIT_PHASES = 4096
"""Parallel phases a dry run looks at in all (nested serial loops multiply samples)."""


class _Enough(Exception):
    """Ends a dry run (:class:`_Footprint`)."""


def _spread(first: int, stop: int, count: int = FIT_SAMPLES) -> Sequence[int]:
    """At most ``count`` of ``first .. stop - 1``: both ends and evenly spaced ones
    between, in order."""
    n = stop - first
    if n <= count:
        return range(first, stop)
    return sorted({first + (n - 1) * i // (count - 1) for i in range(count)})


class _Footprint:
    """A stand-in runtime for a dry run of a driver: nothing moves and nothing runs; it
    keeps the most bytes one tile's boxes cover (the union of each array's boxes) over
    :data:`FIT_SAMPLES` iterations of each serial loop (the driver asks through
    :func:`bbmm.hostlib.serial_range`), at most :data:`FIT_PHASES` parallel phases."""

    def __init__(self, ndev: int, arrays: Mapping[str, np.ndarray]):
        self.devices = [None] * ndev
        self.itemsize = {a: x.itemsize for a, x in arrays.items()}
        self.peak = 0
        self.phases = 0

    @staticmethod
    def sample(first: int, stop: int) -> Sequence[int]:
        return _spread(first, stop)

    def run_phase(self, tiles: Sequence[Any], serial: tuple = (), **_: Any) -> None:
        for t in tiles:
            need = sum(union_volume(b for b in boxes if not b.is_empty) * self.itemsize[a]
                       for a, boxes in t.boxes.items())
            self.peak = max(self.peak, need)
        self.phases += 1
        if self.phases >= FIT_PHASES:
            raise _Enough

    def ahead(self, serial: object, sig: Any) -> bool:
        return False        # every sampled iteration's tiles are looked at

    def end_serial(self, *args: Any, **kw: Any) -> None:
        pass

    def stopped(self, flag: str) -> bool:
        return False        # nothing ran: every sampled iteration is looked at

    def finish(self) -> None:
        pass


def fitting_tile(module: ModuleType, params: Mapping[str, int], scalars: Mapping[str, float],
                 arrays: Mapping[str, np.ndarray], devices: Sequence[Any], tile: int,
                 ndev: int | None = None, note: bool = True) -> int:
    """``tile``, or a smaller one when a tile's boxes would not fit in
    :data:`FIT_SHARE` of the smallest device cap (``--device-mem`` below the data, with no
    ``--tile``): the paper's point is running data larger than the devices, and the
    default tile (one per device) needs all of it resident. A dry run of the driver
    (:class:`_Footprint`) over ``ndev`` devices (default: ``devices``, whose caps count)
    measures a tile's footprint; the tile shrinks in proportion until it fits, or to 1.
    A note on stderr says so (unless not ``note``)."""
    caps = [d.cap for d in devices if getattr(d, "cap", None)]
    if not caps:
        return tile
    budget = int(min(caps) * FIT_SHARE)
    if sum(a.nbytes for a in arrays.values()) <= budget:
        return tile                       # every tile fits: no dry run
    first = tile
    while True:
        probe = _Footprint(len(devices) if ndev is None else ndev, arrays)
        try:
            module.run(probe, params, scalars, tile, False)
        except _Enough:
            pass
        if probe.peak <= budget or tile == 1:
            break
        tile = max(1, min(tile - 1, tile * budget // max(1, probe.peak)))
    if tile != first and note:
        import sys
        print(f"bbmm: tile {tile} (not {first}): a tile's boxes then take "
              f"{format_bytes(probe.peak)} of {format_bytes(min(caps))} per device "
              f"(--tile sets it)", file=sys.stderr)
    return tile


def runtime_options(module: ModuleType, arrays: Mapping[str, np.ndarray],
                    config: RuntimeConfig | None = None) -> dict[str, Any]:
    """The runtime's options for a run of the driver ``module``: kernel slots per array,
    the small read-only arrays to hold whole (a parameter table read at ``[t]``, say: one
    copy for the run instead of one element per serial iteration, and iterations that
    repeat; :attr:`~bbmm.config.RuntimeConfig.whole`), and the run's ``config`` (None:
    read from the environment now)."""
    if config is None:
        config = RuntimeConfig.from_env()
    ro = getattr(module, "READ_ONLY", frozenset())
    whole = frozenset(a for a in ro if a in arrays and arrays[a].nbytes <= config.whole)
    return {"max_pieces": module.SLOTS, "whole": whole, "config": config}


@contextmanager
def frozen_heap(log: list[tuple[str, float, float]] | None = None) -> Iterator[None]:
    """Run a program's serial loop with the objects that exist before it frozen out of the
    garbage collector's reach (``gc.freeze``), and thawed after; with ``log`` (a
    runtime's :attr:`~bbmm.runtime.Runtime.host_log`), each collection of at least
    :data:`COLLECT_LOG_S` is added to it as a host step (``collect gen G at ...``), so
    that a trace shows the pauses and where they began.

    A full collection walks every object the compiled driver, the kernels and the
    runtime's caches hold: 14 ms in a dry Floyd process, 25-39 ms in a process driving a
    PoCL device, and every process of a ``--procs`` run waits for its neighbours each
    serial iteration, so one process's pause stalls them all. The loop's own objects
    are few and short-lived. Freezing and thawing move whole generations (no collection
    runs: garbage made before the loop waits for the first one after it). Where the
    caller has frozen objects already, nothing is changed (theirs stay as they are). The
    young passes come every :data:`LOOP_YOUNG` allocations in the loop."""
    hook = None
    if log is not None:
        hook = _collections_into(log)
        gc.callbacks.append(hook)
    threshold = gc.get_threshold()
    try:
        if threshold[0] and threshold[0] < LOOP_YOUNG:
            gc.set_threshold(LOOP_YOUNG, *threshold[1:])
        if gc.get_freeze_count():
            yield
        else:
            gc.freeze()
            try:
                yield
            finally:
                gc.unfreeze()
    finally:
        gc.set_threshold(*threshold)
        if hook is not None:
            gc.callbacks.remove(hook)


LOOP_YOUNG = 20_000
"""Allocations between the collector's young passes in the serial loop (the interpreter's
default is 700), where it is on (:func:`frozen_heap`): the loop's objects die young, freed
by their reference counts, and a young pass walks only those still alive, so fewer
passes walk fewer objects in all. On four H200s, against 700, loop medians of
alternating rounds: Floyd n=16384 0.193 ms per ``k`` against 0.225, LU n=16384 0.290
against 0.335, heat2d unchanged (``python3 scripts/bench_ab.py --base B --rounds 5 -- run
polybench/floyd.c --param n=16384 --devices 4``, ``B`` the tree before;
``docs/performance.md``)."""


COLLECT_LOG_S = 1e-3
"""Seconds from which a collection in the serial loop is a host step of a trace
(:func:`frozen_heap`): the young collections of a few hundred microseconds each would
crowd it."""


def _collections_into(log: list[tuple[str, float, float]]) -> Any:
    """A collector callback that adds each collection of at least :data:`COLLECT_LOG_S`
    to ``log`` as ``("collect gen G at FILE:LINE FUNCTION", start, end)``: where the
    Python code stood when it began, the allocation that crossed a threshold, or the
    call that asked for it (pyopencl collects before it retries an enqueue or an
    allocation the driver refused for want of resources)."""
    started = [0.0, ""]

    def hook(phase: str, info: dict[str, int]) -> None:
        now = time.perf_counter()
        if phase == "start":
            f = sys._getframe(1)
            started[0] = now
            started[1] = (f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno} "
                          f"{f.f_code.co_name}") if f is not None else "?"
        elif now - started[0] >= COLLECT_LOG_S:
            log.append((f"collect gen {info['generation']} at {started[1]}", started[0],
                        now))
    return hook


def execute(module: ModuleType, devices: Sequence[Any], params: dict[str, int],
            scalars: dict[str, float], arrays: dict[str, np.ndarray], *, tile: int | None = None,
            mode: str = "disjoint", reuse: bool = True, coherence: str = "exact",
            progress: bool | None = None, replay: bool | None = None,
            fuse: float | None = None, profile: str | None = None,
            config: RuntimeConfig | None = None) -> RunResult:
    """Run a driver module on devices and host arrays (which hold the inputs) with the
    run's settings ``config`` (None: read from the environment now); with
    ``profile`` (a file, :func:`profile_path`) write the devices' timeline there after the
    run (the devices must have been made with ``profile=True``) and print its summary on
    stderr. The run's wall time does not include reading the profile."""
    if config is None:
        config = RuntimeConfig.from_env()
    if tile is None:
        tile = fitting_tile(module, params, scalars, arrays, devices,
                            default_tile(module, params, arrays, len(devices),
                                         config.pipeline))
    if tile < 1:
        raise UsageError(f"--tile must be at least 1, got {tile}")
    rt = Runtime(devices, arrays, mode=mode, reuse=reuse, coherence=coherence, replay=replay,
                 fuse=fuse, **runtime_options(module, arrays, config))
    prebuild(module, devices, config.kernels)  # unless started already: beside the read-ins
    with frozen_heap(rt.host_log):
        t0 = time.perf_counter()
        module.run(rt, params, scalars, tile, progress)
        wall = time.perf_counter() - t0
    if profile is not None:
        write_timeline(profile, devices, {"kernel": module.FUNCTION, "params": params,
                                          "tile": tile, "wall_s": wall,
                                          "stats": rt.stats.as_json()},
                       host=[("run", t0, t0 + wall)] + (rt.host_log or []))
    return RunResult(arrays, rt, params, scalars, tile, wall)


def _fraction(text: str) -> float:
    """``--fuse``'s value: a fraction in [0, 1) such as 0.02 or 1/64."""
    try:
        value = fuse_slack(text)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e).replace("BBMM_FUSE: ", "")) from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not in [0, 1)")
    return value


def _seed(text: str) -> int:
    """``--seed``'s value: numpy's generators take non-negative integers."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative (seeds are >= 0)")
    return value


def add_run_options(p: argparse.ArgumentParser) -> None:
    """Options of ``bbmm run`` that a standalone driver takes too."""
    g = p.add_argument_group("run")
    g.add_argument("--param", action="append", metavar="NAME=VALUE", default=[],
                   help="value of a kernel parameter (repeatable; every integer parameter "
                        "is required; floating ones default to 1.5)")
    g.add_argument("--tile", type=int, default=None, metavar="T",
                   help="tile size of the outermost parallel loop (default: one tile per "
                        "device of the widest nest; for a program without serial loops up to "
                        "$BBMM_PIPELINE (16) tiles per device of at least 64 MiB each, so that "
                        "read-ins, kernels and write-backs overlap; a nest outside every "
                        "serial loop that this grid would leave on fewer devices is cut "
                        "smaller, by its own range, so that every device gets tiles; "
                        "smaller again when a tile's boxes would fill more than 3/4 of "
                        "--device-mem)")
    g.add_argument("--mode", choices=MODES, default="disjoint",
                   help="box allocation: disjoint boxes (BBMM) or one convex hull per array "
                        "(Kim et al. 2011)")
    g.add_argument("--fuse", type=_fraction, default=None, metavar="F",
                   help="fuse a tile's disjoint boxes of an array it reads into their hull "
                        "when that adds at most F of the hull's points (one box per array: "
                        "no split accesses in the kernel), and let a new box grow over "
                        "resident copies it overlaps by at most F of its points (one copy "
                        "where two nests read nearly the same box); default 1/64 or "
                        "$BBMM_FUSE; 0: the paper's exact disjoint boxes")
    g.add_argument("--tune", action="append", default=[], metavar="NAME=VALUE",
                   help="a tuning setting for this run (repeatable), e.g. --tune coarsen=2 "
                        "--tune block=8x1 --tune stage=off; NAME is one of "
                        + ", ".join(settings.TUNABLE) + " (the $BBMM_NAME variables, which "
                        "it overrides; docs/cli.md lists what each does and its default)")
    g.add_argument("--no-reuse", action="store_true",
                   help="allocate and read in every tile's boxes afresh (no inter-tile reuse)")
    g.add_argument("--no-replay", action="store_true",
                   help="redo the memory management of every serial iteration (default: a "
                        "time step that leaves the device state as it found it is replayed, "
                        "and one that repeats another with its boxes moved, as Floyd's step "
                        "k; also $BBMM_REPLAY=0)")
    g.add_argument("--coherence", choices=COHERENCE, default="exact",
                   help="exact flow-out sets (BBMM) or whole written blocks (block coherence)")
    g.add_argument("--seed", type=_seed, default=0,
                   help="seed of the random input data (a non-negative integer)")
    g.add_argument("--json", metavar="PATH", default=None,
                   help="write the run's statistics as JSON to PATH ('-': standard output, "
                        "the text report then on stderr); fields: "
                        "bbmm/schemas/run.schema.json")
    g.add_argument("--profile", metavar="FILE", default=None,
                   help="record every device command with OpenCL profiling events and write "
                        "the run's timeline to FILE as a Chrome trace that Perfetto opens "
                        "(gzip if it ends in .gz): copies and kernels per device queue, the "
                        "host's steps, the garbage collector's pauses; prints a summary per "
                        "device on stderr (also $BBMM_PROFILE; bbmm timeline FILE summarizes "
                        "it again)")
    g.add_argument("--host-profile", metavar="DIR", default=None,
                   help="profile the host's Python in each process of the run (cProfile) "
                        "and write DIR/rank<R>.pstats (rank0 for a run in one process): "
                        "where a host-bound run spends its time; python3 "
                        "scripts/host_profile.py DIR summarizes them")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g.add_argument("--procs", default="auto", metavar="P",
                   help="run over P processes of this machine, each driving its share of "
                        "the devices with its own context and queues, data between them "
                        "through shared memory (P must divide --devices); 'auto' (default): "
                        "one per GPU when the run has 4 GPUs or more, each device a GPU of "
                        "its own, else 1")
    g.add_argument("--mpi", action="store_true",
                   help="run over MPI ranks (launch with mpiexec -n R ...): tiles spread over "
                        "the devices of every rank, data sent only to the ranks that read it "
                        "(docs/mpi.md)")
    g.add_argument("--mpi-result", choices=("gather", "distributed"), default="gather",
                   help="with --mpi: gather the result on rank 0 (default) or leave each part "
                        "on the rank that computed it")


def report(res: RunResult, kernel: str, returns: str | None = None) -> str:
    """The run's summary; ``returns``: the array holding the kernel's returned value."""
    rt = res.runtime
    st = rt.stats
    lines = [f"{kernel}: {len(rt.devices)} device(s), tile {res.tile}, {st.tiles} tiles, "
             f"{res.wall_s:.3f} s; check {res.check}"]
    if returns is not None and returns in res.arrays:
        lines.append(f"  returned {res.arrays[returns].reshape(-1)[0].item()!r}")
    for d, ds in zip(rt.devices, st.devices):
        lines.append(f"  {d.name}: peak {format_bytes(ds.peak_bytes)}, h2d "
                     f"{format_bytes(ds.h2d_bytes)}, d2h {format_bytes(ds.d2h_bytes)}, d2d "
                     f"{format_bytes(ds.d2d_bytes)}, {ds.evictions} box-outs")
    b = st.bytes
    lines.append(f"  coherence: flow-out {format_bytes(b['flowout'])}, flow-in "
                 f"{format_bytes(b['flowin'])}, write-out {format_bytes(b['writeout'])}, "
                 f"read-in {format_bytes(b['readin'])}; memory management "
                 f"{st.overhead_percent:.2f}% of {st.total_time:.3f} s")
    if st.replayed:
        ahead = f", {st.ahead} of them without their tiles built" if st.ahead else ""
        moved = f" ({st.shifted} up to a shift of their boxes{ahead})" if st.shifted else ""
        lines.append(f"  replayed {st.replayed} serial iteration(s) that repeated an earlier "
                     f"one{moved} (--no-replay: redo their memory management)")
    pace = pace_line([st.as_json()])
    if pace is not None:
        lines.append(pace)
    slow = pageable(res.arrays, rt.devices)
    if slow:
        nbytes = sum(res.arrays[a].nbytes for a in slow)
        lines.append(f"  host arrays in pageable memory: {', '.join(slow)} "
                     f"({format_bytes(nbytes)}); their copies run at pageable speed")
    return "\n".join(lines)


def check_against_reference(res: RunResult, c_path: str, scop: Any, initial: dict[str, np.ndarray],
                            defines: Mapping[str, str] | None = None, lib: Any = None,
                            include_dirs: Sequence[str] = ()) -> None:
    """``--check``: run the sequential C kernel on the initial data and compare every array
    (``lib``: the reference library, if already built)."""

    expect = run_reference(c_path, scop, res.params, res.scalars, initial,
                           defines=dict(defines or {}), lib=lib, include_dirs=include_dirs)
    bad = []
    for a in scop.param_arrays:
        m = compare(scop.c_name(a.name), res.arrays[a.name], expect[a.name], a.ctype)
        if m is not None:
            bad.append(str(m))
    res.check = "fail" if bad else "pass"
    res.mismatches = bad

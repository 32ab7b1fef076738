"""Shared helpers of the paper-experiment scripts (``scripts/exp_*.py``).

Ramashekar & Bondhugula, TACO 2013, Section 11: Table IV and Figure 10 (a)-(e), (h),
and Figure 3(h). Each ``exp_*.py`` script is one experiment; this module holds what
they share:

* the programs (``polybench/*.c``): dependence pattern, the paper's Table IV columns,
  problem sizes (``tiny``: CI sizes, for exact element counting and tests; ``small``:
  a few seconds per run on a 2-core CPU with PoCL; ``paper``: Table IV "data size on
  1 GPU"), and the data-scaling rule of Figure 10(a);
* the command line every script takes (:func:`make_parser`): ``--programs``,
  ``--devices`` (a comma list of logical device counts), ``--sizes``, ``--param``,
  ``--device-mem``, ``--repeat``, ``--warmup``, ``--tile``, ``--out``, ``--check``;
* running one program configuration (:func:`measure`): a warm-up run, then
  ``--repeat`` timed runs (medians), through a :class:`RecordingRuntime` that also
  records per-serial-iteration times and bytes and (optionally) the boxes each
  device holds in each serial iteration; the result is a flat dict of figures;
* exact counting by enumeration of every statement instance at small sizes
  (:class:`Instances`): the exact per-device footprint (Figure 10(b)) and the minimum
  coherence volume (Figure 3(h));
* output: CSV, JSON, PNG (matplotlib, Agg) under ``results/<machine>-<date>/`` and a text
  table on stdout; a tiny progress bar on stderr when it is a terminal.

Definitions used by several scripts (also in each script's docstring):

* *serial iteration*: one iteration of the outermost serial (host) loop (``k`` of
  floyd and lu, ``t`` of the stencils and adi). Programs without a serial loop
  (mvt, blackscholes, matmul) count as one iteration.
* *device*: the static 1-D block distribution bbmm uses
  (:func:`bbmm.hostlib.device_of` of the tile index, tile size ``module.default_tile``
  unless ``--tile``; a nest outside every serial loop may be cut by its own range,
  :func:`bbmm.hostlib.once_grid`); a statement instance belongs to the tile holding its value of
  the nest's first band loop; instances of band-less nests run on device 0.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import platform as _platform
import re
import statistics
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

_HERE = Path(__file__).resolve().parent
ROOT = _HERE.parent
if str(ROOT) not in sys.path:  # `python scripts/exp_x.py` from anywhere
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bbmm.box import Box, union_volume  # noqa: E402
from bbmm.diagnostic import BBMMError, format_bytes, parse_bytes  # noqa: E402
from bbmm.hostlib import Progress  # noqa: E402 - the one progress bar (generated drivers too)
from bbmm.runtime import Runtime  # noqa: E402
from bbmm.run import pageable, runtime_options  # noqa: E402

POLYBENCH = ROOT / "polybench"

# {{{ the programs


@dataclass(frozen=True)
class ProgramInfo:
    name: str
    pattern: str
    """Dependence pattern (Table IV)."""
    sizes: Mapping[str, Mapping[str, int]]
    """``tiny`` / ``small`` / ``paper`` -> integer parameters."""
    scale: Mapping[str, float]
    """Figure 10(a) data scaling: ``param -> exponent``; on N devices the parameter is
    ``round(value * N ** exponent)`` so that the data per device stays constant."""
    paper: Mapping[str, Any] = field(default_factory=dict)
    """Table IV of the paper: A, B, D, E, F (percent), size_gb."""
    scalars: Mapping[str, float] = field(default_factory=dict)
    source: str = ""

    @property
    def path(self) -> Path:
        return POLYBENCH / f"{self.name}.c"


PROGRAMS: dict[str, ProgramInfo] = {p.name: p for p in [
    ProgramInfo("floyd", "nonuniform",
                {"tiny": {"n": 64}, "small": {"n": 512}, "paper": {"n": 16384}},
                {"n": 0.5}, {"A": 1, "B": 2, "D": 2, "E": "yes", "F": 0.05, "size_gb": 2.0},
                source="Polybench"),
    ProgramInfo("heat2d", "uniform",
                {"tiny": {"tsteps": 4, "n": 64}, "small": {"tsteps": 20, "n": 1024},
                 "paper": {"tsteps": 10, "n": 12288}},
                {"n": 0.5}, {"A": 2, "B": 2, "D": 4, "E": "yes", "F": 0.10, "size_gb": 2.25},
                source="Pochoir"),
    ProgramInfo("fdtd2d", "uniform",
                {"tiny": {"tmax": 4, "nx": 48, "ny": 40},
                 "small": {"tmax": 20, "nx": 1024, "ny": 1024},
                 "paper": {"tmax": 10, "nx": 10240, "ny": 10240}},
                {"nx": 0.5, "ny": 0.5},
                {"A": 3, "B": 2, "D": 2, "E": "yes", "F": 0.06, "size_gb": 2.4},
                source="Polybench"),
    ProgramInfo("heat3d", "uniform",
                {"tiny": {"tsteps": 3, "n": 16}, "small": {"tsteps": 20, "n": 96},
                 "paper": {"tsteps": 10, "n": 512}},
                {"n": 1 / 3}, {"A": 2, "B": 3, "D": 4, "E": "yes", "F": 0.04, "size_gb": 2.0},
                source="Pochoir"),
    ProgramInfo("lu", "nonuniform",
                {"tiny": {"n": 64}, "small": {"n": 512}, "paper": {"n": 16384}},
                {"n": 0.5}, {"A": 1, "B": 2, "D": 3, "E": "yes", "F": 0.07, "size_gb": 2.0},
                source="Polybench"),
    ProgramInfo("adi", "uniform",
                {"tiny": {"tsteps": 3, "n": 32}, "small": {"tsteps": 10, "n": 1024},
                 "paper": {"tsteps": 10, "n": 8192}},
                {"n": 0.5}, {"A": 3, "B": 2, "D": 2, "E": "yes", "F": 0.01, "size_gb": 1.5},
                source="Polybench"),
    ProgramInfo("mvt", "EP",
                {"tiny": {"m": 80, "n": 48}, "small": {"m": 4096, "n": 2048},
                 "paper": {"m": 20480, "n": 10240}},
                {"m": 1.0}, {"A": 3, "B": 2, "D": 1, "E": "no", "F": 0.01, "size_gb": 1.5},
                source="Polybench"),
    ProgramInfo("blackscholes", "EP",
                {"tiny": {"n": 4096}, "small": {"n": 1 << 22}, "paper": {"n": 67108864}},
                {"n": 1.0}, {"A": 3, "B": 1, "D": 1, "E": "no", "F": 0.01, "size_gb": 1.5},
                scalars={"riskfree": 0.02, "volatility": 0.30}, source="NVIDIA SDK"),
    ProgramInfo("matmul", "EP",
                {"tiny": {"ni": 48, "nj": 40, "nk": 32},
                 "small": {"ni": 512, "nj": 512, "nk": 512},
                 "paper": {"ni": 8192, "nj": 8192, "nk": 8192}},
                {"ni": 1.0}, {}, scalars={"alpha": 1.5, "beta": 1.2}, source="Polybench"),
]}

TABLE4 = ("floyd", "heat2d", "fdtd2d", "heat3d", "lu", "adi", "mvt", "blackscholes")
"""The programs of Table IV, in the paper's order."""

STENCILS = ("heat2d", "heat3d", "fdtd2d", "adi")


STEPS = ("tsteps", "tmax")
"""Time-step parameters: a run more steps longer gives the steady time per step."""


def step_param(params: Mapping[str, int]) -> str | None:
    """The program's time-step parameter among ``params`` (None: it has none)."""
    return next((k for k in STEPS if k in params), None)


def scaled_params(name: str, base: Mapping[str, int], ndev: int) -> dict[str, int]:
    """Figure 10(a)'s rule: the data per device stays constant on ``ndev`` devices."""
    info = PROGRAMS[name]
    out = dict(base)
    for p, e in info.scale.items():
        out[p] = max(1, int(round(base[p] * ndev ** e)))
    return out

# }}}

# {{{ command line


def make_parser(exp: str, doc: str | None, *, programs: Sequence[str], devices: str = "2",
                sizes: str = "small", repeat: int = 3, device_mem: str | None = None
                ) -> argparse.ArgumentParser:
    """The options every experiment takes; scripts add their own."""
    p = argparse.ArgumentParser(prog=f"exp_{exp}.py", description=(doc or "").strip(),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--programs", default=",".join(programs), metavar="P1,P2",
                   help=f"programs to run (default: %(default)s; known: "
                        f"{', '.join(PROGRAMS)}; 'all' for the default set)")
    p.add_argument("--devices", default=devices, metavar="N[,N...]",
                   help="logical device counts (default: %(default)s); with no GPU they "
                        "share the CPU, each with its own context and memory")
    p.add_argument("--sizes", default=sizes, choices=("tiny", "small", "paper"),
                   help="problem sizes: tiny (CI), small (CPU, seconds), paper (Table IV, "
                        "data on 1 GPU; for GPUs) (default: %(default)s)")
    p.add_argument("--param", action="append", default=[], metavar="[PROG:]NAME=VALUE",
                   help="override a size parameter, for every selected program that has "
                        "it or only for PROG (repeatable)")
    p.add_argument("--device-mem", default=device_mem, metavar="SIZE",
                   help="memory cap per logical device, e.g. 1MiB or 2.5GiB (default: "
                        + (device_mem or "90%% of the device, shared among logical devices")
                        + ")")
    p.add_argument("--repeat", type=int, default=repeat,
                   help="timed runs per configuration; figures are medians (default: "
                        "%(default)s)")
    p.add_argument("--warmup", type=int, default=1,
                   help="untimed runs first (kernel builds, pools) (default: %(default)s)")
    p.add_argument("--tile", type=int, default=None,
                   help="tile size (default: the driver's default_tile, one tile per device)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output folder (default: results/<machine>-<date>/, e.g. "
                        "results/pocl-cpu-2026-11-22)")
    p.add_argument("--platform", default=None, help="OpenCL platform (index or name part)")
    p.add_argument("--check", action="store_true",
                   help="compare the first run of every configuration with the sequential "
                        "C program (small sizes only)")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def device_counts(args: argparse.Namespace) -> list[int]:
    out = []
    for x in str(args.devices).split(","):
        x = x.strip()
        if not x:
            continue
        if "-" in x:
            a, b = x.split("-")
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(x))
    if not out or min(out) < 1:
        raise SystemExit(f"--devices: expected positive counts, got {args.devices!r}")
    return out


def program_list(args: argparse.Namespace, default: Sequence[str]) -> list[str]:
    if args.programs in ("all", ""):
        return list(default)
    names = [x.strip() for x in args.programs.split(",") if x.strip()]
    bad = [n for n in names if n not in PROGRAMS]
    if bad:
        raise SystemExit(f"--programs: unknown {', '.join(bad)} (known: {', '.join(PROGRAMS)})")
    return names


def program_params(args: argparse.Namespace, name: str, sizes: str | None = None
                   ) -> dict[str, int]:
    """The size parameters of ``name`` for ``--sizes`` with the ``--param`` overrides."""
    info = PROGRAMS[name]
    return override_params(dict(info.sizes[sizes or args.sizes]), args.param, name, "PROG")


def override_params(params: dict[str, Any], items: list[str], name: str,
                    what: str = "PROG") -> dict[str, Any]:
    """``params`` of program ``name`` with the ``--param [WHAT:]NAME=VALUE`` overrides
    ``items`` (a name the program does not have is skipped unless the item names the
    program); a float parameter stays a float."""
    for item in items:
        target, _, rest = item.rpartition(":")
        key, eq, value = rest.partition("=")
        if not eq:
            raise SystemExit(f"--param {item!r}: expected [{what}:]NAME=VALUE")
        if target and target != name:
            continue
        if key in params:
            params[key] = float(value) if isinstance(params[key], float) else int(value, 0)
        elif target:
            raise SystemExit(f"--param {item}: {name} has no parameter {key!r} "
                             f"(its parameters: {', '.join(params)})")
    return params


def device_mem(args: argparse.Namespace) -> int | None:
    return None if args.device_mem in (None, "") else parse_bytes(args.device_mem)


def machine_slug(platform: str | int | None = None) -> str:
    """``pocl-cpu``, ``h200x2``...: the machine part of ``results/<machine>-<date>/``."""
    from bbmm.devices.opencl import discover

    try:
        chosen = discover(platform).chosen
    except Exception:  # pragma: no cover - no OpenCL at all
        chosen = ()
    if not chosen:
        return re.sub(r"[^a-z0-9]+", "-", _platform.node().lower()).strip("-") or "unknown"
    d = chosen[0]
    if d.type == "GPU":
        m = re.search(r"\b([A-Za-z]{1,2}\d{2,4}[A-Za-z]?)\b", d.name)
        model = m.group(1).lower() if m else re.sub(r"[^a-z0-9]+", "-", d.name.lower()).strip("-")
        return f"{model}x{len(chosen)}"
    plat = d.platform.lower()
    if "portable computing" in plat or "pocl" in plat:
        return "pocl-cpu"
    return re.sub(r"[^a-z0-9]+", "-", d.name.lower()).strip("-") + "-cpu"


def out_dir(args: argparse.Namespace) -> Path:
    if args.out:
        d = Path(args.out)
    else:
        day = time.strftime("%Y-%m-%d", time.gmtime())
        d = ROOT / "results" / f"{machine_slug(args.platform)}-{day}"
    d.mkdir(parents=True, exist_ok=True)
    return d

# }}}

# {{{ progress and devices


class Sweep:
    """Every ``(device count, devices, program)`` of an experiment, in order, with its
    progress bar and one live device set at a time; :attr:`note` describes the devices
    of the count being run (the last one after the loop)."""

    def __init__(self, args: argparse.Namespace, exp: str, names: Sequence[str],
                 ndevs: Sequence[int]):
        self.args, self.exp, self.names, self.ndevs = args, exp, list(names), list(ndevs)
        self.note = ""

    def __iter__(self) -> Iterator[tuple[int, list[Any], str]]:
        a = self.args
        bar = Progress(len(self.names) * len(self.ndevs), self.exp,
                       False if a.no_progress else None)
        with DeviceSet(device_mem(a), a.platform) as ds:
            for nd in self.ndevs:
                devs = ds.get(nd)
                self.note = device_note(devs)
                for name in self.names:
                    bar.show(f"{name} x{nd}")
                    yield nd, devs, name
                    bar.step(what=f"{name} x{nd}")
        bar.close()


class DeviceSet:
    """Logical devices made on demand; only one set of a given count is alive at a time
    (GPU memory: each set has its own contexts and pools)."""

    def __init__(self, cap: int | None = None, platform: str | int | None = None):
        self.cap = cap
        self.platform = platform
        self.n: int | None = None
        self.devices: list[Any] = []

    def get(self, n: int) -> list[Any]:
        if self.n != n:
            self.close()
            from bbmm.devices.opencl import make_devices
            from bbmm.profile import target
            self.devices = make_devices(n, cap=self.cap, platform=self.platform,
                                        profile=target(None) is not None)
            self.n = n
        return self.devices

    def close(self) -> None:
        for d in self.devices:
            try:
                d.close()
            except Exception:  # pragma: no cover
                pass
        self.devices = []
        self.n = None

    def __enter__(self) -> "DeviceSet":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

# }}}

# {{{ programs ready to run


@dataclass
class Bench:
    """A compiled program with its parameters, scalars and initial arrays."""

    name: str
    prog: Any
    module: Any
    params: dict[str, int]
    scalars: dict[str, float]
    init: dict[str, np.ndarray]
    split_all: bool = False

    @property
    def array_bytes(self) -> int:
        return int(sum(a.nbytes for a in self.init.values()))

    @property
    def param_text(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.params.items())


_COMPILED: dict[tuple[str, bool], tuple[Any, Any]] = {}


def compiled(name: str, split_all: bool = False) -> tuple[Any, Any]:
    """``(Program, driver module)`` of a polybench program (compiled once per process)."""
    key = (name, split_all)
    if key not in _COMPILED:
        from bbmm.codegen.compile import compile_program, load_driver
        prog = compile_program(PROGRAMS[name].path, split_all=split_all)
        _COMPILED[key] = (prog, load_driver(prog))
    return _COMPILED[key]


def load_bench(name: str, params: Mapping[str, int], *, split_all: bool = False,
               seed: int = 0, init: bool = True) -> Bench:
    """Compile (cached), and fill the inputs with ``bbmm.reference.init_arrays`` (the file's
    ``init_<kernel>`` where there is one)."""
    from bbmm.reference import init_arrays

    prog, module = compiled(name, split_all)
    scal = dict(PROGRAMS[name].scalars)
    if init:
        arrays, scalars = init_arrays(prog.scop, dict(params), seed=seed, scalars=scal)
    else:
        arrays = {a.name: np.zeros(a.shape(params), dtype=_dtype(a.ctype))
                  for a in prog.scop.arrays}
        scalars = {n: float(scal.get(n, 1.5)) for n, _ in prog.scop.float_params}
    return Bench(name, prog, module, dict(params), scalars, arrays, split_all)


def _dtype(ctype: str) -> Any:
    return {"float": np.float32, "double": np.float64, "int": np.int32}[ctype]

# }}}

# {{{ running one configuration


class RecordingRuntime(Runtime):
    """The runtime, plus what the experiments need to see inside a run:

    * ``marks``: ``(outer serial value, perf_counter, bytes snapshot)`` at the end of
      every iteration of the outermost serial loop;
    * ``max_pieces``: the most disjoint boxes one tile held for one array;
    * with ``record_boxes``: ``live[(device, serial)][array]``, the boxes of the copies
      every tile of that device used in that serial iteration (present boxes included),
      ``live_copies[(device, serial)]``, ``{copy: bytes}`` of those copies, and
      ``held[(device, serial)]``: the most bytes of those copies still resident at the
      end of a phase of that iteration (a copy replaced by a grown box during the
      iteration no longer counts once it is freed).
    """

    def __init__(self, *a: Any, record_boxes: bool = False, **kw: Any):
        if record_boxes:
            # the boxes are recorded as tiles acquire them: a replayed iteration acquires
            # nothing (it re-issues the recorded copies and launches)
            kw["replay"] = False
        super().__init__(*a, **kw)
        self.record_boxes = record_boxes
        # every tile's boxes pass through _acquire on their way from the acquirer
        self._acquire_boxes = self.acquirer.acquire
        self.acquirer.acquire = self._acquire  # type: ignore[method-assign]
        # time of the data transfers (host<->device, device<->device copies) per runtime
        # timer they happen under, so that Table IV's F can also be given without them
        self.transfer_s: dict[str, float] = {}
        self._cur_timer = ""
        outer = self.stats.timer

        @contextmanager
        def timer(what: str) -> Iterator[None]:
            prev, self._cur_timer = self._cur_timer, what
            try:
                with outer(what):
                    yield
            finally:
                self._cur_timer = prev

        self.stats.timer = timer  # type: ignore[method-assign]
        # bytes per (direction, category): ``xfer_bytes["d2h_refresh"]`` is what a tile
        # pulled home because a flow-out set missed it
        self.xfer_bytes: dict[str, int] = {}
        for nm in ("_h2d", "_d2h", "_d2d"):
            fn = getattr(self.directory, nm)

            def timed(*args: Any, _fn: Any = fn, _nm: str = nm[1:], **kws: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return _fn(*args, **kws)
                finally:
                    k = self._cur_timer
                    self.transfer_s[k] = self.transfer_s.get(k, 0.0) + time.perf_counter() - t0
                    if len(args) >= 3 and isinstance(args[-2], Box):
                        copy, region, what = args[0], args[-2], args[-1]
                        key = f"{_nm}_{what}"
                        n = region.volume * self.host.array(copy.array).itemsize
                        self.xfer_bytes[key] = self.xfer_bytes.get(key, 0) + n

            setattr(self.directory, nm, timed)
        self.marks: list[tuple[Any, float, dict[str, int]]] = []
        self.max_tile_pieces = 0
        self.live: dict[tuple[int, Any], dict[str, list[Box]]] = {}
        self.live_copies: dict[tuple[int, Any], dict[Any, int]] = {}
        self.held: dict[tuple[int, Any], int] = {}

    def _acquire(self, t: Any) -> Any:
        tb = self._acquire_boxes(t)
        for a, ps in tb.pieces.items():
            if len(ps) > self.max_tile_pieces:
                self.max_tile_pieces = len(ps)
        if self.record_boxes:
            s = self._serial[0] if isinstance(self._serial, tuple) and self._serial else -1
            rec = self.live.setdefault((t.device, s), {})
            cps = self.live_copies.setdefault((t.device, s), {})
            for a, ps in tb.pieces.items():
                rec.setdefault(a, []).extend(c.box for _, c in ps)
                for _, c in ps:
                    cps[c] = c.nbytes
        return tb

    def run_phase(self, tiles: Any, serial: object = None, **kw: Any) -> None:
        super().run_phase(tiles, serial, **kw)
        if not self.record_boxes:
            return
        # per device: the copies its tiles used so far in this serial iteration that are
        # still resident at the end of the phase
        s = serial[0] if isinstance(serial, tuple) and serial else -1
        for d, mgr in enumerate(self.managers):
            cps = self.live_copies.get((d, s))
            if not cps:
                continue
            alive = sum(n for c, n in cps.items()
                        if any(x is c for x in mgr.copies.get(c.array, ())))
            if alive > self.held.get((d, s), 0):
                self.held[(d, s)] = alive

    def end_serial(self, serial: object = None) -> None:
        super().end_serial(serial)
        if isinstance(serial, tuple) and len(serial) == 1:
            self.marks.append((serial[0], time.perf_counter(),
                               {**self.stats.bytes, **self.xfer_bytes}))


@dataclass
class Measurement:
    fig: dict[str, Any]
    """Flat figures (see :func:`measure`)."""
    rt: RecordingRuntime | None = None
    """The runtime of the last run (its stats, marks, boxes)."""
    iter_bytes: list[dict[str, int]] = field(default_factory=list)
    """Bytes per category moved in each serial iteration of the last run."""
    error: str | None = None


def _fresh_host_arrays(bench: Bench, devices: Sequence[Any]) -> dict[str, np.ndarray]:
    from bbmm.run import host_arrays
    return host_arrays(bench.module, bench.params, devices)


def measure(bench: Bench, devices: Sequence[Any], *, tile: int | None = None,
            mode: str = "disjoint", reuse: bool = True, coherence: str = "exact",
            repeat: int = 1, warmup: int = 1, record_boxes: bool = False,
            check: bool = False, fuse: float | None = None) -> Measurement:
    """Run one configuration ``warmup + repeat`` times; figures are medians of the timed
    runs (counters, which do not vary, come from the last run).

    Figures: ``wall_s`` (the driver's ``run``, Runtime creation excluded, final write-out
    included), ``serial_iters``, ``iter_s`` (= wall_s / serial_iters, the paper's
    per-iteration time with every overhead), ``iter_median_s`` (median of the individual
    iterations), ``t_<timer>_s`` and ``overhead_percent`` (Table IV, F), ``<cat>_bytes``
    (readin, flowout, flowin, writeout, writeback, refresh), per-device counters
    (``peak_bytes_max`` and ``_mean``, sums of the others), ``x_<dir>_<cat>_bytes`` (bytes
    per direction h2d/d2h/d2d and category, e.g. ``x_d2h_refresh_bytes``), ``max_boxes_per_array`` (max
    over devices), ``max_pieces_per_tile``, ``split_accesses``, ``tiles``,
    ``array_bytes``, ``check``. A run that fails (e.g. a tile larger than the device)
    gives ``error`` and no timings. ``fuse``: the runtime's fuse slack (None: its default).
    With ``$BBMM_PROFILE=FILE`` (devices made by :class:`DeviceSet`), each timed run's
    device timeline is written to FILE after the run (``bbmm/profile.py``; the last run
    of the script stays there), and each warm-up run's is dropped.
    """
    from bbmm.profile import collect, target, write_timeline

    profile = target(None)
    module = bench.module
    ndev = len(devices)
    if tile is None:
        tile = module.default_tile(bench.params, ndev)
    fig: dict[str, Any] = {
        "program": bench.name, "ndev": ndev, "params": bench.param_text, "tile": tile,
        "mode": mode, "reuse": reuse, "coherence": coherence, "split_all": bench.split_all,
        "array_bytes": bench.array_bytes}
    host = _fresh_host_arrays(bench, devices)
    walls: list[float] = []
    iter_med: list[float] = []
    times: dict[str, list[float]] = {}
    over: list[float] = []
    over_nc: list[float] = []
    rt: RecordingRuntime | None = None
    check_state = "skipped"
    try:
        for run_no in range(max(0, warmup) + max(1, repeat)):
            for k, a in host.items():
                if k in bench.init:          # not a local array (an expanded scalar)
                    a[...] = bench.init[k]
            rt = RecordingRuntime(devices, host, mode=mode, reuse=reuse, coherence=coherence,
                                  record_boxes=record_boxes, fuse=fuse,
                                  **runtime_options(module, host))
            t0 = time.perf_counter()
            module.run(rt, bench.params, bench.scalars, tile, False)
            wall = time.perf_counter() - t0
            if profile is not None and run_no < warmup:
                collect(devices)  # read and forget: the timed run's timeline starts empty
            elif profile is not None:
                write_timeline(profile, devices, {"kernel": bench.name, "params": bench.params,
                                                  "tile": tile, "wall_s": wall,
                                                  "stats": rt.stats.as_json()},
                               host=[("run", t0, t0 + wall)] + (rt.host_log or []))
            if check and run_no == 0:
                check_state = _check(bench, rt, host)
            if run_no >= warmup:
                walls.append(wall)
                prev = t0
                its = []
                for _, t, _b in rt.marks:
                    its.append(t - prev)
                    prev = t
                if its:
                    iter_med.append(statistics.median(its))
                for k, v in rt.stats.times.items():
                    times.setdefault(k, []).append(v)
                over.append(rt.stats.overhead_percent)
                tot = rt.stats.total_time
                mm_x = rt.transfer_s.get("memory_mgmt", 0.0)
                times.setdefault("mm_transfer", []).append(mm_x)
                over_nc.append(100.0 * (rt.stats.times["memory_mgmt"] - mm_x) / tot if tot else 0.0)
            if run_no < warmup + max(1, repeat) - 1:
                _release(rt, devices)
    except BBMMError as e:
        if rt is not None:
            _release(rt, devices)
        fig["error"] = str(e).splitlines()[0]
        return Measurement(fig, None, [], fig["error"])
    assert rt is not None
    st = rt.stats
    n_iter = max(1, len(rt.marks))
    wall = statistics.median(walls)
    fig.update({"serial_iters": n_iter, "wall_s": wall, "wall_min_s": min(walls),
                "iter_s": wall / n_iter,
                "iter_median_s": statistics.median(iter_med) if iter_med else wall})
    for k, v in times.items():
        fig[f"t_{k}_s"] = statistics.median(v)
    fig["t_total_s"] = sum(fig[f"t_{k}_s"] for k in st.times)
    fig["overhead_percent"] = statistics.median(over)
    fig["overhead_nocopy_percent"] = statistics.median(over_nc)
    for k, v in st.bytes.items():
        fig[f"{k}_bytes"] = v
    ds = st.devices
    fig["peak_bytes_max"] = max(d.peak_bytes for d in ds)
    fig["peak_bytes_mean"] = sum(d.peak_bytes for d in ds) / len(ds)
    if all(hasattr(d, "settled_peak_bytes") for d in ds):
        # resident bytes at the end of a phase (without the moment a grown box and the
        # copies it replaces coexist)
        fig["settled_peak_bytes_max"] = max(d.settled_peak_bytes for d in ds)
    for k in ("allocated_bytes", "h2d_bytes", "d2h_bytes", "d2d_bytes", "evictions",
              "boxes_allocated", "boxes_present"):
        fig[k] = sum(getattr(d, k) for d in ds)
    fig["max_boxes_per_array"] = max(d.max_boxes_per_array for d in ds)
    fig["max_pieces_per_tile"] = rt.max_tile_pieces
    fig["split_accesses"] = st.split_accesses
    fig["pageable_host_arrays"] = pageable(host, devices)  # copies at pageable speed
    fig["tiles"] = st.tiles
    fig["check"] = check_state
    for k, v in sorted(rt.xfer_bytes.items()):
        fig[f"x_{k}_bytes"] = v
    iter_bytes = []
    prev_b: dict[str, int] = {}
    for _, _, b in rt.marks:
        iter_bytes.append({k: b[k] - prev_b.get(k, 0) for k in b})
        prev_b = b
    _release(rt, devices)
    return Measurement(fig, rt, iter_bytes)


def _release(rt: Runtime, devices: Sequence[Any]) -> None:
    rt.release_all()
    for d in devices:
        pool = getattr(d, "pool", None)
        if pool is not None:
            pool.trim()


def _check(bench: Bench, rt: Runtime, host: Mapping[str, np.ndarray]) -> str:
    from bbmm.reference import compare, run_reference

    expect = run_reference(str(bench.prog.path), bench.prog.scop, bench.params,
                           bench.scalars, bench.init)
    for a in bench.prog.scop.param_arrays:     # local arrays are bbmm's, not the C program's
        if compare(a.name, host[a.name], expect[a.name], a.ctype) is not None:
            return "fail"
    return "pass"

# }}}

# {{{ exact counting by enumeration


def _ev(e: Any, env: Mapping[str, Any]) -> Any:
    from bbmm.codegen.scop import AffMax, AffMin, AffSelect, Affine
    if isinstance(e, Affine):
        out: Any = e.const
        for k, v in e.terms:
            out = out + v * env[k]
        return out
    if isinstance(e, AffSelect):
        return np.where(_cond(e.cond, env), _ev(e.then, env), _ev(e.else_, env))
    if isinstance(e, AffMin):
        return reduce(np.minimum, [_ev(a, env) for a in e.args])
    if isinstance(e, AffMax):
        return reduce(np.maximum, [_ev(a, env) for a in e.args])
    raise TypeError(e)


_CMP: dict[str, Callable[[Any, Any], Any]] = {
    "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
    "==": np.equal, "!=": np.not_equal}


def _cond(c: Any, env: Mapping[str, Any]) -> Any:
    from bbmm.codegen.scop import AffAnd, AffNot, Cmp
    if isinstance(c, Cmp):
        return _CMP[c.op](_ev(c.lhs, env), _ev(c.rhs, env))
    if isinstance(c, AffNot):
        return np.logical_not(_cond(c.arg, env))
    parts = [_cond(a, env) for a in c.args]
    return reduce(np.logical_and if isinstance(c, AffAnd) else np.logical_or, parts)


def statement_points(scop: Any, st: Any, params: Mapping[str, int]) -> dict[str, np.ndarray]:
    """Every instance of a statement: ``{iterator: int64 array}``, in loop order.

    Expands the loop bounds with numpy (one level at a time); a statement under an
    ``if`` is enumerated by isl instead (``foreach_point`` on its domain).
    """
    env: dict[str, Any] = {k: int(v) for k, v in params.items()}
    if st.guards:
        return _isl_points(scop, st, params)
    cols: dict[str, np.ndarray] = {}
    n = 1
    for lid in st.loops:
        lp = scop.loop(lid)
        e = {**env, **cols}
        lo = np.broadcast_to(np.asarray(_ev(lp.lower_expr, e), dtype=np.int64), (n,))
        hi = np.broadcast_to(np.asarray(_ev(lp.upper_expr, e), dtype=np.int64), (n,))
        cnt = np.maximum(hi - lo + 1, 0)
        total = int(cnt.sum())
        rep = np.repeat(np.arange(n), cnt)
        off = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        cols = {k: v[rep] for k, v in cols.items()}
        cols[lp.iterator] = lo[rep] + off
        n = total
    return cols


def _isl_points(scop: Any, st: Any, params: Mapping[str, int]) -> dict[str, np.ndarray]:
    import islpy as isl
    dom = st.domain.intersect_params(scop.params_set(params))
    pts: list[list[int]] = []

    def take(p: Any) -> None:
        pts.append([p.get_coordinate_val(isl.dim_type.set, d).to_python()
                    for d in range(len(st.iterators))])

    dom.foreach_point(take)
    arr = np.array(pts, dtype=np.int64).reshape(-1, len(st.iterators))
    order = np.lexsort(arr.T[::-1]) if len(arr) else np.arange(0)
    arr = arr[order]
    return {it: arr[:, d] for d, it in enumerate(st.iterators)}


def _betas(scop: Any) -> dict[str, tuple[int, ...]]:
    from bbmm.codegen.scop import LoopNode
    out: dict[str, tuple[int, ...]] = {}

    def walk(nodes: Sequence[Any], prefix: tuple[int, ...]) -> None:
        for b, nd in enumerate(nodes):
            if isinstance(nd, LoopNode):
                walk(nd.children, prefix + (b,))
            else:
                out[nd.name] = prefix + (b,)

    walk(scop.tree, ())
    return out


def bound_value(expr: str, params: Mapping[str, int]) -> int:
    """A driver's bound expression (Python over the parameters, ``min``/``max``) at
    ``params``."""
    env = {"min": min, "max": max, "__builtins__": {}}
    return int(eval(expr, env, dict(params)))  # noqa: S307


def grid_of(prog: Any, params: Mapping[str, int], tile: int) -> tuple[int, int]:
    """The driver's global tile grid: its first tile and its size (``t0``,
    ``ntiles``)."""
    ranges = [nc.boxes.p0_range for nc in prog.nests if nc.boxes.p0_range is not None]
    if not ranges:
        return 0, 1
    t0 = min(min(bound_value(r.lo[0], params) for r in ranges), 0) // tile
    hi = max(max(bound_value(r.hi[0], params) for r in ranges), 0)
    return t0, max(1, hi // tile + 1 - t0)


def ntiles_of(prog: Any, params: Mapping[str, int], tile: int) -> int:
    """The driver's global tile grid size (``ntiles``)."""
    return grid_of(prog, params, tile)[1]


class Instances:
    """Every access of every statement instance of a program at fixed sizes, as flat numpy
    arrays of *events* (one per access of one instance), with the device and serial
    iteration bbmm runs the instance in:

    * ``elem``: global element id (arrays laid end to end), ``array``: array index,
    * ``write``: the access writes, ``time``: ``2 * (sequential position of the
      instance) + write`` (an instance reads before it writes),
    * ``dev``: device of the instance's tile, ``serial``: outer serial iteration (-1
      outside any serial loop), ``phase``: rank of the parallel phase (one nest at one
      host iteration) in execution order.

    Memory is about 60 bytes per event: keep sizes small (CI sizes: <= a few million).
    """

    MAX_INSTANCES = 20_000_000

    def __init__(self, prog: Any, params: Mapping[str, int], ndev: int, tile: int,
                 max_instances: int | None = None):
        from bbmm.hostlib import once_grid  # device_of: the same rule, vectorised below

        scop, plan = prog.scop, prog.plan
        self.params = dict(params)
        self.ndev = ndev
        self.tile = tile
        t0, self.ntiles = grid_of(prog, params, tile)
        once = {}  # nests outside every serial loop: their own grid (hostlib.once_grid)
        for nc in prog.nests:
            r = nc.boxes.tiling.p0_range_at
            if nc.nest.band and not nc.nest.host_loops and r is not None:
                lo, hi = bound_value(r.lo[0], params), bound_value(r.hi[0], params)
                once[nc.nest.id] = once_grid(lo, hi, tile, self.ntiles, ndev, t0)
        self.arrays = list(scop.arrays)
        self.shapes = [a.shape(params) for a in self.arrays]
        self.itemsize = np.array([np.dtype(_dtype(a.ctype)).itemsize for a in self.arrays])
        sizes = [int(np.prod(s)) for s in self.shapes]
        self.base = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        aidx = {a.name: i for i, a in enumerate(self.arrays)}
        serial = set(plan.serial_loops)
        betas = _betas(scop)
        depth = max((len(s.loops) for s in scop.statements), default=0)
        L = 2 * depth + 1
        hmax = max((len(n.host_loops) for n in plan.nests), default=0)
        sched_rows, inst_info = [], []
        per_stmt = []
        limit = self.MAX_INSTANCES if max_instances is None else max_instances
        seen = 0
        for st in scop.statements:
            pts = statement_points(scop, st, params)
            n = len(next(iter(pts.values()))) if pts else 1
            seen += n
            if seen > limit:
                raise SystemExit(
                    f"exact counting of {scop.function} at {params}: more than {limit:,} "
                    "statement instances; use smaller sizes (--sizes tiny or --param)")
            env = {**{k: int(v) for k, v in params.items()}, **pts}
            sched = np.zeros((n, L), dtype=np.int64)
            b = betas[st.name]
            for d in range(len(st.loops) + 1):
                sched[:, 2 * d] = b[d]
                if d < len(st.loops):
                    sched[:, 2 * d + 1] = pts[scop.loop(st.loops[d]).iterator]
            nest = plan.nest_of(st.name)
            if nest.band:
                p0 = pts[scop.loop(nest.band[0]).iterator]
                origin, size, count = once.get(nest.id, (t0 * tile, tile, self.ntiles))
                t = (p0 - origin) // size
                dev = np.minimum(ndev - 1, t * ndev // max(1, count))
            else:
                dev = np.zeros(n, dtype=np.int64)
            if st.loops and st.loops[0] in serial:
                ser = pts[scop.loop(st.loops[0]).iterator].copy()
            else:
                ser = np.full(n, -1, dtype=np.int64)
            ph = np.full((n, hmax + 1), -1, dtype=np.int64)
            ph[:, 0] = nest.id
            for j, lid in enumerate(nest.host_loops):
                ph[:, j + 1] = pts[scop.loop(lid).iterator]
            sched_rows.append(sched)
            inst_info.append((dev, ser, ph))
            per_stmt.append((st, env, n))
        sched = np.concatenate(sched_rows) if sched_rows else np.zeros((0, L), np.int64)
        order = np.lexsort(sched.T[::-1])
        pos = np.empty(len(order), dtype=np.int64)
        pos[order] = np.arange(len(order))
        dev_all = np.concatenate([x[0] for x in inst_info])
        ser_all = np.concatenate([x[1] for x in inst_info])
        ph_all = np.concatenate([x[2] for x in inst_info])
        uniq, inv = np.unique(ph_all, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        first = np.full(len(uniq), np.iinfo(np.int64).max)
        np.minimum.at(first, inv, pos)
        rank = np.empty(len(uniq), dtype=np.int64)
        rank[np.argsort(first)] = np.arange(len(uniq))
        phase_all = rank[inv]
        self.n_instances = len(pos)
        ev: dict[str, list[np.ndarray]] = {k: [] for k in
                                            ("elem", "array", "write", "time", "dev", "serial",
                                             "phase")}
        start = 0
        for st, env, n in per_stmt:
            sl = slice(start, start + n)
            start += n
            for acc in st.accesses:
                ai = aidx[acc.array]
                idx = [np.broadcast_to(np.asarray(_ev(ix, env), dtype=np.int64), (n,))
                       for ix in acc.index]
                shape = self.shapes[ai]
                flat = np.ravel_multi_index(tuple(idx), shape) if idx else np.zeros(n, np.int64)
                w = acc.kind == "write"
                ev["elem"].append(self.base[ai] + flat)
                ev["array"].append(np.full(n, ai, dtype=np.int32))
                ev["write"].append(np.full(n, w, dtype=bool))
                ev["time"].append(2 * pos[sl] + int(w))
                ev["dev"].append(dev_all[sl])
                ev["serial"].append(ser_all[sl])
                ev["phase"].append(phase_all[sl])
        cat = {k: (np.concatenate(v) if v else np.zeros(0, np.int64)) for k, v in ev.items()}
        self.elem, self.array = cat["elem"], cat["array"]
        self.write, self.time = cat["write"], cat["time"]
        self.dev, self.serial, self.phase = cat["dev"], cat["serial"], cat["phase"]

    @property
    def n_events(self) -> int:
        return len(self.elem)

    @property
    def total_bytes(self) -> int:
        return int(sum(int(np.prod(s)) * int(i) for s, i in zip(self.shapes, self.itemsize)))

    def serial_values(self) -> list[int]:
        return sorted(set(self.serial.tolist()))

    # ---- Figure 10(b) ---------------------------------------------------------------

    def footprint(self) -> dict[tuple[int, int], int]:
        """Exact footprint: bytes of the distinct elements the instances of device ``d``
        access (read or write) in serial iteration ``s``: ``{(d, s): bytes}``."""
        key = np.stack([self.dev, self.serial, self.elem], axis=1)
        u = np.unique(key, axis=0)
        nbytes = self.itemsize[np.searchsorted(self.base, u[:, 2], side="right") - 1]
        out: dict[tuple[int, int], int] = {}
        ds = np.unique(u[:, :2], axis=0, return_inverse=True)
        groups, inv = ds[0], ds[1].reshape(-1)
        sums = np.bincount(inv, weights=nbytes, minlength=len(groups))
        for (d, s), v in zip(groups.tolist(), sums.tolist()):
            out[(int(d), int(s))] = int(v)
        return out

    def peak_footprint(self) -> list[int]:
        """Per device: the largest exact footprint of any serial iteration (bytes)."""
        fp = self.footprint()
        return [max([v for (d, _), v in fp.items() if d == dev] or [0])
                for dev in range(self.ndev)]

    # ---- Figure 3(h) ----------------------------------------------------------------

    def min_coherence(self) -> dict[int, int]:
        """Minimum coherence volume per serial iteration, in bytes: ``{s: bytes}``.

        Parallel-phase semantics (what bbmm runs): a read in phase P on device d sees the
        value of the last write to the element in an earlier phase, unless device d wrote
        the element earlier in P itself (then the value is local). When that earlier write
        came from another device, the element must move: the minimum is the number of
        distinct (writer's serial iteration, element) pairs over such reads, i.e. every
        element written by one device and read later by another, counted once (one
        transfer out of the writer, as bbmm's flow-out counts device-to-host bytes once).
        """
        n = self.n_events
        if n == 0:
            return {}
        reads = ~self.write
        # (1) the last write to the element in an earlier phase: order by (elem, phase,
        # write, time): the reads of a phase come before its writes
        o1 = np.lexsort((self.time, self.write, self.phase, self.elem))
        w1 = np.where(self.write[o1], np.arange(n), -1)
        last1 = np.maximum.accumulate(w1)
        prev = np.full(n, -1, dtype=np.int64)
        ok = (last1 >= 0)
        ok[ok] &= self.elem[o1][last1[ok]] == self.elem[o1][ok]
        prev[o1[ok]] = o1[last1[ok]]
        # (2) an earlier write by the same device in the same phase
        o2 = np.lexsort((self.time, self.dev, self.phase, self.elem))
        w2 = np.where(self.write[o2], np.arange(n), -1)
        last2 = np.maximum.accumulate(w2)
        loc = np.zeros(n, dtype=bool)
        ok2 = last2 >= 0
        j = last2[ok2]
        same = ((self.elem[o2][j] == self.elem[o2][ok2]) & (self.phase[o2][j] == self.phase[o2][ok2])
                & (self.dev[o2][j] == self.dev[o2][ok2]))
        idx = o2[ok2][same]
        loc[idx] = True
        need = reads & ~loc & (prev >= 0)
        need[need] &= self.dev[prev[need]] != self.dev[need]
        src = prev[need]
        pairs = np.unique(np.stack([self.serial[src], self.elem[src]], axis=1), axis=0)
        out: dict[int, int] = {s: 0 for s in self.serial_values()}
        if len(pairs):
            nbytes = self.itemsize[np.searchsorted(self.base, pairs[:, 1], side="right") - 1]
            for s, v in zip(pairs[:, 0].tolist(), nbytes.tolist()):
                out[int(s)] = out.get(int(s), 0) + int(v)
        return out


def live_bytes(rt: RecordingRuntime, itemsizes: Mapping[str, int] | None = None,
               union: bool = False) -> dict[tuple[int, Any], int]:
    """What each device held for its tiles in each serial iteration (needs
    ``record_boxes``): ``{(device, serial): bytes}``.

    Default (``RecordingRuntime.held``): the most bytes of distinct resident copies that
    the device's tiles had used in the iteration, still resident at the end of a phase,
    i.e. the device memory that iteration's tiles occupied (two overlapping copies of
    the same elements count twice, as they do in device memory). ``union``: the bytes
    of the union of all the boxes used in the iteration (each element once; needs
    ``itemsizes``).
    """
    if not union:
        return dict(rt.held)
    assert itemsizes is not None
    out = {}
    for key, per in rt.live.items():
        out[key] = int(sum(union_volume(bs) * itemsizes[a] for a, bs in per.items()))
    return out

# }}}

# {{{ output


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    keys: list[str] = []
    for r in rows:
        for k in r:
            if k not in keys and not k.startswith("_"):
                keys.append(k)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: _csv_val(r.get(k)) for k in keys})


def _csv_val(v: Any) -> Any:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (list, tuple)):
        return ";".join(str(x) for x in v)
    return v


def write_json(path: Path, exp: str, args: argparse.Namespace, rows: Sequence[Mapping[str, Any]],
               **extra: Any) -> None:
    meta = {"experiment": exp, "argv": sys.argv[1:] if args is not None else [],
            "options": {k: v for k, v in vars(args).items()} if args is not None else {},
            "machine": machine_slug(getattr(args, "platform", None)),
            "host": _platform.node(), "python": _platform.python_version(),
            "time": time.strftime("%Y-%m-%d %H:%M:%S")}
    try:
        from bbmm.devices.opencl import discover
        meta["devices"] = [d.as_dict() for d in discover(getattr(args, "platform", None)).chosen]
    except Exception:  # pragma: no cover
        pass
    meta["git"] = _git_state()
    doc = {"meta": meta, "rows": [_jsonable(r) for r in rows], **{k: _jsonable(v) for k, v in extra.items()}}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


def _git_state() -> dict[str, Any] | None:
    """The commit the figures were measured at, and whether bbmm/codegen differ from it."""
    import subprocess
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "bbmm", "codegen",
                                "polybench"], cwd=ROOT, capture_output=True, text=True,
                               timeout=10).stdout.strip()
    except Exception:  # noqa: BLE001 - no git: no record
        return None
    return {"commit": head or None, "bbmm_modified": bool(dirty)}


def _jsonable(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def table(rows: Sequence[Mapping[str, Any]], cols: Sequence[tuple[str, str, str]]) -> str:
    """A fixed-width text table; ``cols`` are ``(key, header, format)``."""
    head = [h for _, h, _ in cols]
    body = []
    for r in rows:
        line = []
        for k, _, fmt in cols:
            v = r.get(k)
            if v is None or v == "":
                line.append("-")
            elif fmt == "bytes":
                line.append(format_bytes(int(v)))
            elif fmt:
                try:
                    line.append(format(v, fmt))
                except (TypeError, ValueError):
                    line.append(str(v))
            else:
                line.append(str(v))
        body.append(line)
    widths = [max(len(x) for x in col) for col in zip(head, *body)] if body else [len(h) for h in head]
    out = ["  ".join(h.rjust(w) for h, w in zip(head, widths))]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(x.rjust(w) for x, w in zip(line, widths)) for line in body]
    return "\n".join(out)


def _matplotlib_missing(e: ImportError) -> bool:
    """Whether ``e`` says that matplotlib (or a part of it) is not installed."""
    return (e.name or "").split(".")[0] == "matplotlib"


def try_plot(plot: Callable[[Path], None], path: Path, label: str) -> bool:
    """``plot(path)``; without matplotlib, one note on stderr that the plot of ``label``
    was skipped, and False (the CSV and JSON, written before, stay: plot_results.py draws
    the figure from the JSON where matplotlib is)."""
    try:
        plot(path)
    except ImportError as e:
        if not _matplotlib_missing(e):
            raise
        print(f"{label}: no matplotlib here: plot skipped (pip install matplotlib, or "
              f"python scripts/plot_results.py {path.parent} where it is)", file=sys.stderr)
        return False
    return True


def plt():
    """matplotlib.pyplot with the Agg backend (ImportError without matplotlib:
    :func:`try_plot`)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot
    return pyplot


def bar_groups(ax: Any, groups: Sequence[str], series: Mapping[str, Sequence[float | None]],
               *, ylabel: str, title: str, annotate: str | Callable[[float], str] | None = "{:.2g}",
               hline: float | None = None, log: bool = False, colors: Sequence[str] | None = None,
               hatches: Sequence[str] | None = None) -> None:
    """One bar group per program (``groups``), one bar per series."""
    n = max(1, len(series))
    width = 0.8 / n
    x = np.arange(len(groups))
    for i, (label, vals) in enumerate(series.items()):
        v = np.array([np.nan if y is None else float(y) for y in vals])
        kw = {}
        if colors:
            kw["color"] = colors[i % len(colors)]
        if hatches:
            kw["hatch"] = hatches[i % len(hatches)]
        bars = ax.bar(x - 0.4 + width * (i + 0.5), np.nan_to_num(v, nan=0.0), width,
                      label=label, edgecolor="black", linewidth=0.5, **kw)
        if annotate:
            for b, y in zip(bars, v):
                if np.isfinite(y):
                    txt = annotate(y) if callable(annotate) else annotate.format(y)
                    ax.annotate(txt, (b.get_x() + b.get_width() / 2, b.get_height()),
                                ha="center", va="bottom", fontsize=7, rotation=90 if n > 3 else 0,
                                xytext=(0, 2), textcoords="offset points")
    if hline is not None:
        ax.axhline(hline, color="gray", linestyle="--", linewidth=1)
    ax.set_xticks(x)
    ax.set_xticklabels(groups, rotation=20 if len(groups) > 5 else 0)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    allv = [float(y) for vals in series.values() for y in vals
            if y is not None and np.isfinite(float(y))]
    if log:
        ax.set_yscale("log")
        pos = [y for y in allv if y > 0]
        if pos:
            ax.set_ylim(min(pos) / 3, max(pos) * 12)
    elif allv:
        top = max(max(allv), hline or 0)
        ax.set_ylim(min(0, min(allv)), top * 1.35 if top > 0 else 1)
    ax.legend(fontsize=7, loc="upper left", ncol=2 if n > 2 else 1)
    ax.grid(axis="y", alpha=0.3)


def short(v: float) -> str:
    """``2613 -> '2.6k'``, ``30752 -> '31k'``, ``0.25 -> '0.25'``."""
    a = abs(v)
    for div, suf in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= div:
            x = v / div
            return f"{x:.2g}{suf}" if abs(x) < 10 else f"{x:.0f}{suf}"
    return f"{v:.3g}"


def save_fig(fig: Any, path: Path, note: str | None = None) -> None:
    if note:
        fig.text(0.01, 0.005, note, fontsize=7, color="dimgray", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.03 if note else 0, 1, 1))
    fig.savefig(path, dpi=120)
    plt().close(fig)


def finish(exp: str, args: argparse.Namespace, outdir: Path, rows: Sequence[Mapping[str, Any]],
           text: str, plot: Callable[[Path], None] | None, **extra: Any) -> dict[str, Path]:
    """Write ``<exp>.csv``, ``<exp>.json``, ``<exp>.png``; print the table; return the paths.
    Without matplotlib the plot is skipped with a note (:func:`try_plot`)."""
    paths = {"csv": outdir / f"{exp}.csv", "json": outdir / f"{exp}.json",
             "png": outdir / f"{exp}.png"}
    write_csv(paths["csv"], rows)
    write_json(paths["json"], exp, args, rows, **extra)
    if plot is None or getattr(args, "no_plot", False) or not try_plot(plot, paths["png"], exp):
        paths.pop("png")
    print(text)
    print(f"\nwrote {', '.join(str(p) for p in paths.values())}")
    return paths


def device_note(devs: Sequence[Any]) -> str:
    if not devs:
        return ""
    d = devs[0]
    return f"{len(devs)} logical device(s) on {getattr(d, 'physical_name', d.name)}"


def geomean(xs: Iterable[float]) -> float | None:
    v = [x for x in xs if x is not None and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else None

# }}}

# vim: foldmethod=marker

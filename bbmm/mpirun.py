"""``bbmm run kernel.c --mpi`` and ``<kernel>_host.py --mpi``: one program over MPI ranks.

Launched as ``mpiexec -n R bbmm run kernel.c --mpi --devices N ...``: rank 0
compiles the program and hands it to the others; every rank fills the same inputs,
makes its own ``--devices N`` logical devices and runs the host driver on a
:class:`~bbmm.distributed.DistributedRuntime`, which spreads the tiles over all devices
of all ranks. Rank 0 prints the report, runs ``--check`` on the gathered result (with
``--mpi-result distributed`` every rank checks the part it holds) and writes ``--json``
with per-rank statistics.

Errors: one that every rank meets before the run (a bad parameter, no device) is
printed once by rank 0 and every rank exits with the usual status; one during the run
is printed by its rank, which then aborts the job (the others would wait for it
forever).

.. autofunction:: world
.. autofunction:: execute_mpi
.. autofunction:: run_cli
.. autofunction:: driver_mpi
"""
from __future__ import annotations

import argparse
import os
import pickle
import socket
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Sequence

import numpy as np

from . import settings
from .config import RuntimeConfig
from .diagnostic import BBMMError, UsageError, format_bytes
from .distributed import DistributedRuntime
from .messages import MPIComm
from .devargs import make_devices_from_args, profile_path
from .program import check_init_flags, compile_args, prepare_run
from .stats import pace_line
from .run import (fitting_tile, frozen_heap, host_arrays, host_profile, host_profile_folder,
                  pageable, runtime_options)

RESULTS = ("gather", "distributed")
TRAFFIC = ("readin_bytes", "flowout_bytes", "flowin_bytes", "writeout_bytes",
           "writeback_bytes")
"""Host-device byte counts of the single-node report, summed over the ranks."""


LAUNCHER_SIZE = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS")
"""Environment variables through which launchers (MPICH's Hydra, Open MPI, PMIx) tell
a process how many ranks they started."""


def launched_size(environ: Any = None) -> int | None:
    """How many ranks the launcher says it started, if it says."""
    env = settings.environ() if environ is None else environ
    for var in LAUNCHER_SIZE:
        if env.get(var, "").isdigit():
            return int(env[var])
    return None


def world() -> MPIComm:
    """``MPI.COMM_WORLD`` as a :class:`~bbmm.messages.MPIComm` (a clear error when
    mpi4py is missing, or when the launcher is not of mpi4py's MPI library: every
    process would then be a rank 0 of its own, all computing everything)."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise UsageError("--mpi needs mpi4py and an MPI library: pip install 'bbmm[mpi]' "
                         "(mpi4py and mpich), then launch with mpiexec -n R bbmm run ... "
                         "--mpi") from None
    comm = MPIComm()
    started = launched_size()
    if comm.size == 1 and started is not None and started > 1:
        from mpi4py import MPI
        lib = MPI.Get_library_version().strip().splitlines()[0]
        here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
        raise UsageError(f"the launcher started {started} processes but MPI sees one rank "
                         f"in each: that mpiexec is not of mpi4py's MPI library ({lib}); "
                         f"use the mpiexec installed with it"
                         + (f" ({here})" if os.path.exists(here) else ""))
    return comm


@dataclass
class MPIResult:
    """What an MPI run produced on this rank (``per_rank`` and ``check`` on rank 0)."""

    arrays: dict[str, np.ndarray]
    runtime: DistributedRuntime
    params: dict[str, int]
    scalars: dict[str, float]
    tile: int
    wall_s: float
    check: str = "skipped"
    mismatches: list[str] = field(default_factory=list)
    per_rank: list[dict[str, Any]] = field(default_factory=list)

    def rank_json(self) -> dict[str, Any]:
        rt = self.runtime
        comm = rt.comm
        return {**rt.rank_stats.as_json(), "host": socket.gethostname(), "wall_s": self.wall_s,
                "direct_messages": getattr(comm, "direct_received", 0),
                "lent_loads": getattr(comm, "lent_loads", 0),
                "direct_min": getattr(comm, "direct_min", None),
                "shared_arrays": getattr(comm, "shared_arrays", 0),
                "host_arrays": sum(1 for a in self.arrays.values() if a.nbytes),
                "pageable_arrays": pageable(self.arrays, rt.local.devices),
                "device_names": [d.name for d in rt.local.devices],
                "tiles": rt.local.stats.tiles, "runtime": rt.local.stats.as_json()}

    def as_json(self, kernel: str) -> dict[str, Any]:
        rt = self.runtime
        pr = self.per_rank
        from .run import report_header
        return {**report_header(), "kernel": kernel, "ranks": len(rt.counts), "devices": sum(rt.counts),
                "devices_per_rank": rt.counts, "params": self.params, "scalars": self.scalars,
                "tile": self.tile, "mode": rt.mode, "reuse": rt.reuse,
                "coherence": rt.coherence,
                "result": "gather" if rt.gather_result else "distributed",
                "check": self.check, "mismatches": self.mismatches,
                "wall_s": max((p["wall_s"] for p in pr), default=self.wall_s),
                "loop_s": max((p["runtime"]["loop_s"] for p in pr
                               if p["runtime"].get("loop_s") is not None), default=None),
                "tiles": sum(p["tiles"] for p in pr),
                "exchange_bytes": sum(p["exchange_sent_bytes"] for p in pr),
                "gather_bytes": sum(p["gather_sent_bytes"] for p in pr),
                "messages": sum(p["messages_sent"] for p in pr),
                **{k: sum(p["runtime"].get(k, 0) for p in pr) for k in TRAFFIC},
                "serial_iterations": max((p["serial_iterations"] for p in pr), default=0),
                "enqueues": _enqueues(pr),
                "per_rank": pr}


def _enqueues(per_rank: list[dict[str, Any]]) -> dict[str, Any]:
    """The ranks' copies and launches, in all and per serial iteration of the busiest
    rank (the ranks enqueue at once, each into its own devices)."""
    eq = [p["runtime"].get("enqueues", {}) for p in per_rank]
    copies = sum(e.get("copies", 0) for e in eq)
    launches = sum(e.get("launches", 0) for e in eq)
    n = max(1, max((p["serial_iterations"] for p in per_rank), default=0))
    busiest = max((e.get("copies", 0) + e.get("launches", 0) for e in eq), default=0)
    return {"copies": copies, "launches": launches, "per_serial_iteration": (copies + launches) / n,
            "busiest_rank_per_serial_iteration": busiest / n}


def execute_mpi(module: ModuleType, devices: Sequence[Any], params: dict[str, int],
                scalars: dict[str, float], arrays: dict[str, np.ndarray], comm: Any, *,
                tile: int | None = None, mode: str = "disjoint", reuse: bool = True,
                coherence: str = "exact", gather: bool = True,
                progress: bool | None = None, fuse: float | None = None,
                replay: bool | None = None, profile: str | None = None,
                config: RuntimeConfig | None = None) -> MPIResult:
    """Run a driver module over the ranks of ``comm``; every rank calls it, with the
    run's settings ``config`` (None: read from the environment now). With
    ``profile`` (a file; the devices made with ``profile=True``) rank 0 writes there the
    timelines of every rank's devices and host steps, on one time axis
    (:func:`bbmm.profile.merge_ranks`: the ranks of one machine)."""
    # Small read-only arrays are held whole on the devices here too: every rank's host
    # copy holds their initial values, which no tile ever changes, so nothing about them
    # is exchanged between ranks and each rank reads them in from its own host copy.
    rt = DistributedRuntime(devices, arrays, comm, gather=gather, mode=mode, reuse=reuse,
                            coherence=coherence, fuse=fuse, replay=replay,
                            **runtime_options(module, arrays, config))
    if tile is None:
        # as in one process, a tile that fits the devices' caps; every rank the same one
        # (the smallest), whatever its own devices' memory
        tile = fitting_tile(module, params, scalars, arrays, devices,
                            module.default_tile(params, len(rt.devices)),
                            ndev=len(rt.devices), note=comm.rank == 0)
        tile = min(comm.allgather(tile))
    if tile < 1:
        raise UsageError(f"--tile must be at least 1, got {tile}")
    with frozen_heap(rt.local.host_log):
        comm.barrier()
        t0 = time.perf_counter()
        module.run(rt, params, scalars, tile, progress if comm.rank == 0 else False)
        wall = time.perf_counter() - t0
    res = MPIResult(arrays, rt, params, scalars, tile, wall)
    res.per_rank = comm.gather(res.rank_json(), root=0) or []
    if profile is not None:
        from .profile import collect, merge_ranks, write_timeline
        doc = collect(devices, {"kernel": module.FUNCTION, "params": params, "tile": tile,
                                "wall_s": wall, "rank": comm.rank},
                      host=[("run", t0, t0 + wall)] + (rt.local.host_log or []))
        docs = comm.gather(doc, root=0)
        if comm.rank == 0:
            write_timeline(profile, [], doc=merge_ranks(docs))
    return res


def check_mpi(res: MPIResult, comm: Any, c_path: str, scop: Any,
              initial: dict[str, np.ndarray], defines: dict[str, str],
              include_dirs: Any = (), lib: Any = None) -> None:
    """``--check``: rank 0 compares the gathered arrays with the sequential program; with a
    distributed result every rank compares the elements it holds. Sets ``res.check`` on
    rank 0."""
    from .reference import compare, run_reference
    from .run import check_against_reference

    rt = res.runtime
    if rt.gather_result:
        if comm.rank == 0:
            check_against_reference(res, c_path, scop, initial, defines,  # type: ignore[arg-type]
                                    lib=lib, include_dirs=include_dirs)
        return
    expect = run_reference(c_path, scop, res.params, res.scalars, initial, defines=defines,
                           lib=lib, include_dirs=include_dirs)
    bad = []
    for a in scop.param_arrays:
        got = expect[a.name].copy()
        for b in rt.held(a.name):
            got[b.slices()] = res.arrays[a.name][b.slices()]
        m = compare(scop.c_name(a.name), got, expect[a.name], a.ctype)
        if m is not None:
            bad.append(f"rank {comm.rank}: {m}")
    every = comm.gather(bad, root=0)
    if comm.rank == 0:
        res.mismatches = [m for ms in every for m in ms]
        res.check = "fail" if res.mismatches else "pass"


def private_ranks(per_rank: list[dict[str, Any]]) -> list[int]:
    """The processes of one machine that take messages straight out of each other's host
    arrays (``direct_min`` set) but could not put all of theirs in shared memory."""
    return [p["rank"] for p in per_rank if p.get("direct_min") is not None
            and p.get("shared_arrays", 0) < p.get("host_arrays", 0)]


def report_mpi(res: MPIResult, kernel: str) -> str:
    """Rank 0's report: the run, then one line per rank."""
    rt = res.runtime
    doc = res.as_json(kernel)
    lines = [f"{kernel}: {doc['ranks']} rank(s) x {rt.counts} device(s), tile {res.tile}, "
             f"{doc['tiles']} tiles, {doc['wall_s']:.3f} s; check {res.check}"]
    for p in res.per_rank:
        lines.append(
            f"  rank {p['rank']} ({p['host']}, {p['devices']} device(s), {p['tiles']} tiles): "
            f"sent {format_bytes(p['exchange_sent_bytes'])}, received "
            f"{format_bytes(p['exchange_received_bytes'])} in "
            f"{p['messages_sent']}/{p['messages_received']} messages"
            + (f" ({p['direct_messages']} taken from the sender's arrays"
               + (f", {p['lent_loads']} loads from there" if p.get("lent_loads") else "")
               + ")" if p.get("direct_messages") else "")
            + "; gather sent "
            f"{format_bytes(p['gather_sent_bytes'])}, received "
            f"{format_bytes(p['gather_received_bytes'])}; exchange "
            f"{p['time_s']['exchange']:.3f} s of {p['wall_s']:.3f} s")
    private = private_ranks(res.per_rank)
    if private:
        lines.append(f"  rank(s) {', '.join(map(str, private))}: host arrays not all in shared "
                     f"memory (no room in /dev/shm): their large messages go through the "
                     f"mailboxes, two copies instead of one")
    pace = pace_line([p["runtime"] for p in res.per_rank if p.get("runtime")])
    if pace is not None:
        lines.append(pace)
    lines.append(f"  between ranks: {format_bytes(doc['exchange_bytes'])} exchanged, "
                 f"{format_bytes(doc['gather_bytes'])} gathered, {doc['messages']} messages"
                 + ("" if rt.gather_result else "; result left distributed"))
    return "\n".join(lines)


# {{{ error handling across ranks

class _Exit(Exception):
    def __init__(self, code: int):
        self.code = code


def _error_code(e: BBMMError) -> int:
    return 2 if isinstance(e, UsageError) else 1


def _one_line(e: BBMMError) -> str:
    return str(e) if isinstance(e, UsageError) else str(e).splitlines()[0]


def setup_all(comm: Any, fn: Callable[[], Any]) -> Any:
    """Run ``fn`` on every rank; if it fails on any, rank 0 prints the first error and
    every rank raises :class:`_Exit` with its status (no rank is left waiting)."""
    try:
        val, err = fn(), None
    except BBMMError as e:
        val, err = None, (_error_code(e), _one_line(e))
    errs = comm.allgather(err)
    bad = [(r, e) for r, e in enumerate(errs) if e is not None]
    if bad:
        r, (code, msg) = bad[0]
        if comm.rank == 0:
            print(f"bbmm: error: {msg}" + (f" (on rank {r})" if r else ""), file=sys.stderr)
        raise _Exit(code)
    return val


def on_root(comm: Any, fn: Callable[[], Any]) -> Any:
    """Run ``fn`` on rank 0 only and hand its result (pickled) to every rank; an error is
    printed by rank 0 and every rank raises :class:`_Exit`. A result that cannot be
    pickled (islpy cannot pickle a space that names one variable twice) is computed
    again by every other rank instead, after rank 0."""
    val, err, again = None, None, False
    if comm.rank == 0:
        try:
            val = fn()
        except BBMMError as e:
            err = (_error_code(e), _one_line(e))
            print(f"bbmm: error: {err[1]}", file=sys.stderr)
        if err is None and comm.size > 1:
            try:
                pickle.dumps(val)
            except Exception:  # any pickling failure: the other ranks build it themselves
                again = True
    got, err, again = comm.bcast((None if again else val, err, again), root=0)
    if err is not None:
        raise _Exit(err[0])
    if comm.rank == 0:
        return val
    return fn() if again else got


def guarded(comm: Any, fn: Callable[[], int]) -> int:
    """Run a rank's part; an error during the run is printed with the rank and aborts the
    job when there are other ranks (they would wait for this one forever)."""
    try:
        return fn()
    except _Exit as e:
        return e.code
    except BBMMError as e:
        if getattr(comm, "stopped_by_peer", lambda: False)():
            return 1  # the process that stopped first said why
        print(f"bbmm: error: rank {comm.rank}: {_one_line(e)}", file=sys.stderr)
        if comm.size > 1:
            sys.stderr.flush()
            comm.abort(_error_code(e))
        return _error_code(e)
    except (BrokenPipeError, KeyboardInterrupt):
        raise  # the output went away, or the user stopped the run: bbmm.cli.main says so
    except Exception:
        # a bug in bbmm: its traceback, then the job ends (the other ranks would wait
        # for this one forever)
        if comm.size <= 1:
            raise
        print(f"bbmm: internal error on rank {comm.rank}:", file=sys.stderr)
        traceback.print_exc()
        sys.stderr.flush()
        comm.abort(70)
        raise

# }}}


def _finish(res: MPIResult, comm: Any, kernel: str, json_path: str | None) -> int:
    if comm.rank != 0:
        return 0
    from .run import report_stream, write_json
    out = report_stream(json_path)
    print(report_mpi(res, kernel), file=out)
    for m in res.mismatches:
        print(f"  mismatch: {m}", file=out)
    if json_path:
        write_json(json_path, res.as_json(kernel))
    if res.check == "fail":  # the other ranks are done: no abort, just the status
        print(f"bbmm: error: {kernel}: result differs from the sequential program "
              f"({res.mismatches[0]})", file=sys.stderr)
        return 1
    return 0


def run_cli(args: argparse.Namespace, comm: Any = None) -> int:
    """``bbmm run kernel.c --mpi ...`` on every rank (``comm``: the ranks' communicator,
    MPI's world by default; :mod:`bbmm.procs` passes its shared-memory one)."""
    from bbmm.codegen.compile import CompileOptions

    comm = world() if comm is None else comm
    args.node = comm.node_slot()  # ranks of one machine split its GPUs
    tuned = getattr(args, "tune", None)
    config = RuntimeConfig.from_env(tune=tuned)  # each rank's run: read once, here

    def build() -> Any:
        from .run import check_output
        check_init_flags(args)
        check_output(args.json, "--json")     # before the run, not after it
        host_profile_folder(args)
        return compile_args(args, CompileOptions.from_env(tune=tuned))

    def go() -> int:
        prog = on_root(comm, build)  # one compilation, not one per rank
        pyprof = getattr(args, "host_profile", None)  # the folder rank 0 made
        scop = prog.compiled.scop

        # processes of one machine keep their host arrays in shared memory, where a
        # large message is copied straight out of its sender's (bbmm.shm.ShmComm.swap)
        share = getattr(comm, "share_array", None) if config.direct is not None else None
        if hasattr(comm, "direct_min"):
            comm.direct_min = config.direct

        def prepare() -> tuple[Any, dict[str, np.ndarray]]:
            run = prepare_run(args, prog, config)
            return run, host_arrays(run.module, run.params, run.devices, run.init,
                                    alloc=share)

        with warnings.catch_warnings():
            if comm.rank != 0:  # rank 0 says it once
                warnings.simplefilter("ignore")
            run, arrays = setup_all(comm, prepare)
        if share is not None:
            comm.open_peers()
        params, scalars, module, devices, init = (run.params, run.scalars, run.module,
                                                  run.devices, run.init)
        with host_profile(pyprof, comm.rank):
            res = execute_mpi(module, devices, params, scalars, arrays, comm, tile=args.tile,
                              mode=args.mode, reuse=not args.no_reuse,
                              coherence=args.coherence, gather=args.mpi_result == "gather",
                              fuse=args.fuse, progress=False if args.no_progress else None,
                              replay=False if args.no_replay else None,
                              profile=profile_path(args), config=config)
        if args.check:
            check_mpi(res, comm, prog.path, scop, init, prog.defines,
                      list(prog.include_dirs), lib=run.lib)
        return _finish(res, comm, scop.function, args.json)

    return guarded(comm, go)


def driver_mpi(module: ModuleType, args: argparse.Namespace,
               config: RuntimeConfig | None = None) -> int:
    """``python <kernel>_host.py --mpi ...`` on every rank (random inputs, no check), with
    the run's settings ``config`` (None: read from the environment now)."""
    comm = world()
    args.node = comm.node_slot()
    if config is None:
        config = RuntimeConfig.from_env()

    def setup() -> tuple[Any, ...]:
        from .run import parse_params, random_inputs

        params, scalars = parse_params(args.param, module.INT_PARAMS, module.FLOAT_PARAMS,
                                       getattr(module, "PARAM_DEFAULTS", None),
                                       getattr(module, "C_NAMES", None))
        devices = make_devices_from_args(args, side=config.side)
        return params, scalars, devices, random_inputs(module, params, scalars, devices,
                                                       args.seed)

    def go() -> int:
        params, scalars, devices, arrays = setup_all(comm, setup)
        res = execute_mpi(module, devices, params, scalars, arrays, comm, tile=args.tile,
                          mode=args.mode, reuse=not args.no_reuse, coherence=args.coherence,
                          gather=args.mpi_result == "gather", fuse=args.fuse,
                          progress=False if args.no_progress else None,
                          replay=False if args.no_replay else None, config=config)
        return _finish(res, comm, module.FUNCTION, args.json)

    return guarded(comm, go)

# vim: foldmethod=marker

"""Host work of bbmm per serial iteration and per tile, without a GPU (performance issue,
target 3): what the GPUs must hide.

Each program's generated driver runs on :class:`bbmm.devices.DryDevice`\\ s: the whole
runtime runs (Algorithm 2, present/alloc/readin, the directory, flow-out and flow-in,
replay, the launch preparation) but no byte moves and no kernel runs, so the figure is
the host's own time, free of a CPU OpenCL device competing for the cores. What it does
not include: the OpenCL driver's enqueue calls and ``OpenCLDevice``'s argument handling.

Usage::

    python scripts/bench_host.py --programs floyd,heat2d --devices 1,2 --sizes paper
    python scripts/bench_host.py --programs floyd --devices 2 --param floyd:n=4096 --profile 25
    python scripts/bench_host.py --programs floyd,lu --devices 4 --procs d --together --lag 8

Prints per configuration: serial iterations, tiles, host ms per serial iteration, us per
tile, ms per serial iteration of the loop alone (``loop ms``: from the end of the first
iteration to the end of the last, without the final write-out and gather,
:attr:`bbmm.stats.Stats.loop_s`), iterations replayed and, of those, moved on without
their tiles built (``Runtime.ahead``), and the garbage collector's time per serial
iteration (``gc us/it``: its passes walk what the runtime keeps alive from step to
step); over processes also ``paced``, ms per serial iteration when the processes keep
pace with each other (per window of 64 iterations the slowest process's time: LU's
owner of row ``k`` sets the pace of its quarter of the loop); ``--json PATH`` writes the
rows. With ``--steady PROG:NAME=A,B`` a program runs at ``NAME=A`` and at ``NAME=B``
(its serial loop's length) and its figures are the differences of the two runs, per
serial iteration and per tile: the steady state, without the first iterations that
record what later ones replay (``python scripts/bench_host.py --programs heat2d
--devices 4,8 --steady heat2d:tsteps=100,1000``).
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import expcommon as ec  # noqa: E402

from bbmm.devices import DryDevice  # noqa: E402
from bbmm.run import frozen_heap, runtime_options  # noqa: E402
from bbmm.runtime import Runtime  # noqa: E402


DEFAULT_PROGRAMS = ("floyd", "heat2d", "fdtd2d", "heat3d", "lu")


class CountingRuntime(Runtime):
    """Counts ``end_serial`` calls (serial iterations of any depth)."""

    iterations = 0

    def end_serial(self, serial: object = None) -> None:
        self.iterations += 1
        super().end_serial(serial)


def measure(name: str, params: dict[str, int], ndev: int, repeat: int,
            replay: bool | None, lag: int = 0) -> tuple[dict[str, Any], CountingRuntime]:
    bench = ec.load_bench(name, params, init=False)
    module = bench.module
    tile = module.default_tile(bench.params, ndev)
    times = []
    loops = []
    gcs = []
    rt = None
    for _ in range(max(1, repeat)):
        devices = [DryDevice(i, lag=lag, keep_log=False) for i in range(ndev)]
        arrays = {k: v.copy() for k, v in bench.init.items()}
        rt = CountingRuntime(devices, arrays, replay=replay,
                             **runtime_options(module, arrays))
        t, gc_s = _timed_run(bench, rt, tile)
        times.append(t)
        gcs.append(gc_s)
        loops.append(rt.stats.loop_s)
    assert rt is not None
    wall = min(times)  # interference only adds time
    iters = max(1, rt.iterations)
    row = {"program": name, "devices": ndev, "params": bench.param_text, "tile": tile,
           "serial_iters": rt.iterations, "tiles": rt.stats.tiles, "wall_s": wall,
           "walls_s": times, "ms_per_iter": 1e3 * wall / iters,
           **_loop(loops, rt.stats.serial_iterations),
           "us_per_tile": 1e6 * wall / max(1, rt.stats.tiles),
           "replayed": rt.stats.replayed, "ahead": rt.stats.ahead,
           "launches": sum(d.launches for d in rt.devices),
           "gc_s": gcs[times.index(wall)]}
    return row, rt


def _timed_run(bench: Any, rt: Any, tile: int) -> tuple[float, float]:
    """One run of ``bench``'s driver on ``rt`` as ``bbmm run`` runs it (the heap before
    the loop frozen): its seconds, and the garbage collector's seconds in it."""
    with frozen_heap(), Collections() as gc_s:
        t0 = time.perf_counter()
        bench.module.run(rt, bench.params, bench.scalars, tile, False)
        took = time.perf_counter() - t0
    return took, gc_s[0]


class Collections:
    """The seconds the garbage collector's passes take while it is entered (``with
    Collections() as spent``: ``spent[0]`` once it is left): objects the runtime keeps
    alive from step to step are walked by every pass."""

    def __enter__(self) -> list[float]:
        self.spent = [0.0]
        self._start = 0.0
        gc.callbacks.append(self._hook)
        return self.spent

    def __exit__(self, *exc: Any) -> None:
        gc.callbacks.remove(self._hook)

    def _hook(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.spent[0] += time.perf_counter() - self._start


class LoopbackComm:
    """Rank ``rank`` of ``size`` processes, alone: every exchange returns zeros of the
    sizes asked, every collective this rank's own value (what the other ranks would
    send changes nothing of this rank's host work); swaps copy through kept buffers, as
    a run's shared-memory swaps do."""

    def __init__(self, rank: int, size: int, per_rank: int):
        self.rank, self.size, self.per_rank = rank, size, per_rank

    def allgather(self, obj: Any) -> list[Any]:
        return [self.per_rank if isinstance(obj, int) else obj] * self.size

    def gather(self, obj: Any, root: int = 0) -> list[Any] | None:
        return [obj] * self.size if self.rank == root else None

    def bcast(self, obj: Any, root: int = 0) -> Any:
        return obj

    def barrier(self) -> None:
        pass

    def exchange(self, sends: Any, recvs: Any) -> dict[int, Any]:
        import numpy as np
        return {src: np.zeros(n, np.uint8) for src, n in recvs.items()}

    def swap(self, sends: Any, recvs: Any, direct: bool = True) -> None:
        """Pack every message into a buffer kept between swaps and unpack every received
        one out of one (zeros): the copies a shared-memory swap makes into and out of
        its mailbox (:meth:`bbmm.shm.ShmComm.swap`), without the other processes."""
        import numpy as np
        bufs = self.__dict__.setdefault("bufs", {})
        for dst, m in sends.items():
            out = bufs.get(("send", dst))
            if out is None or out.size < m.nbytes:
                out = bufs[("send", dst)] = np.empty(m.nbytes, np.uint8)
            m.pack_into(out[:m.nbytes])
        for src, m in recvs.items():
            into = bufs.get(("recv", src))
            if into is None or into.size < m.nbytes:
                into = bufs[("recv", src)] = np.zeros(m.nbytes, np.uint8)
            m.unpack_from(into[:m.nbytes])


def measure_ranks(name: str, params: dict[str, int], ndev: int, ranks: int, repeat: int,
                  only: int | None = None, lag: int = 0, together: bool = False,
                  shared: bool = False) -> dict[str, Any]:
    """Host work of each of ``ranks`` processes (``bbmm run --procs``) sharing ``ndev``
    dry devices, one process at a time (``only``: that one alone; ``together``: each in
    a process of its own, all at once, as ``bbmm run`` runs them, so that they compete
    for the machine's cores, caches and memory as there): the slowest one's time per
    serial iteration is what a machine with a core per process needs. With ``shared``
    (and ``together``) the processes exchange their messages through shared memory as
    ``bbmm run`` does (:class:`bbmm.shm.ShmComm`, the host arrays shared, messages left
    in their sender's arrays and lent as the run's settings say), one run each: each
    process's time then includes its waits for the others."""
    bench = ec.load_bench(name, params, init=False)
    tile = bench.module.default_tile(bench.params, ndev)
    which = list(range(ranks)) if only is None else [only]
    job = (name, params, ndev, ranks, repeat, lag)
    if together and len(which) > 1:
        import multiprocessing as mp
        from bbmm import shm
        ctx = mp.get_context("fork")  # the compiled program and its modules, inherited
        start = ctx.Barrier(len(which))
        path = shm.create(ranks) if shared else None
        try:
            with ctx.Pool(len(which), initializer=_meet, initargs=(start,)) as pool:
                got = pool.starmap(_rank_runs, [(*job, r, True, path) for r in which])
        finally:
            if path is not None:
                shm.remove(path)
    else:
        got = [_rank_runs(*job, r) for r in which]
    per_rank = [g["wall_s"] for g in got]
    wall = max(per_rank)
    slowest = got[per_rank.index(wall)]
    tiles = sum(g["tiles"] for g in got)
    iters = max(g["iters"] for g in got)
    return {"program": name, "devices": ndev, "ranks": ranks, "params": bench.param_text,
            "gc_s": slowest["gc_s"], "together": together and len(which) > 1,
            "shared": all(g["shared"] for g in got),
            "tile": tile, "serial_iters": iters, "tiles": tiles, "wall_s": wall,
            "per_rank_s": per_rank, "per_rank_loop_s": [g["loop"]["loop_s"] for g in got],
            "ms_per_iter": 1e3 * wall / iters,
            "us_per_tile": 1e6 * wall * ranks / max(1, tiles),
            "replayed": max(g["replayed"] for g in got),
            "ahead": max(g["ahead"] for g in got), **_paced([g["steps"] for g in got]),
            **max((g["loop"] for g in got), key=lambda lp: lp["loop_s"] or 0.0)}


_START: Any = None


def _meet(barrier: Any) -> None:
    """A worker of :func:`measure_ranks` ``together``: keeps the barrier its runs start at."""
    global _START
    _START = barrier


def _rank_runs(name: str, params: dict[str, int], ndev: int, ranks: int, repeat: int,
               lag: int, r: int, meet: bool = False, path: str | None = None
               ) -> dict[str, Any]:
    """Rank ``r``'s ``repeat`` runs on dry devices (each after the others' ``meet``, when
    they run together): its shortest run's figures. With ``path`` (a segment of
    :func:`bbmm.shm.create`), one run, exchanging through it with the other ranks."""
    from bbmm.config import RuntimeConfig
    from bbmm.distributed import DistributedRuntime

    bench = ec.load_bench(name, params, init=False)
    module = bench.module
    per = ndev // ranks
    tile = module.default_tile(bench.params, ndev)
    times = []
    gcs = []
    loops = []
    steps = []
    rt = None
    comm: Any = None
    if path is not None:
        from bbmm import shm
        comm = shm.ShmComm(path, r, ranks)
        comm.direct_min = RuntimeConfig.from_env().direct  # as bbmm.mpirun.run_cli sets it
        repeat = 1
    for _ in range(max(1, repeat)):
        devices = [DryDevice(i, lag=lag, keep_log=False) for i in range(per)]
        if comm is None:
            arrays = {k: v.copy() for k, v in bench.init.items()}
        else:
            arrays = {}
            for k, v in bench.init.items():
                a = comm.share_array(k, v.shape, v.dtype)  # None: no room, or direct off
                if a is None:
                    a = v.copy()
                else:
                    a[...] = v
                arrays[k] = a
            comm.open_peers()
        rt = DistributedRuntime(devices, arrays,
                                LoopbackComm(r, ranks, per) if comm is None else comm,
                                **runtime_options(module, arrays))
        ends = _step_ends(rt)
        if meet:
            _START.wait()
        t, gc_s = _timed_run(bench, rt, tile)
        times.append(t)
        gcs.append(gc_s)
        loops.append(rt.local.stats.loop_s)
        steps.append([b - a for a, b in zip(ends, ends[1:])])
    assert rt is not None
    if comm is not None:
        comm.barrier()  # every rank done with the others' arrays
        comm.close()
    best = times.index(min(times))
    return {"wall_s": times[best], "gc_s": gcs[best], "steps": steps[best],
            "shared": comm is not None,
            "loop": _loop(loops, rt.rank_stats.serial_iterations),
            "tiles": rt.local.stats.tiles, "replayed": rt.local.stats.replayed,
            "ahead": rt.local.stats.ahead, "iters": max(1, rt.rank_stats.serial_iterations)}


PACE_WINDOW = 64
"""Serial iterations per window of :func:`_paced`: few against a part of the loop that
one process leads (LU's quarter, 4096 iterations at n=16384), many against the step or
two by which processes that wait for each other's messages run apart."""


def _step_ends(rt: Any) -> list[float]:
    """When each outermost serial iteration of ``rt`` (a :class:`DistributedRuntime`)
    ends: its ``end_serial`` wrapped on the instance to note the time."""
    ends: list[float] = []
    inner = rt.end_serial

    def end_serial(serial: object = None) -> None:
        inner(serial)
        if isinstance(serial, tuple) and len(serial) == 1:
            ends.append(time.perf_counter())

    rt.end_serial = end_serial
    return ends


def _paced(steps: list[list[float]]) -> dict[str, Any]:
    """The loop's time when the processes keep pace with each other (``paced_s``, over
    ``paced_iters`` serial iterations after the first, and per iteration): per window
    of :data:`PACE_WINDOW` iterations the slowest process's time, summed. Where each
    process is measured on its own, a process that is slowest only during a part of
    the loop (LU's owner of row ``k``, a quarter of the loop each) sets the pace of that
    part, which the slowest whole run does not show."""
    steps = [s for s in steps if s]
    if not steps:
        return {"paced_s": None, "paced_iters": 0, "paced_ms_per_iter": None}
    n = min(len(s) for s in steps)
    total = sum(max(sum(s[i:i + PACE_WINDOW]) for s in steps)
                for i in range(0, n, PACE_WINDOW))
    return {"paced_s": total, "paced_iters": n, "paced_ms_per_iter": 1e3 * total / n}


def _loop(loops: list[float | None], serial: int) -> dict[str, Any]:
    """The shortest of a configuration's loop times (:attr:`bbmm.stats.Stats.loop_s`:
    from the end of the first serial iteration to the end of the last, without the
    final write-out or, over processes, the gather, which alone took 0.57 s of a process
    of four's 2.1 s for Floyd n=16384) and per serial iteration after the first."""
    got = [t for t in loops if t is not None]
    if not got or serial < 2:
        return {"loop_s": None, "loop_ms_per_iter": None, "loop_iters": 0}
    best = min(got)
    return {"loop_s": best, "loop_ms_per_iter": 1e3 * best / (serial - 1),
            "loop_iters": serial - 1}


def difference(short: dict[str, Any], long: dict[str, Any]) -> dict[str, Any]:
    """The row of ``long`` with its figures per serial iteration and per tile taken from
    the difference of the two runs (``short``: the same configuration with fewer serial
    iterations): the steady state. The busiest process's time counts for several."""
    iters = long["serial_iters"] - short["serial_iters"]
    tiles = long["tiles"] - short["tiles"]
    wall = long["wall_s"] - short["wall_s"]
    if iters <= 0 or tiles <= 0:
        raise SystemExit(f"bench_host --steady: {long['program']} ran no more iterations "
                         f"at {long['params']} than at {short['params']}")
    ranks = long.get("ranks", 1)
    if wall <= 0:
        print(f"bench_host --steady: {long['program']} at {long['params']} took no longer "
              f"than at {short['params']} ({1e3 * wall:+.3f} ms): the difference is below "
              "the timing noise; widen A,B or raise --repeat", file=sys.stderr)
    loop: dict[str, Any] = {"loop_s": None, "loop_ms_per_iter": None, "loop_iters": 0}
    if long.get("loop_s") is not None and short.get("loop_s") is not None:
        k = long["loop_iters"] - short["loop_iters"]
        loop = {"loop_s": long["loop_s"] - short["loop_s"], "loop_iters": k,
                "loop_ms_per_iter": 1e3 * (long["loop_s"] - short["loop_s"]) / k}
    if long.get("paced_s") is not None and short.get("paced_s") is not None:
        k = long["paced_iters"] - short["paced_iters"]
        loop.update(paced_s=long["paced_s"] - short["paced_s"], paced_iters=k,
                    paced_ms_per_iter=1e3 * (long["paced_s"] - short["paced_s"]) / k)
    return {**long, "params": f"{short['params']} -> {long['params']}",
            "serial_iters": iters, "tiles": tiles, "wall_s": wall,
            "ms_per_iter": 1e3 * wall / iters, "us_per_tile": 1e6 * wall * ranks / tiles,
            "steady": True, "below_noise": wall <= 0, **loop,
            "gc_s": long.get("gc_s", 0.0) - short.get("gc_s", 0.0)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--programs", default=",".join(DEFAULT_PROGRAMS),
                   help="comma-separated programs of polybench/")
    p.add_argument("--devices", default="1,2", help="comma-separated device counts")
    p.add_argument("--sizes", choices=("tiny", "small", "paper"), default="small")
    p.add_argument("--param", action="append", default=[], metavar="[PROG:]NAME=VALUE",
                   help="override a parameter, e.g. floyd:n=4096 (repeatable)")
    p.add_argument("--repeat", type=int, default=3, help="runs per configuration (the "
                   "shortest counts)")
    p.add_argument("--no-replay", action="store_true", help="runtime without replay")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="profile the last configuration's last run; print the N top functions")
    p.add_argument("--procs", default="1", metavar="P[,P...]",
                   help="processes sharing the devices (bbmm run --procs; 'd': one per "
                        "device); each process's host work is measured alone and the "
                        "slowest counts")
    p.add_argument("--together", action="store_true",
                   help="with --procs: run the processes at once, each in its own process "
                        "(as bbmm run does), so that they compete for the cores as there")
    p.add_argument("--shm", action="store_true",
                   help="with --together: the processes exchange through shared memory as "
                        "bbmm run's do (host arrays shared, messages left in their "
                        "sender's arrays and lent as BBMM_DIRECT and BBMM_LEND say), one "
                        "run each; each process's time includes its waits for the others")
    p.add_argument("--steady", action="append", default=[], metavar="PROG:NAME=A,B",
                   help="measure PROG at NAME=A and NAME=B and report the differences: "
                        "the steady state per serial iteration and per tile (repeatable)")
    p.add_argument("--lag", type=int, default=0, metavar="N",
                   help="the dry devices' commands complete N commands after they are "
                        "enqueued, as a GPU trails the host: the pending copies' bookkeeping "
                        "runs as on a GPU (default 0: every command done at once)")
    p.add_argument("--json", default=None, metavar="PATH")
    args = p.parse_args(argv)
    if args.lag < 0:
        p.error("--lag: a number of commands, 0 or more")
    if args.shm and not args.together:
        p.error("--shm: the processes exchange through shared memory only when they run "
                "together (--together)")
    steady = {}
    for item in args.steady:
        prog, _, rest = item.partition(":")
        name, _, values = rest.partition("=")
        try:
            a, b = (int(v) for v in values.split(","))
        except ValueError:
            a = b = 0
        if not prog or not name or a >= b:
            p.error(f"--steady {item!r}: expected PROG:NAME=A,B with integers A < B")
        steady[prog] = (name, a, b)
    progs = ec.program_list(args, DEFAULT_PROGRAMS)
    replay = False if args.no_replay else None
    rows = []
    print(f"{'program':12} {'params':>24} {'dev/P':>6} {'iters':>6} {'tiles':>7} "
          f"{'ms/iter':>8} {'us/tile':>8} {'loop ms':>8} {'replayed':>8} {'moved on':>8} "
          f"{'gc us/it':>8} {'paced':>7}")
    for prog in progs:
        params = ec.program_params(args, prog)
        for nd, np_ in ((nd, p) for nd in ec.device_counts(args)
                        for p in dict.fromkeys(nd if q == "d" else int(q)
                                               for q in args.procs.split(","))):
            if np_ > 1 and nd % np_ == 0:
                run = lambda ps: measure_ranks(prog, ps, nd, np_, args.repeat,  # noqa: E731
                                               lag=args.lag, together=args.together,
                                               shared=args.shm)
            elif np_ == 1:
                run = lambda ps: measure(prog, ps, nd, args.repeat, replay,  # noqa: E731
                                         args.lag)[0]
            else:
                continue
            if prog in steady:
                name, a, b = steady[prog]
                if name not in params:
                    p.error(f"--steady: {prog} has no parameter {name!r} "
                            f"(its parameters: {', '.join(params)})")
                row = difference(run({**params, name: a}), run({**params, name: b}))
            else:
                row = run(params)
            row.setdefault("ranks", 1)
            rows.append(row)
            print(f"{prog:12} {row['params']:>24} {nd:>3}/{np_:<2} {row['serial_iters']:>6} "
                  f"{row['tiles']:>7} {row['ms_per_iter']:>8.3f} {row['us_per_tile']:>8.1f} "
                  f"{_ms(row['loop_ms_per_iter']):>8} {row['replayed']:>8} {row['ahead']:>8} "
                  f"{1e6 * row['gc_s'] / max(1, row['serial_iters']):>8.2f} "
                  f"{_ms(row.get('paced_ms_per_iter')):>7}",
                  flush=True)
    if args.profile and rows:
        last = rows[-1]
        prof = cProfile.Profile()
        prof.enable()
        params = ec.program_params(args, last["program"])
        if last["ranks"] > 1:
            measure_ranks(last["program"], params, last["devices"], last["ranks"], 1, only=0,
                          lag=args.lag)
        else:
            measure(last["program"], params, last["devices"], 1, replay, args.lag)
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(os.environ.get("BBMM_SORT", "tottime")).print_stats(args.profile)
        print(out.getvalue())
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "median_ms_per_iter": statistics.median(
                r["ms_per_iter"] for r in rows) if rows else None}, f, indent=1)
    return 0


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


if __name__ == "__main__":
    sys.exit(main())

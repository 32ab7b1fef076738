"""How far bbmm and the hand-written baselines are from the hardware floor (performance
issue, target 1), per serial iteration, measured side by side in one run.

The floor of one serial iteration on ``d`` devices is the time the busiest device needs
to move its bytes: those its kernels must read and write in device memory over the
device's measured device-to-device bandwidth, plus its exact coherence bytes (flow-out
and flow-in) over the measured pinned host-device bandwidth::

    floyd   (n, rows split in d blocks):    memory 2 * 4 * n * ceil(n/d)   (read + write its rows)
                                            coherence 4 * n                (row k out, or in)
    heat2d  (n, two nests per time step):   memory 2 * 2 * 4 * n * ceil(n/d)
                                            coherence 2 * 2 * 4 * n * (2 if d > 2 else 1)
                                            (a halo row out and in per neighbour and nest)
    lu      (n, rows split in d blocks):    at k, m = n - k - 1 columns right of k:
                                            memory 2 * 4 * m * (its rows below k, + 1 on
                                            the owner of row k: the scaling)
                                            coherence 4 * m (row k out, or in)
                                            averaged over k = 1 .. n - 1, the iterations
                                            of the loop time

Bandwidths are measured here, on device 0: ``clEnqueueCopyBuffer`` of a 1 GiB buffer
(bytes read + bytes written over the time), and a 256 MiB pinned host array written to
and read from a buffer.

bbmm's time per iteration is *steady*: two runs with different numbers of serial
iterations (heat2d: ``tsteps`` and ``tsteps + --extra-steps``), the difference of
their best (shortest) loop times (the report's ``loop_s``: the run from the end of its
first iteration, without its final write-out) over the extra iterations, so read-in,
write-back, kernel builds and context creation drop out. Floyd's and LU's iteration count is
their size, so their time is the loop over ``n - 1`` iterations. The baseline's is its
shortest loop time (``loop_s``); LU has no hand-written baseline.

Usage (the GPU machine, see docs/performance.md)::

    python3 scripts/bench_floor.py --devices 1,2 --json $OUT/floor.json
    python3 scripts/bench_floor.py --floyd 2048 --heat2d 1024:10 --devices 1,2   # CPU, small
    python3 scripts/bench_floor.py --floyd 0 --coarsen 2x1,2x4,1x8   # kernel shapes side by side
    python3 scripts/bench_floor.py --floyd 0 --heat2d 0 --lu 16384 --devices 1
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from typing import Any


_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
sys.path[:0] = [p for p in (_ROOT, os.path.join(_HERE, "baselines")) if p not in sys.path]

import pyopencl as cl  # noqa: E402

import compare  # noqa: E402  (scripts/baselines/compare.py)
from common import Team  # noqa: E402

from bbmm import hostlib  # noqa: E402
from bbmm.config import RuntimeConfig  # noqa: E402

F = 4  # bytes per float


def bandwidths(team: Team, nbytes: int, reps: int = 5) -> dict[str, float]:
    """Measured ``d2d`` (read + write bytes per second of a buffer copy) and pinned
    ``h2d``/``d2h`` bytes per second on the team's first device (medians of ``reps``)."""
    ln = team.lanes[0]
    a, b = team.buffer(ln, nbytes), team.buffer(ln, nbytes)
    host_n = min(nbytes, 256 << 20)
    host = team.pinned(host_n // F)

    def timed(fn) -> float:
        fn()
        ln.queue.finish()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            ln.queue.finish()
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts)

    d2d = 2 * nbytes / timed(lambda: cl.enqueue_copy(ln.queue, b, a, byte_count=nbytes))
    h2d = host_n / timed(lambda: cl.enqueue_copy(ln.queue, a, host, is_blocking=False))
    d2h = host_n / timed(lambda: cl.enqueue_copy(ln.queue, host, a, is_blocking=False))
    a.release()
    b.release()
    return {"d2d": d2d, "h2d": h2d, "d2h": d2h}


def floor_bytes(prog: str, n: int, d: int) -> tuple[int, int]:
    """(device-memory bytes, coherence bytes) of the busiest device per serial iteration."""
    rows = math.ceil(n / d)
    if prog == "floyd":
        return 2 * F * n * rows, (F * n if d > 1 else 0)
    if prog == "lu":
        return lu_floor_bytes(n, d)
    halo = 0 if d == 1 else (2 if d > 2 else 1)
    return 2 * 2 * F * n * rows, 2 * 2 * F * n * halo


def lu_floor_bytes(n: int, d: int) -> tuple[int, int]:
    """LU's :func:`floor_bytes`: per ``k``, the busiest device's trailing rows (its rows
    of the block distribution below ``k``, each ``n - k - 1`` columns read and written)
    and row ``k``'s scaling on its owner, and row ``k`` moved once where ``d > 1``;
    averaged over ``k = 1 .. n - 1`` and rounded down."""
    size = math.ceil(n / d)
    mem = coh = 0
    for k in range(1, n):
        m = n - k - 1
        busiest = 0
        for p in range(d):
            below = max(0, min(n, (p + 1) * size) - max(k + 1, p * size))
            busiest = max(busiest, below + (1 if k // size == p else 0))
        mem += 2 * F * m * busiest
        coh += F * m if d > 1 else 0
    return mem // (n - 1), coh // (n - 1)


def steady_bbmm(prog: str, params: dict[str, int], d: int, args: argparse.Namespace
                ) -> dict[str, Any]:
    """bbmm's steady time per serial iteration (see the module docstring), after one
    warm-up run (kernel builds, the reference caches)."""
    compare.bbmm_once(prog, params, d, args)
    if prog in ("floyd", "lu"):
        runs = [compare.bbmm_once(prog, params, d, args) for _ in range(args.repeat)]
        wall = min(r["loop_s"] for r in runs)
        return {"s_per_iter": wall / (params["n"] - 1), "runs_s": [r["loop_s"] for r in runs],
                "flowout_bytes": runs[-1]["flowout_bytes"]}
    t1, extra = params["tsteps"], args.extra_steps
    long = {**params, "tsteps": t1 + extra}
    w1, w2, runs2 = [], [], []
    for _ in range(args.repeat):  # interleaved: drifts hit both sides alike
        w1.append(compare.bbmm_once(prog, params, d, args)["loop_s"])
        runs2.append(compare.bbmm_once(prog, long, d, args))
        w2.append(runs2[-1]["loop_s"])
    return {"s_per_iter": (min(w2) - min(w1)) / extra,
            "runs_s": {"tsteps": [t1, t1 + extra], "short": w1, "long": w2},
            "flowout_bytes": runs2[-1]["flowout_bytes"]}


def baseline_loop(prog: str, params: dict[str, int], team: Team, reps: int
                  ) -> float | None:
    """The hand-written baseline's shortest loop time per serial iteration (None: the
    program has none)."""
    if prog not in compare.MODULES:
        return None
    init, work = compare.baseline_arrays(prog, params, team)
    mod = compare.MODULES[prog]
    loops = []
    for _ in range(reps + 1):  # the first run warms up
        for k, v in init.items():
            work[k][...] = v
        loops.append(mod.run(team, params, work)["loop_s"])
    return min(loops[1:]) / compare.iterations_of(prog, params)


def _ms(s: float | None) -> str:
    """Seconds as milliseconds for the table, ``-`` for none."""
    return "-" if s is None else f"{s * 1e3:.3f}"


def _splits(procs: str, devices: int) -> bool:
    """Whether ``--procs procs`` can share ``devices`` (a number of processes must divide
    them; 'auto' and 'd' always can): other pairs are left out of the table, and a
    device count no value can share runs in one process."""
    return not procs.isdigit() or (0 < int(procs) <= devices and devices % int(procs) == 0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--floyd", type=int, default=16384, metavar="N", help="floyd's n (0: skip)")
    p.add_argument("--heat2d", default="12288:20", metavar="N:TSTEPS",
                   help="heat2d's n and the shorter run's time steps (0 or empty: skip)")
    p.add_argument("--lu", type=int, default=0, metavar="N", help="LU's n (0: skip, the default)")
    p.add_argument("--extra-steps", type=int, default=300,
                   help="time steps the longer heat2d run adds (the measured ones)")
    p.add_argument("--devices", default="1,2", help="comma-separated device counts")
    p.add_argument("--repeat", type=int, default=3,
                   help="runs per measurement; the shortest counts (the work is fixed: "
                        "interference on a shared machine only adds time, e.g. a 20-step "
                        "heat2d run took 0.44 s once and 0.065 s otherwise)")
    p.add_argument("--bw-bytes", type=int, default=1 << 30, help="buffer size of the copy test")
    p.add_argument("--platform", default=None)
    p.add_argument("--device-kind", choices=("auto", "gpu", "cpu"), default="auto")
    p.add_argument("--coarsen", default=None, metavar="CxR[,CxR...]",
                   help="points per work-item to measure bbmm with, side by side: C along "
                        "the innermost band loop, R consecutive rows (e.g. 2x1,2x4,1x8; "
                        "default: $BBMM_COARSEN x $BBMM_COARSEN1)")
    p.add_argument("--procs", default="auto", metavar="P[,P...]",
                   help="bbmm run's --procs values to measure side by side (e.g. 1,auto: "
                        "one process, then one per GPU)")
    p.add_argument("--json", default=None, metavar="PATH")
    args = p.parse_args(argv)
    args.check = False
    try:
        env = RuntimeConfig.from_env().kernels
        shapes = (hostlib.parse_points(args.coarsen) if args.coarsen else
                  [(env.coarsen, env.coarsen1)])
    except ValueError as e:
        p.error(f"--coarsen {e}")
    progs: list[tuple[str, dict[str, int]]] = []
    if args.floyd:
        progs.append(("floyd", {"n": args.floyd}))
    n, _, t = (args.heat2d or "0").partition(":")
    if int(n):
        progs.append(("heat2d", {"tsteps": int(t or 50), "n": int(n)}))
    if args.lu:
        progs.append(("lu", {"n": args.lu}))
    counts = [int(c) for c in args.devices.split(",")]
    platform = int(args.platform) if args.platform and args.platform.isdigit() else args.platform

    rows, bw = [], None
    for d in counts:
        team = Team.create(d, kind=args.device_kind, platform=platform, contexts="auto")
        if bw is None:
            bw = bandwidths(team, args.bw_bytes)
            print(f"# device 0 ({team.lanes[0].device.name.strip()}): copy "
                  f"{bw['d2d'] / 1e12:.2f} TB/s (read + write), pinned h2d "
                  f"{bw['h2d'] / 1e9:.1f} GB/s, d2h {bw['d2h'] / 1e9:.1f} GB/s", flush=True)
        for prog, params in progs:
            mem, coh = floor_bytes(prog, params["n"], d)
            floor = mem / bw["d2d"] + coh / min(bw["h2d"], bw["d2h"])
            base = baseline_loop(prog, params, team, args.repeat)
            split = [pr for pr in args.procs.split(",") if _splits(pr, d)]
            # one device (or a count no --procs value divides) runs in one process: the
            # row the speedups are set against is never left out
            variants = [(co, pr) for pr in ((split[:1] if d == 1 else split) or ["1"])
                        for co in shapes]
            for co, pr in variants:
                # each run's points per work-item, given as bbmm run --tune
                tune = [f"coarsen={co[0]}", f"coarsen1={co[1]}"] if args.coarsen else []
                bb = steady_bbmm(prog, params, d, argparse.Namespace(
                    **{**vars(args), "procs": pr, "tune": tune}))
                rows.append({"program": prog, "params": params, "devices": d,
                             "floor_s": floor, "memory_bytes": mem, "coherence_bytes": coh,
                             "bbmm_s_per_iter": bb["s_per_iter"],
                             "baseline_loop_s_per_iter": base,
                             "bbmm_over_floor": bb["s_per_iter"] / floor,
                             "baseline_over_floor": None if base is None else base / floor,
                             "bbmm_runs": bb["runs_s"],
                             "bbmm_flowout_bytes": bb["flowout_bytes"],
                             "coarsen": f"{co[0]}x{co[1]}", "procs": pr,
                             "local": os.environ.get("BBMM_LOCAL", "")})
                print(f"# {prog} {params} on {d} (--procs {pr}): floor {floor * 1e3:.3f} ms, bbmm "
                      f"({co[0]}x{co[1]} points) {bb['s_per_iter'] * 1e3:.3f} ms, baseline "
                      f"{_ms(base)} ms", flush=True)
        team.close()
    print(f"\n{'program':8} {'size':>16} {'dev':>3} {'procs':>5} {'points':>6} {'floor ms':>9} "
          f"{'bbmm ms':>9} {'base ms':>9} {'bbmm/floor':>10} {'base/floor':>10}")
    for r in rows:
        size = ",".join(f"{k}={v}" for k, v in r["params"].items())
        print(f"{r['program']:8} {size:>16} {r['devices']:>3} {r['procs']:>5} {r['coarsen']:>6} "
              f"{r['floor_s'] * 1e3:>9.3f} "
              f"{r['bbmm_s_per_iter'] * 1e3:>9.3f} {_ms(r['baseline_loop_s_per_iter']):>9} "
              f"{r['bbmm_over_floor']:>10.2f} "
              f"{'-' if r['baseline_over_floor'] is None else format(r['baseline_over_floor'], '.2f'):>10}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"bandwidth": bw, "rows": rows, "argv": sys.argv[1:]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

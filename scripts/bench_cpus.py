"""How fast each processor of this machine runs Python, alone and beside others: the
host work of a process of ``bbmm run --procs`` is Python, and the slowest process sets
the pace of all (``docs/performance.md``).

One loop of pure Python, timed on each processor in turn (the others idle), then on all
of them at once, then on groups of ``--group`` at once (as the processes of a run on
that many GPUs): the shortest of ``--repeat`` loops per processor, in ms. On a virtual
machine the same loop may take twice as long on one processor as on another, or on one
processor now and later.

With ``--pairs C[,C...]`` it times the loop on processor C beside a busy loop on each
other processor in turn: a processor whose busy loop slows C's shares its core (two
hardware threads), which a virtual machine's list of processors need not say.

Usage::

    python scripts/bench_cpus.py [--group 4] [--repeat 3] [--json PATH]
    python scripts/bench_cpus.py --pairs 35,36 --json PATH
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
from typing import Any

LOOP = 300_000
"""Iterations of the timed loop: about 15-30 ms of one processor."""


def work(n: int = LOOP) -> float:
    """Seconds one loop of ``n`` additions and multiplications of Python ints takes."""
    t0 = time.perf_counter()
    s = 0
    for i in range(n):
        s += i * i
    return time.perf_counter() - t0


def _pinned(cpu: int, out: Any, repeat: int, loop: int) -> None:
    os.sched_setaffinity(0, {cpu})
    work(loop // 6)  # the processor's clock up first
    out.put((cpu, min(work(loop) for _ in range(repeat))))


def on(cpus: list[int], repeat: int, loop: int = LOOP) -> dict[int, float]:
    """Ms per loop on each of ``cpus``, a process pinned to each, all at once."""
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_pinned, args=(c, out, repeat, loop)) for c in cpus]
    for p in procs:
        p.start()
    got = dict(out.get() for _ in procs)
    for p in procs:
        p.join()
    return {c: 1e3 * t for c, t in got.items()}


def _spin(cpu: int, stop: Any) -> None:
    os.sched_setaffinity(0, {cpu})
    while not stop.is_set():
        work(10_000)


def beside(cpu: int, others: list[int], repeat: int, loop: int = LOOP) -> dict[int, float]:
    """Ms per loop on ``cpu`` while another processor runs a busy loop, per other
    processor."""
    ctx = mp.get_context("fork")
    out: dict[int, float] = {}
    for o in others:
        stop = ctx.Event()
        spinner = ctx.Process(target=_spin, args=(o, stop))
        spinner.start()
        try:
            out.update(on([cpu], repeat, loop))
            out[o] = out.pop(cpu)
        finally:
            stop.set()
            spinner.join()
    return out


def summary(ms: dict[int, float]) -> dict[str, float]:
    """Fastest, median and slowest processor, and the slowest over the fastest."""
    v = sorted(ms.values())
    return {"min": v[0], "median": statistics.median(v), "max": v[-1],
            "spread": v[-1] / v[0]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--group", type=int, default=4, help="processors at once in the last "
                   "part (default 4: a run's processes on four GPUs)")
    p.add_argument("--repeat", type=int, default=3, help="loops per processor (the "
                   "shortest counts)")
    p.add_argument("--pairs", default=None, metavar="C[,C...]",
                   help="time the loop on each of these processors beside a busy loop on "
                        "every other processor, instead of the three parts")
    p.add_argument("--loop", type=int, default=LOOP, help=argparse.SUPPRESS)
    p.add_argument("--json", default=None, metavar="PATH")
    args = p.parse_args(argv)
    if args.group < 1 or args.repeat < 1:
        p.error("--group and --repeat: 1 or more")
    if not hasattr(os, "sched_setaffinity"):
        p.error("needs a system that pins a process to a processor (Linux)")
    cpus = sorted(os.sched_getaffinity(0))
    if args.pairs is not None:
        try:
            targets = [int(c) for c in args.pairs.split(",")]
        except ValueError:
            p.error(f"--pairs {args.pairs!r}: processor numbers, comma-separated")
        if any(c not in cpus for c in targets):
            p.error(f"--pairs: this process may run on processors {cpus[0]}-{cpus[-1]} only")
        return _pairs(targets, cpus, args)
    alone: dict[int, float] = {}
    for c in cpus:
        alone.update(on([c], args.repeat, args.loop))
    together = on(cpus, args.repeat, args.loop)
    groups: dict[int, float] = {}
    for g in range(0, len(cpus), args.group):
        groups.update(on(cpus[g:g + args.group], args.repeat, args.loop))
    doc = {"cpus": len(cpus), "group": args.group, "loop": args.loop}
    print(f"{len(cpus)} processors, ms per loop of {args.loop} (shortest of {args.repeat})")
    for name, ms in (("alone", alone), ("all at once", together),
                     (f"{args.group} at once", groups)):
        s = summary(ms)
        doc[name] = {"per_cpu_ms": {str(c): round(v, 3) for c, v in ms.items()}, **s}
        print(f"  {name:12} fastest {s['min']:7.2f}  median {s['median']:7.2f}  "
              f"slowest {s['max']:7.2f}  slowest/fastest {s['spread']:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


def _pairs(targets: list[int], cpus: list[int], args: Any) -> int:
    """``--pairs``: per target processor, its loop alone and beside each other one."""
    doc: dict[str, Any] = {"cpus": len(cpus), "loop": args.loop, "pairs": {}}
    for c in targets:
        alone = on([c], args.repeat, args.loop)[c]
        ms = beside(c, [o for o in cpus if o != c], args.repeat, args.loop)
        slow = sorted((o for o, v in ms.items() if v > 1.3 * alone), key=lambda o: -ms[o])
        doc["pairs"][str(c)] = {"alone_ms": round(alone, 3),
                                "beside_ms": {str(o): round(v, 3) for o, v in ms.items()},
                                "slowed_by": slow}
        print(f"processor {c}: {alone:.2f} ms alone; beside a busy processor "
              f"{min(ms.values()):.2f}-{max(ms.values()):.2f}; slowed by 1.3x or more "
              f"beside {', '.join(map(str, slow)) or 'none'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Micro-benchmark of the bounding-box algebra in :mod:`bbmm.box`.

The host runs these operations once per tile and array, so their cost in
CPython bounds how fine the tiles can be. This script times each operation on
realistic boxes in 2-D and 3-D and prints a table of microseconds per call
(median over ``--repeat`` timeit runs, each run long enough to take ~0.2 s).

The boxes (N = 1024, tiles of 256, k = 300):

* Floyd-Warshall at iteration ``k``: the tile box ``T = path[i0:i1][j0:j1]``,
  the row box ``R = path[k][j0:j1]`` (inside ``T`` since ``i0 <= k <= i1``)
  and the column box ``C = path[i0:i1][k]`` (outside ``T``). In 3-D the same
  shapes one dimension up: ``R`` pins the first dimension, ``C`` the last.
* A 5-point stencil on the tile: the centre box ``T`` and its shifts by -1/+1
  in the first two dimensions, ``H`` the halo box (their hull).

Usage::

    python scripts/bench_box.py [--repeat 7] [--json bench_box.json]
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import timeit
from types import ModuleType
from typing import Callable

import bbmm.box

N, TILE, K = 1024, 256, 300
TILE_ORIGIN = (256, 512, 768)


def scenario(nd: int, impl: ModuleType = bbmm.box) -> dict[str, object]:
    """The boxes of one dimensionality (see the module docstring)."""
    Box = impl.Box
    lo = TILE_ORIGIN[:nd]
    hi = tuple(l + TILE - 1 for l in lo)
    t = Box(lo, hi)
    r = Box((K,) + lo[1:], (K,) + hi[1:])
    c = Box(lo[:-1] + (K,), hi[:-1] + (K,))
    shifts = []
    for d in (0, 1):
        for s in (-1, 1):
            off = tuple(s if e == d else 0 for e in range(nd))
            shifts.append(t.shift(off))
    halo = Box(tuple(l - 1 for l in lo), tuple(h + 1 for h in hi))
    # hull of the 5-point stencil boxes: only dims 0 and 1 grow
    halo5 = Box(tuple(l - (d < 2) for d, l in enumerate(lo)),
                tuple(h + (d < 2) for d, h in enumerate(hi)))
    return dict(lo=lo, hi=hi, T=t, R=r, C=c, S=shifts, H=halo, H5=halo5)


def cases(nd: int, impl: ModuleType = bbmm.box) -> list[tuple[str, Callable[[], object]]]:
    """(label, zero-argument callable) pairs for one dimensionality.

    ``impl`` is the module under test (``bbmm.box``, or another version of it
    loaded under another name, to compare two versions in one process).
    """
    Box, covers, disjoint = impl.Box, impl.covers, impl.disjoint
    s = scenario(nd, impl)
    lo, hi = s["lo"], s["hi"]
    t, r, c, h, h5 = s["T"], s["R"], s["C"], s["H"], s["H5"]
    sh = s["S"]
    south = sh[1]  # T shifted by +1 in dim 0: overlaps T in all but one row
    fw3 = [t, r, c]
    st5 = [t] + sh
    tc = [t, c]
    assert len(t.subtract(h)) == 0 and len(h.subtract(t)) == 2 * nd
    assert covers(tc, r) and not covers(st5, h5)
    return [
        ("Box(lo, hi)", lambda: Box(lo, hi)),
        ("T & R (overlap)", lambda: t.intersect(r)),
        ("T & C (apart)", lambda: t.intersect(c)),
        ("H - T (2*ndim pieces)", lambda: h.subtract(t)),
        ("south - T (1 piece)", lambda: south.subtract(t)),
        ("T - C (apart)", lambda: t.subtract(c)),
        ("T.hull(C)", lambda: t.hull(c)),
        ("R <= T (true)", lambda: r.issubset(t)),
        ("C <= T (false)", lambda: c.issubset(t)),
        ("T.overlaps(south)", lambda: t.overlaps(south)),
        ("disjoint(FW T,R,C)", lambda: disjoint(fw3)),
        ("disjoint(5-pt stencil)", lambda: disjoint(st5)),
        ("disjoint(5-pt, merge=False)", lambda: disjoint(st5, merge=False)),
        ("covers([T,C], R)", lambda: covers(tc, r)),
        ("covers(5-pt, halo) false", lambda: covers(st5, h5)),
    ]


def time_us(fn: Callable[[], object], repeat: int) -> float:
    """Median microseconds per call of ``fn`` over ``repeat`` timeit runs."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()  # calls per run so that a run takes >= 0.2 s
    runs = timer.repeat(repeat=repeat, number=number)
    return statistics.median(runs) / number * 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7,
                    help="timeit runs per operation; the median is reported (default 7)")
    ap.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")

    dims = (2, 3)
    table: dict[str, dict[str, float]] = {}
    for nd in dims:
        for label, fn in cases(nd):
            table.setdefault(label, {})[f"{nd}d"] = time_us(fn, args.repeat)

    width = max(len(k) for k in table)
    head = f"{'operation':<{width}}" + "".join(f"  {f'{nd}-D (us)':>10}" for nd in dims)
    print(f"bbmm.box, Python {platform.python_version()} "
          f"({platform.python_implementation()}), median of {args.repeat} runs")
    print(head)
    print("-" * len(head))
    for label, row in table.items():
        print(f"{label:<{width}}" + "".join(f"  {row[f'{nd}d']:>10.3f}" for nd in dims))

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"python": sys.version, "implementation": platform.python_implementation(),
                       "repeat": args.repeat, "unit": "us per call",
                       "results": [{"operation": k, **v} for k, v in table.items()]},
                      f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

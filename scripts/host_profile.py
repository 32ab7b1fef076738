"""Where each process's host time goes: a summary of ``bbmm run --host-profile DIR``.

Per process (``DIR/rank<R>.pstats``, cProfile's statistics of its run), the time spent
in each kind of function, by the time spent in the functions themselves:

- ``waiting``: for other processes (the shared-memory mailboxes' polls and sleeps) and
  for devices (OpenCL events waited for, threads' locks);
- ``opencl``: pyopencl's calls (enqueues, kernel arguments, status queries) and the
  device's thin wrappers around them (``bbmm/devices/cldevice.py``, ``kernelargs.py``):
  pyopencl's compiled functions are invisible to cProfile, so their time counts as
  their Python caller's own (a launch's 33-37 us on a 4 x H100 host);
- ``driver``: the generated host driver (its tiles and boxes);
- ``bbmm``: the runtime's own Python;
- ``other``: the rest (numpy, the standard library).

then the functions that took the most. ``--per N`` also prints each as microseconds per
serial iteration (N of them). The profiler slows Python down (calls cost more), so the
shares count, not the totals.

::

    python3 -m bbmm run polybench/lu.c --param n=16384 --devices 4 --host-profile prof
    python3 scripts/host_profile.py prof --per 16384
"""
from __future__ import annotations

import argparse
import glob
import os
import pstats
import re
import sys
from typing import Any

KINDS = ("waiting", "opencl", "driver", "bbmm", "other")
_WRAPPERS = tuple(os.path.join("bbmm", "devices", f) for f in ("cldevice.py", "kernelargs.py"))
_WAITS = re.compile(r"sched_yield|time\.sleep|'wait' of|wait_for_events|'acquire' of "
                    r"'_thread|_thread\.lock")


def kind(func: tuple[str, int, str]) -> str:
    """The kind of a profiled function ``(file, line, name)``."""
    path, _, name = func
    if _WAITS.search(name) or (path.endswith(os.path.join("bbmm", "shm.py"))
                               and name in ("idle", "_waiter", "barrier")):
        return "waiting"
    if ("pyopencl" in path or "pyopencl" in name or "_cl." in name
            or path.endswith(_WRAPPERS)):
        return "opencl"
    if os.sep + "drivers" + os.sep in path:
        return "driver"
    if os.sep + "bbmm" + os.sep in path:
        return "bbmm"
    return "other"


def summarize(path: str, top: int) -> dict[str, Any]:
    """The seconds per kind and the ``top`` functions by their own time, of one file."""
    stats = pstats.Stats(path).stats  # type: ignore[attr-defined]
    per = dict.fromkeys(KINDS, 0.0)
    rows = []
    for func, (_, calls, own, _, _) in stats.items():
        k = kind(func)
        per[k] += own
        rows.append((own, calls, k, func))
    rows.sort(reverse=True)
    return {"total_s": sum(per.values()), "kinds_s": per,
            "top": [{"own_s": own, "calls": calls, "kind": k,
                     "function": f"{os.path.basename(f[0])}:{f[1]}({f[2]})"}
                    for own, calls, k, f in rows[:top]]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", help="the folder given to bbmm run --host-profile")
    p.add_argument("--top", type=int, default=12, help="functions listed per process")
    p.add_argument("--per", type=int, default=None, metavar="N",
                   help="also give microseconds per serial iteration (N of them)")
    a = p.parse_args(argv)
    files = sorted(glob.glob(os.path.join(a.folder, "rank*.pstats")),
                   key=lambda f: int(re.findall(r"\d+", os.path.basename(f))[0]))
    if not files:
        print(f"host_profile.py: no rank<R>.pstats in {a.folder}", file=sys.stderr)
        return 2

    def fmt(s: float) -> str:
        return f"{s:.3f} s" + (f" ({1e6 * s / a.per:.1f} us/iter)" if a.per else "")

    for f in files:
        r = summarize(f, a.top)
        total = r["total_s"] or 1.0
        print(f"{os.path.basename(f)[:-7]}: {fmt(r['total_s'])} profiled; " + ", ".join(
            f"{k} {100 * v / total:.0f}%" for k, v in r["kinds_s"].items()))
        for row in r["top"]:
            print(f"  {fmt(row['own_s']):>28}  {row['calls']:>9} calls  {row['kind']:<8} "
                  f"{row['function']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

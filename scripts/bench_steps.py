"""Time per step of the stencils at several run lengths, side by side: the scaling issue's
per-step goals (4 GPUs against 1), data scaling over processes, and whether a long run
stays as fast per step as a short one.

Each configuration (program, device count, ``--procs``) runs ``bbmm run`` once per step
count of ``--steps`` (after one warm-up run of the first, which builds the kernels), in
this process through :func:`bbmm.cli.run_json`; ``--repeat`` rounds interleave the step
counts (drifts hit every length alike) and the shortest loop time of each counts (the
report's ``loop_s``: from the end of the first step to the devices' end of the last,
without the processes' start and the final write-out and gather, which vary by a fifth
of a second from run to run over processes). The time per step of an interval is the
difference of two lengths' loop times over their difference in steps. A later interval
much slower per step than the first says that steps grow slower as the run goes on
(``growth``: the last interval over the first). Over processes the report also gives the
busiest process's time in the exchange per step.

``--scale`` gives ``D`` devices ``D`` times the elements of the one-device size
(``expcommon.scaled_params``: the data per device constant) and reports the data scaling
``t(1) / t(D)`` of the last interval; without it, ``t(1) / t(D)`` is the speedup at one
size.

Four GPUs, one process per GPU (the default there), against one::

    python3 scripts/bench_steps.py --programs heat2d,fdtd2d,heat3d --devices 1,4 --steps 20,320,620
    python3 scripts/bench_steps.py --programs heat2d,fdtd2d,heat3d --devices 1,4 --steps 20,320 --scale

On this machine (PoCL), small sizes::

    python scripts/bench_steps.py --sizes small --programs heat2d --devices 1,2 --procs 1,2
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import expcommon as ec  # noqa: E402

from bbmm.cli import run_json  # noqa: E402

def step_param(params: dict[str, int]) -> str:
    sp = ec.step_param(params)
    if sp is None:
        raise SystemExit(f"bench_steps: no time-step parameter ({', '.join(ec.STEPS)}) "
                         f"in {params}")
    return sp


def run_once(prog: str, params: dict[str, int], devices: int, procs: str) -> dict[str, Any]:
    argv = ["run", str(ec.PROGRAMS[prog].path), "--devices", str(devices), "--no-progress"]
    if procs:
        argv += ["--procs", procs]
    for k, v in params.items():
        argv += ["--param", f"{k}={v}"]
    return run_json(argv)


def exchange_s(doc: dict[str, Any]) -> float:
    """The busiest process's time in the exchange (0 in one process)."""
    return max((r["time_s"].get("exchange", 0.0) for r in doc.get("per_rank", ())),
               default=0.0)


def measure(prog: str, params: dict[str, int], devices: int, procs: str, steps: list[int],
            repeat: int) -> dict[str, Any]:
    sp = step_param(params)
    run_once(prog, {**params, sp: steps[0]}, devices, procs)  # warm-up: kernel builds
    walls: dict[int, list[float]] = {t: [] for t in steps}
    loops: dict[int, list[float]] = {t: [] for t in steps}
    exch: dict[int, float] = {}
    for _ in range(max(1, repeat)):
        for t in steps:
            doc = run_once(prog, {**params, sp: t}, devices, procs)
            walls[t].append(doc["wall_s"])
            loops[t].append(doc["loop_s"])
            exch[t] = exchange_s(doc)
    best = {t: min(ls) for t, ls in loops.items()}
    per = [(a, b, (best[b] - best[a]) / (b - a)) for a, b in zip(steps, steps[1:])]
    a, b = steps[0], steps[-1]
    return {"program": prog, "devices": devices, "procs": procs or "default",
            "params": {k: v for k, v in params.items() if k != sp}, "steps": steps,
            "walls_s": walls, "loops_s": loops, "per_step_s": [p[2] for p in per],
            "intervals": [[p[0], p[1]] for p in per],
            "growth": per[-1][2] / per[0][2] if len(per) > 1 and per[0][2] > 0 else None,
            "exchange_per_step_s": (exch[b] - exch[a]) / (b - a)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--programs", default="heat2d,fdtd2d,heat3d",
                   help="comma-separated stencils of polybench/ (a time-step parameter each)")
    p.add_argument("--devices", default="1,4", help="comma-separated device counts")
    p.add_argument("--procs", default="", metavar="P[,P...]",
                   help="bbmm run's --procs values to measure side by side (default: its "
                        "own default, one process per GPU from four GPUs on)")
    p.add_argument("--steps", default="20,320,620", metavar="T[,T...]",
                   help="run lengths in steps, increasing (at least two)")
    p.add_argument("--sizes", choices=("tiny", "small", "paper"), default="paper")
    p.add_argument("--param", action="append", default=[], metavar="[PROG:]NAME=VALUE",
                   help="override a parameter, e.g. heat2d:n=4096 (repeatable)")
    p.add_argument("--scale", action="store_true",
                   help="data per device constant: D devices get D times the elements")
    p.add_argument("--repeat", type=int, default=1, help="rounds; the shortest loop time counts")
    p.add_argument("--json", default=None, metavar="PATH")
    args = p.parse_args(argv)
    steps = [int(s) for s in args.steps.split(",")]
    if len(steps) < 2 or any(b <= a for a, b in zip(steps, steps[1:])):
        p.error(f"--steps {args.steps}: give at least two increasing step counts")
    counts = [int(d) for d in args.devices.split(",")]
    procs = args.procs.split(",") if args.procs else [""]
    rows = []
    print(f"{'program':8} {'size':>22} {'dev':>3} {'procs':>7} "
          + " ".join(f"{f'ms/step {a}-{b}':>15}" for a, b in zip(steps, steps[1:]))
          + f" {'growth':>6} {'exch ms/step':>12} {'t(1)/t(D)':>9}")
    for prog in ec.program_list(args, ("heat2d",)):
        base = ec.program_params(args, prog)
        one = None
        for d in counts:
            params = ec.scaled_params(prog, base, d) if args.scale and d > 1 else dict(base)
            for pr in (procs if d > 1 else procs[:1]):
                row = measure(prog, params, d, pr, steps, args.repeat)
                if d == 1 and one is None:
                    one = row["per_step_s"][-1]
                row["ratio_to_one"] = (one / row["per_step_s"][-1]
                                       if one and row["per_step_s"][-1] > 0 else None)
                row["ratio_kind"] = "data scaling" if args.scale else "speedup"
                rows.append(row)
                size = ",".join(f"{k}={v}" for k, v in row["params"].items())
                g = f"{row['growth']:.2f}" if row["growth"] is not None else "-"
                r = f"{row['ratio_to_one']:.3f}" if row["ratio_to_one"] is not None else "-"
                print(f"{prog:8} {size:>22} {d:>3} {row['procs']:>7} "
                      + " ".join(f"{1e3 * s:>15.3f}" for s in row["per_step_s"])
                      + f" {g:>6} {1e3 * row['exchange_per_step_s']:>12.3f} {r:>9}",
                      flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"steps": steps, "scale": args.scale, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

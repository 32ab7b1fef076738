"""Tiles per device for programs that run once: whole ``bbmm run`` times at several
``$BBMM_PIPELINE`` values, side by side in one process (performance issue, target 2).

A program without serial loops (blackscholes, matmul, mvt) reads its data in, computes
and writes back once. With one tile per device those three steps run one after the
other; with several tiles per device a tile's read-in runs beside the kernel and the
write-back of the tile before it (:func:`bbmm.run.default_tile`). Each round runs every
split once, in turn, so that a drift of the machine touches all of them alike; the table
gives the median wall time per split and its speed-up over one tile per device.

Usage::

    python3 scripts/bench_pipeline.py --sizes small --splits 1,4 --repeat 2
    python3 scripts/bench_pipeline.py --sizes paper --programs blackscholes,mvt,matmul \\
        --splits 1,2,4,8,16 --repeat 3 --json $OUT/pipeline.json      # on a GPU machine
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)

import expcommon as ec  # noqa: E402


def run_once(prog: str, params: dict[str, Any], devices: int, split: int,
             extra: list[str]) -> dict[str, Any]:
    """One ``bbmm run`` in this process with ``$BBMM_PIPELINE=split``; its JSON."""
    from bbmm.cli import run_json

    argv = ["run", str(ec.PROGRAMS[prog].path), "--devices", str(devices), "--no-progress"]
    for k, v in params.items():
        argv += ["--param", f"{k}={v}"]
    argv += extra
    old = os.environ.get("BBMM_PIPELINE")
    os.environ["BBMM_PIPELINE"] = str(split)
    try:
        return run_json(argv)
    except RuntimeError as e:
        raise SystemExit(str(e)) from None
    finally:
        if old is None:
            del os.environ["BBMM_PIPELINE"]
        else:
            os.environ["BBMM_PIPELINE"] = old


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--programs", default="blackscholes,mvt,matmul")
    p.add_argument("--sizes", default="small", choices=("tiny", "small", "paper"))
    p.add_argument("--param", action="append", default=[], metavar="[PROG:]NAME=VALUE",
                   help="override a size, e.g. blackscholes:n=4194304 (repeatable)")
    p.add_argument("--splits", default="1,2,4,8", help="$BBMM_PIPELINE values")
    p.add_argument("--devices", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3, help="rounds (each runs every split)")
    p.add_argument("--check", action="store_true",
                   help="check every warm-up run against the sequential C program")
    p.add_argument("--json", metavar="PATH", default=None)
    args = p.parse_args(argv)
    splits = [int(s) for s in args.splits.split(",")]
    rows = []
    print(f"{'program':13} {'params':26} {'split':>5} {'tile':>10} {'tiles':>5} "
          f"{'median s':>9} {'x split 1':>9}  runs")
    for prog in args.programs.split(","):
        info = ec.PROGRAMS[prog]
        params: dict[str, Any] = dict(info.sizes[args.sizes])
        for text in args.param:
            target, _, kv = text.rpartition(":")
            if target in ("", prog):
                k, _, v = kv.partition("=")
                params[k] = int(v)
        extra = []
        for k, v in info.scalars.items():
            extra += ["--param", f"{k}={v}"]
        walls: dict[int, list[float]] = {s: [] for s in splits}
        last: dict[int, dict[str, Any]] = {}
        for s in splits:   # warm-up: kernels built and cached, pinned pages touched
            r = run_once(prog, params, args.devices, s, extra + (["--check"] if args.check else []))
            if args.check and r.get("check") != "pass":
                raise SystemExit(f"{prog} split {s}: check {r.get('check')}")
        for _ in range(args.repeat):
            for s in splits:
                r = run_once(prog, params, args.devices, s, extra)
                walls[s].append(r["wall_s"])
                last[s] = r
        base = statistics.median(walls[splits[0]])
        ptext = ",".join(f"{k}={v}" for k, v in params.items())
        for s in splits:
            med = statistics.median(walls[s])
            r = last[s]
            rows.append({"program": prog, "params": params, "devices": args.devices,
                         "split": s, "tile": r.get("tile"), "tiles": r.get("tiles"),
                         "wall_s": walls[s], "median_s": med, "speedup": base / med})
            runs = " ".join(f"{w:.4f}" for w in walls[s])
            print(f"{prog:13} {ptext:26} {s:>5} {r.get('tile')!s:>10} {r.get('tiles')!s:>5} "
                  f"{med:>9.4f} {base / med:>9.3f}  {runs}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

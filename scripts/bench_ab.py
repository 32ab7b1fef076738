"""Two trees of bbmm side by side: one ``bbmm run`` command, alternately from each tree,
in rounds, with the medians per tree and their ratio.

A change's effect on the GPU machines is measured this way: one run of a program over
four GPUs varies by 15% or more from the next (Floyd n=16384 over four processes ran
0.360-0.425 ms per ``k`` in three runs of one tree, ``results/h100x4-2026-11-27/split/``),
so a single pair of runs says little; alternating rounds share the machine's drift and
their medians compare. The tree that runs first changes from round to round: on four
H100s two checkouts of the same runtime, base always first, differed by 17% in every one
of five rounds (``results/h100x4-2026-11-27/ab/``); run as here, a tree against a copy
of itself came out at 0.95 in four rounds (``rounds/``).

``--base-tune`` and ``--new-tune`` (``NAME=VALUE``, as ``bbmm run --tune`` takes them)
add settings to one side's runs: with ``--base`` the same tree, they compare one tree
under two settings.

Runs of one tree within one call vary by 40% (Floyd n=16384 over four H100s,
0.398-0.565 ms per ``k`` in six runs, ``results/h100x4-2026-11-27/variance/``), so as
many rounds as the device time allows are worth it: ``--time-limit S`` starts no round
that would end past S seconds and still prints the summary of those run, and ``--json``
is written again after every round (a command stopped by ``timeout`` lost its summary
when it was written only at the end).

Each tree's ``bbmm/`` and ``codegen/`` are copied side by side into one temporary folder,
and each runs from its copy as ``python -m bbmm`` with a kernel cache of its own
(``BBMM_CACHE``): the two differ in their code only, not in where they lie. Python puts
the folder it starts from first on ``sys.path``, ahead of ``PYTHONPATH``, so a tree run
from another tree's root would run that other tree; an editable install maps
``bbmm.codegen`` to its own checkout from anywhere, so the runs leave its finder out, and
before timing the script checks that ``bbmm`` and ``bbmm.codegen`` import from each copy.

Usage::

    python3 scripts/bench_ab.py --base ../base --rounds 3 -- run polybench/floyd.c --param n=16384 --devices 4
    python3 scripts/bench_ab.py --base ../base --new . --rounds 5 --json ab.json -- run polybench/lu.c --param n=8192 --devices 4
    python3 scripts/bench_ab.py --base . --base-tune direct=off --rounds 4 -- run polybench/heat2d.c --param n=12288 --param tsteps=320 --devices 4
    python3 scripts/bench_ab.py --base ../base --rounds 20 --time-limit 240 --json ab.json -- run polybench/heat3d.c --param n=512 --param tsteps=220 --devices 4

The arguments after ``--`` are bbmm's (``--json`` and ``--no-progress`` are added);
those naming an existing file are made absolute, so both trees run the same file. Each
run prints its whole time and its loop time (``loop_s``: from the end of the first
serial iteration to the devices' end of the last) per serial iteration; then each
tree's medians, and new / base.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_BOOT = """\
import runpy, sys
sys.meta_path = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
mode = sys.argv.pop(1)
if mode == "where":
    import bbmm, bbmm.codegen
    print(bbmm.__file__)
    print(bbmm.codegen.__file__)
else:
    sys.argv[0] = "bbmm"
    runpy.run_module("bbmm", run_name="__main__", alter_sys=True)
"""
"""What each run executes (``python -c``): the editable install's finders left out, then
``bbmm``'s command line, or (``where``) the files ``bbmm`` and ``bbmm.codegen`` import from."""


def _inside(path: str, tree: str) -> bool:
    path, tree = os.path.realpath(path), os.path.realpath(tree)
    return os.path.commonpath([path, tree]) == tree


def where(tree: str) -> list[str]:
    """The files ``bbmm`` and ``bbmm.codegen`` import from when run from ``tree``."""
    out = subprocess.run([sys.executable, "-c", _BOOT, "where"], cwd=tree,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"bench_ab: bbmm does not import from {tree}:\n{out.stderr.strip()}")
    return out.stdout.split()


def copy_tree(tree: str, dst: str) -> str:
    """``tree``'s ``bbmm/`` and ``codegen/`` copied into ``dst`` (without bytecode)."""
    if not os.path.isfile(os.path.join(tree, "bbmm", "__init__.py")):
        raise SystemExit(f"bench_ab: {tree} holds no bbmm/ (a checkout's root is wanted)")
    for part in ("bbmm", "codegen"):
        if os.path.isdir(os.path.join(tree, part)):
            shutil.copytree(os.path.join(tree, part), os.path.join(dst, part),
                            ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def check_tree(tree: str) -> None:
    """Refuse a tree whose runs would import bbmm from elsewhere."""
    files = where(tree)
    stray = [f for f in files if not _inside(f, tree)]
    if stray:
        raise SystemExit(f"bench_ab: run from {tree}, bbmm imports {', '.join(stray)}: "
                         "not that tree")


def absolute_args(args: list[str]) -> list[str]:
    """``args`` with every existing file made absolute (the same file for both trees)."""
    return [os.path.abspath(a) if os.path.isfile(a) else a for a in args]


def run_once(tree: str, args: list[str], cache: str) -> dict[str, Any]:
    """``bbmm ARGS --json F --no-progress`` run from ``tree``: its JSON report."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "run.json")
        env = {**os.environ, "BBMM_CACHE": cache}
        out = subprocess.run([sys.executable, "-c", _BOOT, "run", *args, "--json", path,
                              "--no-progress"], cwd=tree, env=env, capture_output=True,
                             text=True)
        if out.returncode != 0 or not os.path.exists(path):
            raise SystemExit(f"bench_ab: bbmm {' '.join(args)} failed in {tree} "
                             f"(exit {out.returncode}):\n{out.stderr.strip()}")
        with open(path) as f:
            return json.load(f)


def per_iteration(doc: dict[str, Any]) -> tuple[float, float | None]:
    """Milliseconds per serial iteration of a run: whole, and by its loop time (None where
    the run has no serial loop or reports no loop time)."""
    iters = max(1, int(doc.get("serial_iterations") or 1))
    loop = doc.get("loop_s")
    return (1e3 * doc["wall_s"] / iters,
            None if loop is None or iters < 2 else 1e3 * loop / (iters - 1))


def summary(runs: list[dict[str, Any]], tree: str) -> dict[str, Any]:
    mine = [r for r in runs if r["tree"] == tree]
    out: dict[str, Any] = {"runs": len(mine)}
    for key in ("ms_per_iter", "loop_ms_per_iter"):
        vals = [r[key] for r in mine if r[key] is not None]
        if vals:
            out[key] = {"median": statistics.median(vals), "min": min(vals), "max": max(vals)}
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    own, args = argv[:cut], argv[cut + 1:]
    p = argparse.ArgumentParser(prog="bench_ab.py", usage="%(prog)s --base DIR [--new DIR] "
                                "[--base-tune NAME=VALUE] [--new-tune NAME=VALUE] "
                                "[--rounds R] [--warmup W] [--time-limit S] [--json PATH] -- "
                                "BBMM_ARGS...",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, help="root of the checkout to compare against")
    p.add_argument("--new", default=_ROOT, help="root of the checkout measured (default: "
                   "the one holding this script)")
    p.add_argument("--rounds", type=int, default=3, help="runs of each tree, alternating "
                   "(default 3)")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs of each tree first "
                   "(kernel builds, caches; default 1)")
    p.add_argument("--json", metavar="PATH", help="write every run's figures and the "
                   "summary here (again after every round, so that a run stopped from "
                   "outside leaves the rounds it finished)")
    p.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help="start no round that would end more than S seconds after the "
                        "first run began (each round taken to last as long as the longest "
                        "before it): a machine lent for a while ends with a summary")
    for side in ("base", "new"):
        p.add_argument(f"--{side}-tune", action="append", default=[], metavar="NAME=VALUE",
                       help=f"a setting of the {side} side's runs (bbmm run --tune; "
                            f"repeatable)")
    a = p.parse_args(own)
    if not args:
        raise SystemExit("bench_ab: give bbmm's arguments after --, e.g. "
                         "-- run polybench/floyd.c --param n=4096 --devices 4")
    if a.rounds < 1 or a.warmup < 0:
        raise SystemExit("bench_ab: --rounds must be at least 1, --warmup at least 0")
    if a.time_limit is not None and a.time_limit <= 0:
        raise SystemExit("bench_ab: --time-limit must be a positive number of seconds")
    given = {"base": os.path.abspath(a.base), "new": os.path.abspath(a.new)}
    work = tempfile.mkdtemp(prefix="bench_ab_")
    try:
        return _compare(a, args, given, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _compare(a: argparse.Namespace, args: list[str], given: dict[str, str], work: str) -> int:
    """:func:`main`'s rounds, the trees copied into ``work``."""
    trees = {name: copy_tree(tree, os.path.join(work, name)) for name, tree in given.items()}
    for tree in trees.values():
        check_tree(tree)
    args = absolute_args(args)
    side_args = {name: args + [x for t in getattr(a, f"{name}_tune") for x in ("--tune", t)]
                 for name in trees}
    cache = {name: os.path.join(work, f"cache_{name}") for name in trees}
    t0 = time.monotonic()
    for _ in range(a.warmup):
        for name, tree in trees.items():
            run_once(tree, side_args[name], cache[name])
    runs: list[dict[str, Any]] = []
    longest = 0.0  # the longest round so far
    print(f"{'round':>5} {'tree':>4} {'wall s':>8} {'ms/iter':>8} {'loop ms/iter':>12}")
    for rnd in range(1, a.rounds + 1):
        started = time.monotonic()
        if a.time_limit is not None and rnd > 1 and \
                started + longest - t0 > a.time_limit:
            print(f"stopped after {rnd - 1} of {a.rounds} rounds: another would end past "
                  f"--time-limit {a.time_limit:g} s", flush=True)
            break
        # the tree that goes first changes every round (base, new; new, base; ...): a run
        # right after another may be slower or faster than one after it, and each tree
        # takes either place as often
        order = list(trees.items()) if rnd % 2 else list(trees.items())[::-1]
        for name, tree in order:
            doc = run_once(tree, side_args[name], cache[name])
            whole, loop = per_iteration(doc)
            runs.append({"round": rnd, "tree": name, "wall_s": doc["wall_s"],
                         "loop_s": doc.get("loop_s"),
                         "serial_iterations": doc.get("serial_iterations"),
                         "ms_per_iter": whole, "loop_ms_per_iter": loop,
                         "enqueues": doc.get("enqueues"), "check": doc.get("check"),
                         "replay": doc.get("replay")})
            print(f"{rnd:>5} {name:>4} {doc['wall_s']:8.3f} {whole:8.3f} "
                  f"{'-' if loop is None else f'{loop:.3f}':>12}", flush=True)
        longest = max(longest, time.monotonic() - started)
        result = _result(a, args, given, runs)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(result, f, indent=1)
    for key, label in (("ms_per_iter", "whole"), ("loop_ms_per_iter", "loop")):
        b, n = result["base"].get(key), result["new"].get(key)
        if b and n:
            print(f"{label}: median base {b['median']:.3f} ({b['min']:.3f}-{b['max']:.3f}), "
                  f"new {n['median']:.3f} ({n['min']:.3f}-{n['max']:.3f}) ms per serial "
                  f"iteration; new / base {result[f'ratio_{label}']:.3f}")
    return 0


def _result(a: argparse.Namespace, args: list[str], given: dict[str, str],
            runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The runs so far with each tree's summary and their ratios, paths as given (a
    results folder is read on other machines)."""
    result = {"args": [os.path.relpath(x) if os.path.isabs(x) else x for x in args],
              "trees": {k: os.path.relpath(v) for k, v in given.items()},
              "tune": {"base": a.base_tune, "new": a.new_tune}, "rounds": a.rounds,
              "rounds_run": max((r["round"] for r in runs), default=0),
              "base": summary(runs, "base"), "new": summary(runs, "new"), "runs": runs}
    for key, label in (("ms_per_iter", "whole"), ("loop_ms_per_iter", "loop")):
        b, n = result["base"].get(key), result["new"].get(key)
        if b and n:
            result[f"ratio_{label}"] = n["median"] / b["median"]
    return result


if __name__ == "__main__":
    sys.exit(main())

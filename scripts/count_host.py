"""Instructions the host executes per serial iteration of a program on dry devices, counted
by callgrind: a measure of bbmm's host work that does not move with the machine's load.

Timings of the host's work (``bench_host.py``) vary by a few percent between runs on a
shared machine, which hides a change of that size. This runs the generated driver on
:class:`bbmm.devices.DryDevice` s under ``valgrind --tool=callgrind`` at two values of the
parameter that counts the serial iterations (Floyd's and LU's ``n``, a stencil's
``tsteps``) and prints the difference of the two totals over the difference of the
values: the instructions of one more serial iteration, free of start-up, compilation and
the first read-in. The runs are made deterministic (one BLAS thread, a fixed hash seed,
no address randomisation where ``setarch -R`` exists); the same tree gives the same count.

Usage::

    python scripts/count_host.py floyd --devices 2 --vary n=256,512
    python scripts/count_host.py heat2d --devices 2 --vary tsteps=10,30 --param n=512
    python scripts/count_host.py floyd --devices 4 --procs 4 --vary n=128,256   # rank 0 of 4 processes

With ``--twice MODULE:NAME`` it also counts what one function costs per serial
iteration: the runs again with the function called twice wherever it is called (the
first result dropped), less the plain count. Only for a function whose one effect is
what it returns (a chain's next step, a decode), or whose second call finds the first's
work done (the cost then shows too low)::

    python scripts/count_host.py floyd --devices 4 --procs 4 --rank 1 --lag 8 --vary n=512,1024 --twice bbmm.shifted:Chain.next --twice bbmm.ordertype:box_of

Needs valgrind (``apt-get install valgrind``). Each run takes 10-60 s under callgrind.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def run_dry(program: str, params: dict[str, int], ndev: int, procs: int = 1,
            rank: int = 0, lag: int = 0) -> None:
    """The driver once on dry devices (what each callgrind run executes); with ``procs``,
    as rank ``rank`` of that many processes (``bbmm run --procs``); ``lag``: the devices'
    commands complete that many commands late (``bench_host.py --lag``)."""
    from bench_host import measure, measure_ranks

    if procs > 1:
        measure_ranks(program, params, ndev, procs, 1, only=rank, lag=lag)
    else:
        measure(program, params, ndev, 1, None, lag)


def twice(spec: str) -> None:
    """Make the function ``MODULE:NAME`` (``NAME`` a function of the module or
    ``Class.method``) run twice per call, wherever bbmm's modules call it: its first
    result is dropped."""
    import importlib

    mod, _, name = spec.partition(":")
    try:
        owner: object = importlib.import_module(mod)
        *path, attr = name.split(".")
        for part in path:
            owner = getattr(owner, part)
        f = getattr(owner, attr)
    except (ImportError, AttributeError, ValueError) as e:
        sys.exit(f"count_host: --twice {spec!r}: no such function ({e})")

    def doubled(*a: object, **k: object) -> object:
        f(*a, **k)
        return f(*a, **k)

    setattr(owner, attr, doubled)
    if not path:  # a module function: the modules that imported it by name call it there
        for m in list(sys.modules.values()):
            if getattr(m, "__name__", "").startswith("bbmm"):
                for k, v in list(vars(m).items()):
                    if v is f:
                        setattr(m, k, doubled)


def count(program: str, params: dict[str, int], ndev: int, procs: int = 1,
          rank: int = 0, lag: int = 0, doubled: str | None = None) -> int:
    """Instructions of one dry run under callgrind (``doubled``: a function run twice,
    :func:`twice`)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONHASHSEED="0")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", program,
           "--devices", str(ndev), "--procs", str(procs), "--rank", str(rank),
           "--lag", str(lag)] + [
               f"--param={k}={v}" for k, v in params.items()]
    if doubled:
        cmd += ["--twice", doubled]
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + cmd
    if shutil.which("setarch"):
        cmd = ["setarch", "-R"] + cmd  # the same addresses, so the same hash-table walks
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    m = re.search(r"Collected : (\d+)", out.stderr)
    if out.returncode != 0 or m is None:
        sys.exit(f"count_host: the run under callgrind failed:\n{out.stderr[-2000:]}")
    return int(m.group(1))


def _params(items: list[str]) -> dict[str, int]:
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        try:
            out[name] = int(value)
        except ValueError:
            sys.exit(f"count_host: --param {item!r} is not NAME=INTEGER")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("program", help="a program of polybench/ (floyd, lu, heat2d, ...)")
    p.add_argument("--devices", type=int, default=2, help="dry devices (default 2)")
    p.add_argument("--vary", metavar="NAME=A,B", help="the parameter counting the serial "
                   "iterations and its two values, e.g. n=256,512")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="another parameter, fixed (repeatable)")
    p.add_argument("--procs", type=int, default=1,
                   help="processes sharing the devices (bbmm run --procs); counts one of them")
    p.add_argument("--rank", type=int, default=0, help="the process counted (default 0)")
    p.add_argument("--lag", type=int, default=0, metavar="N",
                   help="the dry devices' commands complete N commands late, as a GPU "
                        "trails the host (bench_host.py --lag; default 0)")
    p.add_argument("--twice", action="append", default=[], metavar="MODULE:NAME",
                   help="also count what this function costs per serial iteration: the "
                        "runs again with it called twice per call (repeatable; a function "
                        "whose one effect is its result, e.g. bbmm.shifted:Chain.next)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    fixed = _params(args.param)
    if args.child:
        for spec in args.twice:
            twice(spec)
        run_dry(args.program, fixed, args.devices, args.procs, args.rank, args.lag)
        return 0
    if not shutil.which("valgrind"):
        sys.exit("count_host: valgrind is not installed (apt-get install valgrind)")
    if not args.vary or "=" not in args.vary:
        sys.exit("count_host: --vary NAME=A,B is needed (the serial-iteration parameter)")
    name, _, values = args.vary.partition("=")
    try:
        a, b = (int(v) for v in values.split(","))
    except ValueError:
        sys.exit(f"count_host: --vary {args.vary!r} is not NAME=A,B with integers A < B")
    if not a < b:
        sys.exit(f"count_host: --vary needs A < B, got {a}, {b}")
    # once outside callgrind first: the driver is compiled and cached (a tree that another
    # tree's run left a different driver cache for would count the compilation)
    if args.lag < 0:
        sys.exit("count_host: --lag is a number of commands, 0 or more")
    how = (args.devices, args.procs, args.rank, args.lag)
    run_dry(args.program, {**fixed, name: a}, *how)
    ia = count(args.program, {**fixed, name: a}, *how)
    ib = count(args.program, {**fixed, name: b}, *how)
    extra = " ".join(f"{k}={v}" for k, v in fixed.items())
    who = f" procs={args.procs} rank={args.rank}" if args.procs > 1 else ""
    who += f" lag={args.lag}" if args.lag else ""
    per = (ib - ia) / (b - a)
    print(f"{args.program} {extra} devices={args.devices}{who}: {per:.0f} "
          f"instructions per serial iteration ({name} {a} -> {b}: {ia} -> {ib})")
    for spec in args.twice:
        if ":" not in spec:
            sys.exit(f"count_host: --twice {spec!r} is not MODULE:NAME")
        da = count(args.program, {**fixed, name: a}, *how, doubled=spec)
        db = count(args.program, {**fixed, name: b}, *how, doubled=spec)
        cost = (db - da) / (b - a) - per
        print(f"  {spec}: {cost:.0f} instructions per serial iteration "
              f"({100 * cost / per:.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

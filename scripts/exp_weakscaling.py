"""Weak scaling over MPI ranks: the same program on 1 to R ranks, data per device constant.

Each configuration is one ``mpiexec -n R`` launch of this script in worker mode: rank 0
compiles the program and hands it to the others, every rank makes ``--devices D``
logical devices (the same on every rank) and runs the driver on a
:class:`bbmm.distributed.DistributedRuntime` ``--warmup`` + ``--repeat`` times; the
figures are medians of the timed runs. Sizes follow Figure 10(a)'s rule
(``expcommon.scaled_params``): every array grows with the total device count ``R * D``
so that the data per device stays constant; time steps stay fixed.

Figures per program and rank count: the per-serial-iteration time (the run's wall time,
final gather on rank 0 included, over the iterations of the outermost serial loop;
whole-run time for programs without one) and the weak-scaling efficiency
``t(1 rank) / t(R ranks)`` (ideal 1.0), the inter-rank bytes (exchange between phases,
gather at the end; per rank and per iteration), messages, and the time ranks spent in
exchanges (waiting for the data included).

On one machine all ranks share its cores (and PoCL's CPU devices share them again):
R ranks get the same compute for R times the work, so expect about cores / R at best
here; the figure means something with one rank per node (docs/mpi.md).

CPU (small sizes on one device, ranks 1-4, one device per rank; ``--sizes tiny`` for a
quick try)::

    python scripts/exp_weakscaling.py --check

A cluster (one rank per node, 4 GPUs each; paper sizes on one GPU)::

    python scripts/exp_weakscaling.py --sizes paper --devices 4 --ranks 1,2,4,8 \\
        --mpiexec "mpiexec -ppn 1 -f hosts"

Writes ``<out>/weakscaling.csv``, ``.json``, ``.png``.
"""
from __future__ import annotations

import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import expcommon as ec  # noqa: E402

EXP = "weakscaling"
DEFAULT_PROGRAMS = ec.TABLE4


# {{{ worker: one configuration, every rank (under mpiexec)

def worker(cfg: dict[str, Any]) -> int:
    from bbmm.codegen.compile import compile_program, load_driver

    from bbmm.devices.opencl import make_devices
    from bbmm.mpirun import check_mpi, execute_mpi, guarded, on_root, setup_all, world
    from bbmm.reference import init_arrays
    from bbmm.run import host_arrays

    comm = world()
    if comm.size != cfg["ranks"]:  # a launcher of another MPI starts singletons
        raise SystemExit(f"mpiexec started {cfg['ranks']} ranks but MPI sees {comm.size}: "
                         f"use the mpiexec of mpi4py's MPI library (--mpiexec)")
    node = comm.node_slot()  # ranks of one machine split its GPUs
    name = cfg["program"]
    path = str(ec.PROGRAMS[name].path)
    params = {k: int(v) for k, v in cfg["params"].items()}

    def go() -> int:
        prog = on_root(comm, lambda: compile_program(path))

        def setup() -> tuple[Any, ...]:
            module = load_driver(prog)
            init, scalars = init_arrays(prog.scop, params,
                                        scalars=dict(ec.PROGRAMS[name].scalars))
            devices = make_devices(cfg["devices"], cap=cfg["cap"], platform=cfg["platform"],
                                   node=node)
            return module, init, scalars, devices

        module, init, scalars, devices = setup_all(comm, setup)
        runs, check = [], "skipped"
        for i in range(cfg["warmup"] + cfg["repeat"]):
            arrays = host_arrays(module, params, devices)
            for k, a in arrays.items():
                if k in init:                # not a local array (an expanded scalar)
                    a[...] = init[k]
            res = execute_mpi(module, devices, params, scalars, arrays, comm,
                              tile=cfg["tile"], progress=False)
            if cfg["check"] and i == 0:
                check_mpi(res, comm, path, prog.scop, init, {})
                check = res.check
            if i >= cfg["warmup"] and comm.rank == 0:
                runs.append(res.as_json(name))
            res.runtime.release_all()
            for d in devices:
                d.pool.trim()
        if comm.rank == 0:
            doc = {"runs": runs, "check": check,
                   "array_bytes": int(sum(a.nbytes for a in init.values()))}
            Path(cfg["out"]).write_text(json.dumps(doc))
        return 0

    return guarded(comm, go)

# }}}


def mpiexec_default() -> str:
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else "mpiexec"


def run_config(args: Any, name: str, ranks: int, params: dict[str, int]) -> dict[str, Any]:
    """One ``mpiexec -n ranks`` launch of the worker; its rank 0's figures."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        cfg = {"program": name, "params": params, "devices": args.per_rank, "ranks": ranks,
               "cap": ec.device_mem(args), "platform": args.platform, "tile": args.tile,
               "warmup": args.warmup, "repeat": max(1, args.repeat), "check": args.check,
               "out": str(out)}
        cmd = [*shlex.split(args.mpiexec), "-n", str(ranks), sys.executable,
               os.path.abspath(__file__), "--worker", json.dumps(cfg)]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(ec.ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode != 0 or not out.exists():
            err = (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]
            return {"error": err}
        return json.loads(out.read_text())


def summarize(name: str, ranks: int, per_rank: int, params: dict[str, int],
              doc: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"program": name, "ranks": ranks, "devices_per_rank": per_rank,
                           "devices": ranks * per_rank,
                           "params": " ".join(f"{k}={v}" for k, v in params.items())}
    if "error" in doc:
        row["error"] = doc["error"]
        return row
    runs = doc["runs"]
    last = runs[-1]
    pr = last["per_rank"]
    iters = max(1, pr[0]["serial_iterations"])
    wall = statistics.median(r["wall_s"] for r in runs)
    row.update({
        "array_bytes": doc["array_bytes"],
        "bytes_per_device": doc["array_bytes"] / (ranks * per_rank),
        "per": "iteration" if iters > 1 else "run", "serial_iters": iters,
        "wall_s": wall, "iter_s": wall / iters,
        "exchange_bytes": last["exchange_bytes"], "gather_bytes": last["gather_bytes"],
        "messages": last["messages"],
        "exchange_bytes_per_rank_iter": last["exchange_bytes"] / ranks / iters,
        "max_rank_sent_bytes": max(p["exchange_sent_bytes"] for p in pr),
        "exchange_s_max": max(p["time_s"]["exchange"] for p in pr),
        "exchange_share": statistics.median(
            max(p["time_s"]["exchange"] for p in r["per_rank"]) / r["wall_s"]
            for r in runs if r["wall_s"] > 0) if runs else None,
        "tiles": last["tiles"], "check": doc["check"]})
    return row


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--worker"]:
        return worker(json.loads(argv[1]))
    p = ec.make_parser(EXP, __doc__, programs=DEFAULT_PROGRAMS, devices="1", sizes="small",
                       repeat=3)
    p.add_argument("--ranks", default="1,2,3,4", metavar="R[,R...]",
                   help="MPI rank counts (default: %(default)s); 1 is always run (the base)")
    p.add_argument("--mpiexec", default=mpiexec_default(), metavar="CMD",
                   help="launcher, split like a shell word list; '-n R' and the worker "
                        "command are appended (default: the mpiexec beside this Python, "
                        "from the mpich wheel)")
    args = p.parse_args(argv)
    per = ec.device_counts(args)
    if len(per) != 1:
        raise SystemExit("--devices: one count here (logical devices per rank)")
    args.per_rank = per[0]
    names = ec.program_list(args, DEFAULT_PROGRAMS)
    rank_counts = sorted({1, *(int(x) for x in args.ranks.split(",") if x.strip())})
    outdir = ec.out_dir(args)
    rows = []
    bar = ec.Progress(len(names) * len(rank_counts), EXP, False if args.no_progress else None)
    for nr in rank_counts:
        for name in names:
            bar.show(f"{name} x{nr}")
            params = ec.scaled_params(name, ec.program_params(args, name),
                                      nr * args.per_rank)
            rows.append(summarize(name, nr, args.per_rank, params,
                                  run_config(args, name, nr, params)))
            bar.step(what=f"{name} x{nr}")
    bar.close()
    base = {r["program"]: r for r in rows if r["ranks"] == 1}
    for r in rows:
        b = base.get(r["program"], {})
        t1, tn = b.get("iter_s"), r.get("iter_s")
        r["efficiency"] = t1 / tn if t1 and tn else None
    eff = {nr: ec.geomean(r["efficiency"] for r in rows if r["ranks"] == nr)
           for nr in rank_counts if nr > 1}
    note = (f"{args.per_rank} logical device(s) per rank; {args.sizes} sizes on "
            f"{args.per_rank} device(s), data x R on R ranks; median of {args.repeat} runs")
    cols = [("program", "program", ""), ("ranks", "ranks", ""), ("params", "size", ""),
            ("bytes_per_device", "data/dev", "bytes"), ("per", "per", ""),
            ("iter_s", "time/iter s", ".4g"), ("efficiency", "t(1)/t(R)", ".3f"),
            ("exchange_bytes_per_rank_iter", "xchg/rank/iter", "bytes"),
            ("gather_bytes", "gathered", "bytes"), ("messages", "msgs", ""),
            ("exchange_share", "xchg time", ".2f"), ("check", "check", "")]
    text = (f"Weak scaling over MPI ranks ({note}; ideal t(1)/t(R) = 1.0)\n"
            + ec.table(rows, cols) + "\ngeometric mean of t(1)/t(R): "
            + ", ".join(f"{nr} ranks: {v:.3f}" if v else f"{nr} ranks: -"
                        for nr, v in eff.items()))
    errors = [r for r in rows if r.get("error")]
    for r in errors:
        text += f"\n{r['program']} x{r['ranks']}: {r['error']}"

    def plot(path: Any) -> None:
        plt = ec.plt()
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(max(11, 1.6 * len(names) + 5), 4.6))
        multi = [nr for nr in rank_counts if nr > 1]

        def series(key: str) -> dict[str, list[Any]]:
            return {f"{nr} ranks": [next((r.get(key) for r in rows if r["program"] == n
                                          and r["ranks"] == nr), None) for n in names]
                    for nr in multi}

        labels = [n + ("" if base.get(n, {}).get("per") == "iteration" else "\n(whole run)")
                  for n in names]
        ec.bar_groups(ax1, labels, series("efficiency"),
                      ylabel="weak-scaling efficiency t(1 rank) / t(R ranks)",
                      title="Weak scaling over MPI ranks (data per device constant)",
                      hline=1.0, annotate="{:.2f}")
        ec.bar_groups(ax2, labels, series("exchange_bytes_per_rank_iter"),
                      ylabel="bytes between ranks per rank per serial iteration",
                      title="Inter-rank exchange (flow-out partitioning)", log=True,
                      annotate=ec.short)
        ec.save_fig(fig, path, note=note)

    ec.finish(EXP, args, outdir, rows, text, plot, geomean=eff)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

"""Figure 10(a) of Ramashekar & Bondhugula (TACO 2013): data scaling.

The data size grows with the number of devices so that the data per device stays
constant (weak scaling of memory), and the figure is the *per-serial-iteration*
speedup ``time_per_iter(1 device) / time_per_iter(N devices)`` (ideal: 1.0; the paper
reports a geometric mean of 0.94 on 2-4 GPUs, adi well below 1).

Scaling rule (``expcommon.ProgramInfo.scale``): every array's element count grows by N,
i.e. for n x n arrays ``n -> round(n * sqrt(N))`` (floyd, lu, heat2d, adi; fdtd2d: nx
and ny), for n^3 arrays ``n -> round(n * N^(1/3))`` (heat3d), for mvt the outer
dimension ``m -> m * N`` (A is m x n) and blackscholes ``n -> n * N``. The time steps
(tsteps, tmax) stay fixed. Per-iteration time = the whole run's wall time (allocation,
read-in, kernels, flow-out/in, write-out: every overhead, as the paper) divided by the
number of iterations of the outermost serial loop; the median of the individual
iterations is in the CSV too (``iter_median_s``). mvt and blackscholes have no serial
loop: their whole-run time is compared instead (``per = run``).

``--steady EXTRA`` also runs each program with a time-step parameter (tsteps, tmax) for
EXTRA more steps and reports the *steady* time per step, the difference of the two runs'
shortest walls over EXTRA, and its ratio ``steady t(1)/t(N)``: the per-step cost without the
first read-in and the last write-out, which on two GPUs sharing one host link (55 GB/s in
all on the H200 machines) take twice as long for twice the data.

On a CPU with PoCL all logical devices share the same cores, so N devices get the same
compute for N times the work: expect about 1/N there; the figure means something on
N real GPUs.

CPU (``small`` sizes on 1 device, scaled for 2)::

    python scripts/exp_datascaling.py                 # --devices 1,2

GPUs (paper sizes on 1 GPU, scaled up to 4 GPUs)::

    python scripts/exp_datascaling.py --sizes paper --devices 1,2,3,4

Writes ``<out>/datascaling.csv``, ``.json``, ``.png``.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import expcommon as ec  # noqa: E402

EXP = "datascaling"


def main(argv: Sequence[str] | None = None) -> int:
    p = ec.make_parser(EXP, __doc__, programs=ec.TABLE4, devices="1,2", sizes="small",
                       repeat=3)
    p.add_argument("--steady", type=int, default=0, metavar="EXTRA",
                   help="also run programs with a time-step parameter EXTRA steps longer and "
                        "report the steady time per step (0: off)")
    args = p.parse_args(argv)
    if args.steady < 0:
        p.error(f"--steady: {args.steady} is negative")
    names = ec.program_list(args, ec.TABLE4)
    ndevs = sorted(set(ec.device_counts(args)))
    if ndevs[0] != 1:
        ndevs = [1] + ndevs
    outdir = ec.out_dir(args)
    res: dict[tuple[str, int], dict[str, Any]] = {}
    sweep = ec.Sweep(args, EXP, names, ndevs)
    for nd, devs, name in sweep:
        params = ec.scaled_params(name, ec.program_params(args, name), nd)
        bench = ec.load_bench(name, params)
        m = ec.measure(bench, devs, tile=args.tile, repeat=args.repeat,
                       warmup=args.warmup, check=args.check)
        res[(name, nd)] = m.fig
        step = ec.step_param(params)
        if args.steady and step and "error" not in m.fig:
            longer = dict(params, **{step: params[step] + args.steady})
            m2 = ec.measure(ec.load_bench(name, longer), devs, tile=args.tile,
                            repeat=args.repeat, warmup=0, check=False)
            if "error" not in m2.fig:
                m.fig["steady_s"] = (m2.fig["wall_min_s"] - m.fig["wall_min_s"]) / args.steady
    note = sweep.note

    rows = []
    for name in names:
        base = res[(name, 1)]
        serial = base.get("serial_iters", 1) > 1
        for nd in ndevs:
            f = res[(name, nd)]
            key = "iter_s" if serial else "wall_s"
            t1, tn = base.get(key), f.get(key)
            rows.append({
                "program": name, "ndev": nd, "params": f["params"],
                "array_bytes": f["array_bytes"], "bytes_per_device": f["array_bytes"] / nd,
                "per": "iteration" if serial else "run", "serial_iters": f.get("serial_iters"),
                "wall_s": f.get("wall_s"), "iter_s": f.get("iter_s"),
                "iter_median_s": f.get("iter_median_s"),
                "speedup_per_iter": (t1 / tn) if (t1 and tn) else None,
                "speedup_per_iter_median": (base["iter_median_s"] / f["iter_median_s"])
                if serial and f.get("iter_median_s") else None,
                "steady_s": f.get("steady_s"),
                "speedup_steady": (base["steady_s"] / f["steady_s"])
                if base.get("steady_s") and f.get("steady_s") else None,
                "t_compute_s": f.get("t_compute_s"), "t_memory_mgmt_s": f.get("t_memory_mgmt_s"),
                "t_flowout_s": f.get("t_flowout_s"), "t_flowin_s": f.get("t_flowin_s"),
                "t_writeout_s": f.get("t_writeout_s"),
                "flowout_bytes": f.get("flowout_bytes"), "flowin_bytes": f.get("flowin_bytes"),
                "overhead_percent": f.get("overhead_percent"), "check": f.get("check"),
                "error": f.get("error")})
    gm = {nd: ec.geomean(r["speedup_per_iter"] for r in rows if r["ndev"] == nd)
          for nd in ndevs if nd > 1}
    cols = [("program", "program", ""), ("ndev", "dev", ""), ("params", "size", ""),
            ("bytes_per_device", "data/dev", "bytes"), ("per", "per", ""),
            ("iter_s", "time/iter s", ".4g"), ("iter_median_s", "median iter s", ".4g"),
            ("speedup_per_iter", "t(1)/t(N)", ".3f")]
    if args.steady:
        cols += [("steady_s", "steady step s", ".4g"), ("speedup_steady", "steady t(1)/t(N)", ".3f")]
    text = (f"Figure 10(a): data scaling ({note}; ideal t(1)/t(N) = 1.0)\n"
            + ec.table(rows, cols) + "\ngeometric mean of t(1)/t(N): "
            + ", ".join(f"{nd} devices: {v:.3f}" if v else f"{nd} devices: -"
                        for nd, v in gm.items()))
    if args.steady:
        text += (f"\nsteady: the difference of runs {args.steady} steps apart (shortest walls) "
                 "over those steps")

    def plot(path: Any) -> None:
        plt = ec.plt()
        fig, ax = plt.subplots(figsize=(max(7, 1.1 * len(names) + 3), 4.6))
        series = {}
        for nd in ndevs:
            if nd == 1:
                continue
            series[f"{nd} devices"] = [next(r["speedup_per_iter"] for r in rows
                                            if r["program"] == n and r["ndev"] == nd)
                                       for n in names]
        labels = [n + ("" if res[(n, 1)].get("serial_iters", 1) > 1 else "\n(whole run)")
                  for n in names]
        ec.bar_groups(ax, labels, series, ylabel="per-iteration speedup t(1 dev) / t(N dev)",
                      title="Figure 10(a): data scaling (data per device constant)",
                      hline=1.0, annotate="{:.2f}")
        ec.save_fig(fig, path, note=f"{note}; base sizes: {args.sizes} on 1 device, "
                                    f"data x N on N devices; median of {args.repeat} runs; "
                                    "ideal 1.0")

    ec.finish(EXP, args, outdir, rows, text, plot, geomean=gm)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Figure 10(c) of Ramashekar & Bondhugula (TACO 2013): effect of access function split.

When a tile's disjoint boxes cut through the region one access function touches, the
generated kernel finds the box holding each index at run time (Figure 9's ``split``
path: a bounds test per access, possible warp divergence). As in the paper:

* stencils and line sweep (heat2d, heat3d, fdtd2d, adi): BBMM's exact disjoint boxes
  (``fuse=0``: some accesses split) against one convex box per tile and array
  (``mode="convex"``: no access splits; bbmm's default fuse slack gives these too);
* floyd (whose accesses never split): every access forced split
  (``compile_program(..., split_all=True)``, the worst case) against the normal kernel.

Figures: ``perf = time(no split) / time(split)`` (1.0: no cost; the paper: about 1.0
for the stencils, about 0.7 for floyd forced split), for the kernel time (the
runtime's compute timer, which the split affects) and for the whole run's wall time
(which in convex mode also includes the different allocation); ``split_accesses`` is
how many tile accesses the runtime found split (0 for floyd's forced case: there the
kernel tests every access anyway). Medians of ``--repeat`` runs after a warm-up.

CPU (small sizes, 2 logical devices)::

    python scripts/exp_split.py

GPUs::

    python scripts/exp_split.py --sizes paper --devices 2

Writes ``<out>/split.csv``, ``.json``, ``.png``.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import expcommon as ec  # noqa: E402

EXP = "split"
DEFAULT = ("heat2d", "heat3d", "fdtd2d", "adi", "floyd")


def main(argv: Sequence[str] | None = None) -> int:
    p = ec.make_parser(EXP, __doc__, programs=DEFAULT, devices="2", sizes="small", repeat=3)
    args = p.parse_args(argv)
    names = ec.program_list(args, DEFAULT)
    ndevs = ec.device_counts(args)
    outdir = ec.out_dir(args)
    rows: list[dict[str, Any]] = []
    sweep = ec.Sweep(args, EXP, names, ndevs)
    for nd, devs, name in sweep:
        params = ec.program_params(args, name)
        kw = dict(tile=args.tile, repeat=args.repeat, warmup=args.warmup,
                  check=args.check)
        if name in ec.STENCILS:
            how = "disjoint vs convex"
            b = ec.load_bench(name, params)
            split = ec.measure(b, devs, mode="disjoint", fuse=0, **kw).fig
            nosplit = ec.measure(b, devs, mode="convex", **kw).fig
        else:
            how = "split_all vs normal"
            split = ec.measure(ec.load_bench(name, params, split_all=True), devs, **kw).fig
            nosplit = ec.measure(ec.load_bench(name, params), devs, **kw).fig
        row = {"program": name, "ndev": nd, "params": split["params"], "how": how,
               "split_accesses": split.get("split_accesses"),
               "nosplit_split_accesses": nosplit.get("split_accesses"),
               "split_compute_s": split.get("t_compute_s"),
               "nosplit_compute_s": nosplit.get("t_compute_s"),
               "split_wall_s": split.get("wall_s"), "nosplit_wall_s": nosplit.get("wall_s"),
               "split_check": split.get("check"), "nosplit_check": nosplit.get("check"),
               "error": split.get("error") or nosplit.get("error")}
        if row["split_compute_s"] and row["nosplit_compute_s"]:
            row["perf_compute"] = row["nosplit_compute_s"] / row["split_compute_s"]
        if row["split_wall_s"] and row["nosplit_wall_s"]:
            row["perf_wall"] = row["nosplit_wall_s"] / row["split_wall_s"]
        rows.append(row)
    note = sweep.note

    cols = [("program", "program", ""), ("ndev", "dev", ""), ("params", "size", ""),
            ("how", "split vs no split", ""), ("split_accesses", "split accesses", ""),
            ("split_compute_s", "kernel s (split)", ".4f"),
            ("nosplit_compute_s", "kernel s (no split)", ".4f"),
            ("perf_compute", "perf kernel", ".3f"), ("perf_wall", "perf wall", ".3f")]
    text = (f"Figure 10(c): access function split, perf = t(no split) / t(split) ({note})\n"
            + ec.table(rows, cols))

    def plot(path: Any) -> None:
        plt = ec.plt()
        fig, axes = plt.subplots(1, len(ndevs), figsize=(max(7, 1.2 * len(names) + 3)
                                                         * len(ndevs), 4.6), squeeze=False)
        for ax, nd in zip(axes[0], ndevs):
            rs = [r for r in rows if r["ndev"] == nd]
            labels = [r["program"] + ("\n(forced split)" if r["how"].startswith("split_all")
                                      else "\n(disjoint vs convex)") for r in rs]
            ec.bar_groups(ax, labels, {
                "kernel time": [r.get("perf_compute") for r in rs],
                "whole run (wall)": [r.get("perf_wall") for r in rs]},
                ylabel="performance with split, relative to no split\n"
                       "t(no split) / t(split)",
                title=f"Figure 10(c): effect of access function split, {nd} devices",
                hline=1.0, annotate="{:.2f}")
        ec.save_fig(fig, path, note=f"{note}; sizes: {args.sizes}; median of {args.repeat} "
                                    "runs; < 1: the split costs time")

    ec.finish(EXP, args, outdir, rows, text, plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())

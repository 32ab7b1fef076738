"""Figure 3(h) of Ramashekar & Bondhugula (TACO 2013): coherence volume per serial iteration.

Three volumes per iteration of the outermost serial loop, in bytes moved out of the
devices to keep them coherent:

* ``block``: bbmm with ``coherence="block"`` (Kim et al. 2011): every written box is
  sent whole after each tile (bbmm's ``flowout`` bytes in that mode);
* ``exact``: bbmm with ``coherence="exact"`` (the paper): the flow-out sets only
  (``flowout`` bytes). bbmm also tracks validity: when a tile finds part of its box
  stale because no flow-out sent it, the runtime stores it from its holder first
  (``x_d2h_refresh_bytes``); ``exact_total`` = flow-out + those pulls, the volume that
  really left the devices for coherence;
* ``minimum``: counted exactly, at small sizes, by enumerating every statement
  instance: the elements written by one device and read later by another device
  (``expcommon.Instances.min_coherence``). Semantics are those of bbmm's parallel
  phases: a read sees the last write of an earlier phase (one nest at one host
  iteration) unless the reading device wrote the element earlier in the same phase;
  each (writer's iteration, element) counts once, as flow-out bytes count one
  device-to-host transfer per element however many devices read it. Instances go to
  devices by bbmm's static block distribution of tiles (same tile size as the run).

Per-iteration values are the mean over the serial iterations (the JSON has every
iteration); the paper's Figure 3(h) shows floyd (N = 8) with an 8x gap between block
coherence and the exact volume.

CPU (tiny sizes, exact counting; a few seconds per program)::

    python scripts/exp_coherence.py                     # floyd heat2d lu fdtd2d heat3d adi

GPU: the same (volumes do not depend on the device); larger sizes only cost the
enumeration time, e.g. ``--param floyd:n=256``.

Writes ``<out>/coherence.csv``, ``.json``, ``.png`` (log scale, bytes per iteration).
"""
from __future__ import annotations

import os
import sys
from typing import Any, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import expcommon as ec  # noqa: E402

EXP = "coherence"
DEFAULT = ("floyd", "heat2d", "lu", "fdtd2d", "heat3d", "adi")


def draw(rows: Sequence[dict[str, Any]], path: Any, note: str) -> None:
    """Figure 3(h) from the rows (also from coherence.json: plot_results.py), one panel
    per device count."""
    names = list(dict.fromkeys(r["program"] for r in rows))
    ndevs = list(dict.fromkeys(r["ndev"] for r in rows))
    plt = ec.plt()
    fig, axes = plt.subplots(1, len(ndevs), figsize=(max(7, 1.2 * len(names) + 3)
                                                     * len(ndevs), 4.6), squeeze=False)
    for ax, nd in zip(axes[0], ndevs):
        rs = [r for r in rows if r["ndev"] == nd]
        ec.bar_groups(ax, [r["program"] for r in rs], {
            "block coherence": [r.get("block_total_per_iter") for r in rs],
            "BBMM exact flow-out (+ pulls)": [r.get("exact_total_per_iter") for r in rs],
            "theoretical minimum": [r.get("minimum_per_iter") for r in rs]},
            ylabel="bytes out of the devices per serial iteration",
            title=f"Figure 3(h): coherence volume, {nd} devices", log=True,
            annotate=ec.short, colors=["#c44e52", "#4c72b0", "#55a868"])
    ec.save_fig(fig, path, note=f"{note}; mean over serial iterations")


def main(argv: Sequence[str] | None = None) -> int:
    p = ec.make_parser(EXP, __doc__, programs=DEFAULT, devices="2", sizes="tiny", repeat=1)
    p.set_defaults(warmup=0)
    args = p.parse_args(argv)
    names = ec.program_list(args, DEFAULT)
    ndevs = ec.device_counts(args)
    outdir = ec.out_dir(args)
    rows: list[dict[str, Any]] = []
    series: dict[str, Any] = {}
    sweep = ec.Sweep(args, EXP, names, ndevs)
    for nd, devs, name in sweep:
        bench = ec.load_bench(name, ec.program_params(args, name))
        tile = args.tile or bench.module.default_tile(bench.params, nd)
        row: dict[str, Any] = {"program": name, "ndev": nd, "params": bench.param_text,
                               "tile": tile, "array_bytes": bench.array_bytes}
        per_iter: dict[str, list[int]] = {}
        for coh in ("exact", "block"):
            m = ec.measure(bench, devs, tile=tile, coherence=coh, repeat=args.repeat,
                           warmup=args.warmup, check=args.check)
            if m.error:
                row[f"{coh}_error"] = m.error
                continue
            f = m.fig
            pull = f.get("x_d2h_refresh_bytes", 0)
            row[f"{coh}_flowout_bytes"] = f["flowout_bytes"]
            row[f"{coh}_pull_bytes"] = pull
            row[f"{coh}_total_bytes"] = f["flowout_bytes"] + pull
            row[f"{coh}_flowin_bytes"] = f["flowin_bytes"]
            row[f"{coh}_wall_s"] = f["wall_s"]
            row[f"{coh}_check"] = f.get("check")
            row["serial_iters"] = f["serial_iters"]
            per_iter[coh] = [b.get("flowout", 0) + b.get("d2h_refresh", 0)
                             for b in m.iter_bytes]
        inst = ec.Instances(bench.prog, bench.params, nd, tile)
        mins = inst.min_coherence()
        per_iter["minimum"] = [v for s, v in sorted(mins.items())]
        row["minimum_bytes"] = sum(mins.values())
        it = max(1, row.get("serial_iters", len(mins)))
        for k in ("block_total", "exact_total", "exact_flowout", "block_flowout"):
            if f"{k}_bytes" in row:
                row[f"{k}_per_iter"] = row[f"{k}_bytes"] / it
        row["minimum_per_iter"] = row["minimum_bytes"] / it
        if row.get("exact_total_bytes") is not None and row["minimum_bytes"]:
            row["exact_over_min"] = row["exact_total_bytes"] / row["minimum_bytes"]
        if row.get("block_total_bytes") is not None and row.get("exact_total_bytes"):
            row["block_over_exact"] = row["block_total_bytes"] / row["exact_total_bytes"]
        rows.append(row)
        series[f"{name}/{nd}"] = per_iter
    note = sweep.note

    cols = [("program", "program", ""), ("ndev", "dev", ""), ("params", "size", ""),
            ("block_total_per_iter", "block B/iter", ".0f"),
            ("exact_flowout_per_iter", "exact flow-out B/iter", ".0f"),
            ("exact_total_per_iter", "exact+pulls B/iter", ".0f"),
            ("minimum_per_iter", "minimum B/iter", ".0f"),
            ("block_over_exact", "block/exact", ".2f"), ("exact_over_min", "exact/min", ".2f")]
    text = (f"Figure 3(h): coherence volume per serial iteration ({note})\n"
            + ec.table(rows, cols))

    def plot(path: Any) -> None:
        draw(rows, path, note=f"{note}; sizes: {args.sizes}")

    ec.finish(EXP, args, outdir, rows, text, plot, per_iteration=series)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Figure 10(d) of Ramashekar & Bondhugula (TACO 2013): benefit of inter-tile data reuse.

Every program runs with reuse on (a tile whose box is already resident, possibly inside
a bigger box, uses it: bb_present, Section 7.1) and off (``reuse=False``: every tile
allocates and reads in its boxes afresh, and flow-ins go to every stale copy); the
figure is the speedup ``time(reuse off) / time(reuse on)`` of the whole run (the paper:
a mean of 5.4x, large for heat2d, heat3d, lu, fdtd2d, about 1 for blackscholes, adi,
floyd). The CSV also has the read-in, flow-in and device-to-device bytes and the number
of boxes allocated in both modes, which explain the times. Medians of ``--repeat``
runs after a warm-up.

CPU (small sizes, 2 logical devices)::

    python scripts/exp_reuse.py

GPUs::

    python scripts/exp_reuse.py --sizes paper --devices 2

Writes ``<out>/reuse.csv``, ``.json``, ``.png``.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import expcommon as ec  # noqa: E402

EXP = "reuse"


def main(argv: Sequence[str] | None = None) -> int:
    p = ec.make_parser(EXP, __doc__, programs=ec.TABLE4, devices="2", sizes="small", repeat=3)
    args = p.parse_args(argv)
    names = ec.program_list(args, ec.TABLE4)
    ndevs = ec.device_counts(args)
    outdir = ec.out_dir(args)
    rows: list[dict[str, Any]] = []
    sweep = ec.Sweep(args, EXP, names, ndevs)
    for nd, devs, name in sweep:
        b = ec.load_bench(name, ec.program_params(args, name))
        kw = dict(tile=args.tile, repeat=args.repeat, warmup=args.warmup,
                  check=args.check)
        on = ec.measure(b, devs, reuse=True, **kw).fig
        off = ec.measure(b, devs, reuse=False, **kw).fig
        row: dict[str, Any] = {"program": name, "ndev": nd, "params": b.param_text,
                               "error": on.get("error") or off.get("error")}
        for tag, f in (("on", on), ("off", off)):
            for k in ("wall_s", "t_memory_mgmt_s", "t_compute_s", "t_flowin_s",
                      "readin_bytes", "flowin_bytes", "flowout_bytes", "refresh_bytes",
                      "h2d_bytes", "d2h_bytes", "d2d_bytes", "boxes_allocated",
                      "boxes_present", "check"):
                row[f"{tag}_{k}"] = f.get(k)
        if on.get("wall_s") and off.get("wall_s"):
            row["speedup"] = off["wall_s"] / on["wall_s"]
        rows.append(row)
    note = sweep.note
    gm = {nd: ec.geomean(r.get("speedup") for r in rows if r["ndev"] == nd) for nd in ndevs}
    cols = [("program", "program", ""), ("ndev", "dev", ""), ("params", "size", ""),
            ("on_wall_s", "reuse on s", ".4f"), ("off_wall_s", "reuse off s", ".4f"),
            ("speedup", "speedup", ".2f"), ("on_boxes_present", "present", ""),
            ("on_h2d_bytes", "h2d on", "bytes"), ("off_h2d_bytes", "h2d off", "bytes")]
    text = (f"Figure 10(d): inter-tile reuse, speedup = t(off) / t(on) ({note})\n"
            + ec.table(rows, cols) + "\ngeometric mean speedup: "
            + ", ".join(f"{nd} devices: {v:.2f}" if v else f"{nd} devices: -"
                        for nd, v in gm.items()))

    def plot(path: Any) -> None:
        plt = ec.plt()
        fig, ax = plt.subplots(figsize=(max(7, 1.1 * len(names) + 3), 4.6))
        ec.bar_groups(ax, names, {
            f"{nd} devices": [next((r.get("speedup") for r in rows
                                    if r["program"] == n and r["ndev"] == nd), None)
                              for n in names] for nd in ndevs},
            ylabel="speedup with reuse\nt(reuse off) / t(reuse on)",
            title="Figure 10(d): benefit of inter-tile data reuse", hline=1.0,
            annotate="{:.2f}")
        ec.save_fig(fig, path, note=f"{note}; sizes: {args.sizes}; median of {args.repeat} runs")

    ec.finish(EXP, args, outdir, rows, text, plot, geomean=gm)
    return 0


if __name__ == "__main__":
    sys.exit(main())

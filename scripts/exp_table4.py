"""Table IV of Ramashekar & Bondhugula (TACO 2013): the programs and BBMM's runtime overhead.

Per program (one bbmm run configuration: disjoint boxes, reuse on, exact coherence,
one tile per device): columns of Table IV measured on this machine, next to the paper's:

* A: number of arrays, B: largest array dimensionality (from the compiled scop);
* D: maximum number of bounding boxes of any one array: ``D_resident`` is the most
  copies of one array resident on one device at any time (``DeviceStats.
  max_boxes_per_array``), ``D_tile`` the most disjoint boxes one tile held for one
  array (Algorithm 2's output, from the tiles' ``TileBuffers``);
* E: subsumed bounding boxes present? (``boxes_present > 0``: some tile found its box
  inside one already resident);
* F: runtime overhead, memory_mgmt time / total time of the runtime's timers
  (Section 11.2.1), median of ``--repeat`` runs after a warm-up; bbmm counts the
  blocking read-in copies done while allocating inside memory_mgmt, so
  ``F_nocopy`` gives the same without them (box algebra, pool, bookkeeping);
* the dependence pattern and source come from a small table (the paper's).

Run on this CPU (PoCL; 2 logical devices sharing it, the ``small`` sizes)::

    python scripts/exp_table4.py                       # -> results/pocl-cpu-<date>/table4.*

On GPUs (paper sizes, Table IV "data size on 1 GPU"; one logical device per GPU)::

    python scripts/exp_table4.py --sizes paper --devices 2 --repeat 3

Writes ``<out>/table4.csv``, ``.json`` and ``.png`` (F measured vs paper, log scale;
D measured vs paper) and prints the table.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import expcommon as ec  # noqa: E402

EXP = "table4"


def draw(rows: Sequence[dict[str, Any]], path: Any, note: str) -> None:
    """Table IV's F and D as bars from the rows of the first device count (also from
    table4.json: plot_results.py)."""
    nd = rows[0]["ndev"]
    rs = [r for r in rows if r["ndev"] == nd]
    groups = [r["program"] for r in rs]
    plt = ec.plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 4.6))
    ec.bar_groups(a1, groups, {
        f"F measured ({nd} dev)": [r.get("F_percent") for r in rs],
        "F without read-in copies": [r.get("F_nocopy_percent") for r in rs],
        "F paper (Tesla C2050/K20)": [r.get("F_paper_percent") for r in rs]},
        ylabel="memory management time (% of total)", log=True,
        title="Table IV, F: runtime overhead", annotate="{:.2g}")
    ec.bar_groups(a2, groups, {
        "D resident (max copies of an array)": [r.get("D_resident") for r in rs],
        "D per tile (disjoint boxes)": [r.get("D_tile") for r in rs],
        "D paper": [r.get("D_paper") for r in rs]},
        ylabel="bounding boxes per array", title="Table IV, D: boxes per array",
        annotate="{:.0f}")
    ec.save_fig(fig, path, note=note)


def main(argv: Sequence[str] | None = None) -> int:
    p = ec.make_parser(EXP, __doc__, programs=ec.TABLE4, devices="2", sizes="small", repeat=3)
    args = p.parse_args(argv)
    names = ec.program_list(args, ec.TABLE4)
    ndevs = ec.device_counts(args)
    outdir = ec.out_dir(args)
    rows: list[dict[str, Any]] = []
    sweep = ec.Sweep(args, EXP, names, ndevs)
    for nd, devs, name in sweep:
        info = ec.PROGRAMS[name]
        bench = ec.load_bench(name, ec.program_params(args, name))
        scop = bench.prog.scop
        m = ec.measure(bench, devs, tile=args.tile, repeat=args.repeat,
                       warmup=args.warmup, check=args.check)
        f = m.fig
        pap = info.paper
        row = {"program": name, "source": info.source, "pattern": info.pattern,
               "ndev": nd, "params": bench.param_text,
               "A": len(scop.arrays), "A_paper": pap.get("A"),
               "B": max(a.ndim for a in scop.arrays), "B_paper": pap.get("B"),
               "array_bytes": bench.array_bytes,
               "size_gb_paper": pap.get("size_gb"),
               "D_resident": f.get("max_boxes_per_array"),
               "D_tile": f.get("max_pieces_per_tile"), "D_paper": pap.get("D"),
               "E": None if "error" in f else ("yes" if f["boxes_present"] > 0 else "no"),
               "E_paper": pap.get("E"),
               "F_percent": f.get("overhead_percent"),
               "F_nocopy_percent": f.get("overhead_nocopy_percent"),
               "F_paper_percent": pap.get("F"),
               "boxes_present": f.get("boxes_present"),
               "wall_s": f.get("wall_s"), "t_memory_mgmt_s": f.get("t_memory_mgmt_s"),
               "t_mm_transfer_s": f.get("t_mm_transfer_s"),
               "t_compute_s": f.get("t_compute_s"), "t_flowout_s": f.get("t_flowout_s"),
               "t_flowin_s": f.get("t_flowin_s"), "t_writeout_s": f.get("t_writeout_s"),
               "t_total_s": f.get("t_total_s"), "tiles": f.get("tiles"),
               "check": f.get("check"), "error": f.get("error")}
        rows.append(row)
    note = sweep.note

    cols = [("program", "program", ""), ("pattern", "pattern", ""), ("ndev", "dev", ""),
            ("params", "size", ""), ("A", "A", ""), ("A_paper", "A*", ""),
            ("B", "B", ""), ("B_paper", "B*", ""),
            ("D_resident", "D res", ""), ("D_tile", "D tile", ""), ("D_paper", "D*", ""),
            ("E", "E", ""), ("E_paper", "E*", ""),
            ("F_percent", "F %", ".2f"), ("F_nocopy_percent", "F-copy %", ".2f"),
            ("F_paper_percent", "F* %", ".2f"), ("wall_s", "wall s", ".3f")]
    text = (f"Table IV ({note}; * = the paper's value)\n" + ec.table(rows, cols))

    def plot(path: Any) -> None:
        draw(rows, path, note=f"{note}; sizes: {args.sizes}; median of {args.repeat} runs")

    ec.finish(EXP, args, outdir, rows, text, plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Figure 10(b) of Ramashekar & Bondhugula (TACO 2013): data allocation sizes.

Per-device peak allocation, as a percentage of the total size of all the program's
arrays, for BBMM's disjoint bounding boxes, for one convex bounding box per tile and
array (``mode="convex"``, Kim et al. 2011), and for the exact footprint. The paper
finds disjoint = exact for every program, and convex up to 4x larger for floyd and lu
(4 GPUs), about equal for the stencils.

Definitions (all per device, peak over the iterations of the outermost serial loop;
programs without one count as a single iteration; the figure shows the device with
the largest value):

* ``exact``: the bytes of the distinct array elements that the statement instances
  run on that device read or write in that serial iteration (every instance and access
  enumerated at these sizes, ``expcommon.Instances``; device of an instance = bbmm's
  static block distribution of tiles, ``bbmm.hostlib.device_of`` with the tile size of
  the run). This is what a device needs resident during the iteration.
* ``<mode>_held``: the bytes of the distinct resident boxes (copies) that the device's
  tiles used in that iteration, taken from the runtime (``TileBuffers``): what bbmm
  really held for the iteration; two overlapping copies of the same elements count
  twice, as in device memory.
* ``<mode>_union``: the bytes of the union of those boxes (each element once): the
  allocation if overlapping copies were merged; ``convex_union >= disjoint_union >=
  exact`` always holds.
* ``<mode>_resident``: the runtime's own peak of resident box bytes over the whole run
  (``DeviceStats.peak_bytes``), which also counts boxes kept from earlier iterations
  that no tile uses any more (freed only under memory pressure or by cleanup flags)
  and the moment a grown box and the copies it replaces coexist;
  ``<mode>_settled``: the same at the end of each phase (``settled_peak_bytes``, where
  the runtime has it).

Exact counting enumerates every access, so keep the sizes small (the default
``tiny`` sizes: a few seconds per program). CPU::

    python scripts/exp_allocation.py                    # --devices 2,4 --sizes tiny

GPU (same numbers: allocation sizes do not depend on the device)::

    python scripts/exp_allocation.py --devices 2,3,4

Writes ``<out>/allocation.csv``, ``.json``, ``.png``.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import expcommon as ec  # noqa: E402

EXP = "allocation"


def per_device_peak(live: dict[tuple[int, Any], int], ndev: int) -> list[int]:
    return [max([v for (d, _), v in live.items() if d == dev] or [0]) for dev in range(ndev)]


def draw(rows: Sequence[dict[str, Any]], path: Any, note: str) -> None:
    """Figure 10(b) from the rows (also from allocation.json: plot_results.py), one panel
    per device count."""
    names = list(dict.fromkeys(r["program"] for r in rows))
    ndevs = list(dict.fromkeys(r["ndev"] for r in rows))
    plt = ec.plt()
    fig, axes = plt.subplots(len(ndevs), 1, figsize=(max(8, 1.3 * len(names) + 3),
                                                     4.2 * len(ndevs)), squeeze=False)
    for ax, nd in zip(axes[:, 0], ndevs):
        rs = [r for r in rows if r["ndev"] == nd]
        ec.bar_groups(ax, [r["program"] for r in rs], {
            "exact footprint": [r.get("exact_pct") for r in rs],
            "BBMM disjoint: union of boxes": [r.get("disjoint_union_pct") for r in rs],
            "BBMM disjoint: boxes held": [r.get("disjoint_held_pct") for r in rs],
            "convex boxes held": [r.get("convex_held_pct") for r in rs]},
            ylabel="peak per-device allocation\n(% of total array size)",
            title=f"Figure 10(b): allocation sizes, {nd} devices (largest device)",
            annotate="{:.0f}", hline=100.0 / nd,
            colors=["#4c72b0", "#55a868", "#8fd19e", "#c44e52"])
    ec.save_fig(fig, path, note=f"{note}; dashed: 100%/devices; "
                                "peak over serial iterations; see the CSV for resident peaks")


def main(argv: Sequence[str] | None = None) -> int:
    p = ec.make_parser(EXP, __doc__, programs=ec.TABLE4, devices="2,4", sizes="tiny",
                       repeat=1)
    p.set_defaults(warmup=0)
    args = p.parse_args(argv)
    names = ec.program_list(args, ec.TABLE4)
    ndevs = ec.device_counts(args)
    outdir = ec.out_dir(args)
    rows: list[dict[str, Any]] = []
    sweep = ec.Sweep(args, EXP, names, ndevs)
    for nd, devs, name in sweep:
        bench = ec.load_bench(name, ec.program_params(args, name))
        tile = args.tile or bench.module.default_tile(bench.params, nd)
        total = bench.array_bytes
        items = {a.name: {"double": 8}.get(a.ctype, 4) for a in bench.prog.scop.arrays}
        row: dict[str, Any] = {"program": name, "ndev": nd, "params": bench.param_text,
                               "tile": tile, "array_bytes": total}
        per_dev: dict[str, list[int]] = {}
        for mode in ("disjoint", "convex"):
            m = ec.measure(bench, devs, tile=tile, mode=mode, repeat=args.repeat,
                           warmup=args.warmup, record_boxes=True, check=args.check)
            if m.error:
                row[f"{mode}_error"] = m.error
                continue
            held = per_device_peak(ec.live_bytes(m.rt), nd)
            union = per_device_peak(ec.live_bytes(m.rt, items, union=True), nd)
            resident = [d.peak_bytes for d in m.rt.stats.devices]
            per_dev[f"{mode}_held"] = held
            per_dev[f"{mode}_union"] = union
            per_dev[f"{mode}_resident"] = resident
            if all(hasattr(d, "settled_peak_bytes") for d in m.rt.stats.devices):
                per_dev[f"{mode}_settled"] = [d.settled_peak_bytes
                                              for d in m.rt.stats.devices]
            row[f"{mode}_check"] = m.fig.get("check")
        inst = ec.Instances(bench.prog, bench.params, nd, tile)
        per_dev["exact"] = inst.peak_footprint()
        for k, v in per_dev.items():
            row[f"{k}_pct"] = 100.0 * max(v) / total
            row[f"{k}_mean_pct"] = 100.0 * sum(v) / len(v) / total
            row[f"{k}_bytes"] = v
        row["disjoint_over_exact"] = (row.get("disjoint_held_pct", 0) / row["exact_pct"]
                                      if row.get("exact_pct") else None)
        row["convex_over_disjoint"] = (row.get("convex_held_pct", 0)
                                       / row["disjoint_held_pct"]
                                       if row.get("disjoint_held_pct") else None)
        row["instances"] = inst.n_instances
        rows.append(row)
    note = sweep.note

    cols = [("program", "program", ""), ("ndev", "dev", ""), ("params", "size", ""),
            ("exact_pct", "exact %", ".1f"), ("disjoint_union_pct", "disj union %", ".1f"),
            ("disjoint_held_pct", "disj held %", ".1f"),
            ("disjoint_resident_pct", "disj resident %", ".1f"),
            ("disjoint_settled_pct", "disj settled %", ".1f"),
            ("convex_union_pct", "cvx union %", ".1f"), ("convex_held_pct", "cvx held %", ".1f"),
            ("convex_resident_pct", "cvx resident %", ".1f"),
            ("disjoint_over_exact", "held/exact", ".2f")]
    text = (f"Figure 10(b): per-device peak allocation, % of all arrays ({note}; max over "
            "devices)\n" + ec.table(rows, cols))

    def plot(path: Any) -> None:
        draw(rows, path, note=f"{note}; sizes: {args.sizes}")

    ec.finish(EXP, args, outdir, rows, text, plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())

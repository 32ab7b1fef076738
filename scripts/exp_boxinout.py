"""Figures 10(e) and 10(h) of Ramashekar & Bondhugula (TACO 2013): box-in / box-out.

With a fixed memory cap per device (``--device-mem``), the data size grows from below
the cap to ``--factors`` times the total cap (devices x cap; default up to 5x, as the
paper's 12.8 GB mvt run on 2.5 GB GPUs). Beyond the cap the runtime boxes out
unused boxes (LRU, writing back what only they hold) and boxes them in again when a
later tile needs them (Section 7.3). The figure is the throughput (problem work per
second) against size / cap, relative to the smallest size, and the number of
evictions. The paper: matmul and blackscholes (high compute-to-copy ratio) keep their
throughput beyond the GPU memory (10(e)); mvt scales ideally up to 5x (10(h)); floyd
slows down (every serial iteration streams the matrix through the device).

Sizes for a target total size S bytes (``expcommon`` arrays are float32):

* matmul: nj = nk = sqrt(cap / 32) (B, which every tile reads whole, takes cap / 8),
  ni = (S/4 - nk*nj) / (nj + nk): the rows of C and A grow; work 2 ni nj nk flop;
* blackscholes: n = S / 20 (five arrays); work n options;
* mvt: m = 2n (A is m x n), n = sqrt(S / 8); work 4 m n flop;
* floyd: n = sqrt(S / 4); work n^3 relaxations.

The tile size is chosen so that one tile's boxes take about a quarter of the cap
(rows of C/A, options, columns of A, rows of path respectively), since bbmm tiles only
the outermost parallel loop and a tile must fit in one device. Timing: ``--warmup``
runs per size (kernels are built per tile configuration), then the median of
``--repeat`` runs (floyd at 5x the cap streams the matrix through the device in every
one of its ~1100 serial iterations: about 20 s a run on a 2-core CPU).

CPU (1 logical device, 1 MiB cap; a few minutes)::

    python scripts/exp_boxinout.py

GPU (the paper's 2.5 GiB per GPU; long: floyd streams the matrix every iteration)::

    python scripts/exp_boxinout.py --device-mem 2.5GiB --devices 1 --factors 0.5,1,2,5

Writes ``<out>/boxinout.csv``, ``.json``, ``.png``.
"""
from __future__ import annotations

import math
import os
import sys
from typing import Any, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import expcommon as ec  # noqa: E402
from bbmm.diagnostic import format_bytes  # noqa: E402

EXP = "boxinout"
DEFAULT = ("matmul", "blackscholes", "mvt", "floyd")
UNITS = {"matmul": "flop", "blackscholes": "options", "mvt": "flop", "floyd": "relaxations"}


def sizing(name: str, target: int, cap: int) -> tuple[dict[str, int], int, float]:
    """``(params, tile, work)`` for a total data size of about ``target`` bytes."""
    if name == "matmul":
        s = max(8, int(math.sqrt(cap / 32)))
        ni = max(1, round((target / 4 - s * s) / (2 * s)))
        return {"ni": ni, "nj": s, "nk": s}, max(1, cap // (32 * s)), 2.0 * ni * s * s
    if name == "blackscholes":
        n = max(1, target // 20)
        return {"n": n}, max(1, cap // (4 * 20)), float(n)
    if name == "mvt":
        n = max(2, int(math.sqrt(target / 8)))
        m = 2 * n
        return {"m": m, "n": n}, max(1, cap // (16 * m)), 4.0 * m * n
    if name == "floyd":
        n = max(2, int(math.sqrt(target / 4)))
        return {"n": n}, max(1, cap // (16 * n)), float(n) ** 3
    raise SystemExit(f"exp_boxinout: no sizing rule for {name} (known: {', '.join(DEFAULT)})")


def main(argv: Sequence[str] | None = None) -> int:
    p = ec.make_parser(EXP, __doc__, programs=DEFAULT, devices="1", sizes="small", repeat=3)
    p.add_argument("--factors", default="0.5,1,2,3,5", metavar="F1,F2",
                   help="total data size as multiples of the total cap (default: %(default)s)")
    for a in p._actions:
        if a.dest == "device_mem":
            a.help = "memory cap per logical device (default: 1MiB on a CPU, 2.5GiB on GPUs)"
        elif a.dest in ("sizes", "param"):
            a.help = "not used: the sizes follow from --device-mem and --factors"
    args = p.parse_args(argv)
    names = ec.program_list(args, DEFAULT)
    ndevs = ec.device_counts(args)
    factors = [float(x) for x in args.factors.split(",") if x.strip()]
    if args.device_mem is None:
        from bbmm.devices.opencl import discover
        chosen = discover(args.platform).chosen
        args.device_mem = "2.5GiB" if chosen and chosen[0].type == "GPU" else "1MiB"
    cap = ec.device_mem(args)
    assert cap is not None
    outdir = ec.out_dir(args)
    rows: list[dict[str, Any]] = []
    bar = ec.Progress(len(names) * len(ndevs) * len(factors), EXP,
                      False if args.no_progress else None)
    note = ""
    with ec.DeviceSet(cap, args.platform) as ds:
        for nd in ndevs:
            devs = ds.get(nd)
            note = ec.device_note(devs)
            for name in names:
                for fac in factors:
                    bar.show(f"{name} x{fac:g}")
                    params, tile, work = sizing(name, int(fac * cap * nd), cap)
                    if args.tile:
                        tile = args.tile
                    b = ec.load_bench(name, params)
                    m = ec.measure(b, devs, tile=tile, repeat=args.repeat,
                                   warmup=args.warmup, check=args.check)
                    f = m.fig
                    row = {"program": name, "ndev": nd, "cap_bytes": cap, "factor": fac,
                           "params": b.param_text, "tile": tile,
                           "array_bytes": b.array_bytes,
                           "size_over_cap": b.array_bytes / (cap * nd),
                           "work": work, "unit": UNITS[name],
                           "wall_s": f.get("wall_s"),
                           "throughput": work / f["wall_s"] if f.get("wall_s") else None,
                           "evictions": f.get("evictions"),
                           "h2d_bytes": f.get("h2d_bytes"), "d2h_bytes": f.get("d2h_bytes"),
                           "writeback_bytes": f.get("writeback_bytes"),
                           "readin_bytes": f.get("readin_bytes"),
                           "peak_bytes_max": f.get("peak_bytes_max"),
                           "tiles": f.get("tiles"), "t_compute_s": f.get("t_compute_s"),
                           "t_memory_mgmt_s": f.get("t_memory_mgmt_s"),
                           "overhead_percent": f.get("overhead_percent"),
                           "pageable": ",".join(f.get("pageable_host_arrays") or []) or "-",
                           "check": f.get("check"), "error": f.get("error")}
                    rows.append(row)
                    bar.step(what=f"{name} x{fac:g}")
    bar.close()
    for name in names:
        for nd in ndevs:
            rs = [r for r in rows if r["program"] == name and r["ndev"] == nd and r["throughput"]]
            if rs:
                ref = min(rs, key=lambda r: r["size_over_cap"])["throughput"]
                for r in rs:
                    r["rel_throughput"] = r["throughput"] / ref
                    r["h2d_over_data"] = r["h2d_bytes"] / r["array_bytes"]

    cols = [("program", "program", ""), ("ndev", "dev", ""), ("params", "size", ""),
            ("tile", "tile", ""), ("size_over_cap", "size/cap", ".2f"),
            ("wall_s", "wall s", ".3f"), ("throughput", "work/s", ".3g"), ("unit", "unit", ""),
            ("rel_throughput", "rel", ".2f"), ("evictions", "evictions", ""),
            ("h2d_over_data", "h2d/data", ".2f"), ("pageable", "pageable", ""),
            ("error", "error", "")]
    text = (f"Figures 10(e)/(h): box-in/box-out, cap {format_bytes(cap)} per device ({note})\n"
            + ec.table(rows, cols))

    def plot(path: Any) -> None:
        plt = ec.plt()
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 4.6))
        for name in names:
            for nd in ndevs:
                rs = sorted((r for r in rows if r["program"] == name and r["ndev"] == nd
                             and r.get("rel_throughput")), key=lambda r: r["size_over_cap"])
                if not rs:
                    continue
                lab = name if len(ndevs) == 1 else f"{name} ({nd} dev)"
                xs = [r["size_over_cap"] for r in rs]
                a1.plot(xs, [r["rel_throughput"] for r in rs], marker="o", label=lab)
                a2.plot(xs, [max(r["evictions"], 0.5) for r in rs], marker="s", label=lab)
        for ax in (a1, a2):
            ax.axvline(1.0, color="gray", linestyle="--", linewidth=1)
            ax.set_xlabel("total data size / total device memory cap")
            ax.grid(alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8)
        a1.axhline(1.0, color="gray", linestyle=":", linewidth=1)
        a1.set_ylabel("throughput relative to the smallest size")
        a1.set_ylim(bottom=0)
        a1.set_title("Figure 10(e)/(h): throughput beyond the device memory")
        a2.set_yscale("log")
        a2.set_ylabel("box-outs (evictions), 0 shown as 0.5")
        a2.set_title("evictions")
        ec.save_fig(fig, path, note=f"{note}; cap {format_bytes(cap)} per device; "
                                    f"median of {args.repeat} run(s)")

    ec.finish(EXP, args, outdir, rows, text, plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())

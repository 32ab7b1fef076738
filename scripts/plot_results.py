"""Plots from result files made on a machine without matplotlib (the GPU machines).

The experiment scripts plot their own results when matplotlib is there; on the GPU
machines it is not (only the wheels bbmm needs travel), so they run with ``--no-plot`` and
this script draws the figures here from the JSON they wrote::

    python scripts/plot_results.py results/h200x2-2026-11-22 results/h200x4-2026-11-22

For every ``compare*.json`` (``scripts/baselines/compare.py``), ``datascaling*.json``,
``boxinout.json``, ``reuse.json``, ``split.json``, ``weakscaling*.json``,
``allocation*.json``, ``table4*.json`` and ``coherence*.json`` in the given folders it
writes a PNG of the same name beside it and says which it wrote (the last three with the
figure functions of their own scripts, ``exp_allocation.draw`` ...). Without matplotlib
it says so once and draws nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import expcommon as ec  # noqa: E402


def _machine(path: Path, meta: dict[str, Any]) -> str:
    dev = meta.get("devices") or meta.get("device") or ""
    return f"{path.parent.name}" + (f" ({dev})" if isinstance(dev, str) and dev else "")


def _by_program(rows: Sequence[dict[str, Any]], key_dev: str, value: Callable[[dict], Any],
                unit: str = "device") -> tuple[list[str], dict[str, list[Any]]]:
    """Programs in first-seen order and one series per device (or ``unit``) count."""
    names = list(dict.fromkeys(r["program"] for r in rows))
    ndevs = sorted({r[key_dev] for r in rows})
    series = {}
    for nd in ndevs:
        vals = []
        for n in names:
            r = next((r for r in rows if r["program"] == n and r[key_dev] == nd), None)
            vals.append(None if r is None else value(r))
        series[f"{nd} {unit}{'s' if nd > 1 else ''}"] = vals
    return names, series


def plot_compare(path: Path, doc: dict[str, Any], out: Path) -> None:
    rows = doc["rows"]
    names, series = _by_program(rows, "devices", lambda r: r.get("ratio"))
    labels = [n + "\n" + ",".join(f"{k}={v}" for k, v in
                                  next(r["params"] for r in rows if r["program"] == n).items())
              for n in names]
    plt = ec.plt()
    fig, ax = plt.subplots(figsize=(max(7, 2.2 * len(names) + 2), 4.6))
    ec.bar_groups(ax, labels, series, ylabel="hand-written time / bbmm time per iteration",
                  title="Figure 10(f): bbmm relative to hand-written multi-GPU OpenCL",
                  hline=1.0, annotate="{:.2f}")
    ec.save_fig(fig, out, note=f"{_machine(path, doc.get('meta', {}))}; 1.0 = as fast as "
                               "the hand-written code; the paper: at least 0.88")


def plot_datascaling(path: Path, doc: dict[str, Any], out: Path) -> None:
    rows = [r for r in doc["rows"] if r["ndev"] > 1]
    names, series = _by_program(rows, "ndev", lambda r: r.get("speedup_per_iter"))
    labels = [n + ("" if next(r["per"] for r in rows if r["program"] == n) == "iteration"
                   else "\n(whole run)") for n in names]
    plt = ec.plt()
    fig, ax = plt.subplots(figsize=(max(7, 1.1 * len(names) + 3), 4.6))
    ec.bar_groups(ax, labels, series, ylabel="per-iteration speedup t(1 dev) / t(N dev)",
                  title="Figure 10(a): data scaling (data per device constant)",
                  hline=1.0, annotate="{:.2f}")
    ec.save_fig(fig, out, note=f"{_machine(path, doc.get('meta', {}))}; ideal 1.0")


def plot_boxinout(path: Path, doc: dict[str, Any], out: Path) -> None:
    rows = doc["rows"]
    plt = ec.plt()
    fig, ax = plt.subplots(figsize=(7, 4.6))
    for n in dict.fromkeys(r["program"] for r in rows):
        rs = sorted((r for r in rows if r["program"] == n and r.get("rel_throughput")),
                    key=lambda r: r["size_over_cap"])
        ax.plot([r["size_over_cap"] for r in rs], [r["rel_throughput"] for r in rs],
                marker="o", label=n)
    ax.axvline(1.0, color="gray", linestyle=":", linewidth=1)
    ax.axhline(0.9, color="gray", linestyle="--", linewidth=1)
    ax.set_xlabel("total data / per-device cap")
    ax.set_ylabel("throughput relative to the smallest size")
    ax.set_ylim(0, 1.3)
    ax.set_title("Figures 10(e)/(h): box-in/box-out beyond the device cap")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    cap = rows[0].get("cap_bytes")
    ec.save_fig(fig, out, note=f"{_machine(path, doc.get('meta', {}))}; cap "
                               f"{cap / 2**30:.2f} GiB per device" if cap else None)


def plot_pair(key: str, title: str, ylabel: str) -> Callable[[Path, dict, Path], None]:
    def plot(path: Path, doc: dict[str, Any], out: Path) -> None:
        rows = doc["rows"]
        names, series = _by_program(rows, "ndev", lambda r: r.get(key))
        plt = ec.plt()
        fig, ax = plt.subplots(figsize=(max(7, 1.1 * len(names) + 3), 4.6))
        ec.bar_groups(ax, names, series, ylabel=ylabel, title=title, hline=1.0,
                      annotate="{:.2f}")
        ec.save_fig(fig, out, note=_machine(path, doc.get("meta", {})))
    return plot


def plot_weakscaling(path: Path, doc: dict[str, Any], out: Path) -> None:
    rows = [r for r in doc["rows"] if r.get("ranks", 1) > 1 and r.get("efficiency")]
    names, series = _by_program(rows, "ranks", lambda r: r.get("efficiency"), unit="rank")
    plt = ec.plt()
    fig, ax = plt.subplots(figsize=(max(7, 1.1 * len(names) + 3), 4.6))
    ec.bar_groups(ax, names, series,
                  ylabel="weak-scaling efficiency t(1 rank) / t(R ranks)",
                  title="Weak scaling over MPI ranks (data per device constant)",
                  hline=1.0, annotate="{:.2f}")
    ec.save_fig(fig, out, note=f"{_machine(path, doc.get('meta', {}))}; ideal 1.0")


def plot_script(module: str) -> Callable[[Path, dict, Path], None]:
    """The figure of ``scripts/<module>.py`` (its ``draw(rows, path, note)``), with the
    sizes (and repeats) the run was made with in the note."""
    def plot(path: Path, doc: dict[str, Any], out: Path) -> None:
        import importlib
        draw = importlib.import_module(module).draw
        meta = doc.get("meta", {})
        opts = meta.get("options") or {}
        note = _machine(path, meta)
        if opts.get("sizes"):
            note += f"; sizes: {opts['sizes']}"
        if module == "exp_table4" and opts.get("repeat"):
            note += f"; median of {opts['repeat']} runs"
        draw(doc["rows"], out, note=note)
    return plot


PLOTS: dict[str, Callable[[Path, dict, Path], None]] = {
    "allocation": plot_script("exp_allocation"),
    "table4": plot_script("exp_table4"),
    "coherence": plot_script("exp_coherence"),
    "weakscaling": plot_weakscaling,
    "compare": plot_compare,
    "datascaling": plot_datascaling,
    "boxinout": plot_boxinout,
    "reuse": plot_pair("speedup", "Figure 10(d): inter-tile reuse", "t(reuse off) / t(reuse on)"),
    "split": plot_pair("perf_compute", "Figure 10(c): access function split (kernel time)",
                       "t(no split) / t(split)"),
}


def kind_of(path: Path) -> str | None:
    return next((k for k in PLOTS if path.stem.startswith(k)), None)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folders", nargs="+", type=Path, help="folders holding result JSON files")
    args = p.parse_args(argv)
    wrote = 0
    for folder in args.folders:
        if not folder.is_dir():
            p.error(f"{folder}: not a folder")
        for path in sorted(folder.glob("*.json")):
            kind = kind_of(path)
            if kind is None:
                continue
            doc = json.loads(path.read_text())
            if not isinstance(doc, dict) or not doc.get("rows"):
                continue
            out = path.with_suffix(".png")
            if not ec.try_plot(lambda o: PLOTS[kind](path, doc, o), out, "plot_results"):
                return 1
            print(f"wrote {out}")
            wrote += 1
    if not wrote:
        print("no result files to plot", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

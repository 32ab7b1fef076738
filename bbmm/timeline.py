"""``bbmm timeline FILE``: summarize a trace written by ``bbmm run --profile FILE``
(:mod:`bbmm.profile`).

Prints, from the saved events (so it works on any machine, with no OpenCL):

* one line per device: span, busy ms and GB/s per kind, idle ms and how much of it the
  device waited for the host to enqueue the next command (as ``bbmm run`` printed it);
* the ``--gaps N`` longest idle gaps per device, with the commands on either side;
* the busiest ``(kind, label)`` groups (``--labels N``): which kernel, which copy
  geometry (``rect WxH``: H rows of W bytes) takes the time, at what GB/s;
* a per-tile breakdown: the commands cut after each kernel (one kernel per tile, so a
  segment is one tile's copies and its kernel), averaged per kernel; ``--tiles N`` also
  lists the N longest segments;
* the host's steps per process (``--steps N``: the N longest in all), and the
  garbage collector's pauses (``collect gen G``) with the longest of them: a pause of
  one process over processes stalls the others, which wait in their exchanges;
* ``--plot out.png``: the timeline as bars per device and kind (needs matplotlib;
  without it the rest is printed and a note says the plot was skipped).

The trace itself opens in Perfetto (ui.perfetto.dev) or chrome://tracing, one track per
device queue and one for the host's steps. Timelines in the format before traces
(``bbmm-profile-1``) are read too.
"""
from __future__ import annotations

import argparse
import sys
from statistics import mean
from typing import Any, Mapping, Sequence

from . import profile as pf
from .diagnostic import BBMMError

__all__ = ["add_arguments", "run", "main", "summary_lines", "label_lines", "tile_lines",
           "host_lines", "plot"]


def _ms(us: float) -> str:
    return f"{us / 1e3:.3f}"


def summary_lines(doc: Mapping[str, Any], gaps: int) -> list[str]:
    """The per-device lines, each device's summary recomputed from its commands with the
    ``gaps`` longest gaps; then those gaps."""
    out = []
    meta = doc.get("meta") or {}
    if meta:
        params = " ".join(f"{k}={v}" for k, v in (meta.get("params") or {}).items())
        wall = meta.get("wall_s")
        out.append(f"{meta.get('kernel', '?')} {params} tile {meta.get('tile', '?')}" +
                   (f", run {wall:.3f} s" if isinstance(wall, (int, float)) else ""))
    entries = []
    for e in doc["devices"]:
        e = dict(e)
        if e.get("profiled", True):
            e["summary"] = pf.summarize(e["commands"], gaps)
        entries.append(e)
    out += pf.format_summary({"devices": entries}).splitlines()
    for e in entries:
        if e.get("profiled", True) and gaps > 0 and e["summary"]["gaps"]:
            out.append(f"longest idle gaps of {e['name']} (host: the part before the next "
                       f"command was enqueued):")
            out += pf.format_gaps(e, e["summary"]["gaps"]).splitlines()
    return out


def label_lines(entry: Mapping[str, Any], n: int) -> list[str]:
    """The ``n`` busiest (kind, label) groups of one device."""
    groups = pf.by_label(entry["commands"])[:n]
    if not groups:
        return []
    out = [f"busiest commands of {entry['name']}:",
           f"  {'kind':6} {'label':28} {'count':>7} {'busy ms':>10} {'MB':>10} {'GB/s':>7}"]
    for g in groups:
        rate = f"{g['gbps']:.1f}" if g["gbps"] is not None else "-"
        out.append(f"  {g['kind']:6} {g['label'][:28]:28} {g['count']:>7} "
                   f"{_ms(g['busy_us']):>10} {g['bytes'] / 1e6:>10.1f} {rate:>7}")
    return out


def tile_lines(entry: Mapping[str, Any], n: int) -> list[str]:
    """Per-tile breakdown of one device: segments ending in a kernel, averaged per kernel
    label; then the ``n`` longest segments."""
    segs = [s for s in pf.segments(entry["commands"]) if s["kernel"] is not None]
    if not segs:
        return []
    out = [f"per tile of {entry['name']} (commands up to and including each kernel; "
           f"means, ms):",
           f"  {'kernel':24} {'tiles':>6} {'span':>9} {'kernel':>9} {'h2d':>9} {'h2d MB':>8} "
           f"{'d2h':>9} {'d2d':>9} {'idle':>9}"]
    labels: dict[str, list[dict[str, Any]]] = {}
    for s in segs:
        labels.setdefault(s["kernel"], []).append(s)
    for label, group in labels.items():
        def m(f: Any) -> float:
            return mean(f(s) for s in group)
        out.append(f"  {label[:24]:24} {len(group):>6} "
                   f"{_ms(m(lambda s: s['end_us'] - s['start_us'])):>9} "
                   f"{_ms(m(lambda s: s['busy_us']['kernel'])):>9} "
                   f"{_ms(m(lambda s: s['busy_us']['h2d'])):>9} "
                   f"{m(lambda s: s['bytes']['h2d']) / 1e6:>8.1f} "
                   f"{_ms(m(lambda s: s['busy_us']['d2h'])):>9} "
                   f"{_ms(m(lambda s: s['busy_us']['d2d'])):>9} "
                   f"{_ms(m(lambda s: s['idle_us'])):>9}")
    if n > 0:
        out.append(f"  the {min(n, len(segs))} longest tiles:")
        for s in sorted(segs, key=lambda s: s["start_us"] - s["end_us"])[:n]:
            out.append(f"    at {_ms(s['start_us'])} ms: {s['kernel']}, span "
                       f"{_ms(s['end_us'] - s['start_us'])}, kernel "
                       f"{_ms(s['busy_us']['kernel'])}, h2d {_ms(s['busy_us']['h2d'])} "
                       f"({s['bytes']['h2d'] / 1e6:.1f} MB), d2h {_ms(s['busy_us']['d2h'])}, "
                       f"idle {_ms(s['idle_us'])}, {s['commands']} commands")
    return out


def host_lines(doc: Mapping[str, Any], n: int) -> list[str]:
    """Per process (rank) of the trace, its host steps' total ms and counts, the ``n``
    longest in all; then its collections (steps ``collect gen G``: the pauses of at
    least :data:`bbmm.run.COLLECT_LOG_S`), their total and the three longest, when
    they started."""
    by: dict[int, dict[str, list[tuple[float, float]]]] = {}
    for h in doc.get("host") or ():
        steps = by.setdefault(int(h.get("rank", 0)), {})
        steps.setdefault(h["name"], []).append((h["start_us"], h["end_us"] - h["start_us"]))
    out: list[str] = []
    for rank in sorted(by):
        steps = by[rank]
        who = "the host" if list(by) == [0] else f"rank {rank}"
        totals = sorted(((sum(d for _, d in v), k, len(v)) for k, v in steps.items()
                         if not k.startswith("collect")), reverse=True)[:n]
        if totals:
            out.append(f"host steps of {who} (ms, count): " +
                       ", ".join(f"{k} {_ms(t)} ({c})" for t, k, c in totals))
        pauses = [(d, a, k) for k, v in steps.items() if k.startswith("collect")
                  for a, d in v]
        if pauses:
            pauses.sort(reverse=True)
            total = _ms(sum(d for d, _, _ in pauses))
            out.append(f"  collections of {who}: {len(pauses)}, {total} ms; longest " +
                       ", ".join(f"{_ms(d)} ms ({k}) at {_ms(a)} ms" for d, a, k in pauses[:3]))
    return out


def pace_lines(doc: Mapping[str, Any]) -> list[str]:
    """Over processes: each one's time in its exchanges and sends (its waits for the
    other processes' rows, for its own copies out, and the bytes it moves), as ms and as
    a share of its run, and the one that spends the least there. Where the processes
    wait for each other every serial iteration, the others wait for that one: its own
    work sets the loop's pace (``docs/performance.md``, what sets the pace of Floyd's
    step over four processes)."""
    by: dict[int, list[float]] = {}
    for h in doc.get("host") or ():
        name = h["name"]
        if name in ("run", "exchange", "send"):
            t = by.setdefault(int(h.get("rank", 0)), [0.0, 0.0])
            t[name != "run"] += h["end_us"] - h["start_us"]
    if len(by) < 2 or not all(run for run, _ in by.values()):
        return []
    share = {r: wait / run for r, (run, wait) in by.items()}
    least = min(share, key=share.__getitem__)
    return ["exchanges and sends per process (ms, share of its run): " +
            ", ".join(f"rank {r} {_ms(by[r][1])} ({100 * share[r]:.0f}%)" for r in sorted(by)),
            f"  rank {least} spends the least in them: the others wait for it"]


COLORS = {"h2d": "tab:blue", "d2h": "tab:orange", "d2d": "tab:purple", "kernel": "tab:green",
          "fill": "tab:gray"}


def plot(doc: Mapping[str, Any], path: str) -> bool:
    """Bars per device and kind on one time axis (ms, each device from its own first
    command plus its offset); False when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    entries = [e for e in doc["devices"] if e.get("commands")]
    rows = [(e, k) for e in entries for k in pf.KINDS
            if any(c["kind"] == k for c in e["commands"])]
    fig, ax = plt.subplots(figsize=(12, 0.5 * len(rows) + 1.5))
    for y, (e, k) in enumerate(rows):
        off = e.get("offset_us", 0.0)
        bars = [((c["start_us"] + off) / 1e3, max(c["end_us"] - c["start_us"], 0.0) / 1e3)
                for c in e["commands"] if c["kind"] == k]
        ax.broken_barh(bars, (y - 0.4, 0.8), color=COLORS.get(k, "black"))
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{e['name']} {k}" for e, k in rows])
    ax.set_xlabel("ms")
    meta = doc.get("meta") or {}
    ax.set_title(f"{meta.get('kernel', '')} device timeline")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``bbmm timeline``."""
    p.add_argument("file", help="a trace written by bbmm run --profile FILE (.gz too)")
    p.add_argument("--gaps", type=int, default=10, metavar="N",
                   help="longest idle gaps listed per device (default 10)")
    p.add_argument("--labels", type=int, default=10, metavar="N",
                   help="busiest (kind, label) groups listed per device (default 10)")
    p.add_argument("--tiles", type=int, default=0, metavar="N",
                   help="also list the N longest tiles per device (default 0)")
    p.add_argument("--steps", type=int, default=8, metavar="N",
                   help="host steps listed per process, the longest in all first "
                        "(default 8; the collector's pauses are listed apart)")
    p.add_argument("--plot", metavar="PNG", default=None,
                   help="draw the timeline into PNG (needs matplotlib)")


def run(args: argparse.Namespace) -> int:
    """Print the summary of ``args.file``; a file that is no trace is a UsageError."""
    doc = pf.load(args.file)
    lines = summary_lines(doc, args.gaps)
    for e in doc["devices"]:
        if e.get("commands"):
            lines += label_lines(e, args.labels)
            lines += tile_lines(e, args.tiles)
    lines += host_lines(doc, args.steps)
    lines += pace_lines(doc)
    print("\n".join(lines))
    if args.plot:
        if plot(doc, args.plot):
            print(f"wrote {args.plot}")
        else:
            print("bbmm: note: no matplotlib here: plot skipped (pip install matplotlib, "
                  "or draw it where matplotlib is)", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``bbmm timeline`` on its own (``python -m bbmm.timeline``): exit 2 with one line
    when the file is no trace."""
    p = argparse.ArgumentParser(prog="bbmm timeline", description=__doc__.split("\n\n")[0])
    add_arguments(p)
    args = p.parse_args(argv)
    try:
        return run(args)
    except BBMMError as e:
        print(f"bbmm: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""Where in its serial loop a run spends its time: ms per serial iteration over each part
of the loop, per process, from the marks ``bbmm run --json`` keeps (``loop_marks_s``:
when the host ended every 256th outermost serial iteration), without a profile's cost.

LU over four processes is paced by the owner of row ``k``, another process in each
quarter of the loop, and the quarters differ; a whole loop's time per iteration hides
which one is slow.

Usage::

    python scripts/loop_marks.py lu4.json [more.json ...] [--parts 4]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bbmm.stats import loop_parts  # noqa: E402


def parts(runtime: dict[str, Any], count: int) -> list[float | None]:
    """Ms per serial iteration over each of ``count`` equal parts of the marked loop of
    one runtime's statistics (``bbmm run --json``'s, or a process's ``runtime`` in
    ``per_rank``); None for a part no mark bounds."""
    return loop_parts(runtime.get("loop_marks_s") or [], runtime.get("mark_every") or 1,
                      count)


def rows(doc: dict[str, Any], count: int) -> list[tuple[str, list[float | None]]]:
    """(who, ms per iteration per part) for a run's report: each process of a run over
    processes, else the run itself."""
    if doc.get("per_rank"):
        return [(f"rank {p.get('rank', i)}", parts(p.get("runtime", {}), count))
                for i, p in enumerate(doc["per_rank"])]
    return [("run", parts(doc, count))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", metavar="JSON", help="bbmm run --json reports")
    p.add_argument("--parts", type=int, default=4, help="parts of the loop (default 4)")
    args = p.parse_args(argv)
    if args.parts < 1:
        p.error("--parts: 1 or more")
    for path in args.files:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"loop_marks: {path}: {e}", file=sys.stderr)
            return 1
        print(f"{path}: {doc.get('kernel', '?')}, ms per serial iteration in each of "
              f"{args.parts} parts of the loop")
        for who, ms in rows(doc, args.parts):
            print(f"  {who:8} " + " ".join("       -" if v is None else f"{v:8.3f}"
                                          for v in ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())

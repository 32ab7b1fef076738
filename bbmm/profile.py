"""Device timelines from OpenCL profiling events (``bbmm run --profile FILE``).

Where does a device's time go: copies, kernels, fills, or idle gaps between commands?
With profiling on, every command an :class:`~bbmm.devices.opencl.OpenCLDevice` enqueues
is kept with its event (:class:`~bbmm.devices.opencl.CommandLog`); after the run,
:func:`collect` reads the events' timestamps and builds one document:

* per device, the command list ``[{kind, label, bytes, start_us, end_us, queued_us,
  submit_us}]`` sorted by start, times in microseconds from the device's first command
  start (``queued_us``/``submit_us``: when the host enqueued the command and when the
  driver submitted it, None where the driver does not say);
* per device, a summary (:func:`summarize`): the span (first start to last end), busy
  time, commands and bytes per kind, achieved GB/s per copy kind, idle time (the span
  minus the union of the command intervals), the part of it the device spent waiting
  for the host to enqueue the next command (``idle_host_us``, from the queued
  timestamps), and the longest idle gaps with the commands on either side.

Kinds: ``h2d``, ``d2h``, ``d2d`` (copies), ``kernel``, ``fill`` (an arena's first touch).
Labels: a kernel's function name, ``linear`` for a contiguous copy, ``rect WxH[xD]`` for
a rectangular copy of H rows (D slices) of W bytes, ``kernel copy`` for a strided copy
within one buffer. Each device's clock is its own: offsets between devices
(``offset_us``) are exact only for logical devices of one physical device.

This module imports no OpenCL: ``scripts/timeline.py`` summarizes saved files anywhere.
"""
from __future__ import annotations

import gzip
import json
import os
import sys
from typing import Any, Iterable, Mapping, Sequence

from .diagnostic import UsageError

__all__ = ["KINDS", "COPY_KINDS", "ENV", "FORMAT", "target", "check_target", "collect",
           "device_timeline", "summarize", "idle_gaps", "segments", "by_label",
           "format_summary", "format_gaps", "write", "load", "write_timeline"]

KINDS = ("h2d", "d2h", "d2d", "kernel", "fill")
COPY_KINDS = ("h2d", "d2h", "d2d")
ENV = "BBMM_PROFILE"
"""Environment variable: the default of ``--profile``."""
FORMAT = "bbmm-profile-1"
GAPS = 10
"""Longest idle gaps kept per device in the document's summary."""


# {{{ where to write

def check_target(path: str) -> str:
    """``path`` if a profile can be written there; else a one-line UsageError (checked
    before the run, so that a long run does not end in a failed write)."""
    if not path:
        raise UsageError("--profile needs a file name")
    if os.path.isdir(path):
        raise UsageError(f"--profile {path}: is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"--profile {path}: no such directory {parent}")
    if not os.access(parent, os.W_OK) or (os.path.exists(path) and
                                          not os.access(path, os.W_OK)):
        raise UsageError(f"--profile {path}: not writable")
    return path


def target(path: str | None) -> str | None:
    """The profile file of a run: ``path`` (``--profile``), else ``$BBMM_PROFILE``, else
    None (no profiling); checked writable."""
    if path is None:
        path = os.environ.get(ENV) or None
    return None if path is None else check_target(path)

# }}}


# {{{ from events to a document

def device_timeline(raw: Mapping[str, Any] | None, name: str = "?",
                    gaps: int = GAPS) -> dict[str, Any]:
    """One device's entry of the document from what
    :meth:`~bbmm.devices.opencl.OpenCLDevice.take_profile` returned (None: the device
    was not profiling)."""
    if raw is None:
        return {"name": name, "profiled": False, "commands": [], "summary": summarize([])}
    cmds = sorted(raw["commands"], key=lambda c: c[5])
    origin = cmds[0][5] if cmds else 0
    out = []
    clamped = 0
    for kind, label, nbytes, queued, submit, start, end in cmds:
        if end < start:  # a driver's glitch: keep the command, with no duration
            clamped += 1
            end = start
        out.append({"kind": kind, "label": label, "bytes": int(nbytes),
                    "start_us": (start - origin) / 1e3, "end_us": (end - origin) / 1e3,
                    "queued_us": None if queued is None else (queued - origin) / 1e3,
                    "submit_us": None if submit is None else (submit - origin) / 1e3})
    dropped = int(raw.get("dropped", 0))
    return {"name": raw.get("name", name), "physical": raw.get("physical"), "profiled": True,
            "origin_ns": origin, "limit": raw.get("limit"), "truncated": dropped > 0,
            "dropped": dropped, "unreadable": int(raw.get("unreadable", 0)),
            "clamped": clamped, "commands": out, "summary": summarize(out, gaps)}


def collect(devices: Sequence[Any], meta: Mapping[str, Any] | None = None,
            gaps: int = GAPS) -> dict[str, Any]:
    """The timeline document of ``devices`` after a run: waits for each device, reads
    and forgets the commands it recorded (a later run starts a fresh record)."""
    entries = []
    for d in devices:
        take = getattr(d, "take_profile", None)
        entries.append(device_timeline(take() if take is not None else None,
                                       getattr(d, "name", "?"), gaps))
    origins = [e["origin_ns"] for e in entries if e["commands"]]
    first = min(origins) if origins else 0
    for e in entries:
        if e["commands"]:
            e["offset_us"] = (e["origin_ns"] - first) / 1e3
    return {"format": FORMAT, "meta": dict(meta or {}),
            "truncated": any(e.get("truncated") for e in entries), "devices": entries}

# }}}


# {{{ summaries (of plain command dicts: also of a saved file)

def idle_gaps(commands: Sequence[Mapping[str, Any]]) -> tuple[float, list[dict[str, Any]]]:
    """``(union_us, gaps)``: the time covered by at least one command, and every idle
    interval between the first start and the last end, in time order. A gap names the
    command whose end opened it and the one whose start closed it, and ``host_us``: the
    part of it before the closing command was even enqueued (None without queued
    timestamps), i.e. the device waiting for the host."""
    union = 0.0
    gaps: list[dict[str, Any]] = []
    cur_start = cur_end = None
    last: Mapping[str, Any] | None = None
    for c in sorted(commands, key=lambda c: c["start_us"]):
        s, e = c["start_us"], c["end_us"]
        if cur_end is None:
            cur_start, cur_end, last = s, e, c
            continue
        if s > cur_end:
            union += cur_end - cur_start
            gap = s - cur_end
            q = c.get("queued_us")
            host = None if q is None else min(max(q - cur_end, 0.0), gap)
            gaps.append({"gap_us": gap, "at_us": cur_end, "before": last["kind"],
                         "before_label": last["label"], "after": c["kind"],
                         "after_label": c["label"], "host_us": host})
            cur_start, cur_end, last = s, e, c
        elif e >= cur_end:
            cur_end, last = e, c
    if cur_end is not None:
        union += cur_end - cur_start
    return union, gaps


def summarize(commands: Sequence[Mapping[str, Any]], gaps: int = GAPS) -> dict[str, Any]:
    """Span, busy time, count and bytes per kind, GB/s per copy kind, idle time (and its
    part waiting for the host) and the ``gaps`` longest idle gaps of one device."""
    busy = dict.fromkeys(KINDS, 0.0)
    count = dict.fromkeys(KINDS, 0)
    nbytes = dict.fromkeys(KINDS, 0)
    for c in commands:
        k = c["kind"]
        busy[k] = busy.get(k, 0.0) + (c["end_us"] - c["start_us"])
        count[k] = count.get(k, 0) + 1
        nbytes[k] = nbytes.get(k, 0) + int(c["bytes"])
    span = (max(c["end_us"] for c in commands) - min(c["start_us"] for c in commands)
            if commands else 0.0)
    union, all_gaps = idle_gaps(commands)
    known = all(g["host_us"] is not None for g in all_gaps)
    longest = sorted(all_gaps, key=lambda g: -g["gap_us"])[:gaps]
    return {"commands": len(commands), "span_us": span, "busy_us": busy, "count": count,
            "bytes": nbytes,
            "gbps": {k: nbytes[k] / busy[k] / 1e3 for k in COPY_KINDS if busy[k] > 0},
            "union_us": union, "idle_us": max(span - union, 0.0),
            "idle_host_us": sum(g["host_us"] for g in all_gaps) if known else None,
            "gap_count": len(all_gaps), "gaps": longest}


def segments(commands: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The commands cut after each kernel: with one kernel per tile, segment ``i`` is the
    ``i``-th tile's copies and its kernel (a last segment after the last kernel holds the
    final write-out). Per segment: start, end, the kernel's label, busy time and bytes
    per kind, idle time inside it."""
    out: list[dict[str, Any]] = []
    cur: list[Mapping[str, Any]] = []
    for c in sorted(commands, key=lambda c: c["start_us"]):
        cur.append(c)
        if c["kind"] == "kernel":
            out.append(_segment(cur))
            cur = []
    if cur:
        out.append(_segment(cur))
    return out


def _segment(cmds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    s = summarize(cmds, gaps=0)
    kernel = next((c["label"] for c in reversed(cmds) if c["kind"] == "kernel"), None)
    return {"start_us": cmds[0]["start_us"], "end_us": max(c["end_us"] for c in cmds),
            "kernel": kernel, "busy_us": s["busy_us"], "bytes": s["bytes"],
            "idle_us": s["idle_us"], "commands": len(cmds)}


def by_label(commands: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Commands grouped by ``(kind, label)``: count, busy time, bytes, GB/s; busiest first
    (which kernel, which copy geometry takes the time)."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for c in commands:
        g = groups.setdefault((c["kind"], c["label"]), {"kind": c["kind"], "label": c["label"],
                                                        "count": 0, "busy_us": 0.0, "bytes": 0})
        g["count"] += 1
        g["busy_us"] += c["end_us"] - c["start_us"]
        g["bytes"] += int(c["bytes"])
    for g in groups.values():
        g["gbps"] = g["bytes"] / g["busy_us"] / 1e3 if g["busy_us"] > 0 and g["bytes"] else None
    return sorted(groups.values(), key=lambda g: -g["busy_us"])

# }}}


# {{{ text

def _ms(us: float) -> str:
    return f"{us / 1e3:.1f} ms" if us >= 100 else f"{us / 1e3:.3f} ms"


def format_device(entry: Mapping[str, Any]) -> str:
    """One line: span, busy ms (and GB/s) per kind, idle ms (waiting for the host)."""
    name = entry.get("name", "?")
    if not entry.get("profiled", True):
        return f"{name}: not profiled"
    s = entry["summary"]
    if not s["commands"]:
        return f"{name}: no commands"
    parts = []
    for k in KINDS:
        if s["count"].get(k):
            rate = s["gbps"].get(k)
            parts.append(f"{k} {_ms(s['busy_us'][k])}" +
                         (f" {rate:.1f} GB/s" if rate is not None else ""))
    span = s["span_us"]
    idle = s["idle_us"]
    pct = 100.0 * idle / span if span else 0.0
    host = s.get("idle_host_us")
    line = (f"{name}: span {_ms(span)}, {s['commands']} commands; " + ", ".join(parts) +
            f"; idle {_ms(idle)} ({pct:.0f}%) in {s['gap_count']} gaps")
    if host is not None:
        line += f", {_ms(host)} of it before the next command was enqueued"
    if entry.get("truncated"):
        line += (f"; recording stopped after {entry.get('limit')} commands "
                 f"({entry['dropped']} more not recorded)")
    return line


def format_summary(doc: Mapping[str, Any]) -> str:
    """One line per device (:func:`format_device`)."""
    return "\n".join(format_device(e) for e in doc["devices"])


def format_gaps(entry: Mapping[str, Any], gaps: Sequence[Mapping[str, Any]]) -> str:
    """The given gaps of one device, one line each: length, where, between which commands."""
    lines = []
    for g in gaps:
        host = g.get("host_us")
        extra = "" if host is None else f" (host {_ms(host)})"
        lines.append(f"  {entry.get('name', '?')}: {_ms(g['gap_us'])}{extra} at "
                     f"{_ms(g['at_us'])}: {g['before']} {g['before_label']} -> "
                     f"{g['after']} {g['after_label']}")
    return "\n".join(lines)

# }}}


# {{{ files

def _open(path: str, mode: str) -> Any:
    """``path`` as text; gzip-compressed where it ends in ``.gz`` (a long run's timeline
    is tens of MB of JSON, a tenth of that compressed)."""
    if path.endswith(".gz"):
        return gzip.open(path, mode + "t")
    return open(path, mode)


def write(path: str, doc: Mapping[str, Any]) -> None:
    """Write the document as JSON (compact: a long run has many commands; gzip where
    ``path`` ends in ``.gz``)."""
    try:
        with _open(path, "w") as f:
            json.dump(doc, f, separators=(",", ":"))
            f.write("\n")
    except OSError as e:
        raise UsageError(f"--profile {path}: cannot write: {e.strerror or e}") from None


def load(path: str) -> dict[str, Any]:
    """A saved timeline document, gzip-compressed or not (UsageError, one line, when it
    is not one)."""
    try:
        with _open(path, "r") as f:
            doc = json.load(f)
    except (OSError, ValueError, EOFError) as e:
        raise UsageError(f"{path}: cannot read a timeline: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise UsageError(f"{path}: not a bbmm timeline (format {FORMAT})")
    return doc


def write_timeline(path: str, devices: Sequence[Any], meta: Mapping[str, Any] | None = None,
                   stream: Any = None) -> dict[str, Any]:
    """After a run: collect the devices' timelines, write them to ``path`` and print the
    summary (one line per device) on ``stream`` (stderr)."""
    doc = collect(devices, meta)
    write(path, doc)
    stream = sys.stderr if stream is None else stream
    print(f"bbmm: device timeline in {path}:", file=stream)
    for line in format_summary(doc).splitlines():
        print(f"  {line}", file=stream)
    return doc

# }}}

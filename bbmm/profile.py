"""Run timelines from OpenCL profiling events (``bbmm run --profile FILE``), written in the
Chrome trace event format that Perfetto (ui.perfetto.dev) and chrome://tracing open as
they are.

Where does a device's time go: copies, kernels, fills, or idle gaps between commands?
With profiling on, every command an :class:`~bbmm.devices.opencl.OpenCLDevice` enqueues
is kept with its event, its queue and what the runtime said it is (the array and box of a
copy, the tile of a kernel: :meth:`~bbmm.devices.base.Device.note`); the runtime also
keeps the host's steps of each round of tiles (:attr:`bbmm.runtime.Runtime.host_log`).
After the run, :func:`collect` reads the events' timestamps and builds one document:

* per device, the command list ``[{kind, label, bytes, start_us, end_us, queued_us,
  submit_us, queue, what}]`` sorted by start, times in microseconds from the device's
  first command start, and ``offset_us``: where that start lies on the run's time axis;
* per device, a summary (:func:`summarize`): the span (first start to last end), busy
  time, commands and bytes per kind, achieved GB/s per copy kind, idle time (the span
  minus the union of the command intervals), the part of it the device spent waiting
  for the host to enqueue the next command (``idle_host_us``, from the queued
  timestamps), and the longest idle gaps with the commands on either side;
* the host's steps (``host``: ``[{name, start_us, end_us}]`` on the same axis).

:func:`write` saves it as a trace (:func:`to_trace`): a JSON object with ``traceEvents``
and ``displayTimeUnit``; one process per device, one thread per queue of it (``queue``,
``side queue`` for read-ins that overlap kernels), one process
``host`` with the thread ``steps``, all named by metadata events (``"ph": "M"``); each
command a complete event (``"ph": "X"``, ``ts``/``dur`` in microseconds) named with its
kind and array and box (``h2d A[0:15, 0:127]``) or its kernel and tile, its bytes, copy
geometry and queued time in ``args``. bbmm's own data (the run's parameters, each
device's summary, truncation) is in the top-level ``otherData``, which the format
allows; :func:`from_trace` rebuilds the document from the events, so a trace is
summarized again anywhere (``bbmm timeline FILE``, :mod:`bbmm.timeline`).

Kinds: ``h2d``, ``d2h``, ``d2d`` (copies), ``kernel``, ``fill`` (an arena's first touch).
Labels: a kernel's function name, ``linear`` for a contiguous copy, ``rect WxH[xD]`` for
a rectangular copy of H rows (D slices) of W bytes, ``kernel copy`` for a strided copy
within one buffer. Each device's clock is its own: a device is put on the host's time
axis by its first command's queued timestamp and the host's clock read just after that
enqueue (``aligned``); a driver that gives no queued timestamps leaves the devices
aligned by their first commands' starts, which is exact only for logical devices of one
physical device.

This module imports no OpenCL: ``bbmm timeline`` summarizes saved files anywhere.
"""
from __future__ import annotations

import gzip
import json
import os
import sys
from typing import Any, Iterable, Mapping, Sequence

from . import settings
from .diagnostic import UsageError
from .version import __version__

__all__ = ["KINDS", "COPY_KINDS", "ENV", "FORMAT", "target", "check_target", "collect",
           "merge_ranks",
           "device_timeline", "summarize", "idle_gaps", "segments", "by_label",
           "format_summary", "format_gaps", "write", "load", "write_timeline", "to_trace",
           "from_trace", "event_name", "trace_schema"]

KINDS = ("h2d", "d2h", "d2d", "kernel", "fill")
COPY_KINDS = ("h2d", "d2h", "d2d")
ENV = "BBMM_PROFILE"
"""Environment variable: the default of ``--profile``."""
FORMAT = "bbmm-trace-1"
"""``otherData.format`` of a trace that bbmm wrote."""
OLD_FORMAT = "bbmm-profile-1"
"""The format of timelines written before traces (still read: ``bbmm timeline``)."""
GAPS = 10
"""Longest idle gaps kept per device in the document's summary."""
QUEUES = ("queue", "side queue")
"""A device's queues, in the order of their threads in a trace."""
HOST_PID = 0


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
        path = settings.text(ENV)
    return None if path is None else check_target(path)

# }}}


# {{{ from events to a document

def _box_text(box: Any) -> str:
    """``[0:15, 0:127]`` for a :class:`~bbmm.box.Box` (or its text)."""
    text = str(box)
    return text[3:] if text.startswith("Box[") else text


def _what(what: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A command's note as plain JSON values (boxes as text)."""
    if not what:
        return None
    out = {}
    for k, v in what.items():
        if k == "box":
            v = _box_text(v)
        elif k == "rows" and v is not None:
            v = [int(x) for x in v]  # one range, or two: a middle tile's ends
        elif k == "boxes":  # a kernel's (array, box) pairs: "A[0:15, 0:127]"
            v = [b if isinstance(b, str) else f"{b[0]}{_box_text(b[1])}" for b in v]
        out[k] = v
    return out


def device_timeline(raw: Mapping[str, Any] | None, name: str = "?",
                    gaps: int = GAPS) -> dict[str, Any]:
    """One device's entry of the document from what
    :meth:`~bbmm.devices.opencl.OpenCLDevice.take_profile` returned (None: the device
    was not profiling). ``host_origin_ns``: the first start on the host's clock, where
    the record ties the two clocks (else None)."""
    if raw is None:
        return {"name": name, "profiled": False, "commands": [], "summary": summarize([])}
    cmds = sorted(raw["commands"], key=lambda c: c[5])
    origin = cmds[0][5] if cmds else 0
    out = []
    clamped = 0
    for kind, label, nbytes, queued, submit, start, end, *more in cmds:
        if end < start:  # a driver's glitch: keep the command, with no duration
            clamped += 1
            end = start
        out.append({"kind": kind, "label": label, "bytes": int(nbytes),
                    "start_us": (start - origin) / 1e3, "end_us": (end - origin) / 1e3,
                    "queued_us": None if queued is None else (queued - origin) / 1e3,
                    "submit_us": None if submit is None else (submit - origin) / 1e3,
                    "queue": more[0] if more else "queue",
                    "what": _what(more[1]) if len(more) > 1 else None})
    dropped = int(raw.get("dropped", 0))
    host_ns, host_queued = raw.get("host_ns"), raw.get("host_queued")
    tied = cmds and host_ns is not None and host_queued is not None
    return {"name": raw.get("name", name), "physical": raw.get("physical"), "profiled": True,
            "origin_ns": origin,
            "host_origin_ns": origin - host_queued + host_ns if tied else None,
            "limit": raw.get("limit"), "truncated": dropped > 0,
            "dropped": dropped, "unreadable": int(raw.get("unreadable", 0)),
            "clamped": clamped, "commands": out, "summary": summarize(out, gaps)}


def collect(devices: Sequence[Any], meta: Mapping[str, Any] | None = None,
            gaps: int = GAPS, host: Sequence[tuple[str, float, float]] | None = None
            ) -> dict[str, Any]:
    """The timeline document of ``devices`` after a run: waits for each device, reads
    and forgets the commands it recorded (a later run starts a fresh record). ``host``:
    the host's steps as ``(name, start, end)`` in ``time.perf_counter`` seconds
    (:attr:`bbmm.runtime.Runtime.host_log`, and the run itself).

    The time axis starts at the earliest of the host's steps and the devices tied to the
    host's clock (``aligned``); devices that are not tied are aligned by their first
    starts and start at the earliest of them."""
    entries = []
    for d in devices:
        take = getattr(d, "take_profile", None)
        entries.append(device_timeline(take() if take is not None else None,
                                       getattr(d, "name", "?"), gaps))
    steps = [(n, int(round(a * 1e9)), int(round(b * 1e9))) for n, a, b in host or ()]
    starts = [a for _, a, _ in steps]
    starts += [e["host_origin_ns"] for e in entries
               if e["commands"] and e.get("host_origin_ns") is not None]
    zero = min(starts) if starts else 0
    loose = [e["origin_ns"] for e in entries
             if e["commands"] and e.get("host_origin_ns") is None]
    first = min(loose) if loose else 0
    for e in entries:
        if e["commands"]:
            tied = e.get("host_origin_ns") is not None
            e["aligned"] = tied
            e["offset_us"] = ((e["host_origin_ns"] - zero) if tied
                              else (e["origin_ns"] - first)) / 1e3
    return {"format": FORMAT, "meta": dict(meta or {}),
            "truncated": any(e.get("truncated") for e in entries), "devices": entries,
            "host": [{"name": n, "start_us": (a - zero) / 1e3, "end_us": (b - zero) / 1e3}
                     for n, a, b in steps],
            "zero_ns": zero}


def merge_ranks(docs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One document of the documents (:func:`collect`) of the processes of one machine
    (``bbmm run --procs``, MPI ranks of one node), in rank order: one time axis (the
    host clock, ``time.perf_counter``, is the machine's monotonic clock, common to its
    processes), devices named ``rank R: NAME``, host steps marked with their rank.
    Devices not tied to the host clock keep their own axes."""
    zeros = [d.get("zero_ns") or 0 for d in docs]
    zero = min(zeros) if zeros else 0
    devices: list[dict[str, Any]] = []
    host: list[dict[str, Any]] = []
    for r, (d, z) in enumerate(zip(docs, zeros)):
        shift = (z - zero) / 1e3
        for e in d["devices"]:
            e = dict(e)
            e["name"] = f"rank {r}: {e.get('name', '?')}"
            if e.get("aligned"):
                e["offset_us"] = e.get("offset_us", 0.0) + shift
            devices.append(e)
        host.extend({**h, "start_us": h["start_us"] + shift, "end_us": h["end_us"] + shift,
                     "rank": r} for h in d.get("host") or ())
    meta = dict(docs[0].get("meta") or {}) if docs else {}
    meta["ranks"] = len(docs)
    return {"format": FORMAT, "meta": meta,
            "truncated": any(d.get("truncated") for d in docs), "devices": devices,
            "host": host, "zero_ns": zero}

# }}}


# {{{ the trace event format

def event_name(c: Mapping[str, Any]) -> str:
    """A command's name in a trace: its kind with the array and box it moves
    (``h2d A[0:15, 0:127]``), a kernel with its tile (``mvt_nest0 nest0 tile 3``, ``rows
    0..7`` when it runs a part of the tile, ``rows 10..10, 19..19`` for both ends of a
    middle tile), or its kind and label where nothing more is known."""
    what = c.get("what") or {}
    kind = c["kind"]
    if kind == "kernel":
        name = c["label"]
        if what.get("tile"):
            name += f" {what['tile']}"
        rows = what.get("rows")
        if rows:
            name += " rows " + ", ".join(f"{lo}..{hi}" for lo, hi in zip(rows[::2], rows[1::2]))
        return name
    if what.get("array") is not None:
        return f"{kind} {what['array']}{what.get('box', '')}"
    return kind if c["label"] == kind else f"{kind} {c['label']}"


def _meta_event(name: str, pid: int, tid: int, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": name, "ph": "M", "pid": pid, "tid": tid, "args": dict(args)}


def to_trace(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The document as a Chrome trace (see the module's doc): devices are processes
    1, 2, ... (their queues threads 1, 2, 3), the host process 0."""
    events: list[dict[str, Any]] = []
    host = doc.get("host") or []
    if host:
        events.append(_meta_event("process_name", HOST_PID, 0, {"name": "host"}))
        events.append(_meta_event("process_sort_index", HOST_PID, 0, {"sort_index": 0}))
        ranks = sorted({h.get("rank", 0) for h in host})
        for r in ranks:  # one thread per process of the run (bbmm run --procs)
            events.append(_meta_event("thread_name", HOST_PID, r,
                                      {"name": "steps" if ranks == [0] else f"rank {r}"}))
        for h in host:
            events.append({"name": h["name"], "cat": "host", "ph": "X", "ts": h["start_us"],
                           "dur": max(h["end_us"] - h["start_us"], 0.0), "pid": HOST_PID,
                           "tid": h.get("rank", 0)})
    others = []
    for i, e in enumerate(doc["devices"]):
        pid = i + 1
        phys = e.get("physical")
        label = e.get("name", "?") + (f" ({phys})" if phys else "")
        events.append(_meta_event("process_name", pid, 0, {"name": label}))
        events.append(_meta_event("process_sort_index", pid, 0, {"sort_index": pid}))
        cmds = e.get("commands") or []
        queues = [q for q in QUEUES if any(c.get("queue", "queue") == q for c in cmds)]
        queues += sorted({c.get("queue", "queue") for c in cmds} - set(queues))
        tids = {q: j + 1 for j, q in enumerate(queues)}
        for q, tid in tids.items():
            events.append(_meta_event("thread_name", pid, tid, {"name": q}))
            events.append(_meta_event("thread_sort_index", pid, tid, {"sort_index": tid}))
        off = e.get("offset_us", 0.0)
        for c in cmds:
            args: dict[str, Any] = {"bytes": int(c["bytes"]), "label": c["label"]}
            what = c.get("what") or {}
            for k, v in what.items():
                if v is not None:
                    args[k] = v
            for k in ("queued_us", "submit_us"):
                if c.get(k) is not None:
                    args[k] = c[k] + off
            events.append({"name": event_name(c), "cat": c["kind"], "ph": "X",
                           "ts": c["start_us"] + off,
                           "dur": max(c["end_us"] - c["start_us"], 0.0),
                           "pid": pid, "tid": tids[c.get("queue", "queue")], "args": args})
        others.append({k: v for k, v in e.items() if k != "commands"} | {"pid": pid})
    events.sort(key=lambda ev: (ev["ph"] != "M", ev.get("ts", 0.0)))
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"format": FORMAT, "bbmm": __version__,
                          "meta": dict(doc.get("meta") or {}),
                          "truncated": bool(doc.get("truncated")), "devices": others}}


def from_trace(trace: Mapping[str, Any]) -> dict[str, Any]:
    """The document (:func:`collect`) of a trace that :func:`to_trace` wrote: each
    device's commands from its complete events, times again from its first start."""
    other = trace.get("otherData") or {}
    devices = [dict(e) for e in other.get("devices") or []]
    by_pid = {e.get("pid"): e for e in devices}
    tnames: dict[tuple[int, int], str] = {}
    for ev in trace["traceEvents"]:
        if ev.get("ph") == "M" and ev.get("name") == "thread_name":
            tnames[(ev["pid"], ev.get("tid", 0))] = ev["args"]["name"]
    cmds: dict[Any, list[dict[str, Any]]] = {pid: [] for pid in by_pid}
    host = []
    for ev in trace["traceEvents"]:
        if ev.get("ph") != "X":
            continue
        if ev.get("pid") == HOST_PID and ev.get("cat") == "host":
            host.append({"name": ev["name"], "start_us": ev["ts"],
                         "end_us": ev["ts"] + ev["dur"], "rank": ev.get("tid", 0)})
            continue
        e = by_pid.get(ev.get("pid"))
        if e is None or ev.get("cat") not in KINDS:
            continue
        args = dict(ev.get("args") or {})
        off = e.get("offset_us", 0.0)
        what = {k: args[k] for k in ("array", "box", "for", "tile", "rows", "boxes")
                if k in args}
        cmds[ev["pid"]].append({
            "kind": ev["cat"], "label": args.get("label", ev["cat"]),
            "bytes": int(args.get("bytes", 0)), "start_us": ev["ts"] - off,
            "end_us": ev["ts"] - off + ev["dur"],
            "queued_us": args["queued_us"] - off if "queued_us" in args else None,
            "submit_us": args["submit_us"] - off if "submit_us" in args else None,
            "queue": tnames.get((ev["pid"], ev.get("tid", 0)), "queue"),
            "what": what or None})
    for e in devices:
        e["commands"] = sorted(cmds.get(e.get("pid"), []), key=lambda c: c["start_us"])
        e.pop("pid", None)
    return {"format": FORMAT, "meta": dict(other.get("meta") or {}),
            "truncated": bool(other.get("truncated")), "devices": devices, "host": host}

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
    is tens of MB of JSON, a tenth of that compressed; Perfetto opens it so too)."""
    if path.endswith(".gz"):
        return gzip.open(path, mode + "t")
    return open(path, mode)


def write(path: str, doc: Mapping[str, Any]) -> None:
    """Write the document as a Chrome trace (:func:`to_trace`), compact JSON (a long run
    has many commands; gzip where ``path`` ends in ``.gz``)."""
    trace = to_trace(doc)
    try:
        with _open(path, "w") as f:
            json.dump(trace, f, separators=(",", ":"))
            f.write("\n")
    except OSError as e:
        raise UsageError(f"--profile {path}: cannot write: {e.strerror or e}") from None


def load(path: str) -> dict[str, Any]:
    """The document of a saved trace (:func:`from_trace`), gzip-compressed or not; a
    timeline of the format before traces (:data:`OLD_FORMAT`) as it is. A file that is
    neither is a one-line UsageError."""
    try:
        with _open(path, "r") as f:
            doc = json.load(f)
    except (OSError, ValueError, EOFError) as e:
        raise UsageError(f"{path}: cannot read a timeline: {e}") from None
    if isinstance(doc, dict) and doc.get("format") == OLD_FORMAT:
        doc.setdefault("host", [])
        return doc
    if (not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list)
            or (doc.get("otherData") or {}).get("format") != FORMAT):
        raise UsageError(f"{path}: not a bbmm trace (a Chrome trace with otherData.format "
                         f"{FORMAT}, as bbmm run --profile writes)")
    try:
        return from_trace(doc)
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(f"{path}: a damaged bbmm trace ({type(e).__name__}: {e})") from None


def write_timeline(path: str, devices: Sequence[Any], meta: Mapping[str, Any] | None = None,
                   stream: Any = None,
                   host: Sequence[tuple[str, float, float]] | None = None,
                   doc: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """After a run: collect the devices' timelines and the host's steps (``host``, see
    :func:`collect`), or take ``doc`` as it is (:func:`merge_ranks`), write them to
    ``path`` as a trace and print the summary (one line per device) on ``stream``
    (stderr). Returns the document."""
    if doc is None:
        doc = collect(devices, meta, host=host)
    write(path, doc)
    stream = sys.stderr if stream is None else stream
    print(f"bbmm: device timeline in {path} (a Chrome trace: Perfetto opens it; "
          f"bbmm timeline summarizes it):", file=stream)
    for line in format_summary(doc).splitlines():
        print(f"  {line}", file=stream)
    return doc

# }}}


def trace_schema() -> dict[str, Any]:
    """The JSON Schema of a trace (``bbmm/schemas/trace.schema.json``, shipped with the
    package)."""
    from importlib import resources
    return json.loads(resources.files("bbmm").joinpath("schemas", "trace.schema.json")
                      .read_text())

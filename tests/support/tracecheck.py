"""A check of the Chrome trace event format, as Perfetto and chrome://tracing read it, on
what ``bbmm run --profile`` writes: the shipped JSON Schema
(``bbmm/schemas/trace.schema.json``) and what a schema cannot say (every process and
thread named, events inside the run)."""
from __future__ import annotations

from typing import Any, Mapping

import pytest

PHASES_KNOWN = {"X", "M"}


def check_trace(trace: Mapping[str, Any]) -> dict[str, Any]:
    """Assert that ``trace`` is a trace Perfetto opens as bbmm means it; returns
    ``{(pid, tid): thread name}`` and the process names for further checks."""
    jsonschema = pytest.importorskip("jsonschema")
    from bbmm.profile import trace_schema

    jsonschema.Draft202012Validator(trace_schema()).validate(trace)
    # the format's own rules, checked without the schema too
    assert isinstance(trace["traceEvents"], list) and trace["displayTimeUnit"] in ("ms", "ns")
    procs: dict[int, str] = {}
    threads: dict[tuple[int, int], str] = {}
    for ev in trace["traceEvents"]:
        assert ev["ph"] in PHASES_KNOWN, ev
        assert isinstance(ev["pid"], int) and isinstance(ev.get("tid", 0), int)
        if ev["ph"] == "M":
            if ev["name"] == "process_name":
                assert ev["pid"] not in procs, f"process {ev['pid']} named twice"
                procs[ev["pid"]] = ev["args"]["name"]
            elif ev["name"] == "thread_name":
                key = (ev["pid"], ev["tid"])
                assert key not in threads, f"thread {key} named twice"
                threads[key] = ev["args"]["name"]
    complete = [ev for ev in trace["traceEvents"] if ev["ph"] == "X"]
    for ev in complete:
        assert isinstance(ev["name"], str) and ev["name"]
        assert isinstance(ev["ts"], (int, float)) and not isinstance(ev["ts"], bool)
        assert isinstance(ev["dur"], (int, float)) and ev["dur"] >= 0 and ev["ts"] >= 0
        assert ev["pid"] in procs, f"process {ev['pid']} of {ev['name']} has no name"
        assert (ev["pid"], ev["tid"]) in threads, f"thread of {ev['name']} has no name"
        if ev.get("cat") != "host":
            assert isinstance(ev["args"]["bytes"], int) and ev["args"]["bytes"] >= 0
    # each thread's name is unique within its process (one track per queue)
    for pid in procs:
        names = [n for (p, _), n in threads.items() if p == pid]
        assert len(names) == len(set(names))
    return {"processes": procs, "threads": threads, "complete": complete}

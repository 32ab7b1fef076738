"""Run timelines and their Chrome traces (``bbmm/profile.py``, ``bbmm timeline``,
``bbmm/timeline.py``) from synthetic commands: no OpenCL needed."""
from __future__ import annotations

import argparse
import json
import sys

import pytest

from bbmm import profile as pf
from bbmm.box import Box
from bbmm import timeline
from bbmm.cli import main as cli_main
from bbmm.diagnostic import UsageError
from support.tracecheck import check_trace
from support.paths import ROOT



def cmd(kind, start, end, nbytes=0, label=None, queued=None):
    return {"kind": kind, "label": label or kind, "bytes": nbytes, "start_us": start,
            "end_us": end, "queued_us": queued, "submit_us": queued}


# h2d 0-10 (1 MB), kernel 10-30, gap 30-50 (next queued at 45), h2d 50-60 (2 MB),
# kernel 60-65, d2h 70-72 (gap 65-70, queued early)
COMMANDS = [cmd("h2d", 0, 10, 1_000_000, "linear", -5), cmd("kernel", 10, 30, 0, "k0", 1),
            cmd("h2d", 50, 60, 2_000_000, "rect 64x10", 45), cmd("kernel", 60, 65, 0, "k1", 46),
            cmd("d2h", 70, 72, 4000, "linear", 50)]


def test_summary_of_known_commands():
    s = pf.summarize(COMMANDS, gaps=10)
    assert s["commands"] == 5 and s["span_us"] == 72
    assert s["busy_us"]["h2d"] == 20 and s["busy_us"]["kernel"] == 25
    assert s["busy_us"]["d2h"] == 2 and s["busy_us"]["fill"] == 0
    assert s["bytes"]["h2d"] == 3_000_000 and s["count"]["kernel"] == 2
    assert s["gbps"]["h2d"] == pytest.approx(3_000_000 / 20e-6 / 1e9)
    assert "d2d" not in s["gbps"]
    assert s["union_us"] == 47 and s["idle_us"] == 25 and s["gap_count"] == 2
    # the first gap: the next command was enqueued 15 us into it; the second: not at all
    assert s["idle_host_us"] == 15
    g0, g1 = s["gaps"]
    assert (g0["gap_us"], g0["at_us"], g0["before"], g0["after"]) == (20, 30, "kernel", "h2d")
    assert (g0["before_label"], g0["after_label"], g0["host_us"]) == ("k0", "rect 64x10", 15)
    assert (g1["gap_us"], g1["before"], g1["after"], g1["host_us"]) == (5, "kernel", "d2h", 0)
    assert len(pf.summarize(COMMANDS, gaps=1)["gaps"]) == 1


def test_overlapping_commands_count_once_and_unknown_queue_times():
    cmds = [cmd("h2d", 0, 10), cmd("kernel", 5, 8), cmd("d2h", 9, 12), cmd("fill", 20, 21)]
    union, gaps = pf.idle_gaps(cmds)
    assert union == 13 and [g["gap_us"] for g in gaps] == [8]
    assert gaps[0]["before"] == "d2h" and gaps[0]["host_us"] is None
    s = pf.summarize(cmds)
    assert s["idle_us"] == 8 and s["idle_host_us"] is None
    empty = pf.summarize([])
    assert empty["span_us"] == 0 and empty["idle_us"] == 0 and empty["gaps"] == []


def test_segments_cut_after_each_kernel():
    segs = pf.segments(COMMANDS)
    assert [s["kernel"] for s in segs] == ["k0", "k1", None]
    assert segs[0]["busy_us"]["h2d"] == 10 and segs[0]["idle_us"] == 0
    assert (segs[1]["start_us"], segs[1]["end_us"], segs[1]["bytes"]["h2d"]) == (50, 65, 2_000_000)
    assert segs[2]["commands"] == 1 and segs[2]["busy_us"]["d2h"] == 2


def test_by_label_busiest_first():
    groups = pf.by_label(COMMANDS)
    assert (groups[0]["kind"], groups[0]["label"], groups[0]["busy_us"]) == ("kernel", "k0", 20)
    rect = next(g for g in groups if g["label"] == "rect 64x10")
    assert rect["gbps"] == pytest.approx(2_000_000 / 10e-6 / 1e9)
    assert next(g for g in groups if g["label"] == "k1")["gbps"] is None


def raw_device(name="cl0", base=1_000_000, dropped=0, host_ns=None):
    """What OpenCLDevice.take_profile returns (ns, device clock), commands in the order
    they were enqueued; ``host_ns``: the host's clock just after the first enqueue."""
    cmds = [("h2d", "linear", 4096, base - 100, base, base + 1000, base + 1500, "side queue",
             {"array": "A", "box": Box((0, 0), (3, 255)), "for": "readin"}),
            ("kernel", "k", 0, base + 500, base + 600, base + 2000, base + 3000, "queue",
             {"tile": "nest0 tile 0", "rows": (0, 1), "boxes": [("A", Box((0, 0), (3, 255)))]}),
            ("d2h", "linear", 64, None, None, base + 4000, base + 3999, "queue",  # end < start
             {"array": "A", "box": Box((0, 0), (0, 15)), "for": "writeout"})]
    return {"name": name, "physical": "fake", "commands": cmds, "dropped": dropped,
            "limit": 3, "unreadable": 1, "host_ns": host_ns,
            "host_queued": None if host_ns is None else base - 100}


def test_device_timeline_is_relative_to_the_first_start():
    e = pf.device_timeline(raw_device())
    c = e["commands"]
    assert [x["kind"] for x in c] == ["h2d", "kernel", "d2h"]
    assert (c[0]["start_us"], c[0]["end_us"], c[0]["queued_us"]) == (0, 0.5, -1.1)
    assert (c[1]["start_us"], c[1]["end_us"]) == (1.0, 2.0)
    assert c[2]["end_us"] == c[2]["start_us"] == 3.0 and c[2]["queued_us"] is None
    assert e["clamped"] == 1 and e["unreadable"] == 1 and not e["truncated"]
    assert e["summary"]["span_us"] == 3.0
    assert [x["queue"] for x in c] == ["side queue", "queue", "queue"]
    assert c[0]["what"] == {"array": "A", "box": "[0:3, 0:255]", "for": "readin"}
    assert c[1]["what"]["rows"] == [0, 1] and c[1]["what"]["boxes"] == ["A[0:3, 0:255]"]
    assert e["host_origin_ns"] is None
    # tied to the host's clock: the first start is 1100 ns after the first enqueue
    assert pf.device_timeline(raw_device(host_ns=7_000))["host_origin_ns"] == 8_100
    assert pf.device_timeline(raw_device(dropped=7))["truncated"]
    assert not pf.device_timeline(None, "null0")["profiled"]


def test_event_names_say_array_and_box_or_kernel_and_tile():
    c = pf.device_timeline(raw_device())["commands"]
    assert [pf.event_name(x) for x in c] == ["h2d A[0:3, 0:255]", "k nest0 tile 0 rows 0..1",
                                             "d2h A[0:0, 0:15]"]
    assert pf.event_name(cmd("fill", 0, 1)) == "fill"
    assert pf.event_name(cmd("d2d", 0, 1, label="rect 8x2")) == "d2d rect 8x2"


class FakeDevice:
    def __init__(self, raw):
        self.raw = raw
        self.name = raw["name"] if raw else "dry0"

    def take_profile(self):
        return self.raw


def test_collect_write_load_and_the_summary_lines(tmp_path, capsys):
    devs = [FakeDevice(raw_device("cl0", host_ns=5_000_000)),
            FakeDevice(raw_device("cl1", base=1_002_000, dropped=5, host_ns=5_003_000)),
            FakeDevice(None)]
    path = tmp_path / "t.json"
    host = [("run", 0.005, 0.0051), ("acquire", 0.005, 0.0050005)]
    doc = pf.write_timeline(str(path), devs, {"kernel": "k", "params": {"n": 4}, "tile": 2,
                                              "wall_s": 0.5}, host=host)
    # the time axis starts with the run; each device's first start after its enqueue
    assert doc["truncated"] and doc["devices"][0]["aligned"]
    assert doc["devices"][0]["offset_us"] == pytest.approx(1.1)
    assert doc["devices"][1]["offset_us"] == pytest.approx(4.1)
    assert doc["host"][0] == {"name": "run", "start_us": 0.0, "end_us": pytest.approx(100.0)}
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"bbmm: device timeline in {path} (a Chrome trace") and len(err) == 4
    assert err[1].startswith("  cl0: span 0.003 ms, 3 commands; h2d 0.001 ms 8.2 GB/s")
    assert "recording stopped after 3 commands (5 more not recorded)" in err[2]
    assert err[3] == "  dry0: not profiled"
    trace = json.loads(path.read_text())
    got = check_trace(trace)
    assert got["processes"] == {0: "host", 1: "cl0 (fake)", 2: "cl1 (fake)", 3: "dry0"}
    assert got["threads"] == {(0, 0): "steps", (1, 1): "queue", (1, 2): "side queue",
                              (2, 1): "queue", (2, 2): "side queue"}
    h2d = next(ev for ev in got["complete"] if ev["pid"] == 2 and ev["cat"] == "h2d")
    assert h2d["name"] == "h2d A[0:3, 0:255]" and h2d["tid"] == 2
    assert h2d["ts"] == pytest.approx(4.1) and h2d["dur"] == pytest.approx(0.5)
    assert h2d["args"] == {"bytes": 4096, "label": "linear", "array": "A",
                           "box": "[0:3, 0:255]", "for": "readin",
                           "queued_us": pytest.approx(3.0), "submit_us": pytest.approx(3.1)}
    assert trace["otherData"]["meta"]["kernel"] == "k"
    assert trace["otherData"]["devices"][1]["summary"]["commands"] == 3
    # read back: the same commands, times from each device's first start
    back = pf.load(str(path))
    for a, b in zip(doc["devices"], back["devices"]):
        assert a["name"] == b["name"] and len(a["commands"]) == len(b["commands"])
        for x, y in zip(a["commands"], b["commands"]):
            assert {k: v for k, v in x.items() if not k.endswith("_us")} == \
                {k: v for k, v in y.items() if not k.endswith("_us")}
            for k in ("start_us", "end_us", "queued_us", "submit_us"):
                assert y[k] == (None if x[k] is None else pytest.approx(x[k]))
    assert back["host"][1]["name"] == "acquire" and back["meta"] == doc["meta"]
    # a .gz path is written and read gzip-compressed; a truncated one is a one-line error
    gz = tmp_path / "t.json.gz"
    pf.write(str(gz), doc)
    assert gz.read_bytes()[:2] == b"\x1f\x8b" and pf.load(str(gz)) == pf.load(str(path))
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gz.read_bytes()[:20])
    with pytest.raises(UsageError, match="cannot read a timeline"):
        pf.load(str(cut))


def test_devices_without_a_tie_to_the_host_align_by_their_first_starts():
    devs = [FakeDevice(raw_device("cl0")), FakeDevice(raw_device("cl1", base=1_002_000))]
    doc = pf.collect(devs, host=[("run", 1.0, 2.0)])
    assert [d["offset_us"] for d in doc["devices"]] == [0.0, 2.0]
    assert not doc["devices"][0]["aligned"]
    check_trace(pf.to_trace(doc))


def test_bad_targets_are_one_line_usage_errors(tmp_path, monkeypatch):
    monkeypatch.delenv(pf.ENV, raising=False)
    assert pf.target(None) is None
    with pytest.raises(UsageError, match="is a directory"):
        pf.target(str(tmp_path))
    with pytest.raises(UsageError, match="no such directory"):
        pf.target(str(tmp_path / "missing" / "t.json"))
    monkeypatch.setenv(pf.ENV, str(tmp_path / "env.json"))
    assert pf.target(None) == str(tmp_path / "env.json")
    assert pf.target(str(tmp_path / "arg.json")) == str(tmp_path / "arg.json")
    with pytest.raises(UsageError, match=r"--profile .*: cannot write: "):
        pf.write(str(tmp_path / "missing" / "t.json"), {"devices": []})
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(UsageError, match="not a bbmm trace"):
        pf.load(str(bad))
    with pytest.raises(UsageError, match="cannot read"):
        pf.load(str(tmp_path / "none.json"))


def test_profile_path_over_mpi_too(tmp_path, monkeypatch):
    """Every rank records its devices; rank 0 writes one trace of all
    (:func:`bbmm.profile.merge_ranks`, tests/app/e2e/test_procs.py)."""
    from bbmm.run import profile_path

    monkeypatch.delenv(pf.ENV, raising=False)
    for mpi in (True, False):
        args = argparse.Namespace(profile=str(tmp_path / "t.json"), mpi=mpi)
        assert profile_path(args) == str(tmp_path / "t.json")
    with pytest.raises(UsageError):
        profile_path(argparse.Namespace(profile=str(tmp_path / "no" / "t.json"), mpi=True))


@pytest.mark.parametrize("saved", ["trace", "old format"])
def test_bbmm_timeline_on_a_synthetic_file(saved, tmp_path, capsys, monkeypatch):
    path = tmp_path / "t.json"
    doc = {"meta": {"kernel": "mvt", "params": {"m": 8}, "tile": 2, "wall_s": 0.1},
           "devices": [{"name": "cl0", "profiled": True, "commands": COMMANDS,
                        "summary": pf.summarize(COMMANDS)}]}
    if saved == "trace":
        pf.write(str(path), doc)
        check_trace(json.loads(path.read_text()))
    else:  # a timeline saved before traces (results/ holds some) is read as it is
        path.write_text(json.dumps({"format": pf.OLD_FORMAT, **doc}))
    assert cli_main(["timeline", str(path), "--gaps", "1", "--tiles", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "mvt m=8 tile 2, run 0.100 s"
    assert out[1].startswith("cl0: span 0.072 ms, 5 commands; h2d 0.020 ms 150.0 GB/s")
    assert "idle 0.025 ms (35%) in 2 gaps, 0.015 ms of it before" in out[1]
    gaps = [l for l in out if l.startswith("  cl0: ")]
    assert gaps == ["  cl0: 0.020 ms (host 0.015 ms) at 0.030 ms: kernel k0 -> h2d rect 64x10"]
    assert any(l.split()[:3] == ["k0", "1", "0.030"] for l in out)  # per tile, kernel k0
    assert any("the 2 longest tiles:" in l for l in out)
    # no matplotlib: the summary still prints and the plot is skipped with a note
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert timeline.main([str(path), "--plot", str(tmp_path / "t.png")]) == 0
    err = capsys.readouterr().err
    assert "no matplotlib here: plot skipped" in err and err.count("\n") == 1
    assert not (tmp_path / "t.png").exists()


def test_host_steps_per_process_and_the_collectors_pauses(tmp_path, capsys):
    """``bbmm timeline`` sums each process's host steps, longest in all first, and lists
    its collections apart, the longest first with when they started."""
    host = [{"name": "run", "start_us": 0.0, "end_us": 9000.0, "rank": 0},
            {"name": "exchange", "start_us": 100.0, "end_us": 400.0, "rank": 0},
            {"name": "exchange", "start_us": 500.0, "end_us": 600.0, "rank": 0},
            {"name": "plan", "start_us": 50.0, "end_us": 100.0, "rank": 0},
            {"name": "collect gen 2", "start_us": 2000.0, "end_us": 5000.0, "rank": 0},
            {"name": "collect gen 0", "start_us": 7000.0, "end_us": 8500.0, "rank": 0},
            {"name": "run", "start_us": 0.0, "end_us": 8000.0, "rank": 1},
            {"name": "exchange", "start_us": 2000.0, "end_us": 5100.0, "rank": 1}]
    lines = timeline.host_lines({"host": host}, 2)
    assert lines == [
        "host steps of rank 0 (ms, count): run 9.000 (1), exchange 0.400 (2)",
        "  collections of rank 0: 2, 4.500 ms; longest 3.000 ms (collect gen 2) at 2.000 ms, "
        "1.500 ms (collect gen 0) at 7.000 ms",
        "host steps of rank 1 (ms, count): run 8.000 (1), exchange 3.100 (1)"]
    one = timeline.host_lines({"host": [dict(h, rank=0) for h in host[:3]]}, 8)
    assert one == ["host steps of the host (ms, count): run 9.000 (1), exchange 0.400 (2)"]
    assert timeline.host_lines({"devices": []}, 8) == []
    # through a trace and the command line
    path = tmp_path / "t.json"
    pf.write(str(path), {"meta": {}, "devices": [], "host": host})
    assert cli_main(["timeline", str(path), "--steps", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "host steps of rank 1 (ms, count): run 8.000 (1)" in out
    assert any(l.startswith("  collections of rank 0: 2, 4.500 ms") for l in out)


def test_each_processs_exchanges_and_sends_and_the_one_the_others_wait_for(tmp_path, capsys):
    """Over processes, ``bbmm timeline`` adds up each one's exchanges and sends (not
    their parts, nor the final gather) against its run, and names the one that spends
    the least share there; one process alone gets no such line."""
    steps = [(0, "run", 0, 10000), (0, "exchange", 100, 4100), (0, "transfer", 200, 4100),
             (0, "send", 5000, 6000), (0, "gather", 9000, 10000),
             (1, "run", 0, 8000), (1, "exchange", 2000, 3000), (1, "send", 3000, 3600)]
    host = [{"name": n, "start_us": float(a), "end_us": float(b), "rank": r}
            for r, n, a, b in steps]
    assert timeline.pace_lines({"host": host}) == [
        "exchanges and sends per process (ms, share of its run): rank 0 5.000 (50%), "
        "rank 1 1.600 (20%)",
        "  rank 1 spends the least in them: the others wait for it"]
    assert timeline.pace_lines({"host": [h for h in host if h["rank"] == 0]}) == []
    assert timeline.pace_lines({"devices": []}) == []
    path = tmp_path / "t.json"
    pf.write(str(path), {"meta": {}, "devices": [], "host": host})
    assert cli_main(["timeline", str(path)]) == 0
    assert "  rank 1 spends the least in them: the others wait for it" in \
        capsys.readouterr().out.splitlines()


def test_bbmm_timeline_on_a_file_that_is_no_trace_is_one_line(tmp_path, capsys):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"traceEvents": [], "displayTimeUnit": "ms"}))
    for path, what in ((tmp_path / "none.json", "cannot read a timeline"),
                       (other, "not a bbmm trace")):
        assert cli_main(["timeline", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"bbmm: error: {path}: {what}") and err.count("\n") == 1
    assert timeline.main([str(other)]) == 2


def test_the_checkout_script_is_bbmm_timeline(tmp_path):
    import subprocess

    path = tmp_path / "t.json"
    pf.write(str(path), {"meta": {"kernel": "mvt"}, "devices": [
        {"name": "cl0", "profiled": True, "commands": COMMANDS,
         "summary": pf.summarize(COMMANDS)}]})
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "timeline.py"), str(path)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1].startswith("cl0: span 0.072 ms, 5 commands")

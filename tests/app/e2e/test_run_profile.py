"""End-to-end: ``bbmm run --profile FILE`` on PoCL logical devices under a tight memory cap
(boxes evicted and read in again): the file is a Chrome trace (checked against the trace
event format), the timeline holds every kind of command named with its array and box or
its tile, its times add up, and its copy bytes are the run's own counts; a bad path is one
line before the run; ``bbmm timeline`` summarizes the file."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bbmm import profile as pf
from bbmm.cli import main
from bbmm.profile import ENV, KINDS
from support.needs import needs_cl  # skipped only without an OpenCL platform
from support.tracecheck import check_trace
from support.paths import ROOT

MVT = ROOT / "polybench" / "mvt.c"

pytestmark = pytest.mark.e2e


# mvt with A 256 x 128 floats (128 KiB) on 48 KiB per device: tiles of 16 rows / columns
MVT_ARGS = ["--param", "m=256", "--param", "n=128", "--tile", "16", "--device-mem", "48KiB",
            "--no-progress"]


def run_mvt(tmp_path, ndev, *extra):
    prof, rep = tmp_path / "timeline.json", tmp_path / "run.json"
    argv = ["run", str(MVT), *MVT_ARGS, "--devices", str(ndev), "--check", "--json", str(rep),
            *extra]
    if "--no-profile-arg" in extra:
        argv.remove("--no-profile-arg")
    else:
        argv += ["--profile", str(prof)]
    assert main(argv) == 0
    return pf.load(str(prof)), json.loads(rep.read_text()), prof


@needs_cl
@pytest.mark.parametrize("ndev", [1, 2])
def test_mvt_timeline_under_box_out(ndev, tmp_path, capsys):
    doc, rep, prof = run_mvt(tmp_path, ndev)
    assert rep["check"] == "pass"
    assert len(doc["devices"]) == ndev and not doc["truncated"]
    assert doc["meta"]["kernel"] == "mvt" and doc["meta"]["tile"] == 16
    array_bytes = (256 * 128 + 2 * 256 + 2 * 128) * 4
    assert sum(d["evictions"] for d in rep["per_device"]) > 0
    assert sum(d["h2d_bytes"] for d in rep["per_device"]) > array_bytes  # read in again
    for dev, stats in zip(doc["devices"], rep["per_device"]):
        cmds = dev["commands"]
        kinds = {c["kind"] for c in cmds}
        assert {"kernel", "h2d", "d2h", "fill"} <= kinds <= set(KINDS)
        assert all(c["end_us"] >= c["start_us"] >= 0 for c in cmds)
        assert {c["label"] for c in cmds if c["kind"] == "kernel"} <= {"mvt_nest0", "mvt_nest1"}
        s = dev["summary"]
        assert s["span_us"] == pytest.approx(max(c["end_us"] for c in cmds))
        for k in KINDS:
            assert 0 <= s["busy_us"][k] <= s["span_us"]
        assert 0 <= s["idle_us"] <= s["span_us"] and s["union_us"] <= s["span_us"] + 1e-6
        # covered time and idle time make the span; read-ins run on a side queue beside
        # the main queue's commands ($BBMM_SIDE), so the busy times may add up to more
        assert s["union_us"] + s["idle_us"] == pytest.approx(s["span_us"], abs=0.01)
        assert sum(s["busy_us"].values()) >= s["union_us"] - 0.01
        assert s["idle_host_us"] is None or 0 <= s["idle_host_us"] <= s["idle_us"] + 1e-6
        assert len(s["gaps"]) == min(10, s["gap_count"])
        # the cross-check: the copies the device ran are the bytes the runtime counted
        assert sum(c["bytes"] for c in cmds if c["kind"] == "h2d") == stats["h2d_bytes"]
        assert sum(c["bytes"] for c in cmds if c["kind"] == "d2h") == stats["d2h_bytes"]
        assert sum(c["bytes"] for c in cmds if c["kind"] == "d2d") == stats["d2d_bytes"]
        assert s["bytes"]["h2d"] == stats["h2d_bytes"]
    # the file as Perfetto reads it: one process per device, a thread per queue it used,
    # the host's steps; every copy named with its array and box, every kernel with its tile
    trace = json.loads(prof.read_text())
    got = check_trace(trace)
    assert got["processes"][0] == "host"
    assert [got["processes"][i + 1].split()[0] for i in range(ndev)] == \
        [f"cl{i}" for i in range(ndev)]
    assert got["threads"][(0, 0)] == "steps"
    assert {n for (p, _), n in got["threads"].items() if p > 0} <= set(pf.QUEUES)
    assert all(got["threads"][(p, 1)] == "queue" for p in range(1, ndev + 1))
    host = [ev for ev in got["complete"] if ev["pid"] == 0]
    run = next(ev for ev in host if ev["name"] == "run")
    assert {"acquire", "compute", "flowout", "writeout", "release"} <= {ev["name"] for ev in host}
    assert all(run["ts"] <= ev["ts"] and ev["ts"] + ev["dur"] <= run["ts"] + run["dur"] + 1e-3
               for ev in host)
    assert rep["wall_s"] * 1e6 == pytest.approx(run["dur"], rel=1e-3)
    copies = [ev for ev in got["complete"] if ev["cat"] in ("h2d", "d2h", "d2d")]
    arrays = {"A", "x1", "x2", "y1", "y2"}
    assert copies and all(ev["args"]["array"] in arrays and ev["args"]["box"].startswith("[")
                          and ev["name"] == f"{ev['cat']} {ev['args']['array']}{ev['args']['box']}"
                          for ev in copies)
    assert {ev["args"]["for"] for ev in copies} >= {"readin", "writeout"}
    kernels = [ev for ev in got["complete"] if ev["cat"] == "kernel"]
    assert all(ev["name"].startswith(ev["args"]["label"] + " nest") and " tile " in ev["name"]
               for ev in kernels)
    assert all(any(b.startswith("A[") for b in ev["args"]["boxes"]) for ev in kernels)
    # devices on the host's clock (PoCL gives queued timestamps): inside the run, give or
    # take the last commands' completion after the host's last step
    for ev in copies + kernels:
        assert ev["ts"] >= run["ts"] - 1e3
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("bbmm: device timeline in ")
    lines = [line for line in err if line.startswith("  cl")]
    assert len(lines) == ndev and all("span" in line and "idle" in line for line in lines)
    assert "GB/s" in lines[0] and "kernel" in lines[0]


@needs_cl
def test_bbmm_timeline_on_a_run(tmp_path, capsys):
    _, _, prof = run_mvt(tmp_path, 1)
    capsys.readouterr()
    assert main(["timeline", str(prof), "--gaps", "3", "--tiles", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("mvt m=256 n=128 tile 16, run ")
    assert out[1].startswith("cl0: span ") and "h2d" in out[1]
    assert sum(line.startswith("  cl0: ") for line in out) == 3  # the gaps
    assert any(line.split()[:2] == ["mvt_nest0", "16"] for line in out)  # 16 tiles of rows
    assert any(line.split()[:2] == ["mvt_nest1", "8"] for line in out)   # 8 of columns
    assert any(line.split()[:2] == ["h2d", "rect"] for line in out)  # A's column boxes
    pytest.importorskip("matplotlib")
    png = tmp_path / "t.png"
    assert main(["timeline", str(prof), "--plot", str(png)]) == 0
    assert png.stat().st_size > 0


@needs_cl
def test_profile_from_the_environment(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(ENV, str(tmp_path / "timeline.json"))
    doc, rep, _ = run_mvt(tmp_path, 1, "--no-profile-arg")
    assert doc["devices"][0]["summary"]["bytes"]["h2d"] == rep["per_device"][0]["h2d_bytes"]


@pytest.mark.parametrize("where", ["directory", "missing-directory"])
def test_bad_profile_path_is_one_line_before_the_run(where, tmp_path):
    path = tmp_path if where == "directory" else tmp_path / "no" / "t.json"
    r = subprocess.run([sys.executable, "-m", "bbmm", "run", str(MVT), "--param", "m=8",
                        "--param", "n=8", "--profile", str(path)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"bbmm: error: --profile {path}: ")
    assert r.stdout == ""  # refused before compiling and running


def test_unwritable_profile_path_is_one_line(tmp_path, capsys):
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # root may write in a read-only folder
        if not os.path.isdir("/proc/self"):
            pytest.skip("root, and no /proc/self to stand for a folder nobody may write in")
        ro = Path("/proc/self")
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
    try:
        assert main(["run", str(MVT), "--param", "m=8", "--param", "n=8",
                     "--profile", str(ro / "t.json")]) == 2
    finally:
        if ro != Path("/proc/self"):
            ro.chmod(0o700)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith("not writable")


@needs_cl
def test_standalone_driver_writes_a_timeline(tmp_path):
    assert main(["compile", str(ROOT / "polybench" / "heat2d.c"), "-o", str(tmp_path)]) == 0
    prof = tmp_path / "t.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT), BBMM_EDGE="1")  # split even tiny tiles
    r = subprocess.run([sys.executable, str(tmp_path / "heat2d_host.py"), "--devices", "2",
                        "--param", "tsteps=2", "--param", "n=16", "--no-progress",
                        "--profile", str(prof), "--json", str(tmp_path / "r.json")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    check_trace(json.loads(prof.read_text()))
    doc = pf.load(str(prof))
    assert [d["name"] for d in doc["devices"]] == ["cl0", "cl1"]
    # 2 steps of 2 nests, one tile per device each; a tile whose flow-out row the other
    # device holds runs as two launches, that row first ($BBMM_EDGE)
    split = json.loads((tmp_path / "r.json").read_text())["edge_first_tiles"]
    assert split > 0
    assert sum(d["summary"]["count"]["kernel"] for d in doc["devices"]) == 2 * 4 + split


@needs_cl
def test_a_middle_tiles_two_ends_are_one_kernel_in_the_timeline(tmp_path, monkeypatch):
    """heat2d on three devices with every tile split (``BBMM_EDGE=1``): the middle device's
    kernels that run both ends of its tile carry the two ranges of rows, and the trace
    names them with both."""
    monkeypatch.setenv("BBMM_EDGE", "1")
    prof, rep = tmp_path / "timeline.json", tmp_path / "run.json"
    argv = ["run", str(ROOT / "polybench" / "heat2d.c"), "--param", "n=30", "--param",
            "tsteps=3", "--devices", "3", "--check", "--no-progress", "--json", str(rep),
            "--profile", str(prof)]
    assert main(argv) == 0
    assert json.loads(rep.read_text())["check"] == "pass"
    doc = pf.load(str(prof))
    ends = [c for c in doc["devices"][1]["commands"]
            if c["kind"] == "kernel" and len((c.get("what") or {}).get("rows") or ()) == 4]
    assert ends
    for c in ends:
        r = c["what"]["rows"]
        assert r[0] <= r[1] < r[2] - 1 and r[2] <= r[3]
        assert pf.event_name(c).endswith(f"rows {r[0]}..{r[1]}, {r[2]}..{r[3]}")
    check_trace(json.loads(prof.read_text()))

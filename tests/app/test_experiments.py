"""The paper-experiment scripts (``scripts/exp_*.py``) at their tiniest settings.

Each script's ``main`` runs on one or two programs at the CI sizes on 1-2 logical
OpenCL devices (PoCL's CPU device is enough) into ``tmp_path``; the tests check that
the CSV, JSON and PNG exist and that the figures are sane (convex >= disjoint >= exact
footprint, block >= exact >= minimum coherence, ...). They are marked ``device`` and
skipped, with the reason, only when there is no OpenCL device. The exact-counting
helpers (``expcommon.Instances``) are checked without OpenCL. The whole file takes
well under a minute once PoCL has its kernels cached (a first run builds them).
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import expcommon as ec  # scripts/ is on the import path (pyproject.toml)
from support.needs import needs_cl, needs_shm
from support.paths import POLYBENCH, ROOT

COMMON = ["--sizes", "tiny", "--repeat", "1", "--no-progress"]


def _outputs(out: Path, exp: str) -> tuple[list[dict[str, str]], dict]:
    for ext in ("csv", "json", "png"):
        p = out / f"{exp}.{ext}"
        assert p.exists() and p.stat().st_size > 0, p
    assert (out / f"{exp}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(out / f"{exp}.csv") as f:
        rows = list(csv.DictReader(f))
    doc = json.loads((out / f"{exp}.json").read_text())
    assert doc["meta"]["experiment"] == exp
    assert len(doc["rows"]) == len(rows) > 0
    return rows, doc


def _f(x: str) -> float:
    return float(x)


# {{{ exact counting, no OpenCL


def test_instances_floyd_footprint_and_min_coherence():
    n, ndev = 16, 2
    prog, mod = ec.compiled("floyd")
    tile = mod.default_tile({"n": n}, ndev)
    inst = ec.Instances(prog, {"n": n}, ndev, tile)
    assert inst.n_instances == n ** 3
    # a device reads its n/2 rows plus row k: (n/2 + 1) rows when k is another's row
    assert inst.peak_footprint() == [(n // 2 + 1) * n * 4] * ndev
    mins = inst.min_coherence()
    assert sorted(mins) == list(range(n))
    # row k+1 (written in iteration k) is read by the other device in iteration k+1
    assert all(mins[k] == n * 4 for k in range(n - 1))
    assert mins[n - 1] == 0
    one = ec.Instances(prog, {"n": n}, 1, mod.default_tile({"n": n}, 1))
    assert sum(one.min_coherence().values()) == 0
    assert one.peak_footprint() == [n * n * 4]


def test_instances_heat2d_min_coherence_is_the_halo():
    n, ndev = 12, 2
    prog, mod = ec.compiled("heat2d")
    params = {"tsteps": 3, "n": n}
    inst = ec.Instances(prog, params, ndev, mod.default_tile(params, ndev))
    mins = inst.min_coherence()
    # per time step: the boundary rows of B (nest 0) and of A (nest 1) cross, one
    # interior row each way: 4 rows of n-2 elements; the last step sends only B's
    halo = 2 * (n - 2) * 4
    assert [mins[t] for t in range(3)] == [2 * halo, 2 * halo, halo]


def test_narrow_nest_that_runs_once_is_spread_over_every_device():
    """mvt with m = 2n: the product with A's columns spans half the global grid. Cut by
    the grid it would run on device 0 alone (all of A read in there, device 1 idle); cut
    by its own range each device gets half of its columns. The runtime (generated
    driver on dry devices) and the exact counting agree on that."""
    import bench_host
    params = {"m": 96, "n": 48}
    _, rt = bench_host.measure("mvt", params, 2, 1, None)
    h2d = [d.h2d_bytes for d in rt.stats.devices]
    peak = [d.peak_bytes for d in rt.stats.devices]
    assert h2d[0] == h2d[1] and peak[0] == peak[1]
    prog, mod = ec.compiled("mvt")
    inst = ec.Instances(prog, params, 2, mod.default_tile(params, 2))
    fp = inst.peak_footprint()
    assert fp[0] == fp[1]


def test_once_grid_covers_the_nest_and_spreads_it():
    from bbmm.hostlib import device_of, once_grid, once_tiles
    for lo, hi, size, ntiles, ndev in [(0, 47, 48, 2, 2), (0, 40959, 2048, 40, 2),
                                       (1, 6, 8, 4, 4), (0, 99, 10, 10, 3), (5, 5, 4, 3, 2)]:
        tiles = once_tiles(lo, hi, size, ntiles, ndev)
        covered = [i for _, lb, ub, _ in tiles for i in range(max(lb, lo), min(ub, hi) + 1)]
        assert covered == list(range(lo, hi + 1))           # each iteration exactly once
        assert all(ub - lb + 1 <= size for _, lb, ub, _ in tiles)
        devs = {d for *_, d in tiles}
        assert len(devs) >= min(ndev, len(tiles))
        if once_grid(lo, hi, size, ntiles, ndev) == (0, size, ntiles):  # the global grid
            assert all(d == device_of(t, ntiles, ndev) and lb == t * size
                       for t, lb, _, d in tiles)
    # mvt's column product at the 5x-cap size on two devices: 20 tiles, 10 on each
    tiles = once_tiles(0, 40959, 2048, 40, 2)
    assert [d for *_, d in tiles] == [0] * 10 + [1] * 10


def test_scaled_params_and_ntiles():
    assert ec.scaled_params("floyd", {"n": 100}, 4) == {"n": 200}
    assert ec.scaled_params("heat3d", {"tsteps": 3, "n": 10}, 8) == {"tsteps": 3, "n": 20}
    assert ec.scaled_params("mvt", {"m": 80, "n": 48}, 2) == {"m": 160, "n": 48}
    prog, _ = ec.compiled("floyd")
    assert ec.ntiles_of(prog, {"n": 64}, 32) == 2
    assert ec.ntiles_of(prog, {"n": 65}, 32) == 3

# }}}


# {{{ the scripts


@pytest.mark.device
@needs_cl
def test_table4(tmp_path):
    import exp_table4
    assert exp_table4.main(["--programs", "floyd,mvt", "--devices", "2", "--check",
                            "--out", str(tmp_path), *COMMON]) == 0
    rows, _doc = _outputs(tmp_path, "table4")
    by = {r["program"]: r for r in rows}
    assert by["floyd"]["A"] == "1" and by["floyd"]["B"] == "2"
    assert by["mvt"]["B"] == "2"
    # floyd's row k lies inside its tile's box (reused); mvt's column block reuses the part
    # of A its row block holds since boxes are split around resident copies
    assert by["floyd"]["E"] == "yes" and by["mvt"]["E"] in ("yes", "no")
    for r in rows:
        assert 0 <= _f(r["F_percent"]) <= 100
        assert 0 <= _f(r["F_nocopy_percent"]) <= _f(r["F_percent"]) + 1e-9
        assert int(r["D_resident"]) >= 1 and int(r["D_tile"]) >= 1
        assert r["check"] == "pass"


@pytest.mark.device
@needs_cl
def test_datascaling(tmp_path):
    import exp_datascaling
    assert exp_datascaling.main(["--programs", "floyd,blackscholes", "--devices", "1,2",
                                 "--out", str(tmp_path), *COMMON]) == 0
    rows, doc = _outputs(tmp_path, "datascaling")
    by = {(r["program"], int(r["ndev"])): r for r in rows}
    assert by[("floyd", 1)]["params"] == "n=64" and by[("floyd", 2)]["params"] == "n=91"
    assert by[("blackscholes", 2)]["params"] == "n=8192"
    assert _f(by[("floyd", 1)]["speedup_per_iter"]) == pytest.approx(1.0)
    assert by[("floyd", 2)]["per"] == "iteration" and by[("blackscholes", 2)]["per"] == "run"
    for r in rows:
        assert _f(r["speedup_per_iter"]) > 0
    assert "2" in doc["geomean"]


@pytest.mark.device
@needs_cl
def test_datascaling_steady(tmp_path, capsys):
    """--steady EXTRA: a time-stepped program gets a steady time per step from a run EXTRA
    steps longer; a program without time steps gets none."""
    import exp_datascaling
    assert exp_datascaling.main(["--programs", "heat2d,mvt", "--devices", "1,2", "--steady", "6",
                                 "--out", str(tmp_path), *COMMON]) == 0
    assert "steady t(1)/t(N)" in capsys.readouterr().out
    rows, _doc = _outputs(tmp_path, "datascaling")
    by = {(r["program"], int(r["ndev"])): r for r in rows}
    for nd in (1, 2):
        assert _f(by[("heat2d", nd)]["steady_s"]) != 0
        assert by[("mvt", nd)]["steady_s"] in ("", None)
    assert _f(by[("heat2d", 1)]["speedup_steady"]) == pytest.approx(1.0)
    with pytest.raises(SystemExit):
        exp_datascaling.main(["--steady", "-1", "--out", str(tmp_path)])


@pytest.mark.device
@needs_cl
def test_allocation(tmp_path):
    import exp_allocation
    assert exp_allocation.main(["--programs", "floyd,heat2d", "--devices", "2", "--check",
                                "--out", str(tmp_path), "--sizes", "tiny",
                                "--no-progress"]) == 0
    rows, _doc = _outputs(tmp_path, "allocation")
    for r in rows:
        exact, du, dh = _f(r["exact_pct"]), _f(r["disjoint_union_pct"]), _f(r["disjoint_held_pct"])
        cu, ch = _f(r["convex_union_pct"]), _f(r["convex_held_pct"])
        assert 0 < exact <= du + 1e-9
        assert du <= cu + 1e-9
        assert cu <= 100 + 1e-9
        assert dh >= du - 1e-9 and ch >= cu - 1e-9
        assert r["disjoint_check"] == "pass" and r["convex_check"] == "pass"
    floyd = next(r for r in rows if r["program"] == "floyd")
    assert _f(floyd["exact_pct"]) == pytest.approx(100 * 33 / 64)
    assert _f(floyd["convex_union_pct"]) == pytest.approx(100.0)   # the hull: whole array


@pytest.mark.device
@needs_cl
def test_split(tmp_path):
    import exp_split
    assert exp_split.main(["--programs", "heat2d,floyd", "--devices", "2", "--check",
                           "--out", str(tmp_path), *COMMON]) == 0
    rows, _doc = _outputs(tmp_path, "split")
    by = {r["program"]: r for r in rows}
    assert by["floyd"]["how"] == "split_all vs normal"
    assert by["heat2d"]["how"] == "disjoint vs convex"
    assert int(by["heat2d"]["nosplit_split_accesses"]) == 0      # convex: never split
    for r in rows:
        assert _f(r["perf_compute"]) > 0 and _f(r["perf_wall"]) > 0
        assert r["split_check"] == "pass" and r["nosplit_check"] == "pass"


@pytest.mark.device
@needs_cl
def test_reuse(tmp_path):
    import exp_reuse
    assert exp_reuse.main(["--programs", "heat2d,floyd", "--devices", "2", "--check",
                           "--out", str(tmp_path), *COMMON]) == 0
    rows, _doc = _outputs(tmp_path, "reuse")
    for r in rows:
        assert _f(r["speedup"]) > 0
        assert int(r["off_h2d_bytes"]) >= int(r["on_h2d_bytes"])
        assert int(r["off_boxes_present"]) == 0 and int(r["on_boxes_present"]) > 0
        assert r["on_check"] == "pass" and r["off_check"] == "pass"


@pytest.mark.device
@needs_cl
def test_coherence(tmp_path):
    import exp_coherence
    assert exp_coherence.main(["--programs", "floyd,heat2d", "--devices", "2", "--check",
                               "--out", str(tmp_path), "--sizes", "tiny",
                               "--no-progress"]) == 0
    rows, doc = _outputs(tmp_path, "coherence")
    for r in rows:
        block, exact, mn = (_f(r["block_total_bytes"]), _f(r["exact_total_bytes"]),
                            _f(r["minimum_bytes"]))
        assert block >= exact >= mn > 0
        assert r["exact_check"] == "pass" and r["block_check"] == "pass"
    floyd = next(r for r in rows if r["program"] == "floyd")
    assert _f(floyd["minimum_bytes"]) == 63 * 64 * 4               # one row per iteration
    assert len(doc["per_iteration"]["floyd/2"]["minimum"]) == 64


@pytest.mark.device
@needs_cl
def test_boxinout(tmp_path):
    import exp_boxinout
    assert exp_boxinout.main(["--programs", "blackscholes,mvt", "--devices", "1",
                              "--device-mem", "64KiB", "--factors", "0.5,3", "--check",
                              "--out", str(tmp_path), "--repeat", "1", "--no-progress"]) == 0
    rows, _doc = _outputs(tmp_path, "boxinout")
    for r in rows:
        assert not r["error"], r["error"]
        assert r["check"] == "pass"
        assert _f(r["throughput"]) > 0
        if _f(r["size_over_cap"]) > 1.5:
            assert int(r["evictions"]) > 0
    bs = [r for r in rows if r["program"] == "blackscholes"]
    assert int(min(bs, key=lambda r: _f(r["factor"]))["evictions"]) == 0

# }}}


def test_plot_results_redraws_gpu_results(tmp_path):
    """The committed GPU result files (made with --no-plot) plot here, one PNG each."""
    import shutil

    import plot_results
    src = ROOT / "results" / "h200x2-2026-11-22"
    for name in ("compare_paper.json", "datascaling.json", "boxinout.json", "reuse.json",
                 "split.json"):
        shutil.copy(src / name, tmp_path / name)
    (tmp_path / "pool.json").write_text("{}")  # not a plotted kind: ignored
    assert plot_results.main([str(tmp_path)]) == 0
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert pngs == ["boxinout.png", "compare_paper.png", "datascaling.png", "reuse.png",
                    "split.png"]
    for p in tmp_path.glob("*.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert plot_results.main([str(empty)]) == 1


def test_plot_results_knows_allocation_table4_and_coherence(tmp_path, capsys):
    """The result files of exp_allocation, exp_table4 and exp_coherence plot with the
    scripts' own figure functions."""
    import shutil

    import plot_results
    pytest.importorskip("matplotlib")
    src = ROOT / "results" / "pocl-cpu-2026-11-22"
    for name in ("allocation.json", "table4.json", "coherence.json"):
        shutil.copy(src / name, tmp_path / name)
    shutil.copy(ROOT / "results" / "h200x2-2026-11-25" / "table4.json",
                tmp_path / "table4_h200.json")
    assert plot_results.main([str(tmp_path)]) == 0
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert pngs == ["allocation.png", "coherence.png", "table4.png", "table4_h200.png"]
    for p in tmp_path.glob("*.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert capsys.readouterr().out.count("wrote ") == 4


def test_no_matplotlib_skips_the_plot_with_one_note(tmp_path, monkeypatch, capsys):
    """Without matplotlib an experiment still writes its CSV and JSON and says once that
    the plot was skipped; plot_results.py says so and draws nothing."""
    import argparse
    import shutil

    import exp_coherence
    import plot_results
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError):
        ec.plt()
    rows = [{"program": "floyd", "ndev": 1, "block_total_per_iter": 10.0,
             "exact_total_per_iter": 5.0, "minimum_per_iter": 4.0}]
    args = argparse.Namespace(no_plot=False, sizes="tiny", platform=None)
    paths = ec.finish("coherence", args, tmp_path, rows, "the table",
                      lambda path: exp_coherence.draw(rows, path, note="n"))
    assert sorted(paths) == ["csv", "json"]
    assert (tmp_path / "coherence.csv").read_text().startswith("program,ndev,")
    assert json.loads((tmp_path / "coherence.json").read_text())["rows"] == rows
    assert not (tmp_path / "coherence.png").exists()
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("coherence: no matplotlib here: plot skipped")
    assert "the table" in captured.out and "coherence.png" not in captured.out
    # an ImportError of something else is not taken for a missing matplotlib
    def broken(path):
        import bbmm_no_such_module  # noqa: F401
    with pytest.raises(ImportError):
        ec.try_plot(broken, tmp_path / "x.png", "x")
    # plot_results.py: one note, exit 1, no figure
    folder = tmp_path / "res"
    folder.mkdir()
    shutil.copy(ROOT / "results" / "pocl-cpu-2026-11-22" / "table4.json", folder)
    assert plot_results.main([str(folder)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("plot_results: no matplotlib here") and err.count("\n") == 1
    assert not list(folder.glob("*.png"))


def test_one_progress_bar(monkeypatch, capsys):
    """The scripts draw hostlib's progress bar (generated drivers draw it too)."""
    from bbmm.hostlib import Progress

    assert ec.Progress is Progress and not hasattr(ec, "Bar")
    bar = Progress(2, "exp", enabled=True)
    bar.show("floyd x1")
    bar.step(what="floyd x1")
    bar.step(what="mvt x1")
    bar.close()
    err = capsys.readouterr().err
    assert "exp [" in err and "2/2" in err and err.rstrip().endswith("mvt x1")
    quiet = Progress(2, "exp", enabled=False)
    quiet.step(what="x")
    assert quiet.done == 1 and capsys.readouterr().err == ""


def test_floor_bytes_are_the_exact_minimum():
    """bench_floor's per-device bytes: floyd reads and writes its row block and moves row
    k; heat2d's two nests each read one array and write the other, with halo rows."""
    import bench_floor as bf
    assert bf.floor_bytes("floyd", 100, 1) == (2 * 4 * 100 * 100, 0)
    assert bf.floor_bytes("floyd", 100, 3) == (2 * 4 * 100 * 34, 400)
    assert bf.floor_bytes("heat2d", 64, 2) == (4 * 4 * 64 * 32, 4 * 4 * 64)
    assert bf.floor_bytes("heat2d", 64, 4)[1] == 2 * 4 * 4 * 64


@pytest.mark.parametrize("n, d", [(7, 1), (10, 2), (13, 4), (9, 3)])
def test_lu_floor_bytes_count_each_devices_points(n, d):
    """LU's floor, against the points of its two nests counted one by one: at each ``k``
    the device whose rows (bbmm's block distribution, one tile per device) hold the most
    points of the scaling of row ``k`` and the trailing update, 8 bytes each (read and
    written), and row ``k`` moved once over several devices; the mean over ``k >= 1``."""
    import bench_floor as bf
    from bbmm.grid import device_of
    size = -(-n // d)
    mem = coh = 0
    for k in range(1, n):
        points = [0] * d
        for j in range(k + 1, n):
            points[device_of(k // size, d, d)] += 1
            for i in range(k + 1, n):
                points[device_of(i // size, d, d)] += 1
        mem += 8 * max(points)
        coh += 4 * (n - k - 1) * (d > 1)
    assert bf.floor_bytes("lu", n, d) == (mem // (n - 1), coh // (n - 1))


@needs_cl
def test_bench_floor(tmp_path, capsys):
    import bench_floor as bf
    assert bf.main(["--floyd", "32", "--heat2d", "32:2", "--lu", "24", "--devices", "1,2",
                    "--bw-bytes", str(1 << 20), "--extra-steps", "2", "--repeat", "1", "--json", str(tmp_path / "f.json")]) == 0
    doc = json.loads((tmp_path / "f.json").read_text())
    assert {(r["program"], r["devices"]) for r in doc["rows"]} == {
        (p, d) for p in ("floyd", "heat2d", "lu") for d in (1, 2)}
    assert all(r["floor_s"] > 0 for r in doc["rows"])
    for r in doc["rows"]:  # LU has no hand-written baseline
        # a whole loop over n (heat2d's is the difference of two runs: noise at this size)
        assert r["program"] == "heat2d" or r["bbmm_s_per_iter"] > 0
        assert (r["baseline_loop_s_per_iter"] is None) == (r["program"] == "lu")
        assert r["program"] == "lu" or r["baseline_loop_s_per_iter"] > 0
    out = capsys.readouterr().out
    assert doc["bandwidth"]["d2d"] > 0 and "bbmm/floor" in out
    assert [line.split()[-1] for line in out.splitlines() if line.startswith("lu ")] == ["-", "-"]


@pytest.mark.parametrize("procs", [1, 2])
def test_bench_device_ops(procs, tmp_path, capsys):
    """What a device operation costs the host, in one process or in several at once
    (``--procs``): every operation timed in each, the median over them in the JSON."""
    import bench_device_ops as bo
    out = tmp_path / "ops.json"
    assert bo.main(["--n", "128", "--repeat", "40", "--batch", "20", "--procs", str(procs),
                    "--spin", "4", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["procs"] == procs and len(doc["per_process"]) == procs
    assert {"launch bbmm", "h2d bbmm pinned", "launch pyopencl, enqueue only",
            "behind a busy kernel: a row copy in", "then a row copy out"} <= set(doc["us"])
    assert sum(k.startswith("copy out behind a short kernel, seen done by")
               for k in doc["us"]) == 3
    if "launch ctypes, no event" in doc["us"]:  # the OpenCL library found: the wide kernel
        assert {k for k in doc["us"] if "8 buffers" in k} == {
            f"launch {how}, 8 buffers ({which}){rest}"
            for which in ("one buffer", "each its own")
            for how, rest in (("ctypes, no event", " and 62 scalars"),
                              ("bbmm", ", one scalar changed"))} | {
            "launch ctypes, no event, 8 buffers and the scalars in one struct, set anew"}
    assert all(v > 0 for per in doc["per_process"] for v in per.values())
    printed = capsys.readouterr().out
    assert printed.count("# host time per operation on") == procs
    assert ("# the median over the 2 processes" in printed) == (procs == 2)


@needs_cl
def test_bench_hostmem(tmp_path, capsys):
    """Kernels on page-locked host arrays: each kind of memory is found in place or not,
    with a time per row; a CPU device shares the host's memory, so there every launch
    reads the host's newest values and the writes land in its array."""
    import bench_hostmem as bh
    out = tmp_path / "hostmem.json"
    assert bh.main(["--n", "300", "--rows", "8", "--repeat", "5", "--wait", "3",
                    "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    for kind in ("shared", "alloc"):
        fresh, _, trials = doc[f"{kind}: reads in place (16 launches)"].partition(" of ")
        assert trials == "16" and 0 <= int(fresh) <= 16
        assert isinstance(doc[f"{kind}: writes in place"], bool)
        assert doc[f"{kind}: us per row read"] > 0 and doc[f"{kind}: us per row written"] > 0
    assert doc["behind a user event: us from setting it to the kernel's end"] > 0
    # behind the gated launch: times until the first enqueue that never returned
    queued = [doc[f"behind an unset user event, {s}: us to enqueue"] for s in bh.STEPS]
    assert isinstance(queued[0], float)   # a launch behind an unset event never waits
    reached = [v for v in queued if not isinstance(v, str)]
    assert queued[len(reached):] == (["blocked"] + ["not reached"] * 4)[:len(queued) - len(reached)]
    from bbmm.devices.opencl import make_devices
    if not make_devices(1)[0].is_gpu:
        assert doc["shared: reads in place (16 launches)"] == "16 of 16"
        assert doc["shared: writes in place"] is True
    assert "behind a user event: us to enqueue" in capsys.readouterr().out


@needs_cl
def test_bench_nest(tmp_path, capsys):
    """A stencil nest in each order: every order finishes (none blocks the host), every
    kernel read the halo the exchange wrote for it, and each reports its time per nest."""
    import bench_nest as bn
    out = tmp_path / "nest.json"
    assert bn.main(["--n", "512", "--rows", "66", "--nests", "40", "--exchange-us", "0,20",
                    "--wait", "60", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    rows = doc["results"]
    assert [(r["order"], r["exchange_us"]) for r in rows] == [
        (o, s) for s in (0.0, 20.0) for o in bn.ORDERS]
    for r in rows:
        assert "result" not in r, r          # neither blocked nor failed
        assert r["stale"] == 0
        assert r["us per nest"] > 0 and r["kernel us"] > 0
        assert ("set us" in r) == (r["order"] != "in turn")
    assert capsys.readouterr().out.count("us per nest") == len(rows)


def test_bench_floor_runs_one_device_in_one_process(tmp_path):
    """--procs 2 cannot split one device: its row runs in one process instead of being
    left out (the speedups are set against it)."""
    import bench_floor as bf
    assert bf.main(["--floyd", "16", "--heat2d", "0", "--devices", "1,2", "--procs", "2",
                    "--bw-bytes", str(1 << 20), "--repeat", "1",
                    "--json", str(tmp_path / "f.json")]) == 0
    doc = json.loads((tmp_path / "f.json").read_text())
    assert [(r["devices"], r["procs"]) for r in doc["rows"]] == [(1, "1"), (2, "2")]


def test_bench_floor_skips_a_program_given_0(tmp_path):
    import bench_floor as bf
    assert bf.main(["--floyd", "24", "--heat2d", "0", "--devices", "1", "--bw-bytes",
                    str(1 << 20), "--repeat", "1", "--json", str(tmp_path / "f.json")]) == 0
    doc = json.loads((tmp_path / "f.json").read_text())
    assert [r["program"] for r in doc["rows"]] == ["floyd"]


def test_bench_floor_measures_kernel_shapes_side_by_side(tmp_path, capsys):
    """--coarsen: one bbmm row per points-per-work-item shape, the baseline measured once;
    a malformed list is refused."""
    import bench_floor as bf
    assert bf.main(["--floyd", "0", "--heat2d", "24:2", "--devices", "1", "--bw-bytes",
                    str(1 << 20), "--extra-steps", "2", "--repeat", "1",
                    "--coarsen", "2x1,1x4", "--json", str(tmp_path / "f.json")]) == 0
    rows = json.loads((tmp_path / "f.json").read_text())["rows"]
    assert [r["coarsen"] for r in rows] == ["2x1", "1x4"]
    assert rows[0]["baseline_loop_s_per_iter"] == rows[1]["baseline_loop_s_per_iter"]
    with pytest.raises(SystemExit):
        bf.main(["--coarsen", "2by1"])
    assert "--coarsen '2by1'" in capsys.readouterr().err


def test_bench_host_on_dry_devices(tmp_path, capsys):
    """Host time per serial iteration without a GPU: the runtime runs whole, nothing moves;
    heat2d's steps repeat (replayed), floyd's only up to a shift, away from the ends of
    its blocks of rows (those within GAP of the block end at row 32 never replay)."""
    from bbmm.ordertype import GAP
    import bench_host as bh
    assert bh.main(["--programs", "floyd,heat2d", "--devices", "1,2", "--sizes", "tiny",
                    "--param", "heat2d:tsteps=8", "--repeat", "1",
                    "--json", str(tmp_path / "h.json")]) == 0
    rows = {(r["program"], r["devices"]): r for r in
            json.loads((tmp_path / "h.json").read_text())["rows"]}
    assert set(rows) == {(p, d) for p in ("floyd", "heat2d") for d in (1, 2)}
    assert rows[("floyd", 2)]["serial_iters"] == 64
    assert 0 < rows[("floyd", 2)]["replayed"] <= 64 - 2 * GAP
    assert rows[("heat2d", 2)]["serial_iters"] == 8 and rows[("heat2d", 2)]["replayed"] == 4
    for r in rows.values():
        assert r["ms_per_iter"] > 0 and r["launches"] == r["tiles"]
    assert "us/tile" in capsys.readouterr().out


def test_bench_host_steady_state_is_the_difference_of_two_runs(tmp_path, capsys):
    """``--steady PROG:NAME=A,B``: the figures of the run at B less those of the run at A,
    per serial iteration and per tile (one process and a process of two); a difference
    that is not positive (tiny runs: timing noise) is flagged, not hidden; a spec that is
    not NAME=A,B with A < B, or names no parameter, is refused."""
    import bench_host as bh
    assert bh.main(["--programs", "heat2d", "--devices", "2", "--procs", "1,2",
                    "--sizes", "tiny", "--steady", "heat2d:tsteps=6,16", "--repeat", "1",
                    "--json", str(tmp_path / "s.json")]) == 0
    rows = json.loads((tmp_path / "s.json").read_text())["rows"]
    assert [r["ranks"] for r in rows] == [1, 2]
    for r in rows:
        assert r["steady"] and r["serial_iters"] == 10 and "tsteps=6" in r["params"]
        assert r["tiles"] == 10 * 2 * 2  # two phases of two tiles per step
        assert abs(r["ms_per_iter"] - 1e3 * r["wall_s"] / 10) < 1e-9
        assert r["below_noise"] == (r["wall_s"] <= 0)
        assert abs(r["us_per_tile"] - 1e6 * r["wall_s"] * r["ranks"] / r["tiles"]) < 1e-6
    short = {"serial_iters": 4, "tiles": 8, "wall_s": 1.0, "params": "a", "program": "p"}
    long = {"serial_iters": 14, "tiles": 28, "wall_s": 2.0, "params": "b", "program": "p"}
    row = bh.difference(short, long)
    assert (row["serial_iters"], row["tiles"], row["ms_per_iter"]) == (10, 20, 100.0)
    assert not row["below_noise"] and row["loop_ms_per_iter"] is None
    # the loops alone (without the first iteration and the final write-out)
    row = bh.difference(short | {"loop_s": 0.5, "loop_iters": 3},
                        long | {"loop_s": 1.0, "loop_iters": 13})
    assert (row["loop_iters"], row["loop_ms_per_iter"]) == (10, 50.0)
    capsys.readouterr()
    row = bh.difference(short, short | {"serial_iters": 20, "tiles": 40, "wall_s": 0.9})
    assert row["below_noise"] and row["ms_per_iter"] < 0
    assert "below the timing noise" in capsys.readouterr().err
    for bad in ("heat2d:tsteps=16,6", "heat2d:tsteps=6", "heat2d:nosuch=1,2"):
        with pytest.raises(SystemExit):
            bh.main(["--programs", "heat2d", "--devices", "1", "--sizes", "tiny",
                     "--steady", bad, "--repeat", "1"])


def test_dry_device_with_lag_trails_the_host():
    """``lag``: each command gives an event that is done only ``lag`` commands later, or
    once waited for (with every command before it: one in-order queue); ``finish`` ends
    them all. Without it every command is done at once and gives none."""
    import numpy as np

    from bbmm.box import Box
    from bbmm.devices import DryDevice
    d = DryDevice(0, lag=2)
    a = d.alloc(1 << 20)
    host = np.zeros((4, 4), np.float32)
    box = Box((0, 0), (3, 3))
    e1 = d.write_rect(a, box, box, host, blocking=False)
    e2 = d.launch("k", (4,), None, [])
    assert d.last is e2 and not d.done(e1) and not d.done(e2)
    e3 = d.read_rect(a, box, box, host, blocking=False)
    assert d.done(e1) and not d.done(e2) and not d.done(e3)
    d.wait(e3)
    assert d.done(e2) and d.done(e3)
    e4 = d.copy_rect(a, box, a, box, box, 4)
    assert not d.done(e4)
    d.finish()
    assert d.done(e4)
    assert DryDevice(1).launch("k", (4,), None, []) is None
    quiet = DryDevice(2, keep_log=False)  # a benchmark's: nothing kept alive per copy
    quiet.write_rect(quiet.alloc(64), box, box, host)
    assert list(quiet.log) == [] and len(d.log) == 3


def test_bench_host_lag_keeps_copies_pending(tmp_path):
    """``--lag N``: a process of four runs Floyd with its copies pending as on a GPU, the
    same tiles and steps as with every copy done at once."""
    import bench_host as bh
    from bbmm.coherence import HostOrder
    longest = []
    after = HostOrder.after

    def spy(self, array, region, device, stores, event, lane=0):
        after(self, array, region, device, stores, event, lane)
        longest.append(len(self.pending.get(array, ())))
    rows = {}
    for lag in (0, 8):
        longest.clear()
        HostOrder.after = spy
        try:
            rows[lag] = bh.measure_ranks("floyd", {"n": 64}, 4, 4, 1, only=1, lag=lag)
        finally:
            HostOrder.after = after
        assert (max(longest, default=0) > 1) == (lag > 0)
    assert rows[0]["tiles"] == rows[8]["tiles"] and rows[0]["serial_iters"] == 64
    with pytest.raises(SystemExit):
        bh.main(["--programs", "floyd", "--devices", "1", "--lag", "-1"])


def test_bench_host_paced_takes_the_slowest_process_per_window():
    """``paced``: per window of iterations the slowest process's time, summed; a process
    slowest in one part of the loop and one slowest in another both count, where the
    slowest whole run would show neither part; the steady state differences it."""
    import bench_host as bh
    w = bh.PACE_WINDOW
    a = [1.0] * w + [3.0] * w   # slow in the second window
    b = [2.0] * w + [1.0] * w   # slow in the first
    got = bh._paced([a, b])
    assert got["paced_iters"] == 2 * w and got["paced_s"] == 2.0 * w + 3.0 * w
    assert got["paced_s"] > max(sum(a), sum(b))
    assert bh._paced([a[:w + 1], b])["paced_iters"] == w + 1  # the shortest run's steps
    assert bh._paced([[], []])["paced_ms_per_iter"] is None
    row = bh.measure_ranks("heat2d", {"n": 32, "tsteps": 6}, 2, 2, 1)
    assert row["paced_iters"] == 5 and row["paced_s"] <= row["wall_s"] * 2
    short = {"serial_iters": 4, "tiles": 8, "wall_s": 1.0, "params": "a", "program": "p",
             "paced_s": 0.2, "paced_iters": 3}
    long = short | {"serial_iters": 14, "tiles": 28, "wall_s": 2.0, "paced_s": 0.7,
                    "paced_iters": 13}
    assert bh.difference(short, long)["paced_ms_per_iter"] == pytest.approx(50.0)


def test_bench_host_together_runs_the_processes_at_once():
    """``--together``: each process of the run measured in a process of its own, all at
    once; the same tiles, iterations and replays as measured one after another."""
    import bench_host as bh
    apart = bh.measure_ranks("heat2d", {"n": 32, "tsteps": 6}, 2, 2, 1)
    both = bh.measure_ranks("heat2d", {"n": 32, "tsteps": 6}, 2, 2, 1, together=True)
    assert both["together"] and not apart["together"]
    for key in ("tiles", "serial_iters", "replayed", "ahead", "paced_iters"):
        assert both[key] == apart[key], key
    assert len(both["per_rank_s"]) == 2 and min(both["per_rank_s"]) > 0


def test_bench_host_shm_exchanges_through_shared_memory():
    """``--together --shm``: the processes exchange through a shared-memory communicator
    as ``bbmm run``'s do, with the same tiles, iterations and replays as through the
    loopback one; ``--shm`` without ``--together`` is refused."""
    import bench_host as bh
    loop = bh.measure_ranks("floyd", {"n": 64}, 2, 2, 1, together=True)
    shared = bh.measure_ranks("floyd", {"n": 64}, 2, 2, 1, together=True, shared=True)
    assert shared["shared"] and not loop["shared"]
    for key in ("tiles", "serial_iters", "replayed", "ahead"):
        assert shared[key] == loop[key], key
    with pytest.raises(SystemExit):
        bh.main(["--programs", "floyd", "--procs", "d", "--shm"])


def test_bench_host_processes_swap_through_kept_buffers():
    """A process of several on dry devices (its peers' messages stood in): the steps
    repeat and are replayed; its swaps pack into one buffer per peer kept between swaps
    (as the shared-memory swap does) and receive zeros."""
    import numpy as np

    import bench_host as bh
    from bbmm.box import Box
    from bbmm.coherence import HostCopy
    from bbmm.messages import Boxes
    row = bh.measure_ranks("heat2d", {"n": 32, "tsteps": 6}, 2, 2, 1)
    assert row["ranks"] == 2 and row["ms_per_iter"] > 0 and row["replayed"] > 0
    assert row["loop_iters"] == 5 and 0 < row["loop_s"] < row["wall_s"]
    a = np.arange(12.0).reshape(3, 4)
    m = Boxes(HostCopy({"a": a}), [("a", Box((1, 0), (1, 3)))])
    comm = bh.LoopbackComm(0, 2, 1)
    comm.swap({1: m}, {})
    kept = comm.bufs[("send", 1)]
    assert kept.view(a.dtype).tolist() == [4.0, 5.0, 6.0, 7.0]
    comm.swap({1: m}, {1: m})
    assert comm.bufs[("send", 1)] is kept and a[1].tolist() == [0.0] * 4


def test_dry_device_keeps_no_data():
    import numpy as np

    from bbmm.box import Box
    from bbmm.devices import DryDevice
    d = DryDevice(0)
    a = d.alloc(1 << 34)                       # 16 GiB: only bookkeeping
    host = np.zeros((4, 4), np.float32)
    assert d.write_rect(a, Box((0, 0), (3, 3)), Box((1, 1), (2, 2)), host) is None
    assert d.log == [("h2d", Box((1, 1), (2, 2)), 16)]
    assert d.kernel("src", "k") == "k" and d.launch("k", (1,), None, []) is None
    assert d.launches == 1


@pytest.mark.device
@needs_cl
def test_schedule_table(tmp_path, capsys):
    """Two PolyBench ports that ``auto`` reschedules and an example program it keeps, at
    the tests' sizes on one device: the CSV has every column, the orders are the ones
    ``bbmm compile`` reports, and both orders pass --check."""
    import exp_schedule
    assert exp_schedule.main(["--programs", "seidel2d,atax,mvt", "--run", "--check",
                              "--markdown", "--no-plot", "--out", str(tmp_path),
                              *COMMON]) == 0
    with open(tmp_path / "schedule.csv") as f:
        rows = list(csv.DictReader(f))
    want = {"kernel", "auto_schedule", "written_parallel", "auto_parallel", "written_bands",
            "auto_bands", "written_one_item", "auto_one_item", "params", "written_s",
            "auto_s", "speedup", "written_check", "auto_check"}
    assert want <= set(rows[0]), want - set(rows[0])
    by = {r["kernel"]: r for r in rows}
    assert by["seidel2d"]["auto_schedule"] == "isl"
    assert by["seidel2d"]["written_parallel"] == "none"
    assert int(by["seidel2d"]["written_one_item"]) == 1
    assert by["seidel2d"]["auto_bands"] == "[c1,c2]" and by["seidel2d"]["params"] == \
        "tsteps=3 n=13"
    assert by["atax"]["auto_schedule"] == "isl"
    assert by["mvt"]["auto_schedule"] == "as-written"
    assert by["mvt"]["written_s"] == by["mvt"]["auto_s"]      # the same program, timed once
    for r in rows:
        assert _f(r["written_s"]) > 0 and _f(r["auto_s"]) > 0
        assert _f(r["speedup"]) == pytest.approx(_f(r["written_s"]) / _f(r["auto_s"]),
                                                 rel=0.01)   # the CSV rounds
        assert r["written_check"] == "pass" and r["auto_check"] == "pass"
    doc = json.loads((tmp_path / "schedule.json").read_text())
    assert doc["meta"]["experiment"] == "schedule" and len(doc["rows"]) == 3
    md = (tmp_path / "schedule.md").read_text().splitlines()
    assert md[0].startswith("| kernel | auto takes |") and len(md) == 2 + 3
    assert "| seidel2d | isl |" in capsys.readouterr().out


@needs_cl
def test_bench_steps_per_step_between_run_lengths(tmp_path, capsys):
    """Time per step between run lengths, one device and two (in one process), and the
    data scaling of two devices on twice the elements."""
    import bench_steps as bs
    out = tmp_path / "s.json"
    assert bs.main(["--sizes", "tiny", "--programs", "heat2d", "--devices", "1,2",
                    "--procs", "1", "--steps", "4,8,12", "--scale", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    rows = {r["devices"]: r for r in doc["rows"]}
    assert set(rows) == {1, 2} and doc["steps"] == [4, 8, 12]
    for r in rows.values():
        assert r["intervals"] == [[4, 8], [8, 12]] and len(r["per_step_s"]) == 2
        assert all(len(w) == 1 and w[0] > 0 for w in r["walls_s"].values())
    # tiny runs are noise: an interval may come out negative, and then has no ratio
    last = rows[1]["per_step_s"][-1]
    assert rows[1]["ratio_to_one"] == (1.0 if last > 0 else None)
    assert rows[2]["ratio_kind"] == "data scaling"
    assert rows[2]["params"]["n"] > rows[1]["params"]["n"]  # twice the elements
    assert "ms/step 4-8" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        bs.main(["--steps", "8,4"])


def test_bench_exchange_moves_the_halos_it_times(tmp_path, capsys):
    """Two and three processes swap strided planes and contiguous rows through shared
    memory; each part of a round is timed, and the busiest rank's bytes are the planes
    it sends (a middle rank sends two)."""
    import bench_exchange as bx
    out = tmp_path / "x.json"
    assert bx.main(["--procs", "2,3", "--shape", "8x6,1x20", "--rounds", "3",
                    "--host", "pageable", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert all(r["moved_right"] and r["direct_messages"] == 0 for r in rows)
    assert [(r["procs"], r["shape"]) for r in rows] == [
        (2, [8, 6]), (3, [8, 6]), (2, [1, 20]), (3, [1, 20])]
    for r in rows:
        plane = 4 * (6 * 4 if r["shape"] == [8, 6] else 20)  # the interior, or the row
        sends = 1 if r["procs"] == 2 else (2 if r["rank"] == 1 else 1)
        assert r["bytes_sent"] == sends * plane
        med = r["median_s"]
        assert med["round"] >= med["transfer"] > 0 and med["d2h"] < med["round"]
    assert "transfer us" in capsys.readouterr().out


@needs_cl
@pytest.mark.parametrize("host,direct", [("shared", "0"), ("shared", "off"), ("pinned", "0")])
@needs_shm
def test_bench_exchange_with_the_runs_host_memory(host, direct, tmp_path):
    """Host arrays as a run over processes keeps them: in shared memory, the planes taken
    straight from the sender's array (``--direct 0``: every message) or through the
    mailboxes; or each process's own pinned buffer. The ghost planes end up holding the
    neighbours' planes either way."""
    import bench_exchange as bx
    out = tmp_path / "x.json"
    assert bx.main(["--procs", "3", "--shape", "8x6", "--rounds", "3", "--host", host,
                    "--direct", direct, "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["moved_right"] and row["host"] == host
    # 3 processes, 4 messages a round, 8 rounds with the warm-up
    assert row["direct_messages"] == (32 if (host, direct) == ("shared", "0") else 0)


def test_host_profile_kinds():
    import host_profile as hp
    shm_py = os.path.join("x", "bbmm", "shm.py")
    assert hp.kind(("~", 0, "<built-in method posix.sched_yield>")) == "waiting"
    assert hp.kind((shm_py, 1, "idle")) == "waiting"
    assert hp.kind(("~", 0, "<method 'wait' of 'pyopencl._cl.Event' objects>")) == "waiting"
    assert hp.kind(("~", 0, "<built-in method pyopencl._cl.enqueue_copy_buffer_rect>")) == "opencl"
    assert hp.kind((os.path.join("c", "drivers", "floyd_1.py"), 3, "nest0_tile")) == "driver"
    assert hp.kind((shm_py, 9, "swap")) == "bbmm"
    # pyopencl's compiled calls count as their wrapper's own time
    assert hp.kind((os.path.join("x", "bbmm", "devices", "cldevice.py"), 9, "launch")) == "opencl"
    assert hp.kind((os.path.join("x", "bbmm", "devices", "kernelargs.py"), 9, "set_changed")) \
        == "opencl"
    assert hp.kind((os.path.join("x", "bbmm", "devices", "base.py"), 9, "alloc")) == "bbmm"
    assert hp.kind(("numpy.py", 1, "copyto")) == "other"


@needs_cl
def test_host_profile_of_a_run_over_processes(tmp_path, capsys):
    """``bbmm run --host-profile DIR`` writes each process's profile, and
    scripts/host_profile.py splits each process's time into kinds that add up."""
    import host_profile as hp
    folder = tmp_path / "prof"
    r = subprocess.run([sys.executable, "-m", "bbmm", "run", str(POLYBENCH / "floyd.c"),
                        "--param", "n=48", "--procs", "2", "--devices", "2", "--no-progress",
                        "--host-profile", str(folder)], capture_output=True, text=True,
                       cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert sorted(p.name for p in folder.iterdir()) == ["rank0.pstats", "rank1.pstats"]
    s = hp.summarize(str(folder / "rank1.pstats"), 5)
    assert abs(sum(s["kinds_s"].values()) - s["total_s"]) < 1e-9 and s["total_s"] > 0
    assert s["kinds_s"]["bbmm"] > 0 and s["kinds_s"]["driver"] > 0
    assert len(s["top"]) == 5 and s["top"][0]["own_s"] >= s["top"][-1]["own_s"]
    assert hp.main([str(folder), "--per", "48", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert out.count("profiled; waiting") == 2 and "us/iter" in out
    assert hp.main([str(tmp_path)]) == 2  # no profiles there


def test_loop_marks_say_where_the_loop_spends_its_time(tmp_path, capsys):
    """The runtime marks every 256th serial iteration on the loop's clock; ``loop_marks.py``
    turns the marks into ms per iteration over parts of the loop, per process."""
    import bench_host as bh
    import loop_marks as lm
    _, rt = bh.measure("floyd", {"n": 600}, 1, 1, None)
    st = rt.stats
    marks = st.as_json()["loop_marks_s"]
    assert st.MARK_EVERY == 256 and len(marks) == (600 - 1) // 256
    assert marks == sorted(marks) and 0 < marks[-1] <= st.loop_s
    # the report's line: the loop's four quarters (the slowest process's over processes)
    from bbmm.stats import pace_line
    assert pace_line([st.as_json()]) is None  # two marks: too short for four quarters
    _, rt = bh.measure("floyd", {"n": 1100}, 1, 1, None)
    line = pace_line([rt.stats.as_json()])
    assert line.startswith("  loop: ms per serial iteration in each quarter: ")
    assert len(line.split(": ")[-1].split()) == 4
    doc = {"kernel": "k", "loop_marks_s": [1.0, 3.0, 4.0, 8.0], "mark_every": 1000}
    other = {"loop_marks_s": [2.0, 3.0, 5.0, 6.0], "mark_every": 1000}
    assert pace_line([doc, other]) == ("  loop: ms per serial iteration in each quarter "
                                       "(the slowest process's): 2.000 2.000 2.000 4.000")
    assert lm.parts(doc, 2) == [1.5, 2.5] and lm.parts(doc, 4) == [1.0, 2.0, 1.0, 4.0]
    assert lm.parts({"loop_marks_s": [2.0], "mark_every": 1000}, 2) == [None, 2.0]
    assert lm.parts({}, 3) == [None] * 3
    ranks = {"kernel": "k", "per_rank": [{"rank": 0, "runtime": doc}, {"rank": 1, "runtime": {}}]}
    assert [who for who, _ in lm.rows(ranks, 2)] == ["rank 0", "rank 1"]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(ranks))
    assert lm.main([str(path), "--parts", "2"]) == 0
    out = capsys.readouterr().out
    assert "rank 0      1.500    2.500" in out and "rank 1          -        -" in out
    assert lm.main([str(tmp_path / "missing.json")]) == 1


def test_bench_cpus_times_each_processor(tmp_path, capsys):
    """Each processor's loop alone, all at once and in groups: a time for every
    processor in each part, and the summary's spread is the slowest over the fastest."""
    import os

    import bench_cpus as bc
    out = tmp_path / "cpus.json"
    assert bc.main(["--group", "2", "--repeat", "1", "--loop", "20000",
                    "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    cpus = {str(c) for c in os.sched_getaffinity(0)}
    for part in ("alone", "all at once", "2 at once"):
        assert set(doc[part]["per_cpu_ms"]) == cpus
        assert doc[part]["spread"] == pytest.approx(doc[part]["max"] / doc[part]["min"])
        assert all(v > 0 for v in doc[part]["per_cpu_ms"].values())
    assert "slowest/fastest" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        bc.main(["--group", "0"])
    # --pairs: the loop on one processor beside a busy loop on each of the others
    first = min(os.sched_getaffinity(0))
    assert bc.main(["--pairs", str(first), "--repeat", "1", "--loop", "20000",
                    "--json", str(out)]) == 0
    pair = json.loads(out.read_text())["pairs"][str(first)]
    assert set(pair["beside_ms"]) == cpus - {str(first)} and pair["alone_ms"] > 0
    assert all(str(o) in pair["beside_ms"] for o in pair["slowed_by"])
    assert f"processor {first}:" in capsys.readouterr().out
    for bad in ("x", "99999"):
        with pytest.raises(SystemExit):
            bc.main(["--pairs", bad])


def test_count_host_twice_runs_a_function_twice_where_bbmm_calls_it(monkeypatch):
    """``count_host.py --twice``: a method, and a module function wherever a bbmm module
    imported it by name, run twice per call and give their result once; a name that is
    no function is refused."""
    import count_host as ch

    from bbmm import ordertype, ownership, shifted
    from bbmm.box import Box

    calls = []
    real_box_of = ordertype.box_of

    def box_of(t, ds):
        calls.append(t)
        return real_box_of(t, ds)

    monkeypatch.setattr(ordertype, "box_of", box_of)
    monkeypatch.setattr(ownership, "_box", box_of)
    monkeypatch.setattr(shifted, "box_of", box_of)
    ch.twice("bbmm.ordertype:box_of")
    t = (1, ((0, 0), (1, 0)))
    for f in (ordertype.box_of, ownership._box, shifted.box_of):
        calls.clear()
        assert f(t, [[3, 7]]) == Box((3,), (7,))
        assert len(calls) == 2
    seen = []
    monkeypatch.setattr(shifted.Chain, "launches",
                        staticmethod(lambda phases: seen.append(phases) or [len(seen)]))
    ch.twice("bbmm.shifted:Chain.launches")
    assert shifted.Chain.launches([]) == [2] and len(seen) == 2
    with pytest.raises(SystemExit):
        ch.twice("bbmm.shifted:NoSuch.next")

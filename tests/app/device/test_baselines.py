"""The hand-written OpenCL baselines (scripts/baselines/) against numpy references.

Each baseline runs on 1, 2 and 3 logical devices (PoCL's CPU in CI) at tiny sizes whose
row counts do not divide evenly: with a context per device (the CPU fallback: host
waits order the devices) and with one shared context (the GPU path: events order the
queues, no host waits in the loop). floyd must match exactly (integer-valued floats),
heat2d and blackscholes within float tolerance. The byte accounting is checked against
the minimum the paper's manual codes move and allocate.
"""
from __future__ import annotations

import numpy as np
import pytest

from baselines import blackscholes, floyd, heat2d  # scripts/ is on the import path
from baselines.common import Team
from support.paths import POLYBENCH

pytestmark = pytest.mark.device

TEAMS = [(1, "separate"), (2, "separate"), (3, "separate"), (2, "shared"), (3, "shared")]
_teams: dict[tuple[int, str], Team] = {}


@pytest.fixture(params=TEAMS, ids=[f"{n}dev-{c}" for n, c in TEAMS])
def team(request):
    key = request.param
    if key not in _teams:  # one team per shape for the whole module: programs build once
        _teams[key] = Team.create(key[0], contexts=key[1])
    return _teams[key]


def teardown_module(module):
    for t in _teams.values():
        t.close()
    _teams.clear()


def _random_graph(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    path = rng.integers(1, 20, size=(n, n)).astype(np.float32)
    path[rng.random((n, n)) < 0.3] = 1.0e6
    np.fill_diagonal(path, 0.0)
    return path


# {{{ floyd

# Worked examples of the byte accounting, by hand (not with the scripts' own row_blocks):
# n rows over D devices cut at floor(n p / D), so 37 rows over 3 devices are 12, 12, 13;
# a row is 4 n bytes; each device holds its block plus one pivot row when D > 1.
#   n = 37 (148 B rows): 37 rows = 5476; 18 + 1, 19 + 1 rows = 2812, 2960;
#                        12 + 1, 12 + 1, 13 + 1 rows = 1924, 1924, 2072
#   n = 29 (116 B rows): 3364; 15, 16 rows = 1740, 1856; 10, 11, 11 rows = 1160, 1276, 1276
#   n = 31 (124 B rows): 3844; 16, 17 rows = 1984, 2108; 11, 11, 12 rows = 1364, 1364, 1488
FLOYD_ALLOC = {
    (37, 1): [5476], (37, 2): [2812, 2960], (37, 3): [1924, 1924, 2072],
    (29, 1): [3364], (29, 2): [1740, 1856], (29, 3): [1160, 1276, 1276],
    (31, 1): [3844], (31, 2): [1984, 2108], (31, 3): [1364, 1364, 1488],
}
# one row out per iteration but the last: 36 x 148, 28 x 116, and 10 x 124 (11 iterations)
FLOYD_FLOWOUT = {37: 5328, 29: 3248, 31: 1240}

@pytest.mark.parametrize("n, iterations, data", [(37, None, "init"), (29, None, "random"),
                                                 (31, 11, "random")])
def test_floyd_matches_numpy(team, n, iterations, data):
    init = floyd.init_floyd(n) if data == "init" else _random_graph(n, n)
    path = init.copy()
    res = floyd.run(team, {"n": n}, {"path": path}, iterations)
    expect = floyd.reference(init.copy(), iterations)
    np.testing.assert_array_equal(path, expect)
    iters = n if iterations is None else iterations
    D = min(len(team), n)
    row = n * 4
    assert res["iterations"] == iters and res["devices"] == len(team)
    # block + one pivot row per device; one row out and D-1 rows in per iteration
    assert res["alloc_bytes"] == FLOYD_ALLOC[n, D]
    assert row == 4 * n
    assert res["flowout_bytes"] == (FLOYD_FLOWOUT[n] if D > 1 else 0)
    # the row goes out of its owner and into the D - 1 others: D rows' bytes
    assert res["coherence_bytes"] == D * res["flowout_bytes"]
    if team.shared:
        assert res["host_waits_in_loop"] == 0
    elif D > 1:  # one per row read, plus any wait for a staging slot still being read
        assert iters - 1 <= res["host_waits_in_loop"] <= 2 * (iters - 1)
    assert res["time_s"] > 0 and res["per_iter_s"] == pytest.approx(res["time_s"] / iters)


def test_floyd_more_devices_than_rows():
    t = _teams.setdefault((3, "separate"), Team.create(3, contexts="separate"))
    init = _random_graph(2, 1)
    path = init.copy()
    res = floyd.run(t, {"n": 2}, {"path": path})
    np.testing.assert_array_equal(path, floyd.reference(init.copy()))
    assert len(res["alloc_bytes"]) == 2

# }}}


# {{{ heat2d

# By hand: the interior rows 1 .. n-2 cut at floor(rows p / D) (21 rows over 3: 7, 7, 7;
# 10 over 3: 3, 3, 4; 7 over 2: 3, 4); each device holds A and B over its rows plus a
# halo row each side, rows of 4 n bytes.
#   n = 23 (92 B rows): 2 x 23 x 92 = 4232; 2 x 12 x 92, 2 x 13 x 92 = 2208, 2392;
#                       2 x 9 x 92 = 1656 each
#   n = 12 (48 B rows): 2 x 12 x 48 = 1152; 2 x 7 x 48 = 672 each; 480, 480, 576
#   n = 9 (36 B rows):  648; 2 x 5 x 36, 2 x 6 x 36 = 360, 432; 288, 288, 360
HEAT2D_ALLOC = {
    (23, 1): [4232], (23, 2): [2208, 2392], (23, 3): [1656, 1656, 1656],
    (12, 1): [1152], (12, 2): [672, 672], (12, 3): [480, 480, 576],
    (9, 1): [648], (9, 2): [360, 432], (9, 3): [288, 288, 360],
}
# a halo row of n - 2 floats each way per boundary per sweep, none after the last:
# n = 23, 3 steps: 5 sweeps x 2 x 21 x 4 = 840 per boundary; n = 12, 1 step: 1 x 2 x 10 x 4
# = 80; n = 9, 0 steps: nothing
HEAT2D_FLOWOUT = {(23, 2): 840, (23, 3): 1680, (12, 2): 80, (12, 3): 160}

@pytest.mark.parametrize("n, tsteps", [(23, 3), (12, 1), (9, 0)])
def test_heat2d_matches_numpy(team, n, tsteps):
    init = heat2d.init_heat2d(n, seed=n)
    arrays = {k: v.copy() for k, v in init.items()}
    res = heat2d.run(team, {"tsteps": tsteps, "n": n}, arrays)
    ref = {k: v.copy() for k, v in init.items()}
    heat2d.reference(ref["A"], ref["B"], tsteps)
    for k in "AB":
        np.testing.assert_allclose(arrays[k], ref[k], rtol=1e-5, atol=1e-6, err_msg=k)
        # the boundary never changes
        np.testing.assert_array_equal(arrays[k][[0, -1], :], init[k][[0, -1], :])
        np.testing.assert_array_equal(arrays[k][:, [0, -1]], init[k][:, [0, -1]])
    D = min(len(team), n - 2)
    # A and B: own rows plus one halo row each side
    assert res["alloc_bytes"] == HEAT2D_ALLOC[n, D]
    assert res["flowout_bytes"] == HEAT2D_FLOWOUT.get((n, D), 0)
    assert res["coherence_bytes"] == 2 * res["flowout_bytes"]
    if team.shared:
        assert res["host_waits_in_loop"] == 0

# }}}


# {{{ blackscholes

# By hand: five float arrays over n rows cut at floor(n p / D): 1001 rows are 500, 501 or
# 333, 334, 334 (x 20 bytes); 7 rows are 3, 4 or 2, 2, 3
BLACKSCHOLES_ALLOC = {
    (1001, 1): [20020], (1001, 2): [10000, 10020], (1001, 3): [6660, 6680, 6680],
    (7, 1): [140], (7, 2): [60, 80], (7, 3): [40, 40, 60],
}
# three inputs in (12 bytes a row), two results out (8 bytes a row)
BLACKSCHOLES_COPIES = {1001: (12012, 8008), 7: (84, 56)}

@pytest.mark.parametrize("n, iterations", [(1001, None), (7, 2)])
def test_blackscholes_matches_numpy(team, n, iterations):
    init = blackscholes.init_blackscholes(n)
    arrays = {k: v.copy() for k, v in init.items()}
    res = blackscholes.run(team, {"n": n, "riskfree": 0.02, "volatility": 0.30}, arrays,
                           iterations)
    ref = {k: v.copy() for k, v in init.items()}
    blackscholes.reference(ref, 0.02, 0.30)
    for k in blackscholes.ARRAYS:
        np.testing.assert_allclose(arrays[k], ref[k], rtol=1e-4, atol=1e-4, err_msg=k)
    for k in blackscholes.INPUTS:
        np.testing.assert_array_equal(arrays[k], init[k])
    # put-call parity: C - P = S - X exp(-rT)
    S, X, T = init["stock_price"], init["option_strike"], init["option_years"]
    parity = S.astype(np.float64) - X * np.exp(-0.02 * T.astype(np.float64))
    np.testing.assert_allclose(arrays["call_result"] - arrays["put_result"], parity,
                               atol=2e-3 * np.maximum(1, np.abs(parity)).max())
    D = min(len(team), n)
    assert res["alloc_bytes"] == BLACKSCHOLES_ALLOC[n, D]
    assert (res["h2d_bytes"], res["d2h_bytes"]) == BLACKSCHOLES_COPIES[n]
    assert res["coherence_bytes"] == 0 and res["host_waits_in_loop"] == 0

# }}}


# {{{ inputs, CLI, bbmm devices

def test_numpy_inits_match_the_c_programs():
    """The baselines' numpy inputs equal bbmm's (init_<kernel> in C, or seeded random)."""
    from bbmm.reference import init_arrays
    from bbmm.codegen.frontend import parse_file

    for prog, params, mine in [
            ("floyd", {"n": 19}, {"path": floyd.init_floyd(19)}),
            ("heat2d", {"tsteps": 2, "n": 13}, heat2d.init_heat2d(13, seed=0)),
            ("blackscholes", {"n": 257}, blackscholes.init_blackscholes(257))]:
        scop = parse_file(POLYBENCH / f"{prog}.c")
        init, _ = init_arrays(scop, params, seed=0)
        assert set(init) == set(mine), prog
        for k in init:
            np.testing.assert_array_equal(mine[k], init[k], err_msg=f"{prog}.{k}")


def test_runs_on_bbmm_devices(make):
    devs = make(2)
    t = Team.from_devices(devs)
    assert len(t) == 2 and t.shared  # make_devices: one context, a queue each
    init = floyd.init_floyd(21)
    path = init.copy()
    floyd.run(devs, {"n": 21}, {"path": path})
    np.testing.assert_array_equal(path, floyd.reference(init.copy()))


@pytest.mark.parametrize("mod, argv", [
    (floyd, ["--n", "40", "--devices", "3", "--check"]),
    (heat2d, ["--n", "30", "--tsteps", "2", "--devices", "2", "--check", "--contexts", "shared"]),
    (blackscholes, ["--n", "999", "--devices", "2", "--check", "--repeat", "2"]),
])
def test_cli_check_passes(mod, argv, capsys, tmp_path):
    out = tmp_path / "r.json"
    assert mod.main(argv + ["--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "check: pass" in text and "per serial iteration" in text
    assert out.exists()

# }}}

# vim: foldmethod=marker


def test_bench_kernels_runs_every_part_and_checks_its_variants(tmp_path, capsys):
    """scripts/bench_kernels.py at a small size: every stencil variant, bbmm's generated
    kernels included, is compared bit for bit with the one-point kernel inside the script
    (it exits otherwise), as is every rectangular copy; the launch, rect and hop parts
    give positive figures."""
    import json

    import bench_kernels as bk

    out = tmp_path / "k.json"
    assert bk.main(["--n", "260", "--strips", "3,8", "--generated", "1x1,2x3",
                    "--repeat", "2", "--launches", "300", "--row", "512", "--hops", "20",
                    "--rows", "40", "--cols", "96", "--widths", "1,7,96",
                    "--json", str(out)]) == 0
    rep = json.loads(out.read_text())
    assert [r["variant"] for r in rep["stencil"]] == [
        "enqueue_copy", "copy-float", "copy-float4", "copy-float4 256x1", "point 256x1",
        "point 32x8", "strip 3", "vec4 3", "strip 8", "vec4 8", "bbmm 1x1", "bbmm 1x1 from 0",
        "bbmm 2x3", "bbmm 2x3 from 0"]
    assert rep["stencil"][0]["x floor"] == 1.0
    assert len(rep["launch"]) == 5 and all(r["us per launch"] > 0 for r in rep["launch"])
    assert len(rep["hop"]) == 2 and all(r["us per hop"] > 0 for r in rep["hop"])
    # each width from pinned and pageable memory (its copy checked inside the script)
    assert [(r["width"], r["host"]) for r in rep["rect"]] == [
        (w, h) for w in (1, 7, 96) for h in ("pinned", "pageable")]
    assert all(r["h2d GB/s"] > 0 and r["d2h GB/s"] > 0 for r in rep["rect"])
    assert "heat2d sweep n=260" in capsys.readouterr().out


# {{{ compare.py

def test_compare_fresh_and_kept(tmp_path, capsys):
    """compare.py times bbmm two ways (fresh devices per run, devices kept) beside the
    baseline; with --check all three results are checked, the kept one after a run that
    reused the pools and kernels of the runs before it."""
    import json

    from baselines import compare
    out = tmp_path / "c.json"
    rc = compare.main(["--programs", "blackscholes,floyd", "--param", "floyd:n=40",
                       "--param", "blackscholes:n=5000", "--devices", "1,2", "--repeat", "2",
                       "--check", "--out", str(out)])
    assert rc == 0
    rows = json.loads(out.read_text())["rows"]
    assert [(r["program"], r["devices"]) for r in rows] == [
        ("blackscholes", 1), ("floyd", 1), ("blackscholes", 2), ("floyd", 2)]
    for r in rows:
        assert r["bbmm_check"] == r["bbmm_kept_check"] == r["baseline_check"] == "pass"
        assert len(r["bbmm_kept_wall_s"]) == 2 and r["bbmm_kept_s_per_iter"] > 0
        assert r["ratio_kept"] == pytest.approx(
            r["baseline_s_per_iter"] / r["bbmm_kept_s_per_iter"])
    assert "base/kept" in capsys.readouterr().out
    csv = (tmp_path / "c.csv").read_text().splitlines()
    assert "ratio_kept" in csv[0].split(",") and len(csv) == 5


def test_compare_keeps_the_rows_of_the_programs_that_ran(tmp_path, monkeypatch, capsys):
    """A program that fails (a header the machine cannot find) is reported and skipped:
    the others' rows are written, the failure is in the JSON, the exit status is 1."""
    import json

    from baselines import compare
    real = compare.compare_one

    def compare_one(prog, *a, **k):
        if prog == "blackscholes":
            raise RuntimeError("bbmm run blackscholes.c failed (exit 1): no math.h")
        return real(prog, *a, **k)

    monkeypatch.setattr(compare, "compare_one", compare_one)
    out = tmp_path / "c.json"
    rc = compare.main(["--programs", "blackscholes,floyd", "--param", "floyd:n=40",
                       "--devices", "1", "--repeat", "1", "--no-kept", "--out", str(out)])
    assert rc == 1
    got = json.loads(out.read_text())
    assert [r["program"] for r in got["rows"]] == ["floyd"]
    assert got["meta"]["failed"] == [{"program": "blackscholes", "devices": 1,
                                      "error": "bbmm run blackscholes.c failed (exit 1): no math.h"}]
    assert "blackscholes n=" in capsys.readouterr().err

# }}}

"""Rows that write the flow-out run first (bbmm.runtime.Runtime._edges, ``$BBMM_EDGE``), and the
compile-time facts it rests on (bbmm.codegen.flow.edge_writers)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bbmm.box import Box
from bbmm.devices import NullDevice
from bbmm.diagnostic import SettingError
from bbmm.config import RuntimeConfig
from bbmm.runtime import EDGE_POINTS, EDGE_POINTS_RANKS, EDGE_PROCESSES, Runtime, Tile, edge_points
from bbmm.codegen.deps import dependences, plan
from bbmm.codegen.flow import edge_writers
from bbmm.codegen.frontend import parse_source
from bbmm.codegen.tiling import tile_plan

from support.analysis import kernel
from support.drivers import jacobi_reference, run_jacobi
from support.paths import POLYBENCH


@pytest.fixture(autouse=True)
def _split_small_tiles(monkeypatch):
    monkeypatch.setenv("BBMM_EDGE", "1")  # the default is off


def make(ndev):
    return [NullDevice(i, cap=1 << 24, arena_size=1 << 16) for i in range(ndev)]


def writers_of(scop):
    pl = plan(scop)
    deps = dependences(scop)
    return [edge_writers(scop, n, t, deps) for n, t in zip(pl.nests, tile_plan(scop, pl))]


# {{{ compile time


TWO = """
void two(int n, float A[n][n], float B[n][n], float C[n][n]) {
  for (int t = 0; t < 4; t++)
    for (int i = 1; i < n - 2; i++)
      for (int j = 0; j < n; j++) {
        A[i + 1][j] = C[i][j];
        B[j][i] = C[i][j] + 1.0f;
      }
}
"""


def test_writers_of_a_stencil_are_its_rows():
    from bbmm.codegen.frontend import parse_file
    heat = parse_file(POLYBENCH / "heat2d.c")
    assert writers_of(heat) == [{"B": (0, 0, 0)}, {"A": (0, 0, 0)}]


def test_writers_follow_the_tiled_iterator_in_any_dimension():
    """A[i + 1][j]: rows one below; B[j][i]: columns."""
    scop = parse_source(TWO, "two.c")
    (w,) = writers_of(scop)
    assert w == {"A": (0, 1, 1), "B": (1, 0, 0)}


def test_no_writers_when_the_tiled_loop_carries_a_dependence():
    """Floyd's i loop is parallel by its pragma only (row k changes inside iteration k):
    two launches one after the other would not be the kernel's concurrent semantics."""
    assert writers_of(kernel("floyd")) == [{}]


def test_no_writers_for_a_write_not_along_the_tiled_iterator():
    src = """
void f(int n, float A[n][n], float B[n]) {
  for (int t = 0; t < 3; t++)
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        A[j][2 * i] = B[i] + t;
}
"""
    assert writers_of(parse_source(src, "f.c")) == [{}]

# }}}

# {{{ run time


@pytest.mark.parametrize("ndev,tile,replay", [(d, t, r) for d in (2, 3, 4) for t in (3, 4, 6, 12)
                                              for r in (True, False)])
def test_edge_first_jacobi_matches_the_reference(ndev, tile, replay):
    n, steps = 26, 5
    rng = np.random.default_rng(5)
    A, B = rng.random((n, n)), rng.random((n, n))
    rt = Runtime(make(ndev), {"A": A.copy(), "B": B.copy()}, verify=True, replay=replay)
    run_jacobi(rt, n, steps, tile, rows=True)
    Ar, Br = jacobi_reference(A, B, steps)
    np.testing.assert_allclose(rt.host.array("A"), Ar, rtol=1e-12)
    np.testing.assert_allclose(rt.host.array("B"), Br, rtol=1e-12)
    # the driver's flow-out is both edge rows of a tile: split unless that is over half
    assert (rt.stats.edge_first > 0) == (tile >= 4)


def _log(dev):
    return [(kind, (b.lo[0], b.hi[0])) for kind, b, _ in dev.log]


def test_flowout_is_stored_between_the_first_rows_and_the_rest():
    """Two devices, one tile each (rows 1-6 and 7-12): device 0 runs rows 1 and 6 (its
    flow-out, as the driver gives it), stores them, runs rows 2-5, then takes in device
    1's row 7."""
    n, steps = 14, 3
    rng = np.random.default_rng(1)
    devs = make(2)
    rt = Runtime(devs, {"A": rng.random((n, n)), "B": rng.random((n, n))}, replay=False)
    run_jacobi(rt, n, steps, 6, rows=True)
    log = _log(devs[0])
    i = log.index(("launch", (1, 1)))
    assert log[i:i + 6] == [("launch", (1, 1)), ("launch", (6, 6)), ("d2h", (1, 1)),
                            ("d2h", (6, 6)), ("launch", (2, 5)), ("h2d", (7, 7))]
    log = _log(devs[1])
    i = log.index(("launch", (7, 7)))
    assert log[i:i + 6] == [("launch", (7, 7)), ("launch", (12, 12)), ("d2h", (7, 7)),
                            ("d2h", (12, 12)), ("launch", (8, 11)), ("h2d", (6, 6))]
    assert rt.stats.edge_first == 2 * steps


def test_middle_device_runs_both_edges_first():
    n, steps = 20, 2
    rng = np.random.default_rng(2)
    devs = make(3)
    rt = Runtime(devs, {"A": rng.random((n, n)), "B": rng.random((n, n))}, replay=False)
    run_jacobi(rt, n, steps, 6, rows=True)          # rows 1-6, 7-12, 13-18
    log = [e for e in _log(devs[1]) if e[0] == "launch"]
    assert log[-3:] == [("launch", (7, 7)), ("launch", (12, 12)), ("launch", (8, 11))]


def test_rows_read_on_the_same_device_are_not_split():
    """Flow-out that only the same device reads (neighbouring tiles of one device), and a
    single device: tiles launch whole."""
    n, steps = 26, 2
    rng = np.random.default_rng(3)
    rt = Runtime(make(1), {"A": rng.random((n, n)), "B": rng.random((n, n))})
    run_jacobi(rt, n, steps, 6, rows=True)
    assert rt.stats.edge_first == 0
    devs = make(2)
    rt = Runtime(devs, {"A": rng.random((n, n)), "B": rng.random((n, n))}, replay=False)
    run_jacobi(rt, n, steps, 6, rows=True)   # tiles 1-6, 7-12 | 13-18, 19-24
    assert rt.stats.edge_first == 2 * steps   # only the two tiles at the border
    assert ("launch", (1, 6)) in _log(devs[0]) and ("launch", (8, 11)) in _log(devs[0])


def test_edges_off(monkeypatch):
    monkeypatch.setenv("BBMM_EDGE", "0")
    n, steps = 14, 3
    rng = np.random.default_rng(4)
    A, B = rng.random((n, n)), rng.random((n, n))
    rt = Runtime(make(2), {"A": A.copy(), "B": B.copy()})
    run_jacobi(rt, n, steps, 6, rows=True)
    assert rt.stats.edge_first == 0
    np.testing.assert_allclose(rt.host.array("A"), jacobi_reference(A, B, steps)[0], rtol=1e-12)


def test_tiles_stay_whole_by_default(monkeypatch):
    monkeypatch.delenv("BBMM_EDGE")
    rng = np.random.default_rng(6)
    rt = Runtime(make(2), {"A": rng.random((26, 26)), "B": rng.random((26, 26))})
    run_jacobi(rt, 26, 3, 12, rows=True)
    assert rt.stats.edge_first == 0
    monkeypatch.setenv("BBMM_EDGE", "120")          # tiles of 12 x 24 = 288 points split
    rt = Runtime(make(2), {"A": rng.random((26, 26)), "B": rng.random((26, 26))})
    run_jacobi(rt, 26, 3, 12, rows=True)
    assert rt.stats.edge_first == 2 * 3
    monkeypatch.setenv("BBMM_EDGE", "300")
    rt = Runtime(make(2), {"A": rng.random((26, 26)), "B": rng.random((26, 26))})
    run_jacobi(rt, 26, 3, 12, rows=True)
    assert rt.stats.edge_first == 0


@pytest.mark.parametrize("spec,points", [(None, None), ("", None), ("0", 0),
                                         ("off", 0), ("1", 1), (" 4096 ", 4096)])
def test_edge_setting(spec, points):
    """Unset is None: the runtime takes its kind's default (EDGE_POINTS in one process)."""
    assert edge_points(spec) == points
    if points is None:
        assert Runtime(make(2), {"A": np.zeros(4)},
                       config=RuntimeConfig(edge=edge_points(spec))).edges == EDGE_POINTS


@pytest.mark.parametrize("processes,given,want", [(EDGE_PROCESSES, None, EDGE_POINTS_RANKS),
                                                  (3, None, 0), (4, None, 0), (4, 1, 1),
                                                  (2, 0, 0)])
def test_over_processes_tiles_split_by_default_only_over_two(processes, given, want):
    """A process of a run over two splits its tiles by default (its one neighbour waits
    for the flow-out); over more, a middle process would launch twice more per phase, and
    none does unless ``$BBMM_EDGE`` says so."""
    rt = Runtime(make(1), {"A": np.zeros(4)}, shared_flowout=True, processes=processes,
                 config=RuntimeConfig(edge=given))
    assert rt.edges == want


class _Side(NullDevice):
    """A null device with a second queue: it records the ``side`` of each copy out."""

    side = True

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.outs = []

    def read_rect(self, *a, side=False, **k):
        self.outs.append(side)
        return super().read_rect(*a, **k)


@pytest.mark.parametrize("shared,beside,replay", [(True, True, True), (True, True, False),
                                                  (True, False, True), (False, True, True)])
def test_a_split_tiles_flowout_leaves_beside_the_rest_over_processes(shared, beside, replay):
    """Over processes (``shared_flowout``) the flow-out stored between a split tile's first
    rows and the rest goes on the device's side queue (``side``: beside the launch of the
    rest), recorded in the pending-copy records as lane 1, replayed so too; not with
    ``beside`` off, nor in one process driving several devices. Exact every way."""
    n, steps = 26, 6
    rng = np.random.default_rng(7)
    A, B = rng.random((n, n)), rng.random((n, n))
    devs = [_Side(i, cap=1 << 24, arena_size=1 << 16) for i in range(2)]
    rt = Runtime(devs, {"A": A.copy(), "B": B.copy()}, verify=True, replay=replay,
                 shared_flowout=shared, processes=2 if shared else 1,
                 config=RuntimeConfig(edge=1, beside=beside))
    lanes = []
    after = rt.directory.order.after
    # (array, region, device, stores, event[, lane]): the lanes of the stores
    rt.directory.order.after = lambda *a: lanes.append(
        a[5] if a[3] and len(a) > 5 else 0) or after(*a)
    run_jacobi(rt, n, steps, 6, rows=True)
    Ar, Br = jacobi_reference(A, B, steps)
    np.testing.assert_allclose(rt.host.array("A"), Ar, rtol=1e-12)
    np.testing.assert_allclose(rt.host.array("B"), Br, rtol=1e-12)
    assert rt.stats.edge_first > 0
    outs = [o for d in devs for o in d.outs]
    want = shared and beside
    assert any(outs) == want and (1 in lanes) == want
    if want and replay:
        assert rt.stats.replayed > 0
        assert sum(outs) >= rt.stats.edge_first  # each split tile's store, replayed too


@pytest.mark.parametrize("spec", ["yes", "-3", "1e6"])
def test_bad_edge_setting_is_a_setting_error(spec):
    with pytest.raises(SettingError, match="BBMM_EDGE"):
        edge_points(spec)


def _tile(span, writers, flowout):
    return Tile(0, {"A": [Box((0, 0), (9, 9))]}, lambda d, tb, rows=None: None,
                writes={"A": [Box((0, 0), (9, 9))]}, flowout=flowout, span=span,
                writers=writers)


def _runtime_with_copy_elsewhere():
    devs = make(2)
    rt = Runtime(devs, {"A": np.zeros((10, 10)), "C": np.zeros((10, 10))})
    for a in ("A", "C"):
        c = rt.managers[1].alloc(a, Box((0, 0), (9, 9)), 8)
        rt.directory.add(c)
    return rt


def test_edge_rows_of_flowout_boxes():
    rt = _runtime_with_copy_elsewhere()
    fo = {"A": [Box((9, 0), (9, 9)), Box((0, 0), (0, 9))]}
    assert rt._edges(_tile((0, 9), {"A": (0, 0, 0)}, fo), fo) == ([(0, 0), (9, 9)], [(1, 8)])
    # writers one row below their elements: element row 9 comes from row 8
    # (row 0's writer, row -1, is outside the tile)
    assert rt._edges(_tile((0, 9), {"A": (0, 1, 1)}, fo), fo) == ([(8, 8)], [(0, 7), (9, 9)])
    # columns: element column 3 of every row is written by rows 3 - 2 .. 3 - 0
    fo = {"A": [Box((0, 3), (9, 3))]}
    assert rt._edges(_tile((0, 9), {"A": (1, 0, 2)}, fo), fo) == ([(1, 3)], [(0, 0), (4, 9)])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 12), st.integers(0, 3)), min_size=1, max_size=5))
def test_edge_rows_are_the_union_of_the_flowout_rows_and_the_rest_is_the_tile_minus_it(rows):
    """Against brute force over the rows of a tile of rows 0..9: the first part is the
    set of rows writing some flow-out row (clipped to the tile, touching ranges fused),
    the rest is every other row, and a first part of more than half the tile is none."""
    rt = _runtime_with_copy_elsewhere()
    fo = {"A": [Box((r, 0), (r + h, 9)) for r, h in rows]}
    got = rt._edges(_tile((0, 9), {"A": (0, 0, 0)}, fo), fo)
    want = {i for r, h in rows for i in range(r, r + h + 1) if 0 <= i <= 9}
    if not want or 2 * len(want) > 10:
        assert got is None
        return
    first, rest = got
    assert {i for a, b in first for i in range(a, b + 1)} == want
    assert {i for a, b in rest for i in range(a, b + 1)} == set(range(10)) - want
    for part in (first, rest):
        assert part == sorted(part)
        assert all(b + 1 < c for (_, b), (c, _) in zip(part, part[1:]))  # fused


def test_a_kernel_of_two_ranges_runs_both_ends_or_both_sides_in_one_launch():
    """Where the tile's kernel takes two ranges of rows (``kernel.ranges``), a middle
    tile's two ends are one first launch, and the rows either side of inner flow-out
    rows (Floyd's row ``k + 1``) one launch after them."""
    rt = _runtime_with_copy_elsewhere()

    def two(span, flowout):
        t = _tile(span, {"A": (0, 0, 0)}, flowout)
        knl = lambda d, tb, rows=None: None  # noqa: E731
        knl.ranges = 2
        return t.but(kernel=knl)

    fo = {"A": [Box((9, 0), (9, 9)), Box((0, 0), (0, 9))]}
    assert rt._edges(two((0, 9), fo), fo) == ([(0, 0, 9, 9)], [(1, 8)])
    fo = {"A": [Box((4, 0), (4, 9))]}
    assert rt._edges(two((0, 9), fo), fo) == ([(4, 4)], [(0, 3, 5, 9)])
    assert rt._edges(_tile((0, 9), {"A": (0, 0, 0)}, fo), fo) == ([(4, 4)], [(0, 3), (5, 9)])


def test_no_edges_when_they_are_most_of_the_tile_or_unknown():
    rt = _runtime_with_copy_elsewhere()
    fo = {"A": [Box((0, 0), (5, 9))]}
    assert rt._edges(_tile((0, 9), {"A": (0, 0, 0)}, fo), fo) is None     # 6 of 10 rows
    fo = {"C": [Box((0, 0), (0, 9))]}
    assert rt._edges(_tile((0, 9), {"A": (0, 0, 0)}, fo), fo) is None     # C's writers?
    fo = {"A": [Box((0, 0), (0, 9))]}
    assert rt._edges(_tile(None, {"A": (0, 0, 0)}, fo), fo) is None       # no span

# }}}

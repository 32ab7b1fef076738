"""Runtime (buffer manager + coherence) driven by hand-written drivers on null devices."""
from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bbmm.devices import NullDevice
from bbmm.diagnostic import TileTooLargeError
from bbmm.box import Box
from bbmm.runtime import Runtime, Tile

from support.drivers import (floyd_reference, gather, jacobi_reference, run_floyd, run_jacobi, scatter,
                     tiles_of)
from support.events import Dev


def make(ndev, cap=1 << 24, arena=1 << 16):
    return [NullDevice(i, cap=cap, arena_size=min(arena, cap)) for i in range(ndev)]


def floyd_input(n, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.integers(1, 100, size=(n, n)).astype(np.float32)
    np.fill_diagonal(p, 0)
    return p


@pytest.mark.parametrize("ndev,tile,mode,reuse,fuse", [
    (d, t, m, r, f) for d in (1, 2, 3, 4) for t in (4, 5) for m in ("disjoint", "convex")
    for r in (True, False) for f in ((None, 0.9) if m == "disjoint" else (None,))])
def test_floyd(ndev, tile, mode, reuse, fuse):
    n = 16
    path = floyd_input(n)
    rt = Runtime(make(ndev), {"path": path.copy()}, mode=mode, reuse=reuse, verify=True,
                 fuse=fuse)
    run_floyd(rt, n, tile)
    np.testing.assert_array_equal(rt.host.array("path"), floyd_reference(path))


@pytest.mark.parametrize("ndev", [1, 2, 3, 4])
def test_floyd_tight_cap_forces_boxout(ndev):
    n, tile = 16, 4
    path = floyd_input(n, 1)
    # a tile needs its rows (4x16) and row k (1x16) = 320 B of float32; a device
    # holding all its tiles' boxes would need far more: boxes go out and come back
    cap = 4 * 16 * 4 + 16 * 4 + 32
    rt = Runtime(make(ndev, cap=cap, arena=cap), {"path": path.copy()}, verify=True)
    run_floyd(rt, n, tile)
    np.testing.assert_array_equal(rt.host.array("path"), floyd_reference(path))
    if ndev <= 2:
        assert sum(d.evictions for d in rt.stats.devices) > 0


def test_floyd_disjoint_allocates_less_than_convex():
    n, tile = 16, 4
    peaks = {}
    for mode in ("disjoint", "convex"):
        rt = Runtime(make(4), {"path": floyd_input(n)}, mode=mode)
        run_floyd(rt, n, tile)
        peaks[mode] = max(d.peak_bytes for d in rt.stats.devices)
    assert peaks["disjoint"] < peaks["convex"]


@pytest.mark.parametrize("ndev,tile,reuse,mode,fuse", [
    (d, t, r, m, f) for d in (1, 2, 3, 4) for t in (3, 4) for r in (True, False)
    for m in ("disjoint", "convex") for f in ((0, 0.9) if m == "disjoint" else (None,))])
def test_jacobi(ndev, tile, reuse, mode, fuse):
    n, steps = 14, 4
    rng = np.random.default_rng(3)
    A, B = rng.random((n, n)), rng.random((n, n))
    rt = Runtime(make(ndev), {"A": A.copy(), "B": B.copy()}, reuse=reuse, mode=mode, verify=True,
                 fuse=fuse)
    run_jacobi(rt, n, steps, tile)
    Ar, Br = jacobi_reference(A, B, steps)
    np.testing.assert_allclose(rt.host.array("A"), Ar, rtol=1e-12)
    np.testing.assert_allclose(rt.host.array("B"), Br, rtol=1e-12)


@pytest.mark.parametrize("ndev", [1, 2, 3])
def test_jacobi_tight_cap(ndev):
    n, steps, tile = 14, 3, 3
    rng = np.random.default_rng(4)
    A, B = rng.random((n, n)), rng.random((n, n))
    cap = 8 * (5 * 12 + 12 * 3) * 2 + 2048  # one tile's boxes of A and B with room to spare
    rt = Runtime(make(ndev, cap=cap, arena=256), {"A": A.copy(), "B": B.copy()}, verify=True)
    run_jacobi(rt, n, steps, tile)
    Ar, Br = jacobi_reference(A, B, steps)
    np.testing.assert_allclose(rt.host.array("A"), Ar, rtol=1e-12)
    np.testing.assert_allclose(rt.host.array("B"), Br, rtol=1e-12)


@pytest.mark.parametrize("ndev", [1, 2, 4])
def test_coherence_without_flowout_sets_still_correct(ndev):
    """The directory pulls what the compile-time sets did not push."""
    n = 12
    path = floyd_input(n, 5)
    rt = Runtime(make(ndev), {"path": path.copy()}, verify=True)
    run_floyd(rt, n, 3, flowout=False)
    np.testing.assert_array_equal(rt.host.array("path"), floyd_reference(path))
    rng = np.random.default_rng(6)
    A, B = rng.random((n, n)), rng.random((n, n))
    rt = Runtime(make(ndev), {"A": A.copy(), "B": B.copy()}, verify=True)
    run_jacobi(rt, n, 3, 3, flowout=False)
    np.testing.assert_allclose(rt.host.array("A"), jacobi_reference(A, B, 3)[0])


def test_tile_too_large_is_a_clear_error():
    n = 16
    rt = Runtime(make(1, cap=256, arena=256), {"path": floyd_input(n)})
    with pytest.raises(TileTooLargeError, match=r"null0: cannot allocate .* of 256 B held"):
        run_floyd(rt, n, 8)


def test_read_only_array_has_no_coherence_traffic():
    """Case 5: an array read by every tile and written by none moves host->device only."""
    from bbmm.box import Box
    from bbmm.runtime import Tile
    from support.drivers import gather, scatter, tiles_of
    n, steps = 12, 3
    rng = np.random.default_rng(9)
    x, y = rng.random(n), np.zeros(n)
    M = rng.random((n, n))
    rt = Runtime(make(3), {"M": M.copy(), "x": x.copy(), "y": y.copy()}, verify=True)
    for s in range(steps):
        tiles = []
        for lb, ub, dev in tiles_of(n, 4, 3):
            rows, xs, ys = Box((lb, 0), (ub, n - 1)), Box((0,), (n - 1,)), Box((lb,), (ub,))

            def k(d, tb, rows=rows, xs=xs, ys=ys):
                v = gather(d, tb, "y", ys, np.float64) + gather(d, tb, "M", rows, np.float64) @ \
                    gather(d, tb, "x", xs, np.float64)
                scatter(d, tb, "y", ys, v)
            tiles.append(Tile(dev, {"M": [rows], "x": [xs], "y": [ys]}, k, writes={"y": [ys]},
                              writeout={"y": [ys]} if s == steps - 1 else {}))
        rt.run_phase(tiles, serial=s)
        rt.end_serial(s)
    rt.finish()
    np.testing.assert_allclose(rt.host.array("y"), steps * (M @ x))
    st = rt.stats
    assert st.bytes["flowout"] == st.bytes["flowin"] == st.bytes["refresh"] == 0
    # M and x came in once per device; only y's final values went out
    assert sum(d.h2d_bytes for d in st.devices) == M.nbytes + 3 * x.nbytes + y.nbytes
    assert sum(d.d2h_bytes for d in st.devices) == y.nbytes


def test_local_sizes_override():
    """$BBMM_LOCAL overrides the work-group shape of the ranks it names, only those."""
    from bbmm.hostlib import local_sizes
    assert local_sizes(None) == {1: (256,), 2: (256, 1), 3: (128, 2, 1)}
    assert local_sizes("128x2, 64") == {1: (64,), 2: (128, 2), 3: (128, 2, 1)}
    assert local_sizes("16X4X4")[3] == (16, 4, 4)
    for bad in ("32x", "0x8", "1x2x3x4", "big"):
        with pytest.raises(ValueError, match="BBMM_LOCAL"):
            local_sizes(bad)


def test_staged_groups_fit_what_the_kernel_allows():
    """A staged kernel asks for groups of 32 x G work-items; a kernel that needs many
    registers may allow fewer than the device's maximum (CL_KERNEL_WORK_GROUP_SIZE), and
    its launch would fail: G is halved until the group fits, and the kernel is built for
    that G."""
    from bbmm import hostlib
    from bbmm.config import KernelOptions
    from bbmm.runtime import TileBuffers

    class GPU:
        is_gpu, compute_units, max_group = True, 132, 1024

        def __init__(self, limit):
            self.limit, self.built, self.launched = limit, [], []

        def kernel(self, source, name, options):
            self.built.append(options)
            return (name, options)

        def group_limit(self, knl):
            return self.limit

        def launch(self, knl, gsize, local, args):
            self.launched.append((knl[1], tuple(local)))

    for limit, g in [(1024, 32), (512, 16), (384, 8), (40, 1)]:
        dev = GPU(limit)
        hostlib.launch(dev, TileBuffers(), f"src{limit}", "k", [], [(0, 2047)], [0], [],
                       staged=True, options=KernelOptions(stage=(32, 128)))
        opts, local = dev.launched[0]
        assert local == (32, g) and f"-DBBMM_SG={g} " in opts + " "
        assert 32 * g <= limit or g == 1


def test_spread_keeps_narrow_launches_on_every_unit():
    """A launch with fewer work-groups than twice the compute units gets smaller groups
    (halved, not below a warp of 32): mvt's 2048-column tile on a 132-unit H200 runs as
    64 groups of 32, not 8 of 256; wide launches and unknown units keep the default."""
    from bbmm.hostlib import spread
    assert spread((256,), (2048,), (1, 1), 132) == (32,)
    assert spread((256,), (40960,), (1, 1), 132) == (128,)          # 320 groups >= 264
    assert spread((256, 1), (12288, 12288), (1, 8), 132) == (256, 1)
    assert spread((256,), (2048,), (1, 1), 0) == (256,)
    assert spread((256,), (10,), (1, 1), 4) == (32,)                  # never below a warp
    assert spread((256,), (2048,), (4, 1), 2) == (128,)               # 4 points per item
    for ext, units in [((2048,), 132), ((700, 3), 16), ((5000,), 2)]:
        local = spread((256,) + (1,) * (len(ext) - 1), ext, (1, 1), units)
        groups = 1
        for e, l in zip(ext, local):
            groups *= -(-e // l)
        assert groups >= 2 * units or local[0] == 32



@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-40, 5000), st.integers(0, 5000)), min_size=1,
                max_size=3),
       st.sampled_from([1, 8, 32]), st.sampled_from([0, 4, 132]), st.booleans(),
       st.booleans(), st.booleans(), st.data())
def test_a_regridded_launch_is_the_launch_planned_afresh(spans, align, units, coarsen,
                                                         given_local, set_local, data):
    """:func:`bbmm.hostlib.regridder` (a launch repeated on another grid, LU's shrinking
    corner) gives the NDRange, work-group shape and grid origins that the launch's own
    :func:`~bbmm.hostlib._narrow` and :func:`~bbmm.hostlib._shape` give for that grid,
    whatever the alignment, compute units, coarsening and work-group settings."""
    from dataclasses import replace

    from bbmm import hostlib
    from bbmm.config import KernelOptions

    grid = [(lo, lo + w) for lo, w in spans]
    nb = len(grid)
    cl_band = data.draw(st.permutations(range(nb)))
    o = replace(KernelOptions(), align=align, coarsen=2)
    if set_local:
        o = replace(o, local_given=frozenset({nb}))
    local = tuple([16] + [1] * (nb - 1)) if given_local else None
    dev = NullDevice("n0")
    dev.compute_units = units
    regrid = hostlib.regridder(dev, nb, (cl_band, coarsen, False, False, local, o))
    for g in (grid, [(lo + 1, hi) for lo, hi in grid], grid):
        co = hostlib._points(coarsen, nb, False, o)
        narrowed, _ = hostlib._narrow(g, None, co, align, cl_band)
        extent = [max(1, narrowed[d][1] - narrowed[d][0] + 1) for d in cl_band]
        gsize, lsize = hostlib._shape(dev, extent, co, local, o)
        assert regrid(g) == (gsize, lsize, [np.int32(lo) for lo, _ in narrowed])


def _split_and_peak(n, ndev, fuse):
    rng = np.random.default_rng(7)
    A, B = rng.random((n, n)), rng.random((n, n))
    rt = Runtime(make(ndev), {"A": A.copy(), "B": B.copy()}, verify=True, fuse=fuse)
    run_jacobi(rt, n, 3, -(-(n - 2) // ndev))
    np.testing.assert_allclose(rt.host.array("A"), jacobi_reference(A, B, 3)[0], rtol=1e-12)
    return rt.stats.split_accesses, max(d.peak_bytes for d in rt.stats.devices)


@pytest.mark.parametrize("ndev", [1, 2])
def test_stencil_boxes_fused_into_their_hull(ndev):
    """A stencil tile's disjoint boxes of A miss only the hull's four corners: by default
    they become one box (no split access), at the price of those corners; with fuse=0
    they stay the paper's exact disjoint boxes, and the halo columns' accesses split."""
    n = 40
    split0, peak0 = _split_and_peak(n, ndev, 0)
    split1, peak1 = _split_and_peak(n, ndev, None)
    assert split0 > 0 and split1 == 0
    # the corners' 4 elements of A, and B's first (exact, fresh) box grown to A's shape
    assert peak0 < peak1 <= peak0 + 8 * (4 + 4 * n)


def test_fuse_slack_bounds_the_waste():
    from bbmm.box import Box
    from bbmm.acquire import fuse_hull
    rows = Box((0, 1), (9, 8))                       # 80 points, hull 10x10 = 100
    cols = [Box((1, 0), (8, 0)), Box((1, 9), (8, 9))]  # 16 more: 4 corners missing
    assert fuse_hull([rows, *cols], 0.04) == [Box((0, 0), (9, 9))]
    assert fuse_hull([rows, *cols], 0.039) == [rows, *cols]
    far = [Box((0, 0), (3, 9)), Box((9, 0), (9, 9))]  # a tile's rows and Floyd's row k
    assert fuse_hull(far, 1 / 64) == far


def test_fresh_boxes_are_never_fused():
    """A tile that only writes an array reads nothing in: a hull would hold points no one
    filled, so its exact write boxes stay apart whatever the slack."""
    from bbmm.box import Box
    from bbmm.runtime import Tile
    n = 8
    E = np.zeros((n, n))
    rt = Runtime(make(1), {"E": E.copy()}, verify=True, fuse=0.99)
    left, right = Box((0, 0), (n - 1, 0)), Box((0, n - 1), (n - 1, n - 1))
    seen = []

    def k(d, tb):
        seen.append([p for p, _ in tb.pieces["E"]])
        scatter(d, tb, "E", left, np.full((n, 1), 1.0))
        scatter(d, tb, "E", right, np.full((n, 1), 2.0))
    rt.run_phase([Tile(0, {"E": [left, right]}, k, writes={"E": [left, right]},
                       writeout={"E": [left, right]}, fresh=frozenset({"E"}))], serial=0)
    rt.end_serial(0)
    rt.finish()
    assert set(seen[0]) == {left, right}
    out = rt.host.array("E")
    assert (out[:, 0] == 1).all() and (out[:, -1] == 2).all() and (out[:, 1:-1] == 0).all()


@pytest.mark.parametrize("spec,value", [(None, 1 / 64), ("", 1 / 64), ("0", 0.0),
                                        ("0.02", 0.02), ("1/32", 1 / 32)])
def test_fuse_slack_spec(spec, value):
    from bbmm.runtime import fuse_slack
    assert fuse_slack(spec) == value


def test_bad_fuse_slack_is_a_usage_error(monkeypatch):
    from bbmm.diagnostic import UsageError
    monkeypatch.setenv("BBMM_FUSE", "a lot")
    with pytest.raises(UsageError, match="BBMM_FUSE: 'a lot' is not a fraction"):
        Runtime(make(1), {"A": np.zeros(4)})
    from bbmm.config import RuntimeConfig
    with pytest.raises(UsageError, match=r"fuse slack must lie in \[0, 1\), got 1.5"):
        Runtime(make(1), {"A": np.zeros(4)}, fuse=1.5, config=RuntimeConfig())


def _column_after_rows(n: int, rows: int):
    """mvt's two products on one device: row tiles of A (the first product), then a column
    tile (the second); returns the runtime and the column tile's pieces and slots."""
    from bbmm.box import Box
    from bbmm.runtime import Tile
    from support.drivers import gather
    A = np.arange(n * n, dtype=np.float32).reshape(n, n)
    rt = Runtime(make(1), {"A": A.copy()}, verify=True)
    for r in range(0, n, rows):
        rt.run_phase([Tile(0, {"A": [Box((r, 0), (r + rows - 1, n - 1))]}, lambda d, tb: None)],
                     serial=(0, r))
    seen = {}
    col = Box((0, 2), (n - 1, 5))

    def k(d, tb):
        seen["pieces"] = [p for p, _ in tb.pieces["A"]]
        seen["access"] = list(tb.access["A"])
        seen["values"] = gather(d, tb, "A", col, np.float32)
    rt.run_phase([Tile(0, {"A": [col]}, k)], serial=1)
    rt.finish()
    np.testing.assert_array_equal(seen["values"], A[:, 2:6])
    return rt, seen, col


def test_column_box_over_resident_rows_is_one_piece():
    """The second product's column box of A crosses the row boxes the first left resident:
    covering it with them would split its access (a per-element search of the pieces in
    the kernel), so it becomes one new box, the resident rows copied device to device."""
    rt, seen, col = _column_after_rows(16, 4)
    assert seen["pieces"] == [col] and seen["access"] == [0]
    assert rt.stats.split_accesses == 0
    d = rt.stats.devices[0]
    assert d.d2d_bytes > 0                                     # the resident rows' part
    assert d.h2d_bytes < 16 * 16 * 4 + 16 * 4 * 4              # not all of the column again


def test_resident_rows_stay_when_no_access_splits():
    """Floyd's shape: a tile's rows resident and row k + 1 next to them. Each access lies
    in one piece, so the rows stay where they are and only the new row is allocated."""
    from bbmm.box import Box
    from bbmm.runtime import Tile
    n = 8
    rt = Runtime(make(1), {"A": np.zeros((n, n), np.float32)}, verify=True)
    rows, row = Box((0, 0), (3, n - 1)), Box((4, 0), (4, n - 1))
    rt.run_phase([Tile(0, {"A": [rows]}, lambda d, tb: None)], serial=0)
    got = {}
    rt.run_phase([Tile(0, {"A": [rows, row]}, lambda d, tb: got.update(
        pieces=[p for p, _ in tb.pieces["A"]], access=list(tb.access["A"])))], serial=1)
    rt.finish()
    assert sorted(got["pieces"], key=lambda b: b.lo) == [rows, row]
    assert -1 not in got["access"] and rt.stats.split_accesses == 0
    assert rt.stats.devices[0].d2d_bytes == 0


def test_floyd_row_next_to_resident_rows_is_not_fused():
    """Row k next to a tile's resident rows: fusing them into their hull would allocate a
    new hull at every such k and copy the rows into it device to device. With the rows
    resident the parts go as they are: no device-to-device bytes, and the peak is the
    tile's rows plus a row (it was twice the rows)."""
    n, tile = 32, 16
    path = floyd_input(n, 3)
    rt = Runtime(make(2), {"path": path.copy()}, verify=True, fuse=0.2)
    run_floyd(rt, n, tile)
    np.testing.assert_array_equal(rt.host.array("path"), floyd_reference(path))
    for d in rt.stats.devices:
        assert d.d2d_bytes == 0
        assert d.peak_bytes <= (tile + 1) * n * 4 + 1024  # + the pool's rounding


def _two_views(n, steps, fuse):
    """Each step: nest A scales E's rows 1..n-1; nest B updates F from E's columns
    0..n-2 (fdtd2d's ey through two boxes)."""
    from bbmm.box import Box
    from bbmm.runtime import Tile
    rng = np.random.default_rng(5)
    E0, F0 = rng.random((n, n)), rng.random((n, n - 1))
    rt = Runtime(make(1), {"E": E0.copy(), "F": F0.copy()}, verify=True, fuse=fuse)
    rows, cols = Box((1, 0), (n - 1, n - 1)), Box((0, 0), (n - 1, n - 2))
    fbox = Box((0, 0), (n - 1, n - 2))

    def ka(d, tb):
        scatter(d, tb, "E", rows, 1.5 * gather(d, tb, "E", rows, np.float64))

    def kb(d, tb):
        scatter(d, tb, "F", fbox, gather(d, tb, "F", fbox, np.float64)
                - 0.25 * gather(d, tb, "E", cols, np.float64))
    for t in range(steps):
        last = t == steps - 1
        rt.run_phase([Tile(0, {"E": [rows]}, ka, writes={"E": [rows]},
                           writeout={"E": [rows]} if last else {})], serial=t)
        rt.run_phase([Tile(0, {"E": [cols], "F": [fbox]}, kb, writes={"F": [fbox]},
                           writeout={"F": [fbox]} if last else {})], serial=t)
        rt.end_serial(t)
    rt.finish()
    E, F = E0.copy(), F0.copy()
    for _ in range(steps):
        E[1:] = 1.5 * E[1:]
        F = F - 0.25 * E[:, :-1]
    np.testing.assert_array_equal(rt.host.array("E"), E)
    np.testing.assert_array_equal(rt.host.array("F"), F)
    return rt.stats.devices[0]


def test_two_views_of_an_array_grow_into_one_copy():
    """Two nests reading an array through boxes that nearly coincide: the second box takes
    the first copy in (one device-to-device copy, once) instead of living beside it and
    being refreshed from it at every step; with fuse=0 (the paper's exact boxes) the two
    copies stay, and the refresh costs a copy of E's columns per step."""
    n, steps = 128, 6  # the hull adds 1/127 to each box: within the default slack 1/64
    grown = _two_views(n, steps, None)
    exact = _two_views(n, steps, 0)
    assert grown.d2d_bytes <= n * n * 8                    # the one absorption
    assert exact.d2d_bytes >= (steps - 1) * (n - 1) * (n - 1) * 8
    assert grown.peak_bytes < exact.peak_bytes


class _EventDevice(NullDevice):
    """A null device whose launches and copies return events (tokens), that loads on a
    side queue, and that records the ``last`` event each free is given."""

    side = True

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.n = 0
        self.freed = []
        self.sides = 0

    def _event(self, kind):
        self.n += 1
        return f"{kind}{self.n}"

    def write_rect(self, *a, side=False, **kw):
        super().write_rect(*a, **kw)
        self.sides += side
        return self._event("h2d")

    def read_rect(self, *a, **kw):
        super().read_rect(*a, **kw)
        return self._event("d2h")

    def launch(self, kernel, global_size, local_size, args):
        super().launch(kernel, global_size, local_size, args)
        self.last = self._event("kernel")
        return self.last

    def free(self, a, last=None):
        self.freed.append(last)
        super().free(a, last)


def test_freed_boxes_hand_their_last_use_to_the_device():
    """Under box-out each freed box carries the event of the last command that used it
    (its tile's kernel, or the write-back after it) to the device, where a side read-in
    into its memory waits for it; new boxes are read in on the side queue."""
    from bbmm.box import Box
    from bbmm.runtime import Tile
    n = 8
    dev = _EventDevice(0, cap=2 * 4 * n * 4, arena_size=2 * 4 * n * 4)
    A = np.arange(4 * n * n, dtype=np.float32).reshape(4 * n, n)
    rt = Runtime([dev], {"A": A.copy()}, verify=True)
    launched = []
    for r in range(0, 4 * n, 4):
        rows = Box((r, 0), (r + 3, n - 1))

        def k(d, tb, rows=rows):
            d.launch(lambda *a: None, (1,), None, [])
            launched.append(d.last)
        writes = {"A": [rows]} if r % 8 else {}
        rt.run_phase([Tile(0, {"A": [rows]}, k, writes=writes)], serial=0)
    rt.finish()
    rt.release_all()
    np.testing.assert_array_equal(rt.host.array("A"), A)
    assert rt.stats.devices[0].evictions > 0
    assert dev.sides == len(launched)  # every tile's box was read in beside the queue
    # read-only boxes: their kernel was their last use; written ones: the write-back
    assert all(f is not None for f in dev.freed)
    kernels = [f for f in dev.freed if f.startswith("kernel")]
    assert kernels and set(kernels) <= set(launched)
    # a callback that enqueues nothing leaves the read-in as the box's last use, not the
    # device's older kernel
    seen = {}
    rows = Box((0, 0), (3, n - 1))
    rt.run_phase([Tile(0, {"A": [rows]}, lambda d, tb: seen.update(tb=tb))], serial=1)
    last = [c.last for c in seen["tb"].copies()]
    assert last and all(e.startswith("h2d") for e in last), last
    assert any(f.startswith("d2h") for f in dev.freed)


def test_tile_too_large_counts_alignment_blocks():
    """Four 16-byte boxes fill a 1 KiB device of 256-byte blocks: the error says so
    (before, it said 64 B of 1 KiB held, and a fifth 16 B did not fit)."""
    from bbmm.box import Box
    from bbmm.runtime import Tile
    dev = NullDevice(0, cap=1024, arena_size=1024, align=256)
    arrays = {n: np.zeros(4, np.float32) for n in "abcde"}
    rt = Runtime([dev], arrays)
    box = Box((0,), (3,))
    with pytest.raises(TileTooLargeError) as e:
        rt.run_phase([Tile(0, {n: [box] for n in arrays}, lambda d, tb: None)], serial=0)
    msg = str(e.value)
    assert "hold 64 B, 1.00 KiB in blocks of 256 B" in msg and "1.00 KiB of 1.00 KiB held" in msg


def _run_lu(rt, n, tile):
    """LU without pivoting as bbmm tiles it: per k, nest 0 scales row k along j (tiled
    over j by the global grid), nest 1 updates the trailing matrix (tiled over i)."""
    dt = rt.host.array("A").dtype
    grid = tiles_of(n, tile, len(rt.devices))
    for k in range(n - 1):
        tiles = []
        for lb, ub, dev in grid:
            lo, hi = max(lb, k + 1), ub
            if lo > hi:
                continue
            row, piv = Box((k, lo), (k, hi)), Box((k, k), (k, k))

            def scale(d, tb, row=row, piv=piv):
                scatter(d, tb, "A", row, gather(d, tb, "A", row, dt) / gather(d, tb, "A", piv, dt))
            tiles.append(Tile(dev, {"A": [row, piv]}, scale, writes={"A": [row]},
                              writeout={"A": [row]}, cleanup={"A": [False, True]}))
        rt.run_phase(tiles, serial=k)
        tiles = []
        for lb, ub, dev in grid:
            lo, hi = max(lb, k + 1), ub
            if lo > hi:
                continue
            sub, col, row = (Box((lo, k + 1), (hi, n - 1)), Box((lo, k), (hi, k)),
                             Box((k, k + 1), (k, n - 1)))

            def update(d, tb, sub=sub, col=col, row=row):
                scatter(d, tb, "A", sub, gather(d, tb, "A", sub, dt)
                        - gather(d, tb, "A", col, dt) * gather(d, tb, "A", row, dt))
            # every later tile reads the next row and its pivot: flow them out
            fo = [Box((k + 1, k + 1), (k + 1, n - 1))] if lo <= k + 1 <= hi else []
            tiles.append(Tile(dev, {"A": [sub, col, row]}, update, writes={"A": [sub]},
                              flowout={"A": fo},
                              writeout={"A": [Box((lo, k + 1), (hi, k + 1))]},
                              cleanup={"A": [False, False, True]}))
        rt.run_phase(tiles, serial=k)
        rt.end_serial(k)
    rt.finish()


def _lu_reference(A):
    A = A.copy()
    for k in range(A.shape[0] - 1):
        A[k, k + 1:] /= A[k, k]
        A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:])
    return A


@pytest.mark.parametrize("ndev", [2, 3])
def test_small_phase_runs_where_its_data_is(ndev):
    """LU's row scaling is tiled along j, so with the static placement a device that
    holds none of row k scales part of it: the part goes to the host, to that device,
    and back. Placed by its data, the phase runs on row k's holder: nothing refreshed,
    fewer bytes read in, the same result (bit for bit: same operations in the same
    order). On three devices the static run also met a grown box overlapping another
    piece of its tile (caught by ``verify``'s disjointness check; fixed)."""
    n, tile = 96, 32  # row k is under 1/64 of the trailing update's boxes up to k = 60
    rng = np.random.default_rng(7)
    A0 = rng.random((n, n)) + n * np.eye(n)
    got = {}
    for place in (False, True):
        rt = Runtime(make(ndev), {"A": A0.copy()}, verify=True)
        rt.place = place
        _run_lu(rt, n, tile)
        np.testing.assert_allclose(rt.host.array("A"), _lu_reference(A0), rtol=1e-12)
        got[place] = rt
    np.testing.assert_array_equal(got[True].host.array("A"), got[False].host.array("A"))
    static, placed = got[False].stats, got[True].stats
    # statically, the scaled parts come back to row k's holder as refreshes (and
    # device-to-device copies); placed, nothing is refreshed and fewer bytes are read in
    assert static.bytes["refresh"] > 0 and placed.bytes["refresh"] == 0
    assert placed.bytes["flowin"] == 0
    assert placed.bytes["readin"] < static.bytes["readin"]
    d2d = [sum(d.d2d_bytes for d in s.devices) for s in (static, placed)]
    assert d2d[1] < d2d[0]


@pytest.mark.parametrize("ndev", [1, 2, 3])
@pytest.mark.parametrize("cap", [1 << 24, 26 << 10])
def test_small_writeouts_are_deferred_and_merged(ndev, cap):
    """LU writes out its final column (and, on one device, row) every k: with deferral
    they stay dirty on their device and go home merged, in a handful of copies instead of
    one or two per k, the result bit for bit the same. The dirty records stay few (a
    deferred region carved up by other stores is stored before they pile up), and under
    a small cap box-out stores a copy's deferred groups before freeing it."""
    n, tile = 96, 32
    rng = np.random.default_rng(3)
    A0 = rng.random((n, n)) + n * np.eye(n)
    got = {}
    for defer in (False, True):
        devs = [NullDevice(i, cap=cap, arena_size=min(cap, 1 << 16)) for i in range(ndev)]
        rt = Runtime(devs, {"A": A0.copy()}, verify=True)
        rt.directory.defer = defer
        most = [0]
        real = rt._run_tiles

        def run(tiles, serial, *more, real=real, rt=rt, most=most):
            real(tiles, serial, *more)
            most[0] = max(most[0], len(rt.directory.dirty["A"]))
        rt._run_tiles = run
        outs = []
        d2h = rt.directory._d2h

        def count(src, region, what, *more, d2h=d2h, outs=outs):
            outs.append(what)
            d2h(src, region, what, *more)
        rt.directory._d2h = count
        _run_lu(rt, n, tile)
        np.testing.assert_allclose(rt.host.array("A"), _lu_reference(A0), rtol=1e-12)
        got[defer] = rt, outs.count("writeout"), most[0]
    np.testing.assert_array_equal(got[True][0].host.array("A"), got[False][0].host.array("A"))
    (off, outs_off, _), (on, outs_on, most) = got[False], got[True]
    assert most <= on.directory.RECORDS + 4
    assert not on.directory._groups
    if cap > 1 << 20:  # no box-out: every write-out copy of the run is counted
        assert outs_off >= n - 1 and outs_on <= outs_off / 8
        moved = [sum(r.stats.bytes[w] for w in ("flowout", "writeout", "writeback"))
                 for r in (off, on)]
        assert moved[1] <= 1.05 * moved[0]
    elif ndev < 3:  # three devices hold their rows in 26 KiB
        assert sum(d.evictions for d in on.stats.devices) > 0
        assert on.stats.bytes["writeback"] > 0


def test_a_nest_is_measured_at_every_16th_phase_once_known():
    """A nest's phases are measured for its first 16, then at every 16th: what that one
    finds holds until the next, for a small nest (fdtd2d's row phase) as for a large one
    (Floyd's), and a nest that grew is found large at the next measure."""
    from bbmm.runtime import PhaseSizes

    def row_kernel():
        pass

    def big_kernel():
        pass

    def phase(kernel, rows):
        return [Tile(0, {"x": [Box((0, 0), (rows - 1, 99))]}, kernel)]

    sizes = PhaseSizes()
    assert not sizes.small(phase(big_kernel, 100))  # the largest so far
    assert all(sizes.small(phase(row_kernel, 1)) for _ in range(17))
    # the row nest grows: judged as last measured until its 32nd phase
    assert all(sizes.small(phase(row_kernel, 100)) for _ in range(15))
    assert not sizes.small(phase(row_kernel, 100))
    assert all(not sizes.small(phase(big_kernel, 100)) for _ in range(40))


def test_large_phases_keep_the_static_placement():
    """Phases as large as the largest so far stay where the grid puts them (Floyd's
    tiles are all large: placement by data would put every tile where row k is)."""
    n, tile = 16, 8
    path = floyd_input(n, 4)
    rt = Runtime(make(2), {"path": path.copy()}, verify=True)
    seen = []
    real = rt._run_tiles
    rt._run_tiles = lambda tiles, serial, *more: (seen.append([t.device for t in tiles]),
                                                  real(tiles, serial, *more))
    run_floyd(rt, n, tile)
    assert all(s == [0, 1] for s in seen)


def test_launch_starts_dimension_0_on_a_multiple_of_align(monkeypatch):
    """The first index of OpenCL dimension 0 (the innermost band loop, here band loop 1
    with cl_band (1, 0)) moves down to a multiple of ALIGN, the NDRange growing to still
    cover the loop's last index; the other dimension keeps its origin; ALIGN 1 leaves the
    loop's own bound (heat2d's j from 1: every warp straddled two memory segments)."""
    from bbmm import hostlib
    from bbmm.config import KernelOptions
    from bbmm.runtime import TileBuffers

    class Dev:
        def __init__(self):
            self.launched = []

        def kernel(self, source, name, options):
            return name

        def launch(self, knl, gsize, local, args):
            self.launched.append((tuple(gsize), tuple(local), [int(a) for a in args]))

    grid = [(5, 99), (1, 1000)]  # band loop 0 (i, OpenCL dim 1), band loop 1 (j, dim 0)
    for align, g1 in [(32, 0), (1, 1), (7, 0), (16, 0)]:
        dev = Dev()
        hostlib.launch(dev, TileBuffers(), "src", "k", [5, 99], grid, [1, 0], [],
                       local=(256, 1), options=KernelOptions(align=align))
        gsize, local, args = dev.launched[0]
        assert args == [5, 99, 5, g1]          # lb, ub, then each band loop's first index
        assert gsize[1] == 99 - 5 + 1          # rows as before
        assert gsize[0] % 256 == 0 and g1 + gsize[0] - 1 >= 1000 and g1 % align == 0
    # a 1-D band: dimension 0 is the tiled loop, its origin below the tile's lb
    dev = Dev()
    hostlib.launch(dev, TileBuffers(), "src", "k", [70, 140], [(70, 140)], [0], [],
                   local=(64,), options=KernelOptions(align=32))
    gsize, _, args = dev.launched[0]
    assert args == [70, 140, 64] and 64 + gsize[0] - 1 >= 140


def test_last_resort_coalesces_parked_blocks():
    """A small box left in the middle of the only arena splits it in two holes, each too
    small for the tile's large box. The last resort empties the device; before, the
    freed small block was parked (exact-size cache) and handed back at the same offset,
    so the tile failed with 1 KiB of 12 KiB in use (PolyBench's syrk at --tile 4
    --device-mem 12KiB)."""
    dev = NullDevice(0, cap=12 << 10, arena_size=12 << 10, align=64)
    A, C = np.arange(1024.0), np.arange(128.0)
    rt = Runtime([dev], {"A": A.copy(), "C": C.copy()}, keep_idle=True)
    noop = lambda d, tb: None  # noqa: E731
    # a 6.5 KiB box of A, then C's 1 KiB box right after it
    rt.run_phase([Tile(0, {"A": [Box((0,), (831,))]}, noop)], serial=0)
    rt.run_phase([Tile(0, {"C": [Box((0,), (127,))]}, noop)], serial=0)
    # the tile takes C's box again and 7.5 KiB of A: the A box is boxed out, which leaves
    # holes of 6.5 and 4.5 KiB around C's block
    rt.run_phase([Tile(0, {"C": [Box((0,), (127,))], "A": [Box((0,), (959,))]}, noop)],
                 serial=1)
    assert {c.box for cs in rt.managers[0].copies.values() for c in cs} == {
        Box((0,), (127,)), Box((0,), (959,))}
    rt.finish()
    np.testing.assert_array_equal(rt.host.array("A"), A)


class _PollDevice(NullDevice):
    """A null device whose events, where a test hands it some, are fakes that report their
    own status as OpenCL's do (0 when complete) and count their waits."""

    done = staticmethod(Dev.done)
    wait = staticmethod(Dev.wait)


def polling(ndev):
    return [_PollDevice(i, cap=1 << 24, arena_size=1 << 16) for i in range(ndev)]


def test_stopped_reads_a_break_flag_where_its_newest_value_is(monkeypatch):
    """A loop's break flag (one int) set by a kernel on device 1: stopped() reads it from
    that device's copy, not from the host's stale one, and not again within STOP_PERIOD."""
    import bbmm.runtime as R
    flag = np.zeros(1, np.int32)
    rt = Runtime(polling(2), {"f": flag, "A": np.zeros(4)}, verify=True)
    one = Box((0,), (0,))

    def set_to(v):
        def k(d, tb):
            scatter(d, tb, "f", one, np.array([v], np.int32))
        return k
    rt.run_phase([Tile(1, {"f": [one]}, set_to(0), writes={"f": [one]}, fresh=frozenset("f"))])
    rt.end_serial(0)
    assert not rt.stopped("f")
    rt.run_phase([Tile(1, {"f": [one]}, set_to(1), writes={"f": [one]}, fresh=frozenset("f"))])
    rt.end_serial(1)
    monkeypatch.setattr(R, "STOP_PERIOD", 3600.0)
    assert not rt.stopped("f")              # asked a moment ago: not again yet
    rt._looked = -3600.0
    assert not rt.stopped("f")              # asked now: the answer comes later
    assert rt.stopped("f") and flag[0] == 0  # the device's value; the host's is stale
    # an answer still on its way is waited for only STOP_AHEAD iterations later
    class Pending:
        command_execution_status, waited = 1, 0

        def wait(self):
            self.waited += 1
    e = Pending()
    rt._look = ("f", np.ones(1, np.int32), e, rt.devices[0], rt._calls)     # asked at the last call
    for _ in range(R.STOP_AHEAD - 1):
        assert not rt.stopped("f") and e.waited == 0
    assert rt.stopped("f") and e.waited == 1
    rt._looked = -3600.0
    assert not rt.stopped("A")               # not one element: never a flag


def test_stopped_takes_the_host_value_once_its_store_is_done():
    """A flag that flows out to the host every iteration: its newest pending store is the
    answer to wait for (after STOP_AHEAD iterations at the latest), then the host's value."""
    import bbmm.runtime as R
    flag = np.zeros(1, np.int32)
    rt = Runtime(polling(1), {"f": flag})

    class Pending:
        command_execution_status, waited = 1, 0

        def wait(self):
            self.waited += 1
            flag[0] = 1                        # the store lands
    e = Pending()
    rt.directory.order.pending["f"] = [(Box((0,), (0,)), e, rt.devices[0], True, 0)]
    assert not rt.stopped("f")                 # on its way: asked for
    for _ in range(R.STOP_AHEAD - 1):
        assert not rt.stopped("f") and e.waited == 0
    assert rt.stopped("f") and e.waited == 1


class _Slow(NullDevice):
    """A device whose queue takes ``delay`` seconds to drain at finish()."""

    delay = 0.05

    def finish(self) -> None:
        self.finished = getattr(self, "finished", 0) + 1
        time.sleep(self.delay)


def test_loop_time_waits_for_the_devices_and_leaves_out_the_write_out():
    n = 8
    rt = Runtime([_Slow(0), _Slow(1)], {"path": floyd_input(n)})
    assert rt.stats.loop_s is None
    run_floyd(rt, n, 4)     # finishes the runtime: the loop time is taken then
    loop = rt.stats.loop_s
    # the devices' work of the last phase is in it (each device drained once before it)
    assert loop is not None and loop >= _Slow.delay * 2
    assert rt.stats.as_json()["loop_s"] == loop
    rt.finish()             # a second finish keeps the loop's time
    assert rt.stats.loop_s == loop


class _SlowStart(NullDevice):
    """A device whose first read-in takes 0.2 s (a process that started late)."""

    def write_rect(self, *args, **kw):
        if not getattr(self, "started", False):
            self.started = True
            time.sleep(0.2)
        return super().write_rect(*args, **kw)


def test_loop_time_starts_after_the_first_serial_iteration():
    n = 8
    rt = Runtime([_SlowStart(0)], {"path": floyd_input(n)})
    end = rt.end_serial
    rt.end_serial = lambda k: end((k,))  # the serial iterators, as generated drivers pass them
    t0 = time.perf_counter()
    run_floyd(rt, n, 4)
    assert rt.stats.serial_iterations == n
    assert rt.stats.loop_s < time.perf_counter() - t0 - 0.15


def test_loop_time_is_none_without_a_phase():
    rt = Runtime(make(1), {"path": floyd_input(4)})
    rt.finish()
    assert rt.stats.loop_s is None


# {{{ flow-out parts of one copy stored as one


def _copy(box, stale=()):
    from bbmm.tiles import Copy
    return Copy("A", box, None, None, 4, stale=list(stale))


def test_flowout_parts_of_one_copy_are_stored_as_their_hull():
    """LU's row k + 1 leaves as [k+1][ub+1..n-1] and [k+1][k+1]: one store of the row's
    hull, which the copy holds newest, standing for the two parts."""
    from bbmm.runtime import _merged
    c = _copy(Box((0, 0), (7, 99)))
    parts = [(c, Box((3, 40), (3, 99))), (c, Box((3, 3), (3, 3)))]
    assert _merged(parts) == [(c, Box((3, 3), (3, 99)), [r for _, r in parts])]


def test_flowout_parts_stay_apart_where_the_hull_is_not_newest_or_too_large():
    from bbmm.runtime import MERGE_BYTES, _merged
    def parts(c):
        return [(c, Box((3, 40), (3, 99))), (c, Box((3, 3), (3, 3)))]
    stale = _copy(Box((0, 0), (7, 99)), stale=[Box((3, 10), (3, 20))])
    assert _merged(parts(stale)) == [(c, r, None) for c, r in parts(stale)]
    halos = _copy(Box((0, 0), (9, 9)))                   # a tile's two halo rows
    rows = [(halos, Box((0, 0), (0, 9))), (halos, Box((9, 0), (9, 9)))]
    assert _merged(rows) == [(c, r, None) for c, r in rows]   # more than their own bytes
    wide = MERGE_BYTES // 4 + 8                          # a gap of more than MERGE_BYTES
    far = _copy(Box((0, 0), (0, 3 * wide)))
    split = [(far, Box((0, 0), (0, wide))), (far, Box((0, 2 * wide + 2), (0, 3 * wide)))]
    assert _merged(split) == [(c, r, None) for c, r in split]
    a, b = _copy(Box((0, 0), (7, 99))), _copy(Box((0, 0), (7, 99)))
    two = [(a, Box((3, 3), (3, 3))), (b, Box((3, 5), (3, 5)))]
    assert _merged(two) == [(c, r, None) for c, r in two]   # two copies: two stores


def test_a_hull_of_a_tile_run_in_parts_is_stored_only_within_its_first_rows():
    from bbmm.runtime import _merged
    c = _copy(Box((0, 0), (7, 99)))
    parts = [(c, Box((3, 40), (3, 99))), (c, Box((3, 3), (3, 3)))]
    assert _merged(parts, (0, 0, 0), [(3, 3)])[0][1] == Box((3, 3), (3, 99))
    assert _merged(parts, (0, 0, 0), [(4, 4)]) == [(c, r, None) for c, r in parts]
    assert _merged(parts, None, [(3, 3)]) == [(c, r, None) for c, r in parts]


def test_a_tiles_flowout_in_one_row_leaves_in_one_copy_and_keeps_its_records():
    """A tile whose flow-out is two boxes of row 3 stores their hull: one copy to the host
    after its read-in, the elements between them included; the records over those stay,
    as the two boxes alone would leave them."""
    devs = [NullDevice(i, cap=1 << 20, arena_size=1 << 12) for i in range(2)]
    rt = Runtime(devs, {"A": np.arange(64.0).reshape(8, 8)})
    whole = Box((0, 0), (7, 7))
    fo = {"A": [Box((3, 5), (3, 7)), Box((3, 3), (3, 3))]}
    rt.run_phase([Tile(0, {"A": [whole]}, lambda d, tb, rows=None: None,
                       writes={"A": [whole]}, flowout=fo)])
    assert rt.stats.devices[0].copies == 2                  # the read-in, the flow-out
    assert rt.stats.bytes["flowout"] == 5 * 8               # row 3, columns 3..7
    dirty = [b for b, _ in rt.directory.dirty["A"]]
    assert any(b.overlaps(Box((3, 4), (3, 4))) for b in dirty)     # between the parts
    assert not any(b.overlaps(Box((3, 5), (3, 7))) or b.overlaps(Box((3, 3), (3, 3)))
                   for b in dirty)

# }}}


class _LaunchLog:
    """A device that builds kernels as ``(name, options)`` and logs its launches."""

    def __init__(self):
        self.launched = []

    def kernel(self, source, name, options):
        return (name, options)

    def launch(self, knl, gsize, local, args):
        self.launched.append((knl, tuple(gsize), tuple(local), list(args)))


def test_a_replayed_tile_with_a_new_copy_launches_as_planned_anew(monkeypatch):
    """A tile replayed with another copy of the same shape in a slot (Floyd's row ``k``,
    a new copy every serial iteration) launches with the kernel and NDRange its last
    replay planned and the new copy's arguments, without planning again: the same
    launch as one planned anew, for the whole tile and for its two ends in one launch
    (``BBMM_GAPS``). A copy whose offsets pass 32-bit ints takes another kernel
    variant, and is planned anew."""
    from bbmm import hostlib
    from bbmm.tiles import Copy, TileBuffers

    plans = []
    plan = hostlib._plan_launch
    monkeypatch.setattr(hostlib, "_plan_launch", lambda *a: plans.append(1) or plan(*a))
    null = NullDevice(0)

    def copy(lo, hi):
        n = (hi[0] - lo[0] + 1) * (hi[1] - lo[1] + 1)
        return Copy("A", Box(lo, hi), null, null.alloc(4 * n), 4)

    def buffers(row, before=None):
        own = copy((0, 0), (7, 15)) if before is None else before.pieces["A"][0][1]
        return TileBuffers({"A": [(own.box, own), (row.box, row)]}, {"A": [0, 1, 0]},
                           before=before)

    def same(x, y):
        return x[:3] == y[:3] and len(x[3]) == len(y[3]) and all(
            a is b or (isinstance(a, np.generic) and a == b) for a, b in zip(x[3], y[3]))

    arrays = (("A", 2, 2, (0, 1, 2)),)
    for rows in (None, (0, 0, 7, 7)):
        dev = _LaunchLog()
        go = lambda tb: hostlib.launch(dev, tb, "src", "k", [3, 0, 7], ((0, 7), (0, 15)),  # noqa: E731
                                       (1, 0), arrays, local=(16, 1), rows=rows)
        first = buffers(copy((3, 0), (3, 15)))
        go(first)
        n = len(plans)
        moved = buffers(copy((4, 0), (4, 15)), before=first)
        go(moved)
        assert len(plans) == n  # carried, not planned
        go(TileBuffers(moved.pieces, moved.access))  # the same copies, planned anew
        assert len(plans) == n + 1
        assert same(dev.launched[1], dev.launched[2])
        assert not same(dev.launched[0], dev.launched[1])  # the row's own arguments
        far = buffers(copy((1 << 28, 0), (1 << 28, 15)), before=moved)
        go(far)
        assert len(plans) == n + 2  # offsets past 32-bit ints: planned anew
        assert dev.launched[3][0] != dev.launched[2][0]


def test_a_replayed_tile_on_a_smaller_grid_takes_its_last_kernel(monkeypatch):
    """A tile replayed on other pieces and a smaller grid (LU's shrinking corner) is
    planned for its grid but takes the kernel its last replay prepared, with its own
    array arguments: the same launch as one prepared anew; a copy that needs the other
    kernel variant (offsets past 32-bit ints) is prepared anew."""
    from bbmm import hostlib
    from bbmm.tiles import Copy, TileBuffers

    prepared = []
    prepare = hostlib._prepare
    monkeypatch.setattr(hostlib, "_prepare", lambda *a: prepared.append(1) or prepare(*a))
    null = NullDevice(0)

    def buffers(lo, before=None):
        corner = Copy("A", Box((lo, lo), (15, 15)), null, null.alloc(4 * (16 - lo) ** 2), 4)
        return TileBuffers({"A": [(corner.box, corner)]}, {"A": [0, 0]}, before=before)

    arrays = (("A", 1, 2, (0, 1)),)
    dev = _LaunchLog()

    def go(tb, lo):
        hostlib.launch(dev, tb, "src", "k", [16, lo], ((lo, 15), (lo, 15)), (1, 0), arrays,
                       local=(4, 4))

    first = buffers(1)
    go(first, 1)
    assert len(prepared) == 1
    nxt = buffers(2, before=first)
    go(nxt, 2)
    assert len(prepared) == 1  # the kernel carried
    go(TileBuffers(nxt.pieces, nxt.access), 2)  # the same, prepared anew
    assert len(prepared) == 2
    a, b = dev.launched[1], dev.launched[2]
    assert a[:3] == b[:3] and len(a[3]) == len(b[3])
    assert all(x is y or (isinstance(x, np.generic) and x == y) for x, y in zip(a[3], b[3]))
    assert dev.launched[0][1:] != a[1:]  # another grid, other arguments
    far = TileBuffers({"A": [(Box((1 << 28, 2), (1 << 28, 15)),
                              Copy("A", Box((1 << 28, 2), (1 << 28, 15)), null,
                                   null.alloc(4 * 14), 4))]}, {"A": [0, 0]}, before=nxt)
    go(far, 2)
    assert len(prepared) == 3  # the other kernel variant
    assert dev.launched[3][0] != a[0]


@pytest.mark.parametrize("rows", [lambda r: (r, r), lambda r: (0, r - 1, r + 1, 7)])
def test_a_launch_on_moving_rows_is_looked_up_by_its_shape(monkeypatch, rows):
    """A launch on rows that move every serial iteration (Floyd's row ``k + 1`` run
    first, then the rows either side of it in one launch) is planned once per shape:
    the next rows, on these buffers or on the same tile's next ones, launch with the
    kernel, NDRange and array arguments planned before and their own bounds, origins
    and gap, the same launch as one planned anew."""
    from bbmm import hostlib
    from bbmm.tiles import Copy, TileBuffers

    plans = []
    plan = hostlib._plan_launch
    monkeypatch.setattr(hostlib, "_plan_launch", lambda *a: plans.append(1) or plan(*a))
    null = NullDevice(0)
    own = Copy("A", Box((0, 0), (7, 15)), null, null.alloc(4 * 128), 4)
    arrays = (("A", 1, 2, (0, 1)),)

    def same(x, y):
        return x[:3] == y[:3] and len(x[3]) == len(y[3]) and all(
            a is b or (isinstance(a, np.generic) and a == b) for a, b in zip(x[3], y[3]))

    dev = _LaunchLog()
    go = lambda tb, r: hostlib.launch(dev, tb, "src", "k", [3, 0, 7],  # noqa: E731
                                      ((0, 7), (0, 15)), (1, 0), arrays, local=(16, 1),
                                      rows=rows(r))
    tb = TileBuffers({"A": [(own.box, own)]}, {"A": [0, 0]})
    go(tb, 2)
    assert len(plans) == 1
    for r in (3, 4, 5):
        nxt = TileBuffers(tb.pieces, tb.access, before=tb)
        go(nxt, r)
        go(tb, r)
        assert len(plans) == 1  # looked up, on the next buffers and on these
        go(TileBuffers(tb.pieces, tb.access), r)  # planned anew
        assert len(plans) == 2
        plans.pop()
        assert same(dev.launched[-3], dev.launched[-1])
        assert same(dev.launched[-2], dev.launched[-1])
        assert not same(dev.launched[0], dev.launched[-1])  # the rows' own arguments


def test_lean_arguments_are_the_used_slots_buffer_base_and_strides():
    """A lean kernel's arguments of an array (:func:`bbmm.runtime.lean_args`): each
    piece's buffer, base and strides, for as many slots as the accesses use; an array
    with an access split over pieces, or whose accesses' slots are not all known, takes
    every argument instead (-1); an array with no piece in the tile pads one slot."""
    from bbmm.runtime import TileBuffers, kernel_args, lean_args, lean_slots
    from bbmm.tiles import Copy

    dev = NullDevice(0)
    boxes = [Box((0, 0), (3, 9)), Box((4, 0), (4, 9))]
    copies = [Copy("A", b, dev, dev.alloc(b.volume * 4), 4) for b in boxes]
    tb = TileBuffers({"A": [(b, c) for b, c in zip(boxes, copies)]}, {"A": [0, 1, 0]})
    assert lean_slots(tb, "A", 4, 3) == 2
    assert lean_args(tb, "A", 2, 2) == [*copies[0].kernel_args(), *copies[1].kernel_args()]
    full = kernel_args(tb, "A", 4, 2)
    assert len(full) == 4 * (2 + 1 + 4) + 3 and len(lean_args(tb, "A", 2, 2)) == 6
    tb.access["A"] = [0, -1, 0]
    assert lean_slots(tb, "A", 4, 3) == -1            # split: every slot, bounds and sels
    tb.access["A"] = [0, 1]
    assert lean_slots(tb, "A", 4, 3) == -1            # a slot not given
    tb.access["A"] = [0, 0, 0]
    assert lean_slots(tb, "A", 4, 3) == 1
    with pytest.raises(ValueError, match="A: 5 boxes for 4 kernel slots"):
        tb.access["A"] = [4, 0, 0]
        lean_slots(tb, "A", 4, 3)
    empty = TileBuffers({}, {"B": []})
    assert lean_slots(empty, "B", 2, 0) == 1
    pad = lean_args(empty, "B", 1, 2)
    assert pad[0] is None and len(pad) == 3 and [int(x) for x in pad[1:]] == [0, 0]

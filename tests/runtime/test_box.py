"""Property tests of :mod:`bbmm.box` against numpy boolean masks.

Every box is drawn inside a small universe ``[-3, 6]^ndim`` (1 to 5 dimensions),
so its point set can be written out as a boolean mask, and each operation is
checked against the same operation on masks. Empty boxes (``lo > hi`` in some
dimension) and single points are drawn on purpose.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bbmm.box import Box, covers, disjoint, hull_all, union_volume

U_LO, U_HI = -3, 6
SIZE = U_HI - U_LO + 1
COORD = np.arange(U_LO, U_HI + 1)

FAST = settings(max_examples=200, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


# ---- strategies ---------------------------------------------------------------------

@st.composite
def boxes(draw, nd: int) -> Box:
    """A box in the universe; about one in four is empty (one dimension with lo > hi)."""
    lo, hi = [], []
    for _ in range(nd):
        a = draw(st.integers(U_LO, U_HI))
        b = draw(st.integers(U_LO, U_HI))
        lo.append(min(a, b))
        hi.append(max(a, b))
    if draw(st.integers(0, 3)) == 0:  # make it empty in one dimension
        # (its bounds may stick out of the universe by 2: the box has no points anyway)
        d = draw(st.integers(0, nd - 1))
        a = draw(st.integers(U_LO - 1, U_HI + 2))
        b = draw(st.integers(U_LO - 2, a - 1))
        lo[d], hi[d] = a, b
    return Box(tuple(lo), tuple(hi))


ndims = st.integers(1, 5)


@st.composite
def box_pairs(draw) -> tuple[Box, Box]:
    nd = draw(ndims)
    return draw(boxes(nd)), draw(boxes(nd))


@st.composite
def box_lists(draw, max_size: int = 6) -> tuple[list[Box], int]:
    nd = draw(ndims)
    return draw(st.lists(boxes(nd), min_size=0, max_size=max_size)), nd


@st.composite
def box_and_point(draw) -> tuple[Box, tuple[int, ...]]:
    nd = draw(ndims)
    b = draw(boxes(nd))
    p = tuple(draw(st.integers(U_LO, U_HI)) for _ in range(nd))
    return b, p


# ---- masks --------------------------------------------------------------------------

def mask(b: Box) -> np.ndarray:
    """The points of ``b`` as a boolean array over the universe (built from lo/hi only)."""
    nd = len(b.lo)
    m = np.ones((SIZE,) * nd, dtype=bool)
    for d in range(nd):
        shape = [1] * nd
        shape[d] = SIZE
        x = COORD.reshape(shape)
        m &= (x >= b.lo[d]) & (x <= b.hi[d])
    return m


def empty_mask(nd: int) -> np.ndarray:
    return np.zeros((SIZE,) * nd, dtype=bool)


def union_mask(bs: list[Box], nd: int) -> np.ndarray:
    m = empty_mask(nd)
    for b in bs:
        m |= mask(b)
    return m


def assert_result_box(b: object, nd: int) -> None:
    """A box produced by an operation: right type and ndim, plain-int bounds, inside
    the universe (so that its mask is exact)."""
    assert type(b) is Box
    assert len(b.lo) == len(b.hi) == nd
    assert all(type(v) is int for v in b.lo + b.hi)
    if not b.is_empty:
        assert all(U_LO <= l and h <= U_HI for l, h in zip(b.lo, b.hi)), b
    assert int(mask(b).sum()) == b.volume


def assert_disjoint_pieces(pieces: list[Box], nd: int) -> None:
    for p in pieces:
        assert_result_box(p, nd)
        assert not p.is_empty, p
    for p, q in itertools.combinations(pieces, 2):
        assert not (mask(p) & mask(q)).any(), (p, q)


def extent(m: np.ndarray) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """Per-dimension min and max coordinate of the true points of ``m``; None if none."""
    if not m.any():
        return None
    idx = np.nonzero(m)
    return (tuple(int(i.min()) + U_LO for i in idx), tuple(int(i.max()) + U_LO for i in idx))


# ---- attributes ---------------------------------------------------------------------

@FAST
@given(ndims.flatmap(boxes))
@example(Box((2,), (2,)))  # single point
@example(Box((0, 0), (-1, 3)))  # empty in one dimension
@example(Box((6, 6, 6, 6, 6), (6, 6, 6, 6, 6)))
def test_volume_shape_is_empty(b):
    m = mask(b)
    assert b.ndim == m.ndim
    assert b.volume == int(m.sum())
    assert b.is_empty == (not m.any())
    # each dimension's extent is the number of its own coordinates inside the bounds
    assert b.shape == tuple(int(((COORD >= l) & (COORD <= h)).sum())
                            for l, h in zip(b.lo, b.hi))
    if not b.is_empty:
        assert extent(m) == (b.lo, b.hi)
        assert int(np.prod(b.shape)) == b.volume
    else:
        assert 0 in b.shape


@FAST
@given(ndims.flatmap(boxes))
@example(Box((-3, 0), (-5, 2)))  # empty: hi + 1 - origin < 0 must not wrap around
def test_slices_cut_the_box(b):
    nd = b.ndim
    arr = np.arange(SIZE ** nd).reshape((SIZE,) * nd)
    cut = arr[b.slices(origin=(U_LO,) * nd)]
    assert cut.shape == b.shape
    # a box is a C-ordered block, so its flattened values are the masked values in order
    assert np.array_equal(cut.ravel(), arr[mask(b)])
    # without an origin the array's index 0 is coordinate 0
    moved = b.shift((-U_LO,) * nd)
    assert np.array_equal(arr[moved.slices()].ravel(), arr[mask(b)])
    if not b.is_empty:
        assert Box.from_slices(b.slices()) == b


@FAST
@given(box_and_point())
def test_contains(bp):
    b, p = bp
    expect = bool(mask(b)[tuple(c - U_LO for c in p)])
    assert b.contains(p) == expect
    assert (p in b) == expect
    assert b.contains(list(p)) == expect
    with pytest.raises(ValueError):
        b.contains(p + (0,))


# ---- Table I ------------------------------------------------------------------------

@FAST
@given(box_pairs())
@example((Box((0,), (0,)), Box((0,), (0,))))
@example((Box((0, 0), (3, 3)), Box((4, 0), (5, 3))))  # touching, not overlapping
@example((Box((5, 0), (3, 2)), Box((-3, 0), (6, 2))))  # empty, inside the other's hull
def test_intersect(ab):
    a, b = ab
    expect = mask(a) & mask(b)
    r = a.intersect(b)
    assert (r is None) == (not expect.any())
    if r is not None:
        assert_result_box(r, a.ndim)
        assert np.array_equal(mask(r), expect)
    assert (a & b) == r
    assert (b & a) == r
    assert a.overlaps(b) == expect.any() == b.overlaps(a)


@FAST
@given(box_pairs())
@example((Box((0, 0, 0), (4, 4, 4)), Box((1, 1, 1), (3, 3, 3))))  # hole: 6 pieces
@example((Box((0,), (4,)), Box((0,), (4,))))
def test_subtract(ab):
    a, b = ab
    nd = a.ndim
    pieces = a.subtract(b)
    assert isinstance(pieces, list)
    assert len(pieces) <= 2 * nd
    assert_disjoint_pieces(pieces, nd)
    assert np.array_equal(union_mask(pieces, nd), mask(a) & ~mask(b))
    assert (a - b) == pieces


@FAST
@given(box_pairs())
def test_hull(ab):
    a, b = ab
    h = a.hull(b)
    assert_result_box(h, a.ndim)
    union = mask(a) | mask(b)
    assert not (union & ~mask(h)).any()  # contains both
    ext = extent(union)
    if ext is None:
        assert h.is_empty
    else:
        assert (h.lo, h.hi) == ext  # and no more: each bound is attained by a point
    assert b.hull(a) == h or (h.is_empty and b.hull(a).is_empty)


@FAST
@given(box_pairs())
@example((Box((0, 5), (3, 4)), Box((1, 1), (1, 1))))  # empty is a subset of anything
def test_issubset(ab):
    a, b = ab
    expect = not (mask(a) & ~mask(b)).any()
    assert a.issubset(b) == expect
    assert (a <= b) == expect
    assert a.issubset(a)


def _lift(b: Box | None) -> Box | None:
    """A 2-D box as a 3-D one, one point deep in a third dimension: the general code's
    view of it (the 2-D operations are unrolled by hand)."""
    return None if b is None else Box(b.lo + (0,), b.hi + (0,))


@FAST
@given(st.lists(boxes(2), min_size=2, max_size=6))
def test_unrolled_2d_operations_match_the_general_code(bs):
    """The 2-D fast paths give what the n-D loops give, piece for piece and in order."""
    from bbmm.box import _subtract_from, _within, hull_all
    a, b = bs[0], bs[1]
    a3, b3 = _lift(a), _lift(b)
    assert [_lift(p) for p in a.subtract(b)] == a3.subtract(b3)
    assert _lift(a.hull(b)) == a3.hull(b3)
    assert a.shape + (1,) == a3.shape and a.volume == a3.volume
    assert a.issubset(b) == a3.issubset(b3)
    assert a.overlaps(b) == a3.overlaps(b3)
    assert _lift(a.intersect(b)) == a3.intersect(b3)
    assert _within(a.lo, a.hi, b.lo, b.hi) == _within(a3.lo, a3.hi, b3.lo, b3.hi)
    if not a.is_empty and not b.is_empty:
        got = _subtract_from(a, b)
        want = _subtract_from(a3, b3)
        assert (got is None) == (want is None)
        if got is not None:
            assert [_lift(p) for p in got] == want
    assert _lift(hull_all(bs)) == hull_all([_lift(x) for x in bs])
    assert [_lift(p) for p in disjoint(bs)] == disjoint([_lift(x) for x in bs])


# ---- Algorithm 2 and friends ----------------------------------------------------------

@SLOW
@given(box_lists(), st.booleans())
@example(([Box((0, 0), (4, 6)), Box((0, 0), (0, 0))], 2), True)  # subsumed
@example(([Box((0, 0), (1, 3)), Box((2, 0), (3, 3))], 2), True)  # merge to one box
def test_disjoint(bl, merge):
    bs, nd = bl
    out = disjoint(bs, merge=merge)
    assert_disjoint_pieces(out, nd)
    assert np.array_equal(union_mask(out, nd), union_mask(bs, nd))
    if merge:
        assert len(out) <= len(disjoint(bs, merge=False))
    assert union_volume(bs) == int(union_mask(bs, nd).sum())


@FAST
@given(box_lists(max_size=8))
def test_region_add_builds_the_union(bl):
    """``regions.add`` keeps a region disjoint and exact, box after box."""
    from bbmm import regions as R
    bs, nd = bl
    region: list[Box] = []
    for b in bs:
        if b.is_empty:
            continue
        region = R.add(region, b)
        assert_disjoint_pieces(region, nd)
    assert np.array_equal(union_mask(region, nd), union_mask(bs, nd))


def test_region_add_fuses_rows_added_one_by_one():
    """Rows made stale again one by one (Floyd's rows, refreshed and overwritten) stay one
    box, not a box per row."""
    from bbmm import regions as R
    rows = Box((10, 0), (19, 7))
    region = [rows]
    for k in range(10, 20):
        region = R.minus(region, Box((k, 0), (k, 7)))      # row k refreshed
        region = R.add(region, Box((10, 0), (19, 7)))      # the other device writes all
        assert region == [rows]
    assert R.add([Box((0, 0), (0, 3))], Box((0, 5), (0, 6))) == [
        Box((0, 0), (0, 3)), Box((0, 5), (0, 6))]            # not touching: two boxes


@SLOW
@given(box_lists(max_size=5), st.data())
def test_covers(bl, data):
    bs, nd = bl
    target = data.draw(boxes(nd))
    expect = not (mask(target) & ~union_mask(bs, nd)).any()
    assert covers(bs, target) == expect
    # a target built from the boxes' own pieces is always covered
    for p in disjoint(bs):
        assert covers(bs, p)


@FAST
@given(box_lists())
def test_hull_all(bl):
    bs, nd = bl
    h = hull_all(bs)
    ext = extent(union_mask(bs, nd))
    if ext is None:
        assert h is None
    else:
        assert (h.lo, h.hi) == ext


def test_disjoint_examples():
    # Floyd-Warshall: path[i][k] inside path[i][j] never splits the tile box
    tile = Box((0, 0), (31, 31))
    row = Box((5, 0), (5, 31))
    col = Box((0, 40), (31, 40))
    assert disjoint([row, tile, col]) == [tile, col]
    # two halves fuse back into one box
    assert disjoint([Box((0, 0), (1, 3)), Box((2, 0), (3, 3))]) == [Box((0, 0), (3, 3))]
    assert disjoint([]) == []
    assert disjoint([Box((1,), (0,))]) == []
    assert hull_all([]) is None
    assert union_volume([]) == 0
    assert covers([], Box((1,), (0,)))
    assert not covers([], Box((1,), (1,)))


# ---- construction and errors ----------------------------------------------------------

def test_bounds_of_different_lengths():
    with pytest.raises(ValueError):
        Box((0, 0), (1,))
    with pytest.raises(ValueError):
        Box((0,), (1, 1))


@pytest.mark.parametrize("bad", [1.0, 1.5, "1", None, True, False, np.float64(1.0),
                                 np.bool_(True), 1j])
def test_non_integer_bounds(bad):
    with pytest.raises(TypeError):
        Box((0, bad), (1, 1))
    with pytest.raises(TypeError):
        Box((0, 0), (bad, 1))


@pytest.mark.parametrize("bad", [3, None, "01", b"01", 1.0])
def test_bounds_not_a_sequence(bad):
    with pytest.raises(TypeError):
        Box(bad, (1, 1))
    with pytest.raises(TypeError):
        Box((1, 1), bad)


def test_zero_dimensions():
    with pytest.raises(ValueError):
        Box((), ())
    with pytest.raises(ValueError):
        Box([], [])


_BINARY = [
    lambda a, b: a.intersect(b),
    lambda a, b: a & b,
    lambda a, b: a.subtract(b),
    lambda a, b: a - b,
    lambda a, b: a.hull(b),
    lambda a, b: a.issubset(b),
    lambda a, b: a <= b,
    lambda a, b: a.overlaps(b),
]


@pytest.mark.parametrize("op", _BINARY)
def test_different_ndim(op):
    a = Box((0, 0), (3, 3))
    b = Box((0, 0, 0), (3, 3, 3))
    with pytest.raises(ValueError):
        op(a, b)
    with pytest.raises(ValueError):
        op(b, a)
    with pytest.raises(ValueError):  # also when one of them is empty
        op(Box((1, 0), (0, 3)), b)


@pytest.mark.parametrize("op", _BINARY)
@pytest.mark.parametrize("other", [None, 3, (0, 0), ((0, 0), (3, 3)), "box"])
def test_non_box_operand(op, other):
    with pytest.raises(TypeError):
        op(Box((0, 0), (3, 3)), other)


def test_disjoint_different_ndim():
    with pytest.raises(ValueError):
        disjoint([Box((0,), (3,)), Box((0, 0), (3, 3))])


def test_numpy_integers_become_python_ints():
    b = Box(np.array([1, 2], dtype=np.int32), (np.int64(3), np.uint8(4)))
    assert b.lo == (1, 2) and b.hi == (3, 4)
    assert all(type(v) is int for v in b.lo + b.hi)
    assert b == Box((1, 2), (3, 4))
    # lists become tuples
    c = Box([1, 2], [3, 4])
    assert type(c.lo) is tuple and type(c.hi) is tuple
    assert Box.from_shape(np.array([4, 5])) == Box((0, 0), (3, 4))


def test_hashable_and_equal_by_value():
    a = Box((0, 1), (2, 3))
    b = Box([0, 1], np.array([2, 3]))
    assert a == b and hash(a) == hash(b)
    assert len({a, b, Box((0, 1), (2, 4))}) == 2
    assert a != Box((0, 1), (2, 4))
    assert {a: 1}[b] == 1
    # results of operations compare and hash like constructed boxes
    r = Box((0, 0), (5, 5)) & Box((0, 1), (2, 3))
    assert r == a and hash(r) == hash(a)


@FAST
@given(ndims.flatmap(boxes), st.data())
def test_shift(b, data):
    nd = b.ndim
    off = tuple(data.draw(st.integers(-2, 2)) for _ in range(nd))
    s = b.shift(off)  # may leave the universe: no masks here
    assert type(s) is Box and all(type(v) is int for v in s.lo + s.hi)
    assert s.volume == b.volume and s.shape == b.shape
    assert s.shift(tuple(-o for o in off)) == b
    if not b.is_empty:
        assert s.lo == tuple(l + o for l, o in zip(b.lo, off))
    assert b.shift(np.array(off)) == s
    with pytest.raises(ValueError):
        b.shift(off + (0,))
    with pytest.raises(TypeError):
        b.shift((0.5,) * nd)


def test_frozen():
    a = Box((0,), (1,))
    with pytest.raises(AttributeError):
        a.lo = (5,)  # type: ignore[misc]

"""Bounding boxes and their set algebra (paper Section 4, Table I, Algorithm 2).

A :class:`Box` is an n-dimensional hyperrectangle of integer array indices with
*inclusive* bounds ``lo[d] <= x[d] <= hi[d]``; ``lo[d] > hi[d]`` in any dimension
means empty. A list of boxes is the paper's *simple union* (``bb_simple_union``).

=================  ========================  =====================================
paper (Table I)    here                      result
=================  ========================  =====================================
bb_intersection    ``a.intersect(b)``, a & b  Box, or None when empty
bb_subtract        ``a.subtract(b)``, a - b   list of <= 2*ndim disjoint non-empty Boxes
bb_convex_union    ``a.hull(b)``              smallest Box containing both
bb_simple_union    ``[a, b]``                 a list
bb_is_subset       ``a.issubset(b)``, a <= b  bool
Algorithm 2        :func:`disjoint`           disjoint Boxes covering the union
=================  ========================  =====================================

These run in the host's hot loop (once per tile and array), so the operations
work on plain tuples with explicit ``for``/``if`` loops (in CPython cheaper, for
2 or 3 dimensions, than ``map(max, ...)``, comprehensions or generators) and
build their results through :func:`_box`, which skips the argument checks of
the public constructor. The module functions, whose boxes are checked once on
entry, call the unchecked helpers (``_within``, ``_subtract``, ``_subtract_from``)
directly. ``scripts/bench_box.py`` times them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

__all__ = ["Box", "disjoint", "hull_all", "union_volume", "covers", "merge_adjacent"]


def _as_bounds(name: str, values: object) -> tuple[int, ...]:
    if type(values) is tuple:  # fast path: a tuple of plain ints is kept as it is
        for v in values:
            if type(v) is not int:
                break
        else:
            return values
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"Box {name} must be a sequence of integers, got {values!r}")
    out = []
    for v in values:  # type: ignore[union-attr]
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"Box {name} must hold integers, got {v!r} "
                            f"of type {type(v).__name__} in {values!r}")
        out.append(int(v))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Box:
    """Hyperrectangle ``{ [x0..xn-1] : lo[d] <= xd <= hi[d] }`` of array indices."""

    lo: tuple[int, ...]
    """Inclusive lower bound per dimension (outermost first, as in C)."""
    hi: tuple[int, ...]
    """Inclusive upper bound per dimension."""

    def __post_init__(self) -> None:
        lo = _as_bounds("lo", self.lo)
        hi = _as_bounds("hi", self.hi)
        if len(lo) != len(hi):
            raise ValueError(f"Box bounds of different lengths: lo={lo} has {len(lo)}, "
                             f"hi={hi} has {len(hi)}")
        if not lo:
            raise ValueError("Box needs at least one dimension")
        if lo is not self.lo:
            object.__setattr__(self, "lo", lo)
        if hi is not self.hi:
            object.__setattr__(self, "hi", hi)

    @classmethod
    def _new(cls, lo: tuple[int, ...], hi: tuple[int, ...]) -> Box:
        """Trusted constructor for results of box operations (no checks)."""
        b = object.__new__(cls)
        _set_lo(b, lo)
        _set_hi(b, hi)
        return b

    @classmethod
    def unchecked(cls, lo: tuple[int, ...], hi: tuple[int, ...]) -> Box:
        """A box from tuples of plain ints of one length, without validation (generated
        drivers: their bounds are integer expressions of integer parameters)."""
        b = object.__new__(cls)
        _set_lo(b, lo)
        _set_hi(b, hi)
        return b

    @classmethod
    def from_shape(cls, shape: Sequence[int]) -> Box:
        """The box of a whole array of this shape: ``[0, s-1]`` per dimension."""
        return cls(tuple(0 for _ in shape), tuple(int(s) - 1 for s in shape))

    @classmethod
    def from_slices(cls, slices: Sequence[slice]) -> Box:
        """Inverse of :meth:`slices` for ``slice(start, stop)`` with step 1."""
        return cls(tuple(s.start for s in slices), tuple(s.stop - 1 for s in slices))

    # ---- attributes -------------------------------------------------------------

    @property
    def ndim(self) -> int:
        return len(self.lo)

    @property
    def shape(self) -> tuple[int, ...]:
        """Extent per dimension, 0 in every dimension that is empty."""
        try:  # the common case, 2-D, unrolled (a 1-D or 3-D box fails to unpack)
            l0, l1 = self.lo
            h0, h1 = self.hi
        except ValueError:
            return tuple(max(0, h - l + 1) for l, h in zip(self.lo, self.hi))
        a = h0 - l0 + 1
        b = h1 - l1 + 1
        return (a if a > 0 else 0, b if b > 0 else 0)

    @property
    def volume(self) -> int:
        """Number of integer points (0 when empty)."""
        try:  # the common case, 2-D, unrolled: box algebra runs per tile
            l0, l1 = self.lo
            h0, h1 = self.hi
        except ValueError:
            pass
        else:
            a = h0 - l0 + 1
            b = h1 - l1 + 1
            return a * b if a > 0 and b > 0 else 0
        v = 1
        for l, h in zip(self.lo, self.hi):
            if h < l:
                return 0
            v *= h - l + 1
        return v

    @property
    def is_empty(self) -> bool:
        lo = self.lo
        if len(lo) == 2:
            hi = self.hi
            return hi[0] < lo[0] or hi[1] < lo[1]
        for l, h in zip(lo, self.hi):
            if h < l:
                return True
        return False

    def slices(self, origin: Sequence[int] | None = None) -> tuple[slice, ...]:
        """Slices that cut this box out of a numpy array (whose index 0 is ``origin``)."""
        if origin is None:
            lo, hi = self.lo, self.hi
            if len(lo) == 2:  # unrolled: a message's box per exchange
                a, b = hi[0] + 1, hi[1] + 1
                return (slice(lo[0], a if a > lo[0] else lo[0]),
                        slice(lo[1], b if b > lo[1] else lo[1]))
            return tuple([slice(l, max(l, h + 1)) for l, h in zip(lo, hi)])
        return tuple(slice(l - o, max(l, h + 1) - o)
                     for l, h, o in zip(self.lo, self.hi, origin))

    def contains(self, point: Sequence[int]) -> bool:
        if len(point) != len(self.lo):
            raise ValueError(f"point {tuple(point)} has {len(point)} dimensions, "
                             f"box {self} has {self.ndim}")
        for p, l, h in zip(point, self.lo, self.hi):
            if p < l or p > h:
                return False
        return True

    def __contains__(self, point: Sequence[int]) -> bool:
        return self.contains(point)

    def shift(self, offset: Sequence[int]) -> Box:
        """The box moved by ``offset`` (``lo + offset``, ``hi + offset``)."""
        offset = _as_bounds("shift offset", offset)  # numpy integers become ints
        if len(offset) != len(self.lo):
            raise ValueError(f"offset {offset} has {len(offset)} dimensions, "
                             f"box {self} has {self.ndim}")
        return _box(tuple(l + o for l, o in zip(self.lo, offset)),
                    tuple(h + o for h, o in zip(self.hi, offset)))

    # ---- Table I ----------------------------------------------------------------
    # Each operation first checks ``other`` with one cheap test (the common case);
    # _check() only runs to raise the right error.

    def _check(self, other: object, op: str) -> None:
        if not isinstance(other, Box):
            raise TypeError(f"Box.{op} needs a Box, got {type(other).__name__}")
        if len(other.lo) != len(self.lo):
            raise ValueError(f"Box.{op} between boxes of different dimensions: "
                             f"{self} has {self.ndim}, {other} has {other.ndim}")

    def intersect(self, other: Box) -> Box | None:
        """bb_intersection: the common points, or None when there are none."""
        if type(other) is Box:
            try:  # both 2-D (a box of another rank fails to unpack)
                l0, l1 = self.lo
                h0, h1 = self.hi
                m0, m1 = other.lo
                n0, n1 = other.hi
            except ValueError:
                pass
            else:
                if m0 > l0:
                    l0 = m0
                if n0 < h0:
                    h0 = n0
                if h0 < l0:
                    return None
                if m1 > l1:
                    l1 = m1
                if n1 < h1:
                    h1 = n1
                if h1 < l1:
                    return None
                return _box((l0, l1), (h0, h1))
        if type(other) is not Box or len(other.lo) != len(self.lo):
            self._check(other, "intersect")
        lo = []
        hi = []
        for l, h, ol, oh in zip(self.lo, self.hi, other.lo, other.hi):
            if ol > l:
                l = ol
            if oh < h:
                h = oh
            if h < l:
                return None
            lo.append(l)
            hi.append(h)
        return _box(tuple(lo), tuple(hi))

    __and__ = intersect

    def subtract(self, other: Box) -> list[Box]:
        """bb_subtract: ``self - other`` as at most ``2*ndim`` disjoint non-empty boxes.

        Peels slabs off ``self`` one dimension at a time (below, then above the
        intersection); each later slab is confined to the intersection's extent in
        the dimensions already peeled, which is what makes the pieces disjoint.
        """
        if type(other) is not Box or len(other.lo) != len(self.lo):
            self._check(other, "subtract")
        if len(self.lo) == 2:
            slo, shi = self.lo, self.hi
            if shi[0] < slo[0] or shi[1] < slo[1]:
                return []  # self is empty
            out = _subtract_from(self, other)
            return [self] if out is None else out
        lo = []
        hi = []
        apart = False
        for l, h, ol, oh in zip(self.lo, self.hi, other.lo, other.hi):
            if h < l:
                return []  # self is empty
            if ol > l:
                l = ol
            if oh < h:
                h = oh
            if h < l:
                apart = True  # keep looking: self may still be empty in a later dim
            lo.append(l)
            hi.append(h)
        if apart:
            return [self]
        return _subtract(self.lo, self.hi, tuple(lo), tuple(hi))

    def __sub__(self, other: Box) -> list[Box]:
        return self.subtract(other)

    def hull(self, other: Box) -> Box:
        """bb_convex_union: the smallest box containing both (an empty box adds nothing)."""
        if type(other) is not Box or len(other.lo) != len(self.lo):
            self._check(other, "hull")
        if len(self.lo) == 2:
            l0, l1 = self.lo
            h0, h1 = self.hi
            m0, m1 = other.lo
            n0, n1 = other.hi
            if n0 < m0 or n1 < m1:
                return self  # other is empty
            if h0 < l0 or h1 < l1:
                return other
            return _box((m0 if m0 < l0 else l0, m1 if m1 < l1 else l1),
                        (n0 if n0 > h0 else h0, n1 if n1 > h1 else h1))
        lo = []
        hi = []
        for l, h, ol, oh in zip(self.lo, self.hi, other.lo, other.hi):
            if oh < ol:
                return self  # other is empty
            if h < l:
                return self if other.is_empty else other
            lo.append(ol if ol < l else l)
            hi.append(oh if oh > h else h)
        return _box(tuple(lo), tuple(hi))

    def issubset(self, other: Box) -> bool:
        """bb_is_subset: every point of ``self`` lies in ``other`` (the empty box is a subset of all)."""
        if type(other) is Box:
            try:  # both 2-D (a box of another rank fails to unpack)
                l0, l1 = self.lo
                h0, h1 = self.hi
                m0, m1 = other.lo
                n0, n1 = other.hi
            except ValueError:
                pass
            else:
                if l0 >= m0 and h0 <= n0 and l1 >= m1 and h1 <= n1:
                    return True
                return h0 < l0 or h1 < l1  # outside other's bounds: only an empty box
        if type(other) is not Box or len(other.lo) != len(self.lo):
            self._check(other, "issubset")
        for l, h, ol, oh in zip(self.lo, self.hi, other.lo, other.hi):
            if l < ol or h > oh:
                return self.is_empty  # outside other's bounds: only an empty box is a subset
        return True

    __le__ = issubset

    def overlaps(self, other: Box) -> bool:
        """True when the two boxes share at least one point."""
        if type(other) is Box:
            try:  # both 2-D (a box of another rank fails to unpack)
                l0, l1 = self.lo
                h0, h1 = self.hi
                m0, m1 = other.lo
                n0, n1 = other.hi
            except ValueError:
                pass
            else:
                return (l0 <= h0 and m0 <= n0 and l1 <= h1 and m1 <= n1 and l0 <= n0
                        and m0 <= h0 and l1 <= n1 and m1 <= h1)
        if type(other) is not Box or len(other.lo) != len(self.lo):
            self._check(other, "overlaps")
        for l, h, ol, oh in zip(self.lo, self.hi, other.lo, other.hi):
            if h < ol or oh < l or h < l or oh < ol:
                return False
        return True

    def __repr__(self) -> str:
        dims = ", ".join(f"{l}:{h}" for l, h in zip(self.lo, self.hi))
        return f"Box[{dims}]"


# ---- unchecked helpers on bound tuples ------------------------------------------------

# The slots of the (frozen) dataclass: setting them through their descriptors skips
# the frozen __setattr__ and the attribute lookup of object.__setattr__.
_set_lo = Box.__dict__["lo"].__set__
_set_hi = Box.__dict__["hi"].__set__
_object_new = object.__new__


def _box(lo: tuple[int, ...], hi: tuple[int, ...]) -> Box:
    """Trusted constructor (no checks): ``lo``/``hi`` are tuples of ints of one length."""
    b = _object_new(Box)
    _set_lo(b, lo)
    _set_hi(b, hi)
    return b


def _within(lo: tuple[int, ...], hi: tuple[int, ...],
            olo: tuple[int, ...], ohi: tuple[int, ...]) -> bool:
    """Bounds ``[lo, hi]`` lie inside ``[olo, ohi]`` in every dimension. For a non-empty
    ``[lo, hi]`` that is subset-ness; an empty one may fail it and still be a subset."""
    if len(lo) == 2:
        return olo[0] <= lo[0] and hi[0] <= ohi[0] and olo[1] <= lo[1] and hi[1] <= ohi[1]
    for l, h, ol, oh in zip(lo, hi, olo, ohi):
        if l < ol or h > oh:
            return False
    return True


def _subtract(lo: tuple[int, ...], hi: tuple[int, ...],
              ilo: tuple[int, ...], ihi: tuple[int, ...]) -> list[Box]:
    """``[lo, hi] - [ilo, ihi]`` for a non-empty intersection ``[ilo, ihi]`` of
    the non-empty ``[lo, hi]`` with the subtrahend (see :meth:`Box.subtract`).

    The slab below the intersection in dimension ``d`` spans the intersection in
    dimensions ``< d``, ``[lo[d], ilo[d] - 1]`` in ``d`` and all of ``[lo, hi]``
    after ``d``; the slab above likewise with ``[ihi[d] + 1, hi[d]]``.
    """
    if len(lo) == 2:  # unrolled: the same pieces in the same order
        l0, l1 = lo
        h0, h1 = hi
        i0, i1 = ilo
        j0, j1 = ihi
        out: list[Box] = []
        if l0 < i0:
            out.append(_box(lo, (i0 - 1, h1)))
        if j0 < h0:
            out.append(_box((j0 + 1, l1), hi))
        if l1 < i1:
            out.append(_box((i0, l1), (j0, i1 - 1)))
        if j1 < h1:
            out.append(_box((i0, j1 + 1), (j0, h1)))
        return out
    out = []
    for d in range(len(lo)):
        il = ilo[d]
        ih = ihi[d]
        if lo[d] < il:
            out.append(_box(ilo[:d] + lo[d:], ihi[:d] + (il - 1,) + hi[d + 1:]))
        if ih < hi[d]:
            out.append(_box(ilo[:d] + (ih + 1,) + lo[d + 1:], ihi[:d] + hi[d:]))
    return out


def _subtract_from(r: Box, b: Box) -> list[Box] | None:
    """``r - b`` for non-empty boxes of one ndim; None when they do not overlap."""
    if len(r.lo) == 2:  # (intersect's own 2-D path)
        i = r.intersect(b)
        return None if i is None else _subtract(r.lo, r.hi, i.lo, i.hi)
    lo = []
    hi = []
    for l, h, ol, oh in zip(r.lo, r.hi, b.lo, b.hi):
        if ol > l:
            l = ol
        if oh < h:
            h = oh
        if h < l:
            return None
        lo.append(l)
        hi.append(h)
    return _subtract(r.lo, r.hi, tuple(lo), tuple(hi))


def fused(a: Box, b: Box) -> Box | None:
    """The one box that disjoint ``a`` and ``b`` together form (equal in all dims but one,
    touching in that one), or None."""
    alo, ahi = a.lo, a.hi
    diff = -1
    d = 0
    for al, ah, bl, bh in zip(alo, ahi, b.lo, b.hi):
        if al != bl or ah != bh:
            if diff >= 0 or (ah + 1 != bl and bh + 1 != al):
                return None  # a second difference, or not touching
            diff = d
        d += 1
    if diff < 0:
        return None
    return _box(alo[:diff] + (min(alo[diff], b.lo[diff]),) + alo[diff + 1:],
                ahi[:diff] + (max(ahi[diff], b.hi[diff]),) + ahi[diff + 1:])


def _merge_adjacent(boxes: list[Box]) -> list[Box]:
    """Fuse pairs of disjoint boxes that together form one box. Keeps the set of points;
    fewer boxes mean fewer buffers/copies."""
    changed = True
    while changed and len(boxes) > 1:
        changed = False
        for i in range(len(boxes)):
            a = boxes[i]
            for j in range(i + 1, len(boxes)):
                f = fused(a, boxes[j])
                if f is None:
                    continue
                boxes[i] = f
                del boxes[j]
                changed = True
                break
            if changed:
                break
    return boxes


def _first(pair: tuple[int, Box]) -> int:
    return pair[0]


def disjoint(boxes: Iterable[Box], merge: bool = True) -> list[Box]:
    """Algorithm 2 (get_disjoint_bounding_boxes): disjoint boxes covering exactly the union.

    Larger boxes are taken first and boxes subsumed by another are dropped before
    subtracting, so a small box inside a big one (Floyd-Warshall's ``path[i][k]``
    inside ``path[i][j]``) never splits the big one. With ``merge``, touching pieces
    that form one box are fused afterwards.
    """
    sized = [(b.volume, b) for b in boxes]
    items = [b for v, b in sorted(sized, key=_first, reverse=True) if v]  # stable: ties keep order
    if not items:
        return []
    nd = len(items[0].lo)
    for b in items:
        if len(b.lo) != nd:
            raise ValueError(f"disjoint() of boxes of different dimensions: {items[0]} and {b}")
    kept: list[Box] = []
    for b in items:  # drop duplicates and subsumed boxes (first level of reuse)
        lo, hi = b.lo, b.hi
        for k in kept:
            if _within(lo, hi, k.lo, k.hi):
                break
        else:
            kept.append(b)
    result: list[Box] = []
    for b in kept:
        rem = [b]
        for d in result:
            nxt: list[Box] = []
            for r in rem:
                pieces = _subtract_from(r, d)
                if pieces is None:
                    nxt.append(r)
                else:
                    nxt.extend(pieces)
            rem = nxt
            if not rem:
                break
        result.extend(rem)
    return _merge_adjacent(result) if merge else result


def hull_all(boxes: Iterable[Box]) -> Box | None:
    """Convex union of all boxes (the Kim et al. 2011 scheme), None for no non-empty box."""
    out: Box | None = None
    lo0 = lo1 = hi0 = hi1 = 0
    grown = False  # the hull of 2-D boxes, kept as four bounds until the end
    for b in boxes:
        lo = b.lo
        if len(lo) == 2 and (out is None or len(out.lo) == 2):
            hi = b.hi
            l0, l1 = lo
            h0, h1 = hi
            if h0 < l0 or h1 < l1:
                continue  # empty
            if out is None:
                out = b
                lo0, lo1, hi0, hi1 = l0, l1, h0, h1
                continue
            if l0 < lo0:
                lo0 = l0
            if l1 < lo1:
                lo1 = l1
            if h0 > hi0:
                hi0 = h0
            if h1 > hi1:
                hi1 = h1
            grown = True
            continue
        if b.is_empty:
            continue
        out = b if out is None else out.hull(b)
    if grown and out is not None:
        return _box((lo0, lo1), (hi0, hi1))
    return out


def union_volume(boxes: Iterable[Box]) -> int:
    """Number of points in the union of the boxes."""
    return sum(b.volume for b in disjoint(boxes, merge=False))


def covers(boxes: Sequence[Box], target: Box) -> bool:
    """True when the union of ``boxes`` contains every point of ``target``."""
    rem = [target] if not target.is_empty else []
    for b in boxes:
        if type(b) is not Box or len(b.lo) != len(target.lo):
            target._check(b, "covers")
        nxt: list[Box] = []
        for r in rem:
            pieces = _subtract_from(r, b)
            if pieces is None:
                nxt.append(r)
            else:
                nxt.extend(pieces)
        rem = nxt
        if not rem:
            return True
    return not rem


def merge_adjacent(boxes: Sequence[Box]) -> list[Box]:
    """Fuse disjoint boxes that together form one box (same points, fewer boxes)."""
    return _merge_adjacent(list(boxes))

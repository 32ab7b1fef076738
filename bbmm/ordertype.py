"""Coordinates up to their order: what decisions made by comparing coordinates see.

Box algebra decides by comparing two coordinates of one dimension of one array, give or
take a unit or two (a difference's pieces start one past an end). Two lists of boxes
whose coordinates, per array and dimension, come in the same order with the same gaps
between neighbours (gaps of ``gap`` or more all count as "far") lead to the same
decisions, and a result computed for the first is the second's with each coordinate
moved along with the input coordinate it came from. :func:`order` gives that key,
:func:`encode` a result's box relative to the inputs, :func:`box_of` the box back for
other inputs of the same key. :class:`bbmm.ownership.PlanMemo` plans a phase's messages
once per key; :mod:`bbmm.shifted` replays a serial iteration's device operations.
"""
from __future__ import annotations

from bisect import bisect_left
from typing import Any, Mapping

from .box import Box

SHIFT = 4
"""How far a coordinate that the box algebra derives may lie from an input coordinate of
its dimension for a result to be kept as a template (:func:`encode` raises :class:`Far`
past it): a difference's piece starts one past an end, a record is cut one row past a
flow-out row, and a plan's stage moves a coordinate at most three units."""
GAP = 2 * SHIFT + 1
"""Gaps between neighbouring coordinates of this size or more count as "far": the least
cap that keeps every decision on coordinates within :data:`SHIFT` of the inputs. Two such
coordinates ``x + a`` and ``y + b`` (``|a|, |b| <= SHIFT``) compare as ``x - y + a - b``,
whose sign is that of ``x - y`` once ``|x - y| >= 2 * SHIFT + 1``; below that the key
holds the gap exactly. A smaller cap makes fewer steps differ: Floyd's and LU's steps
within ``GAP`` rows of a block's ends each take a key of their own and run for real."""


def order(flat: Mapping[str, list[int]], ndims: Mapping[str, int], gap: int
          ) -> tuple[tuple, dict[str, list[list[int]]]]:
    """Per array and dimension, each coordinate's rank among the distinct ones and the
    gaps between neighbours (capped at ``gap``): the coordinates' part of the key; and
    the sorted distinct coordinates an encoded box refers to (per array: one list per
    dimension, then all of them concatenated).

    ``flat[a]`` holds the bounds of array ``a``'s boxes in a fixed order, ``lo`` then
    ``hi`` of each, so that position ``p`` is of dimension ``p % ndims[a]``."""
    orders: list[Any] = []
    bases: dict[str, list[list[int]]] = {}
    for a, f in flat.items():
        nd = ndims.get(a)
        if nd is None:  # no box at all
            continue
        per = bases[a] = []
        for d in range(nd):
            vals = f[d::nd] if nd > 1 else f
            ds = sorted(set(vals))
            orders.append(tuple(map(dict(zip(ds, range(len(ds)))).__getitem__, vals)))
            orders.append(tuple(_gaps(ds, gap)))
            per.append(ds)
        per.append([v for base in per for v in base])  # all dimensions', for box_of
    return tuple(orders), bases


class Far(Exception):
    """A coordinate lies farther than the allowed shift from every input coordinate."""


def nearest(v: int, base: list[int], shift: int) -> tuple[int, int]:
    """``(index, offset)`` of the coordinate of ``base`` (sorted, distinct) nearest to
    ``v``; :class:`Far` where the offset exceeds ``shift``."""
    i = bisect_left(base, v)
    if i == len(base) or (i and v - base[i - 1] < base[i] - v):
        i -= 1
    off = v - base[i]
    if off > shift or -off > shift:
        raise Far
    return i, off


def encode(b: Box, ds: list[list[int]], shift: int) -> tuple:
    """``b`` as ``(ndim, ((index, offset), ...))``: per bound (``lo`` then ``hi``) the
    index of the nearest distinct input coordinate of its dimension in the concatenation
    ``ds[-1]`` and the offset from it; :class:`Far` where an offset exceeds ``shift``."""
    out = []
    for bound in (b.lo, b.hi):
        start = 0
        for v, base in zip(bound, ds):
            i, off = nearest(v, base, shift)
            out.append((start + i, off))
            start += len(base)
    return len(b.lo), tuple(out)


def box_of(t: tuple, ds: list[list[int]]) -> Box:
    """The box :func:`encode` gave ``t`` for, taken to the inputs whose bases are ``ds``."""
    nd, coords = t
    flat = ds[-1]
    if nd == 2:
        # written out for the common 2-D box: decoded for every message, transient,
        # piece and record of a step moved on
        (i0, o0), (i1, o1), (i2, o2), (i3, o3) = coords
        return Box._new((flat[i0] + o0, flat[i1] + o1), (flat[i2] + o2, flat[i3] + o3))
    vals = [flat[i] + off for i, off in coords]
    return Box._new(tuple(vals[:nd]), tuple(vals[nd:]))


def volume_of(t: tuple, ds: list[list[int]]) -> int:
    """``box_of(t, ds).volume`` without the box (a deferred write-out's count, every
    serial iteration moved on)."""
    nd, coords = t
    flat = ds[-1]
    if nd == 2:  # as box_of, unrolled
        (i0, o0), (i1, o1), (i2, o2), (i3, o3) = coords
        a = flat[i2] + o2 - flat[i0] - o0 + 1
        b = flat[i3] + o3 - flat[i1] - o1 + 1
        return a * b if a > 0 and b > 0 else 0
    v = 1
    for (i, o), (j, p) in zip(coords[:nd], coords[nd:]):
        e = flat[j] + p - flat[i] - o + 1
        if e <= 0:
            return 0
        v *= e
    return v




def shape(orders: tuple, flat: Mapping[str, list[int]], ndims: Mapping[str, int]) -> tuple:
    """:func:`order`'s key of ``flat`` as :func:`bases_like` checks it: per array, in
    order, ``(array, ndim, per dimension (ranks, capped gaps, first position of each
    rank))``."""
    out = []
    i = 0
    for a in flat:
        nd = ndims.get(a)
        if nd is None:
            continue
        dims = []
        for _ in range(nd):
            ranks, gaps = orders[i], orders[i + 1]
            i += 2
            first: dict[int, int] = {}
            for p, r in enumerate(ranks):
                first.setdefault(r, p)
            dims.append((ranks, list(gaps), [first[r] for r in range(len(first))]))
        out.append((a, nd, tuple(dims)))
    return tuple(out)


def bases_like(shape: tuple, flat: Mapping[str, list[int]], gap: int
               ) -> dict[str, list[list[int]]] | None:
    """The bases of ``flat`` (as :func:`order` gives them) if its coordinates come in the
    order ``shape`` describes, the same ranks and the same gaps capped at ``gap``; else
    None. :func:`order`'s comparison without sorting: each rank's value is read at its
    first position, and every position must hold its rank's value."""
    bases = {}
    for a, nd, dims in shape:
        f = flat.get(a)
        if f is None:
            return None
        per = []
        for d, (ranks, gaps, first) in enumerate(dims):
            vals = f[d::nd] if nd > 1 else f
            if len(vals) != len(ranks):
                return None
            ds = [vals[p] for p in first]
            if list(map(ds.__getitem__, ranks)) != vals:
                return None
            if _gaps(ds, gap) != gaps:
                return None
            per.append(ds)
        per.append([v for base in per for v in base])
        bases[a] = per
    return bases


def _gaps(ds: list[int], gap: int) -> list[int]:
    """The gaps between neighbours of the sorted distinct coordinates ``ds``, capped at
    ``gap`` (a pair out of order gives a gap of 0 or less)."""
    return [y - x if y - x < gap else gap for x, y in zip(ds, ds[1:])]


def delta(now: Mapping[str, list[list[int]]], before: Mapping[str, list[list[int]]]
          ) -> dict[str, list[list[int]]] | None:
    """How each distinct coordinate moved from ``before`` to ``now`` (bases of one key,
    as :func:`order` gives them); None where their arrays or counts differ."""
    if now.keys() != before.keys():
        return None
    out = {}
    for a, per in now.items():
        old = before[a]
        if len(per) != len(old):
            return None
        row = []
        for x, y in zip(per[:-1], old[:-1]):
            if len(x) != len(y):
                return None
            row.append([u - v for u, v in zip(x, y)])
        out[a] = row
    return out


def moved_on(shape: tuple, bases: Mapping[str, list[list[int]]],
             by: Mapping[str, list[list[int]]], gap: int) -> dict[str, list[list[int]]] | None:
    """``bases`` with each distinct coordinate moved by ``by`` (:func:`delta`), where they
    keep the order and the capped gaps ``shape`` describes (:func:`bases_like`'s check on
    the distinct coordinates alone: the positions of one rank move together); else
    None. Arrays and dimensions that do not move keep their lists. Runs the function
    :func:`_mover` wrote for ``(shape, by)``, which a chain keeps for its whole run: two
    of them move on every serial iteration of a process (the plans', the runtime's)."""
    key = (id(shape), id(by))
    got = _MOVES.get(key)
    if got is None or got[0] is not shape or got[1] is not by:
        if len(_MOVES) >= 4096:
            _MOVES.clear()
        got = _MOVES[key] = (shape, by, _mover(shape, by))
    return got[2](bases, gap)


def _mover(shape: tuple, by: Mapping[str, list[list[int]]]) -> Any:
    """:func:`moved_on` for ``(shape, by)`` as straight-line Python: per dimension that
    moves, a new list, its coordinates moved (all by one amount, or those that move) and
    each gap that can change checked against the shape's; only a gap between two
    coordinates that move apart can change (the bases have the shape's gaps: they were
    checked when found, or moved on so)."""
    lines = ["def moved(bases, gap):"]
    fields = []
    for n, (a, _, dims) in enumerate(shape):
        name = repr(a)
        steps = by[a]
        if not any(any(d) for d in steps):
            fields.append(f"{name}: bases[{name}]")
            continue
        lines.append(f"    x{n} = bases[{name}]")
        per = []
        for k, ((_, gaps, _), d) in enumerate(zip(dims, steps)):
            v = f"p{n}_{k}"
            per.append(v)
            if not any(d):
                lines.append(f"    {v} = x{n}[{k}]")
            elif d.count(d[0]) == len(d):
                lines.append(f"    {v} = [u + {int(d[0])} for u in x{n}[{k}]]")
            else:
                lines.append(f"    {v} = list(x{n}[{k}])")
                lines += [f"    {v}[{i}] += {int(dv)}" for i, dv in enumerate(d) if dv]
                for j in range(len(d) - 1):
                    if d[j] != d[j + 1]:
                        lines.append(f"    g = {v}[{j + 1}] - {v}[{j}]")
                        lines.append(f"    if (g if g < gap else gap) != {int(gaps[j])}:")
                        lines.append("        return None")
        flat = (f"{per[0]} + {per[1]}" if len(per) == 2 else
                f"list({per[0]})" if len(per) == 1 else "[" + ", ".join(f"*{v}" for v in per) + "]")
        fields.append(f"{name}: [{', '.join(per)}, {flat}]")
    lines.append("    return {" + ", ".join(fields) + "}")
    scope: dict[str, Any] = {}
    exec(compile("\n".join(lines), "<bbmm.ordertype.moved_on>", "exec"), scope)
    return scope["moved"]


_MOVES: dict[tuple[int, int], tuple[tuple, Mapping, Any]] = {}
""":func:`_mover`'s functions, with the objects they are for (ids may be reused)."""


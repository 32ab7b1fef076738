"""Replay of serial iterations that repeat up to a shift: Floyd-Warshall's step ``k``.

:mod:`bbmm.replay` replays an iteration whose tiles have the same boxes as a recorded one
and whose state is the same. Floyd-Warshall's step ``k`` never does: row ``k`` moves every
step, so every step allocates a box for it on the devices that do not own it, reads it
in, launches, sends row ``k + 1`` out and frees the box, and the host's record of where
the newest rows are moves with ``k``. LU's shrinking corner is the same. Yet every step
of a block of rows takes the same decisions.

Every decision the runtime takes compares two coordinates of one dimension of one array
(:mod:`bbmm.ordertype`), or a volume, which only chooses between correct plans (how to
cut boxes, whether to fuse them, when to store deferred write-outs). A :class:`Template`
is an iteration's device operations with every box encoded relative to the coordinates
of its inputs: its tiles' boxes, each phase's exchange over processes, and the state it
started from (the resident copies with their stale parts, the records of which copy
holds the newest value, the deferred write-out groups); plus the state it left. An
iteration whose inputs have the same key (:func:`bbmm.ordertype.order`, and everything
that is not a coordinate: devices, copies by :attr:`~bbmm.tiles.Copy.uid`, usage
counts, LRU order, callbacks) takes the same decisions, moved along with its
coordinates: :func:`replay_shifted` issues the template's transfers and launches with
the boxes decoded for it (and a phase's exchange where the template marks it), allocates
and frees its transient boxes (those the iteration allocated and freed) from the device
pools, and leaves the state the template left, decoded.

An iteration that does not match the template being replayed is looked up by its own
key among the verified templates (:meth:`ShiftMemo.lookup`) before it runs for real: after
each deferred write-out group is stored, LU's steps take a new key each until the group's
hull lies ``GAP`` rows away, the same keys after every group, and on n=16384 over two dry
devices (with groups stored every 4 MiB) a third of its steps ran for real without the
lookup, a tenth with it.

A template is kept from an iteration that allocated only transient boxes, freed no
other, changed neither the LRU order nor the number of write-out groups, had no phase
named by a ``spec``; and it is used only once a later iteration with the same key, run
for real, encoded to the same template (:class:`ShiftMemo`): what a volume decided
differently, or anything this argument missed, shows there and the key is dropped for
good. ``docs/coherence.md`` says what the directory's invariant owes to
this.

Where the generated driver's comparisons of the serial iterators (``nest<N>_sig``) hold
as at the last steps and every coordinate moved by the same amount from each step to the
next, a step is replayed from the last one without its tiles built (:class:`Chain`,
:meth:`bbmm.runtime.Runtime.ahead`).

A tile run in parts (:meth:`bbmm.runtime.Runtime._edges`: the rows writing its flow-out
first, the rest once the flow-out is stored) has its rows encoded relative to the tiles'
spans or to the coordinates of the arrays it writes along its rows (:func:`_enc_rows`).
Which rows write the flow-out is a matter of correctness, not of the key: before
it issues anything, a replay computes each such tile's parts afresh and runs the
iteration for real where they differ from the decoded ones.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .box import Box
from .diagnostic import DeviceMemoryError
from .ordertype import (GAP, SHIFT, Far, bases_like, box_of, delta, encode, moved_on,
                        nearest, order, shape as order_shape, volume_of)
from .shiftcode import replay_code
from .tiles import INT32, Copy, Tile, TileBuffers

SIZE = 64
"""Templates kept (the oldest is dropped first): one per regime of the serial loop."""
WRITE_AFTER = 128
"""Replays by a template before its replay is written out as straight-line Python
(:mod:`bbmm.shiftcode`): writing and compiling it costs 1-3 ms (150-300 lines for
Floyd's and LU's steps on four to eight devices, ``python scripts/count_host.py lu
--devices 8 --vary n=512,1024`` counts it), which 100-200 replays at the 10-20 us each
saves earn back; a template of a short regime (LU n=1024 over eight devices: blocks of
128 rows) is walked and never written."""
SPAN = "\0span"
"""The pseudo-array under which the tiles' spans (iteration space) are ordered."""


@dataclass
class Template:
    """One serial iteration's device operations and end state, encoded.

    A box is encoded by :func:`bbmm.ordertype.encode`, or None where it is the whole
    box of the copy it belongs to (a piece, a transfer's region); a record or a copy's
    stale parts by ``("s", ...)`` where the iteration left them as they were."""

    key: Any
    """The skeleton and the coordinates' order (:func:`_flatten`,
    :func:`bbmm.ordertype.order`)."""
    shape: tuple
    """The order as :func:`match` checks it (:func:`bbmm.ordertype.shape`)."""
    phases: tuple[int, ...]
    """Tiles per phase."""
    transients: tuple
    """Per box allocated and freed in the iteration: ``(array, device, box, itemsize)``."""
    ops: tuple
    """``(timer, kind, args)`` with copies as ``("p", array, position)`` (resident
    throughout: its place in the directory's list) or ``("t", index)`` (a transient),
    and boxes encoded."""
    dirty: tuple
    """The directory's records at the end, per array: ``("s", i)`` for the start's
    i-th record, else ``(box, position of the holder)``."""
    stale: tuple
    """Each resident copy's stale parts at the end, encoded (None: as at the start)."""
    groups: tuple
    """Per holder of deferred write-outs, per group: its hull at the end, encoded."""
    deferred: tuple
    """The write-outs the iteration deferred: ``(holder, group, region)``, the holder
    by its place among the holders (each region's points count in its group)."""
    tiles: int
    split_accesses: int
    boxes_present: tuple
    parted: tuple = ()
    """Per tile run in parts: ``((phase, index), its launches' rows in order)``, each
    encoded by :func:`_enc_rows`."""
    verified: bool = False
    placed: tuple = ()
    """Per phase, the devices of its tiles as they ran (:meth:`bbmm.runtime.Runtime._place`
    moves a small phase's tiles to their data): a phase held back for a replay takes them
    again instead of weighing every device's copies."""
    buffers: dict = field(default_factory=dict, compare=False, repr=False)
    """Per launch (its place in :attr:`ops`): the :class:`~bbmm.tiles.TileBuffers` of its
    last replay, taken again where its pieces are the same (their launch prepared)."""
    code: Any = field(default=None, compare=False, repr=False)
    """Its replay written out (:func:`bbmm.shiftcode.replay_code`), made at its
    :data:`WRITE_AFTER`-th replay."""
    replays: int = field(default=0, compare=False, repr=False)
    """Replays walked so far (:func:`replay_walked`), counted until it is written out."""


@dataclass
class ShiftMemo:
    """Templates by key; counters for reports and tests."""

    templates: dict[Any, Template | None] = field(default_factory=dict)
    """Key -> template (None: one that a later iteration contradicted: never used)."""
    made: int = 0
    verified: int = 0
    rejected: int = 0
    found: int = 0
    """Iterations replayed by a template looked up by their key (:meth:`lookup`)."""

    def close(self, rt: Any, tape: Any) -> Template | None:
        """At the end of a recorded iteration: its template, kept when new; the verified
        template to replay from now on, when one of this key encoded the same."""
        tpl = encode_iteration(rt, tape)
        if tpl is None:
            return None
        old = self.templates.get(tpl.key, False)
        if old is False:
            if len(self.templates) >= SIZE:
                self.templates.pop(next(iter(self.templates)))
            self.templates[tpl.key] = tpl
            self.made += 1
            return None
        if old is None:
            return None
        if _same(old, tpl):
            if not old.verified:
                old.verified = True
                self.verified += 1
            return old
        self.templates[tpl.key] = None
        self.rejected += 1
        return None


    def lookup(self, phases: Sequence[tuple[Sequence[Tile], Any, bool, bool]], rt: Any
               ) -> tuple[Template, dict[str, list[list[int]]]] | None:
        """The verified template of these phases' key from the state now, and the bases to
        decode it with; None where there is none. An iteration that did not match the
        template being replayed may be another's: after a deferred write-out group is
        stored, LU's steps take a new key each until its hull lies ``GAP`` away from their
        rows, the same keys again after every group."""
        skel, flat, ndims = _flatten(phases, state_snapshot(rt))
        orders, bases = order(flat, ndims, GAP)
        tpl = self.templates.get((skel, orders))
        if tpl is None or not tpl.verified:
            return None
        self.found += 1
        return tpl, bases


def _row_bases(t: Tile, bases: dict[str, list[list[int]]]) -> list[tuple[Any, list[int]]]:
    """What a launch's rows of ``t`` are encoded relative to: the tiles' spans, then per
    array ``t`` writes along its rows (:attr:`~bbmm.tiles.Tile.writers`) the coordinates
    of that dimension (a flow-out row's bound less the writer's offset)."""
    out = [(SPAN, bases[SPAN][0])] if SPAN in bases else []
    out.extend((a, bases[a][w[0]]) for a, w in t.writers.items() if a in bases)
    return out


def _enc_rows(rows: tuple[int, ...], t: Tile, bases: dict[str, list[list[int]]]) -> tuple:
    """``rows`` as per bound ``(source, index, offset)`` (:func:`_row_bases`);
    :class:`~bbmm.ordertype.Far` where a bound lies near none of them."""
    out = []
    for v in rows:
        for src, base in _row_bases(t, bases):
            try:
                out.append((src, *nearest(v, base, SHIFT)))
                break
            except Far:
                continue
        else:
            raise Far
    return tuple(out)


def _rows(enc: tuple, t: Tile, bases: dict[str, list[list[int]]]) -> tuple[int, ...]:
    """A launch's rows (:func:`_enc_rows`: two bounds, or four for two ranges) decoded for
    ``t`` and ``bases``."""
    return tuple(_row_base(s, t, bases)[i] + o for s, i, o in enc)


def _row_base(src: Any, t: Tile, bases: dict[str, list[list[int]]]) -> list[int]:
    return bases[SPAN][0] if src == SPAN else bases[src][t.writers[src][0]]


def _same(a: Template, b: Template) -> bool:
    return (a.phases == b.phases and a.transients == b.transients and a.ops == b.ops
            and a.parted == b.parted
            and a.dirty == b.dirty and a.stale == b.stale and a.groups == b.groups
            and a.deferred == b.deferred)


def state_snapshot(rt: Any) -> tuple:
    """What of the runtime's state a template's key reads, at the start of an iteration:
    per array its copies with their stale parts, usage counts, touched and cleanup
    flags, and the directory's records; the LRU order per device; the deferred
    write-outs (:meth:`bbmm.coherence.Directory.writeout`) per holder."""
    d = rt.directory
    arrays = tuple((a, tuple((c, tuple(c.stale), c.uses, c.touched, c.cleanup_iter is None)
                             for c in cs), tuple(d.dirty[a]))
                   for a, cs in d.copies.items())
    lru = tuple(tuple(c.uid for c in m.unused) for m in rt.managers)
    groups = tuple((c, tuple((g[0], g[1]) for g in gs)) for c, gs in d._groups.items())
    return arrays, lru, groups


def _flatten(phases: Sequence[tuple[Sequence[Tile], Any, bool, bool]], snap: tuple
             ) -> tuple[Any, dict[str, list[int]], dict[str, int]]:
    """An iteration's phases and start state as a skeleton (everything that is no
    coordinate) and, per array, the bounds of every box in a fixed order (``lo`` then
    ``hi`` of each), with each array's ndim.

    A phase is ``(tiles, key, before, after)``: its caller's key (:mod:`bbmm.distributed`'s
    regions sent and received, ``(array, box)`` pairs in tuples) and whether it has
    callbacks. A deferred write-out group's hull is a coordinate; its count of points is
    not (a template adds to it, :func:`replay_shifted`)."""
    arrays, lru, groups = snap
    flat: dict[str, list[int]] = {}
    ndims: dict[str, int] = {}
    skel: list[Any] = []

    def walk(x: Any) -> Any:
        if type(x) is tuple:
            if len(x) == 2 and type(x[1]) is Box and type(x[0]) is str:
                a, b = x
                f = flat.get(a)
                if f is None:
                    f = flat[a] = []
                    ndims[a] = len(b.lo)
                f += b.lo
                f += b.hi
                return a
            return tuple([walk(e) if type(e) is tuple else e for e in x])
        return x

    for tiles, extra, before, after in phases:
        skel.append((None if extra is None else walk(extra), before, after))
        for t in tiles:
            parts = []
            for dct in (t.boxes, t.writes, t.flowout, t.writeout):
                for a, bs in dct.items():
                    f = flat.get(a)
                    if f is None:
                        f = flat[a] = []
                    for b in bs:
                        f += b.lo
                        f += b.hi
                    if bs and a not in ndims:
                        ndims[a] = len(bs[0].lo)
                    parts.append((a, len(bs)))
                parts.append(None)
            span = t.span
            if span is not None:
                f = flat.get(SPAN)
                if f is None:
                    f = flat[SPAN] = []
                    ndims[SPAN] = 1
                f += span
            skel.append((t.device, tuple(parts), t.fresh,
                         tuple((a, tuple(v)) for a, v in t.cleanup.items()),
                         tuple(t.writers.items()), span is None))
        skel.append(None)
    for a, copies, dirty in arrays:
        f = flat.get(a)
        if f is None:
            f = flat[a] = []
        cs = []
        for c, stale, uses, touched, no_cleanup in copies:
            b = c.box
            if a not in ndims:
                ndims[a] = len(b.lo)
            f += b.lo
            f += b.hi
            for b in stale:
                f += b.lo
                f += b.hi
            cs.append((c.uid, len(stale), uses, touched, no_cleanup))
        for b, _ in dirty:
            f += b.lo
            f += b.hi
        skel.append((a, tuple(cs), tuple(h.uid for _, h in dirty)))
    for c, gs in groups:
        f = flat[c.array]
        for hull, _ in gs:
            f += hull.lo
            f += hull.hi
        skel.append((c.uid, len(gs)))
    skel.append(lru)
    for a in [a for a, f in flat.items() if not f]:
        del flat[a]  # an array the tiles name with no box
    return tuple(skel), flat, ndims


def encode_iteration(rt: Any, tape: Any) -> Template | None:
    """The template of the iteration ``tape`` recorded (``tape.start``: the state it
    started from), or None where it cannot be one (see the module's docstring)."""
    snap = tape.start
    if snap is None or not tape.plain or not tape.tiles_of:
        return None
    if len(tape.metas) != len(tape.tiles_of):
        return None
    added, removed = tape.added, tape.removed
    if len(added) != len(removed) or {id(c) for c in added} != {id(c) for c in removed}:
        return None  # a copy allocated and kept, or one freed that was there before
    end = state_snapshot(rt)
    if end[1] != snap[1] or [(c, len(gs)) for c, gs in end[2]] != \
            [(c, len(gs)) for c, gs in snap[2]]:
        return None  # the LRU order changed, or write-out groups came or went
    # the copies themselves, their usage counts and flags, as they were at the start
    if [[c[:1] + c[2:] for c in cs] for _, cs, _ in end[0]] != \
            [[c[:1] + c[2:] for c in cs] for _, cs, _ in snap[0]]:
        return None
    skel, flat, ndims = _flatten([(ts, *m) for ts, m in zip(tape.tiles_of, tape.metas)],
                                 snap)
    orders, bases = order(flat, ndims, GAP)
    shape = order_shape(orders, flat, ndims)
    trans = {id(c): i for i, c in enumerate(added)}
    d = rt.directory
    where = {id(c): (a, i) for a, cs in d.copies.items() for i, c in enumerate(cs)}

    def ref(c: Copy) -> tuple:
        i = trans.get(id(c))
        return ("p", *where[id(c)]) if i is None else ("t", i)

    def enc(b: Box, c: Copy) -> Any:
        return None if b == c.box else encode(b, bases[c.array], SHIFT)

    try:
        transients = tuple((c.array, c.device.index, encode(c.box, bases[c.array], SHIFT),
                            c.itemsize) for c in added)
        ops = []
        parted: dict[tuple[int, int], list] = {}
        for timer, kind, args in tape.ops:
            if kind == "launch":
                p, i, tb, rows = args
                if rows is not None:
                    rows = _enc_rows(rows, tape.tiles_of[p][i], bases)
                    parted.setdefault((p, i), []).append(rows)
                pieces = tuple((a, tuple((enc(b, c), ref(c)) for b, c in ps),
                                tuple(tb.access[a])) for a, ps in tb.pieces.items())
                ops.append((timer, kind, (p, i, pieces, rows)))
            elif kind == "d2d":
                dst, src, region, what = args
                ops.append((timer, kind, (ref(dst), ref(src), enc(region, dst), what)))
            elif kind in ("h2d", "d2h"):
                c, region, what, side = args
                ops.append((timer, kind, (ref(c), enc(region, c), what, side)))
            else:
                ops.append((timer, kind, args))  # a phase's callbacks: (phase,)
        dirty = []
        stale = []
        for (a, cs), (_, copies0, dirty0) in zip(d.copies.items(), snap[0]):
            before = {r: i for i, r in enumerate(dirty0)}
            recs = []
            for r in d.dirty[a]:
                i = before.get(r)
                if i is not None:
                    recs.append(("s", i))
                elif id(r[1]) in trans:
                    return None
                else:
                    recs.append((encode(r[0], bases[a], SHIFT), where[id(r[1])][1]))
            dirty.append(tuple(recs))
            stale.append(tuple(None if tuple(c.stale) == c0[1] else
                               tuple(encode(s, bases[a], SHIFT) for s in c.stale)
                               for c, c0 in zip(cs, copies0)))
        groups = tuple(tuple(encode(g[0], bases[c.array], SHIFT) for g in gs)
                       for c, gs in end[2])
        holders = {c.uid: i for i, (c, _) in enumerate(snap[2])}
        deferred = []
        for c, region, g in tape.deferred:
            if g < 0 or c.uid not in holders:
                return None  # a new group
            deferred.append((holders[c.uid], g, encode(region, bases[c.array], SHIFT)))
    except (Far, KeyError):
        return None
    return Template((skel, orders), shape, tuple(len(ts) for ts in tape.tiles_of),
                    transients, tuple(ops), tuple(dirty), tuple(stale), groups,
                    tuple(deferred), tape.tiles, tape.split_accesses,
                    tuple(sorted(tape.boxes_present.items())),
                    tuple((pi, tuple(rs)) for pi, rs in parted.items()),
                    placed=tuple(tuple(t.device for t in ts) for ts in tape.tiles_of))


def match(tpl: Template, phases: Sequence[tuple[Sequence[Tile], Any, bool, bool]], rt: Any
          ) -> dict[str, list[list[int]]] | None:
    """The bases to decode ``tpl`` with for these phases (as :func:`_flatten` takes
    them) from the state now, or None when their key is another."""
    skel, flat, _ = _flatten(phases, state_snapshot(rt))
    if skel != tpl.key[0]:
        return None
    return bases_like(tpl.shape, flat, GAP)


Launch = tuple[list[Any], tuple[tuple[int, int], ...]]
"""A tile's kernel scalars and grid (the generated kernel's ``at``)."""


def _at_delta(a: Launch, b: Launch) -> tuple[tuple[int, ...], tuple] | None:
    """How a tile's scalars and grid moved from ``a`` to ``b``; None where a value that is
    no integer changed."""
    (sa, ga), (sb, gb) = a, b
    if len(sa) != len(sb) or len(ga) != len(gb):
        return None
    ds = []
    for x, y in zip(sa, sb):
        if x is y or x == y:
            ds.append(0)
        elif isinstance(x, (int, np.integer)) and isinstance(y, (int, np.integer)):
            ds.append(int(y) - int(x))
        else:
            return None
    return tuple(ds), tuple((y0 - x0, y1 - x1) for (x0, x1), (y0, y1) in zip(ga, gb))


def _at_steps(dats: list[list[tuple]]) -> list[list[tuple]]:
    """Per phase and tile, how its delta ``dats[p][i]`` (:func:`_at_delta`) moves its
    launch: the scalars that move, as ``(position, amount)``, and the grid's moves
    (None: it stays). Worked out once per chain: a tile's scalars are a serial iterator
    or two among parameters and bounds that stay."""
    return [[(tuple((i, dx) for i, dx in enumerate(ds) if dx),
              dg if any(d0 or d1 for d0, d1 in dg) else None) for ds, dg in row]
            for row in dats]


def _ats_moved(ats: list[list[Launch]], steps: list[list[tuple]]) -> list[list[Launch]]:
    """Each tile's scalars and grid moved on by :func:`_at_steps`' ``steps`` (scalars
    that move, a new list; a grid that stays, the same tuple). Nothing writes into a
    launch's scalars: the kernel's arguments are a list of their own. The reference that
    :func:`_ats_mover` writes out, which a chain runs."""
    out = []
    get = INT32.__getitem__
    for row, srow in zip(ats, steps):
        moved = []
        for (sa, ga), (ms, dg) in zip(row, srow):
            if ms:
                sa = list(sa)
                for i, dx in ms:
                    sa[i] = get(int(sa[i]) + dx)
            if dg is not None:
                ga = tuple([(x0 + d0, x1 + d1) for (x0, x1), (d0, d1) in zip(ga, dg)])
            moved.append((sa, ga))
        out.append(moved)
    return out


def _ats_mover(steps: list[list[tuple]]) -> Callable[[list[list[Launch]]],
                                                    list[list[Launch]]]:
    """:func:`_ats_moved` for ``steps`` written out as straight-line Python: a chain's
    steps are the same every iteration, and the loops over its phases, tiles and their
    few moving scalars cost LU on four dry devices more than the moves."""
    lines = ["def moved(ats):"]
    rows = []
    for p, srow in enumerate(steps):
        lines.append(f"    row = ats[{p}]")
        names = []
        for i, (ms, dg) in enumerate(srow):
            lines.append(f"    sa, ga = row[{i}]")
            if ms:
                lines.append("    sa = list(sa)")
                lines += [f"    sa[{j}] = get(int(sa[{j}]) + {int(dx)})" for j, dx in ms]
            if dg is not None:
                dims = ", ".join(
                    f"(ga[{d}][0] + {int(d0)}, ga[{d}][1] + {int(d1)})" if d0 or d1 else f"ga[{d}]"
                    for d, (d0, d1) in enumerate(dg))
                lines.append(f"    ga = ({dims},)")
            lines.append(f"    t{p}_{i} = (sa, ga)")
            names.append(f"t{p}_{i}")
        rows.append(f"[{', '.join(names)}]")
    lines.append(f"    return [{', '.join(rows)}]")
    scope: dict[str, Any] = {"get": INT32.__getitem__}
    exec(compile("\n".join(lines) + "\n", "<bbmm.shifted.ats_moved>", "exec"), scope)
    return scope["moved"]


def _edge_coords(t: Tile) -> list[int]:
    """What :meth:`bbmm.runtime.Runtime._edges` reads of a tile run in parts, as numbers:
    its write and flow-out boxes and its span."""
    out: list[int] = []
    for dct in (t.writes, t.flowout):
        for bs in dct.values():
            for b in bs:
                out += b.lo
                out += b.hi
    out += t.span or ()
    return out


def _edge_moved(t: Tile, coords: list[int]) -> Tile:
    """``t`` with the boxes and span :func:`_edge_coords` gives as ``coords``."""
    at = 0

    def boxes(dct: Any) -> dict:
        nonlocal at
        out = {}
        for a, bs in dct.items():
            row = []
            for b in bs:
                nd = len(b.lo)
                row.append(Box._new(tuple(coords[at:at + nd]), tuple(coords[at + nd:at + 2 * nd])))
                at += 2 * nd
            out[a] = row
        return out

    writes, flowout = boxes(t.writes), boxes(t.flowout)
    span = None if t.span is None else (coords[at], coords[at + 1])
    return t.but(writes=writes, flowout=flowout, span=span)


@dataclass
class Chain:
    """Serial iterations in a row replayed by one template, the generated driver's
    comparisons the same for each (``nest<N>_sig``), and every coordinate moved by the
    same amount from each to the next: the next iteration with those comparisons is the
    last one moved on once more (:meth:`bbmm.runtime.Runtime.ahead`).

    Why that is exact: while a tile's comparisons hold, each of its coordinates is one
    affine function of the serial iterators (:func:`bbmm.codegen.regime.shifts`), so
    the tiles move on by the amount they moved last. The state an iteration starts from
    is the template's end state decoded with the last iteration's bases; those moved by
    the same amount at each of the last iterations, so the state moves on by it too. A
    key (:func:`bbmm.ordertype.order`) that still holds for the coordinates moved on
    (checked: :func:`bbmm.ordertype.moved_on`) then replays the template exactly, as a
    matched iteration would."""

    sig: Any
    tpl: Template
    phases: list
    """The last iteration's phases, as the runtime held them back (tiles and all)."""
    bases: dict[str, list[list[int]]]
    """The distinct coordinates the last iteration's were decoded with
    (:func:`bbmm.ordertype.order`: the positions of one rank move together)."""
    ats: list[list[Launch]]
    """Per phase, per tile: its kernel's scalars and grid at the last iteration."""
    edges: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    """Per tile run in parts (:attr:`Template.parted`): what decides its parts
    (:func:`_edge_coords`), which a replay checks afresh."""
    dbases: dict[str, list[list[int]]] | None = None
    dats: list[list[tuple]] | None = None
    dedges: dict[tuple[int, int], list[int]] | None = None
    count: int = 0
    """Iterations in a row that moved by :attr:`dbases`, :attr:`dats` and :attr:`dedges`."""
    _move: Callable[[list[list[Launch]]], list[list[Launch]]] | None = field(
        default=None, compare=False, repr=False)
    """:func:`_ats_moved` by :func:`_at_steps` of :attr:`dats` (:func:`_ats_mover`), set
    with it."""

    def __post_init__(self) -> None:
        self.edges = self.parted(self.phases)

    def parted(self, phases: Sequence[tuple]) -> dict[tuple[int, int], list[int]]:
        """:attr:`edges` of ``phases``."""
        return {(p, i): _edge_coords(phases[p][0][i]) for (p, i), _ in self.tpl.parted}

    @staticmethod
    def launches(phases: Sequence[tuple]) -> list[list[Launch]] | None:
        """The scalars and grid of each tile's kernel (None: a kernel that has none)."""
        out = []
        for p in phases:
            row = []
            for t in p[0]:
                at = getattr(t.kernel, "at", None)
                if at is None:
                    return None
                row.append(at)
            out.append(row)
        return out

    def follow(self, sig: Any, tpl: Template, phases: list,
               bases: dict[str, list[list[int]]], ats: list[list[Launch]]) -> bool:
        """Take the next iteration replayed (matched, not moved on); False where it does
        not continue the chain (a new one starts from it)."""
        if sig != self.sig or tpl is not self.tpl:
            return False
        dbases = delta(bases, self.bases)
        if dbases is None or len(ats) != len(self.ats):
            return False
        dats = []
        for row0, row in zip(self.ats, ats):
            if len(row0) != len(row):
                return False
            ds = [_at_delta(a, b) for a, b in zip(row0, row)]
            if None in ds:
                return False
            dats.append(ds)
        edges = self.parted(phases)
        dedges = {}
        for pi, c in edges.items():
            c0 = self.edges[pi]
            if len(c0) != len(c):
                return False
            dedges[pi] = [y - x for x, y in zip(c0, c)]
        if self.count and dbases == self.dbases and dats == self.dats and dedges == self.dedges:
            self.count += 1
        else:
            self.dbases, self.dats, self.dedges, self.count = dbases, dats, dedges, 1
            self._move = _ats_mover(_at_steps(dats))
        self.phases, self.bases, self.ats, self.edges = phases, bases, ats, edges
        return True

    def next(self, phases: list[tuple]) -> tuple[dict[str, list[list[int]]],
                                                  list[list[Launch]],
                                                  dict[tuple[int, int], list[int]]] | None:
        """The bases and launches of the next iteration, moved on, and its tiles run in
        parts moved on in ``phases`` (for the replay to check their parts); None where
        two coordinates come too close for the template's key."""
        assert self.dbases is not None and self._move is not None and self.dedges is not None
        bases = moved_on(self.tpl.shape, self.bases, self.dbases, GAP)
        if bases is None:
            return None
        ats = self._move(self.ats)
        edges = {}
        for (p, i), c in self.edges.items():
            c = edges[(p, i)] = [x + d for x, d in zip(c, self.dedges[(p, i)])]
            ph = phases[p]
            tiles = list(ph[0])
            tiles[i] = _edge_moved(tiles[i], c)
            phases[p] = (tiles, *ph[1:])
        return bases, ats, edges

    def moved(self, phases: list, bases: dict[str, list[list[int]]], ats: list[list[Launch]],
              edges: dict[tuple[int, int], list[int]]) -> None:
        """The iteration moved on (:meth:`next`) was replayed."""
        self.phases, self.bases, self.ats, self.edges = phases, bases, ats, edges
        self.count += 1


def replay_shifted(rt: Any, tpl: Template, bases: dict[str, list[list[int]]],
                   phases: list[tuple], ats: list[list[Launch]] | None = None) -> bool:
    """Issue ``tpl``'s operations for ``phases`` (as :func:`bbmm.replay.replay`), with
    boxes decoded through ``bases`` (``ats``: per phase and tile, its kernel's scalars
    and grid, for tiles of an earlier iteration: :class:`Chain`); False, with nothing
    issued, when a transient box does not fit its device's pool or a deferred write-out
    group would fill up (the iteration then runs for real). Through the template's
    replay written out (:mod:`bbmm.shiftcode`), or, where nests queue behind gates
    (``--tune gate=on``), by :func:`replay_walked`."""
    code = tpl.code
    if code is None:
        if rt.config.gate or tpl.replays < WRITE_AFTER - 1:
            tpl.replays += 1
            return replay_walked(rt, tpl, bases, phases, ats)
        code = tpl.code = replay_code(tpl, tuple(rt.directory.copies), parted_rows,
                                      deferred_counts)
    return code(rt, bases, phases, ats)


def parted_rows(rt: Any, tpl: Template, bases: dict[str, list[list[int]]], phases: list
                ) -> dict[tuple, tuple[int, ...]] | None:
    """The decoded rows of each tile run in parts, by ``(phase, index, encoded rows)``;
    None where the rows writing a flow-out are others now (the iteration then runs for
    real)."""
    rows_of: dict[tuple, tuple[int, ...]] = {}
    for (p, i), encs in tpl.parted:
        t = phases[p][0][i]
        parts = rt._edges(t, rt._flowout_boxes(t)) if rt.edges else None
        decoded = [_rows(e, t, bases) for e in encs]
        if parts is None or parts[0] + parts[1] != decoded:
            return None
        rows_of.update(((p, i, e), r) for e, r in zip(encs, decoded))
    return rows_of


def deferred_counts(d: Any, tpl: Template, bases: dict[str, list[list[int]]]
                    ) -> tuple[list, list[list[int]]] | None:
    """The directory's write-out groups and their counts once the template's deferred
    write-outs are added; None where a group would fill up (the full bookkeeping stores
    it now)."""
    groups = list(d._groups.items())
    counts = [[g[1] for g in gs] for _, gs in groups]
    for h, g, enc in tpl.deferred:
        c = groups[h][0]
        counts[h][g] += volume_of(enc, bases[c.array])
        if counts[h][g] * c.itemsize >= d.FLUSH_BYTES:
            return None
    return groups, counts


def replay_walked(rt: Any, tpl: Template, bases: dict[str, list[list[int]]],
                  phases: list[tuple], ats: list[list[Launch]] | None = None) -> bool:
    """:func:`replay_shifted` walking the template's operations one by one: the reference
    that :mod:`bbmm.shiftcode` writes out, and the replay that queues a nest behind a
    gate its exchange opens."""
    d = rt.directory
    devs = rt.devices
    stats = rt.stats
    rows_of = parted_rows(rt, tpl, bases, phases)  # (phase, index, encoded rows): decoded
    if rows_of is None:
        return False  # the rows that write the flow-out are others now
    got = deferred_counts(d, tpl, bases)
    if got is None:
        return False  # the full bookkeeping stores a group now
    groups, counts = got
    made: list[Copy] = []
    for a, dev, enc, item in tpl.transients:
        box = box_of(enc, bases[a])
        device = devs[dev]
        try:
            alloc = device.alloc(box.volume * item)
        except DeviceMemoryError:
            for c in made:
                c.device.free(c.alloc, None)
            return False
        made.append(Copy(a, box, device, alloc, item))
    for c in made:
        stats.devices[c.device.index].on_alloc(c.nbytes)
    copies = d.copies

    def copy(r: tuple) -> Copy:
        return copies[r[1]][r[2]] if r[0] == "p" else made[r[1]]

    clock = time.perf_counter
    times = stats.times
    kept = tpl.buffers

    def launch(n: int, args: tuple) -> None:
        p, i, pieces, rows = args
        got = {}
        for a, ps, acc in pieces:
            ds = bases.get(a)
            out = []
            for enc, r in ps:
                c = copy(r)
                out.append((c.box if enc is None else box_of(enc, ds), c))
            got[a] = out
        # the same boxes of the same copies as at the last replay (a tile whose boxes did
        # not move): its buffers again, with the launch prepared for them
        tb = kept.get(n)
        if tb is None or tb.pieces != got:
            if tb is not None:
                tb.before = None  # one replay back, not a chain of them
            tb = kept[n] = TileBuffers(got, {a: list(acc) for a, _, acc in pieces},
                                       before=tb)
        rt._launch(phases[p][0][i], tb, None if rows is None else rows_of[(p, i, rows)],
                   phases[p][6], None if ats is None else ats[p][i])

    def gated(n: int) -> int:
        """Where phase ``begin`` at ``n`` starts with one load into a device and launches
        on it only: its load and launches issued before its exchange, behind a gate the
        exchange opens (as :func:`bbmm.replay._ahead` does), and the index past them;
        else nothing issued and ``n``."""
        ops = tpl.ops
        m = n + 2
        while m < len(ops) and ops[m][1] == "launch":
            m += 1
        cb = phases[ops[n][2][0]][2]
        if m == n + 2 or ops[n + 1][1] != "h2d" or cb is None or not getattr(cb, "gate", False):
            return n
        timer, _, (r, enc, what, side) = ops[n + 1]
        c = copy(r)
        region = c.box if enc is None else box_of(enc, bases[c.array])
        if (d.lane(c, region, side)
                or any(phases[a[0]][0][a[1]].device != c.device.index
                       for _, _, a in ops[n + 2:m])
                or not d.may_gate(c, (region,))):
            return n
        inner = 0.0  # of the load's and the launches' time, under their own timers

        def load(gate: Any, held: list) -> None:
            nonlocal inner
            t0 = clock()
            d.replay_h2d(c, region, d.host.array(c.array), what, 0, gate=gate, held=held)
            stats.moved("h2d", c.device.index, what, region.volume * c.itemsize)
            dt = clock() - t0
            times[timer] += dt
            inner += dt

        def launches() -> None:
            nonlocal inner
            for k in range(n + 2, m):
                t0 = clock()
                launch(k, ops[k][2])
                dt = clock() - t0
                times[ops[k][0]] += dt
                inner += dt

        t0 = clock()
        if not d.behind_gate(c.device, cb, load, launches):
            return n
        times[ops[n][0]] += clock() - t0 - inner
        stats.gated += m - n - 2
        return m

    gating = rt.config.gate
    past = 0  # ops before this index were issued by gated()
    ops = tpl.ops
    for n, (timer, kind, args) in enumerate(ops):
        if n < past:
            continue
        t0 = clock()
        if kind == "launch":
            launch(n, args)
        elif kind == "begin":
            if gating and n + 1 < len(ops):
                past = gated(n)
                if past != n:
                    continue
            cb = phases[args[0]][2]
            if cb is not None:
                cb(True)
        elif kind == "end":
            cb = phases[args[0]][3]
            if cb is not None:
                cb()
        else:
            if kind == "d2d":
                rdst, rsrc, enc, what = args
                c = copy(rdst)
                region = c.box if enc is None else box_of(enc, bases[c.array])
                d.replay_d2d(c, copy(rsrc), region, what)
            else:
                r, enc, what, side = args
                c = copy(r)
                region = c.box if enc is None else box_of(enc, bases[c.array])
                host = d.host.array(c.array)
                if kind == "h2d":
                    d.replay_h2d(c, region, host, what, d.lane(c, region, side))
                else:
                    d.replay_d2h(c, region, host, what, side)
            stats.moved(kind, c.device.index, what, region.volume * c.itemsize)
        times[timer] += clock() - t0
    if d.writebacks:
        d.flush_writebacks()  # before the transient boxes they copy from are freed
    for c in made:
        c.device.free(c.alloc, c.last)
        stats.devices[c.device.index].on_free(c.nbytes)
    for recs, stale, (a, cs) in zip(tpl.dirty, tpl.stale, copies.items()):
        ds = bases.get(a)
        start = d.dirty[a]
        d.dirty[a] = [start[r[1]] if r[0] == "s" else (box_of(r[0], ds), cs[r[1]])
                      for r in recs]
        for c, st in zip(cs, stale):
            if st is not None:
                c.stale = [box_of(s, ds) for s in st]
    for (c, gs), hulls, ns in zip(groups, tpl.groups, counts):
        ds = bases[c.array]
        for g, hull, n in zip(gs, hulls, ns):
            g[0] = box_of(hull, ds)
            g[1] = n
    stats.tiles += tpl.tiles
    stats.split_accesses += tpl.split_accesses
    stats.edge_first += len(tpl.parted)
    for dev, n in tpl.boxes_present:
        stats.devices[dev].boxes_present += n
    stats.replayed += 1
    stats.shifted += 1
    return True

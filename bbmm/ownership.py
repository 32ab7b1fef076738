"""Who holds the newest value of each element, and the messages a phase needs: the
bookkeeping every rank of :class:`~bbmm.distributed.DistributedRuntime` keeps
identically, and the planning that reads it (pure functions of the global tile list,
so every rank computes the same plan with no communication).

.. autoclass:: Ownership
.. autofunction:: stages
.. autofunction:: plan_exchange
.. autofunction:: plan_phase
.. autoclass:: PlanMemo
.. autofunction:: plan_gather
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from .box import Box, disjoint, hull_all, merge_adjacent
from .ordertype import Far as _Far, bases_like, box_of as _box, encode as _encode
from .ordertype import GAP as _GAP, SHIFT as _SHIFT, order as _order, shape as order_shape
from .runtime import Tile

Messages = dict[tuple[int, int], list[tuple[str, Box]]]
"""``(src, dst) -> [(array, box), ...]``: what rank ``src`` sends to rank ``dst``, in the
order both pack and unpack it (both ranks compute the same list)."""


# {{{ bookkeeping: who holds the newest value of each element

Record = tuple[Box, int, frozenset[int]]


class Ownership:
    """Per array, the rank that wrote each region last and the ranks holding that value.

    ``records[a]`` is a list of pairwise disjoint ``(box, owner, holders)``; ``owner``
    is always among ``holders``. An element in no record has the same value on every
    rank: its initial value, or one that every rank has received (with ``ranks``, the
    number of ranks, such records are dropped). Every rank keeps an identical copy (it
    is updated from the global tile list only).

    The list stays short where writes leave strips behind (LU writes a shrinking
    corner, so each ``k`` leaves row ``k`` and column ``k`` of its last box): a rank's
    new box is merged with its own earlier pieces where they form one box, a row every
    rank received (a pivot row) is no record at all, and past :attr:`LIMIT` records
    an owner's records become a few, their hulls, where they meet no other owner's
    (:meth:`compact`).
    """

    LIMIT = 8
    """Records of an array past which it is compacted. Fewer records make every phase's
    plan cheaper to look up, and a list that is compacted often keeps the same shape from
    step to step: the slowest of LU's four processes spends 0.314 ms per ``k`` with 8,
    0.350 with 16 (``python scripts/bench_host.py --programs lu --devices 4 --procs d
    --param lu:n=2048 --repeat 2``). The cost: holders that compaction forgets receive
    again; adi's exchange at 1024^2 over four ranks sends 288 messages instead of 231,
    with 0.07% more bytes."""

    def __init__(self, arrays: Sequence[str], ranks: int | None = None):
        self._records: dict[str, list[Record]] = {a: [] for a in arrays}
        self._lazy: tuple | None = None
        """Records a plan moved on left encoded (:meth:`restore_lazy`), decoded where they
        are read: the next step moved on replaces them unread."""
        self.ranks = ranks
        self._limit: dict[str, int] = {}
        self.key: tuple | None = None
        """The records as a comparable value (:func:`_records_key`), kept until they
        change (None: to compute)."""

    @property
    def records(self) -> dict[str, list[Record]]:
        """Per array, its records: ``(box, owner, holders)``."""
        lazy = self._lazy
        if lazy is not None:
            self._lazy = None
            self._records = _decoded_records(self._records, *lazy)
        return self._records

    @records.setter
    def records(self, value: dict[str, list[Record]]) -> None:
        self._records = value
        self._lazy = None

    def restore_lazy(self, recs_t: tuple, bases: Mapping[str, list[list[int]]],
                     limit: Mapping[str, int]) -> None:
        """:meth:`restore` of a template's records encoded (:func:`_template`), decoded
        through ``bases`` only when they are read."""
        self._lazy = (recs_t, bases)
        self._limit = dict(limit)
        self.key = None

    def comparable(self) -> tuple:
        """The records as a comparable value (:attr:`key`, computed once per state)."""
        return _records_key(self)

    def state(self) -> tuple:
        """Everything :meth:`set_state` takes back, as it is (records left encoded)."""
        return self._records, self._lazy, self._limit, self.key

    def set_state(self, state: tuple) -> None:
        self._records, self._lazy, self._limit, self.key = state

    def _put(self, array: str, records: list[Record]) -> None:
        """``array``'s records become ``records`` (their key to compute again)."""
        self.records[array] = records
        self.key = None

    def restore(self, records: Mapping[str, Sequence[Record]], limit: Mapping[str, int],
                key: tuple | None = None) -> None:
        """Records and compaction bounds as a plan looked up left them (``key``: theirs,
        when known)."""
        self.records = {a: list(r) for a, r in records.items()}
        self._limit = dict(limit)
        self.key = key

    def wrote(self, array: str, box: Box, rank: int) -> None:
        """A tile of ``rank`` wrote ``box``: that rank alone holds the newest value there."""
        if box.is_empty:
            return
        out: list[Record] = []
        for r in self.records[array]:
            b = r[0]
            if b.overlaps(box):
                out.extend((p, r[1], r[2]) for p in b.subtract(box))
            else:
                out.append(r)
        mine = frozenset((rank,))
        same = [r[0] for r in out if r[1] == rank and r[2] == mine]
        merged = merge_adjacent([*same, box]) if same else None
        if merged is not None and len(merged) <= len(same):
            # this rank's own pieces that form one box with the new one
            out = [r for r in out if not (r[1] == rank and r[2] == mine)]
            out.extend((b, rank, mine) for b in merged)
        else:
            out.append((box, rank, mine))
        self._put(array, out)
        if len(out) > self._limit.get(array, self.LIMIT):
            self.compact(array)

    def compact(self, array: str) -> None:
        """Per owner, groups of its records become one record, ``(hull, owner, common
        holders)``, where the hull meets no other owner's record; the list is compacted
        again once it has doubled (at least :attr:`LIMIT` records).

        Each group starts from the owner's largest record left and grows to its hull with
        each other record of the owner where that hull meets no other owner's record (nor
        a group made before); the owner's records the hull meets are taken in, the parts
        of them outside it stay records.
        Safe: the hull's other elements are in no record, so every rank, the owner too,
        holds their newest value; only fewer ranks are said to hold the rest (they may
        receive again what they had). LU's trailing corner leaves a staircase of strips
        of each rank behind it: they become a few boxes instead of a strip per step."""
        recs = self.records[array]
        owners = list(dict.fromkeys(r[1] for r in recs))
        out: list[Record] = []
        for i, owner in enumerate(owners):
            later = set(owners[i + 1:])
            blockers = [r[0] for r in out] + [r[0] for r in recs if r[1] in later]
            pending = sorted((r for r in recs if r[1] == owner), key=lambda r: -r[0].volume)
            while pending:
                hull, _, holders = pending.pop(0)
                grew = True
                while grew:
                    grew = False
                    for rec in pending:
                        g = hull_all((hull, rec[0]))
                        assert g is not None
                        if any(x.overlaps(g) for x in blockers):
                            continue
                        rest: list[Record] = []
                        for q in pending:  # the owner's records the grown hull meets
                            if q[0].overlaps(g):
                                holders = holders & q[2]
                                if not q[0].issubset(g):  # the part outside stays
                                    rest.extend((p, owner, q[2]) for p in q[0].subtract(g))
                            else:
                                rest.append(q)
                        hull, pending, grew = g, rest, True
                        break
                out.append((hull, owner, holders))
                blockers.append(hull)
        self._put(array, out)
        self._limit[array] = max(self.LIMIT, 2 * len(out))

    def received(self, array: str, box: Box, rank: int) -> None:
        """``rank`` received the newest value of ``box`` (it becomes a holder)."""
        out: list[Record] = []
        everyone = self.ranks
        for r in self.records[array]:
            b, owner, holders = r
            inter = b.intersect(box)
            if inter is None or rank in holders:
                out.append(r)
                continue
            out.extend((p, owner, holders) for p in b.subtract(box))
            if everyone is None or len(holders) + 1 < everyone:
                out.append((inter, owner, holders | {rank}))
        self._put(array, out)

    def missing(self, array: str, rank: int, region: Sequence[Box]) -> list[tuple[int, Box]]:
        """``(owner, box)`` for the parts of ``region`` (boxes that may overlap) whose
        newest value ``rank`` does not hold: per record, its intersections with the boxes
        as they are, made disjoint (and adjacent ones fused) only where there are several,
        so a region that misses nothing costs an intersection per box and record."""
        out: list[tuple[int, Box]] = []
        for b, owner, holders in self.records[array]:
            if rank in holders:
                continue
            pieces = []
            for n in region:
                inter = b.intersect(n)
                if inter is not None:
                    pieces.append(inter)
            if len(pieces) > 1:
                pieces = disjoint(dict.fromkeys(pieces))
            out.extend((owner, p) for p in pieces)
        return out

    def held(self, array: str, rank: int, full: Box) -> list[Box]:
        """The part of ``full`` (the whole array) where ``rank`` holds the newest value."""
        out = [full]
        for b, _, holders in self.records[array]:
            if rank not in holders:
                nxt: list[Box] = []
                for r in out:
                    nxt.extend(r.subtract(b) if r.overlaps(b) else (r,))
                out = nxt
        return out

# }}}


# {{{ planning (pure: the same on every rank)

def stages(tiles: Sequence[Tile], rank_of: Sequence[int]) -> list[list[Tile]]:
    """Split a phase's tiles, in order, so that no stage holds two tiles of different
    ranks whose write boxes overlap (they then run one after the other, with an
    exchange between them). Usually one stage: ranks write disjoint blocks."""
    hulls: dict[tuple[str, int], Box] = {}
    for t in tiles:
        r = rank_of[t.device]
        for a, ws in t.writes.items():
            h = hull_all([*ws, *((hulls[(a, r)],) if (a, r) in hulls else ())])
            if h is not None:
                hulls[(a, r)] = h
    clash = any(a1 == a2 and r1 != r2 and h1.overlaps(h2)
                for (a1, r1), h1 in hulls.items() for (a2, r2), h2 in hulls.items())
    if not clash:
        return [list(tiles)] if tiles else []
    out: list[list[Tile]] = []
    cur: list[Tile] = []
    written: list[tuple[int, str, Box]] = []
    for t in tiles:
        r = rank_of[t.device]
        mine = [(a, w) for a, ws in t.writes.items() for w in ws if not w.is_empty]
        if any(r2 != r and a2 == a and w2.overlaps(w)
               for a, w in mine for r2, a2, w2 in written):
            out.append(cur)
            cur, written = [], []
        cur.append(t)
        written.extend((r, a, w) for a, w in mine)
    if cur:
        out.append(cur)
    return out


def plan_exchange(own: Ownership, tiles: Sequence[Tile], rank_of: Sequence[int]) -> Messages:
    """Messages that give every rank the newest value of everything its tiles' boxes
    cover, before the tiles run; ``own`` records the receivers as holders.

    Arrays a tile only writes through exact boxes (``Tile.fresh``) need nothing: every
    element of their boxes is overwritten (:meth:`Ownership.missing` finds the rest).
    """
    need: dict[int, dict[str, dict[int, Box]]] = {}
    for t in tiles:
        per = need.setdefault(rank_of[t.device], {})
        fresh = t.fresh
        for a, bs in t.boxes.items():
            if fresh and a in fresh:
                continue
            seen = per.get(a)
            if seen is None:
                seen = per[a] = {}
            for b in bs:  # a driver's accesses share box objects: one look each
                seen[id(b)] = b
    msgs: Messages = {}
    for r, per in need.items():
        for a, seen in per.items():
            if not own.records[a] or not seen:
                continue
            for owner, piece in own.missing(a, r, list(seen.values())):
                lst = msgs.get((owner, r))
                if lst is None:
                    lst = msgs[(owner, r)] = []
                lst.append((a, piece))
    for (_, dst), items in msgs.items():
        for a, b in items:
            own.received(a, b, dst)
    return msgs


def plan_phase(own: Ownership, tiles: Sequence[Tile], rank_of: Sequence[int]
               ) -> list[tuple[list[Tile], Messages]]:
    """A phase's stages (:func:`stages`), each with the messages before it
    (:func:`plan_exchange`); ``own`` ends as the phase leaves it (every tile's writes
    recorded after its stage's messages)."""
    out = []
    for stage in stages(tiles, rank_of):
        msgs = plan_exchange(own, stage, rank_of)
        for t in stage:
            r = rank_of[t.device]
            for a, ws in t.writes.items():
                for w in ws:
                    own.wrote(a, w, r)
        out.append((stage, msgs))
    return out


class SpecKey:
    """A phase's ``spec`` with the records it met (:func:`_records_key`), hashed once:
    what :attr:`PlanMemo.by_spec` and the runtime's stages are looked up by, every
    phase of a stencil's step."""

    __slots__ = ("value", "_hash")

    def __init__(self, value: tuple):
        self.value = value
        self._hash = hash(value)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (type(other) is SpecKey and self._hash == other._hash
                                 and self.value == other.value)


class PlanMemo:
    """Phases planned before, looked up by the *order* of their coordinates.

    :func:`plan_phase` is box algebra on the tiles' boxes and the ownership records
    (intersections, differences, hulls, fusions) whose every decision compares two
    coordinates of one dimension of one array, give or take a unit or two (a
    difference's pieces start one past an end). Two phases whose coordinates, per array
    and dimension, come in the same order with the same gaps between neighbours (gaps
    of :attr:`GAP` or more all count as "far") take the same decisions, so the second's
    plan is the first's with each coordinate moved along with the input coordinate it
    came from. A stencil's time step is one such phase every step; Floyd-Warshall's
    step ``k`` is one for every ``k`` of a block but those within :attr:`GAP` rows of
    its ends; LU's shrinking corner repeats between its tile boundaries.

    The one decision that is not a comparison of coordinates is :func:`~bbmm.box.disjoint`
    taking larger boxes first: a plan looked up may cut a region into other disjoint
    pieces than planning afresh would, which covers the same elements and is as exact.

    A plan is kept as a template when it has at most :attr:`STAGES` stages and every
    coordinate of its output lies within :attr:`SHIFT` of an input coordinate: a stage
    moves a coordinate at most three units from the input it came from (a message piece
    one past an intersection's end, a record cut by it and then by a write box), so its
    comparisons are decided by the key (:data:`bbmm.ordertype.GAP`). The first time a
    template is used the phase is also planned afresh and the two compared; a template
    that differs is never used. Programs whose phases never repeat pay only for the
    keys, and not even that for long: after :attr:`MISSES` misses in a row with no hit,
    lookups pause for :attr:`PAUSE` phases. The plan is the same on every rank, looked
    up or not.
    """

    SIZE = 256
    GAP = _GAP
    SHIFT = _SHIFT
    STAGES = 1
    MISSES = 128
    PAUSE = 1024
    RECENT = 8
    """Verified templates tried first, before the phase's coordinates are sorted: one per
    phase of a serial iteration and per shape its records cycle through. LU's second
    process of four, dry, n=2048: 0.264 ms per ``k`` with 8, 0.294 with only the last one
    (``python scripts/bench_host.py --programs lu --devices 4 --procs d --param
    lu:n=2048``, that process alone)."""

    def __init__(self) -> None:
        self.exact: dict[Any, Any] = {}
        self.plans: dict[Any, Any] = {}
        self.by_spec: dict[Any, Any] = {}
        """Plans by the phase's ``spec`` and the records it met (:meth:`plan`)."""
        self.last_spec_key: Any = None
        """The key of the last phase planned with a ``spec``: equal keys, equal plans."""
        self._known: dict[tuple[Any, int], tuple[tuple, SpecKey, Any]] = {}
        """Entries of :attr:`by_spec` by the phase's ``spec`` and the identity of the
        records' key (:attr:`Ownership.key`) they were found with: ``(that key, the
        entry's key, the entry)``. A plan looked up restores the records with the key it
        kept, so a serial iteration that repeats meets the same key objects each time."""
        self._canon: dict[SpecKey, SpecKey] = {}
        """The key of each entry of :attr:`by_spec`, by itself: the one object that
        :attr:`last_spec_key` then names, so that the runtime's tables keyed by it
        (:meth:`bbmm.distributed.DistributedRuntime.run_phase`'s stages) find it by
        identity rather than comparing two equal keys' records every phase."""
        self.hits = self.misses = self.checked = self.rejected = 0
        self._recent: list[Any] = []
        """The verified templates used last, the latest first (at most :attr:`RECENT`):
        each its key, its shape (:func:`bbmm.ordertype.shape`) and its entry of
        :attr:`plans`. A serial iteration of several phases uses one per phase."""
        self._streak = 0
        self._paused = 0
        self.last: tuple | None = None
        """How the last phase was planned, where by a verified template used last: that
        entry of :attr:`_recent` and the bases it was decoded with; else None.
        :meth:`bbmm.distributed.DistributedRuntime.ahead` moves it on."""

    def plan(self, own: Ownership, tiles: Sequence[Tile], rank_of: Sequence[int],
             spec: Any = None) -> list[tuple[list[Tile], Messages]]:
        """:func:`plan_phase`, looked up where the same phase met the same records, or
        a phase of the same order met records of the same order. ``spec``: a value that
        determines the tiles (:meth:`bbmm.runtime.Runtime.run_phase`): a phase is then
        looked up by it and the records alone, before its boxes are looked at."""
        self.last = None
        if spec is not None:
            key = own.key
            if key is not None:
                # the records as a plan looked up left them: known by the key's identity,
                # without hashing the records
                known = self._known.get((spec, id(key)))
                if known is not None and known[0] is key:
                    self.last_spec_key = known[1]
                    return self._hit(own, tiles, known[2])
            rk = SpecKey((spec, _records_key(own)))
            rk = self.last_spec_key = self._canon.get(rk, rk)
            same = self.by_spec.get(rk)
            if same is not None:
                if key is not None:  # a kept key (a fresh one is not met again)
                    if len(self._known) >= 4 * self.SIZE:
                        self._known.clear()
                    self._known[(spec, id(key))] = (key, rk, same)
                return self._hit(own, tiles, same)
            plan = self.plan(own, tiles, rank_of)
            self._keep(self.by_spec, rk, _parts(plan, tiles), plan, own)
            if len(self._canon) >= 4 * self.SIZE:
                self._canon.clear()
            self._canon[rk] = rk
            return plan
        if self._paused:
            self._paused -= 1
            return plan_phase(own, tiles, rank_of)
        skel, flat, ndims = _flatten(own, tiles)
        for last in self._recent:
            if last[0][0] == skel:
                # a verified template used last, its order checked without sorting: no
                # key of the phase's coordinates is built or hashed
                bases = bases_like(last[1], flat, self.GAP)
                if bases is not None:
                    self.last = (last, bases)
                    return self._decode(own, tiles, last[2], bases)
        exact = (skel, tuple((a, tuple(f)) for a, f in flat.items()))
        same = self.exact.get(exact)
        if same is not None:
            return self._hit(own, tiles, same)
        orders, bases = _order(flat, ndims, self.GAP)
        key = (skel, orders)
        got = self.plans.get(key)
        if got is not None and got[4] is not False:
            if got[4]:
                recent = self._recent
                entry = (key, order_shape(orders, flat, ndims), got)
                recent.insert(0, entry)
                del recent[self.RECENT:]
                self.last = (entry, bases)
                return self._decode(own, tiles, got, bases)
            parts, msgs_t, recs_t, limit, verified = got
            msgs, records = _decoded(own, msgs_t, recs_t, bases)
            fresh = plan_phase(own, tiles, rank_of)
            self.checked += 1
            ok = own.records == records and len(fresh) == len(parts) and all(
                [id(t) for t in st] == [id(tiles[i]) for i in idx] and m == sm
                for (st, m), idx, sm in zip(fresh, parts, msgs))
            ok = ok and own._limit == limit
            self.plans[key] = (parts, msgs_t, recs_t, limit, ok)
            if not ok:
                self.rejected += 1
            return fresh
        self.misses += 1
        self._streak += 1
        if self._streak >= self.MISSES and not self.hits:
            self._paused = self.PAUSE
            self._streak = 0
        plan = plan_phase(own, tiles, rank_of)
        parts = _parts(plan, tiles)
        self._keep(self.exact, exact, parts, plan, own)
        if got is None and len(plan) <= self.STAGES:
            template = _template(plan, parts, own, bases, self.SHIFT)
            if template is not None:
                if len(self.plans) >= self.SIZE:
                    self.plans.pop(next(iter(self.plans)))
                self.plans[key] = (parts, *template, dict(own._limit), None)
        return plan

    def _decode(self, own: Ownership, tiles: Sequence[Tile], got: tuple,
                bases: Mapping[str, list[list[int]]], rank: int | None = None
                ) -> list[tuple[list[Tile], Messages]]:
        """A verified template ``got`` of :attr:`plans` for ``tiles``, whose coordinates'
        distinct values are ``bases``: its records restored (decoded where they are read,
        :meth:`Ownership.restore_lazy`), its stages returned (given ``rank``, with only
        the messages it sends or receives)."""
        return [([tiles[i] for i in idx], m)
                for idx, m in zip(got[0], self.messages(own, got, bases, rank))]

    def messages(self, own: Ownership, got: tuple, bases: Mapping[str, list[list[int]]],
                 rank: int | None) -> list[Messages]:
        """:meth:`_decode`'s stages without their tiles: the messages of each (given
        ``rank``, only those it sends or receives; a step moved on over processes runs
        the tiles it kept)."""
        _, msgs_t, recs_t, limit, _ = got
        self.hits += 1
        self._streak = 0
        own.restore_lazy(recs_t, bases, limit)
        return _decoded_messages(msgs_t, bases, rank)

    def _keep(self, table: dict[Any, Any], key: Any, parts: tuple,
              plan: list[tuple[list[Tile], Messages]], own: Ownership) -> None:
        """Keep ``plan`` (its stages as ``parts``, positions of the phase's tiles) and the
        records it left under ``key`` of ``table`` (:attr:`exact`, :attr:`by_spec`)."""
        if len(table) >= self.SIZE:
            table.pop(next(iter(table)))
        table[key] = (parts, [m for _, m in plan],
                      {a: tuple(r) for a, r in own.records.items()}, dict(own._limit),
                      _records_key(own))

    def _hit(self, own: Ownership, tiles: Sequence[Tile], same: tuple
             ) -> list[tuple[list[Tile], Messages]]:
        """A plan kept by :meth:`_keep`, for ``tiles``: the records it left restored."""
        self.hits += 1
        self._streak = 0
        parts, msgs, records, limit, rkey = same
        own.restore(records, limit, rkey)
        return [([tiles[i] for i in idx], m) for idx, m in zip(parts, msgs)]


def _decoded_messages(msgs_t: list, bases: Mapping[str, list[list[int]]],
                      rank: int | None = None) -> list[Messages]:
    """A template's messages, their boxes decoded through ``bases`` (given ``rank``, only
    those it sends or receives: a process of a row ``k`` sent to every other one decodes
    one message instead of all)."""
    hit = _MINE.get((id(msgs_t), rank))
    if hit is None or hit[0] is not msgs_t:
        if len(_MINE) >= 1024:
            _MINE.clear()
        hit = _MINE[(id(msgs_t), rank)] = (
            msgs_t, [[(pair, items) for pair, items in m.items()
                      if rank is None or rank in pair] for m in msgs_t])
    out = []
    for m in hit[1]:
        got = {}
        for pair, items in m:
            got[pair] = [(a, _box(t, bases[a])) for a, t in items]
        out.append(got)
    return out


_MINE: dict[tuple[int, int], tuple[list, list]] = {}
"""Per template's messages and rank, the pairs that concern the rank (every pair for
None; :func:`_decoded_messages`), with the messages they are for (ids may be reused): Floyd's
row ``k`` goes to every other process, and each decodes only its own message."""


def _decoded(own: Ownership, msgs_t: list, recs_t: tuple,
             bases: Mapping[str, list[list[int]]]) -> tuple[list[Messages], dict]:
    """A template's messages and records, their boxes decoded through ``bases``."""
    return _decoded_messages(msgs_t, bases), _decoded_records(own.records, recs_t, bases)


def _decoded_records(arrays: Iterable[str], recs_t: tuple,
                     bases: Mapping[str, list[list[int]]]) -> dict[str, list[Record]]:
    """A template's records (every array of ``arrays``), decoded through ``bases``."""
    records: dict[str, list[Record]] = {a: [] for a in arrays}
    records.update((a, [(_box(t, bases[a]), o, h) for t, o, h in recs]) for a, recs in recs_t)
    return records


def _parts(plan: list[tuple[list[Tile], Messages]], tiles: Sequence[Tile]) -> tuple:
    """Each stage of ``plan`` as the positions of its tiles in ``tiles``."""
    index = {id(t): i for i, t in enumerate(tiles)}
    return tuple(tuple(index[id(t)] for t in st) for st, _ in plan)


def _records_key(own: Ownership) -> tuple:
    """The records as a comparable value: with a phase's ``spec``, all its plan depends on
    (computed once per state of the records: :attr:`Ownership.key`)."""
    if own.key is None:
        own.key = tuple((a, own._limit.get(a), tuple((b.lo, b.hi, o, h) for b, o, h in recs))
                        for a, recs in own.records.items())
    return own.key


def _flatten(own: Ownership, tiles: Sequence[Tile]
             ) -> tuple[Any, dict[str, list[int]], dict[str, int]]:
    """What a phase's plan depends on: the part that is no coordinate (devices, box
    counts, fresh arrays, owners and holders), and per array the bounds of every box in
    a fixed order (tiles' boxes, tiles' writes, records; ``lo`` then ``hi``, so that
    position ``p`` is of dimension ``p % ndim``), with each array's ndim."""
    flat: dict[str, list[int]] = {}
    ndims: dict[str, int] = {}
    skel: list[Any] = []
    for t in tiles:
        parts = []
        for d in (t.boxes, t.writes):
            for a, bs in d.items():
                f = flat.get(a)
                if f is None:
                    f = flat[a] = []
                if len(bs) > 1:  # a driver's accesses share box objects: each once
                    bs = {id(b): b for b in bs}.values()
                for b in bs:
                    f += b.lo
                    f += b.hi
                    if a not in ndims:
                        ndims[a] = len(b.lo)
                parts.append((a, len(bs)))
            parts.append(None)
        skel.append((t.device, tuple(parts), t.fresh))
    recs_skel = []
    for a, recs in own.records.items():
        if not recs:
            continue
        f = flat.get(a)
        if f is None:
            f = flat[a] = []
        for b, _, _ in recs:
            f += b.lo
            f += b.hi
        if a not in ndims:
            ndims[a] = len(recs[0][0].lo)
        recs_skel.append((a, own._limit.get(a), tuple((o, h) for _, o, h in recs)))
    return (tuple(skel), tuple(recs_skel)), flat, ndims


def _template(plan: list[tuple[list[Tile], Messages]], parts: tuple, own: Ownership,
              bases: Mapping[str, list[list[int]]], shift: int) -> Any:
    """A plan's messages and records with each coordinate as (index of the nearest
    distinct input coordinate of its dimension, offset), or None where one lies farther
    than ``shift``."""
    try:
        msgs_t = [{pair: [(a, _encode(b, bases[a], shift)) for a, b in items]
                   for pair, items in msgs.items()} for _, msgs in plan]
        recs_t = tuple((a, tuple((_encode(b, bases[a], shift), o, h) for b, o, h in recs))
                       for a, recs in own.records.items() if recs)
    except (KeyError, _Far):
        return None
    return msgs_t, recs_t


def plan_gather(own: Ownership, root: int = 0) -> Messages:
    """Messages that give ``root`` the newest value of every element (from owners only)."""
    msgs: Messages = {}
    for a, recs in own.records.items():
        for b, owner, holders in recs:
            if root not in holders:
                msgs.setdefault((owner, root), []).append((a, b))
    for (_, dst), items in msgs.items():
        for a, b in items:
            own.received(a, b, dst)
    return msgs

# }}}

# vim: foldmethod=marker

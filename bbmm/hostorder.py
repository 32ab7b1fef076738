"""The order of the copies through the host arrays (:class:`HostOrder`), and its calls
over a replayed iteration played from a program (:class:`OrderProgram`).

Copies between the host arrays and the devices are enqueued without waiting; two on
different devices that meet in a host array keep their program order by events, which
:class:`HostOrder` finds by scanning the records of the copies still pending. A
replayed iteration (:mod:`bbmm.replay`) makes the same copies of the same regions every
time, and once the records it starts from have the shape of those it leaves (the same
regions, devices and kinds, in order: a stencil's halos and flow-out rows, each
superseding the last step's), every scan finds the same records: the events of the same
copies of the step before or of this one. :class:`OrderProgram` holds what each call
found, by the position of the records; a replay that starts from that shape makes its
calls from it, without a scan, and leaves the records as the scans would have. A call
the program does not foresee (another region, a copy complete at once) ends the play:
the records are made as far as it went, and the call is answered by a scan.
"""
from __future__ import annotations

from typing import Any, Sequence

from .box import Box
from .devices.base import complete_prefix


def _touches(rec: tuple[Box, Any, Any, bool, int], region: Box, loads: bool) -> bool:
    """Whether the pending copy of record ``rec`` touches ``region``: a store into it or,
    with ``loads``, a load out of it (:meth:`HostOrder.settle`, :meth:`HostOrder.touching`)."""
    return (rec[3] or loads) and rec[0].overlaps(region)


def _unfinished(recs: list[tuple[Box, Any, Any, bool, int]]) -> list[tuple]:
    """The pending-copy records whose copy may still be queued, in their order.

    A device's queues are in order: commands complete in the order they were enqueued,
    so once one record of a (device, lane) is complete so are all its earlier ones. Per
    queue, the newest complete record is found (one status query where the queue's
    newest record is done, else :func:`bbmm.devices.base.complete_prefix`'s bisection;
    the device of the records answers, :meth:`bbmm.devices.base.Device.done`);
    a query costs 1.7 us on the H100 host), and it and those before it go.
    Looking only at each queue's newest record would drop nothing while the devices are
    busy, as they are whenever the host runs ahead: the lists would grow with every
    serial iteration and each copy scan them all (Floyd n=2048 on two PoCL devices:
    2045 records per copy). Querying every record each time costs 7 ms per copy on an
    H200 host for mvt under a cap (1.2 of its 1.5 s)."""
    queues: dict[tuple[int, int], list[int]] = {}
    for i, r in enumerate(recs):
        queues.setdefault((id(r[2]), r[4]), []).append(i)
    drop = set()
    for idx in queues.values():
        newest = recs[idx[-1]]
        done = newest[2].done
        if done(newest[1]):  # the whole queue is done
            drop.update(idx)
        else:
            drop.update(idx[:complete_prefix([recs[i][1] for i in idx[:-1]], done)])
    if not drop:
        return recs
    return [r for i, r in enumerate(recs) if i not in drop]


class _Records(list):
    """An array's pending-copy records (:class:`HostOrder`), with the range of first
    coordinates (rows) their regions span: ``lo`` to ``hi``, widened as records come and
    found anew when pruning drops some (records that go otherwise leave it wider than
    they need, which stays right)."""

    __slots__ = ("lo", "hi")

    def __init__(self) -> None:
        super().__init__()
        self.lo, self.hi = 1, 0

    def span(self) -> None:
        """Find :attr:`lo` and :attr:`hi` anew from the records."""
        lo, hi = 1, 0
        for r in self:
            a, b = r[0].lo[0], r[0].hi[0]
            if lo > hi:
                lo, hi = a, b
            else:
                if a < lo:
                    lo = a
                if b > hi:
                    hi = b
        self.lo, self.hi = lo, hi


SPAN_FROM = 5
"""Records of an array from which a copy's region is first tested against their span of
rows (fewer are scanned at once): a stencil's halos above and below a tile span every
row between them, so the test only adds to its few records (heat2d over four dry
processes with 8 commands pending kept at most 6)."""


class HostOrder:
    """Pending copies through the host arrays, so devices never wait on the host.

    Host-device copies are enqueued without waiting; a copy *into* host memory (a
    store) and a copy *out of* it (a load) on two devices must still happen in program
    order where their regions overlap. Each pending copy is kept as ``(region, event,
    device, stores, lane)``; a new copy waits for the overlapping pending stores (a load)
    or the overlapping pending loads and stores (a store) of other devices. Copies of one
    device need no events: its queue is in order. A load on a device's side queue
    (``lane`` 1, :meth:`bbmm.devices.base.Device.write_rect`) also waits for that
    device's own pending stores; the device's queue waits for the load before its next
    command, so later copies of the device need not wait for it. Events of a device of
    another domain (context) are waited for on the host.

    A store that waited for everything overlapping it (or follows it in its queue)
    stands for the records it covers, which are dropped: whatever later waits for it
    waits for them too.

    Past :attr:`PRUNE_AT` records of an array, completed ones are dropped
    (:func:`_unfinished`), and again each time :attr:`PRUNE_AT` more have come.

    The records of an array keep the range of first coordinates (rows) their regions
    span (:class:`_Records`); a region past it touches none of them and is answered
    without a scan: Floyd's and LU's row ``k`` moves past the rows copied in the last
    steps, whose records a GPU keeps pending (with 8 commands pending, ``python
    scripts/bench_host.py --programs floyd --devices 4 --procs d --param floyd:n=4096
    --lag 8``, every step of a process scanned 17 of them). A range of rows, not a box,
    and only for :data:`SPAN_FROM` records or more: a stencil's halos above and below a
    tile span every row between them, and a test of each region's box against their hull
    cost heat2d more than it saved. Within the scan, a record whose rows lie past the
    region's is passed over before their boxes are compared: one process driving four
    dry devices scans 11 records per copy of heat2d (n=512, 8 commands pending), and
    this took its step from 1524k to 1191k instructions (``python scripts/count_host.py
    heat2d --devices 4 --lag 8 --vary tsteps=100,200 --param n=512``).
    """

    PRUNE_AT = 16

    def __init__(self) -> None:
        self.pending: dict[str, list[tuple[Box, Any, Any, bool, int]]] = {}
        self._prune_at: dict[str, int] = {}
        self._count: dict[str, int] = {}
        """Records added per array so far; pruned again at ``_prune_at``'s count."""
        self._mode: _Recorder | _Player | None = None
        """Calls recorded into a program, or played from one (:meth:`record`,
        :meth:`play`): its own :meth:`before`, :meth:`after`, :meth:`settle` and
        :meth:`touching` answer meanwhile; None: answered by scans. (Its methods set on
        the instance in their place, and taken away again, would leave every attribute
        of the instance read from a dict of its own from then on, each call of every
        method dearer, whether it plays or not.)"""
        self._at: tuple[OrderProgram, list[tuple[str, Any, int]]] | None = None
        """The program whose end the records are, untouched since it played, and the
        record lists it left."""

    @staticmethod
    def _outside(recs: list, region: Box) -> bool:
        """Whether ``region`` lies past the rows of the records ``recs`` (of
        :data:`SPAN_FROM` or more: fewer are scanned as soon; a list put in
        :attr:`pending` from outside is always scanned)."""
        return (len(recs) >= SPAN_FROM and type(recs) is _Records
                and (region.hi[0] < recs.lo or region.lo[0] > recs.hi))

    def before(self, array: str, region: Box, device: Any, stores: bool,
               lane: int = 0) -> list[Any]:
        """Events the copy of ``region`` of ``array`` on ``device`` (``lane`` 1: its side
        queue) must wait for."""
        if self._mode is not None:
            return self._mode.before(array, region, device, stores, lane)
        recs = self.pending.get(array)
        if not recs:
            return []
        r0, r1 = region.lo[0], region.hi[0]
        if len(recs) >= SPAN_FROM and type(recs) is _Records and (r1 < recs.lo or r0 > recs.hi):
            return []  # (_outside, inline: a copy's hottest test)
        out = []
        dom = device.domain
        for b, e, d, st, _ in recs:
            if ((d is device and not lane) or not (st or stores) or b.lo[0] > r1
                    or b.hi[0] < r0 or not b.overlaps(region)):
                continue
            if dom is not None and d.domain is dom:
                out.append(e)
            else:
                d.wait(e)  # another context: only the host can order the two
        return out

    def after(self, array: str, region: Box, device: Any, stores: bool, event: Any,
              lane: int = 0) -> None:
        """Record the copy just enqueued (None: it is complete already)."""
        if self._mode is not None:
            return self._mode.after(array, region, device, stores, event, lane)
        if event is None:
            return
        self._at = None
        recs = self.pending.get(array)
        if recs is None:
            recs = self.pending[array] = _Records()
        lo, hi = region.lo[0], region.hi[0]
        if stores and recs and not self._outside(recs, region):
            # (a record reaching past the region's rows is not inside it: kept unasked)
            recs[:] = [r for r in recs if r[0].lo[0] < lo or r[0].hi[0] > hi
                       or not r[0].issubset(region)]
        if type(recs) is _Records:
            if not recs:
                recs.lo, recs.hi = lo, hi
            else:
                if lo < recs.lo:
                    recs.lo = lo
                if hi > recs.hi:
                    recs.hi = hi
        recs.append((region, event, device, stores, lane))
        count = self._count.get(array, 0) + 1
        self._count[array] = count
        if len(recs) > self.PRUNE_AT and count >= self._prune_at.get(array, 0):
            self._prune(array, recs, count)

    def _prune(self, array: str, recs: list, count: int) -> None:
        """Drop the records of ``array`` whose copies are complete (the ``count``-th
        recorded, :attr:`PRUNE_AT` of them or more held)."""
        recs[:] = _unfinished(recs)
        if type(recs) is _Records:
            recs.span()
        # again after PRUNE_AT more records (bisection keeps each pruning cheap): a
        # bound that doubled with the list kept one grown while the devices trailed
        # far behind long after they caught up, every copy scanning it
        self._prune_at[array] = count + self.PRUNE_AT

    def settle(self, array: str, region: Box, loads: bool) -> None:
        """Wait on the host for the pending copies that touch ``region`` of ``array``:
        stores into it and, with ``loads``, loads out of it; their records go.

        A copy found complete is not waited for: the host then sends or overwrites the
        region at once. Asking costs a status query (1.7 us on an H100 host), a wait on
        a complete event 4-22 us on an H200 host, and a halo's swap settles four regions
        on its way from one nest's kernel to the next."""
        if self._mode is not None:
            return self._mode.settle(array, region, loads)
        self._at = None
        recs = self.pending.get(array)
        if not recs or self._outside(recs, region):
            return
        kept = []
        r0, r1 = region.lo[0], region.hi[0]
        for r in recs:
            b = r[0]
            if (r[3] or loads) and b.lo[0] <= r1 and b.hi[0] >= r0 and b.overlaps(region):
                if not r[2].done(r[1]):
                    r[2].wait(r[1])
            else:
                kept.append(r)
        if len(kept) < len(recs):
            recs[:] = kept

    def touching(self, array: str, region: Box, loads: bool) -> list[tuple[Any, Any]]:
        """The pending copies that touch ``region`` of ``array`` (stores into it and, with
        ``loads``, loads out of it), as their events with the devices that enqueued
        them."""
        if self._mode is not None:
            return self._mode.touching(array, region, loads)
        recs = self.pending.get(array)
        if not recs or self._outside(recs, region):
            return []
        return [(r[1], r[2]) for r in recs if _touches(r, region, loads)]

    def clear(self) -> None:
        """Every device has finished: nothing is pending."""
        if isinstance(self._mode, _Recorder):
            self._mode.failed = True
        elif self._mode is not None:
            self.played()
        self._at = None
        self.pending.clear()
        self._prune_at.clear()
        self._count.clear()

    # ---- programs --------------------------------------------------------------------

    def record(self) -> bool:
        """Record the calls from now to :meth:`recorded` (a replayed iteration's): False
        where calls are recorded or played already."""
        if self._mode is not None:
            return False
        self._mode = _Recorder(self)
        return True

    def recorded(self) -> OrderProgram | None:
        """The program of the calls recorded since :meth:`record`, where the records they
        leave have the shape of those they started from and no pruning came between;
        else None."""
        rec = self._mode
        if not isinstance(rec, _Recorder):
            return None
        self._mode = None
        return rec.program(self.pending)

    def play(self, prog: OrderProgram) -> _Player | None:
        """Answer the calls from now to :meth:`played` from ``prog``, where the records
        have the shape of those it starts from (known without a look where they are the
        end of its last play); None, nothing changed, where they do not. The player
        returned takes the calls itself, as this order would (a caller that holds the
        order may hold the player instead meanwhile, a call the shorter)."""
        if self._mode is not None:
            return None
        at = self._at
        if at is None or at[0] is not prog or not _untouched(self.pending, at[1]):
            if not prog.fits(self.pending):
                return None
        ev: list[Any] = []
        pending = self.pending
        for a in prog.start:
            ev += [r[1] for r in pending[a]]
        player = _Player(self, prog, ev)
        self._mode = player
        return player

    def played(self) -> bool:
        """End a play: the records as the calls made them, as far as the program went.
        Whether every call of the program was made (the records are then its end, and
        the next play need not look at them)."""
        p = self._mode
        if not isinstance(p, _Player):
            return False
        self._mode = None
        prog = p.prog
        n = p.at[0]
        p.at[0] = -1  # (its calls from now on go to this order)
        whole = n == len(prog.steps)
        ev = p.ev
        pending = self.pending
        made = []
        if whole:
            for a in list(pending):
                if a not in prog.ends:
                    del pending[a]
            for a, (ends, lo, hi) in prog.ends.items():
                recs = pending[a] = _Records()
                recs.extend([(b, ev[s], d, st, ln) for s, b, d, st, ln in ends])
                recs.lo, recs.hi = lo, hi
                made.append((a, recs, len(recs)))
        else:
            lists = prog.lists_after(n)
            info = prog.info
            for a in list(pending):
                if a not in lists:
                    del pending[a]
            for a, slots in lists.items():
                recs = pending[a] = _Records()
                recs.extend([(info[s][1], ev[s], info[s][2], info[s][3], info[s][4])
                             for s in slots])
                recs.span()
        count = self._count
        for a, k in (prog.appends if whole else prog.appends_before(n)).items():
            count[a] = count.get(a, 0) + k
        self._at = (prog, made) if whole else None
        return whole

    def _unplay(self) -> None:
        """A call the program does not foresee: the play ends where it is (where it has
        not ended already: the player's calls then come here)."""
        if isinstance(self._mode, _Player):
            self.played()


_BEFORE, _AFTER, _NONE, _SETTLE, _TOUCHING = range(5)
"""The kinds of a program's steps: :meth:`HostOrder.before`, :meth:`~HostOrder.after` of
a copy and of one complete already, :meth:`~HostOrder.settle`,
:meth:`~HostOrder.touching`."""


PLAY_FROM = 2
"""Records a recorded call scanned on average from which its program is played: a play
costs a few comparisons per call and the records remade once per replay, which scans
of fewer records cost no more than. Instructions per step on dry devices with 8
commands pending, scanning against every program played (``python
scripts/count_host.py P --devices 4 --procs 4 --rank 1 --lag 8 ...``, the same tree but
for this): heat2d n=512 (2.4 records a call) 639k and 612k, fdtd2d 512^2 (1.25 a call)
691k and 718k; one process driving four devices plays heat2d's step (8.4 a call) in
843k instructions, against 1191k scanned."""


class OrderProgram:
    """:class:`HostOrder`'s calls over one replayed iteration, by the positions of the
    records (*slots*): those it starts from, numbered array by array, then one per copy
    recorded, in order. Per slot: its array, region, device, kind (stores) and lane
    (:attr:`info`); a step for each call: what it was asked (array, region, device, kind,
    lane) and the slots it found (the events to wait for on the device and on the host,
    the records dropped, the records settled or touching)."""

    __slots__ = ("info", "start", "steps", "scanned", "appends", "ends", "_nstart")

    def __init__(self, info: list[tuple], start: dict[str, list[int]],
                 end: dict[str, list[int]], steps: list[tuple], scanned: int) -> None:
        self.info = info
        self.scanned = scanned
        """Records the recorded calls scanned (:attr:`worth`)."""
        self.start = start
        """Per array, the slots of the records it starts from, in order."""
        self.steps = steps
        self._nstart = sum(len(v) for v in start.values())
        self.appends = self.appends_before(len(steps))
        """Copies recorded per array over the whole program."""
        self.ends: dict[str, tuple[list[tuple], int, int]] = {}
        """Per array, the records it leaves (``end``: their slots, in order) as ``(slot,
        region, device, stores, lane)``, and the rows they span."""
        for a, slots in end.items():
            rows = [(info[s][1].lo[0], info[s][1].hi[0]) for s in slots]
            self.ends[a] = ([(s, *info[s][1:]) for s in slots], min(r[0] for r in rows),
                            max(r[1] for r in rows))

    @property
    def worth(self) -> bool:
        """Whether playing the program saves work: its calls scanned :data:`PLAY_FROM`
        records each or more when recorded."""
        return self.scanned >= PLAY_FROM * len(self.steps)

    def fits(self, pending: dict[str, Sequence[tuple]]) -> bool:
        """Whether the records ``pending`` have the shape the program starts from."""
        start, info = self.start, self.info
        arrays = [a for a, recs in pending.items() if recs]
        if len(arrays) != len(start):
            return False
        for a in arrays:
            slots = start.get(a)
            recs = pending[a]
            if slots is None or len(slots) != len(recs):
                return False
            for s, r in zip(slots, recs):
                i = info[s]
                if r[0] is not i[1] or r[2] is not i[2] or r[3] != i[3] or r[4] != i[4]:
                    return False
        return True

    def lists_after(self, n: int) -> dict[str, list[int]]:
        """Per array, the slots of the records after the first ``n`` steps."""
        lists = {a: list(v) for a, v in self.start.items()}
        new = self._nstart
        for st in self.steps[:n]:
            if st[0] == _AFTER:
                gone = set(st[6])
                got = lists.setdefault(st[1], [])
                got[:] = [s for s in got if s not in gone]
                got.append(new)
                new += 1
            elif st[0] == _SETTLE and st[4]:
                gone = set(st[4])
                lists[st[1]] = [s for s in lists[st[1]] if s not in gone]
        return {a: v for a, v in lists.items() if v}

    def appends_before(self, n: int) -> dict[str, int]:
        """Copies recorded per array in the first ``n`` steps."""
        out: dict[str, int] = {}
        for st in self.steps[:n]:
            if st[0] == _AFTER:
                out[st[1]] = out.get(st[1], 0) + 1
        return out


def _untouched(pending: dict[str, Sequence[tuple]], made: list[tuple[str, Any, int]]
               ) -> bool:
    """Whether ``pending`` holds just the record lists ``made`` (array, list, length)
    that a play left, as it left them."""
    if len(pending) != len(made):
        return False
    for a, recs, n in made:
        if pending.get(a) is not recs or len(recs) != n:
            return False
    return True


def _same(i: tuple, j: tuple) -> bool:
    """Whether two slots' records have one shape (their regions the same objects)."""
    return i[0] == j[0] and i[1] is j[1] and i[2] is j[2] and i[3] == j[3] and i[4] == j[4]


class _Recorder:
    """:class:`HostOrder`'s calls answered by a plain scan of the records, each noted as
    a step of an :class:`OrderProgram` by the slots it found."""

    def __init__(self, order: HostOrder) -> None:
        self.order = order
        pending = order.pending
        self.slot: dict[int, int] = {}
        self.info: list[tuple] = []
        self.keep: list[tuple] = []  # (the records noted: their ids stay theirs)
        self.start = {a: [self._add(a, r) for r in recs] for a, recs in pending.items()
                      if recs}
        self.steps: list[tuple] = []
        self.failed = False
        self.scanned = 0
        """Records the calls scanned."""

    def _add(self, array: str, rec: tuple) -> int:
        s = len(self.info)
        self.slot[id(rec)] = s
        self.info.append((array, rec[0], rec[2], rec[3], rec[4]))
        self.keep.append(rec)
        return s

    def before(self, array: str, region: Box, device: Any, stores: bool,
               lane: int = 0) -> list[Any]:
        order = self.order
        out, on_dev, on_host = [], [], []
        dom = device.domain
        recs = order.pending.get(array, ())
        self.scanned += len(recs)
        for r in recs:
            b, e, d, st, _ = r
            if (d is device and not lane) or not (st or stores) or not b.overlaps(region):
                continue
            if dom is not None and d.domain is dom:
                out.append(e)
                on_dev.append(self.slot[id(r)])
            else:
                d.wait(e)
                on_host.append(self.slot[id(r)])
        self.steps.append((_BEFORE, array, region, device, stores, lane, on_dev, on_host))
        return out

    def after(self, array: str, region: Box, device: Any, stores: bool, event: Any,
              lane: int = 0) -> None:
        order = self.order
        if event is None:
            self.steps.append((_NONE, array, region, device, stores, lane))
            return
        recs = order.pending.get(array)
        if recs is None:
            recs = order.pending[array] = _Records()
        gone: list[int] = []
        if stores:
            self.scanned += len(recs)
            gone = [self.slot[id(r)] for r in recs if r[0].issubset(region)]
            if gone:
                recs[:] = [r for r in recs if not r[0].issubset(region)]
        if type(recs) is _Records:
            lo, hi = region.lo[0], region.hi[0]
            if not recs:
                recs.lo, recs.hi = lo, hi
            else:
                recs.lo, recs.hi = min(lo, recs.lo), max(hi, recs.hi)
        rec = (region, event, device, stores, lane)
        recs.append(rec)
        self._add(array, rec)
        order._count[array] = order._count.get(array, 0) + 1
        # no pruning while recording: what it drops hangs on the devices' progress, and a
        # step that leaves as many records as it found (one of heat2d's on eight devices
        # leaves 28 per array, past PRUNE_AT) would never be recorded; a step that adds
        # records no later copy supersedes leaves more than it found, and is recorded
        # no more after ORDER_TRIES (bbmm.replay)
        self.steps.append((_AFTER, array, region, device, stores, lane, gone))

    def settle(self, array: str, region: Box, loads: bool) -> None:
        recs = self.order.pending.get(array)
        hit = [r for r in recs if _touches(r, region, loads)] if recs else []
        self.scanned += len(recs) if recs else 0
        for r in hit:
            if not r[2].done(r[1]):
                r[2].wait(r[1])
        if hit:
            recs[:] = [r for r in recs if not _touches(r, region, loads)]  # type: ignore[index]
        self.steps.append((_SETTLE, array, region, loads, [self.slot[id(r)] for r in hit]))

    def touching(self, array: str, region: Box, loads: bool) -> list[tuple[Any, Any]]:
        recs = self.order.pending.get(array, ())
        self.scanned += len(recs)
        hit = [r for r in recs if _touches(r, region, loads)]
        self.steps.append((_TOUCHING, array, region, loads, [self.slot[id(r)] for r in hit]))
        return [(r[1], r[2]) for r in hit]

    def program(self, pending: dict[str, Sequence[tuple]]) -> OrderProgram | None:
        if self.failed:
            return None
        end = {a: [self.slot[id(r)] for r in recs] for a, recs in pending.items() if recs}
        info = self.info
        if set(end) != set(self.start) or any(
                len(end[a]) != len(self.start[a])
                or not all(_same(info[x], info[y]) for x, y in zip(end[a], self.start[a]))
                for a in end):
            return None  # not yet a cycle: the records it leaves differ from its start
        return OrderProgram(info, self.start, end, self.steps, self.scanned)


class _Player:
    """:class:`HostOrder`'s calls answered from an :class:`OrderProgram`, step by step,
    while each is the one the program foresees (its array, its region the same object,
    its device, kind and lane); ``ev``: the events of the slots so far, ``at``: the
    step reached. Its calls are closures over these: a play's call costs a few
    comparisons and the events it finds, where a scan tests every record."""

    __slots__ = ("prog", "ev", "at", "before", "after", "settle", "touching", "_order")

    def __init__(self, order: HostOrder, prog: OrderProgram, ev: list[Any]) -> None:
        self._order = order
        self.prog = prog
        self.ev = ev
        at = self.at = [0]
        steps = prog.steps
        info = prog.info
        append = ev.append

        def before(array: str, region: Box, device: Any, stores: bool,
                   lane: int = 0) -> list[Any]:
            i = at[0]
            st = steps[i] if 0 <= i < len(steps) else _NO_STEP
            if (st[2] is not region or st[0] != _BEFORE or st[3] is not device
                    or st[4] != stores or st[5] != lane or st[1] != array):
                order._unplay()
                return order.before(array, region, device, stores, lane)
            at[0] = i + 1
            for s in st[7]:
                info[s][2].wait(ev[s])  # another context: only the host can order the two
            return [ev[s] for s in st[6]] if st[6] else []

        def after(array: str, region: Box, device: Any, stores: bool, event: Any,
                  lane: int = 0) -> None:
            i = at[0]
            st = steps[i] if 0 <= i < len(steps) else _NO_STEP
            if (st[2] is not region or st[0] != (_NONE if event is None else _AFTER)
                    or st[3] is not device or st[4] != stores or st[5] != lane
                    or st[1] != array):
                order._unplay()
                order.after(array, region, device, stores, event, lane)
                return
            at[0] = i + 1
            if event is not None:
                append(event)

        def settle(array: str, region: Box, loads: bool) -> None:
            i = at[0]
            st = steps[i] if 0 <= i < len(steps) else _NO_STEP
            if st[2] is not region or st[0] != _SETTLE or st[3] != loads or st[1] != array:
                order._unplay()
                order.settle(array, region, loads)
                return
            at[0] = i + 1
            for s in st[4]:
                d = info[s][2]
                if not d.done(ev[s]):
                    d.wait(ev[s])

        def touching(array: str, region: Box, loads: bool) -> list[tuple[Any, Any]]:
            i = at[0]
            st = steps[i] if 0 <= i < len(steps) else _NO_STEP
            if st[2] is not region or st[0] != _TOUCHING or st[3] != loads or st[1] != array:
                order._unplay()
                return order.touching(array, region, loads)
            at[0] = i + 1
            return [(ev[s], info[s][2]) for s in st[4]]

        self.before, self.after, self.settle, self.touching = before, after, settle, touching

    def __getattr__(self, name: str) -> Any:
        # anything else asked of the order meanwhile (its records, clear): the play ends
        # first, and the order answers
        order = self._order
        order._unplay()
        return getattr(order, name)


_NO_STEP = (-1, None, None, None, None, None, (), ())
"""What a call past a program's last step meets: a step no call matches."""

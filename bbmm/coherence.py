"""Coherence: where the newest value of every element lives, and the copies that keep it so.

The paper (Section 8, Table III) keeps device copies coherent by pushing data:
after a tile, its *flow-out* (elements it wrote that other tiles read later) goes
to the host copy, then *flows in* to every other resident box holding those
elements; *write-out* brings elements written for the last time home. bbmm does
that, and in addition tracks validity, so that correctness never rests on the
compile-time sets alone (docs/coherence.md states the invariant):

- every resident box (a :class:`~bbmm.buffers.Copy`) carries a *stale* region:
  the parts where it does not hold the newest value;
- each array has a list of *dirty* records ``(region, holder)``: the newest value
  of those elements lives in that device copy and not on the host. Records are
  pairwise disjoint. An element in no record is newest on the host.

Every operation below keeps: a holder is never stale on its record; a copy not
stale on an element holds the newest value of it; data only ever moves from a
holder of the newest value (the host off the records, or a non-stale copy).
:meth:`Directory.refresh` is the single routine that fills a copy (read-in,
flow-in, and the pull before a tile that finds part of its box stale).

:class:`HostCopy` is the host side behind a small interface. Over MPI
(:mod:`bbmm.distributed`) each rank keeps its own directory and host copy, and
:meth:`Directory.host_newer` takes in the newer values another rank sent.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import numpy as np

from . import regions as R
from .box import Box, disjoint, hull_all
from .hostorder import HostOrder
from .stats import Stats
from .tiles import Copy


class HostCopy:
    """The host's copy of every array: where elements no device holds dirty are newest.

    Subclasses may move data between processes in the two hooks (MPI: publish a
    stored region to the ranks that read it; gather a region before it is loaded).
    """

    def __init__(self, arrays: dict[str, np.ndarray]):
        for name, a in arrays.items():
            if not a.flags.c_contiguous:
                raise ValueError(f"host array {name!r} must be C-contiguous")
        self.arrays = arrays

    def array(self, name: str) -> np.ndarray:
        return self.arrays[name]

    def source(self, name: str, box: Box) -> tuple[np.ndarray, tuple[int, ...]] | None:
        """Where a device loads ``box`` of ``name`` from, where it is not :meth:`array`
        (another process's array, holding the newest values): an array and the
        coordinates of its first element; None: :meth:`array`."""
        return None

    lends = False
    """Whether any load may come from another array (:meth:`lent`); where not, a replayed
    stencil's loads do not ask per region. True for a subclass that answers :meth:`lent`
    itself and says nothing of this."""

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if "lent" in cls.__dict__ and "lends" not in cls.__dict__:
            cls.lends = True

    def lent(self, name: str, box: Box) -> bool:
        """Whether a load of ``box`` of ``name`` comes from another array (:meth:`source`)."""
        return False

    def storing(self, name: str, box: Box) -> None:
        """Hook: a device is about to be given a copy into ``box`` of ``name``."""

    def lent_load(self, name: str, box: Box, event: Any, device: Any) -> None:
        """Hook: ``box`` of ``name`` is being loaded from another array (:meth:`source`)
        by the command ``event`` (None: done) of ``device``."""

    def written_back(self, name: str, box: Box) -> None:
        """Hook: ``box`` of ``name``, loaded from another array (:meth:`source`), has been
        given to the device that loaded it to copy into :meth:`array`'s."""

    def stored(self, name: str, box: Box) -> None:
        """Hook: ``box`` of ``name`` was just stored from a device (newest now on the host)."""

    def loading(self, name: str, box: Box) -> None:
        """Hook: ``box`` of ``name`` is about to be loaded into a device from the host."""


class Directory:
    """All resident copies of all arrays on all devices, their stale parts, and dirty records."""

    DEFER_BYTES = 256 << 10
    """A write-out box of at most this many bytes is deferred (:meth:`writeout`)."""
    FLUSH_BYTES = 256 << 20
    """A group of deferred write-outs is stored once it holds this many bytes. The steps
    around each store take templates of their own (:mod:`bbmm.shifted`) and about fifty
    of them run for real or are looked up, so fewer stores leave more steps replayed: LU
    n=16384 on dry devices lagging 8 commands, host ms per ``k`` with 16 MiB against
    256 MiB: one device 0.074 against 0.046, two 0.114 against 0.082, four in one process
    0.329 against 0.158, and over four processes, paced by the slowest (the owner of row
    ``k``, whose final rows are the ones deferred), 0.202 against 0.152 (``python
    scripts/bench_host.py --programs lu --devices 1,2,4 --procs 1,d --param lu:n=16384
    --repeat 1 --lag 8``). The devices copy the same bytes either way, in fewer
    copies."""
    GROUPS = 4
    """Groups of deferred write-outs per copy; a new one past it stores the oldest."""
    RECORDS = 32
    """Past this many dirty records of an array, its deferred write-outs are stored: a
    deferred region that other stores carve up leaves a record per piece (LU on two
    devices: the flow-out of row k splits off row k's final left part every step), and
    every write and store walks the array's records."""

    def __init__(self, host: HostCopy, stats: Stats, reuse: bool = True, defer: bool = True,
                 beside: bool = False):
        self.host = host
        self.stats = stats
        self.reuse = reuse
        self.copies: dict[str, list[Copy]] = {name: [] for name in host.arrays}
        self.dirty: dict[str, list[tuple[Box, Copy]]] = {name: [] for name in host.arrays}
        self.order = HostOrder()
        self.tape: Any = None
        """A :class:`bbmm.replay.Tape` recording every transfer and every copy added or
        removed, or None."""
        # Host copies are asynchronous unless the host copy must see each stored region
        # at once (a subclass with its own stored/loading hooks, e.g. MPI).
        cls = type(host)
        self.blocking = (cls.stored is not HostCopy.stored or cls.loading is not HostCopy.loading
                         or getattr(host, "blocking", False))
        self.defer = defer and not self.blocking
        """Small write-outs are deferred and merged (:meth:`writeout`); never with a
        blocking host copy, whose hooks publish each stored region at once (MPI)."""
        self._groups: dict[Copy, list[list]] = {}
        """Deferred write-outs per holder: ``[hull, points]`` groups, oldest first."""
        self.writebacks: list[tuple[Copy, Box]] = []
        """Regions loaded from another array (:meth:`HostCopy.source`) whose copy from
        the device into the host's own array is not enqueued yet (:meth:`flush_writebacks`)."""
        self.beside = beside and not self.blocking
        """A tile's flow-out stored between its first rows and the rest of its rows
        (:meth:`bbmm.runtime.Runtime._edges`) leaves on the device's side queue, beside
        the launch of the rest (:meth:`~bbmm.devices.base.Device.read_rect`'s ``side``),
        where the device has one."""

    # ---- membership ------------------------------------------------------------

    def add(self, c: Copy) -> None:
        """A newly allocated copy: stale everywhere until read in."""
        c.stale = [c.box]
        self.copies[c.array].append(c)
        if self.tape is not None:
            self.tape.mutated = True
            self.tape.added.append(c)

    def remove(self, c: Copy) -> None:
        """Forget a copy that is about to be freed; it must hold no dirty record."""
        if self.writebacks:
            self.flush_writebacks()
        for _, h in self.dirty[c.array]:
            assert h is not c, "free of a dirty copy"
        self._groups.pop(c, None)
        self.copies[c.array].remove(c)
        if self.tape is not None:
            self.tape.mutated = True
            self.tape.removed.append(c)

    # ---- transfers (the only places bytes move) --------------------------------

    def lane(self, dst: Copy, region: Box, side: bool) -> int:
        """The queue of a load of ``region`` into ``dst``: 1, the device's side queue, for
        a read-in (``side``) where the device takes it there; else 0."""
        dev = dst.device
        if not side or not dev.side or self.blocking:
            return 0
        return 1 if dev.side_for(dst.alloc, region.volume * dst.itemsize) else 0

    def _h2d(self, dst: Copy, region: Box, what: str, side: bool = False) -> None:
        host = self.host.array(dst.array)
        dev = dst.device
        n = region.volume * host.itemsize
        self.replay_h2d(dst, region, host, what, self.lane(dst, region, side))
        if self.tape is not None:
            self.tape.add("h2d", (dst, region, what, side))
        self.stats.moved("h2d", dev.index, what, n)

    def _d2h(self, src: Copy, region: Box, what: str, side: bool = False) -> None:
        host = self.host.array(src.array)
        if self.tape is not None:
            self.tape.add("d2h", (src, region, what, side))
        self.replay_d2h(src, region, host, what, side)
        self.stats.moved("d2h", src.device.index, what, region.volume * host.itemsize)

    def out_lane(self, src: Copy, side: bool) -> int:
        """The queue of a store out of ``src``: 1, the device's side queue, for one that
        may run beside the device's next launch (``side``: a split tile's flow-out,
        :attr:`beside`); else 0."""
        return 1 if side and self.beside and src.device.side else 0

    def _d2d(self, dst: Copy, src: Copy, region: Box, what: str) -> None:
        self.replay_d2d(dst, src, region, what)
        if self.tape is not None:
            self.tape.add("d2d", (dst, src, region, what))
        n = region.volume * self.host.array(dst.array).itemsize
        self.stats.moved("d2d", dst.device.index, what, n)

    def replay_h2d(self, dst: Copy, region: Box, host: np.ndarray, what: str,
                   lane: int = 0, *, gate: Any = None, held: list | None = None) -> None:
        """The load of :meth:`_h2d` (``lane`` 1: on the device's side queue), without
        recording or counting it: a replayed iteration (bbmm.replay) issues it so, its
        bytes counted once per replay. With ``gate`` (:meth:`behind_gate`) the load waits
        for it, and its record for :class:`HostOrder` goes to ``held`` instead."""
        a = dst.array
        self.host.loading(a, region)
        src = self.host.source(a, region)
        origin = None
        if src is not None:
            host, origin = src  # the newest values, in the process that sent them
        dev = dst.device
        waits = self.order.before(a, region, dev, False, lane)
        if gate is not None:
            waits = [*waits, gate]
        if dev.profiling:
            dev.note({"array": a, "box": region, "for": what})
        e = dev.write_rect(dst.alloc, dst.box, region, host, origin, wait_for=waits,
                           blocking=self.blocking, side=bool(lane))
        if held is not None:
            held.append((a, region, dev, False, e, lane))
        elif not self.blocking:
            self.order.after(a, region, dev, False, e, lane)
        if e is not None:
            dst.last = e
        if src is not None:
            self.host.lent_load(a, region, e, dev)
            self.writebacks.append((dst, region))

    def flush_writebacks(self, meeting: Sequence[tuple[str, Box]] | None = None) -> bool:
        """Enqueue the copies of the regions loaded from another array (another process's,
        :meth:`HostCopy.source`) from the devices into the host's own array: the device
        that loaded one copies it back, behind the launches that followed the load, so
        that no processor copies it and the other array is free once that copy is done.
        Called at the next exchange (while it waits for messages; before it, those that
        meet what it sends or receives: ``meeting``, ``(array, box)`` pairs), before a
        store into such a region (the newer values of another device of this process
        must land after it), before a copy is freed (every path that frees one calls it
        first) and at the end. The regions of one copy go as one command where the device
        can (a middle process's two halos, loaded from its two neighbours). Returns
        whether it enqueued any."""
        if meeting is None:
            todo, self.writebacks = self.writebacks, []
        else:
            todo, keep = [], []
            for w in self.writebacks:
                c, region = w
                hit = any(a == c.array and region.overlaps(b) for a, b in meeting)
                (todo if hit else keep).append(w)
            self.writebacks = keep
        by_copy: dict[int, tuple[Copy, list[Box]]] = {}
        for c, region in todo:
            got = by_copy.setdefault(id(c), (c, []))[1]
            if not any(r.overlaps(region) for r in got):
                got.append(region)
        for c, regions in by_copy.values():
            a = c.array
            dev = c.device
            host = self.host.array(a)
            waits = [e for r in regions for e in self.order.before(a, r, dev, True)]
            if dev.profiling:
                dev.note({"array": a, "box": " + ".join(str(r)[3:] for r in regions),
                          "for": "writeback"})
            e = dev.read_rects(c.alloc, c.box, regions, host, wait_for=waits,
                               blocking=self.blocking)
            if not dev.paired(c.alloc, c.box, regions, host):
                self.stats.devices[dev.index].copies += len(regions) - 1
            for r in regions:
                if not self.blocking:
                    self.order.after(a, r, dev, True, e)
                self.host.written_back(a, r)
            if e is not None:
                c.last = e
            self.stats.moved("d2h", dev.index, "writeback",
                             sum(r.volume for r in regions) * host.itemsize)
        return bool(todo)

    def replay_d2h(self, src: Copy, region: Box, host: np.ndarray, what: str,
                   side: bool = False) -> None:
        """The store of :meth:`_d2h`, without recording or counting it (a replay's)."""
        a = src.array
        dev = src.device
        if self.writebacks:
            self.flush_writebacks([(a, region)])  # a copy back of it lands first
        waits = self.order.before(a, region, dev, True)
        self.host.storing(a, region)
        if dev.profiling:
            dev.note({"array": a, "box": region, "for": what})
        lane = self.out_lane(src, side)
        e = dev.read_rect(src.alloc, src.box, region, host, wait_for=waits,
                          blocking=self.blocking, **({"side": True} if lane else {}))
        if not self.blocking:
            self.order.after(a, region, dev, True, e, lane)
        if e is not None:
            src.last = e
        self.host.stored(a, region)

    def replay_pair(self, c: Copy, regions: Sequence[Box], host: np.ndarray, what: str,
                    stores: bool, side: bool = False, *, gate: Any = None,
                    held: list | None = None) -> None:
        """:meth:`replay_h2d` (``stores`` false) or :meth:`replay_d2h` of disjoint
        ``regions`` of copy ``c`` one after the other, as one command where the device can
        (:meth:`~bbmm.devices.base.Device.write_rects`): a replayed stencil step's two
        halos, its two flow-out rows (``side``: as :meth:`replay_d2h`'s). ``gate`` and
        ``held``: as :meth:`replay_h2d`'s."""
        a = c.array
        dev = c.device
        if stores and self.writebacks:
            self.flush_writebacks([(a, r) for r in regions])  # copies back land first
        if not stores and self.host.lends and any(self.host.lent(a, r) for r in regions):
            # a region that lies in another process's array: one load each
            for r in regions:
                self.replay_h2d(c, r, host, what)
            self.stats.devices[dev.index].copies += len(regions) - 1
            return
        waits: list[Any] = []
        for r in regions:
            if stores:
                self.host.storing(a, r)
            else:
                self.host.loading(a, r)
            waits += self.order.before(a, r, dev, stores)
        if gate is not None:
            waits.append(gate)
        if dev.profiling:
            dev.note({"array": a, "box": " + ".join(str(r)[3:] for r in regions),
                      "for": what})
        lane = self.out_lane(c, side) if stores else 0
        if stores:
            e = dev.read_rects(c.alloc, c.box, regions, host, wait_for=waits,
                               blocking=self.blocking, side=lane != 0)
        else:
            e = dev.write_rects(c.alloc, c.box, regions, host, wait_for=waits,
                                blocking=self.blocking)
        if not dev.paired(c.alloc, c.box, regions, host):
            # the replay counted one command; the device made one per region (the
            # driver bounds the pair's copy past its buffer, or refused a pair)
            self.stats.devices[dev.index].copies += len(regions) - 1
        for r in regions:
            if held is not None:
                held.append((a, r, dev, stores, e, 0))
            elif not self.blocking:
                self.order.after(a, r, dev, stores, e, lane)
            if stores:
                self.host.stored(a, r)
        if e is not None:
            c.last = e

    def gateable(self, fn: Any, args: tuple) -> tuple[Box, ...] | None:
        """The regions the replayed load ``fn(*args)`` (:meth:`replay_h2d`, or a
        :meth:`replay_pair` of loads) moves where it is one command on its device's queue,
        which may wait for a closed gate (a second one would be a copy behind it); else
        None."""
        c, moved, host = args[0], args[1], args[2]
        if fn == self.replay_h2d:
            regions: tuple[Box, ...] = (moved,)
        elif fn == self.replay_pair and not args[4]:
            regions = tuple(moved)
        else:
            return None
        return regions if c.device.holds(c.alloc, c.box, regions, host) else None

    def may_gate(self, c: Copy, regions: Sequence[Box]) -> bool:
        """Whether a :meth:`gateable` load of ``regions`` into ``c`` may wait for a closed
        gate now: copies are asynchronous, no copy back of another process's array is
        pending (the exchange would enqueue it, a copy behind the gate), and the load is
        out of this host's own array."""
        if self.blocking or self.writebacks:
            return False
        return not any(self.host.lent(c.array, r) for r in regions)

    def behind_gate(self, device: Any, exchange: Callable[[bool], None],
                    load: Callable[[Any, list], None], launches: Callable[[], None]) -> bool:
        """A replayed phase's load and launches issued before its ``exchange`` (the
        stage's ``before``), behind a gate of ``device`` that opens once the exchange is
        done: ``load(gate, held)`` issues the load waiting for the gate
        (:meth:`replay_h2d`'s ``gate`` and ``held``), ``launches()`` the kernels behind it.
        The load's records go to :class:`HostOrder` once the gate is open: the exchange
        settles the regions it receives, and must not wait for a load that waits for it.
        False, with nothing issued, where ``device`` gives no gate."""
        gate = device.gate()
        if gate is None:
            return False
        held: list = []
        load(gate, held)
        launches()
        try:
            exchange(True)
        finally:
            device.open(gate)
        for a, r, dev, stores, e, lane in held:
            self.order.after(a, r, dev, stores, e, lane)
        return True

    def replay_d2d(self, dst: Copy, src: Copy, region: Box, what: str) -> None:
        """The copy of :meth:`_d2d`, without recording or counting it (a replay's)."""
        item = self.host.array(dst.array).itemsize
        if dst.device.profiling:
            dst.device.note({"array": dst.array, "box": region, "for": what})
        e = dst.device.copy_rect(dst.alloc, dst.box, src.alloc, src.box, region, item)
        if e is not None:
            dst.last = src.last = e

    # ---- the newest value ------------------------------------------------------

    def store(self, holder: Copy, region: Box, what: str,
              parts: Sequence[Box] | None = None, side: bool = False) -> None:
        """Copy the parts of ``region`` where ``holder`` is newest to the host (``side``:
        beside the device's next launch where :attr:`beside` allows, :meth:`out_lane`).

        Safe because only non-stale elements are stored: each is the newest value
        (so at least as new as the host's), and the dirty records over them are
        dropped since the host is newest there now. With ``parts``, only the records
        over those parts of ``region`` go: the rest keeps its records, as if it had not
        been stored (its write-out copies it again, the same values), so that a flow-out
        stored as the hull of its parts leaves the records the parts alone would
        (:func:`bbmm.runtime._merged`).
        """
        inter = region.intersect(holder.box)
        if inter is None:
            return
        for piece in R.minus_all([inter], holder.stale):
            self._d2h(holder, piece, what, side)
            if parts is None:
                self._clean(holder.array, piece)
            else:
                for p in parts:
                    q = p.intersect(piece)
                    if q is not None:
                        self._clean(holder.array, q)

    def _clean(self, array: str, region: Box) -> None:
        recs = self.dirty[array]
        if not recs:
            return
        out = []
        for b, h in recs:
            if b.overlaps(region):
                if not b.issubset(region):  # (a record inside the region just goes)
                    out.extend((p, h) for p in b.subtract(region))
            else:
                out.append((b, h))
        self.dirty[array] = out

    def refresh(self, dst: Copy, want: Iterable[Box], what: str, flush: bool = True,
                side: bool = False) -> int:
        """Make ``dst`` newest on ``want`` (Algorithm 3, bb_readin, generalised).

        Parts held non-stale by another copy of the same device are copied
        device-to-device (the paper's intra-device reuse); parts whose newest
        value lives dirty in a copy elsewhere are first stored to the host (only
        with ``flush``; otherwise they stay stale); the rest comes from the host.
        Returns the number of elements made valid. With ``side`` the parts from the host
        may run on the device's side queue (a new box's read-in: see
        :meth:`bbmm.devices.base.Device.write_rect`).
        """
        if not dst.stale:
            return 0  # newest everywhere already (a resident box the tile takes as it is)
        want = list(want)
        if len(want) > 1:
            want = disjoint(want, merge=False)
        todo = R.clip_all(dst.stale, want)
        if not todo:
            return 0
        done: list[Box] = []
        if self.reuse:
            for src in self.copies[dst.array]:
                if src is dst or src.device is not dst.device or not todo:
                    continue
                if not any(t.overlaps(src.box) for t in todo):
                    continue
                nxt = []
                for t in todo:
                    inter = t.intersect(src.box)
                    if inter is None:
                        nxt.append(t)
                        continue
                    good = R.minus_all([inter], src.stale)
                    for g in good:
                        self._d2d(dst, src, g, what)
                        done.append(g)
                    nxt.extend(R.minus_all([t], good))
                todo = nxt
        for b, h in list(self.dirty[dst.array]):
            if h is dst or not todo or not R.overlaps(todo, b):
                continue
            if flush:
                for t in todo:
                    inter = t.intersect(b)
                    if inter is not None:
                        self.store(h, inter, "refresh" if what != "readin" else what)
            else:
                todo = R.minus(todo, b)
        for t in todo:
            self._h2d(dst, t, what, side)
            done.append(t)
        dst.stale = R.minus_all(dst.stale, done)
        return sum(b.volume for b in done)

    def wrote(self, writer: Copy, region: Box, whole: bool = False) -> None:
        """A tile wrote ``region`` through ``writer`` (which was newest on it before).

        ``region`` may over-approximate the elements really written: the rest of it
        still holds the newest value in ``writer``, so claiming it is safe. Every
        other copy of those elements is stale now. With ``whole`` the tile wrote every
        element of ``region`` (an exact write box of an array it does not read), so the
        writer is newest there even where it was stale (it was not read in).
        """
        region = region.intersect(writer.box)
        if region is None:
            return
        if whole:
            writer.stale = R.minus(writer.stale, region)
        assert not R.overlaps(writer.stale, region), \
            f"write through a stale part of {writer}: {writer.stale} vs {region}"
        for c in self.copies[writer.array]:
            if c is not writer and c.box.overlaps(region):
                c.stale = R.add(c.stale, region.intersect(c.box))
        for b, h in self.dirty[writer.array]:
            if h is writer and region.issubset(b):
                return  # already the writer's record: records are disjoint, none else overlaps
        self._clean(writer.array, region)
        self.dirty[writer.array].append((region, writer))

    def flowin(self, array: str, region: Box) -> None:
        """cpu_to_gpu_flowin: refresh every copy stale on ``region`` from its newest holder.

        Copies on the writer's device are refreshed device-to-device; others from the
        host. Elements still dirty elsewhere are left stale (no forced flush here).
        """
        for c in self.copies[array]:
            if not R.overlaps(c.stale, region):
                continue
            self.refresh(c, [region], "flowin", flush=False)

    def host_newer(self, array: str, region: Box) -> None:
        """The host copy of ``region`` was just replaced by newer values from elsewhere
        (another MPI rank, :mod:`bbmm.distributed`).

        Every resident copy becomes stale there, and dirty records over it are dropped
        without a store: they hold values older than the ones received (the sender wrote
        the region after this process's devices did), so storing them would clobber the
        newest value.
        """
        for c in self.copies[array]:
            if c.box.overlaps(region):
                c.stale = R.add(c.stale, region.intersect(c.box))
        self._clean(array, region)

    def transfer(self, old: Copy, new: Copy) -> None:
        """Move ``old``'s dirty records to ``new``, which holds the newest value there too."""
        recs = self.dirty[old.array]
        for i, (b, h) in enumerate(recs):
            if h is old:
                assert b.issubset(new.box) and not R.overlaps(new.stale, b), \
                    f"transfer of {b} to {new}, which is not newest there"
                recs[i] = (b, new)

    def writeout(self, holder: Copy, region: Box) -> None:
        """Write-out (Table III): bring ``region``, written for the last time, home.

        A small region is deferred: its elements stay dirty in ``holder`` (the directory
        already knows where their newest value is, so nothing is lost) and it joins a
        group of the holder's deferred write-outs whose hull adds at most as many points
        as the group holds; a group is stored as its hull once it holds
        :attr:`FLUSH_BYTES`, and every group of a copy when the copy is freed or at the
        end. LU's final column and row per step (a 4-byte-wide rectangle, 0.3 GB/s, and a
        host copy plan each) become one copy per group. Storing a hull is safe: ``store``
        moves only the parts where the holder is not stale, which hold the newest value.
        The groups are part of the state replay compares (:func:`bbmm.replay.signature`),
        so an iteration that defers is never taken for a fixed point.
        """
        inter = region.intersect(holder.box)
        if inter is None:
            return
        n = inter.volume
        if not n:
            return
        if not self.defer or n * holder.itemsize > self.DEFER_BYTES:
            self.store(holder, inter, "writeout")
            return
        groups = self._groups.setdefault(holder, [])
        for i, g in enumerate(groups):
            h = g[0].hull(inter)
            if h.volume <= 2 * (g[1] + n):
                g[0] = h
                g[1] += n
                if self.tape is not None:
                    self.tape.deferred.append((holder, inter, i))
                if g[1] * holder.itemsize >= self.FLUSH_BYTES:
                    groups.remove(g)
                    self._store_groups(holder, [g])
                else:
                    self._merge_dirty(holder, h)
                break
        else:
            if self.tape is not None:
                self.tape.deferred.append((holder, inter, -1))
            groups.append([inter, n])
            if len(groups) > self.GROUPS:
                self._store_groups(holder, [groups.pop(0)])
        if len(self.dirty[holder.array]) > self.RECORDS:
            for c in [c for c in self._groups if c.array == holder.array]:
                self._flush_groups(c)

    def _merge_dirty(self, holder: Copy, hull: Box) -> None:
        """``holder``'s dirty records that meet a deferred group's ``hull`` become one
        record, the hull, and the parts of them outside it, where ``holder`` holds the
        newest value of all of the hull: it covers the hull and is stale nowhere in it,
        and no other copy's record meets it (an element of the hull in no record has its
        newest value on the host, and so in ``holder`` too).

        Other stores carve a deferred region into pieces (LU: the flow-out of row ``k``
        splits off row ``k``'s final left part every step, a staircase of one record per
        step, beside the record of the rows still updated, which the hull of the final
        columns cuts into). Merged, the records keep one shape from step to step, which a
        replay up to a shift needs (:mod:`bbmm.shifted`), and every write walks fewer of
        them. The group is stored as this hull anyway (:meth:`_store_groups`)."""
        recs = self.dirty[holder.array]
        meet = 0
        for b, h in recs:
            if b.overlaps(hull):
                if h is not holder:
                    return
                meet += 1
        if meet < 2 or not hull.issubset(holder.box) or R.overlaps(holder.stale, hull):
            return
        out = []
        for r in recs:
            b = r[0]
            if b.overlaps(hull):
                if meet:
                    out.append((hull, holder))  # where the first of them was
                    meet = 0
                if not b.issubset(hull):
                    out += [(p, holder) for p in b.subtract(hull)]
            else:
                out.append(r)
        self.dirty[holder.array] = out

    def _flush_groups(self, c: Copy) -> None:
        """Store every deferred group of ``c``."""
        groups = self._groups.pop(c, None)
        if groups:
            self._store_groups(c, groups)

    def _store_groups(self, c: Copy, groups: list[list]) -> None:
        """Store each of ``groups`` as the hull of what ``c`` still holds dirty in it
        (other stores may have taken parts of it home since)."""
        mine = [b for b, h in self.dirty[c.array] if h is c]
        for g, _ in groups:
            h = hull_all(R.clip(mine, g))
            if h is not None:
                self.store(c, h, "writeout")
                mine = R.minus(mine, h)

    def writeback(self, c: Copy) -> None:
        """Box-out: store the regions ``c`` alone holds newest, before it is freed."""
        self._flush_groups(c)
        for b, h in list(self.dirty[c.array]):
            if h is c:
                self.store(c, b, "writeback")

    def flush_all(self) -> None:
        """Store every dirty record: afterwards the host holds the newest of everything."""
        if self.writebacks:
            self.flush_writebacks()
        for c in list(self._groups):
            self._flush_groups(c)
        for name in self.dirty:
            for b, h in list(self.dirty[name]):
                self.store(h, b, "writeback")

    # ---- debugging ---------------------------------------------------------------

    def verify(self) -> None:
        """Check the invariant (cheap enough for tests; ``BBMM_DEBUG=1`` runs it per phase)."""
        for name, recs in self.dirty.items():
            for i, (b, h) in enumerate(recs):
                assert h in self.copies[name], f"dirty record {b} held by a freed copy"
                assert b.issubset(h.box), f"dirty record {b} outside its holder {h.box}"
                assert not R.overlaps(h.stale, b), f"holder {h} stale on its record {b}"
                for b2, _ in recs[i + 1:]:
                    assert not b.overlaps(b2), f"dirty records overlap: {b} {b2}"
            for c in self.copies[name]:
                for s in c.stale:
                    assert s.issubset(c.box)

"""Lines 4-12 of Algorithm 4 for one tile: its disjoint bounding boxes per array
(Algorithm 2), each found present on the device or allocated and read in (Table II,
Algorithm 3), with the usage counts that keep them resident while the tile runs.

Beyond the paper: boxes whose hull wastes little are fused (:func:`fuse_hull`), a box
overlapping resident copies grows to take them in (fdtd2d's two readings of ``ey``), a
box partly resident is taken from the copies that hold it and only the rest allocated,
and a tile that does not fit beside what it found present is acquired again strictly,
then on an emptied device (:meth:`Acquire.acquire`). The result is a
:class:`TileBuffers`, from which the kernel's arguments are packed.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from . import regions as R
from .box import Box, disjoint, hull_all, merge_adjacent
from .buffers import BufferManager
from .coherence import Directory, HostCopy
from .diagnostic import TileTooLargeError, UsageError
from .stats import Stats
from .tiles import Copy, Tile, TileBuffers

__all__ = ["Acquire", "TileBuffers", "fuse_slack", "fuse_hull"]


def fuse_slack(spec: str | None) -> float:
    """The fuse slack of ``$BBMM_FUSE`` (a fraction such as ``0.02`` or ``1/64``; unset:
    1/64: a stencil's boxes, which miss only the corners or edges of their hull, are
    fused from small sides on; Floyd's row k far from a tile's rows is not)."""
    if spec is None or not spec.strip():
        return 1 / 64
    try:
        num, _, den = spec.partition("/")
        return float(num) / (float(den) if den else 1.0)
    except (ValueError, ZeroDivisionError):
        raise UsageError(f"BBMM_FUSE: {spec!r} is not a fraction such as 0.02 or 1/64") from None


def fuse_hull(boxes: list[Box], slack: float) -> list[Box]:
    """``[hull]`` of disjoint ``boxes`` when the hull adds at most ``slack`` of its volume
    (the points outside every box), else ``boxes``."""
    h = hull_all(boxes)
    assert h is not None
    extra = h.volume - sum(b.volume for b in boxes)
    return [h] if extra <= slack * h.volume else boxes


class Acquire:
    """Acquiring a tile's boxes on the devices of ``managers``: a part of
    :class:`bbmm.runtime.Runtime`, which holds one, with the runtime's host copy,
    directory, statistics and settings (``mode``, ``reuse``, ``fuse``, ``max_pieces``,
    ``verify``: as :class:`~bbmm.runtime.Runtime` takes them)."""

    def __init__(self, managers: Sequence[BufferManager], directory: Directory,
                 host: HostCopy, stats: Stats, *, mode: str, reuse: bool, fuse: float,
                 max_pieces: Mapping[str, int], verify: bool):
        self.managers = managers
        self.directory = directory
        self.host = host
        self.stats = stats
        self.mode, self.reuse, self.fuse = mode, reuse, fuse
        self.max_pieces = max_pieces
        self.verify = verify
        self.serial: object = None
        """The serial iteration the tiles acquired now run in (the key of the boxes freed at
        its end: cleanup flags); the runtime sets it."""
        self._disjoint: dict[tuple[tuple[Box, ...], bool],
                             tuple[list[Box], bool, list[Box]]] = {}
        """Algorithm 2's answer per (boxes, fresh): a pure function of the boxes, which
        repeat from one serial iteration to the next in stencils."""

    def acquire(self, t: Tile) -> TileBuffers:
        """Lines 4-12 of Algorithm 4: disjoint boxes, present/alloc/readin, usage counts.

        Under memory pressure a small box found inside a big resident one can pin too
        much memory (Floyd's row k inside another tile's rows): if the tile does not fit,
        its boxes are released and acquired again taking only exactly matching resident
        boxes, so everything else can be boxed out; if fragmentation still leaves no room,
        the device is emptied and the tile's boxes are placed one after the other.
        """
        try:
            return self._acquire_fit(t)
        except TileTooLargeError:
            if t.original is None:
                raise
        # an array held whole does not fit beside this tile's other boxes: its own boxes
        return self._acquire_fit(t.original)

    def _acquire_fit(self, t: Tile) -> TileBuffers:
        taken: list[Copy] = []
        try:
            return self._acquire_once(t, taken, strict=False)
        except TileTooLargeError:
            pass
        mgr = self.managers[t.device]
        for c in taken:
            mgr.release(c, keep=self.reuse)
        taken.clear()
        try:
            return self._acquire_once(t, taken, strict=True)
        except TileTooLargeError:
            pass
        # last resort against fragmentation: empty the device, then place the tile's
        # boxes one after the other; only if that fails does the tile not fit at all
        for c in taken:
            mgr.release(c, keep=self.reuse)
        taken.clear()
        mgr.free_all()
        try:
            return self._acquire_once(t, taken, strict=True)
        except TileTooLargeError:
            for c in taken:  # leave nothing in use: the caller may try other boxes
                mgr.release(c, keep=self.reuse)
            raise

    def _acquire_once(self, t: Tile, taken: list[Copy], strict: bool) -> TileBuffers:
        mgr = self.managers[t.device]
        tb = TileBuffers()
        for a, init in t.boxes.items():
            # one disjoint-box computation per distinct box (Floyd's 7 accesses have 3)
            boxes = [b for b in dict.fromkeys(init) if not b.is_empty]
            if not boxes:
                # the tile does not touch the array (an empty inner loop), but its kernel
                # still takes the array's arguments: no pieces, any slot number
                tb.pieces[a] = []
                tb.access[a] = [0] * len(init)
                continue
            host = self.host.array(a)
            fresh = a in t.fresh
            pieces = self._pieces(mgr, a, boxes, strict, fresh)
            flags = t.cleanup.get(a, ())
            keep: list[Box] | None = None  # distinct boxes of accesses without cleanup
            out = []
            # present boxes are taken first, so that making room for the new ones below
            # can never box out a copy this tile is about to use
            for p, c in pieces:
                if c is not None:
                    mgr.acquire(c)
                    taken.append(c)
                    mgr.stats.boxes_present += 1
            for p, c in pieces:
                if c is not None:
                    if not fresh:
                        self.directory.refresh(c, [p], "refresh")
                else:
                    c = mgr.alloc(a, p, host.itemsize)
                    if flags:
                        # freed at the end of the serial iteration when every access
                        # overlapping it has the cleanup flag: no flagless one does
                        if keep is None:
                            keep = list(dict.fromkeys(b for b, f in zip(init, flags) if not f))
                        for b in keep:
                            if b.overlaps(p):
                                break
                        else:
                            c.cleanup_iter = self.serial
                    mgr.acquire(c)
                    taken.append(c)
                    if not fresh:  # a box the tile overwrites whole needs no read-in
                        mgr.readin(c)
                        mgr.absorb(c)
                out.append((p, c))
            tb.pieces[a] = out
            if self.verify:
                for i, (p, _) in enumerate(out):
                    if any(p.overlaps(q) for q, _ in out[:i]):
                        raise AssertionError(f"tile {t.name}: pieces of {a} overlap: "
                                             f"{[q for q, _ in out]}")
            if len(out) == 1:
                acc = [0] * len(init)  # one piece holds every access (an empty one: any slot)
            else:
                # per access, the one piece holding its box, or -1 (split over several);
                # an empty access: any slot. Found once per box object (the driver shares
                # one object among accesses with equal boxes; equal boxes that are distinct
                # objects are only looked at twice)
                slot: dict[int, int] = {}
                acc = []
                for b in init:
                    k = slot.get(id(b))
                    if k is None:
                        if b.is_empty:
                            k = 0
                        else:
                            k = -2
                            for i, (p, _) in enumerate(out):
                                if p.overlaps(b):
                                    k = i if k == -2 else -1
                            if k == -2:  # (no piece holds it: cannot be, as before)
                                k = -1
                        slot[id(b)] = k
                    acc.append(k)
            self.stats.split_accesses += acc.count(-1)
            tb.access[a] = acc
        return tb

    def _pieces(self, mgr: BufferManager, a: str, boxes: list[Box], strict: bool = False,
                fresh: bool = False) -> list[tuple[Box, Copy | None]]:
        """Algorithm 2 plus the present check: the tile's disjoint boxes of ``a``, each with
        the resident copy that holds it (None: to allocate).

        Each disjoint box (Algorithm 2, adjacent pieces fused) is taken from one resident
        copy that subsumes it (bb_present); failing that, the parts of it that resident
        copies hold are taken from them and only the rest is allocated (Floyd's row
        ``k + 1`` next to a tile's rows: the rows stay, the row is new), unless an
        access box would then span several pieces (its accesses split). If that needs
        more pieces than the kernel has slots, whole disjoint boxes are allocated. With
        ``strict`` only copies of exactly that box are reused (see :meth:`acquire`).
        Boxes whose hull wastes little are fused first (:attr:`fuse`), unless the tile
        only writes the array (``fresh``: no read-in would fill the hull's extra points).
        """
        h = c = None
        if self.reuse and not strict:
            # a resident copy valid on the hull of every box serves the tile as one piece,
            # whatever Algorithm 2 would split the boxes into: nothing to read in, no split
            # access (LU's moving boxes inside the one copy of A: a disjoint-box
            # computation per tile saved)
            h = boxes[0] if len(boxes) == 1 else hull_all(boxes)
            c = mgr.present(a, h)
            if c is not None and not (c.stale and R.overlaps(c.stale, h)):
                return [(h, c)]
        fused = False
        hull_copy = None  # the resident copy holding the fused hull, looked up once
        if self.mode == "convex":
            merged = [hull_all(boxes)]
        else:
            # Algorithm 2 is a pure function of the boxes, which repeat from one serial
            # iteration to the next in stencils: computed once per distinct list
            key = (tuple(boxes), fresh)
            got = self._disjoint.get(key)
            if got is None:
                if len(self._disjoint) >= 4096:
                    self._disjoint.clear()
                merged = unfused = disjoint(boxes)
                fused = len(merged) > 1 and self.fuse > 0 and not fresh
                if fused:
                    merged = fuse_hull(merged, self.fuse)
                    fused = len(merged) == 1
                got = self._disjoint[key] = (merged, fused, unfused)
            merged, fused, unfused = got
            if fused and self.reuse:
                # the fused hull is the boxes' hull, looked up above unless strict
                hull_copy = c if merged[0] == h else mgr.present(a, merged[0])
            if fused and self.reuse and hull_copy is None and any(
                    mgr.present(a, q) is not None for q in unfused):
                # the hull is new but a part of it lives already (Floyd's rows of a tile,
                # the hull taking in row k next to them): allocating the hull would copy
                # that part whole, again at every k that moves the hull (130 copies of
                # half the matrix at n=16384 on two devices), so the parts go as they are
                merged, fused = unfused, False
        limit = self.max_pieces.get(a, 1 << 30)
        out: list[tuple[Box, Copy | None]] = []
        whole: list[tuple[Box, Copy | None]] = []
        for p in merged:
            if fused:  # merged is the one hull
                c = hull_copy
            else:
                c = mgr.present(a, p) if self.reuse else None
            if strict and c is not None and c.box != p:
                c = None
            if c is None and self.reuse and not strict and not fresh and self.fuse > 0:
                g = self._grown(mgr, a, p, self.fuse)
                # the tile's pieces must stay disjoint: a box grown over another of its
                # disjoint boxes (LU's row k grown over column k's resident copy, next
                # to the column piece) would leave an element in two pieces, of which a
                # write reaches one while both copies would be recorded as written
                if g is not None and not any(q is not p and q.overlaps(g) for q in merged):
                    whole.append((g, None))
                    out.append((g, None))
                    continue
            whole.append((p, c))
            if c is not None or not self.reuse or strict or fused:
                # a fused hull is allocated whole (absorbing what is resident inside it):
                # covering it with resident parts would split its accesses again
                out.append((p, c))
                continue
            # the parts already resident stay where they are; only the rest is new
            cover = self._cover(mgr, a, p)
            if len(cover) > 1 and any(
                    b.issubset(p) and sum(q.overlaps(b) for q, _ in cover) > 1
                    for b in boxes):
                # ...unless that splits an access (mvt's column box over the row boxes
                # left by the first product): a split access searches its pieces at every
                # element (3.7x the kernel time on an H200), while one new box takes the
                # resident parts by a device-to-device copy (readin prefers it)
                out.append((p, None))
                continue
            out.extend(cover)
        if len(out) > limit:
            # too many pieces for the kernel's slots: whole disjoint boxes instead (a new
            # one absorbs the resident copies it subsumes, see BufferManager.absorb)
            out = whole
        if len(out) > limit:
            h = hull_all(p for p, _ in out)
            assert h is not None
            c = mgr.present(a, h) if self.reuse else None
            out = [(h, c if not strict or (c is not None and c.box == h) else None)]
        return out

    @staticmethod
    def _grown(mgr: BufferManager, a: str, p: Box, slack: float) -> Box | None:
        """A box for ``p`` that also takes in the resident copies overlapping it, when that
        adds at most ``slack`` of ``p``'s volume (None: no such copy).

        Two nests of one time step that read an array through slightly different boxes
        (fdtd2d's ``ey``: rows 1.. for one, columns ..ny-2 for another) would otherwise
        keep two copies of it per device, refreshed from each other at every step: a
        whole array copied device to device per step. The grown box absorbs them
        (:meth:`BufferManager.absorb`) and holds every later box of the step. Growth is
        bounded by ``p``: a row next to a tile's rows (Floyd's row k) is not taken in.
        """
        limit = (1 + slack) * p.volume
        h = p
        for c in mgr.copies.get(a, ()):
            if c.box.overlaps(h) and not c.box.issubset(h):
                g = h.hull(c.box)
                if g.volume <= limit:
                    h = g
        return None if h is p else h

    @staticmethod
    def _cover(mgr: BufferManager, a: str, p: Box) -> list[tuple[Box, Copy | None]]:
        """Split ``p`` over the resident copies holding parts of it (largest first); the
        parts no copy holds come back with None (to allocate), fused where adjacent."""
        copies = mgr.copies.get(a, ())
        for c in copies:
            if c.box.overlaps(p):
                break
        else:
            return [(p, None)]  # nothing resident meets it (Floyd's row k on another device)
        todo = [p]
        out: list[tuple[Box, Copy | None]] = []
        for c in sorted(copies, key=lambda c: -c.box.volume):
            if not todo:
                break
            if not any(t.overlaps(c.box) for t in todo):
                continue
            nxt = []
            mine = []
            for t in todo:
                inter = t.intersect(c.box)
                if inter is None:
                    nxt.append(t)
                else:
                    mine.append(inter)
                    nxt.extend(t.subtract(c.box))
            out.extend((q, c) for q in merge_adjacent(mine))
            todo = nxt
        return out + [(q, None) for q in merge_adjacent(todo)]

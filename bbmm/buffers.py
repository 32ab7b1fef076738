"""Per-device buffer management (paper Section 7, Table II, Figure 7).

A :class:`BufferManager` tracks the boxes resident on one device: each is a
:class:`Copy` with a usage count; copies in use by a tile sit in the in-use set,
the others in the *unused* list in LRU order. ``present`` finds a resident box
that subsumes a wanted one (first level of reuse), ``alloc`` carves a new one out
of the device pool, boxing out unused copies in LRU order when the cap is reached
(their newest elements are written back first), ``readin`` fills it (Algorithm 3,
in :meth:`bbmm.coherence.Directory.refresh`), ``cleanup`` frees the boxes that
only one serial iteration needs (Section 7.2).
"""
from __future__ import annotations

from collections import OrderedDict

from .box import Box
from .coherence import Directory
from .devices.base import Device
from .diagnostic import DeviceMemoryError, TileTooLargeError, format_bytes
from .stats import DeviceStats
from .tiles import Copy


class BufferManager:
    """Boxes resident on one device: in-use copies, LRU unused list, box-in/box-out."""

    def __init__(self, device: Device, directory: Directory, stats: DeviceStats):
        self.device = device
        self.directory = directory
        self.stats = stats
        self.copies: dict[str, list[Copy]] = {}
        self.unused: OrderedDict[Copy, None] = OrderedDict()

    # ---- Table II ----------------------------------------------------------------

    def present(self, array: str, box: Box) -> Copy | None:
        """bb_present: a resident copy whose box contains ``box``, preferring one that is
        not stale on it, then the smallest."""
        best = None
        best_key = None
        for c in self.copies.get(array, ()):
            if box.issubset(c.box):
                stale = False
                for s in c.stale:
                    if s.overlaps(box):
                        stale = True
                        break
                key = (stale, c.box.volume)
                if best_key is None or key < best_key:
                    best, best_key = c, key
        return best

    def alloc(self, array: str, box: Box, itemsize: int) -> Copy:
        """bb_alloc: a new copy of ``box``, boxing out unused copies in LRU order if needed.

        Raises :class:`TileTooLargeError` when even an empty unused list leaves too
        little room: the boxes in use (this tile's own) do not fit in the device.
        """
        nbytes = box.volume * itemsize
        while True:
            try:
                a = self.device.alloc(nbytes)
                break
            except DeviceMemoryError:
                if not self.unused:
                    in_use = sum(c.nbytes for cs in self.copies.values() for c in cs)
                    pool = getattr(self.device, "pool", None)
                    held = max(in_use, getattr(pool, "in_use", 0))
                    # small boxes take whole alignment blocks: say so, or "64 B of 1 KiB
                    # held" would not explain why 16 B more do not fit
                    aligned = (f", {format_bytes(held)} in blocks of {pool.align} B"
                               if held > in_use and pool is not None else "")
                    raise TileTooLargeError(
                        self.device.name, nbytes, held, self.device.cap,
                        f"{array} {box} ({len(self._in_use())} boxes of the current tile "
                        f"hold {format_bytes(in_use)}{aligned}; raise --device-mem or "
                        f"lower --tile)"
                    ) from None
                self.evict(next(iter(self.unused)))
        c = Copy(array, box, self.device, a, itemsize)
        self.copies.setdefault(array, []).append(c)
        self.directory.add(c)
        self.stats.on_alloc(nbytes)
        n = len(self.copies[array])
        if n > self.stats.max_boxes_per_array:
            self.stats.max_boxes_per_array = n
        return c

    def readin(self, c: Copy) -> None:
        """bb_readin (Algorithm 3): fill a new copy from resident copies and the host.

        The host's part goes on the device's side queue, where it overlaps the kernels
        enqueued before it (the next tile's boxes arrive while this tile computes)."""
        self.directory.refresh(c, [c.box], "readin", side=True)

    def absorb(self, c: Copy) -> int:
        """Free unused copies whose box lies inside the new copy ``c`` (a box that grew).

        ``c`` was just read in, so it holds the newest value wherever the old copy did;
        the old copy's dirty records move to ``c`` and it is freed without a write-back.
        Keeps a device from holding the old and the grown box of the same data.
        """
        n = 0
        for old in list(self.copies.get(c.array, ())):
            if old is not c and old.uses == 0 and old.box.issubset(c.box):
                self.directory.transfer(old, c)
                self.free(old)
                n += 1
        return n

    def acquire(self, c: Copy) -> None:
        """increment_usage_count: the copy is in use and cannot be boxed out."""
        if c.uses == 0:
            self.unused.pop(c, None)
        c.uses += 1
        c.touched = True

    def release(self, c: Copy, keep: bool = True) -> None:
        """decrement_usage_count: at zero the copy goes to the unused list (or is freed)."""
        c.uses -= 1
        assert c.uses >= 0, f"usage count of {c} below zero"
        if c.uses == 0:
            if keep:
                self.unused[c] = None
            else:
                self.free(c)

    def evict(self, c: Copy) -> None:
        """Box-out: write back what only this copy holds, then free it."""
        self.stats.evictions += 1
        self.free(c)

    def free(self, c: Copy) -> None:
        assert c.uses == 0, f"free of {c} while in use"
        self.directory.writeback(c)
        self.directory.remove(c)
        self.unused.pop(c, None)
        self.copies[c.array].remove(c)
        self.device.free(c.alloc, c.last)
        self.stats.on_free(c.nbytes)

    def cleanup(self, serial_iter: object, idle: bool = True) -> int:
        """bb_cleanup: free unused copies flagged for the end of ``serial_iter``; with
        ``idle``, also those no tile used during the whole serial iteration.

        A box that no tile touched for a whole serial iteration has moved on with the
        serial loop (LU's row ``k`` segment on a device that does not own row ``k``);
        keeping it until memory runs short only inflates the resident set. Freeing is
        always safe: what only it holds is written back first.
        """
        doomed = [c for c in self.unused
                  if c.cleanup_iter == serial_iter or (idle and not c.touched)]
        for c in doomed:
            self.free(c)
        for cs in self.copies.values():
            for c in cs:
                c.touched = False
        return len(doomed)

    def free_all(self) -> None:
        """Free every unused copy and coalesce the pool's parked blocks: the last resort
        against fragmentation must not hand a block back at the offset that fragmented
        memory (the exact-size cache would)."""
        for c in list(self.unused):
            self.free(c)
        self.device.pool.unpark()

    def _in_use(self) -> list[Copy]:
        return [c for cs in self.copies.values() for c in cs if c.uses]

    def resident(self) -> int:
        return sum(c.nbytes for cs in self.copies.values() for c in cs)

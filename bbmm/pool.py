"""Pooled device memory: arenas carved by best fit, coalescing neighbours on free.

Box buffers come and go every serial iteration; a driver allocation per box
(clCreateBuffer plus first touch) costs 0.1-1 ms on an H200 and can dominate a
tile (seeds 000, 002). Following TensorFlow's BFC allocator (seed 001) and the
Kokkos pool (seed 003), each device owns a few large *arenas* (plain buffers) and
every box is an ``(arena, offset)`` pair:

- free blocks are indexed by size (best fit: the smallest block that is large
  enough, lowest address on ties) and by address (to coalesce a freed block with
  its free neighbours at once);
- arenas are created on demand, ``arena_size`` bytes or the request if larger
  (twice the request while that stays under the cap: :data:`PAIR_SLACK`), never
  beyond ``cap`` bytes in total nor ``max_arena`` each;
- an arena that becomes entirely free is kept while the pool is under its
  release threshold (as CUDA's stream-ordered pools keep memory), and released
  when room is needed for an arena of a different size.

A request that cannot be met within the cap raises :class:`DeviceMemoryError`;
the buffer manager turns that into box-out (eviction) and retries.

In front of the best-fit layer sits an exact-size cache (Futhark's free list, seed
000): a freed block is parked under its size and handed out again to the next
request of that size without touching the index; the first request that misses
returns every parked block to the best-fit layer (coalescing them) before it
searches, so parking never makes a request fail or fragments memory for longer
than until the next miss. Boxes of the same shape come and go every serial
iteration, so most allocations are hits.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Callable

from .diagnostic import DeviceMemoryError


PAIR_SLACK = 2
"""An arena made for a request larger than ``arena_size`` is this many times the request,
where the cap has room for it. A box at an arena's start can then move two of its rows
or planes in one rect copy (a stencil's two halos, :func:`bbmm.devices.geometry.pair_plan`):
NVIDIA's driver bounds such a copy by its origin plus whole pitches, about twice the box
(:func:`~bbmm.devices.geometry.padded_end`), and refuses it past its buffer's end. heat2d
12288^2 over four H100s keeps its 151 MB boxes in arenas of their own: at 256 MiB each a
middle process's step took 14 commands and 0.778 ms (median of four rounds), at twice
the box 10 commands and 0.661 ms; heat3d 512^3 2.007 -> 1.844 ms (`bbmm run
polybench/heat2d.c --param n=12288 --param tsteps=1020 --devices 4 --json F`, its
``loop_s``; ``results/h100x4-2026-11-27/arenas/``). The rest of such an arena holds
other boxes as usual."""


@dataclass(slots=True)
class _Arena:
    buf: Any
    size: int
    no: int                       # creation number: orders arenas in the best-fit index
    free_by_addr: dict[int, int]  # offset -> size of each free block
    free_by_end: dict[int, int]   # end offset -> offset of each free block (coalescing)
    used: dict[int, int]          # offset -> size of each allocated block (parked: neither
                                  # here nor free, only in Pool._parked)


@dataclass(frozen=True, slots=True)
class PoolStats:
    """A snapshot of a pool: bytes reserved from the driver, in use, free, largest free block."""

    cap: int
    reserved: int
    in_use: int
    free: int
    largest_free: int
    arenas: int
    allocs: int
    arena_allocs: int

    @property
    def fragmentation(self) -> float:
        """1 - largest free block / total free (0: one free block; near 1: many small ones)."""
        return 0.0 if self.free == 0 else 1.0 - self.largest_free / self.free


class Pool:
    """Best-fit, coalescing allocator over device arenas, bounded by ``cap`` bytes."""

    def __init__(self, cap: int, new_arena: Callable[[int], Any],
                 free_arena: Callable[[Any], None], *, arena_size: int = 64 << 20,
                 max_arena: int | None = None, align: int = 256,
                 release_threshold: int | None = None, name: str = "device",
                 cache: bool = True):
        if cap <= 0:
            raise ValueError(f"pool cap must be positive, got {cap}")
        self.cap = cap
        self.name = name
        self.align = align
        self.arena_size = min(arena_size, cap)
        self.max_arena = max_arena or cap
        self.release_threshold = cap if release_threshold is None else release_threshold
        self._new_arena = new_arena
        self._free_arena = free_arena
        self._arenas: list[_Arena] = []
        self._by_buf: dict[int, _Arena] = {}
        # (size, arena number, offset) of every free block, sorted: best fit = bisect
        self._free_sorted: list[tuple[int, int, int]] = []
        self._by_no: dict[int, _Arena] = {}
        self._next_no = 0
        self.reserved = 0
        self.allocs = 0
        self.arena_allocs = 0
        # exact-size cache: size -> [(arena, offset)] of parked blocks (see the module doc)
        self.cache = cache
        self._parked: dict[int, list[tuple[_Arena, int]]] = {}

    # ---- public -----------------------------------------------------------------

    # Neither is kept as a counter: the hot path (a cache hit and its free) only moves
    # a block between ``_parked`` and its arena's ``used``; both are read rarely.
    @property
    def in_use(self) -> int:
        """Bytes of the blocks allocated now (rounded to the alignment)."""
        return sum(sum(a.used.values()) for a in self._arenas)

    @property
    def _parked_bytes(self) -> int:
        return sum(size * len(blocks) for size, blocks in self._parked.items())

    def alloc(self, nbytes: int) -> tuple[Any, int]:
        """Return ``(arena buffer, byte offset)`` of a block of at least ``nbytes`` bytes."""
        if nbytes <= 0:
            raise ValueError(f"allocation of {nbytes} bytes")
        size = -(-nbytes // self.align) * self.align
        parked = self._parked.get(size)
        if parked:  # exact-size hit: the block was freed by an earlier box of this size
            arena, off = parked.pop()
            arena.used[off] = size
            self.allocs += 1
            return arena.buf, off
        if self._parked:  # (possibly only emptied lists: unparking those costs nothing)
            self.unpark()
        hit = self._best_fit(size)
        if hit is None:
            self._grow(size, nbytes)
            hit = self._best_fit(size)
            assert hit is not None
        arena, off = hit
        self._take(arena, off, size)
        self.allocs += 1
        return arena.buf, off

    def free(self, buf: Any, offset: int) -> None:
        """Give a block back; it coalesces with free neighbours in its arena."""
        arena = self._by_buf.get(id(buf))
        # a parked block is no longer in ``used``: freeing it twice is caught here too
        size = None if arena is None or arena.buf is not buf else arena.used.pop(offset, None)
        if size is None:
            raise ValueError(f"{self.name}: free of a block not allocated here (offset {offset})")
        if self.cache and self.reserved <= self.release_threshold:
            # park it: safe, because any request that cannot be served from the parked
            # blocks of its size unparks them all before it looks for room
            parked = self._parked.get(size)
            if parked is None:
                self._parked[size] = [(arena, offset)]
            else:
                parked.append((arena, offset))
            return
        self._coalesce(arena, offset, size)

    def unpark(self) -> None:
        """Return every parked block to the best-fit layer, coalescing each."""
        parked, self._parked = self._parked, {}
        for size, blocks in parked.items():
            for arena, off in blocks:
                self._coalesce(arena, off, size)

    def _coalesce(self, arena: _Arena, offset: int, size: int) -> None:
        no = arena.no
        # coalesce with the free block that starts where this one ends, and the one
        # that ends where this one starts (both found in O(1) through the two maps)
        end = offset + size
        nsize = arena.free_by_addr.pop(end, None)
        if nsize is not None:
            del arena.free_by_end[end + nsize]
            self._unindex(nsize, no, end)
            size += nsize
        poff = arena.free_by_end.pop(offset, None)
        if poff is not None:
            psize = arena.free_by_addr.pop(poff)
            self._unindex(psize, no, poff)
            offset, size = poff, psize + size
        arena.free_by_addr[offset] = size
        arena.free_by_end[offset + size] = offset
        bisect.insort(self._free_sorted, (size, no, offset))
        if size == arena.size and self.reserved > self.release_threshold:
            self._release(arena)

    def can_fit(self, nbytes: int) -> bool:
        """Whether ``alloc(nbytes)`` would succeed now without raising."""
        size = -(-nbytes // self.align) * self.align
        if self._parked.get(size):
            return True
        self.unpark()
        if self._best_fit(size, peek=True) is not None:
            return True
        empty = sum(a.size for a in self._arenas if not a.used)
        return self.reserved - empty + max(size, min(self.arena_size, size)) <= self.cap \
            and size <= self.max_arena

    def trim(self) -> int:
        """Release every entirely free arena; returns the bytes given back."""
        self.unpark()
        freed = 0
        for a in [a for a in self._arenas if not a.used]:
            freed += a.size
            self._release(a)
        return freed

    def stats(self) -> PoolStats:
        """The pool's state, parked blocks counted as free (they are unparked first)."""
        self.unpark()
        largest = self._free_sorted[-1][0] if self._free_sorted else 0
        return PoolStats(self.cap, self.reserved, self.in_use, self.reserved - self.in_use,
                         largest, len(self._arenas), self.allocs, self.arena_allocs)

    def close(self) -> None:
        """Release every arena, live blocks included (the pool is empty afterwards)."""
        self.unpark()
        for a in list(self._arenas):
            self._release(a, force=True)

    # ---- internals --------------------------------------------------------------

    def _best_fit(self, size: int, peek: bool = False) -> tuple[_Arena, int] | None:
        i = bisect.bisect_left(self._free_sorted, (size, -1, -1))
        if i == len(self._free_sorted):
            return None
        _, no, off = self._free_sorted[i]
        return self._by_no[no], off

    def _take(self, arena: _Arena, off: int, size: int) -> None:
        bsize = arena.free_by_addr.pop(off)
        no = arena.no
        self._unindex(bsize, no, off)
        end = off + bsize
        if bsize > size:  # split: the tail stays free
            arena.free_by_addr[off + size] = bsize - size
            arena.free_by_end[end] = off + size
            bisect.insort(self._free_sorted, (bsize - size, no, off + size))
        else:
            del arena.free_by_end[end]
        arena.used[off] = size

    def _unindex(self, size: int, no: int, off: int) -> None:
        i = bisect.bisect_left(self._free_sorted, (size, no, off))
        assert self._free_sorted[i] == (size, no, off)
        del self._free_sorted[i]

    def _grow(self, size: int, asked: int) -> None:
        # an arena of arena_size bytes, or the request if larger, but no larger than the
        # driver allows for one buffer (size itself is checked against that just below);
        # twice the request where that is room to spare under the cap (PAIR_SLACK)
        want = min(max(self.arena_size, size), self.max_arena)
        if want < PAIR_SLACK * size and self.reserved + PAIR_SLACK * size <= self.cap:
            want = min(PAIR_SLACK * size, self.max_arena)
        if size > self.max_arena or size > self.cap:
            raise DeviceMemoryError(self.name, asked, self.in_use, self.cap,
                                    "one block (larger than the device allows)")
        if self.reserved + want > self.cap:
            self.trim()  # empty arenas of the wrong size make way for the new one
            want = min(want, self.cap - self.reserved)
            if want < size:
                raise DeviceMemoryError(self.name, asked, self.in_use, self.cap)
        buf = self._new_arena(want)  # may raise (driver out of memory): nothing changed yet
        no = self._next_no
        self._next_no += 1
        arena = _Arena(buf, want, no, {0: want}, {want: 0}, {})
        self._arenas.append(arena)
        self._by_buf[id(buf)] = arena
        self._by_no[no] = arena
        bisect.insort(self._free_sorted, (want, no, 0))
        self.reserved += want
        self.arena_allocs += 1

    def _release(self, arena: _Arena, force: bool = False) -> None:
        if arena.used and not force:
            return
        no = arena.no
        del self._by_no[no]
        for off, size in arena.free_by_addr.items():
            self._unindex(size, no, off)
        self._arenas.remove(arena)
        del self._by_buf[id(arena.buf)]
        self.reserved -= arena.size
        self._free_arena(arena.buf)

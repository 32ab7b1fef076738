"""A communicator over shared memory: one process per device on one machine.

One Python thread cannot drive several GPUs at their pace: every OpenCL enqueue costs
the host 11-28 us, the driver serialises calls from threads, and the runtime's own
bookkeeping adds tens of microseconds per tile (``docs/performance.md``). Processes do
not share those limits: each drives its own devices with its own context and queues.
They run the program exactly as MPI ranks do (:mod:`bbmm.distributed`), and this module
is the transport between them: a file mapped by every process (in ``/dev/shm`` where
there is one) holding

- a header: an abort flag and one barrier counter per rank;
- a mailbox per ordered pair of ranks: a count of chunks written, a count of chunks
  read, the length of the chunk in flight, the room's generation, and a first room for
  one chunk (:data:`CHUNK` bytes). A sender fills the room when it is empty and bumps
  the written count; the receiver copies the chunk out and bumps the read count.

A message longer than its mailbox's room first makes the room larger, while the mailbox is
empty: the sender maps a new file of the next power of two bytes (at most
:data:`ROOM_MAX`) named after the segment, the pair and the room's new generation, and
the receiver maps it when it meets that generation, then removes its name. A message
then moves as one chunk, packed by the sender straight into the room and unpacked by the
receiver straight out of it. A message longer than :data:`ROOM_MAX`, or one that finds
the mailbox full, or whose room cannot grow (shared memory full), goes through a buffer
on each side, as a sequence of chunks; an exchange (every rank sends to some and
receives from others at once) moves whichever chunk can move, so no pair of ranks waits
for the other. Waits poll: with a core per process they yield the core between
looks (``sched_yield``); with more processes than cores they back off to sleeps of up
to :data:`MAX_SLEEP_S`, leaving the cores to the ranks with work.

Each process may also keep its host arrays in files of its own next to the segment
(:meth:`ShmComm.share_array`), which every other process maps and reads
(:meth:`ShmComm.open_peers`; writable only so that its driver can page-lock them). A
message of at least :data:`DIRECT_MIN` bytes then stays where it is: its mailbox carries only a mark and a checksum of its boxes, the receiver
copies it out of the sender's arrays into its own, and the sender waits until it has:
at once, or, where it defers takes (:attr:`ShmComm.defer_takes`), before it next writes
those regions. A receiver that lends (:attr:`ShmComm.lend`) does not copy it at once
either: its devices load the message's regions straight from the sender's arrays (their
pages page-locked in its own context too) and copy them into its own arrays behind the
launches that follow; it copies with the processor only what no device loaded, while
it waits for later messages, at the latest by the end of its next swap. A fifth word of
each mailbox counts the messages its receiver is done with.

Ordering of a chunk's bytes before its count relies on the processor keeping stores
in order (x86-64's total store order); :func:`supported` says so, and the launcher
(:mod:`bbmm.procs`) refuses other processors.
"""
from __future__ import annotations

import glob
import mmap
import os
import pickle
import platform
import sys
import tempfile
import time
from typing import Any, Callable, Mapping, Protocol

import numpy as np

from .copier import Copier, Copy
from .diagnostic import BBMMError

CHUNK = 1 << 20
"""Bytes of a mailbox's first room (a Floyd-Warshall row of 16384 floats is 64 KiB)."""
ROOM_MAX = 64 << 20
"""Bytes a mailbox's room grows to at most. heat3d 813^3's halo planes (2.6 MB) then move
as one chunk each, as the 512^3 ones (1 MiB) do; the final gather of whole arrays goes in
chunks of this size."""
SPIN_S = 2e-3
"""Seconds a wait polls without sleeping before it backs off (more processes than cores)."""
DIRECT_MIN = 256 << 10
"""Bytes of a message from which the receiver copies it straight out of the sender's host
arrays where it maps them (:meth:`ShmComm.share_array`): one copy instead of two (into the
mailbox and out of it), at the price of the sender keeping the region as it is until the
receiver is done with it. Smaller messages (Floyd's and LU's rows, heat2d's halos) go
through the mailbox, where a sender never waits for its receivers."""
_DIRECT = -1  # a mailbox's length word: the message is in the sender's host arrays
LENT_PAGES = 64
"""Slices of one other rank's arrays a rank keeps page-locked for its loads
(:meth:`ShmComm._lent_array`) before it lets go of those no loan holds: a stencil loads
the same few halos every step."""
COPY_THREADS = 3
"""Threads, besides its own, with which a process packs and unpacks large messages
(:mod:`bbmm.copier`): four processes on a 64-core 4 x H100 host use 16 cores."""
MAX_SLEEP_S = 1e-3
LIVENESS_S = 0.25
"""Seconds between checks, while waiting, that the other processes are still alive."""
_HDR = 8   # int64 words before the mailboxes: [abort code, spare..., barrier counters]
_BOX = 5   # int64 words of a mailbox's header: written, read, length, room generation,
# and the messages left in the sender's arrays that the receiver is done with


class Outgoing(Protocol):
    """A message :meth:`ShmComm.swap` sends: its length, and how to write it."""

    nbytes: int

    def copies_into(self, out: np.ndarray) -> list[Copy]:
        """The copies that write the message into ``out`` (``nbytes`` bytes, uint8)."""


class Incoming(Protocol):
    """A message :meth:`ShmComm.swap` receives: its length, and where it goes."""

    nbytes: int

    def copies_from(self, buf: np.ndarray) -> list[Copy]:
        """The copies that take the message from ``buf`` (``nbytes`` bytes, uint8; only
        valid until they are done).

        A message of boxes of host arrays also has ``copies_from_arrays(arrays)``: the
        copies that take it from the same boxes of ``arrays`` (the sender's host arrays,
        by name), for a message the sender leaves in them (:meth:`ShmComm.swap`)."""


def _meets(items: Any, name: str, box: Any) -> bool:
    """Whether a message's ``(array, box)`` items meet ``box`` of array ``name``."""
    return any(a == name and b.overlaps(box) for a, b in items)


class _Loan:
    """A message left in its sender's arrays that this rank's devices load from
    (:attr:`ShmComm.lend`): its sender, the message, the swap that received it, and the
    positions of its items a device copies into this rank's arrays (:meth:`ShmComm.
    written_back`), which its repayment need not copy."""

    __slots__ = ("src", "msg", "swap", "back", "loads")

    def __init__(self, src: int, msg: Any, swap: int):
        self.src, self.msg, self.swap = src, msg, swap
        self.back: set[int] = set()
        self.loads: list[tuple[Any, Any]] = []
        """The loads from it: (event, device)."""

    def all_back(self) -> bool:
        """Every item is copied into this rank's arrays by the device that loaded it."""
        return len(self.back) == len(self.msg.items)


class _Bytes:
    """Raw bytes as a message, either way."""

    __slots__ = ("buf", "nbytes")

    def __init__(self, buf: np.ndarray):
        self.buf, self.nbytes = buf, buf.size

    def copies_into(self, out: np.ndarray) -> list[Copy]:
        return [(out, self.buf)]

    def copies_from(self, buf: np.ndarray) -> list[Copy]:
        return [(self.buf, buf)]


class Staging:
    """Byte buffers kept from one swap to the next, one per (direction, rank).

    A fresh buffer per message of a megabyte or so lets the C library give its pages
    back when it is freed and fault them in again at the next: a middle process of four
    swapping halos of 512x512 floats spent 0.58 ms packing its two, an end process 0.09
    ms packing its one (``bbmm run polybench/heat3d.c --param n=512 --devices 4
    --profile F`` on 4 x H100, the exchange's parts)."""

    __slots__ = ("bufs",)

    def __init__(self) -> None:
        self.bufs: dict[tuple[str, int], np.ndarray] = {}

    def get(self, key: tuple[str, int], n: int) -> np.ndarray:
        """``n`` bytes of the buffer kept for ``key``, grown when too small."""
        buf = self.bufs.get(key)
        if buf is None or buf.size < n:
            buf = self.bufs[key] = np.empty(n, np.uint8)
        return buf[:n]

    def clear(self) -> None:
        self.bufs.clear()


class PeerLost(BBMMError):
    """Another process of the run aborted or died."""


def supported() -> bool:
    """Whether this processor keeps stores in order (the mailboxes rely on it)."""
    return platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86")


def segment_size(size: int, chunk: int = CHUNK) -> int:
    """Bytes of the shared file for ``size`` processes."""
    boxes = size * (size - 1)
    return 8 * (_HDR + size) + boxes * (8 * _BOX + chunk)


MEMORY = "/dev/shm"
"""The folder whose files live in memory, where there is one."""


def memory_folder() -> str | None:
    """:data:`MEMORY` where it exists and this process may write in it, else None."""
    return MEMORY if os.path.isdir(MEMORY) and os.access(MEMORY, os.W_OK) else None


def in_memory(path: str) -> bool:
    """Whether ``path`` lies in :data:`MEMORY` (memory, not a disk)."""
    return os.path.dirname(os.path.abspath(path)) == MEMORY


def create(size: int, chunk: int = CHUNK) -> str:
    """A new shared file for ``size`` processes, zeroed; returns its path."""
    folder = memory_folder()
    fd, path = tempfile.mkstemp(prefix="bbmm-", suffix=".shm", dir=folder)
    try:
        os.ftruncate(fd, segment_size(size, chunk))
    finally:
        os.close(fd)
    return path


def _new_mapping(path: str, nbytes: int) -> mmap.mmap | None:
    """A new file ``path`` of ``nbytes`` bytes, its pages reserved (a write past what a
    full tmpfs can give would be a SIGBUS), mapped; None where that fails (the file is
    then gone)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        return None
    try:
        if hasattr(os, "posix_fallocate"):
            os.posix_fallocate(fd, 0, nbytes)
        else:
            os.ftruncate(fd, nbytes)
        return mmap.mmap(fd, nbytes)
    except OSError:
        os.unlink(path)
        return None
    finally:
        os.close(fd)


def _map_file(path: str, write: bool = True) -> mmap.mmap:
    """The whole of the existing file ``path``, mapped (read-only unless ``write``)."""
    fd = os.open(path, os.O_RDWR if write else os.O_RDONLY)
    try:
        return mmap.mmap(fd, os.fstat(fd).st_size,
                         access=mmap.ACCESS_WRITE if write else mmap.ACCESS_READ)
    finally:
        os.close(fd)


def remove(path: str) -> None:
    """Remove the shared file ``path`` and any room of its mailboxes or shared host array
    left behind (by a process that stopped before the others mapped it)."""
    for p in [path, *glob.glob(glob.escape(path) + ".*")]:
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


class ShmComm:
    """The :class:`~bbmm.messages.Comm` of ``size`` processes sharing the file ``path``.

    :arg alive: called while waiting (every :data:`LIVENESS_S`); returns False when a
        process of the run has died (the launcher's check of its children, or a
        child's check of its parent).
    """

    def __init__(self, path: str, rank: int, size: int, *, chunk: int = CHUNK,
                 room_max: int = ROOM_MAX, alive: Callable[[], bool] | None = None,
                 copy_threads: int | None = None, copy_min: int | None = None):
        self.path, self.rank, self.size, self.chunk = path, rank, size, chunk
        self.room_max = max(chunk, room_max)
        self.direct_min: int | None = DIRECT_MIN
        """Bytes of a message from which it goes straight from the sender's host arrays
        to the receiver's (None: never; :attr:`bbmm.config.RuntimeConfig.direct`)."""
        self._mine: dict[str, tuple[str, tuple[int, ...], str, Any]] = {}
        """This rank's shared host arrays: name -> (file, shape, dtype, mapping)."""
        self._peer: dict[int, dict[str, np.ndarray]] = {}
        """The other ranks' shared host arrays mapped here (read-only views), by rank and
        name."""
        self._peer_rw: dict[int, dict[str, np.ndarray]] = {}
        """The same arrays, writable: only for page-locking them (:meth:`_lent_array`)."""
        self._direct_to: dict[int, frozenset[str]] = {}
        """Per rank, the names of this rank's arrays it maps: what it can copy directly."""
        self.direct_sent = self.direct_received = 0
        """Messages left in this rank's host arrays for their receiver, and taken from
        another rank's."""
        self.defer_takes = False
        """A swap returns without waiting for the receivers of the messages it left in
        this rank's host arrays (:meth:`untaken`); the caller waits (:meth:`settle_sends`)
        before anything writes their regions."""
        self._untaken: list[tuple[int, int, Any]] = []
        """Messages left in this rank's arrays that their receiver may still read:
        (receiver, the mailbox's count of such messages done with that says this one is,
        the message)."""
        self._direct_count: dict[int, int] = {}
        """Messages left in this rank's arrays, per receiver."""
        self.lend = False
        """A message left in its sender's arrays is not copied at once: it becomes a
        loan (:meth:`loaned`), from which this rank's devices load its regions straight
        and copy them into this rank's arrays (:meth:`written_back`); the rest is copied
        later (:meth:`repay`) where the wait for other messages leaves time, at the
        latest by the end of the next swap. Needs :attr:`wait_loads` and
        :attr:`loads_done`."""
        self.wait_loads: Callable[[str, Any], None] | None = None
        """Waits until the loads queued from a region of this rank's host array are
        done (:attr:`lend`)."""
        self.loads_done: Callable[[str, Any], bool] | None = None
        """Whether those loads are done."""
        self.idle_work: Callable[[], bool] | None = None
        """Work a swap does while it waits for messages, once its own are sent: returns
        whether there was any (the devices' copies back of lent regions,
        :meth:`bbmm.coherence.Directory.flush_writebacks`)."""
        self.pin: Callable[[np.ndarray], np.ndarray] | None = None
        """Page-locks host memory for this rank's devices (a loan's pages)."""
        self._loans: list[_Loan] = []
        self.lent_loads = 0
        """Loads this rank's devices took straight from another rank's arrays."""
        self._lent: dict[int, dict[tuple[str, int, int], tuple]] = {}
        """Per sender, by array and first and last slice along its first axis: the slices
        this rank's devices load from, their origin, and the page-locked buffer over
        their pages (:meth:`_lent_array`)."""
        self._swaps = 0
        with open(path, "r+b") as f:
            self._map = mmap.mmap(f.fileno(), segment_size(size, chunk))
        nwords = _HDR + size
        self._words = np.ndarray((nwords,), np.int64, buffer=self._map)
        self._bar = self._words[_HDR:]
        self._boxes: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        off = 8 * nwords
        for src in range(size):
            for dst in range(size):
                if src == dst:
                    continue
                hdr = np.ndarray((_BOX,), np.int64, buffer=self._map, offset=off)
                data = np.ndarray((chunk,), np.uint8, buffer=self._map, offset=off + 8 * _BOX)
                self._boxes[(src, dst)] = (hdr, data)
                off += 8 * _BOX + chunk
        self._rooms: dict[tuple[int, int], tuple[int, np.ndarray, Any]] = {}
        """Per mailbox whose room has grown: the generation of the room mapped here, the
        room, its mapping (a mailbox in none still has its first room, in the segment)."""
        self._alive = alive
        self._bufs = Staging()
        self.exits = True
        """:meth:`abort` ends this process (the launcher's rank 0 sets False: it returns, to
        stop its children first)."""
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 1)
        self.max_sleep = 0.0 if size <= cores else MAX_SLEEP_S
        if copy_threads is None:
            copy_threads = min(COPY_THREADS, cores // size - 1)
        self.copier = Copier(copy_threads) if copy_min is None else Copier(
            copy_threads, min_bytes=copy_min, piece=max(1, copy_min // 2))
        """Packs and unpacks the messages of :meth:`swap`: on this thread and up to
        ``copy_threads`` more (default: :data:`COPY_THREADS` where each process has that
        many cores more than one, else fewer)."""

    # ---- waiting ---------------------------------------------------------------------

    def _waiter(self) -> Callable[[], None]:
        """A function to call each time a poll found nothing to do."""
        t0 = time.perf_counter()
        state = {"delay": 0.0, "next": t0 + LIVENESS_S}

        def idle() -> None:
            if self._words[0]:
                raise PeerLost(f"rank {self.rank}: another process of the run stopped "
                               f"(status {int(self._words[0])})")
            now = time.perf_counter()
            if now > state["next"]:
                state["next"] = now + LIVENESS_S
                if self._alive is not None and not self._alive():
                    raise PeerLost(f"rank {self.rank}: another process of the run died")
            if self.max_sleep and now - t0 > SPIN_S:
                time.sleep(state["delay"])
                state["delay"] = min(self.max_sleep, 2 * state["delay"] or 2e-5)
            else:
                os.sched_yield() if hasattr(os, "sched_yield") else time.sleep(0)
        return idle

    # ---- host arrays in shared memory --------------------------------------------------

    def share_array(self, name: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray | None:
        """A host array of this rank in shared memory, which the other ranks map
        at :meth:`open_peers` so that they copy large messages straight out of it; None
        where shared memory has no room for it (the caller allocates it otherwise)."""
        dt = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        if nbytes == 0 or self.direct_min is None or not in_memory(self.path):
            return None  # (a file on disk would be written back as the run goes)
        path = f"{self.path}.a{self.rank}-{len(self._mine)}"
        m = _new_mapping(path, nbytes)
        if m is None:
            return None
        self._mine[name] = (path, tuple(shape), dt.str, m)
        return np.ndarray(shape, dt, buffer=m)

    @property
    def shared_arrays(self) -> int:
        """How many of this rank's host arrays are in shared memory."""
        return len(self._mine)

    def open_peers(self) -> None:
        """Map every other rank's shared host arrays (collective: every rank calls it once
        its arrays are made), learn which of this rank's arrays each other rank mapped,
        then remove the arrays' names (every rank that could map them has)."""
        mine = {n: (p, shape, dt) for n, (p, shape, dt, _) in self._mine.items()}
        every = self.allgather(mine)
        mapped: dict[int, frozenset[str]] = {}
        for src, arrays in enumerate(every):
            if src == self.rank:
                continue
            got: dict[str, np.ndarray] = {}
            rw: dict[str, np.ndarray] = {}
            for name, (path, shape, dt) in arrays.items():
                try:
                    m = _map_file(path)  # writable: a driver page-locks only such memory
                except (OSError, ValueError):
                    continue
                rw[name] = np.ndarray(shape, np.dtype(dt), buffer=m)
                got[name] = rw[name].view()
                got[name].flags.writeable = False
            self._peer[src] = got
            self._peer_rw[src] = rw
            mapped[src] = frozenset(got)
        views = self.allgather(mapped)
        self._direct_to = {dst: views[dst].get(self.rank, frozenset())
                           for dst in range(self.size) if dst != self.rank}
        self.barrier()
        for path, _, _, _ in self._mine.values():
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    # ---- rooms -----------------------------------------------------------------------

    def _room_path(self, src: int, dst: int, gen: int) -> str:
        return f"{self.path}.{src}-{dst}.{gen}"

    def _room(self, src: int, dst: int) -> np.ndarray:
        """The room of mailbox ``(src, dst)`` as its header names it, mapped here on
        first sight (the receiver then removes its name: both sides have it mapped)."""
        hdr, data = self._boxes[(src, dst)]
        gen = int(hdr[3])
        have = self._rooms.get((src, dst))
        if gen == 0:
            return data
        if have is not None and have[0] == gen:
            return have[1]
        path = self._room_path(src, dst, gen)
        m = _map_file(path)
        os.unlink(path)
        self._drop_room((src, dst))
        room = np.ndarray((len(m),), np.uint8, buffer=m)
        self._rooms[(src, dst)] = (gen, room, m)
        return room

    def _send_room(self, dst: int) -> np.ndarray:
        """The room of this rank's mailbox to ``dst`` as it is now."""
        have = self._rooms.get((self.rank, dst))
        return self._boxes[(self.rank, dst)][1] if have is None else have[1]

    def _grow(self, dst: int, n: int) -> np.ndarray:
        """The room of this rank's mailbox to ``dst``, made to hold ``n`` bytes where
        :attr:`room_max` allows and shared memory has room (the mailbox is empty)."""
        key = (self.rank, dst)
        hdr = self._boxes[key][0]
        room = self._send_room(dst)
        if n <= room.size or room.size >= self.room_max:
            return room
        size = min(self.room_max, 1 << (n - 1).bit_length())
        gen = int(hdr[3]) + 1
        m = _new_mapping(self._room_path(self.rank, dst, gen), size)
        if m is None:
            return room
        self._drop_room(key)
        new = np.ndarray((size,), np.uint8, buffer=m)
        self._rooms[key] = (gen, new, m)
        hdr[3] = gen  # before the written count that announces the first chunk in it
        return new

    def _drop_room(self, key: tuple[int, int]) -> None:
        old = self._rooms.pop(key, None)
        if old is not None:
            try:
                old[2].close()
            except BufferError:  # a view still refers to it: it goes with the process
                pass

    # ---- point to point --------------------------------------------------------------

    def swap(self, sends: Mapping[int, Outgoing], recvs: Mapping[int, Incoming],
             direct: bool = True) -> None:
        """Send each ``sends[dst]`` and receive each ``recvs[src]``, all at once (a message
        may be empty).

        Every send is packed before any receive is unpacked. A message that fits one
        chunk is packed straight into its mailbox when that is free at the start, and
        unpacked straight out of it: one copy on each side. A longer one, or one whose
        mailbox is still full, goes through a buffer kept for the next swap
        (:class:`Staging`). The sends are packed together, and the receives found
        waiting in one look unpacked together, by :attr:`copier`'s threads where they
        are large.

        With ``direct``, a message of boxes of host arrays (one with ``names``, the
        arrays it is of, and ``key``, a checksum of its boxes; its receiver's with
        ``copies_from_arrays`` and the same ``key``: both sides mean the same boxes) of at least
        :attr:`direct_min` bytes, whose arrays its receiver maps, is not packed: the
        mailbox only says it is there, the receiver copies it out of this rank's arrays,
        and this call returns once it has; with :attr:`defer_takes` it returns at once,
        and the next swap, or the caller before it writes those boxes
        (:meth:`untaken`), waits for it. The caller passes False where copies it queued
        earlier may still land in those boxes."""
        me = self.rank
        boxes = self._boxes
        self._swaps += 1
        if self._untaken:
            self._drop_finished()
            # a receive may land where a message still waits for its receiver
            for msg in recvs.values():
                for a, b in getattr(msg, "items", ()):
                    if self.untaken(a, b):
                        self.settle_sends(a, b)
        staged: dict[int, np.ndarray] = {}
        copies: list = []
        packed = []
        direct_min = self.direct_min if direct else None
        taken: dict[int, int] = {}  # direct sends: the read count that says it was taken
        for dst, msg in sends.items():
            hdr, data = boxes[(me, dst)]
            n = msg.nbytes
            if (direct_min is not None and n >= direct_min and hdr[0] == hdr[1]
                    and getattr(msg, "names", None) is not None
                    and msg.names <= self._direct_to.get(dst, frozenset())):
                self._send_room(dst)[:8].view(np.int64)[0] = msg.key
                hdr[2] = _DIRECT
                count = self._direct_count[dst] = self._direct_count.get(dst, 0) + 1
                hdr[0] += 1
                if self.defer_takes:
                    self._untaken.append((dst, count, msg))
                else:
                    taken[dst] = count
                self.direct_sent += 1
                continue
            # the room the receiver reads (its header's generation), never the first
            # one once the room grew: the receiver may empty the mailbox between the look
            # that would grow the room and the one that packs into it
            data = self._send_room(dst)
            if n > data.size and hdr[0] == hdr[1]:
                data = self._grow(dst, n)
            if n <= data.size and hdr[0] == hdr[1]:
                copies += msg.copies_into(data[:n])
                packed.append((hdr, n))
            else:
                buf = self._bufs.get(("send", dst), n)
                copies += msg.copies_into(buf)
                staged[dst] = buf
        self.copier.copy(copies)
        for hdr, n in packed:
            hdr[2] = n
            hdr[0] += 1
        sent = dict.fromkeys(staged, 0)
        got = dict.fromkeys(recvs, 0)
        idle = None
        while sent or got or taken:
            moved = False
            for dst in list(taken):
                if boxes[(me, dst)][0][4] >= taken[dst]:
                    del taken[dst]
                    moved = True
            for dst in list(sent):
                hdr, data = boxes[(me, dst)]
                if hdr[0] != hdr[1]:
                    continue  # the receiver has not taken the previous chunk
                buf = staged[dst]
                off = sent[dst]
                data = self._grow(dst, buf.size) if off == 0 else self._send_room(dst)
                k = min(data.size, buf.size - off)  # 0 only for an empty message: one empty chunk
                data[:k] = buf[off:off + k]
                hdr[2] = k
                hdr[0] += 1
                moved = True
                if off + k >= buf.size:
                    del sent[dst]
                else:
                    sent[dst] = off + k
            whole = []  # messages waiting whole in their rooms: unpacked together
            for src in list(got):
                hdr, data = boxes[(src, me)]
                if hdr[0] == hdr[1]:
                    continue  # nothing written yet
                k = int(hdr[2])
                off = got[src]
                msg = recvs[src]
                n = msg.nbytes
                if k == _DIRECT:  # in the sender's arrays: copied from there
                    peer = getattr(msg, "copies_from_arrays", None)
                    if off or peer is None:
                        raise BBMMError(f"rank {me}: rank {src} sent a message in its host "
                                        f"arrays where bytes were expected")
                    room = self._room(src, me) if hdr[3] else data
                    if int(room[:8].view(np.int64)[0]) != msg.key:
                        raise BBMMError(f"rank {me}: rank {src} left a message of other "
                                        f"boxes in its host arrays than this rank expects")
                    self.direct_received += 1
                    if self.lend:
                        self._loans.append(_Loan(src, msg, self._swaps))
                        hdr[1] += 1  # the mailbox is free; the arrays stay lent
                        del got[src]
                        moved = True
                        continue
                    whole.append((src, hdr, peer(self._peer[src])))
                    continue
                if hdr[3]:
                    data = self._room(src, me)
                if off + k > n:
                    raise BBMMError(f"rank {me}: message from rank {src} longer than the "
                                    f"{n} bytes expected")
                if self._loans:
                    self._repay_under(msg)  # an older value, lent, must not win
                if off == 0 and k == n:
                    whole.append((src, hdr, msg.copies_from(data[:k])))
                    continue
                buf = self._bufs.get(("recv", src), n)
                buf[off:off + k] = data[:k]
                if off + k >= n:
                    self.copier.copy(msg.copies_from(buf))
                hdr[1] += 1
                moved = True
                if off + k >= n:
                    del got[src]
                else:
                    got[src] = off + k
            if whole:
                self.copier.copy([c for _, _, cs in whole for c in cs])
                for src, hdr, _ in whole:
                    if hdr[2] == _DIRECT:
                        hdr[4] += 1  # done with the sender's arrays
                    hdr[1] += 1
                    del got[src]
                moved = True
            if not moved:
                # first the work given (the devices' copies back of loans, which spare
                # their repayment a copy), then repayments: time the wait would lose
                if self.idle_work is not None and self.idle_work():
                    continue
                if self._loans and self._repay_one():
                    continue
                if idle is None:
                    idle = self._waiter()
                idle()
        # loans of earlier swaps are repaid by now: a sender may wait for one before it
        # writes the region again. One a device copies back is left to a later look
        # (here or while a swap waits) until that copy is done: waiting for it here would
        # wait for the launches queued before it
        if self._loans and self.idle_work is not None:
            self.idle_work()  # copies back not given yet: they spare the loans a copy
        while self._loans and self._loans[0].swap < self._swaps:
            first = self._loans[0]
            if first.all_back() and not self._loan_done(first):
                break
            self._repay(first)

    # ---- loans: messages left in the sender's arrays, loaded from there ----------------

    def _lent_array(self, src: int, name: str, box: Any) -> tuple[np.ndarray, tuple[int, ...]]:
        """Where this rank's devices load ``box`` of rank ``src``'s array ``name`` from: the
        slices of the array along its first axis that ``box`` spans, and their origin.
        Those slices are page-locked (:attr:`pin`) the first time, and a copy names
        them, not the whole array: NVIDIA's driver takes a copy at the pinned speed only
        when the host pointer it is given lies in page-locked memory, and otherwise
        stages it (a 1 MiB plane of heat3d waited 260-340 us on an H100 before its 22 us
        copy began). Only a region's pages are page-locked, not the whole array (an H100
        process idled 42-179 ms page-locking each of heat3d 512^3's 512 MiB arrays:
        ``docs/performance.md``)."""
        lo, hi = int(box.lo[0]), int(box.hi[0])
        key = (name, lo, hi)
        got = self._lent.setdefault(src, {})
        hit = got.get(key)
        if hit is None:
            if len(got) >= LENT_PAGES:
                self._unlock(src)
            rw = self._peer_rw[src][name] if self.pin is not None else self._peer[src][name]
            view = rw[lo:hi + 1]
            origin = (lo,) + (0,) * (rw.ndim - 1)
            if self.pin is not None and view.nbytes:
                # the pages holding the slices (a driver page-locks whole pages)
                flat = rw.reshape(-1).view(np.uint8)
                page = mmap.PAGESIZE
                start = lo * (rw.nbytes // rw.shape[0])
                first = start // page * page
                last = min(flat.size, -(-(start + view.nbytes) // page) * page)
                hit = got[key] = (view, origin, self.pin(flat[first:last]))
            else:
                hit = got[key] = (view, origin, None)
        return hit[0], hit[1]

    def _unlock(self, src: int) -> None:
        """Let go of the page-locked slices of rank ``src``'s arrays that no loan of
        this rank holds (the loads from a loan are done before it goes): a program whose
        large messages move (a row per serial iteration) would otherwise lock a slice per
        message, each locked by the driver until its buffer goes."""
        held = [(a, b) for loan in self._loans if loan.src == src for a, b in loan.msg.items]
        got = self._lent[src]
        for key in list(got):
            name, lo, hi = key
            if not any(a == name and b.lo[0] <= lo and hi <= b.hi[0] for a, b in held):
                del got[key]

    def loaned(self, name: str, box: Any, load: bool = True
               ) -> tuple[np.ndarray, tuple[int, ...]] | None:
        """Where to load ``box`` of array ``name`` from where a loan covers all of it (the
        newest loan: slices of its sender's array, and their origin), else None (this
        rank's own array). A loan that covers part of it is repaid first. ``load``: a load
        takes it (counted in :attr:`lent_loads`)."""
        for loan in reversed(self._loans):
            for a, b in loan.msg.items:
                if a != name or not b.overlaps(box):
                    continue
                if box.issubset(b):
                    self.lent_loads += load
                    return self._lent_array(loan.src, name, box)
                self._repay(loan)
                return self.loaned(name, box, load)
        return None

    def _repay_under(self, msg: Any) -> None:
        """Repay the loans that meet a message about to be copied into this rank's
        arrays."""
        for a, b in getattr(msg, "items", ()):
            self.repay(a, b)

    def repay(self, name: str | None = None, box: Any = None) -> None:
        """Repay the loans (those meeting ``box`` of array ``name``, where given): their
        regions copied into this rank's arrays once the loads from them are done, and
        their senders told."""
        for loan in list(self._loans):
            if loan in self._loans and (name is None or _meets(loan.msg.items, name, box)):
                self._repay(loan)

    def _lender(self, name: str, box: Any) -> _Loan | None:
        """The newest loan with an item of array ``name`` holding all of ``box``."""
        for loan in reversed(self._loans):
            for a, b in loan.msg.items:
                if a == name and box.issubset(b):
                    return loan
        return None

    def lent_load(self, name: str, box: Any, event: Any, device: Any) -> None:
        """A device of this rank is loading ``box`` of array ``name`` from a loan
        (:meth:`loaned`): the command ``event`` (None: done already) of ``device``."""
        loan = self._lender(name, box)
        if loan is not None and event is not None:
            loan.loads.append((event, device))

    def written_back(self, name: str, box: Any) -> None:
        """A device of this rank loaded ``box`` of array ``name`` from a loan and has been
        given the copy of it into this rank's own array: the loan's item of exactly that
        box need not be copied when it is repaid, and the sender may have its array back
        once the loads from it are done (the copy back reads the device's)."""
        for loan in reversed(self._loans):
            for i, (a, b) in enumerate(loan.msg.items):
                if a == name and b == box:
                    loan.back.add(i)
                    return

    def _loan_done(self, loan: _Loan) -> bool:
        """Whether the loads from ``loan`` are done: those of a loan its devices copy back
        by their own events, else every queued copy touching its regions."""
        if loan.all_back():
            return all(dev.done(e) for e, dev in loan.loads)
        return all(self.loads_done(a, b) for a, b in loan.msg.items)

    def _repay(self, loan: _Loan) -> None:
        """Repay ``loan`` and, first, the older loans of its sender (its count of
        messages done with counts them in order): once the loads from them are done,
        copy the items no device writes back, and tell the sender."""
        while loan in self._loans:
            first = next(x for x in self._loans if x.src == loan.src)
            if first.all_back():
                for e, dev in first.loads:
                    dev.wait(e)
            else:
                for a, b in first.msg.items:
                    self.wait_loads(a, b)
            copies = first.msg.copies_from_arrays(self._peer[first.src])
            if first.back:
                copies = [c for i, c in enumerate(copies) if i not in first.back]
            self.copier.copy(copies)
            self._boxes[(first.src, self.rank)][0][4] += 1
            self._loans.remove(first)
            if first is loan:
                return

    def _repay_one(self) -> bool:
        """Repay the oldest loan of an earlier swap whose loads are done; whether one was."""
        for loan in self._loans:
            if loan.swap >= self._swaps:
                return False
            older = [x for x in self._loans if x.src == loan.src]
            if older[0] is loan and self._loan_done(loan):
                self._repay(loan)
                return True
        return False

    def untaken(self, name: str, box: Any) -> bool:
        """Whether a message left in this rank's arrays (:attr:`defer_takes`) that its
        receiver may not have taken yet covers part of ``box`` of array ``name``."""
        boxes = self._boxes
        return any(boxes[(self.rank, dst)][0][4] < count and _meets(msg.items, name, box)
                   for dst, count, msg in self._untaken)

    def _drop_finished(self) -> None:
        """Forget the messages left in this rank's arrays that their receivers are done
        with."""
        boxes = self._boxes
        self._untaken = [u for u in self._untaken if boxes[(self.rank, u[0])][0][4] < u[1]]

    def settle_sends(self, name: str | None = None, box: Any = None) -> None:
        """Wait until the receivers are done with the messages left in this rank's arrays
        (:attr:`defer_takes`) that cover part of ``box`` of array ``name`` (all of them
        where not given): before those regions are written, and before the arrays go.
        Meanwhile this rank repays its own loans: a receiver that waits for it so is
        never waited for in turn. A newer message is not waited for where it need not
        be: its receiver may repay it only after this rank's next message."""
        idle = None
        while True:
            self._drop_finished()
            if not any(name is None or _meets(msg.items, name, box)
                       for _, _, msg in self._untaken):
                return
            if self._loans:
                self._repay(self._loans[0])
                continue
            if idle is None:
                idle = self._waiter()
            idle()

    def exchange(self, sends: Mapping[int, np.ndarray], recvs: Mapping[int, int]
                 ) -> dict[int, np.ndarray]:
        """Send each ``sends[dst]`` (bytes as uint8) and receive ``recvs[src]`` bytes from
        each ``src``, all at once (a message may be empty); returns the received buffers
        (:meth:`swap` of raw bytes)."""
        out = {src: _Bytes(np.empty(n, np.uint8)) for src, n in recvs.items()}
        self.swap({dst: _Bytes(buf) for dst, buf in sends.items()}, out)
        return {src: b.buf for src, b in out.items()}

    # ---- collectives ----------------------------------------------------------------

    def barrier(self) -> None:
        bar = self._bar
        bar[self.rank] += 1
        mine = bar[self.rank]
        idle = None
        while bar.min() < mine:
            if idle is None:
                idle = self._waiter()
            idle()

    def _objects(self, obj: Any, dsts: list[int], srcs: list[int]) -> dict[int, Any]:
        """Send ``obj`` pickled to ``dsts``, receive one object from each of ``srcs``."""
        raw = np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), np.uint8)
        lengths = self.exchange({d: np.array([raw.size], np.int64).view(np.uint8)
                                 for d in dsts}, {s: 8 for s in srcs})
        sizes = {s: int(b.view(np.int64)[0]) for s, b in lengths.items()}
        bufs = self.exchange({d: raw for d in dsts}, sizes)
        return {s: pickle.loads(b.tobytes()) for s, b in bufs.items()}

    def allgather(self, obj: Any) -> list[Any]:
        others = [r for r in range(self.size) if r != self.rank]
        got = self._objects(obj, others, others)
        return [obj if r == self.rank else got[r] for r in range(self.size)]

    def gather(self, obj: Any, root: int = 0) -> list[Any] | None:
        if self.rank == root:
            others = [r for r in range(self.size) if r != root]
            got = self._objects(obj, [], others)
            return [obj if r == root else got[r] for r in range(self.size)]
        self._objects(obj, [root], [])
        return None

    def bcast(self, obj: Any, root: int = 0) -> Any:
        if self.rank == root:
            self._objects(obj, [r for r in range(self.size) if r != root], [])
            return obj
        return self._objects(None, [], [root])[root]

    def node_slot(self) -> tuple[int, int]:
        """Every process is on this machine: its rank and the number of processes split
        the machine's GPUs (:func:`bbmm.devices.opencl.node_share`)."""
        return self.rank, self.size

    def abort(self, code: int = 1) -> None:
        """Tell every process of the run to stop, then end this one."""
        self._words[0] = code or 1
        if self.exits:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)

    def stopped_by_peer(self) -> bool:
        """Whether another process asked every process to stop (it said why)."""
        return bool(self._words is not None and self._words[0])

    def close(self) -> None:
        if self._untaken and self._words is not None and not self._words[0]:
            self.settle_sends()  # no receiver is still copying out of this rank's arrays
        self._loans.clear()
        self._lent.clear()
        self._peer.clear()
        self._peer_rw.clear()
        self._words = self._bar = None  # type: ignore[assignment]
        self._boxes.clear()
        self.copier.close()
        for key in list(self._rooms):
            self._drop_room(key)
        self._bufs.clear()
        try:
            self._map.close()
        except BufferError:  # a view still refers to it: the mapping goes with the process
            pass

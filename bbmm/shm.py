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
  read, the length of the chunk in flight, and room for one chunk
  (:data:`CHUNK` bytes). A sender fills the room when it is empty and bumps the written
  count; the receiver copies the chunk out and bumps the read count.

A message is a sequence of chunks in one mailbox; an exchange (every rank sends to some
and receives from others at once) moves whichever chunk can move, so no pair of ranks
waits for the other. Waits poll: with a core per process they yield the core between
looks (``sched_yield``); with more processes than cores they back off to sleeps of up
to :data:`MAX_SLEEP_S`, leaving the cores to the ranks with work.

Ordering of a chunk's bytes before its count relies on the processor keeping stores
in order (x86-64's total store order); :func:`supported` says so, and the launcher
(:mod:`bbmm.procs`) refuses other processors.
"""
from __future__ import annotations

import mmap
import os
import pickle
import platform
import sys
import tempfile
import time
from typing import Any, Callable, Mapping

import numpy as np

from .diagnostic import BBMMError

CHUNK = 1 << 20
"""Bytes one mailbox holds at a time (a Floyd-Warshall row of 16384 floats is 64 KiB)."""
SPIN_S = 2e-3
"""Seconds a wait polls without sleeping before it backs off (more processes than cores)."""
MAX_SLEEP_S = 1e-3
LIVENESS_S = 0.25
"""Seconds between checks, while waiting, that the other processes are still alive."""
_HDR = 8   # int64 words before the mailboxes: [abort code, spare..., barrier counters]
_BOX = 4   # int64 words of a mailbox's header: written, read, length, spare


class PeerLost(BBMMError):
    """Another process of the run aborted or died."""


def supported() -> bool:
    """Whether this processor keeps stores in order (the mailboxes rely on it)."""
    return platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86")


def segment_size(size: int, chunk: int = CHUNK) -> int:
    """Bytes of the shared file for ``size`` processes."""
    boxes = size * (size - 1)
    return 8 * (_HDR + size) + boxes * (8 * _BOX + chunk)


def create(size: int, chunk: int = CHUNK) -> str:
    """A new shared file for ``size`` processes, zeroed; returns its path."""
    folder = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    fd, path = tempfile.mkstemp(prefix="bbmm-", suffix=".shm", dir=folder)
    try:
        os.ftruncate(fd, segment_size(size, chunk))
    finally:
        os.close(fd)
    return path


class ShmComm:
    """The :class:`~bbmm.distributed.Comm` of ``size`` processes sharing the file ``path``.

    :arg alive: called while waiting (every :data:`LIVENESS_S`); returns False when a
        process of the run has died (the launcher's check of its children, or a
        child's check of its parent).
    """

    def __init__(self, path: str, rank: int, size: int, *, chunk: int = CHUNK,
                 alive: Callable[[], bool] | None = None):
        self.path, self.rank, self.size, self.chunk = path, rank, size, chunk
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
        self._alive = alive
        self.exits = True
        """:meth:`abort` ends this process (the launcher's rank 0 sets False: it returns, to
        stop its children first)."""
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 1)
        self.max_sleep = 0.0 if size <= cores else MAX_SLEEP_S

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

    # ---- point to point --------------------------------------------------------------

    def exchange(self, sends: Mapping[int, np.ndarray], recvs: Mapping[int, int]
                 ) -> dict[int, np.ndarray]:
        """Send each ``sends[dst]`` (bytes as uint8) and receive ``recvs[src]`` bytes from
        each ``src``, all at once (a message may be empty); returns the received buffers."""
        out = {src: np.empty(n, np.uint8) for src, n in recvs.items()}
        sent = {dst: 0 for dst in sends}
        got = {src: 0 for src in recvs}
        idle = None
        me = self.rank
        chunk = self.chunk
        while sent or got:
            moved = False
            for dst in list(sent):
                hdr, data = self._boxes[(me, dst)]
                if hdr[0] != hdr[1]:
                    continue  # the receiver has not taken the previous chunk
                buf = sends[dst]
                off = sent[dst]
                k = min(chunk, buf.size - off)  # 0 only for an empty message: one empty chunk
                data[:k] = buf[off:off + k]
                hdr[2] = k
                hdr[0] += 1
                moved = True
                if off + k >= buf.size:
                    del sent[dst]
                else:
                    sent[dst] = off + k
            for src in list(got):
                hdr, data = self._boxes[(src, me)]
                if hdr[0] == hdr[1]:
                    continue  # nothing written yet
                k = int(hdr[2])
                off = got[src]
                buf = out[src]
                if off + k > buf.size:
                    raise BBMMError(f"rank {me}: message from rank {src} longer than the "
                                    f"{buf.size} bytes expected")
                buf[off:off + k] = data[:k]
                hdr[1] += 1
                moved = True
                if off + k >= buf.size:
                    del got[src]
                else:
                    got[src] = off + k
            if not moved:
                if idle is None:
                    idle = self._waiter()
                idle()
        return out

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
        self._words = self._bar = None  # type: ignore[assignment]
        self._boxes.clear()
        try:
            self._map.close()
        except BufferError:  # a view still refers to it: the mapping goes with the process
            pass

"""Messages between processes: what :class:`~bbmm.distributed.DistributedRuntime` needs of
a communicator (:class:`Comm`), MPI's (:class:`MPIComm`; the shared-memory one is
:class:`bbmm.shm.ShmComm`), and the messages themselves: boxes of the host arrays, packed
in C order one after the other (:func:`pack`, :class:`Boxes`), swapped all at once
(:func:`swap`).

.. autoclass:: Comm
.. autoclass:: MPIComm
.. autoclass:: Boxes
.. autofunction:: swap
"""
from __future__ import annotations

import os
import time
import zlib
from typing import Any, Mapping, Protocol, Sequence

import numpy as np

from . import settings
from .box import Box
from .coherence import HostCopy
from .shm import Staging


class Comm(Protocol):
    """What :class:`~bbmm.distributed.DistributedRuntime` needs of a communicator."""

    rank: int
    size: int

    def allgather(self, obj: Any) -> list[Any]: ...

    def exchange(self, sends: Mapping[int, np.ndarray], recvs: Mapping[int, int]
                 ) -> dict[int, np.ndarray]:
        """Send each ``sends[dst]`` (uint8) to ``dst`` and receive ``recvs[src]`` bytes from
        each ``src``, all at once; returns the received buffers."""
        ...


class MPIComm:
    """:class:`Comm` over an mpi4py communicator (default ``MPI.COMM_WORLD``): nonblocking
    point-to-point messages of raw bytes (no pickling), then one wait for all.

    Waits poll. When a machine has at least as many cores as ranks (known once
    :meth:`node_slot` ran), they poll without pause, yielding the core between tests:
    a message of the rendezvous protocol needs the library entered on both sides several
    times, and every pause adds to each of those steps (2 ranks on a 2-core machine, 3
    runs each: floyd's median 0.54 -> 0.43 ms per iteration, heat2d unchanged within the
    noise; not yet measured where it matters, on GPUs, see docs/mpi.md).
    Otherwise (more ranks than cores: the tests, a laptop) they spin for :attr:`SPIN_S`,
    then sleep between tests (20 us doubling up to 1 ms), so that waiting ranks leave the
    cores to the ranks that have work; MPI's own blocking waits would spin, which is why
    collectives first meet in such a polled barrier.
    """

    TAG = 0xBB
    SPIN_S = 2e-3
    MAX_SLEEP_S = 1e-3

    def __init__(self, comm: Any = None):
        from mpi4py import MPI

        self.SPIN_S = settings.number("BBMM_MPI_SPIN_S", self.SPIN_S, 0.0)  # not at import
        self.MPI = MPI
        self.comm = comm if comm is not None else MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.max_sleep = self.MAX_SLEEP_S
        self.staging = Staging()

    def node_slot(self) -> tuple[int, int]:
        """``(rank among the ranks of this node, their number)``: ranks sharing a node
        split its GPUs (:func:`bbmm.devices.opencl.plan_logical`)."""
        local = self.comm.Split_type(self.MPI.COMM_TYPE_SHARED)
        try:
            slot = local.Get_rank(), local.Get_size()
        finally:
            local.Free()
        if slot[1] <= (os.cpu_count() or 1):
            self.max_sleep = 0.0  # a core per rank: poll without pausing (see the class doc)
        return slot

    def wait(self, reqs: list[Any]) -> None:
        """Wait for every request, yielding the core when the wait is long."""
        test = self.MPI.Request.Testall
        if test(reqs):
            return
        t0 = time.perf_counter()
        delay = 0.0
        while not test(reqs):
            if time.perf_counter() - t0 > self.SPIN_S:
                time.sleep(delay)  # sleep(0) yields the core
                delay = min(self.max_sleep, 2 * delay or 2e-5)

    def barrier(self) -> None:
        self.wait([self.comm.Ibarrier()])

    def allgather(self, obj: Any) -> list[Any]:
        self.barrier()
        return self.comm.allgather(obj)

    def gather(self, obj: Any, root: int = 0) -> list[Any] | None:
        self.barrier()
        return self.comm.gather(obj, root=root)

    def bcast(self, obj: Any, root: int = 0) -> Any:
        self.barrier()
        return self.comm.bcast(obj, root=root)

    def abort(self, code: int = 1) -> None:
        self.comm.Abort(code)

    def swap(self, sends: Mapping[int, Any], recvs: Mapping[int, Any],
             direct: bool = True) -> None:
        """Send each ``sends[dst]`` and receive each ``recvs[src]`` (messages as
        :meth:`bbmm.shm.ShmComm.swap` takes them), all at once, through buffers kept for
        the next swap (:class:`bbmm.shm.Staging`); every send is packed before any
        receive is unpacked (``direct``: no rank reads another's memory here)."""
        out = {}
        for dst, m in sends.items():
            out[dst] = self.staging.get(("send", dst), m.nbytes)
            m.pack_into(out[dst])
        into = {src: self.staging.get(("recv", src), m.nbytes) for src, m in recvs.items()}
        reqs = [self.comm.Irecv(buf, source=src, tag=self.TAG) for src, buf in into.items()]
        reqs += [self.comm.Isend(buf, dest=dst, tag=self.TAG) for dst, buf in out.items()]
        self.wait(reqs)
        for src, m in recvs.items():
            m.unpack_from(into[src])

    def exchange(self, sends: Mapping[int, np.ndarray], recvs: Mapping[int, int]
                 ) -> dict[int, np.ndarray]:
        out = {src: np.empty(n, np.uint8) for src, n in recvs.items()}
        reqs = [self.comm.Irecv(buf, source=src, tag=self.TAG) for src, buf in out.items()]
        reqs += [self.comm.Isend(buf, dest=dst, tag=self.TAG) for dst, buf in sends.items()]
        self.wait(reqs)
        return out


def pack(host: HostCopy, items: Sequence[tuple[str, Box]]) -> np.ndarray:
    """The boxes of the host arrays, one after the other, C order, as bytes: for one box
    that is contiguous in its array (whole rows, part of one row: a halo), a view of the
    array itself, which the communicator copies out before its exchange returns."""
    if len(items) == 1:
        a, b = items[0]
        v = host.array(a)[b.slices()]
        if v.size and v.flags.c_contiguous:
            return v.reshape(-1).view(np.uint8)
    return Boxes(host, items).packed()


def unpack(host: HostCopy, items: Sequence[tuple[str, Box]], buf: np.ndarray) -> None:
    """Inverse of :func:`pack`: write the boxes into the host arrays."""
    Boxes(host, items).unpack_from(buf)


class Boxes:
    """Boxes of the host arrays as one message of a communicator's ``swap``
    (:class:`bbmm.shm.Outgoing` and :class:`~bbmm.shm.Incoming`), packed in :func:`pack`'s
    layout straight into, and unpacked straight out of, the communicator's memory. The
    views of the host arrays are taken once: a replayed stencil step swaps the same boxes
    every step (:meth:`bbmm.distributed.DistributedRuntime._message`)."""

    __slots__ = ("parts", "nbytes", "items", "_where", "_key", "_names")

    def __init__(self, host: HostCopy, items: Sequence[tuple[str, Box]]):
        parts = []
        where = []
        off = 0
        for a, b in items:
            arr = host.array(a)
            k = b.volume * arr.itemsize
            sl = b.slices()
            parts.append((arr[sl], off, off + k, arr.dtype, b.shape))
            where.append((a, sl))
            off += k
        self.parts = parts
        self.nbytes = off
        self.items = items
        """The message's ``(array, box)`` pairs, in order."""
        self._where = where
        self._key: int | None = None
        self._names: frozenset[str] | None = None

    @property
    def names(self) -> frozenset[str]:
        """The arrays the message is of (a sender may leave it in them; asked only of a
        message long enough to be left there)."""
        if self._names is None:
            self._names = frozenset(a for a, _ in self.items)
        return self._names

    @property
    def key(self) -> int:
        """A checksum of the boxes: a receiver taking the message from its sender's
        arrays checks that both sides mean the same boxes."""
        if self._key is None:
            self._key = zlib.crc32(repr([(a, b.lo, b.hi) for a, b in self.items]).encode())
        return self._key

    def copies_from_arrays(self, arrays: Mapping[str, np.ndarray]
                           ) -> list[tuple[np.ndarray, np.ndarray]]:
        """The copies that take the message from the same boxes of ``arrays`` (another
        process's host arrays, by name: :meth:`bbmm.shm.ShmComm.swap`)."""
        return [(p[0], arrays[a][sl]) for p, (a, sl) in zip(self.parts, self._where)]

    def pack_into(self, out: np.ndarray) -> None:
        for view, lo, hi, dtype, shape in self.parts:
            out[lo:hi].view(dtype).reshape(shape)[...] = view

    def copies_into(self, out: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`pack_into` as ``(dst, src)`` copies, for a :class:`bbmm.copier.Copier`."""
        return [(out[lo:hi].view(dtype).reshape(shape), view)
                for view, lo, hi, dtype, shape in self.parts]

    def copies_from(self, buf: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`unpack_from` as ``(dst, src)`` copies."""
        return [(view, buf[lo:hi].view(dtype).reshape(shape))
                for view, lo, hi, dtype, shape in self.parts]

    def packed(self) -> np.ndarray:
        """The message in a buffer of its own."""
        buf = np.empty(self.nbytes, np.uint8)
        self.pack_into(buf)
        return buf

    def unpack_from(self, buf: np.ndarray) -> None:
        for view, lo, hi, dtype, shape in self.parts:
            view[...] = buf[lo:hi].view(dtype).reshape(shape)


def swap(comm: Comm, sends: Sequence[tuple[int, Boxes]], recvs: Sequence[tuple[int, Boxes]],
         direct: bool = True) -> tuple[dict[int, int], dict[int, int]]:
    """Send the messages of ``sends`` and receive those of ``recvs`` (``(rank, message)``
    each), all at once; returns the bytes sent to and received from each rank. Every send
    is packed before any receive is unpacked. Through the communicator's ``swap`` where
    it has one (shared memory: no copy but the two into and out of it, or, with
    ``direct``, one out of the sender's host arrays for a large message; MPI: through
    buffers kept between swaps), else packed, exchanged and unpacked."""
    out, into = dict(sends), dict(recvs)
    own = getattr(comm, "swap", None)
    if own is not None:
        own(out, into, direct)
    else:
        bufs = {dst: m.packed() for dst, m in out.items()}
        got = comm.exchange(bufs, {src: m.nbytes for src, m in into.items()})
        for src, m in into.items():
            m.unpack_from(got[src])
    return {d: m.nbytes for d, m in out.items()}, {r: m.nbytes for r, m in into.items()}


def apart(sends: Sequence[tuple[int, Sequence[tuple[str, Box]]]],
          recvs: Sequence[tuple[int, Sequence[tuple[str, Box]]]]) -> bool:
    """Whether no region sent meets a region received in one swap: then a receiver may
    copy a message straight out of its sender's host arrays while the sender takes its
    own receives into them (:meth:`bbmm.shm.ShmComm.swap`). A plan's exchange sends
    what a rank holds and receives what it does not, so its regions are apart; a swap
    given regions both ways (a test's) goes through the mailbox."""
    if not sends or not recvs:
        return True
    got = [(a, b) for _, items in recvs for a, b in items]
    return not any(a == a2 and b.overlaps(b2)
                   for _, items in sends for a, b in items for a2, b2 in got)


def nbytes(host: HostCopy, items: Sequence[tuple[str, Box]]) -> int:
    return sum(b.volume * host.array(a).itemsize for a, b in items)


# vim: foldmethod=marker

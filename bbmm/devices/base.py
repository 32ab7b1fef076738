"""The device interface bbmm's runtime talks to, and the null device.

A :class:`Device` is one (logical) compute device with its own memory: a pool
(:mod:`bbmm.pool`) hands out :class:`Allocation`\\ s, rectangular copies move
boxes between host arrays and allocations or between two allocations of the same
device, and ``launch`` runs a kernel. Every box-shaped allocation stores its box
row-major (C order), so element ``x`` of box ``B`` sits at linear index
``sum((x[d]-B.lo[d]) * stride[d])``.

:func:`rect_args` is the one place where a Box becomes OpenCL rect-copy
arguments; :class:`NullDevice` keeps its memory in numpy arrays and runs kernels
as Python callables, so buffer management and coherence are unit-tested with real
data and without OpenCL.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from ..box import Box
from ..diagnostic import DeviceError
from ..pool import Pool


MEMO_SIZE = 256
"""Entries a cache of per-shape or per-region work keeps before it is cleared: a stencil
repeats a few shapes every step, while LU's shrinking corner and Floyd's moving row
give a new one every step, dead after it but kept alive in the cache and walked by each
pass of the garbage collector (with 4096 LU kept 5 such objects per step alive on dry
devices; ``docs/performance.md``)."""


@dataclass(frozen=True, slots=True)
class Allocation:
    """``nbytes`` bytes at byte ``offset`` of the plain device buffer ``buf``.

    Boxes never live in OpenCL sub-buffers: PoCL 3.0/3.1 crash on rectangular copies
    that touch a sub-buffer, so the offset is folded into each copy's origin and
    passed to kernels as an element offset instead.
    """

    buf: Any
    offset: int
    nbytes: int


def rect_args(region: Box, outer: Box, itemsize: int) -> tuple[tuple[int, int, int],
                                                            tuple[int, int, int],
                                                            tuple[int, int]]:
    """OpenCL rect-copy arguments for ``region`` inside a row-major array holding ``outer``.

    Returns ``(origin, extent, (row_pitch, slice_pitch))`` in OpenCL order: the
    fastest (last C) dimension first and in *bytes*, then rows, then slices, padded
    to three dimensions. ``region`` must lie inside ``outer`` and have at most three
    dimensions (callers split higher ones, see :func:`split_leading`).
    """
    nd = region.ndim
    if nd > 3:
        raise ValueError(f"rect copies take at most 3 dimensions, got {region}")
    if not region.issubset(outer):
        raise ValueError(f"region {region} is not inside {outer}")
    if nd == 2:  # unrolled (the common case; the general path below gives the same)
        (r0, r1), (s0, s1), (o0, o1) = region.lo, region.hi, outer.lo
        row = (outer.hi[1] - o1 + 1) * itemsize
        return (((r1 - o1) * itemsize, r0 - o0, 0), ((s1 - r1 + 1) * itemsize, s0 - r0 + 1, 1),
                (row, 0))
    shape = outer.shape
    origin = [l - o for l, o in zip(region.lo, outer.lo)][::-1]
    extent = list(region.shape)[::-1]
    origin[0] *= itemsize
    extent[0] *= itemsize
    row_pitch = shape[-1] * itemsize
    slice_pitch = row_pitch * (shape[-2] if nd >= 2 else 1)
    while len(origin) < 3:
        origin.append(0)
        extent.append(1)
    if nd == 1:
        row_pitch, slice_pitch = 0, 0
    elif nd == 2:
        slice_pitch = 0
    return ((origin[0], origin[1], origin[2]), (extent[0], extent[1], extent[2]),
            (row_pitch, slice_pitch))


def pairable(first: Box, second: Box) -> bool:
    """Whether two regions of a 2-D or 3-D array move as one rect copy
    (:func:`~bbmm.devices.geometry.pair_plan`): they have one shape and differ only in
    where they start along dimension 0, the second past the first (a stencil's two halo rows, or its two edge rows), and, in
    three dimensions, each is one plane thick."""
    nd = len(first.lo)
    return ((nd == 2 or nd == 3 and first.lo[0] == first.hi[0])
            and first.lo[1:] == second.lo[1:] and first.hi[1:] == second.hi[1:]
            and second.hi[0] - second.lo[0] == first.hi[0] - first.lo[0]
            and second.lo[0] > first.hi[0])


def split_leading(region: Box, outer: Box, itemsize: int) -> Iterator[tuple[Box, Box, int]]:
    """Split an n-D (n > 3) copy into 3-D copies: ``(region3, outer3, byte_offset)``.

    Each piece fixes the leading ``n-3`` indices; ``byte_offset`` is where that
    3-D slab of ``outer`` starts. For n <= 3 yields the copy itself at offset 0.
    """
    nd = region.ndim
    if nd <= 3:
        yield region, outer, 0
        return
    lead = nd - 3
    shape = outer.shape
    inner_elems = int(np.prod(shape[lead:]))
    strides = [int(np.prod(shape[d + 1:lead])) if d + 1 < lead else 1 for d in range(lead)]
    r3 = Box._new(region.lo[lead:], region.hi[lead:])
    o3 = Box._new(outer.lo[lead:], outer.hi[lead:])
    for idx in np.ndindex(*region.shape[:lead]):
        lin = sum((region.lo[d] + i - outer.lo[d]) * strides[d] for d, i in enumerate(idx))
        yield r3, o3, lin * inner_elems * itemsize


def complete_prefix(events: Sequence[Any], done: Callable[[Any], bool]) -> int:
    """How many of ``events``, commands of one in-order queue in the order they were
    enqueued, are complete (``done``: the queue's device's :meth:`Device.done`): such a
    queue completes its commands in order, so they are a prefix, found by bisection (a
    status query costs 0.2-1.7 us of the driver's time)."""
    lo, hi = 0, len(events)          # events[:lo] complete, events[hi:] not
    while lo < hi:
        mid = (lo + hi) // 2
        if done(events[mid]):
            lo = mid + 1
        else:
            hi = mid
    return lo


class Device(ABC):
    """One logical device: a memory pool, an in-order queue, rect copies, launches."""

    name: str
    index: int
    pool: Pool
    domain: Any = None
    """Devices of one domain (an OpenCL context) order each other's commands with events;
    None: the device completes every command before returning (nothing to order)."""
    side: bool = False
    """``write_rect(side=True)`` really runs beside the queue (:meth:`write_rect`)."""
    last: Any = None
    """The event of the last kernel this device enqueued (None: it has no events)."""
    profiling: bool = False
    """Whether this device records its commands for a timeline (:meth:`note` names them)."""

    def note(self, what: Mapping[str, Any] | None) -> None:
        """Describe the commands enqueued next (the array and box a copy moves, the tile a
        kernel runs): a profiling device keeps ``what`` with each of them, so that a
        timeline names them; others ignore it. Callers build ``what`` only where
        :attr:`profiling` is true."""

    @property
    def cap(self) -> int:
        """Bytes of box memory this device may hold (``--device-mem``)."""
        return self.pool.cap

    def alloc(self, nbytes: int) -> Allocation:
        """Carve ``nbytes`` out of the pool; raises DeviceMemoryError past the cap."""
        buf, off = self.pool.alloc(nbytes)
        return Allocation(buf, off, nbytes)

    def free(self, a: Allocation, last: Any = None) -> None:
        """Give ``a`` back; ``last`` is the event of the last command that used it (None:
        complete or none), which a side copy into the same memory waits for."""
        self.pool.free(a.buf, a.offset)

    def done(self, event: Any) -> bool:
        """Whether the command ``event`` stands for (one this device enqueued, never None)
        is complete, asked without waiting: the runtime polls its copies through this, so
        that it never handles a driver's events itself. Here: always, since this device
        completes every command before returning."""
        return True

    def wait(self, event: Any) -> None:
        """Wait on the host until the command ``event`` stands for (one this device
        enqueued, never None) is complete; here there is nothing to wait for."""

    def side_for(self, dst: Allocation, nbytes: int) -> bool:
        """Whether a read-in of ``nbytes`` into ``dst`` should run on the side queue
        (``write_rect(side=True)``); here: whenever the device has one."""
        return self.side

    @abstractmethod
    def write_rect(self, dst: Allocation, dst_box: Box, region: Box, host: np.ndarray,
                   host_origin: Sequence[int] | None = None, *, wait_for: Sequence[Any] = (),
                   blocking: bool = True, side: bool = False) -> Any:
        """Copy ``region`` (array coordinates) from ``host`` into ``dst`` (holding ``dst_box``).

        ``host`` is C-contiguous; its element 0 has array coordinates ``host_origin``
        (all zeros, the default, for a whole host array; ``box.lo`` for a staging
        buffer of one box). The copy starts after the events ``wait_for`` (of any
        device) and after everything enqueued on this device before it; with
        ``blocking=False`` the call returns at once and ``host`` must not change until
        the returned event (None: already done) completes.

        With ``side`` (where :attr:`side` is true) the copy may instead run beside the
        commands enqueued before it (a read-in overlapping the previous tile's kernel):
        it waits only for ``wait_for`` and for the last uses of ``dst``'s memory by the
        allocations freed before (:meth:`free`'s ``last``); every command enqueued after
        it still starts after it.
        """

    @abstractmethod
    def read_rect(self, src: Allocation, src_box: Box, region: Box, host: np.ndarray,
                  host_origin: Sequence[int] | None = None, *, wait_for: Sequence[Any] = (),
                  blocking: bool = True, side: bool = False) -> Any:
        """Copy ``region`` from ``src`` (holding ``src_box``) into ``host``; returns when done,
        or at once with ``blocking=False`` (``host`` holds the data once the returned event
        completes). ``wait_for`` as for :meth:`write_rect`.

        With ``side`` (where :attr:`side` is true, and not ``blocking``) the copy may run
        beside the device's next launch: it starts after every command enqueued before
        it, and every command enqueued after it but that launch starts after it (the
        flow-out rows of a tile whose other rows the next launch computes, which it
        neither reads nor writes: :meth:`bbmm.runtime.Runtime._edges`)."""

    def write_rects(self, dst: Allocation, dst_box: Box, regions: Sequence[Box],
                    host: np.ndarray, *, wait_for: Sequence[Any] = (),
                    blocking: bool = True) -> Any:
        """:meth:`write_rect` of each of ``regions`` (of a whole host array), in order, as
        fewer commands where the device can (an OpenCL device moves two
        :func:`~bbmm.devices.geometry.pairable` regions as one rect copy); returns the
        last event, which stands for all. ``wait_for`` as for :meth:`write_rect`."""
        e = None
        for i, r in enumerate(regions):
            e = self.write_rect(dst, dst_box, r, host, wait_for=wait_for if i == 0 else (),
                                blocking=blocking)
        return e

    def read_rects(self, src: Allocation, src_box: Box, regions: Sequence[Box],
                   host: np.ndarray, *, wait_for: Sequence[Any] = (),
                   blocking: bool = True, side: bool = False) -> Any:
        """:meth:`read_rect` of each of ``regions`` as :meth:`write_rects` writes them
        (``side``: as :meth:`read_rect`'s, for all of them)."""
        e = None
        for i, r in enumerate(regions):
            e = self.read_rect(src, src_box, r, host, wait_for=wait_for if i == 0 else (),
                               blocking=blocking, **({"side": True} if side else {}))
        return e

    def paired(self, a: Allocation, a_box: Box, regions: Sequence[Box],
               host: np.ndarray) -> bool:
        """Whether :meth:`write_rects` and :meth:`read_rects` move ``regions`` of
        allocation ``a`` (holding ``a_box``) as one command now: what the statistics
        count (here never: one command per region)."""
        return False

    def gate(self) -> Any:
        """A closed gate: a copy into the device given it in ``wait_for`` (and every kernel
        enqueued after that copy) waits until :meth:`open` opens it, while the host goes
        on (an OpenCL user event). None: this device cannot hold commands back.

        While a gate is closed the host may enqueue kernels behind the copy that waits
        for it, and nothing else: a copy enqueued behind it blocks the host until the gate
        opens, on NVIDIA's OpenCL and on PoCL (``scripts/bench_hostmem.py``), which the
        host, waiting there, never does."""
        return None

    def open(self, gate: Any) -> None:
        """Open ``gate`` (:meth:`gate`): the commands behind it may run."""

    def holds(self, a: Allocation, a_box: Box, regions: Sequence[Box],
              host: np.ndarray) -> bool:
        """Whether :meth:`write_rects` of ``regions`` into ``a`` is one command that may
        wait for a closed :meth:`gate` (two would be a copy behind a closed gate): one
        region, or two the device moves as one (:meth:`paired`)."""
        return len(regions) == 1 or self.paired(a, a_box, regions, host)

    @abstractmethod
    def copy_rect(self, dst: Allocation, dst_box: Box, src: Allocation, src_box: Box,
                  region: Box, itemsize: int) -> Any:
        """Device-to-device copy of ``region`` between two allocations of this device."""

    @abstractmethod
    def launch(self, kernel: Any, global_size: Sequence[int], local_size: Sequence[int] | None,
               args: Sequence[Any]) -> Any:
        """Enqueue a kernel; returns an event (or None)."""

    @abstractmethod
    def finish(self) -> None:
        """Wait until everything enqueued on this device is done."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.index}: {self.name}>"


class NullDevice(Device):
    """A device whose memory is host RAM: numpy arenas, kernels as Python callables.

    It performs every copy for real (so values can be checked) and records each
    transfer in :attr:`log` as ``(kind, region, nbytes)`` with kind ``h2d``, ``d2h``
    or ``d2d``. A kernel is any callable; it is called as ``kernel(self, *args)``
    and reads/writes boxes through :meth:`view`.
    """

    def __init__(self, index: int = 0, cap: int = 1 << 30, name: str | None = None,
                 arena_size: int = 1 << 20, align: int = 16, gates: bool = False):
        self.index = index
        self.name = name or f"null{index}"
        self.gates = gates
        """Whether :meth:`gate` gives gates: only where every kernel is a command given to
        :meth:`launch` (a tile's callback that reads and writes this device's memory
        itself runs at once, outside the queue, and would not wait for one)."""
        self.log: list[tuple[str, Box, int]] = []
        self._behind: list[Callable[[], None]] = []
        """Commands held behind a closed :meth:`gate`, in order (run by :meth:`open`)."""
        self._gate: Any = None
        self.pool = Pool(cap, self._new_arena, lambda arena: None, arena_size=arena_size,
                         align=align, name=self.name)

    @staticmethod
    def _new_arena(nbytes: int) -> np.ndarray:
        # NaN-like garbage would hide nothing: fill with a recognisable pattern so a
        # read of an element never written in shows up in value checks.
        return np.full(nbytes, 0xA5, dtype=np.uint8)

    def view(self, a: Allocation, box: Box, dtype: Any) -> np.ndarray:
        """The allocation as a numpy array of ``box.shape`` (writes go to device memory)."""
        dtype = np.dtype(dtype)
        n = box.volume * dtype.itemsize
        return a.buf[a.offset:a.offset + n].view(dtype).reshape(box.shape)

    def write_rect(self, dst, dst_box, region, host, host_origin=None, *, wait_for=(),
                   blocking=True, side=False):
        def copy() -> None:
            v = self.view(dst, dst_box, host.dtype)
            v[region.slices(dst_box.lo)] = host[region.slices(host_origin)]
        self.log.append(("h2d", region, region.volume * host.itemsize))
        return self._run(copy, wait_for, "a copy in")

    def write_rects(self, dst, dst_box, regions, host, *, wait_for=(), blocking=True):
        """One command (held whole behind a closed gate, as a paired rect copy is)."""
        gate = _closed(wait_for)
        if gate is None:
            return super().write_rects(dst, dst_box, regions, host, wait_for=wait_for,
                                       blocking=blocking)
        def copies() -> None:
            for r in regions:
                self.view(dst, dst_box, host.dtype)[r.slices(dst_box.lo)] = host[r.slices()]
        for r in regions:
            self.log.append(("h2d", r, r.volume * host.itemsize))
        return self._run(copies, wait_for, "a copy in")

    def read_rect(self, src, src_box, region, host, host_origin=None, *, wait_for=(),
                  blocking=True, side=False):
        def copy() -> None:
            v = self.view(src, src_box, host.dtype)
            host[region.slices(host_origin)] = v[region.slices(src_box.lo)]
        self.log.append(("d2h", region, region.volume * host.itemsize))
        return self._run(copy, wait_for, "a copy out")

    def copy_rect(self, dst, dst_box, src, src_box, region, itemsize):
        def copy() -> None:
            dt = np.dtype(f"V{itemsize}")
            s = self.view(src, src_box, dt)[region.slices(src_box.lo)].copy()
            self.view(dst, dst_box, dt)[region.slices(dst_box.lo)] = s
        self.log.append(("d2d", region, region.volume * itemsize))
        return self._run(copy, (), "a device copy")

    def launch(self, kernel: Callable[..., Any], global_size, local_size, args):
        self.log.append(("launch", Box((0,), (max(0, int(np.prod(global_size)) - 1),)), 0))
        return self._run(lambda: kernel(self, *args), (), None)

    def finish(self) -> None:
        if self._behind:
            raise DeviceError(f"{self.name}: the host waits for commands behind a closed "
                              "gate, which only it can open")

    # ---- gates: commands held until the host opens them, as OpenCL's user events ----

    def gate(self) -> Any:
        return _Gate() if self.gates else None

    def open(self, gate: Any) -> None:
        gate.opened = True
        behind, self._behind = self._behind, []
        for fn in behind:
            fn()

    def holds(self, a, a_box, regions, host):
        return True  # write_rects behind a closed gate holds its regions as one command

    def done(self, event: Any) -> bool:
        return not isinstance(event, _Behind) or event.gate.opened

    def wait(self, event: Any) -> None:
        if not self.done(event):
            raise DeviceError(f"{self.name}: the host waits for a command behind a closed "
                              "gate, which only it can open")

    def _run(self, fn: Callable[[], None], wait_for: Sequence[Any], copy: str | None
             ) -> Any:
        """Run command ``fn`` now, or hold it behind a closed gate (``wait_for``'s, or the
        one the commands held already wait for): a copy may wait only as the first command
        behind a gate it names (``copy``: what it is; None: a kernel, which may queue
        behind anything); any other would block the host on an OpenCL device."""
        gate = _closed(wait_for)
        if gate is None and not self._behind:
            fn()
            return None
        if copy is not None and (gate is None or self._behind):
            raise DeviceError(f"{self.name}: {copy} enqueued behind a closed gate, which "
                              "blocks the host until the gate opens")
        if gate is not None:
            self._gate = gate
        self._behind.append(fn)
        return _Behind(self._gate) if copy is not None else None


class _Gate:
    """A :meth:`NullDevice.gate`."""

    __slots__ = ("opened",)

    def __init__(self) -> None:
        self.opened = False


class _Behind:
    """The event of a command a :class:`NullDevice` holds behind a closed gate."""

    __slots__ = ("gate",)

    def __init__(self, gate: _Gate) -> None:
        self.gate = gate


def _closed(wait_for: Sequence[Any]) -> _Gate | None:
    """The closed gate that ``wait_for`` (gates and events) waits for, if any."""
    for e in wait_for or ():
        g = e if isinstance(e, _Gate) else getattr(e, "gate", None)
        if g is not None and not g.opened:
            return g
    return None


class DryDevice(NullDevice):
    """A device that keeps no data and runs nothing: the pool, the box bookkeeping, the
    transfer and launch calls all happen, the bytes and the kernels do not.

    It measures the host's own work for a program (``scripts/bench_host.py``): what a
    GPU must hide, without a GPU and without a CPU device competing for the cores. Kernels
    are looked up by ``kernel(source, name, options)`` as on an OpenCL device.

    With ``lag`` its commands complete ``lag`` commands after they are enqueued, as a GPU's
    queue trails a host that runs ahead: each copy and launch gives an event, which the
    host's checks find pending until then (or until it waits for it), so the bookkeeping
    of pending copies (:class:`bbmm.hostorder.HostOrder`) runs as on a GPU. Without it
    every command is complete when it returns and leaves no event.
    """

    def __init__(self, index: int = 0, cap: int = 1 << 40, name: str | None = None,
                 arena_size: int = 1 << 30, align: int = 256, lag: int = 0,
                 keep_log: bool = True):
        super().__init__(index, cap, name or f"dry{index}", arena_size, align, gates=True)
        if not keep_log:
            # a benchmark's device: its transfers are not kept (an OpenCL device keeps
            # none), so the objects alive in a long run are the runtime's own
            self.log = deque(maxlen=0)  # type: ignore[assignment]
        self.launches = 0
        self.lag = lag
        self._issued = 0
        """Commands enqueued (with ``lag``); the n-th one's event is ``_Lagged(n)``."""
        self._complete = 0
        """Commands complete, in order: those up to ``_issued - lag``, and any waited for."""

    def _command(self, wait_for: Sequence[Any], copy: str | None) -> Any:
        """A command enqueued: held behind a closed gate (its event then says so), else
        its event with ``lag``, else None (complete)."""
        if wait_for or self._behind:
            held = self._run(_nothing, wait_for, copy)
            if held is not None or self._behind:
                return held
        if not self.lag:
            return None
        n = self._issued = self._issued + 1
        if n - self.lag > self._complete:
            self._complete = n - self.lag
        return _Lagged(n)

    def finish(self) -> None:
        super().finish()
        self._complete = self._issued

    def done(self, event: Any) -> bool:
        if type(event) is _Lagged:
            return event.n <= self._complete
        return super().done(event)

    def wait(self, event: Any) -> None:
        if type(event) is _Lagged:
            if event.n > self._complete:
                self._complete = event.n
            return
        super().wait(event)

    @staticmethod
    def _new_arena(nbytes: int) -> object:
        return object()  # an arena is only an identity: nothing is stored

    def write_rect(self, dst, dst_box, region, host, host_origin=None, *, wait_for=(),
                   blocking=True, side=False):
        # a gate's rules are kept (a copy behind a closed gate is refused); the command
        # itself is nothing, so it leaves no event to wait for, as before it ran
        self.log.append(("h2d", region, region.volume * host.itemsize))
        return self._command(wait_for, "a copy in")

    def read_rect(self, src, src_box, region, host, host_origin=None, *, wait_for=(),
                  blocking=True, side=False):
        self.log.append(("d2h", region, region.volume * host.itemsize))
        return self._command(wait_for, "a copy out")

    def write_rects(self, dst, dst_box, regions, host, *, wait_for=(), blocking=True):
        self._pair("h2d", dst, dst_box, regions, host)
        return self._command(wait_for, "a copy in")

    def read_rects(self, src, src_box, regions, host, *, wait_for=(), blocking=True,
                   side=False):
        self._pair("d2h", src, src_box, regions, host)
        return self._command(wait_for, "a copy out")

    def paired(self, a, a_box, regions, host):
        return len(regions) == 2 and pairable(*regions)

    holds = Device.holds  # as an OpenCL device: a pair held whole only where it is paired

    def _pair(self, kind: str, a: Allocation, a_box: Box, regions: Sequence[Box],
              host: np.ndarray) -> None:
        """Log two pairable regions as one command, as an OpenCL device enqueues them
        (the first region stands for the pair: they have one shape)."""
        itemsize = host.itemsize
        if self.paired(a, a_box, regions, host):
            first = regions[0]
            self.log.append((kind, first, 2 * first.volume * itemsize))
        else:
            for r in regions:
                self.log.append((kind, r, r.volume * itemsize))

    def copy_rect(self, dst, dst_box, src, src_box, region, itemsize):
        self.log.append(("d2d", region, region.volume * itemsize))
        return self._command((), "a device copy")

    def kernel(self, source: str, name: str, options: str = "") -> str:
        return name

    def launch(self, kernel, global_size, local_size, args):
        self.launches += 1
        evt = self._command((), None)
        if evt is not None:
            self.last = evt
        return evt


def _nothing() -> None:
    """A :class:`DryDevice`'s command."""


class _Lagged:
    """The event of a :class:`DryDevice`'s ``n``-th command, with ``lag``."""

    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = n

    def __repr__(self) -> str:
        return f"_Lagged({self.n})"

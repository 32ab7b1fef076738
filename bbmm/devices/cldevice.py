"""The OpenCL device: :class:`OpenCLDevice`, a logical device with an in-order queue
and a memory pool of plain ``cl.Buffer`` arenas.

A box is an ``(arena, byte offset)`` pair and the offset is folded into each copy's origin
(and passed to kernels as an element offset). No sub-buffer is ever created: PoCL 3.0 and
3.1 crash (segfault) on a rectangular device-to-device copy whose source or destination is
a sub-buffer. A copy between two allocations of one arena is one linear copy or a small
strided-copy kernel (:data:`~bbmm.devices.geometry.COPY_KERNELS`).

With profiling on, the hot paths call their enqueue functions through instance attributes
(``self._h2d`` ...) that are recording wrappers (:mod:`bbmm.devices.commandlog`); with it
off they are pyopencl's own functions, which costs nothing.
"""
from __future__ import annotations

import logging
import re
import weakref
from typing import Any, Mapping, Sequence

import numpy as np
import pyopencl as cl

from ..box import Box
from ..diagnostic import DeviceError, DeviceMemoryError, UsageError, format_bytes, parse_bytes
from ..pool import Pool
from .base import MEMO_SIZE, Allocation, Device, complete_prefix
from .clerrors import OOM as _OOM
from .clerrors import device_error as _device_error
from .clerrors import status_name
from .commandlog import (PROFILE_LIMIT, CommandLog, read_host, recording_copy,
                         recording_fill, recording_kernel, write_host)
from .discovery import quiet_build
from .geometry import (COPY_KERNELS, check_inside, check_ndim, contiguous_run, host_box,
                       padded_end, pair_plan, pairable, rect_plan)
from .kernelargs import forget, forget_context, set_changed
from .pinned import pin, pinned_empty

__all__ = ["OpenCLDevice", "DEFAULT_ARENA", "CAP_FRACTION", "SIDE_SMALL"]

logger = logging.getLogger(__name__)

DEFAULT_ARENA = 256 << 20
"""Arena size: large enough that a serial loop allocates few, small enough to trim."""
CAP_FRACTION = 0.9
"""Default cap: this share of the device's global memory (the rest is the driver's)."""

_FREED_PRUNE = 64
_HELD_PRUNE = 64
"""Host-copy events held (:meth:`OpenCLDevice._hold`) before the completed ones go."""
SIDE_SMALL = 1 << 20
"""A read-in of at most this many bytes that must wait for the device's newest kernel
anyway runs on the device's own queue (:meth:`OpenCLDevice.side_for`)."""




class OpenCLDevice(Device):
    """A logical device: an OpenCL context, an in-order queue and a memory pool.

    :arg cap: bytes of box memory (int or ``"256MiB"``); default
        :data:`CAP_FRACTION` of the device's global memory.
    :arg arena_size: pool arena size; clamped to ``min(cap, max_mem_alloc_size)``.
    :arg profile: record every command (``queue`` must have ``PROFILING_ENABLE``), up
        to ``profile_limit`` of them; see :meth:`take_profile`.
    :arg side: run read-ins into new boxes on a second queue (:meth:`write_rect`), so
        that they overlap the kernels before them (the run's
        :attr:`~bbmm.config.RuntimeConfig.side`, on by default).
    """

    def __init__(self, context: Any, queue: Any, device: Any, *, index: int = 0,
                 cap: int | str | None = None, name: str | None = None,
                 arena_size: int = DEFAULT_ARENA, programs: dict | None = None,
                 profile: bool = False, profile_limit: int = PROFILE_LIMIT,
                 side: bool = True):
        self.context = context
        self.domain = context
        """Devices with the same domain order each other's commands by events (one context)."""
        self._context_ptr = context.int_ptr
        self.queue = queue
        self.cl_device = device
        self.index = index
        self.physical_name = device.name.strip()
        self.name = name or f"cl{index}"
        self.global_mem = int(device.global_mem_size)
        self.max_alloc = int(device.max_mem_alloc_size)
        self.compute_units = int(device.max_compute_units)
        """Work-groups that run at once, at least (``hostlib.spread`` keeps launches wider)."""
        self.max_group = int(device.max_work_group_size)
        self._group_limits: dict[int, int] = {}
        # staged kernels hide a GPU's memory latency; a CPU runs a work-item's loop fine
        self.is_gpu = bool(device.type & cl.device_type.GPU)
        cap = int(CAP_FRACTION * self.global_mem) if cap is None else parse_bytes(cap)
        if cap <= 0:
            raise UsageError(f"{self.name}: device memory cap must be positive, got {cap}")
        # Boxes are addressed as (arena, element offset), never as sub-buffers, so any
        # element-aligned offset is correct; 256 B keeps GPU loads coalesced, and CPUs
        # only need a cache line (smaller blocks waste less of a tight --device-mem).
        gpu = bool(device.type & cl.device_type.GPU)
        align = 256 if gpu else 64
        self._set_profiling(profile, profile_limit)
        self.pool = Pool(cap, self._new_arena, self._free_arena,
                         arena_size=min(arena_size, cap, self.max_alloc),
                         max_arena=self.max_alloc, align=align, name=self.name)
        # programs are per context: logical devices sharing one share their builds
        self._programs: dict[tuple[str, str], Any] = {} if programs is None else programs
        self._plans: dict[tuple, tuple] = {}
        self._pairs = True
        """Two pairable regions move as one rect copy (until the driver refuses one)."""
        self._pair_last: tuple = (None,) * 5
        """The last pair's objects and plan (:meth:`_pair_plan`)."""
        self._hboxes: dict[tuple, tuple] = {}
        self._kernels: dict[tuple[str, str, str], Any] = {}
        self._copy_kernels: dict[int, Any] | None = None
        self.side = side
        self._side_queue: Any = None
        # (buffer, first byte, end byte, event) of each freed allocation whose last use
        # may still be queued: what a side copy into that memory must wait for
        self._freed: list[tuple[int, int, int, Any]] = []
        self._prune_freed = _FREED_PRUNE
        # host copies not yet known to be complete: see _hold
        self._held: tuple[list[Any], list[Any]] = ([], [])
        self._prune_held = [_HELD_PRUNE, _HELD_PRUNE]
        # copies out on the side queue that only the next launch may run beside
        # (read_rect's side): every other command waits for them (_rejoin)
        self._beside: list[Any] = []

    @classmethod
    def create(cls, device: Any, *, index: int = 0, cap: int | str | None = None,
               name: str | None = None, arena_size: int = DEFAULT_ARENA,
               context: Any = None, programs: dict | None = None, profile: bool = False,
               profile_limit: int = PROFILE_LIMIT, side: bool = True) -> OpenCLDevice:
        """A device with a queue of its own on the ``cl.Device`` ``device``, in ``context``
        (which must include ``device``; default: a new context of its own); with
        ``profile`` the queue has ``PROFILING_ENABLE`` and the device records its commands;
        ``side``: as for the constructor."""
        label = name or f"cl{index}"
        props = cl.command_queue_properties.PROFILING_ENABLE if profile else 0
        try:
            ctx = context if context is not None else cl.Context([device])
            queue = cl.CommandQueue(ctx, device, properties=props)
        except cl.Error as e:
            raise _device_error(e, f"{label} ({device.name.strip()})",
                                "creating a context") from None
        return cls(ctx, queue, device, index=index, cap=cap, name=name, arena_size=arena_size,
                   programs=programs, profile=profile, profile_limit=profile_limit, side=side)

    # {{{ profiling

    def _set_profiling(self, on: bool, limit: int) -> None:
        """The enqueue functions the hot paths call: pyopencl's own, or recording ones."""
        if on and not self.queue.properties & cl.command_queue_properties.PROFILING_ENABLE:
            raise DeviceError(f"{self.name}: profiling needs a queue created with "
                              f"PROFILING_ENABLE")
        log = self._log = CommandLog(limit) if on else None
        if log is None:
            self._h2d, self._d2h = write_host, read_host
            self._d2d = cl.enqueue_copy
            self._enqueue_kernel = cl.enqueue_nd_range_kernel
            self._fill = cl.enqueue_fill_buffer
        else:
            self._h2d = recording_copy("h2d", log)
            self._d2h = recording_copy("d2h", log)
            self._d2d = recording_copy("d2d", log)
            self._enqueue_kernel = recording_kernel(log)
            self._fill = recording_fill(log)

    @property
    def profiling(self) -> bool:
        """Whether this device records its commands (``profile=True``)."""
        return self._log is not None

    def take_profile(self) -> dict[str, Any] | None:
        """Wait for the queue, then return the commands recorded since the last call with
        their timestamps (:meth:`CommandLog.take`) and the device's names; None when not
        profiling. Reading the events here, and not while running, keeps the run's
        timing as it is."""
        if self._log is None:
            return None
        self.finish()
        queues = {id(self.queue): "queue"}
        if self._side_queue is not None:
            queues[id(self._side_queue)] = "side queue"
        doc = self._log.take(queues)
        doc.update(name=self.name, physical=self.physical_name)
        return doc

    def note(self, what: Mapping[str, Any] | None) -> None:
        if self._log is not None:
            self._log.what = what

    # }}}

    def __repr__(self) -> str:
        return (f"<OpenCLDevice {self.index}: {self.name} on {self.physical_name}, "
                f"cap {format_bytes(self.cap)}>")

    # {{{ memory

    def _new_arena(self, nbytes: int) -> Any:
        try:
            return self._create_buffer(nbytes)
        except cl.Error as e:
            # the driver is out of memory below our cap: give back empty arenas, retry once
            if getattr(e, "code", None) in _OOM and self.pool.trim():
                try:
                    return self._create_buffer(nbytes)
                except cl.Error as e2:
                    e = e2
            if getattr(e, "code", None) in _OOM:
                raise DeviceMemoryError(
                    self.name, nbytes, self.pool.in_use, self.pool.cap,
                    f"a new arena (driver: {status_name(e.code)}, "
                    f"{format_bytes(self.pool.reserved)} reserved)") from None
            raise _device_error(e, self.name, f"allocating an arena of {format_bytes(nbytes)}") \
                from None

    def _create_buffer(self, nbytes: int) -> Any:
        buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, nbytes)
        # first touch: drivers allocate lazily, so a failure must show here (where the
        # pool can give back empty arenas and retry) and not in some later copy. NVIDIA's
        # driver allocates in the first enqueue that uses the buffer and fails *that
        # call* (7 x 35 GiB created on a 140 GiB H200: the fill of the 4th raises
        # MEM_OBJECT_ALLOCATION_FAILURE), so enqueueing the fill is enough and
        # the host need not wait for the device (5 waits cost blackscholes ~0.5 ms).
        # On the device's in-order queue: everything enqueued there later follows it.
        touch = min(nbytes, 4096)
        evt = self._fill(self.queue, buf, np.uint8(0), 0, touch)
        self._last_use(buf, 0, touch, evt)  # a side read-in there waits for it
        logger.debug("%s: new arena of %s", self.name, format_bytes(nbytes))
        return buf

    @staticmethod
    def _free_arena(buf: Any) -> None:
        # safe with copies still queued: OpenCL frees a released buffer only after
        # the commands using it have finished
        buf.release()

    def free(self, a: Allocation, last: Any = None) -> None:
        if last is not None:
            self._last_use(a.buf, a.offset, a.offset + a.nbytes, last)
        self.pool.free(a.buf, a.offset)

    def _last_use(self, buf: Any, lo: int, hi: int, event: Any) -> None:
        """Bytes ``[lo, hi)`` of ``buf`` may still be in use by ``event``'s command: a side
        copy into them waits for it (:meth:`_reuse_waits`)."""
        if self.side:
            self._freed.append((buf.int_ptr, lo, hi, event))
            if len(self._freed) > self._prune_freed:
                self._prune()

    def _prune(self) -> None:
        """Forget the freed allocations whose last use has completed."""
        self._freed = [f for f in self._freed if f[3].command_execution_status != 0]
        self._prune_freed = max(_FREED_PRUNE, 2 * len(self._freed))

    def _hold(self, event: Any, lane: int = 0) -> None:
        """Keep a host copy's event (of the device's queue, or ``lane`` 1: its side
        queue) until its copy is complete.

        pyopencl returns a ``NannyEvent`` for a copy to or from host memory, whose
        destructor waits for the copy (it guards the host array). Whoever drops the last
        reference to one while its copy is queued thus stops the host until the device
        gets there: a pending-copy record replaced, a rect copy's earlier pieces (on two
        H100s an h2d copy behind another GPU's 2.5 ms copy takes 2.5 ms to enqueue and
        drop, 11 us to enqueue and keep). Held here, an event is dropped only once its copy
        is done. Safe: bbmm's host arrays outlive the run, and every host read of a copied
        region waits on its event or a finish explicitly (the NannyEvent's wait at an
        unknowable moment was never relied on: a dropped copy's data was used only
        through those waits)."""
        held = self._held[lane]
        held.append(event)
        if len(held) > self._prune_held[lane]:
            # one queue's commands complete in order: the done ones are a prefix
            del held[:complete_prefix(held, self.done)]
            self._prune_held[lane] = max(_HELD_PRUNE, 2 * len(held))

    @staticmethod
    def done(event: Any) -> bool:
        return event.command_execution_status == 0  # 0: CL_COMPLETE

    @staticmethod
    def wait(event: Any) -> None:
        """The driver's own wait: polling the event's status instead made Floyd n=16384
        over four H200s 1.155x slower (``results/h200x4-2026-11-28/poll/``)."""
        event.wait()

    def _reuse_waits(self, a: Allocation) -> list[Any]:
        """The last uses, possibly still queued, of the freed allocations that shared
        memory with ``a``: a side copy into ``a`` must not overtake them."""
        ptr = a.buf.int_ptr
        lo, hi = a.offset, a.offset + a.nbytes
        return [f[3] for f in self._freed if f[0] == ptr and f[1] < hi and lo < f[2]]

    def side_for(self, dst: Allocation, nbytes: int) -> bool:
        """A read-in into ``dst`` runs on the side queue unless it is small and its memory
        was last used by the device's newest kernel (a freed box's memory taken again at
        once: Floyd's row k where row k - 1 was, every k). Such a copy can start only
        after that kernel whatever the queue, so the side queue adds nothing but two hops
        between queues to the device's own chain (kernel, copy, barrier, next kernel);
        on the device's queue the copy simply follows the kernel. A large copy stays on
        the side queue, where it can still run beside the copies out of that kernel's
        results (both directions of the bus at once, a box-out pipeline)."""
        if not self.side:
            return False
        last = self.last
        if nbytes > SIDE_SMALL or last is None:
            return True
        return not any(e is last for e in self._reuse_waits(dst))

    def _side(self) -> Any:
        if self._side_queue is None:
            self._side_queue = self._queue_like()
        return self._side_queue

    def _queue_like(self) -> Any:
        """Another queue on this device with the properties of its own (profiling)."""
        return cl.CommandQueue(self.context, self.cl_device, properties=self.queue.properties)

    def pinned_empty(self, shape: int | Sequence[int], dtype: Any = np.float64) -> np.ndarray:
        """A page-locked host array usable with this device (see :func:`pinned_empty`)."""
        return pinned_empty(self.context, shape, dtype, queue=self.queue)

    def pin(self, a: np.ndarray) -> np.ndarray:
        """``a`` page-locked for this device's context where the driver allows (see
        :func:`~bbmm.devices.pinned.pin`)."""
        return pin(self.context, a)

    def close(self) -> None:
        """Release every arena (live allocations included) and cached programs."""
        pending = self.__dict__.pop("_bbmm_prebuild", None)  # hostlib.prebuild's thread
        if pending is not None:
            pending.join()
        self.finish()
        forget_context(self._context_ptr)
        self.pool.close()
        self._side_queue = None
        self._freed.clear()
        self._held[0].clear()
        self._held[1].clear()
        self._beside.clear()
        self.last = None
        self._programs.clear()
        self._kernels.clear()
        self._plans.clear()
        self._hboxes.clear()
        self._copy_kernels = None

    # }}}

    # {{{ copies

    def _host_plan(self, a: Allocation, a_box: Box, region: Box, host: np.ndarray,
                   host_origin: Sequence[int] | None, what: str) -> tuple:
        """How ``region`` moves between ``host`` and allocation ``a`` (holding ``a_box``):
        ``(flat host view, byte offset in a.buf)`` for one contiguous run on both sides,
        else ``(None, rect plan)``. The geometry is cached (a stencil moves the same halo
        rows every step), with a weak reference that tells a reused ``id(host)`` apart."""
        key = (id(a.buf), a.offset, a.nbytes, a_box, region, id(host),
               None if host_origin is None else tuple(host_origin))
        hit = self._plans.get(key)
        if hit is None or hit[0]() is not host:
            # the host array's box, checked once per array (a moving row or column
            # misses the plan cache at every serial iteration: LU, Floyd)
            hkey = (id(host), key[6])
            hb = self._hboxes.get(hkey)
            if hb is None or hb[0]() is not host:
                if len(self._hboxes) >= 256:
                    self._hboxes.clear()
                hb = self._hboxes[hkey] = (weakref.ref(host),
                                           host_box(host, host_origin, region))
            else:
                check_ndim(host, region)  # (the host's own checks were made once)
            hbox = hb[1]
            item = host.itemsize
            check_inside(region, a_box, a, item, what)
            hs = contiguous_run(region, hbox)
            ds = contiguous_run(region, a_box) if hs is not None else None
            if ds is not None:
                geo: tuple = (hs, hs + region.volume, a.offset + ds * item)
            else:
                geo = (None, rect_plan(region, a_box, a.offset, hbox, 0, item))
            if len(self._plans) >= MEMO_SIZE:
                self._plans.clear()
            hit = self._plans[key] = (weakref.ref(host), geo)
        geo = hit[1]
        if geo[0] is None:
            return geo
        return host.reshape(-1)[geo[0]:geo[1]], geo[2]

    def write_rect(self, dst, dst_box, region, host, host_origin=None, *, wait_for=(),
                   blocking=True, side=False):
        if region.is_empty:
            host_box(host, host_origin, region)
            return None
        flat, plan = self._host_plan(dst, dst_box, region, host, host_origin, "destination")
        waits = self._waits(wait_for)
        queue = self.queue
        side = side and self.side and not blocking
        if not side:
            self._rejoin()
        if side:
            # the side queue is ordered with the device's queue only by events: the
            # copy waits for the last uses of its memory by boxes freed before
            queue = self._side()
            reuse = self._reuse_waits(dst)
            if reuse:
                waits = (waits or []) + reuse
        try:
            if flat is not None:
                evt = self._h2d(queue, dst.buf, flat, dst_offset=plan,
                                is_blocking=blocking, wait_for=waits)
                if not blocking:
                    self._hold(evt, side)
            else:
                for i, (ao, bo, ext, ap, bp) in enumerate(plan):
                    # the in-order queue runs the pieces one after the other: the last
                    # one's event (or blocking wait) stands for all
                    evt = self._h2d(queue, dst.buf, host, buffer_origin=ao,
                                    host_origin=bo, region=ext, buffer_pitches=ap,
                                    host_pitches=bp,
                                    is_blocking=blocking and i == len(plan) - 1,
                                    wait_for=waits if i == 0 else None)
                    if not blocking:
                        self._hold(evt, side)
            if side:
                # whatever is enqueued on the device from now on sees the copy's data;
                # what was enqueued before (the last tile's kernel) runs beside it
                cl.enqueue_barrier(self.queue, wait_for=[evt])
            return evt
        except cl.Error as e:
            raise _device_error(e, self.name, f"writing {region} to the device") from None

    def read_rect(self, src, src_box, region, host, host_origin=None, *, wait_for=(),
                  blocking=True, side=False):
        if region.is_empty:
            host_box(host, host_origin, region)
            return None
        if not host.flags.writeable:
            raise ValueError("read_rect needs a writeable host array")
        flat, plan = self._host_plan(src, src_box, region, host, host_origin, "source")
        queue, lane, waits = self._out_queue(side, blocking, self._waits(wait_for))
        try:
            if flat is not None:
                evt = self._d2h(queue, flat, src.buf, src_offset=plan,
                                is_blocking=blocking, wait_for=waits)
            else:
                for i, (ao, bo, ext, ap, bp) in enumerate(plan):
                    evt = self._d2h(queue, host, src.buf, buffer_origin=ao,
                                    host_origin=bo, region=ext, buffer_pitches=ap,
                                    host_pitches=bp,
                                    is_blocking=blocking and i == len(plan) - 1,
                                    wait_for=waits if i == 0 else None)
                    if not blocking and i < len(plan) - 1:
                        self._hold(evt, lane)
            if not blocking:
                self._hold(evt, lane)
            if lane:
                self._beside.append(evt)
            return evt
        except cl.Error as e:
            raise _device_error(e, self.name, f"reading {region} from the device") from None

    def write_rects(self, dst, dst_box, regions, host, *, wait_for=(), blocking=True):
        done, evt = self._pair_copy(True, dst, dst_box, regions, host, wait_for, blocking)
        if done:
            return evt
        return super().write_rects(dst, dst_box, regions, host, wait_for=wait_for,
                                   blocking=blocking)

    def read_rects(self, src, src_box, regions, host, *, wait_for=(), blocking=True,
                   side=False):
        done, evt = self._pair_copy(False, src, src_box, regions, host, wait_for, blocking,
                                    side)
        if done:
            return evt
        return super().read_rects(src, src_box, regions, host, wait_for=wait_for,
                                  blocking=blocking, side=side)

    def _out_queue(self, side: bool, blocking: bool, waits: list[Any] | None
                   ) -> tuple[Any, int, list[Any] | None]:
        """The queue of a copy out, its lane and what it waits for (``waits`` and more):
        the side queue (1) for one that may run beside the next launch (``side``), behind
        the device's last launch, else the device's queue (0), behind the copies out
        left beside a launch before."""
        if side and self.side and not blocking and self.last is not None:
            return self._side(), 1, [*(waits or ()), self.last]
        self._rejoin()
        return self.queue, 0, waits

    def _rejoin(self) -> None:
        """Every command enqueued from now on waits for the copies out running beside a
        launch (:meth:`read_rect`'s ``side``): one barrier, where there are any."""
        if self._beside:
            cl.enqueue_barrier(self.queue, wait_for=self._beside)
            self._beside = []

    def paired(self, a, a_box, regions, host):
        return self._pair_plan(a, a_box, regions, host, "region") is not None

    def gate(self) -> Any:
        """A user event (:meth:`~bbmm.devices.base.Device.gate`): a launch behind it took
        the host 5.7 us to enqueue and ended 26.1 us after it was set, against 23.3 us
        from enqueue to end without one, on an H200 (``python3 scripts/bench_hostmem.py
        --n 12288 --repeat 200``)."""
        return cl.UserEvent(self.context)

    def open(self, gate: Any) -> None:
        """Set the user event, and flush the queue: the commands behind it are submitted
        now, not at the host's next enqueue or wait (OpenCL promises nothing sooner)."""
        gate.set_status(cl.command_execution_status.COMPLETE)
        self.queue.flush()

    def _pair_copy(self, to_device: bool, a: Allocation, a_box: Box, regions: Sequence[Box],
                   host: np.ndarray, wait_for: Sequence[Any], blocking: bool,
                   side: bool = False) -> tuple[bool, Any]:
        """Two pairable ``regions`` as one rect copy into (``to_device``) or out of
        allocation ``a``: ``(True, event)``, or ``(False, None)`` where they do not pair
        or the driver refused them (the caller then moves them one by one)."""
        plan = self._pair_plan(a, a_box, regions, host,
                               "destination" if to_device else "source")
        if plan is None or not (to_device or host.flags.writeable):
            return False, None
        ao, bo, ext, ap, bp = plan
        queue, lane, waits = self._out_queue(side and not to_device, blocking,
                                             self._waits(wait_for))
        try:
            if to_device:
                evt = self._h2d(queue, a.buf, host, buffer_origin=ao, host_origin=bo,
                                region=ext, buffer_pitches=ap, host_pitches=bp,
                                is_blocking=blocking, wait_for=waits)
            else:
                evt = self._d2h(queue, host, a.buf, buffer_origin=ao, host_origin=bo,
                                region=ext, buffer_pitches=ap, host_pitches=bp,
                                is_blocking=blocking, wait_for=waits)
        except cl.Error as e:
            if self._refused(e, regions):
                return False, None
            way = "writing {} and {} to" if to_device else "reading {} and {} from"
            raise _device_error(e, self.name, way.format(*regions) + " the device") from None
        if not blocking:
            self._hold(evt, lane)
        if lane:
            self._beside.append(evt)
        return True, evt

    def _refused(self, e: cl.Error, regions: Sequence[Box]) -> bool:
        """Whether the driver refused a pair of regions as one rect copy as an invalid
        value (a driver's own limits on pitches): this device then moves pairs one region
        at a time from now on."""
        if e.code != cl.status_code.INVALID_VALUE:
            return False
        self._pairs = False
        logger.info("%s: the driver refused %s and %s as one rect copy (%s); pairs of "
                    "regions go one by one", self.name, regions[0], regions[1],
                    status_name(e.code))
        return True

    def _pair_plan(self, a: Allocation, a_box: Box, regions: Sequence[Box], host: np.ndarray,
                   what: str) -> tuple | None:
        """The one rect copy moving two pairable ``regions`` between a whole host array and
        allocation ``a`` (cached as :meth:`_host_plan`'s), or None."""
        if len(regions) != 2 or not self._pairs:
            return None
        last = self._pair_last
        if last[0] is regions and last[1] is a and last[2] is a_box and last[3] is host:
            # the pair just moved, asked again (Directory.replay_pair's count): the same
            # objects (a tuple of regions, a frozen allocation), unhashed
            return last[4]
        first, second = regions
        key = ("pair", id(a.buf), a.offset, a.nbytes, a_box, first, second, id(host))
        hit = self._plans.get(key)
        if hit is not None and hit[0]() is host:
            if type(regions) is tuple:
                self._pair_last = (regions, a, a_box, host, hit[1])
            return hit[1]
        plan = None
        if (isinstance(host, np.ndarray) and host.flags.c_contiguous
                and host.ndim == len(first.lo) and pairable(first, second)):
            item = host.itemsize
            hbox = host_box(host, None, first)
            for r in regions:
                check_inside(r, a_box, a, item, what)
                if not r.issubset(hbox):
                    raise ValueError(f"region {r} is not inside the host array {hbox}")
            plan = pair_plan(first, second, a_box, a.offset, hbox, 0, item)
            if padded_end(plan[0], plan[2], plan[3]) > a.buf.size:
                plan = None  # the driver would refuse it: the regions go one by one
        if len(self._plans) >= MEMO_SIZE:
            self._plans.clear()
        self._plans[key] = (weakref.ref(host), plan)
        if type(regions) is tuple:
            self._pair_last = (regions, a, a_box, host, plan)
        return plan

    def _waits(self, events: Sequence[Any]) -> list[Any] | None:
        """The events this queue can wait for; those of another context (which OpenCL
        cannot put in a wait list) are waited for here, on the host."""
        if not events:
            return None
        out = []
        for e in events:
            if e is None:
                continue
            if e.context.int_ptr == self._context_ptr:
                out.append(e)
            else:
                e.wait()
        return out or None

    def copy_rect(self, dst, dst_box, src, src_box, region, itemsize):
        if region.is_empty:
            return None
        check_inside(region, dst_box, dst, itemsize, "destination")
        check_inside(region, src_box, src, itemsize, "source")
        self._rejoin()
        try:
            ds = contiguous_run(region, dst_box)
            ss = contiguous_run(region, src_box) if ds is not None else None
            if ss is not None:
                return self._d2d(self.queue, dst.buf, src.buf,
                                 src_offset=src.offset + ss * itemsize,
                                 dst_offset=dst.offset + ds * itemsize,
                                 byte_count=region.volume * itemsize)
            plan = rect_plan(region, dst_box, dst.offset, src_box, src.offset, itemsize)
            if dst.buf.int_ptr == src.buf.int_ptr:
                return self._copy_same_buffer(dst.buf, plan)
            for ao, bo, ext, ap, bp in plan:
                evt = self._d2d(self.queue, dst.buf, src.buf, src_origin=bo,
                                dst_origin=ao, region=ext, src_pitches=bp,
                                dst_pitches=ap)
            return evt
        except cl.Error as e:
            raise _device_error(e, self.name, f"copying {region} on the device") from None

    def _copy_same_buffer(self, buf: Any, plan: list) -> Any:
        """Strided copies between two blocks of one buffer, by kernel (see module doc)."""
        if self._copy_kernels is None:
            prg = self.build(COPY_KERNELS)
            self._copy_kernels = {u: cl.Kernel(prg, f"_bbmm_copy_{u}") for u in (1, 2, 4, 8, 16)}
        evt = None
        for ao, bo, ext, ap, bp in plan:
            # linear byte offsets and pitches of both sides (a pitch of 0 is only ever
            # given where its dimension has extent 1, so any value works there)
            a_off = ao[0] + ao[1] * ap[0] + ao[2] * ap[1]
            b_off = bo[0] + bo[1] * bp[0] + bo[2] * bp[1]
            nums = (a_off, b_off, ap[0], ap[1], bp[0], bp[1], ext[0])
            unit = next(u for u in (16, 8, 4, 2, 1) if all(n % u == 0 for n in nums))
            k = self._copy_kernels[unit]
            u64 = np.uint64
            set_changed(k, (buf, u64(a_off // unit), u64(ap[0] // unit), u64(ap[1] // unit),
                             buf, u64(b_off // unit), u64(bp[0] // unit), u64(bp[1] // unit)))
            evt = cl.enqueue_nd_range_kernel(self.queue, k, (ext[0] // unit, ext[1], ext[2]),
                                             None)
            if self._log is not None:
                self._log.add("d2d", "kernel copy", ext[0] * ext[1] * ext[2], evt, self.queue)
        return evt

    # }}}

    # {{{ kernels

    def build(self, source: str, options: Sequence[str] | str = ()) -> Any:
        """Build (once per source and options) a ``cl.Program`` for this device."""
        opts = options if isinstance(options, str) else " ".join(options)
        key = (source, opts)
        prg = self._programs.get(key)
        if prg is None:
            try:
                # -w: no warnings (the generated kernels' unused values and the like are
                # no news to the user; compilers such as PoCL's clang print them on
                # stderr, and pyopencl turns a non-empty log into a CompilerWarning)
                prg = quiet_build(cl.Program(self.context, source), _quiet(opts))
            except cl.Error as e:
                code = getattr(e, "code", None)
                name = status_name(code) if isinstance(code, int) else type(e).__name__
                raise DeviceError(f"{self.name}: building an OpenCL program failed: {name}\n"
                                  f"{e}") from None
            self._programs[key] = prg
        return prg

    def kernel(self, source: str, name: str, options: Sequence[str] | str = ()) -> Any:
        """The ``cl.Kernel`` ``name`` of ``source`` built for this device (cached)."""
        opts = options if isinstance(options, str) else " ".join(options)
        key = (source, opts, name)
        k = self._kernels.get(key)
        if k is None:
            k = self._kernels[key] = cl.Kernel(self.build(source, opts), name)
        return k

    def group_limit(self, kernel: Any) -> int:
        """Work-items one group of ``kernel`` may hold here (``CL_KERNEL_WORK_GROUP_SIZE``:
        below :attr:`max_group` when the kernel needs many registers)."""
        n = self._group_limits.get(id(kernel))
        if n is None:
            try:
                n = int(kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE,
                                                   self.cl_device))
            except cl.Error:
                n = self.max_group
            self._group_limits[id(kernel)] = n  # kernels live as long as the device
        return n

    def launch(self, kernel, global_size, local_size, args):
        """Set ``args`` and enqueue ``kernel`` (built by :meth:`build` on this device).

        Scalars must be numpy scalars (``np.int64(off)``); a box is passed as its buffer
        and element offset. Only the arguments that changed since the kernel object's
        last launch are set: a tile's boxes rarely move between serial iterations.
        """
        try:
            set_changed(kernel, args)
            # the runtime's sizes are tuples of ints already (hostlib's): taken as they are
            if type(global_size) is not tuple:
                global_size = tuple(int(g) for g in global_size)
            if local_size is not None and type(local_size) is not tuple:
                local_size = tuple(int(l) for l in local_size)
            evt = self.last = self._enqueue_kernel(self.queue, kernel, global_size, local_size)
            if self._beside:
                self._rejoin()  # this launch alone runs beside the copies out before it
            return evt
        except (cl.Error, TypeError) as e:
            forget(kernel)  # what the kernel holds is now unknown
            what = f"launching {kernel.function_name} on {tuple(global_size)}"
            if kernel.context.int_ptr != self.context.int_ptr:
                what += " (the kernel was built for another device's context)"
            if isinstance(e, TypeError):  # wrong number or kind of arguments
                raise DeviceError(f"{self.name}: {what} failed: {e}") from None
            raise _device_error(e, self.name, what) from None

    def finish(self) -> None:
        try:
            if self._side_queue is not None:
                self._side_queue.finish()
            self.queue.finish()
        except cl.Error as e:
            raise _device_error(e, self.name, "waiting for the queue") from None
        self._freed.clear()
        self._held[0].clear()
        self._held[1].clear()
        self._beside.clear()

    # }}}


def _quiet(opts: str) -> str:
    """Build options with ``-w`` (OpenCL's "inhibit all warnings")."""
    return opts if re.search(r"(^|\s)-w(\s|$)", opts) else ("-w " + opts).strip()

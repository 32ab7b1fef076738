"""Profiling records of OpenCL commands: :class:`CommandLog` and the enqueue functions a
device calls, plain (:func:`write_host`, :func:`read_host`: pyopencl's own without its
dispatch) or recording each command in a log (:func:`recording_copy` ...)."""
from __future__ import annotations

import time
from typing import Any, Mapping

import numpy as np
import pyopencl as cl

__all__ = ["CommandLog", "PROFILE_LIMIT", "write_host", "read_host", "recording_copy",
           "recording_kernel", "recording_fill"]

# pyopencl's own functions behind cl.enqueue_copy for the two host directions
_enqueue_write = cl._cl._enqueue_write_buffer
_enqueue_write_rect = cl._cl._enqueue_write_buffer_rect
_enqueue_read = cl._cl._enqueue_read_buffer
_enqueue_read_rect = cl._cl._enqueue_read_buffer_rect

PROFILE_LIMIT = 200_000
"""Commands a profiling run records, over all its devices; later ones are only counted
(each record holds an OpenCL event: a long run must not hold millions)."""


class CommandLog:
    """The commands a profiling device enqueued, as ``(kind, label, bytes, event, queue,
    what)``.

    ``kind`` is ``h2d``, ``d2h``, ``d2d``, ``kernel`` or ``fill``; ``label`` is a
    ``cl.Kernel`` (named when read), a rect copy's extent ``(row bytes, rows, slices)``,
    or a string; ``queue`` is the queue it went to (a device has up to two: its own and
    the side queue of read-ins); ``what`` is the device's
    :attr:`what` when it was enqueued (the array and box of a copy, the tile of a
    kernel: :meth:`~bbmm.devices.opencl.OpenCLDevice.note`). Recording is one append; the events' timestamps
    are read only by :meth:`take`, after the queue has finished. Past ``limit`` records,
    commands are only counted (:attr:`dropped`). ``host_ns``, the host's
    ``perf_counter_ns`` just after the first record's enqueue, ties the device's clock to
    the host's (with that command's queued timestamp).
    """

    __slots__ = ("records", "limit", "dropped", "what", "host_ns")

    def __init__(self, limit: int = PROFILE_LIMIT):
        self.records: list[tuple[str, Any, int, Any, Any, Any]] = []
        self.limit = limit
        self.dropped = 0
        self.what: Any = None
        self.host_ns: int | None = None

    def add(self, kind: str, label: Any, nbytes: int, event: Any, queue: Any = None,
            noted: bool = True) -> None:
        """Record one command; ``noted``: it is the one :attr:`what` describes (a first
        touch's fill is not)."""
        records = self.records
        if len(records) < self.limit:
            if not records:
                self.host_ns = time.perf_counter_ns()
            records.append((kind, label, nbytes, event, queue, self.what if noted else None))
        else:
            self.dropped += 1

    def take(self, queues: Mapping[int, str] | None = None) -> dict[str, Any]:
        """The records with their timestamps (ns, device clock), then forget them:
        ``{"commands": [(kind, label, bytes, queued, submit, start, end, queue, what)],
        "dropped", "limit", "unreadable", "host_ns", "host_queued"}``; ``queued`` and
        ``submit`` are None where the driver does not give them, and events without start
        and end are counted as unreadable. ``queue`` is the name ``queues`` gives the
        command's queue (by ``id``; ``"queue"`` where it names none). ``host_ns`` and
        ``host_queued`` are the host's clock just after the first record's enqueue and
        that command's queued timestamp (None where unknown). Every event must be
        complete."""
        names: dict[int, str] = {}
        queues = queues or {}
        out = []
        unreadable = 0
        host_queued = None
        for i, (kind, label, nbytes, evt, queue, what) in enumerate(self.records):
            try:
                prof = evt.profile
                start, end = int(prof.start), int(prof.end)
            except cl.Error:
                unreadable += 1
                continue
            try:
                queued, submit = int(prof.queued), int(prof.submit)
            except cl.Error:
                queued = submit = None
            if i == 0:
                host_queued = queued
            out.append((kind, _label_text(label, names), nbytes, queued, submit, start, end,
                        queues.get(id(queue), "queue"), what))
        doc = {"commands": out, "dropped": self.dropped, "limit": self.limit,
               "unreadable": unreadable,
               "host_ns": self.host_ns if host_queued is not None else None,
               "host_queued": host_queued}
        self.records = []
        self.dropped = 0
        self.host_ns = None
        return doc


def _label_text(label: Any, names: dict[int, str]) -> str:
    """A record's label as text: a kernel's function name, ``rect 8192x2048`` for a rect
    copy of 2048 rows of 8192 bytes (``x D`` slices when more than one)."""
    if isinstance(label, str):
        return label
    if isinstance(label, tuple):
        w, h, d = label
        return f"rect {w}x{h}" + (f"x{d}" if d != 1 else "")
    name = names.get(id(label))
    if name is None:
        name = names[id(label)] = label.function_name
    return name


def write_host(queue: Any, buf: Any, host: Any, **kw: Any) -> Any:
    """``cl.enqueue_copy(queue, buf, host, **kw)`` for a host-to-buffer copy, without its
    dispatch on the kinds of both sides (a query of the buffer's type per call): a moving
    row copied at every serial iteration pays it on the host's critical path."""
    if "buffer_origin" in kw:
        return _enqueue_write_rect(queue, buf, host, **kw)
    return _enqueue_write(queue, buf, host, **kw)


def read_host(queue: Any, host: Any, buf: Any, **kw: Any) -> Any:
    """``cl.enqueue_copy(queue, host, buf, **kw)`` for a buffer-to-host copy (see
    :func:`write_host`)."""
    if "buffer_origin" in kw:
        return _enqueue_read_rect(queue, buf, host, **kw)
    return _enqueue_read(queue, buf, host, **kw)


def recording_copy(kind: str, log: CommandLog) -> Any:
    """``cl.enqueue_copy`` that also records the copy in ``log`` (bytes from its region,
    its byte count, or the host array it copies whole).

    A copy to or from host memory returns a ``NannyEvent``, whose destructor waits for
    the copy to complete; the log holds a plain event of the same command instead, so
    that the run drops (and waits for) its NannyEvents exactly as it does unprofiled."""
    enqueue = cl.enqueue_copy
    plain = cl.Event.from_int_ptr
    nanny = cl.NannyEvent

    def copy(queue: Any, dest: Any, src: Any, **kw: Any) -> Any:
        evt = enqueue(queue, dest, src, **kw)
        held = plain(evt.int_ptr) if isinstance(evt, nanny) else evt
        region = kw.get("region")
        if region is not None:
            log.add(kind, tuple(region), region[0] * region[1] * region[2], held, queue)
        elif "byte_count" in kw:
            log.add(kind, "linear", kw["byte_count"], held, queue)
        else:
            host = src if isinstance(src, np.ndarray) else dest
            log.add(kind, "linear", host.nbytes, held, queue)
        return evt
    return copy


def recording_kernel(log: CommandLog) -> Any:
    """``cl.enqueue_nd_range_kernel`` that also records the launch in ``log``."""
    enqueue = cl.enqueue_nd_range_kernel

    def launch(queue: Any, kernel: Any, global_size: Any, local_size: Any) -> Any:
        evt = enqueue(queue, kernel, global_size, local_size)
        log.add("kernel", kernel, 0, evt, queue)
        return evt
    return launch


def recording_fill(log: CommandLog) -> Any:
    """``cl.enqueue_fill_buffer`` that also records the fill in ``log``."""
    enqueue = cl.enqueue_fill_buffer

    def fill(queue: Any, buf: Any, pattern: Any, offset: int, size: int) -> Any:
        evt = enqueue(queue, buf, pattern, offset, size)
        log.add("fill", "fill", size, evt, queue, False)
        return evt
    return fill

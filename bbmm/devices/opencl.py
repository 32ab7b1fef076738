"""OpenCL devices: discovery, :class:`OpenCLDevice`, pinned host memory, logical devices.

.. autofunction:: discover
.. autofunction:: make_devices
.. autoclass:: OpenCLDevice
.. autofunction:: pinned_empty
.. autofunction:: rect_plan
.. autofunction:: contiguous_run
.. autofunction:: nvidia_opencl_library
.. autofunction:: register_nvidia_icd
.. autoclass:: CommandLog

The module users import OpenCL devices from; each role lives in a module of its own:
:mod:`.discovery` (platforms, devices, ICD registration, quiet builds), :mod:`.cldevice`
(the device), :mod:`.logical` (logical devices over physical ones), :mod:`.geometry`
(rect copies), :mod:`.pinned` (page-locked host memory), :mod:`.kernelargs` (the
kernel-argument cache), :mod:`.commandlog` (profiling records) and :mod:`.clerrors`
(OpenCL status codes).

Each logical device owns an in-order queue and a memory pool, even when several
share one physical device: their buffers are then really separate memory and data
moves between them through the host, exactly as between separate GPUs. All logical
devices share one context (:func:`make_devices`), so a copy on one device can wait
for an event of another without the host waiting (on NVIDIA, copies *between* two
GPUs' buffers of one context crawl; bbmm never makes them: data moves through the
host copy). Box memory comes from a :class:`~bbmm.pool.Pool` whose arenas are plain
``cl.Buffer``\\ s; a box is an ``(arena, byte offset)`` pair and the offset is
folded into each copy's origin (and passed to kernels as an element offset).
No sub-buffer is ever created: PoCL 3.0 and 3.1 crash (segfault) on a
rectangular device-to-device copy whose source or destination is a sub-buffer.

Two allocations of one arena are the *same* OpenCL buffer, and
``clEnqueueCopyBufferRect`` on one buffer is constrained (CL_INVALID_VALUE when
both pitches differ, CL_MEM_COPY_OVERLAP from bounding-box overlap tests that
misfire once offsets are folded into the origins). A copy between two
allocations of one arena is therefore either one linear copy (when the region is
contiguous on both sides) or a small strided-copy kernel.

Failing driver calls raise :class:`~bbmm.diagnostic.DeviceError` naming the
OpenCL status (``CL_MEM_OBJECT_ALLOCATION_FAILURE``); running out of memory while
creating an arena (after giving back empty arenas and trying once more) raises
:class:`~bbmm.diagnostic.DeviceMemoryError` with the quantities, which the buffer
manager answers by evicting and retrying.

With ``profile=True`` (:func:`make_devices`, ``bbmm run --profile FILE``) a device's queue
is created with ``PROFILING_ENABLE`` and each command it enqueues is kept in a
:class:`CommandLog` as ``(kind, label, bytes, event, queue, what)`` (``what``: the array
and box or the tile the runtime named with :meth:`OpenCLDevice.note`);
:meth:`OpenCLDevice.take_profile`
reads the events' timestamps once the queue has finished (:mod:`bbmm.profile` turns them
into a timeline). The hot paths call their enqueue functions through instance attributes
(``self._h2d`` ...) that are pyopencl's own functions when profiling is off, so that costs
nothing, and recording wrappers when it is on.
"""
from __future__ import annotations

from .cldevice import CAP_FRACTION, DEFAULT_ARENA, OpenCLDevice
from .clerrors import status_name
from .commandlog import PROFILE_LIMIT, CommandLog
from .discovery import (Discovery, PhysicalDevice, discover, nvidia_opencl_library,
                        quiet_build, register_nvidia_icd)
from .geometry import contiguous_run, rect_plan
from .logical import MAX_SHARERS, make_devices, node_share, plan_logical
from .pinned import is_pinned, pinned_empty

__all__ = ["PhysicalDevice", "Discovery", "discover", "OpenCLDevice", "make_devices",
           "pinned_empty", "is_pinned", "rect_plan", "contiguous_run", "nvidia_opencl_library",
           "register_nvidia_icd", "plan_logical", "node_share", "status_name", "DEFAULT_ARENA",
           "CAP_FRACTION", "CommandLog", "PROFILE_LIMIT", "MAX_SHARERS", "quiet_build"]

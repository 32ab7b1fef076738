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

Each logical device owns an in-order queue and a memory pool, even when several
share one physical device: their buffers are then really separate memory and data
moves between them through the host, exactly as between separate GPUs. All logical
devices share one context (:func:`make_devices`), so a copy on one device can wait
for an event of another without the host waiting (on NVIDIA, copies *between* two
GPUs' buffers of one context crawl; bbmm never makes them: data moves through the
host copy). Box
memory comes from a :class:`~bbmm.pool.Pool` whose arenas are plain
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

import logging
import os
import re
import subprocess
import threading
import time
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import pyopencl as cl

from .. import settings
from ..box import Box
from ..diagnostic import DeviceError, DeviceMemoryError, UsageError, format_bytes, parse_bytes
from ..pool import Pool
from .base import Allocation, Device, complete_prefix, rect_args, split_leading

# pyopencl's own functions behind cl.enqueue_copy for the two host directions
_enqueue_write = cl._cl._enqueue_write_buffer
_enqueue_write_rect = cl._cl._enqueue_write_buffer_rect
_enqueue_read = cl._cl._enqueue_read_buffer
_enqueue_read_rect = cl._cl._enqueue_read_buffer_rect

__all__ = ["PhysicalDevice", "Discovery", "discover", "OpenCLDevice", "make_devices",
           "pinned_empty", "is_pinned", "rect_plan", "contiguous_run", "nvidia_opencl_library",
           "register_nvidia_icd", "plan_logical", "status_name", "DEFAULT_ARENA",
           "CAP_FRACTION", "CommandLog", "PROFILE_LIMIT"]

logger = logging.getLogger(__name__)

DEFAULT_ARENA = 256 << 20
"""Arena size: large enough that a serial loop allocates few, small enough to trim."""
CAP_FRACTION = 0.9
"""Default cap: this share of the device's global memory (the rest is the driver's)."""
PROFILE_LIMIT = 200_000
"""Commands a profiling run records, over all its devices; later ones are only counted
(each record holds an OpenCL event: a long run must not hold millions)."""

SIDE = settings.switch("BBMM_SIDE", True)
"""Read-ins into new boxes run on a second queue of each device, beside the kernels
enqueued before them (``$BBMM_SIDE=0``: on the device's one queue)."""
TOUCH = settings.word("BBMM_TOUCH", "async", ("async", "wait", "0", "off", "no"))
"""How a new arena is first touched (:meth:`OpenCLDevice._create_buffer`): ``async`` (a
4 KiB fill enqueued on the device's queue, not waited for), ``wait`` (the fill on a queue
of its own, waited for: an allocation failure reported only by the fill's event shows at
once), ``0`` (none: for measurements only, a lazy driver's failure would show at some
later copy)."""
_FREED_PRUNE = 64
_HELD_PRUNE = 64
"""Host-copy events held (:meth:`OpenCLDevice._hold`) before the completed ones go."""
SIDE_SMALL = 1 << 20
"""A read-in of at most this many bytes that must wait for the device's newest kernel
anyway runs on the device's own queue (:meth:`OpenCLDevice.side_for`)."""

# the status codes of a driver that ran out of memory
_OOM = frozenset({cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE,
                  cl.status_code.OUT_OF_RESOURCES, cl.status_code.OUT_OF_HOST_MEMORY})


# {{{ errors

def status_name(code: int) -> str:
    """``CL_MEM_OBJECT_ALLOCATION_FAILURE`` for -4 (``CL_<code>`` when unknown)."""
    try:
        return "CL_" + cl.status_code.to_string(code)
    except Exception:  # noqa: BLE001 - unknown codes come as ValueError or KeyError
        return f"CL_{code}"


def _device_error(e: cl.Error, device: str, what: str) -> DeviceError:
    code = getattr(e, "code", None)
    name = status_name(code) if isinstance(code, int) else type(e).__name__
    return DeviceError(f"{device}: {what} failed: {name}")

# }}}


# {{{ discovery

def _type_name(t: int) -> str:
    # pyopencl's device_type.to_string(CPU) reads "ALL | CPU": name the bits ourselves
    for name in ("GPU", "CPU", "ACCELERATOR", "CUSTOM"):
        if t & getattr(cl.device_type, name, 0):
            return name
    return "OTHER"


@dataclass(frozen=True)
class PhysicalDevice:
    """One OpenCL device as the driver reports it."""

    platform_index: int
    platform: str
    """Platform name (``NVIDIA CUDA``, ``Portable Computing Language``)."""
    platform_version: str
    index: int
    """Position in its platform's device list."""
    name: str
    type: str
    """``GPU``, ``CPU``, ``ACCELERATOR`` or ``OTHER``."""
    global_mem: int
    max_alloc: int
    cl_device: Any = field(compare=False, repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {"platform_index": self.platform_index, "platform": self.platform,
                "platform_version": self.platform_version, "index": self.index,
                "name": self.name, "type": self.type, "global_mem": self.global_mem,
                "max_alloc": self.max_alloc}


@dataclass(frozen=True)
class Discovery:
    """What :func:`discover` saw and what bbmm would use."""

    devices: tuple[PhysicalDevice, ...]
    """Every device of every platform the ICD loader lists."""
    chosen: tuple[PhysicalDevice, ...]
    """The devices bbmm uses: the GPUs of one platform, or one CPU device."""
    hint: str | None = None
    """How to make an installed but unregistered NVIDIA driver visible, if relevant."""
    problems: tuple[str, ...] = ()
    """Platforms that could not be listed, and why."""


_NVIDIA_DIRS = ("/usr/lib", "/usr/lib64", "/usr/lib/x86_64-linux-gnu",
                "/usr/local/nvidia/lib64")
_NVIDIA_LIB = "libnvidia-opencl.so.1"


def nvidia_opencl_library() -> str | None:
    """Path of NVIDIA's OpenCL driver library (``libnvidia-opencl.so.1``) if installed."""
    for d in _NVIDIA_DIRS:
        p = os.path.join(d, _NVIDIA_LIB)
        if os.path.exists(p):
            return p
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True,
                             timeout=5, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if _NVIDIA_LIB in line and "=>" in line:
            return line.split("=>", 1)[1].strip()
    return None


def _nvidia_hint(lib: str) -> str:
    folder = "$HOME/.bbmm/icd"
    return (f"NVIDIA's OpenCL driver {lib} is installed but not registered with the OpenCL "
            f"ICD loader, so its GPUs are invisible; register it with: "
            f"mkdir -p {folder} && echo {lib} > {folder}/nvidia.icd && "
            f"export OCL_ICD_VENDORS={folder}")


def register_nvidia_icd(folder: str, lib: str | None = None) -> str:
    """Write ``folder/nvidia.icd`` naming NVIDIA's library and point OCL_ICD_VENDORS at it.

    Only helps when called before this process's first OpenCL call (the ICD loader
    reads its vendors once). Returns the ICD file's path.
    """
    lib = lib or nvidia_opencl_library()
    if lib is None:
        raise DeviceError(f"no {_NVIDIA_LIB} found in {', '.join(_NVIDIA_DIRS)} or ldconfig")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "nvidia.icd")
    with open(path, "w") as f:
        f.write(lib + "\n")
    os.environ["OCL_ICD_VENDORS"] = folder
    return path


def _platform_matches(spec: str | int | None, index: int, p: Any) -> bool:
    if spec is None:
        return True
    if isinstance(spec, int) or (isinstance(spec, str) and spec.isdigit()):
        return int(spec) == index
    s = spec.lower()
    return s in p.name.lower() or s in p.vendor.lower()


def discover(platform: str | int | None = None, kind: str = "auto") -> Discovery:
    """List OpenCL devices and pick the ones bbmm uses.

    :arg platform: a platform index, or a case-insensitive part of its name or vendor.
    :arg kind: ``auto`` (the GPUs, else one CPU device), ``gpu`` or ``cpu``.

    GPUs come first, from any platform; when GPUs show on several platforms the one
    with the most GPUs (then the most memory) is used, since a context may never
    span two platforms. Without GPUs, the first CPU device of the first platform
    that has one (machines may show PoCL twice, PyPI's and Debian's: one is used).
    """
    if kind not in ("auto", "gpu", "cpu"):
        raise UsageError(f"device kind must be auto, gpu or cpu, not {kind!r}")
    try:
        platforms = cl.get_platforms()
    except cl.Error:  # PLATFORM_NOT_FOUND_KHR: the ICD loader knows no platform
        platforms = []
    devices: list[PhysicalDevice] = []
    problems: list[str] = []
    for pi, p in enumerate(platforms):
        try:
            cl_devs = p.get_devices()
        except cl.Error as e:  # DEVICE_NOT_FOUND, or a broken ICD
            problems.append(f"platform {pi}: {_device_error(e, p.name.strip(), 'listing devices')}")
            continue
        for di, d in enumerate(cl_devs):
            devices.append(PhysicalDevice(pi, p.name.strip(), p.version.strip(), di,
                                          d.name.strip(), _type_name(d.type),
                                          int(d.global_mem_size), int(d.max_mem_alloc_size), d))
    usable = [d for d in devices
              if _platform_matches(platform, d.platform_index, platforms[d.platform_index])]
    gpus = [d for d in usable if d.type == "GPU"]
    cpus = [d for d in usable if d.type == "CPU"]
    chosen: list[PhysicalDevice] = []
    if gpus and kind in ("auto", "gpu"):
        by_platform: dict[int, list[PhysicalDevice]] = {}
        for d in gpus:
            by_platform.setdefault(d.platform_index, []).append(d)
        best = min(by_platform, key=lambda pi: (-len(by_platform[pi]),
                                                -sum(d.global_mem for d in by_platform[pi]), pi))
        chosen = by_platform[best]
    elif cpus and kind in ("auto", "cpu"):
        # the first CPU device whose platform can build a kernel here: PyPI's PoCL 3.0
        # (LLVM 14) lists processors newer than its LLVM (AMD Zen 5) and then fails
        # every build ("unknown target CPU 'generic'"), where Debian's PoCL works
        for d in cpus:
            why = _build_problem(d)
            if why is None:
                chosen = [d]
                break
            problems.append(f"platform {d.platform_index} ({d.platform_version}): {why}")
    hint = None
    if not any(d.type == "GPU" for d in devices):
        lib = nvidia_opencl_library()
        if lib is not None:
            hint = _nvidia_hint(lib)
        elif cpus and not chosen and kind in ("auto", "cpu"):
            hint = POCL_HINT
    return Discovery(tuple(devices), tuple(chosen), hint, tuple(problems))


POCL_HINT = ("the CPU OpenCL platform(s) asked for cannot build kernels for this processor "
             "(their compiler predates it); a newer PoCL can: on Debian or Ubuntu `apt-get "
             "install pocl-opencl-icd`, which the OpenCL ICD loader then lists beside PyPI's")

_BUILDS: dict[tuple[str, str, str], str | None] = {}
""":func:`_build_problem`'s answers, per (platform version, device name, driver version)."""


_QUIET_LOCK = threading.Lock()
_QUIET: list[Any] = [0, None]
"""Builds under way in :func:`quiet_build`, and the warning filter they installed (None
where an identical one was there before)."""


def quiet_build(program: Any, options: str = "") -> Any:
    """``program.build(options)`` without pyopencl's ``CompilerWarning``: the compiler's
    remarks on bbmm's own kernels (``#pragma unroll`` and the like) are bbmm's business,
    not the user's; a failing build still raises with its log.

    ``warnings.catch_warnings`` would restore the process-wide filters when one build ends
    while another thread's is under way (kernels build in threads,
    :func:`bbmm.hostlib.prebuild`), and a lock around the builds would serialize them:
    the first build under way installs an ignore filter for ``CompilerWarning`` and the
    last one to end removes it (not one the program had installed itself)."""
    with _QUIET_LOCK:
        if _QUIET[0] == 0:
            entry = ("ignore", None, cl.CompilerWarning, None, 0)
            had = entry in warnings.filters
            warnings.filterwarnings("ignore", category=cl.CompilerWarning)
            _QUIET[1] = None if had else entry
        _QUIET[0] += 1
    try:
        return program.build(options=options)
    finally:
        with _QUIET_LOCK:
            _QUIET[0] -= 1
            entry = _QUIET[1]
            if _QUIET[0] == 0 and entry is not None:
                _QUIET[1] = None
                try:
                    warnings.filters.remove(entry)
                except ValueError:      # the program reset the filters meanwhile
                    pass
                mutated = getattr(warnings, "_filters_mutated", None)
                if mutated is not None:
                    mutated()


def _build_problem(d: PhysicalDevice) -> str | None:
    """Why no kernel builds for ``d`` (None: a trivial one builds), asked once per process.

    Only CPU devices are asked: a build costs a PoCL compile (cached on disk by PoCL after
    the first), and it is there that a processor newer than the platform's compiler shows.
    """
    key = (d.platform_version, d.name, str(d.cl_device.driver_version))
    if key in _BUILDS:
        return _BUILDS[key]
    why = None
    try:
        ctx = cl.Context([d.cl_device])
        try:
            quiet_build(cl.Program(ctx, "__kernel void bbmm_probe(__global int *a) "
                                        "{ a[0] = 1; }"), "-w")
        except cl.Error as e:
            log = str(e)
            m = re.search(r"error: ([^\n]*)", log)
            why = "cannot build kernels" + (f" ({m.group(1).strip()})" if m else "")
    except cl.Error as e:
        why = str(_device_error(e, d.name, "creating a context"))
    _BUILDS[key] = why
    return why

# }}}


# {{{ copy planning (pure functions, unit-tested without OpenCL)

def contiguous_run(region: Box, outer: Box) -> int | None:
    """Element index in ``outer``'s row-major layout where ``region`` starts, if
    ``region``'s elements are one contiguous run there (else None).

    That is the case when ``region`` spans ``outer`` fully in every dimension after
    some dimension ``k`` and has extent 1 in every dimension before ``k``.
    """
    lo, olo, ohi = region.lo, outer.lo, outer.hi
    if len(lo) == 2:  # unrolled: a plan is made per moving row or column (LU, Floyd)
        hi = region.hi
        if lo[1] == olo[1] and hi[1] == ohi[1] or lo[0] == hi[0]:
            return (lo[0] - olo[0]) * (ohi[1] - olo[1] + 1) + lo[1] - olo[1]
        return None
    shape = outer.shape
    rs = region.shape
    nd = len(shape)
    k = nd - 1
    while k > 0 and rs[k] == shape[k]:
        k -= 1
    for d in range(k):
        if rs[d] != 1:
            return None
    start = 0
    for d in range(nd):
        start = start * shape[d] + (region.lo[d] - outer.lo[d])
    return start


Rect = tuple[int, int, int]


def rect_plan(region: Box, a_box: Box, a_offset: int, b_box: Box, b_offset: int,
              itemsize: int) -> list[tuple[Rect, Rect, Rect, tuple[int, int], tuple[int, int]]]:
    """The rect copies moving ``region`` between two row-major arrays: ``a`` holding
    ``a_box`` at byte ``a_offset`` of its buffer, ``b`` holding ``b_box`` at ``b_offset``.

    Returns ``(a_origin, b_origin, extent, a_pitches, b_pitches)`` per copy in OpenCL
    order (bytes first): one copy for up to 3 dimensions, one per leading index
    beyond (:func:`~bbmm.devices.base.split_leading`). Byte offsets are folded into
    the first origin component (no sub-buffers).
    """
    out = []
    for (r3, a3, aoff), (_, b3, boff) in zip(split_leading(region, a_box, itemsize),
                                              split_leading(region, b_box, itemsize)):
        ao, ext, ap = rect_args(r3, a3, itemsize)
        bo, _, bp = rect_args(r3, b3, itemsize)
        out.append(((ao[0] + a_offset + aoff, ao[1], ao[2]),
                    (bo[0] + b_offset + boff, bo[1], bo[2]), ext, ap, bp))
    return out

# }}}


# {{{ pinned host memory

class _PinnedHolder:
    """Owns a mapped ALLOC_HOST_PTR buffer; numpy arrays over it keep it alive as their base."""

    def __init__(self, buf: Any, mapped: np.ndarray):
        self.buf = buf
        self.mapped = mapped  # its base is pyopencl's MemoryMap (unmapped when collected)
        self.__array_interface__ = dict(mapped.__array_interface__)


def pinned_empty(context: Any, shape: int | Sequence[int], dtype: Any = np.float64,
                 queue: Any = None) -> np.ndarray:
    """An uninitialised C-contiguous host array in page-locked memory where possible.

    Allocates a ``cl.Buffer`` with ``ALLOC_HOST_PTR`` and maps it; every view of
    the result keeps the buffer alive (the array's base owns buffer and mapping).
    Host-device copies from such memory run at full bus speed (55 GB/s against
    7-14 GB/s from pageable numpy memory on an H200). ``context`` may also be an
    :class:`OpenCLDevice`. Falls back to ``np.empty`` if the driver refuses.
    """
    if isinstance(context, OpenCLDevice):
        queue = queue or context.queue
        context = context.context
    shape = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
    dtype = np.dtype(dtype)
    nbytes = max(1, int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
    try:
        q = queue or cl.CommandQueue(context)
        buf = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, nbytes)
        mapped, _ = cl.enqueue_map_buffer(q, buf, cl.map_flags.READ | cl.map_flags.WRITE, 0,
                                          shape, dtype, is_blocking=True)
    except cl.Error as e:
        logger.debug("pinned allocation of %s failed (%s); using pageable memory",
                     format_bytes(nbytes), e)
        return np.empty(shape, dtype)
    return np.asarray(_PinnedHolder(buf, mapped))


def is_pinned(a: np.ndarray) -> bool:
    """Whether ``a`` (or the array it views) came from :func:`pinned_empty`."""
    base = getattr(a, "base", None)
    while isinstance(base, np.ndarray):  # views of views: numpy may stop short of the owner
        base = base.base
    return isinstance(base, _PinnedHolder)

# }}}


# {{{ the device

_COPY_KERNELS = """
#define BBMM_COPY(T, NAME) \\
__kernel void NAME(__global T *dst, ulong dst_off, ulong dst_row, ulong dst_slice, \\
                   __global const T *src, ulong src_off, ulong src_row, ulong src_slice) \\
{ \\
    ulong x = get_global_id(0), y = get_global_id(1), z = get_global_id(2); \\
    dst[dst_off + z * dst_slice + y * dst_row + x] = \\
        src[src_off + z * src_slice + y * src_row + x]; \\
}
BBMM_COPY(uchar, _bbmm_copy_1)
BBMM_COPY(ushort, _bbmm_copy_2)
BBMM_COPY(uint, _bbmm_copy_4)
BBMM_COPY(ulong, _bbmm_copy_8)
BBMM_COPY(uint4, _bbmm_copy_16)
"""


def _host_box(host: np.ndarray, host_origin: Sequence[int] | None, region: Box) -> Box:
    if not isinstance(host, np.ndarray) or not host.flags.c_contiguous:
        raise ValueError("host arrays for rect copies must be C-contiguous numpy arrays")
    _check_ndim(host, region)
    lo = tuple(int(o) for o in host_origin) if host_origin is not None else (0,) * host.ndim
    return Box._new(lo, tuple(l + s - 1 for l, s in zip(lo, host.shape)))


def _check_ndim(host: np.ndarray, region: Box) -> None:
    if host.ndim != len(region.lo):
        raise ValueError(f"host array has {host.ndim} dimensions, region {region} {region.ndim}")


def _check_inside(region: Box, box: Box, a: Allocation, itemsize: int, what: str) -> None:
    if not region.issubset(box):
        raise ValueError(f"region {region} is not inside the {what} box {box}")
    if box.volume * itemsize > a.nbytes:
        raise ValueError(f"{what} box {box} of {box.volume * itemsize} bytes does not fit "
                         f"its allocation of {a.nbytes} bytes")


_PACK = {np.int32: b"i", np.uint32: b"I", np.int64: b"l", np.uint64: b"L",
         np.float32: b"f", np.float64: b"d", np.int16: b"h", np.uint16: b"H",
         np.int8: b"b", np.uint8: b"B"}
"""Scalar kernel argument types and their pack characters for pyopencl's
``Kernel._set_arg_buf_pack_multi`` (what pyopencl's own generated invokers call: 0.1 us
for several arguments, where ``set_arg`` of one numpy scalar takes about 7 us). Scalars
are compared by value when deciding whether to set an argument again, buffers by
identity."""

_KERNEL_ARGS: dict[int, tuple[Any, list[Any]]] = {}
"""id(kernel) -> (kernel, the arguments it holds): what each ``cl.Kernel`` was last given,
so that a launch sets only what changed. Kept per kernel object, not per device, since the
arguments are the kernel object's state; the kernel is held so that its id stays its own
(pyopencl kernels take no weak references). A device's :meth:`OpenCLDevice.close` drops
its context's kernels; a kernel not found here is given every argument."""

_KERNEL_ARGS_MAX = 4096

_UNSET = object()  # what a kernel not in _KERNEL_ARGS holds: matches no argument


def _set_changed(kernel: Any, args: Sequence[Any]) -> None:
    """Give ``kernel`` the arguments of ``args`` that differ from what it holds: scalars
    packed in one call, buffers (and None, a null buffer) in another."""
    held = _KERNEL_ARGS.get(id(kernel))
    if held is None or len(held[1]) != len(args):
        if len(args) != kernel.num_args:
            raise TypeError(f"{kernel.function_name} takes {kernel.num_args} arguments, "
                            f"{len(args)} given")
        last: Sequence[Any] = ()
    else:
        last = held[1]
    packs: list[Any] = []
    bufs: list[Any] = []
    for i, a in enumerate(args):
        b = last[i] if last else _UNSET
        if a is b:
            continue
        t = type(a)
        c = _PACK.get(t)
        if c is not None:
            if type(b) is t and a == b:
                continue
            packs += (i, c, a)
        elif a is None or isinstance(a, cl.MemoryObjectHolder):
            bufs += (i, a)
        else:
            raise TypeError(f"argument {i} of {kernel.function_name}: a numpy scalar or "
                            f"a buffer is needed, not {t.__name__}")
    if packs:
        kernel._set_arg_buf_pack_multi(tuple(packs))
    if bufs:
        kernel._set_arg_multi(tuple(bufs))
    if held is None and len(_KERNEL_ARGS) >= _KERNEL_ARGS_MAX:
        _KERNEL_ARGS.clear()  # kernels of devices never closed: forgetting costs a full set
    _KERNEL_ARGS[id(kernel)] = (kernel, list(args))


# {{{ profiling

class CommandLog:
    """The commands a profiling device enqueued, as ``(kind, label, bytes, event, queue,
    what)``.

    ``kind`` is ``h2d``, ``d2h``, ``d2d``, ``kernel`` or ``fill``; ``label`` is a
    ``cl.Kernel`` (named when read), a rect copy's extent ``(row bytes, rows, slices)``,
    or a string; ``queue`` is the queue it went to (a device has up to three: its own,
    the side queue of read-ins, the queue of first touches); ``what`` is the device's
    :attr:`what` when it was enqueued (the array and box of a copy, the tile of a
    kernel: :meth:`OpenCLDevice.note`). Recording is one append; the events' timestamps
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


def _write_host(queue: Any, buf: Any, host: Any, **kw: Any) -> Any:
    """``cl.enqueue_copy(queue, buf, host, **kw)`` for a host-to-buffer copy, without its
    dispatch on the kinds of both sides (a query of the buffer's type per call): a moving
    row copied at every serial iteration pays it on the host's critical path."""
    if "buffer_origin" in kw:
        return _enqueue_write_rect(queue, buf, host, **kw)
    return _enqueue_write(queue, buf, host, **kw)


def _read_host(queue: Any, host: Any, buf: Any, **kw: Any) -> Any:
    """``cl.enqueue_copy(queue, host, buf, **kw)`` for a buffer-to-host copy (see
    :func:`_write_host`)."""
    if "buffer_origin" in kw:
        return _enqueue_read_rect(queue, buf, host, **kw)
    return _enqueue_read(queue, buf, host, **kw)


def _recording_copy(kind: str, log: CommandLog) -> Any:
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


def _recording_kernel(log: CommandLog) -> Any:
    """``cl.enqueue_nd_range_kernel`` that also records the launch in ``log``."""
    enqueue = cl.enqueue_nd_range_kernel

    def launch(queue: Any, kernel: Any, global_size: Any, local_size: Any) -> Any:
        evt = enqueue(queue, kernel, global_size, local_size)
        log.add("kernel", kernel, 0, evt, queue)
        return evt
    return launch


def _recording_fill(log: CommandLog) -> Any:
    """``cl.enqueue_fill_buffer`` that also records the fill in ``log``."""
    enqueue = cl.enqueue_fill_buffer

    def fill(queue: Any, buf: Any, pattern: Any, offset: int, size: int) -> Any:
        evt = enqueue(queue, buf, pattern, offset, size)
        log.add("fill", "fill", size, evt, queue, False)
        return evt
    return fill

# }}}


class OpenCLDevice(Device):
    """A logical device: an OpenCL context, an in-order queue and a memory pool.

    :arg cap: bytes of box memory (int or ``"256MiB"``); default
        :data:`CAP_FRACTION` of the device's global memory.
    :arg arena_size: pool arena size; clamped to ``min(cap, max_mem_alloc_size)``.
    :arg profile: record every command (``queue`` must have ``PROFILING_ENABLE``), up
        to ``profile_limit`` of them; see :meth:`take_profile`.
    :arg side: run read-ins into new boxes on a second queue (:meth:`write_rect`), so
        that they overlap the kernels before them; default :data:`SIDE`.
    """

    def __init__(self, context: Any, queue: Any, device: Any, *, index: int = 0,
                 cap: int | str | None = None, name: str | None = None,
                 arena_size: int = DEFAULT_ARENA, programs: dict | None = None,
                 profile: bool = False, profile_limit: int = PROFILE_LIMIT,
                 side: bool | None = None):
        self.context = context
        self.domain = context
        """Devices with the same domain order each other's commands by events (one context)."""
        self._context_ptr = context.int_ptr
        self.queue = queue
        self._touch_queue: Any = None      # first touch of new arenas (_create_buffer)
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
        self._hboxes: dict[tuple, tuple] = {}
        self._kernels: dict[tuple[str, str, str], Any] = {}
        self._copy_kernels: dict[int, Any] | None = None
        self.side = SIDE if side is None else side
        self._side_queue: Any = None
        # (buffer, first byte, end byte, event) of each freed allocation whose last use
        # may still be queued: what a side copy into that memory must wait for
        self._freed: list[tuple[int, int, int, Any]] = []
        self._prune_freed = _FREED_PRUNE
        # host copies not yet known to be complete: see _hold
        self._held: tuple[list[Any], list[Any]] = ([], [])
        self._prune_held = [_HELD_PRUNE, _HELD_PRUNE]

    @classmethod
    def create(cls, device: Any, *, index: int = 0, cap: int | str | None = None,
               name: str | None = None, arena_size: int = DEFAULT_ARENA,
               context: Any = None, programs: dict | None = None, profile: bool = False,
               profile_limit: int = PROFILE_LIMIT) -> OpenCLDevice:
        """A device with a queue of its own on the ``cl.Device`` ``device``, in ``context``
        (which must include ``device``; default: a new context of its own); with
        ``profile`` the queue has ``PROFILING_ENABLE`` and the device records its commands."""
        label = name or f"cl{index}"
        props = cl.command_queue_properties.PROFILING_ENABLE if profile else 0
        try:
            ctx = context if context is not None else cl.Context([device])
            queue = cl.CommandQueue(ctx, device, properties=props)
        except cl.Error as e:
            raise _device_error(e, f"{label} ({device.name.strip()})",
                                "creating a context") from None
        return cls(ctx, queue, device, index=index, cap=cap, name=name, arena_size=arena_size,
                   programs=programs, profile=profile, profile_limit=profile_limit)

    # {{{ profiling

    def _set_profiling(self, on: bool, limit: int) -> None:
        """The enqueue functions the hot paths call: pyopencl's own, or recording ones."""
        if on and not self.queue.properties & cl.command_queue_properties.PROFILING_ENABLE:
            raise DeviceError(f"{self.name}: profiling needs a queue created with "
                              f"PROFILING_ENABLE")
        log = self._log = CommandLog(limit) if on else None
        if log is None:
            self._h2d, self._d2h = _write_host, _read_host
            self._d2d = cl.enqueue_copy
            self._enqueue_kernel = cl.enqueue_nd_range_kernel
            self._fill = cl.enqueue_fill_buffer
        else:
            self._h2d = _recording_copy("h2d", log)
            self._d2h = _recording_copy("d2h", log)
            self._d2d = _recording_copy("d2d", log)
            self._enqueue_kernel = _recording_kernel(log)
            self._fill = _recording_fill(log)

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
        if self._touch_queue is not None:
            self._touch_queue.finish()
        queues = {id(self.queue): "queue"}
        if self._side_queue is not None:
            queues[id(self._side_queue)] = "side queue"
        if self._touch_queue is not None:
            queues[id(self._touch_queue)] = "first touch"
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
        touch = min(nbytes, 4096)
        if TOUCH == "async":
            # on the device's in-order queue: everything enqueued there later follows it
            evt = self._fill(self.queue, buf, np.uint8(0), 0, touch)
            self._last_use(buf, 0, touch, evt)  # a side read-in there waits for it
        elif TOUCH not in ("0", "off", "no"):
            # waited for on a queue of its own: on the device's queue the wait would
            # also wait for every copy queued before it (blackscholes' read-ins). Nothing
            # else can use the new buffer before the wait returns.
            if self._touch_queue is None:
                self._touch_queue = self._queue_like()
            self._fill(self._touch_queue, buf, np.uint8(0), 0, touch).wait()
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
            del held[:complete_prefix(held)]
            self._prune_held[lane] = max(_HELD_PRUNE, 2 * len(held))

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

    def close(self) -> None:
        """Release every arena (live allocations included) and cached programs."""
        pending = self.__dict__.pop("_bbmm_prebuild", None)  # hostlib.prebuild's thread
        if pending is not None:
            pending.join()
        self.finish()
        for key, (k, _) in list(_KERNEL_ARGS.items()):
            if k.context.int_ptr == self._context_ptr:
                del _KERNEL_ARGS[key]
        self.pool.close()
        if self._touch_queue is not None:
            self._touch_queue.finish()
            self._touch_queue = None
        self._side_queue = None
        self._freed.clear()
        self._held[0].clear()
        self._held[1].clear()
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
                                           _host_box(host, host_origin, region))
            else:
                _check_ndim(host, region)  # (the host's own checks were made once)
            hbox = hb[1]
            item = host.itemsize
            _check_inside(region, a_box, a, item, what)
            hs = contiguous_run(region, hbox)
            ds = contiguous_run(region, a_box) if hs is not None else None
            if ds is not None:
                geo: tuple = (hs, hs + region.volume, a.offset + ds * item)
            else:
                geo = (None, rect_plan(region, a_box, a.offset, hbox, 0, item))
            if len(self._plans) >= 4096:
                self._plans.clear()
            hit = self._plans[key] = (weakref.ref(host), geo)
        geo = hit[1]
        if geo[0] is None:
            return geo
        return host.reshape(-1)[geo[0]:geo[1]], geo[2]

    def write_rect(self, dst, dst_box, region, host, host_origin=None, *, wait_for=(),
                   blocking=True, side=False):
        if region.is_empty:
            _host_box(host, host_origin, region)
            return None
        flat, plan = self._host_plan(dst, dst_box, region, host, host_origin, "destination")
        waits = self._waits(wait_for)
        queue = self.queue
        side = side and self.side and not blocking
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
                  blocking=True):
        if region.is_empty:
            _host_box(host, host_origin, region)
            return None
        if not host.flags.writeable:
            raise ValueError("read_rect needs a writeable host array")
        flat, plan = self._host_plan(src, src_box, region, host, host_origin, "source")
        waits = self._waits(wait_for)
        try:
            if flat is not None:
                evt = self._d2h(self.queue, flat, src.buf, src_offset=plan,
                                is_blocking=blocking, wait_for=waits)
                if not blocking:
                    self._hold(evt)
                return evt
            for i, (ao, bo, ext, ap, bp) in enumerate(plan):
                evt = self._d2h(self.queue, host, src.buf, buffer_origin=ao,
                                host_origin=bo, region=ext, buffer_pitches=ap,
                                host_pitches=bp, is_blocking=blocking and i == len(plan) - 1,
                                wait_for=waits if i == 0 else None)
                if not blocking:
                    self._hold(evt)
            return evt
        except cl.Error as e:
            raise _device_error(e, self.name, f"reading {region} from the device") from None

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
        _check_inside(region, dst_box, dst, itemsize, "destination")
        _check_inside(region, src_box, src, itemsize, "source")
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
            prg = self.build(_COPY_KERNELS)
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
            _set_changed(k, (buf, u64(a_off // unit), u64(ap[0] // unit), u64(ap[1] // unit),
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
            _set_changed(kernel, args)
            evt = self.last = self._enqueue_kernel(
                self.queue, kernel, tuple(int(g) for g in global_size),
                None if local_size is None else tuple(int(l) for l in local_size))
            return evt
        except (cl.Error, TypeError) as e:
            _KERNEL_ARGS.pop(id(kernel), None)  # what the kernel holds is now unknown
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

    # }}}

# }}}


# {{{ logical devices

def _iter_logical(n: int, phys: Sequence[PhysicalDevice]) -> Iterator[tuple[int, PhysicalDevice]]:
    for i in range(n):
        yield i, phys[i % len(phys)]


def node_share(phys: Sequence[PhysicalDevice], node: tuple[int, int] | None
               ) -> tuple[PhysicalDevice, ...]:
    """The GPUs of ``phys`` that rank ``node[0]`` of the ``node[1]`` ranks on one machine
    drives: a block each when there are enough, else one GPU each, round-robin. CPU
    devices are not split (every rank uses the machine's one CPU device)."""
    phys = tuple(phys)
    if node is None or node[1] <= 1 or not phys or phys[0].type != "GPU":
        return phys
    r, s = node
    if len(phys) >= s:
        return phys[r * len(phys) // s:(r + 1) * len(phys) // s]
    return (phys[r % len(phys)],)


def _quiet(opts: str) -> str:
    """Build options with ``-w`` (OpenCL's "inhibit all warnings")."""
    return opts if re.search(r"(^|\s)-w(\s|$)", opts) else ("-w " + opts).strip()


MAX_SHARERS = 64
"""Most logical devices on one physical device (each has its own queue, pool and share of
the memory; ``--devices 10000`` is a mistake, not a plan)."""


def plan_logical(n: int | None, disc: Discovery, node: tuple[int, int] | None = None,
                 cap: int | None = None) -> list[tuple[int, PhysicalDevice, int]]:
    """``(logical index, physical device, sharers)`` for :func:`make_devices`; ``node``
    as for :func:`node_share`. A :class:`UsageError` with the figures for more than
    :data:`MAX_SHARERS` logical devices on one physical device, or a cap per logical
    device (``cap``) whose sum over the logical devices sharing a physical one exceeds
    its memory."""
    phys = node_share(disc.chosen, node)
    if not phys:
        msg = "no OpenCL device found"
        if disc.devices:
            msg += " of the requested kind/platform (available: " + ", ".join(
                f"{d.name} [{d.type}, {d.platform}]" for d in disc.devices) + ")"
        if disc.problems:
            msg += "; " + "; ".join(disc.problems)
        if disc.hint:
            msg += "; " + disc.hint
        raise DeviceError(msg)
    if n is None:
        n = len(phys) if phys[0].type == "GPU" else 1
    if n < 1:
        raise UsageError(f"number of devices must be at least 1, got {n}")
    share = {}
    for _, p in _iter_logical(n, phys):
        share[id(p)] = share.get(id(p), 0) + 1
    most = max(share.values())
    if most > MAX_SHARERS:
        raise UsageError(f"--devices {n}: {most} logical devices on one physical device "
                         f"({len(phys)} physical: {', '.join(p.name.strip() for p in phys)}); "
                         f"at most {MAX_SHARERS} each")
    if cap is not None:
        for p in phys:
            k = share.get(id(p), 0)
            if k and cap * k > p.global_mem:
                raise UsageError(
                    f"--device-mem {format_bytes(cap)}"
                    + (f" x {k} logical devices = {format_bytes(cap * k)}" if k > 1 else "")
                    + f" is more than the {format_bytes(p.global_mem)} of memory of "
                      f"{p.name.strip()}")
    return [(i, p, share[id(p)]) for i, p in _iter_logical(n, phys)]


def make_devices(n: int | None = None, cap: int | str | None = None,
                 platform: str | int | None = None, kind: str = "auto",
                 arena_size: int = DEFAULT_ARENA, contexts: str = "shared",
                 node: tuple[int, int] | None = None, profile: bool = False) -> list[Device]:
    """``n`` logical OpenCL devices, each with its own queue and pool.

    :arg n: number of logical devices; None: every GPU, or 1 CPU device. With fewer
        physical devices than ``n`` the logical ones are spread round-robin.
    :arg cap: bytes per logical device (int or ``"256MiB"``). Default:
        :data:`CAP_FRACTION` of the physical device's memory, divided among the
        logical devices sharing it.
    :arg platform, kind: as for :func:`discover`.
    :arg contexts: ``shared`` (default): one context over the physical devices, so
        commands of different devices are ordered by events and the host never waits
        for one device on behalf of another; ``separate``: a context per logical device
        (cross-device order then costs a host wait).
    :arg node: ``(rank on this machine, ranks on this machine)`` under MPI: the ranks
        of one machine split its GPUs (:func:`node_share`), so ``mpiexec -n 2`` on a
        two-GPU machine gives each rank its own GPU.
    :arg profile: record every command of every device with its OpenCL profiling event
        (queues with ``PROFILING_ENABLE``), :data:`PROFILE_LIMIT` commands in all;
        :func:`bbmm.profile.collect` reads them after the run.
    """
    if contexts not in ("shared", "separate"):
        raise UsageError(f"contexts must be shared or separate, not {contexts!r}")
    cap_bytes = None if cap is None else parse_bytes(cap)
    if cap_bytes is not None and cap_bytes <= 0:
        raise UsageError(f"device memory cap must be positive, got {cap!r}")
    plan = plan_logical(n, discover(platform, kind), node, cap_bytes)
    ctx = None
    programs: dict | None = None
    if contexts == "shared":
        phys: list[Any] = []
        for _, p, _ in plan:
            if all(p.cl_device.int_ptr != q.int_ptr for q in phys):
                phys.append(p.cl_device)
        try:
            ctx = cl.Context(phys)
        except cl.Error as e:
            raise _device_error(e, ", ".join(d.name.strip() for d in phys),
                                "creating a context") from None
        programs = {}
    devs: list[Device] = []
    limit = max(1, PROFILE_LIMIT // len(plan))
    for i, p, sharers in plan:
        c = cap_bytes if cap_bytes is not None else int(CAP_FRACTION * p.global_mem) // sharers
        devs.append(OpenCLDevice.create(p.cl_device, index=i, cap=c, arena_size=arena_size,
                                        context=ctx, programs=programs, profile=profile,
                                        profile_limit=limit))
    return devs

# }}}

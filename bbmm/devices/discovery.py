"""OpenCL discovery: the platforms and devices the ICD loader lists, the ones bbmm uses
(:func:`discover`), registering NVIDIA's driver with the loader, and quiet program builds.

.. autofunction:: discover
.. autofunction:: nvidia_opencl_library
.. autofunction:: register_nvidia_icd
.. autofunction:: quiet_build

A CPU platform is used only where a trivial kernel builds (:func:`_build_problem`): PyPI's
PoCL 3.0 lists processors newer than its compiler and then fails every build.
"""
from __future__ import annotations

import os
import re
import subprocess
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any

import pyopencl as cl

from .. import settings
from ..diagnostic import DeviceError, UsageError
from .clerrors import device_error as _device_error

__all__ = ["PhysicalDevice", "Discovery", "discover", "nvidia_opencl_library",
           "register_nvidia_icd", "quiet_build", "POCL_HINT"]


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
    settings.export("OCL_ICD_VENDORS", folder)
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

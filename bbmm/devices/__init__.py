"""Device layer: the interface (:mod:`.base`), the null device, and OpenCL devices (:mod:`.opencl`).

The OpenCL names are imported lazily, so the null tier (``NullDevice``, ``DryDevice``,
``rect_args``) works without pyopencl.

The package is also callable: ``bbmm.devices(2, device_mem="2GiB")`` makes logical
OpenCL devices (:func:`logical_devices`) for the Python API.
"""
from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np

from ..diagnostic import UsageError
from .base import Allocation, Device, DryDevice, NullDevice, rect_args, split_leading

_OPENCL = ("OpenCLDevice", "PhysicalDevice", "Discovery", "discover", "make_devices",
           "pinned_empty", "is_pinned", "nvidia_opencl_library", "register_nvidia_icd")

__all__ = ["Allocation", "Device", "DryDevice", "NullDevice", "rect_args", "split_leading",
           "logical_devices", *_OPENCL]


def logical_devices(n: int | None = None, *, device_mem: int | str | None = None,
                    platform: str | int | None = None, device_kind: str = "auto",
                    profile: bool = False, side: bool = True) -> list[Any]:
    """``n`` logical OpenCL devices (None: every GPU, or one CPU device), each with its own
    queue and memory cap ``device_mem`` (bytes or ``"2GiB"``; default: 90% of the physical
    device's memory, shared among the logical devices on it). Reusable across runs
    (``prog(..., devices=devs)``): kernels built once stay built. Exported as
    ``bbmm.devices(...)``; see :func:`bbmm.devices.opencl.make_devices` (``side``: read-ins
    on a second queue of each device)."""
    from .opencl import make_devices as make  # pyopencl: loaded when devices are made

    if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1):
        raise UsageError(f"the number of devices must be a positive int or None, got {n!r}")
    if device_kind not in ("auto", "gpu", "cpu"):
        raise UsageError(f"device_kind must be auto, gpu or cpu, got {device_kind!r}")
    return make(None if n is None else int(n), cap=device_mem, platform=platform,
                kind=device_kind, profile=profile, side=side)


def __getattr__(name: str) -> Any:
    if name in _OPENCL:
        from . import opencl
        return getattr(opencl, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _CallableModule(types.ModuleType):
    """``bbmm.devices(n, device_mem=..., platform=..., device_kind=..., profile=...)``."""

    def __call__(self, n: int | None = None, **options: Any) -> list[Any]:
        return logical_devices(n, **options)


sys.modules[__name__].__class__ = _CallableModule

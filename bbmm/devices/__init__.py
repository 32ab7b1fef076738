"""Device layer: the interface (:mod:`.base`), the null device, and OpenCL devices (:mod:`.opencl`).

The OpenCL names are imported lazily, so the null tier (``NullDevice``, ``DryDevice``,
``rect_args``) works without pyopencl.
"""
from __future__ import annotations

from typing import Any

from .base import Allocation, Device, DryDevice, NullDevice, rect_args, split_leading

_OPENCL = ("OpenCLDevice", "PhysicalDevice", "Discovery", "discover", "make_devices",
           "pinned_empty", "is_pinned", "nvidia_opencl_library", "register_nvidia_icd")

__all__ = ["Allocation", "Device", "DryDevice", "NullDevice", "rect_args", "split_leading", *_OPENCL]


def __getattr__(name: str) -> Any:
    if name in _OPENCL:
        from . import opencl
        return getattr(opencl, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

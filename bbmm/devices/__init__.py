"""Device layer: the interface (:mod:`.base`), the null device, and OpenCL devices (:mod:`.opencl`).

The OpenCL names are imported lazily, so the null tier (``NullDevice``, ``DryDevice``,
``rect_args``) works without pyopencl.

The package is also callable: ``bbmm.devices(2, device_mem="2GiB")`` makes logical
OpenCL devices (:func:`bbmm.api.make_devices`) for the Python API.
"""
from __future__ import annotations

import sys
import types
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


class _CallableModule(types.ModuleType):
    """``bbmm.devices(n, device_mem=..., platform=..., device_kind=..., profile=...)``."""

    def __call__(self, n: int | None = None, **options: Any) -> list[Any]:
        from ..api import make_devices
        return make_devices(n, **options)


sys.modules[__name__].__class__ = _CallableModule

"""OpenCL status codes as bbmm's errors: :func:`status_name` names a code
(``CL_MEM_OBJECT_ALLOCATION_FAILURE``), :func:`device_error` turns a failing driver call
into a :class:`~bbmm.diagnostic.DeviceError` naming the device and what it was doing, and
:data:`OOM` holds the codes of a driver that ran out of memory."""
from __future__ import annotations

import pyopencl as cl

from ..diagnostic import DeviceError

__all__ = ["status_name", "device_error", "OOM"]

OOM = frozenset({cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE,
                 cl.status_code.OUT_OF_RESOURCES, cl.status_code.OUT_OF_HOST_MEMORY})
"""The status codes of a driver that ran out of memory."""


def status_name(code: int) -> str:
    """``CL_MEM_OBJECT_ALLOCATION_FAILURE`` for -4 (``CL_<code>`` when unknown)."""
    try:
        return "CL_" + cl.status_code.to_string(code)
    except Exception:  # noqa: BLE001 - unknown codes come as ValueError or KeyError
        return f"CL_{code}"


def device_error(e: cl.Error, device: str, what: str) -> DeviceError:
    """``device``: ``what`` failed: the status of ``e``."""
    code = getattr(e, "code", None)
    name = status_name(code) if isinstance(code, int) else type(e).__name__
    return DeviceError(f"{device}: {what} failed: {name}")

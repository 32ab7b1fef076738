"""Skip markers shared by the test layers (``support.needs``; ``tests/`` is on the import path)."""
from __future__ import annotations

import pytest


def no_opencl_reason() -> str | None:
    """Why bbmm has no OpenCL device to run on here (None: it has one).

    A platform that lists a CPU it cannot build kernels for (PyPI's PoCL 3.0 on a processor
    newer than its LLVM) counts as none, with the reason :func:`bbmm.devices.opencl.discover`
    found; the tests would otherwise fail at their first kernel build.
    """
    try:
        import pyopencl as cl
        if not cl.get_platforms():
            return "no OpenCL platform (pyopencl sees none)"
    except Exception as e:  # noqa: BLE001 - ImportError, or the ICD loader's PLATFORM_NOT_FOUND
        return f"no OpenCL platform: {e}"
    from bbmm.devices.opencl import discover
    disc = discover()
    if disc.chosen:
        return None
    why = "; ".join(disc.problems) or "none of the kind bbmm uses"
    return f"no OpenCL device bbmm can use ({why})"


NO_OPENCL = no_opencl_reason()
needs_cl = pytest.mark.skipif(NO_OPENCL is not None, reason=NO_OPENCL or "")


def _no_shm() -> bool:
    from bbmm import shm
    return shm.memory_folder() is None


needs_shm = pytest.mark.skipif(
    _no_shm(), reason="no writable /dev/shm: host arrays stay private, every message "
                      "through the mailboxes")

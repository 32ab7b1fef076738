"""Skip markers shared by the test tiers (``tests/`` is on ``sys.path``: conftest.py)."""
from __future__ import annotations

import pytest


def have_opencl() -> bool:
    """pyopencl imports and sees at least one platform."""
    try:
        import pyopencl as cl
        return bool(cl.get_platforms())
    except Exception:
        return False


needs_cl = pytest.mark.skipif(not have_opencl(), reason="no OpenCL platform (pyopencl sees none)")

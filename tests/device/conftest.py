"""Device tier: tests that need an OpenCL platform (PoCL's CPU device is enough).

Every test here is marked ``device``. They are skipped, with the reason, only when
bbmm finds no OpenCL device that builds kernels (``needs.no_opencl_reason``). Logical
devices are made through :func:`bbmm.devices.opencl.make_devices` and closed after each
test.
"""
from __future__ import annotations

import pytest
from needs import NO_OPENCL  # tests/ is on sys.path (tests/conftest.py)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/device/" in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.device)
            if NO_OPENCL:
                item.add_marker(pytest.mark.skip(reason=NO_OPENCL))


@pytest.fixture
def make():
    """``make(n, cap=..., arena_size=...)``: logical devices, closed at teardown."""
    from bbmm.devices.opencl import make_devices

    made = []

    def factory(n=1, **kw):
        devs = make_devices(n, **kw)
        made.extend(devs)
        return devs

    yield factory
    for d in made:
        d.close()

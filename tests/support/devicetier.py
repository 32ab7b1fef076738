"""Device tier: the tests in a ``device/`` folder of a layer (``tests/codegen/device``,
``tests/runtime/device``, ``tests/app/device``) need an OpenCL platform (PoCL's CPU device
is enough). tests/conftest.py loads this module as a plugin.

Every such test is marked ``device``. They are skipped, with the reason, only when
bbmm finds no OpenCL device that builds kernels (``support.needs.no_opencl_reason``).
Logical devices are made through :func:`bbmm.devices.opencl.make_devices` and closed after each
test.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from support.needs import NO_OPENCL
from support.paths import TESTS


def in_device_tier(path) -> bool:
    """Whether the test module at ``path`` is in a ``device/`` folder under ``tests/``."""
    try:
        parts = Path(path).resolve().relative_to(TESTS).parts
    except ValueError:          # a module given from outside tests/
        return False
    return "device" in parts[:-1]


def pytest_collection_modifyitems(config, items):
    for item in items:
        if in_device_tier(item.path):
            item.add_marker(pytest.mark.device)
            if NO_OPENCL:
                item.add_marker(pytest.mark.skip(reason=NO_OPENCL))


@pytest.fixture
def make():
    """``make(n, cap=..., arena_size=...)``: logical devices, closed at teardown (a
    fixture of every test module, used by the device tier)."""
    from bbmm.devices.opencl import make_devices

    made = []

    def factory(n=1, **kw):
        devs = make_devices(n, **kw)
        made.extend(devs)
        return devs

    yield factory
    for d in made:
        d.close()

"""Kernels built in the background from the moment the devices are made
(:func:`bbmm.hostlib.prebuild`), on PoCL.

The prebuild must guess the variant the launches take (else it only wastes a build),
must never change a result, and must never hide a build error: the launch that needs
the kernel builds it again and reports it.
"""
from __future__ import annotations

import threading
import types

import numpy as np
import pytest

import bbmm.hostlib as hostlib
from bbmm.config import KernelOptions, RuntimeConfig
from bbmm.devices.opencl import OpenCLDevice
from bbmm.diagnostic import DeviceError
from bbmm.run import execute, host_arrays
from bbmm.codegen.compile import compile_program, load_driver
from support.paths import POLYBENCH


PROGRAMS = {
    "blackscholes": ({"n": 1000}, {"riskfree": 0.02, "volatility": 0.3}),
    "heat2d": ({"n": 40, "tsteps": 3}, {}),
    "floyd": ({"n": 48}, {}),
    "mvt": ({"m": 48, "n": 24}, {}),
}


@pytest.fixture
def builds(monkeypatch):
    """Every kernel build asked of an OpenCL device: (thread name, kernel name)."""
    seen = []
    orig = OpenCLDevice.kernel

    def kernel(self, source, name, options=()):
        seen.append((threading.current_thread().name, name))
        return orig(self, source, name, options)

    monkeypatch.setattr(OpenCLDevice, "kernel", kernel)
    return seen


def run(module, devs, params, scalars, seed=0, prebuild=True):
    arrays = host_arrays(module, params, devs)
    rng = np.random.default_rng(seed)
    for a in arrays.values():
        a[...] = rng.random(a.shape) + 0.5
    config = RuntimeConfig(kernels=KernelOptions(prebuild=prebuild))
    res = execute(module, devs, params, scalars, arrays, progress=False, config=config)
    return {k: v.copy() for k, v in res.arrays.items()}


@pytest.mark.parametrize("ndev", [1, 2])
@pytest.mark.parametrize("prog", sorted(PROGRAMS))
def test_prebuilt_kernels_are_the_ones_launched_and_change_no_result(make, builds, monkeypatch,
                                                                       prog, ndev):
    module = load_driver(compile_program(POLYBENCH / f"{prog}.c"))
    params, scalars = PROGRAMS[prog]
    scalars = {k: v for k, v in scalars.items() if k in dict(module.FLOAT_PARAMS)}
    plain = run(module, make(ndev), params, scalars, prebuild=False)
    assert all(t == "MainThread" for t, _ in builds)
    builds.clear()
    devs = make(ndev)
    threads = hostlib.prebuild(module, devs)
    assert len(threads) == ndev
    got = run(module, devs, params, scalars)
    for k in plain:
        np.testing.assert_array_equal(got[k], plain[k], err_msg=k)
    background = [n for t, n in builds if t != "MainThread"]
    assert background, "nothing was built in the background"
    if ndev == 1 or prog in ("blackscholes", "heat2d", "mvt"):
        # one box per array per tile: the guessed variant is the one every launch takes
        assert [n for t, n in builds if t == "MainThread"] == []


def test_a_failing_background_build_is_reported_by_the_launch(make, builds):
    module = load_driver(compile_program(POLYBENCH / "blackscholes.c"))
    broken = types.SimpleNamespace(**{k: v for k, v in vars(module).items()
                                      if not k.startswith("__")})
    broken.KERNELS = module.KERNELS.replace("__kernel void", "__kernel void oops oops", 1)
    dev, = make(1)
    threads = hostlib.prebuild(broken, [dev])
    for t in threads:
        t.join()
    assert builds and all(t != "MainThread" for t, _ in builds)
    arrays = getattr(broken, "NEST0_LAUNCH")
    sels = tuple(tuple(0 for _ in e[3]) for e in arrays if len(e) > 3)
    with pytest.raises(DeviceError, match="building an OpenCL program failed"):
        hostlib._kernel(dev, broken.KERNELS, "blackscholes_nest0", arrays, sels, True,
                        (KernelOptions().coarsen, 1), None)


def test_no_prebuild_twice_nor_on_devices_without_a_compiler(make):
    from bbmm.devices import NullDevice
    module = load_driver(compile_program(POLYBENCH / "heat2d.c"))
    dev, = make(1)
    first = hostlib.prebuild(module, [dev, NullDevice(1)])
    assert len(first) == 1                      # the null device has no build()
    # the interpreter must wait for it at exit: a build cut off while the driver was torn
    # down crashed short runs (1 in 7 of test_mpi's two-rank run on PoCL)
    assert not first[0].daemon
    assert hostlib.prebuild(module, [dev]) == []  # one is pending or was not joined yet

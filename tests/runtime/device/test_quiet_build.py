"""pyopencl's CompilerWarning for bbmm's own kernels does not reach the user, and the
user's own builds still warn."""
from __future__ import annotations

import random
import threading
import warnings

import pyopencl as cl

from bbmm.devices.opencl import quiet_build


def _source() -> str:
    # a compiler warning, in a source no cache has seen
    return ("#warning a remark of the compiler\n"
            f"__kernel void k(__global int *a) {{ a[0] = {random.randrange(1 << 30)}; }}\n")


def test_bbmm_builds_are_quiet(make):
    dev = make(1)[0]
    before = list(warnings.filters)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        dev.build(_source())
        dev.kernel(_source(), "k")
        ours = [x for x in w if issubclass(x.category, cl.CompilerWarning)]
        cl.Program(dev.context, _source()).build()          # the user's own build
        theirs = [x for x in w if issubclass(x.category, cl.CompilerWarning)]
    assert ours == []
    assert len(theirs) == 1          # PoCL logs "#warning": the user still sees it
    assert warnings.filters == before


def test_quiet_builds_in_threads(make):
    dev = make(1)[0]
    before = list(warnings.filters)
    errors = []

    def build():
        try:
            quiet_build(cl.Program(dev.context, _source()))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        threads = [threading.Thread(target=build) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not [x for x in w if issubclass(x.category, cl.CompilerWarning)]
    assert not errors and warnings.filters == before

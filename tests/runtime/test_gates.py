"""The null device's gates (:meth:`bbmm.devices.base.Device.gate`): commands held behind a
closed gate run in order once it opens, and what would block an OpenCL host (a copy
behind a closed gate, a wait for a command behind one) is refused."""
from __future__ import annotations

import numpy as np
import pytest

from bbmm.box import Box
from bbmm.devices import DryDevice, NullDevice
from bbmm.diagnostic import DeviceError

BOX = Box((0, 0), (3, 3))


def _device():
    dev = NullDevice(0, gates=True)
    alloc = dev.alloc(BOX.volume * 8)
    return dev, alloc


def test_a_copy_and_a_kernel_behind_a_gate_run_in_order_when_it_opens():
    dev, alloc = _device()
    host = np.arange(16, dtype=np.float64).reshape(4, 4)
    gate = dev.gate()
    e = dev.write_rect(alloc, BOX, BOX, host, wait_for=[gate])
    seen = []
    dev.launch(lambda d: seen.append(d.view(alloc, BOX, np.float64).copy()), (1,), None, ())
    assert not seen and not dev.done(e)
    host[:] = -1.0            # the host writes the halos after the copy was enqueued
    dev.open(gate)
    assert dev.done(e)
    np.testing.assert_array_equal(seen[0], np.full((4, 4), -1.0))
    # the gate is open: commands run at once again
    dev.write_rect(alloc, BOX, BOX, np.zeros((4, 4)))
    assert not dev.view(alloc, BOX, np.float64).any()


@pytest.mark.parametrize("what", ["copy out", "ungated copy in", "second gated copy",
                                  "device copy", "wait", "finish"])
def test_what_would_block_an_opencl_host_behind_a_closed_gate_is_refused(what):
    dev, alloc = _device()
    other = dev.alloc(BOX.volume * 8)
    host = np.zeros((4, 4))
    gate = dev.gate()
    e = dev.write_rect(alloc, BOX, BOX, host, wait_for=[gate])
    dev.launch(lambda d: None, (1,), None, ())   # a kernel may queue behind it
    act = {"copy out": lambda: dev.read_rect(alloc, BOX, BOX, host),
           "ungated copy in": lambda: dev.write_rect(other, BOX, BOX, host),
           "second gated copy": lambda: dev.write_rect(other, BOX, BOX, host, wait_for=[gate]),
           "device copy": lambda: dev.copy_rect(other, BOX, alloc, BOX, BOX, 8),
           "wait": lambda: dev.wait(e),
           "finish": dev.finish}[what]
    with pytest.raises(DeviceError, match="closed gate"):
        act()


def test_a_null_device_gives_gates_only_where_its_kernels_are_commands():
    """A tile's callback on a null device reads and writes its memory at once, outside
    the queue: such a device gives no gate unless made with ``gates``; a dry device runs
    nothing, and gives them."""
    assert NullDevice(0).gate() is None
    assert NullDevice(0, gates=True).gate() is not None
    assert DryDevice(0).gate() is not None

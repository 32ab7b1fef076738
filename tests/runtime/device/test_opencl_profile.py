"""Profiling devices (``make_devices(profile=True)``): every command recorded with its
kind, label, bytes, event, queue and note, read after the queue finished; nothing changes
when off."""
from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from bbmm.box import Box
from bbmm.devices.commandlog import read_host as _read_host
from bbmm.devices.commandlog import write_host as _write_host
from bbmm.devices.opencl import PROFILE_LIMIT, CommandLog

SCALE = """
__kernel void twice(__global float *a, long off, int n)
{
    const int i = get_global_id(0);
    if (i < n)
        a[off + i] *= 2.0f;
}
"""


def test_profiling_off_costs_nothing(make):
    (dev,) = make(1, cap="4MiB")
    assert not dev.profiling and dev.take_profile() is None
    # the hot paths call pyopencl's own functions (the host copies its functions behind
    # cl.enqueue_copy, without its dispatch), not recording wrappers
    assert dev._h2d is _write_host and dev._d2h is _read_host
    assert dev._d2d is cl.enqueue_copy and dev._enqueue_kernel is cl.enqueue_nd_range_kernel
    assert dev._fill is cl.enqueue_fill_buffer
    assert not dev.queue.properties & cl.command_queue_properties.PROFILING_ENABLE


def test_every_command_is_recorded_with_its_kind_and_bytes(make):
    devs = make(2, cap="4MiB", arena_size=1 << 16, profile=True)
    dev = devs[0]
    assert dev.profiling and dev.queue.properties & cl.command_queue_properties.PROFILING_ENABLE
    assert dev._log.limit == PROFILE_LIMIT // 2  # the limit is shared by the devices
    host = np.arange(20 * 30, dtype=np.float32).reshape(20, 30)
    box = Box((2, 0), (11, 29))           # 10 whole rows: linear copies
    col = Box((0, 5), (19, 8))            # 4 columns: rect copies
    a = dev.alloc(box.volume * 4)
    b = dev.alloc(col.volume * 4)
    c = dev.alloc(box.volume * 4)
    dev.note({"array": "A", "box": box, "for": "readin"})
    dev.write_rect(a, box, box, host)                     # h2d linear, 1200 bytes
    dev.note({"array": "A", "box": col, "for": "readin"})
    dev.write_rect(b, col, col, host)                     # h2d rect 16 x 20, 320 bytes
    dev.note({"tile": "t0"})
    k = dev.kernel(SCALE, "twice")
    dev.launch(k, (box.volume,), None, [a.buf, np.int64(a.offset // 4), np.int32(box.volume)])
    dev.copy_rect(c, box, a, box, Box((3, 2), (5, 9)), 4)  # d2d rect within one arena: kernel
    out = np.zeros_like(host)
    dev.read_rect(a, box, box, out, blocking=False)       # d2h linear
    dev.read_rect(b, col, Box((1, 5), (2, 8)), np.zeros_like(host))  # d2h rect 16 x 2
    doc = dev.take_profile()
    assert doc["name"] == "cl0" and doc["dropped"] == 0 and doc["unreadable"] == 0
    got = [(k, label, n) for k, label, n, *_ in doc["commands"]]
    assert got == [("fill", "fill", 4096),               # the arena's first touch
                   ("h2d", "linear", 1200), ("h2d", "rect 16x20", 320),
                   ("kernel", "twice", 0), ("d2d", "kernel copy", 3 * 8 * 4),
                   ("d2h", "linear", 1200), ("d2h", "rect 16x2", 32)]
    for _, _, _, queued, submit, start, end, queue, _ in doc["commands"]:
        assert 0 < start <= end
        assert queued is None or queued <= start
        assert queue == "queue"  # blocking copies and kernels: the device's own queue
    # each command with the note said before it; the arena's fill with none
    whats = [c[8] for c in doc["commands"]]
    assert whats[0] is None and whats[1] == {"array": "A", "box": box, "for": "readin"}
    assert whats[2]["box"] == col and whats[3] == whats[4] == whats[5] == {"tile": "t0"}
    # the host's clock just after the first enqueue, and that command's queued time
    assert doc["host_ns"] is None or doc["host_queued"] == doc["commands"][0][3]
    np.testing.assert_array_equal(out[box.slices()], 2 * host[box.slices()])
    # taken once: the next call sees only what came after
    dev.write_rect(a, box, Box((2, 0), (2, 29)), host)
    assert [c[:3] for c in dev.take_profile()["commands"]] == [("h2d", "linear", 120)]
    # a read-in beside the queue (side=True) is on the side queue's track
    dev.write_rect(a, box, box, host, blocking=False, side=True)
    dev.finish()
    assert [(c[0], c[7]) for c in dev.take_profile()["commands"]] == [("h2d", "side queue")]
    # a copy between two arenas: clEnqueueCopyBufferRect
    dev.alloc(dev.pool.stats().largest_free)  # the first arena is full now
    d = dev.alloc(box.volume * 4)
    assert d.buf is not a.buf
    dev.copy_rect(d, box, a, box, Box((3, 2), (5, 9)), 4)
    dev.copy_rect(d, box, a, box, box, 4)
    cmds = [c[:3] for c in dev.take_profile()["commands"]]
    assert cmds == [("fill", "fill", 4096), ("d2d", "rect 32x3", 96), ("d2d", "linear", 1200)]
    assert devs[1].take_profile()["commands"] == []


def test_the_log_holds_plain_events_and_stops_at_its_limit(make):
    (dev,) = make(1, cap="4MiB", profile=True)
    dev._log.limit = 3
    host = np.zeros(256, np.float32)
    a = dev.alloc(host.nbytes)
    evts = [dev.write_rect(a, Box((0,), (255,)), Box((0,), (255,)), host, blocking=False)
            for _ in range(5)]
    # the run gets pyopencl's NannyEvent (its destructor waits, as without profiling);
    # the log keeps a plain event of the same command
    assert all(isinstance(e, cl.NannyEvent) for e in evts)
    held = [r[3] for r in dev._log.records]
    assert len(held) == 3 and all(type(e) is cl.Event for e in held)
    assert held[1].int_ptr == evts[0].int_ptr  # held[0] is the arena's fill
    doc = dev.take_profile()
    assert len(doc["commands"]) == 3 and doc["dropped"] == 3 and doc["limit"] == 3
    assert dev.take_profile()["dropped"] == 0


def test_command_log_counts_unreadable_events():
    class NoProfile:
        @property
        def profile(self):
            raise cl.Error("no profiling info")

    log = CommandLog(limit=10)
    log.add("h2d", "linear", 8, NoProfile())
    doc = log.take()
    assert doc["commands"] == [] and doc["unreadable"] == 1


def test_a_queue_without_profiling_is_refused(make):
    from bbmm.devices.opencl import OpenCLDevice
    from bbmm.diagnostic import DeviceError

    (dev,) = make(1, cap="4MiB")
    with pytest.raises(DeviceError, match="PROFILING_ENABLE"):
        OpenCLDevice(dev.context, dev.queue, dev.cl_device, cap="1MiB", profile=True)

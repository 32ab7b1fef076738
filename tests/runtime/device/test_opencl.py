"""OpenCL devices on whatever platform is there (PoCL's CPU device in CI).

Transfers are checked against numpy slicing with a seeded ``default_rng(42)``:
every box lives at a non-zero offset of a pool arena, regions are random
sub-boxes, and host arrays are either whole arrays (``host_origin`` zero) or
staging arrays of one box (``host_origin = box.lo``). Up to four logical devices
share the one CPU device, each with its own queue and pool (one shared context by default).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pyopencl as cl
import pytest

from bbmm.box import Box
from bbmm.devices.opencl import (OpenCLDevice, contiguous_run, discover, is_pinned,
                                 make_devices, pinned_empty, plan_logical, register_nvidia_icd)
from bbmm.diagnostic import DeviceError, DeviceMemoryError, UsageError
from bbmm.pool import PAIR_SLACK

pytestmark = pytest.mark.device

DTYPES = [np.float32, np.float64, np.int32]


def random_box(rng, outer: Box) -> Box:
    lo, hi = [], []
    for l, h in zip(outer.lo, outer.hi):
        a, b = sorted(rng.integers(l, h + 1, size=2))
        lo.append(int(a))
        hi.append(int(b))
    return Box(tuple(lo), tuple(hi))


def random_data(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


def padded_alloc(dev, nbytes, rng):
    """An allocation at a non-zero offset: a random pad block is allocated first."""
    pad = dev.alloc(int(rng.integers(1, 5000)))
    a = dev.alloc(nbytes)
    return pad, a


SHAPES = [(37,), (9, 13), (5, 6, 7), (3, 4, 5, 6)]


# {{{ discovery and logical devices

def test_discover_picks_a_device():
    disc = discover()
    assert disc.chosen, disc
    kinds = {d.type for d in disc.chosen}
    assert len(kinds) == 1 and len({d.platform_index for d in disc.chosen}) == 1
    if kinds == {"CPU"}:
        assert len(disc.chosen) == 1 and not any(d.type == "GPU" for d in disc.devices)
    for d in disc.devices:
        info = d.as_dict()
        assert info["global_mem"] > 0 and info["max_alloc"] > 0 and info["name"]
    cpu = discover(kind="cpu").chosen
    assert [d.type for d in cpu] == (["CPU"] if any(d.type == "CPU" for d in disc.devices)
                                     else [])
    with pytest.raises(UsageError):
        discover(kind="fpga")


def test_discover_skips_cpu_platforms_that_cannot_build(monkeypatch):
    """A CPU platform whose compiler fails every build (PyPI's PoCL 3.0 on AMD Zen 5:
    "unknown target CPU 'generic'") is passed over with its reason; with none left, the
    error names the reason and how to get a PoCL that builds."""
    import bbmm.devices.discovery as ocl

    cpus = [d for d in discover(kind="cpu").devices if d.type == "CPU"]
    if not cpus:
        pytest.skip("no CPU OpenCL device to pass over")
    first = cpus[0]
    real = ocl._build_problem
    monkeypatch.setattr(ocl, "_build_problem", lambda d: (
        "cannot build kernels (unknown target CPU 'generic')"
        if d.platform_index == first.platform_index else real(d)))
    disc = discover(kind="cpu")
    assert first not in disc.chosen
    assert any(f"platform {first.platform_index} " in p and "unknown target CPU" in p
               for p in disc.problems)
    only = discover(first.platform_index, kind="cpu")
    assert not only.chosen and only.hint and "pocl-opencl-icd" in only.hint
    with pytest.raises(DeviceError, match="unknown target CPU.*pocl-opencl-icd"):
        plan_logical(1, only)


def test_build_problem_of_the_chosen_device_is_none():
    (d, *_) = discover().chosen
    from bbmm.devices.discovery import _build_problem
    assert _build_problem(d) is None


def test_make_devices_defaults_and_errors(make):
    (d,) = make() if discover().chosen[0].type == "CPU" else make(1)
    assert isinstance(d, OpenCLDevice) and d.index == 0
    assert 0 < d.cap <= 0.9 * d.global_mem + 1
    assert d.pool.arena_size == min(256 << 20, d.cap, d.max_alloc)
    assert d.pool.max_arena == d.max_alloc
    with pytest.raises(UsageError):
        make_devices(0)
    with pytest.raises(DeviceError, match="no OpenCL device found.*available"):
        make_devices(1, platform="no-such-platform")
    with pytest.raises(UsageError, match="cannot read size"):
        make_devices(1, cap="lots")


def test_logical_devices_round_robin_with_shared_cap():
    disc = discover()
    plan = plan_logical(5, disc)
    assert [i for i, _, _ in plan] == list(range(5))
    nphys = len(disc.chosen)
    for i, p, sharers in plan:
        assert p is disc.chosen[i % nphys]
        assert sharers == sum(1 for j in range(5) if j % nphys == i % nphys)


@pytest.mark.parametrize("contexts", ["shared", "separate"])
def test_logical_devices_have_separate_queues_and_memory(make, contexts):
    devs = make(4, cap="8MiB", arena_size=1 << 20, contexts=contexts)
    assert len({d.context.int_ptr for d in devs}) == (1 if contexts == "shared" else 4)
    assert len({d.queue.int_ptr for d in devs}) == 4
    assert all(d.cap == 8 << 20 for d in devs)
    box = Box((0,), (999,))
    allocs = [d.alloc(4000) for d in devs]
    for k, (d, a) in enumerate(zip(devs, allocs)):
        d.write_rect(a, box, box, np.full(1000, k, np.int32))
    for k, (d, a) in enumerate(zip(devs, allocs)):
        out = np.empty(1000, np.int32)
        d.read_rect(a, box, box, out)
        assert (out == k).all(), "writing one logical device changed another"
    if contexts == "separate":
        # a buffer of one context is not usable in another: a typed error
        with pytest.raises(DeviceError, match=r"cl1: .* failed: CL_"):
            devs[1].copy_rect(allocs[1], box, allocs[0], box, Box((0,), (9,)), 4)


def test_register_nvidia_icd(tmp_path, monkeypatch):
    monkeypatch.setenv("OCL_ICD_VENDORS", "unchanged")
    path = register_nvidia_icd(str(tmp_path / "icd"), lib="/x/libnvidia-opencl.so.1")
    assert open(path).read().strip() == "/x/libnvidia-opencl.so.1"
    assert os.environ["OCL_ICD_VENDORS"] == str(tmp_path / "icd")

# }}}


# {{{ transfers

def assert_holds_only(dev, a, dbox, host, regions):
    """The allocation ``a`` (box ``dbox``, zeros before) holds ``host``'s values on
    ``regions`` and zeros elsewhere; returns what it should hold, as a host array."""
    back = np.zeros(host.shape, host.dtype)
    dev.read_rect(a, dbox, dbox, back)
    want = np.zeros(host.shape, host.dtype)
    for r in regions:
        want[r.slices()] = host[r.slices()]
    np.testing.assert_array_equal(back, want)
    return want


@pytest.mark.parametrize("shape", [(12, 9), (10, 6, 7)], ids=lambda s: f"{len(s)}d")
@pytest.mark.parametrize("blocking", [True, False])
def test_two_halos_in_one_rect_copy(make, shape, blocking):
    """write_rects / read_rects of two pairable regions (a stencil's halos, planes in
    3-D) move both and nothing else, as one command; regions that do not pair go one by
    one."""
    from bbmm.devices.geometry import pairable
    rng = np.random.default_rng(5)
    dev = make(1, cap="16MiB", arena_size=1 << 16)[0]
    host = random_data(rng, shape, np.float32)
    nd = len(shape)
    dbox = Box((1,) + (1,) * (nd - 1), (shape[0] - 2,) + tuple(s - 1 for s in shape[1:]))
    pad, a = padded_alloc(dev, dbox.volume * 4, rng)
    dev.write_rect(a, dbox, dbox, np.zeros(shape, np.float32))
    rest = tuple(range(1, nd))
    first = Box((2,) + tuple(2 for _ in rest), (2,) + tuple(s - 2 for s in shape[1:]))
    second = Box((7,) + first.lo[1:], (7,) + first.hi[1:])
    assert pairable(first, second)
    calls = []
    real = dev._h2d
    dev._h2d = lambda *a, **k: calls.append(1) or real(*a, **k)
    e = dev.write_rects(a, dbox, [first, second], host, blocking=blocking)
    assert len(calls) == 1 and dev.paired(a, dbox, [first, second], host)
    dev.wait(e) if e is not None else None
    want = assert_holds_only(dev, a, dbox, host, (first, second))
    # and back out: a host array of zeros gets exactly the two regions
    out = np.zeros(shape, np.float32)
    e = dev.read_rects(a, dbox, [first, second], out, blocking=blocking)
    dev.finish()
    np.testing.assert_array_equal(out, want)
    # regions of two shapes: one copy each, still exact
    odd = Box((5,) + first.lo[1:], (5,) + tuple(h - 1 for h in first.hi[1:]))
    calls.clear()
    dev.write_rects(a, dbox, [first, odd], host, blocking=True)
    assert len(calls) == 2
    dev.free(a)
    dev.free(pad)


def test_a_refused_pair_goes_one_region_at_a_time(make):
    """A driver that refuses two regions as one rect copy (an invalid value: its own
    limits on pitches) gets them one by one, then and from then on; still exact."""
    rng = np.random.default_rng(6)
    dev = make(1, cap="16MiB", arena_size=1 << 16)[0]
    host = random_data(rng, (12, 9), np.float32)
    dbox = Box((0, 0), (11, 8))
    a = dev.alloc(dbox.volume * 4)
    dev.write_rect(a, dbox, dbox, np.zeros((12, 9), np.float32))
    first, second = Box((2, 1), (2, 7)), Box((8, 1), (8, 7))
    real, calls = dev._h2d, []

    def h2d(*args, **kw):
        calls.append(kw.get("region"))
        if kw.get("region") == (28, 2, 1):
            raise cl.Error(cl._cl._ErrorRecord(msg="refused", code=cl.status_code.INVALID_VALUE,
                                               routine="clEnqueueWriteBufferRect"))
        return real(*args, **kw)
    dev._h2d = h2d
    dev.write_rects(a, dbox, [first, second], host)
    dev.write_rects(a, dbox, [first, second], host)
    assert calls.count((28, 2, 1)) == 1 and len(calls) == 5  # tried once, then one by one
    assert not dev.paired(a, dbox, [first, second], host)
    assert_holds_only(dev, a, dbox, host, (first, second))
    dev.free(a)


def test_a_pair_past_its_buffer_by_the_drivers_bound_goes_one_by_one(make):
    """Two rows whose rect copy would span, by NVIDIA's bound (the origin plus whole
    slices, :func:`~bbmm.devices.geometry.padded_end`), past the end of their arena are
    never tried as one copy: they go one by one, exactly, and pairs stay on. (On four
    H100s the driver refused heat2d 12288^2's halo pairs so, while taking the same copy
    into a larger buffer.)"""
    from bbmm.devices.geometry import padded_end
    rng = np.random.default_rng(7)
    dev = make(1, cap="16MiB", arena_size=1 << 16)[0]
    host = random_data(rng, (12, 9), np.float32)
    dbox = Box((0, 0), (11, 8))
    nbytes = dbox.volume * 4
    # the box ends near its arena's end (two pads of at most half an arena each: an
    # arena made for a larger one would be twice its size, pool.PAIR_SLACK)
    pads = [dev.alloc(1 << 15), dev.alloc((1 << 15) - 448)]
    a = dev.alloc(nbytes)
    assert all(a.buf.int_ptr == p.buf.int_ptr for p in pads)
    assert a.offset + nbytes <= a.buf.size == 1 << 16
    dev.write_rect(a, dbox, dbox, np.zeros((12, 9), np.float32))
    first, second = Box((2, 1), (2, 7)), Box((8, 1), (8, 7))
    # the bound of the pair's one copy passes the arena's end, its last byte does not
    origin = a.offset + 2 * 36 + 4
    assert padded_end((origin, 0, 0), (28, 2, 1), (6 * 36, 0)) > a.buf.size
    assert origin + 6 * 36 + 28 <= a.buf.size
    real, calls = dev._h2d, []
    dev._h2d = lambda *args, **kw: calls.append(kw.get("region")) or real(*args, **kw)
    dev.write_rects(a, dbox, [first, second], host)
    assert len(calls) == 2 and (28, 2, 1) not in calls and dev._pairs
    assert not dev.paired(a, dbox, [first, second], host)  # counted as two commands
    assert_holds_only(dev, a, dbox, host, (first, second))
    dev.free(a)
    for p in pads:
        dev.free(p)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{len(s)}d")
def test_host_roundtrip(make, dtype, shape):
    rng = np.random.default_rng(42)
    devs = make(4, cap="16MiB", arena_size=1 << 16)
    whole = Box.from_shape(shape)
    host = random_data(rng, shape, dtype)
    item = host.itemsize
    for trial in range(6):
        dev = devs[trial % len(devs)]
        dbox = random_box(rng, whole)
        if trial == 0:
            dbox = whole  # whole array: the linear (contiguous) path
        pad, a = padded_alloc(dev, dbox.volume * item, rng)
        assert a.offset > 0
        region = random_box(rng, dbox)
        if trial == 1:
            region = dbox
        # whole host array -> device, device -> whole host array
        dev.write_rect(a, dbox, region, host)
        out = np.zeros_like(host)
        dev.read_rect(a, dbox, region, out)
        np.testing.assert_array_equal(out[region.slices()], host[region.slices()])
        mask = np.ones(shape, bool)
        mask[region.slices()] = False
        assert not out[mask].any(), "read_rect wrote outside its region"
        # staging arrays of one box (host_origin = box.lo), both ways
        sub = random_box(rng, region)
        stage = np.zeros(sub.shape, dtype)
        dev.read_rect(a, dbox, sub, stage, host_origin=sub.lo)
        np.testing.assert_array_equal(stage, host[sub.slices()])
        new = random_data(rng, sub.shape, dtype)
        dev.write_rect(a, dbox, sub, new, host_origin=sub.lo)
        back = np.zeros(dbox.shape, dtype)
        dev.read_rect(a, dbox, dbox, back, host_origin=dbox.lo)
        expect_region = host[region.slices()].copy()
        expect_region[sub.slices(region.lo)] = new
        np.testing.assert_array_equal(back[region.slices(dbox.lo)], expect_region)
        dev.free(a)
        dev.free(pad)


def test_empty_region_and_bad_arguments(make):
    (dev,) = make(1, cap="4MiB")
    box = Box((0, 0), (9, 9))
    a = dev.alloc(400)
    host = np.zeros((10, 10), np.float32)
    assert dev.write_rect(a, box, Box((3, 3), (2, 9)), host) is None
    with pytest.raises(ValueError, match="not inside"):
        dev.write_rect(a, box, Box((0, 0), (10, 9)), np.zeros((11, 10), np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        dev.read_rect(a, box, box, np.zeros((10, 20), np.float32)[:, ::2])
    with pytest.raises(ValueError, match="does not fit"):
        dev.write_rect(a, Box((0, 0), (19, 9)), box, host)


@pytest.mark.parametrize("same_arena", [True, False], ids=["same-arena", "two-arenas"])
@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int8])
def test_d2d_copy(make, same_arena, dtype):
    rng = np.random.default_rng(42)
    (dev,) = make(1, cap="32MiB", arena_size=(8 << 20) if same_arena else 1 << 16)
    kernel_copies = []
    same_buffer = dev._copy_same_buffer
    dev._copy_same_buffer = lambda buf, plan: kernel_copies.append(plan) or same_buffer(buf, plan)
    for shape in [(50,), (12, 17), (6, 7, 9), (3, 4, 5, 6)]:
        whole = Box.from_shape(shape)
        host = random_data(rng, shape, dtype)
        item = host.itemsize
        for _ in range(4):
            sbox, dbox = random_box(rng, whole), random_box(rng, whole)
            while sbox.intersect(dbox) is None:
                dbox = random_box(rng, whole)
            region = random_box(rng, sbox.intersect(dbox))
            dev.pool.trim()
            pad, s = padded_alloc(dev, sbox.volume * item, rng)
            held = [pad]
            if not same_arena:  # fill the arena: the destination goes to a second one
                held.append(dev.alloc(dev.pool.stats().largest_free))
            pad2, d = padded_alloc(dev, dbox.volume * item, rng)
            held.append(pad2)
            assert (s.buf is d.buf) == same_arena and s.offset > 0 and d.offset > 0
            dev.write_rect(s, sbox, sbox, np.ascontiguousarray(host[sbox.slices()]),
                           host_origin=sbox.lo)
            init = random_data(rng, dbox.shape, dtype)
            dev.write_rect(d, dbox, dbox, init, host_origin=dbox.lo)
            dev.copy_rect(d, dbox, s, sbox, region, item)
            out = np.zeros(dbox.shape, dtype)
            dev.read_rect(d, dbox, dbox, out, host_origin=dbox.lo)
            init[region.slices(dbox.lo)] = host[region.slices()]
            np.testing.assert_array_equal(out, init)
            for x in (s, d, *held):
                dev.free(x)
    # one arena: strided copies go through the copy kernel; two: clEnqueueCopyBufferRect
    assert bool(kernel_copies) == same_arena


def test_no_sub_buffers(make):
    rng = np.random.default_rng(42)
    (dev,) = make(1, cap="8MiB", arena_size=1 << 16)
    allocs = [dev.alloc(int(n)) for n in rng.integers(1, 40000, size=40)]
    assert any(a.offset > 0 for a in allocs) and dev.pool.stats().arenas > 1
    for a in allocs:
        assert a.buf.get_info(cl.mem_info.ASSOCIATED_MEMOBJECT) is None
        assert a.buf.offset == 0
    for arena in dev.pool._arenas:
        assert arena.buf.get_info(cl.mem_info.ASSOCIATED_MEMOBJECT) is None


_SUBPROCESS_D2D = """
import numpy as np
from bbmm.box import Box
from bbmm.devices.opencl import make_devices
dev, = make_devices(1, cap="8MiB", arena_size=1 << 16)
rng = np.random.default_rng(42)
for shape in [(16, 24), (5, 6, 7)]:
    whole = Box.from_shape(shape)
    host = rng.standard_normal(shape).astype(np.float32)
    pad = dev.alloc(1000)
    s = dev.alloc(host.nbytes)
    big = dev.alloc(dev.pool.stats().largest_free)  # the next block goes to another arena
    d = dev.alloc(host.nbytes)
    assert s.offset > 0 and s.buf is not d.buf
    dev.write_rect(s, whole, whole, host)
    region = Box((1,) * len(shape), tuple(n - 2 for n in shape))
    dev.copy_rect(d, whole, s, whole, region, 4)
    out = np.zeros_like(host)
    dev.read_rect(d, whole, region, out)
    assert (out[region.slices()] == host[region.slices()]).all()
    dev.finish()
print("OK")
"""


def test_rect_d2d_at_offsets_in_subprocess():
    """Regression guard for the PoCL 3.0/3.1 defect: a rect d2d copy touching a sub-buffer
    segfaults. Run in a child so a crash fails this test instead of killing pytest."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(_SUBPROCESS_D2D)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "OK" in r.stdout, (
        f"rect d2d copies at non-zero offsets failed (rc {r.returncode}; a negative rc is a "
        f"signal: -11 is the PoCL sub-buffer segfault):\n{r.stdout}\n{r.stderr}")

# }}}


# {{{ memory cap and errors

def test_cap_is_honoured(make):
    d0, d1 = make(2, cap="1MiB", arena_size=1 << 18)
    held = []
    with pytest.raises(DeviceMemoryError) as ei:
        for _ in range(100):
            held.append(d0.alloc(100_000))
    e = ei.value
    assert e.cap == 1 << 20 and e.asked == 100_000 and e.held == d0.pool.in_use
    assert "cl0: cannot allocate" in str(e) and "1.00 MiB held" in str(e)
    assert d0.pool.reserved <= 1 << 20 and len(held) >= 8
    # the other logical device's cap is its own
    assert [d1.alloc(100_000) for _ in range(8)]
    with pytest.raises(DeviceMemoryError, match="larger than the device allows"):
        d1.alloc(2 << 20)


def test_driver_out_of_memory_is_a_device_memory_error(make, monkeypatch):
    (dev,) = make(1, cap="64MiB", arena_size=1 << 20)
    def refuse(*args, **kw):
        raise cl.MemoryError(cl._cl._ErrorRecord(
            "clCreateBuffer failed", cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE,
            "clCreateBuffer"))

    real = cl.Buffer
    monkeypatch.setattr(cl, "Buffer", refuse)
    with pytest.raises(DeviceMemoryError, match="CL_MEM_OBJECT_ALLOCATION_FAILURE") as ei:
        dev.alloc(1000)
    assert ei.value.asked == 1 << 20 and ei.value.cap == 64 << 20
    assert dev.pool.reserved == 0 and dev.pool.stats().arenas == 0
    # with an empty arena held, the device trims it and retries once
    monkeypatch.setattr(cl, "Buffer", real)
    dev.free(dev.alloc(1000))
    calls = []

    def refuse_once(*args, **kw):
        calls.append(args)
        if len(calls) == 1:
            refuse()
        return real(*args, **kw)

    monkeypatch.setattr(cl, "Buffer", refuse_once)
    a = dev.alloc(2 << 20)
    assert len(calls) == 2 and dev.pool.stats().arenas == 1
    assert dev.pool.reserved == PAIR_SLACK * (2 << 20)  # room for a pair's bound
    dev.free(a)


def test_first_touch_failure_is_a_device_memory_error(make, monkeypatch):
    """A driver that allocates at the first enqueue (NVIDIA's) fails the touch's fill
    call: that is an allocation failure too, with the same trim-and-retry."""
    (dev,) = make(1, cap="64MiB", arena_size=1 << 20)
    real = dev._fill
    fails = [1]

    def refuse(queue, buf, *args):
        if fails[0]:
            fails[0] -= 1
            raise cl.MemoryError(cl._cl._ErrorRecord(
                "clEnqueueFillBuffer failed", cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE,
                "clEnqueueFillBuffer"))
        return real(queue, buf, *args)

    monkeypatch.setattr(dev, "_fill", refuse)
    with pytest.raises(DeviceMemoryError, match="CL_MEM_OBJECT_ALLOCATION_FAILURE"):
        dev.alloc(1000)
    assert dev.pool.reserved == 0
    a = dev.alloc(1000)  # the driver has room again
    assert dev.pool.reserved == 1 << 20
    dev.free(a)


def test_first_touch_orders_side_read_ins(make):
    """The touch is not waited for: a side-queue read-in into the arena's first bytes
    waits for its event (a fill running after the copy would zero its data)."""
    (dev,) = make(1, cap="64MiB", arena_size=1 << 20)
    dev.side = True
    a = dev.alloc(1000)
    waits = dev._reuse_waits(a)
    assert len(waits) == 1 and waits[0].command_type == cl.command_type.FILL_BUFFER
    box = Box((0, 0), (9, 24))
    host = np.arange(250, dtype=np.float32).reshape(10, 25)
    dev.write_rect(a, box, box, host, blocking=False, side=True)
    out = np.zeros_like(host)
    dev.read_rect(a, box, box, out)
    np.testing.assert_array_equal(out, host)
    dev.free(a)


def test_build_error_is_typed(make):
    (dev,) = make(1)
    with pytest.raises(DeviceError, match="CL_BUILD_PROGRAM_FAILURE"):
        dev.build("__kernel void broken(__global float *a) { a[0] = undefined_thing; }")

# }}}


# {{{ kernels and pinned memory

SCALE = """
__kernel void scale(__global float *out, long out_off, __global const float *a, long a_off,
                    int n)
{
    int i = get_global_id(0);
    if (i < n)
        out[out_off + i] = 2.0f * a[a_off + i] + 1.0f;
}
"""


def test_launch_reads_a_box_through_buffer_and_offset(make):
    rng = np.random.default_rng(42)
    devs = make(2, cap="8MiB", arena_size=1 << 20, contexts="separate")
    for dev in devs:
        prg = dev.build(SCALE)
        assert dev.build(SCALE) is prg  # cached per source
        k = dev.kernel(SCALE, "scale")
        assert dev.kernel(SCALE, "scale") is k
        box = Box((3, 5), (12, 20))
        host = rng.standard_normal((20, 30)).astype(np.float32)
        pad, a = padded_alloc(dev, box.volume * 4, rng)
        out = dev.alloc(box.volume * 4)
        dev.write_rect(a, box, box, host)
        dev.launch(k, (box.volume,), None,
                   [out.buf, np.int64(out.offset // 4), a.buf, np.int64(a.offset // 4),
                    np.int32(box.volume)])
        res = np.zeros((20, 30), np.float32)
        dev.read_rect(out, box, box, res)
        np.testing.assert_array_equal(res[box.slices()], 2 * host[box.slices()] + 1)
        dev.finish()
    k = devs[0].kernel(SCALE, "scale")
    with pytest.raises(DeviceError, match="cl0: launching scale"):
        devs[0].launch(k, (4,), None, [np.int32(1)])
    with pytest.raises(DeviceError, match=r"cl0: launching scale on \(4,\) failed: CL_INVALID"):
        devs[0].launch(k, (4,), None, [np.int32(1)] * 5)
    with pytest.raises(DeviceError, match="another device's context"):
        devs[1].launch(k, (4,), None, [out.buf, np.int64(0), a.buf, np.int64(0), np.int32(4)])


MIXED = """
__kernel void mixed(__global float *out, __global const float *a, long a_off, int s,
                    float f, double d, ulong u, __global const float *opt)
{
    const int i = get_global_id(0);
    out[i] = a[a_off + i] * f + (float)d + (float)s + (float)(u >> 40)
           + (opt ? opt[i] : -1.0f);
}
"""


def test_launch_sets_only_what_changed_and_stays_exact(make):
    """A launch sets only the arguments that differ from what the kernel object holds
    (scalars packed in one call, buffers in another): every launch of a random sequence,
    buffers swapped, scalars of six types changed or kept, a null buffer, one kernel
    object shared by two devices of one context, gives numpy's result."""
    rng = np.random.default_rng(42)
    devs = make(2, cap="8MiB", arena_size=1 << 20)
    k = devs[0].kernel(MIXED, "mixed")
    n = 16
    data = [rng.standard_normal(64).astype(np.float32) for _ in range(3)]
    bufs = [cl.Buffer(devs[0].context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                      hostbuf=x) for x in data]
    out = cl.Buffer(devs[0].context, cl.mem_flags.READ_WRITE, 4 * n)
    args = [out, bufs[0], np.int64(0), np.int32(1), np.float32(1.0), np.float64(0.0),
            np.uint64(0), None]
    res = np.empty(n, np.float32)
    for step in range(40):
        args = list(args)
        for _ in range(int(rng.integers(0, 4))):
            i = int(rng.integers(1, 8))
            if i == 1:
                args[1] = bufs[int(rng.integers(0, 3))]
            elif i == 2:
                args[2] = np.int64(rng.integers(0, 48))
            elif i == 3:
                args[3] = np.int32(rng.integers(-5, 5))
            elif i == 4:
                args[4] = np.float32(rng.integers(-3, 3) / 2)
            elif i == 5:
                args[5] = np.float64(rng.integers(0, 8) / 4)
            elif i == 6:
                args[6] = np.uint64(int(rng.integers(0, 4)) << 40)
            else:
                args[7] = None if args[7] is not None else bufs[int(rng.integers(0, 3))]
        dev = devs[step % 2]
        dev.launch(k, (n,), None, args)
        cl.enqueue_copy(dev.queue, res, out)
        a = data[bufs.index(args[1])][int(args[2]):int(args[2]) + n]
        opt = -1.0 if args[7] is None else data[bufs.index(args[7])][:n]
        want = (a * args[4] + np.float32(args[5]) + np.float32(args[3])
                + np.float32(int(args[6]) >> 40) + opt)
        np.testing.assert_allclose(res, want, rtol=1e-6, err_msg=f"launch {step}: {args}")
    with pytest.raises(DeviceError, match="argument 3 of mixed: a numpy scalar or a buffer"):
        devs[0].launch(k, (n,), None, args[:3] + [3] + args[4:])
    with pytest.raises(DeviceError, match="mixed takes 8 arguments, 7 given"):
        devs[0].launch(k, (n,), None, args[:7])
    # after a failed launch the kernel's arguments are set again in full
    devs[0].launch(k, (n,), None, args)
    cl.enqueue_copy(devs[0].queue, res, out)
    np.testing.assert_allclose(res, want, rtol=1e-6)


BUSY = """
__kernel void busy(__global float *a, int iters)
{
    float x = a[get_global_id(0)];
    for (int i = 0; i < iters; ++i)
        x = x * 0.999f + 0.5f;
    a[get_global_id(0)] = x;
}
"""


def test_dropped_host_copy_events_do_not_stop_the_host(make):
    """A host copy queued behind a long kernel returns at once, and dropping its event
    (pyopencl's NannyEvent, whose destructor waits for the copy) does not wait for the
    kernel either: the device holds the event until the copy is done (on two busy GPUs
    such waits would hold the host in step with them). The copies still land."""
    import time
    (dev,) = make(1, cap="64MiB")
    k = dev.kernel(BUSY, "busy")
    n = 1 << 14
    scratch = dev.alloc(n * 4)
    iters, took = 64, 0.0
    while took < 0.15 and iters < 1 << 24:  # a kernel of 0.15 s or more, whatever the CPU
        iters *= 4
        t = time.perf_counter()
        dev.launch(k, (n,), None, [scratch.buf, np.int32(iters)])
        dev.finish()
        took = time.perf_counter() - t
    box = Box((0, 0), (63, 63))
    region = Box((5, 7), (40, 30))                    # a rect copy each way
    host = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    back, line = np.zeros_like(host), np.zeros(64 * 64, np.float32)
    a = dev.alloc(host.nbytes)
    dev.write_rect(a, box, box, host)
    dev.finish()
    dev.launch(k, (n,), None, [scratch.buf, np.int32(iters)])
    t = time.perf_counter()
    for _ in range(3):
        dev.write_rect(a, box, region, host, blocking=False)          # events dropped
        dev.read_rect(a, box, region, back, blocking=False)
        dev.read_rect(a, box, box, line.reshape(64, 64), blocking=False)  # linear
    queued = time.perf_counter() - t
    assert queued < took / 3, f"enqueueing took {queued:.3f} s behind a {took:.3f} s kernel"
    assert any(dev._held), "the copies' events are held until they complete"
    dev.finish()
    assert not any(dev._held)
    np.testing.assert_array_equal(back[region.slices()], host[region.slices()])
    np.testing.assert_array_equal(line, host.reshape(-1))


def test_closing_a_device_forgets_its_kernels_arguments():
    """What a kernel holds is remembered per kernel object (so a launch sets only what
    changed) until its device is closed: nothing of a closed context stays referenced."""
    from bbmm.devices.kernelargs import KERNEL_ARGS as _KERNEL_ARGS
    (dev,) = make_devices(1, cap="8MiB", arena_size=1 << 20)
    k = dev.kernel(SCALE, "scale")
    out, a = dev.alloc(64), dev.alloc(64)
    dev.launch(k, (4,), None, [out.buf, np.int64(0), a.buf, np.int64(0), np.int32(4)])
    assert _KERNEL_ARGS[id(k)][0] is k
    dev.close()
    assert id(k) not in _KERNEL_ARGS


def test_pinned_arrays(make):
    (dev,) = make(1, cap="8MiB")
    p = pinned_empty(dev, (64, 32), np.float32)
    assert p.shape == (64, 32) and p.dtype == np.float32 and p.flags.c_contiguous
    assert is_pinned(p) and is_pinned(p[3:5]) and not is_pinned(np.zeros(3))
    q = pinned_empty(dev.context, 100, np.int32)
    assert q.shape == (100,) and is_pinned(q)
    p[:] = np.arange(p.size, dtype=np.float32).reshape(p.shape)
    view = p[8:40]
    del p
    import gc
    gc.collect()
    box = Box((8, 0), (39, 31))
    a = dev.alloc(view.nbytes)
    dev.write_rect(a, box, box, view, host_origin=box.lo)
    back = pinned_empty(dev, view.shape, np.float32)
    dev.read_rect(a, box, box, back, host_origin=box.lo)
    np.testing.assert_array_equal(back, np.arange(8 * 32, 40 * 32, dtype=np.float32)
                                  .reshape(32, 32))


def test_pinned_falls_back_to_numpy(make, monkeypatch):
    (dev,) = make(1, cap="8MiB")
    def fail(*args, **kw):
        raise cl.RuntimeError(cl._cl._ErrorRecord("map failed", cl.status_code.MAP_FAILURE,
                                                  "clEnqueueMapBuffer"))

    monkeypatch.setattr(cl, "enqueue_map_buffer", fail)
    a = pinned_empty(dev, (10, 10), np.float64)
    assert a.shape == (10, 10) and not is_pinned(a)


def test_contiguous_run():
    outer = Box((0, 0, 0), (3, 4, 5))
    assert contiguous_run(Box((1, 0, 0), (2, 4, 5)), outer) == 30
    assert contiguous_run(Box((1, 2, 0), (1, 3, 5)), outer) == 30 + 12
    assert contiguous_run(Box((1, 2, 1), (1, 2, 4)), outer) == 30 + 12 + 1
    assert contiguous_run(Box((1, 2, 1), (1, 3, 4)), outer) is None
    assert contiguous_run(Box((1, 0, 0), (2, 3, 5)), outer) is None

# }}}


# {{{ command line

def test_cli_devices_json(capsys):
    import json

    from bbmm.cli import main

    assert main(["devices", "--devices", "3", "--device-mem", "64MiB", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [lg["name"] for lg in doc["logical"]] == ["cl0", "cl1", "cl2"]
    assert all(lg["cap"] == 64 << 20 for lg in doc["logical"])
    assert any(d["used"] for d in doc["devices"])


def test_cli_devices_table_and_errors(capsys):
    from bbmm.cli import main

    assert main(["devices", "--devices", "2"]) == 0
    out = capsys.readouterr().out
    assert "bbmm would use 2 logical device(s)" in out and "*" in out
    assert main(["devices", "--device-mem", "lots"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bbmm: error: cannot read size 'lots'") and err.count("\n") == 1
    assert main(["devices", "--platform", "no-such-platform"]) == 1
    assert capsys.readouterr().err.startswith("bbmm: error: no OpenCL device found")
    with pytest.raises(SystemExit) as ei:
        main(["devices", "--devices", "two"])
    assert ei.value.code == 2


def test_python_m_bbmm():
    r = subprocess.run([sys.executable, "-m", "bbmm", "--version"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("bbmm ")
    r = subprocess.run([sys.executable, "-m", "bbmm", "devices", "--device-mem", "-1"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("bbmm: error:")
    assert "Traceback" not in r.stderr

# }}}


@pytest.mark.parametrize("contexts", ["shared", "separate"])
def test_asynchronous_copies_through_the_host_wait_for_each_other(make, contexts):
    """A non-blocking store from device 0 into host memory, then a load of the same
    host memory into device 1 that waits for the store's event (in one context through
    the wait list, across contexts on the host): device 1 sees device 0's data."""
    devs = make(2, cap="8MiB", arena_size=1 << 20, contexts=contexts)
    box = Box((0, 0), (63, 127))
    n = box.volume
    src = np.arange(n, dtype=np.float32).reshape(box.shape)
    a = devs[0].alloc(4 * n)
    b = devs[1].alloc(4 * n)
    devs[0].write_rect(a, box, box, src)
    host = np.zeros(box.shape, np.float32)
    row = Box((5, 3), (40, 99))  # a strided region: a rect copy
    e = devs[0].read_rect(a, box, row, host, blocking=False)
    f = devs[1].write_rect(b, box, row, host, wait_for=[e], blocking=False)
    assert f is not None
    out = np.full(box.shape, -1, np.float32)
    devs[1].read_rect(b, box, row, out)
    np.testing.assert_array_equal(out[row.slices()], src[row.slices()])


_SLOW = """__kernel void slow(__global const float *a, long off, __global float *out, int n,
                   int reps) {
  int i = get_global_id(0);
  if (i >= n) return;
  float s = 0;
  for (int r = 0; r < reps; r++) s += a[off + (i + r) % n] * 1e-6f;
  out[i] = s + a[off + i];
}"""


def test_small_read_in_behind_the_newest_kernel_takes_the_queue(make):
    """A small read-in into memory that the device's newest kernel used last could start
    only after that kernel on any queue: it goes on the device's own queue (no hops
    between queues), and the data arrives in order. Into memory an older kernel used,
    or too large to wait behind the queue's later copies, it stays on the side queue."""
    import pyopencl as cl

    from bbmm.devices import cldevice as O
    dev, = make(1, cap="4MiB", arena_size=1 << 20)
    assert dev.side
    n = 1 << 14
    box = Box((0, 0), (127, 127))
    k = dev.kernel(_SLOW, "slow")
    a = dev.alloc(4 * n)
    dev.write_rect(a, box, box, np.full(box.shape, 1.0, np.float32))
    out = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, 4 * n)
    args = [a.buf, np.int64(a.offset // 4), out, np.int32(n), np.int32(2000)]
    dev.launch(k, (n,), None, args)
    dev.free(a, dev.last)
    b = dev.alloc(4 * n)
    assert (b.buf, b.offset) == (a.buf, a.offset)
    assert not dev.side_for(b, 4 * n)
    assert dev.side_for(b, O.SIDE_SMALL + 1)
    c = dev.alloc(4 * n)  # fresh memory: nothing to wait for
    assert dev.side_for(c, 4 * n)
    # the same copy through the directory: on the device's queue, after the kernel
    from bbmm.coherence import Directory, HostCopy
    from bbmm.buffers import Copy
    from bbmm.stats import DeviceStats, Stats
    host = np.full(box.shape, 1000.0, np.float32)
    d = Directory(HostCopy({"A": host}), Stats([DeviceStats(dev.name)]))
    cp = Copy("A", box, dev, b, 4)
    d.add(cp)
    d.refresh(cp, [box], "readin", side=True)
    assert cp.last.command_queue.int_ptr == dev.queue.int_ptr
    res = np.empty(n, np.float32)
    cl.enqueue_copy(dev.queue, res, out)
    back = np.zeros(box.shape, np.float32)
    dev.read_rect(b, box, box, back)
    dev.finish()
    assert res.max() < 2.0, "the read-in overtook the kernel that used its memory"
    np.testing.assert_array_equal(back, host)
    # a newer kernel since: the memory's last user is older, the side queue pays again
    dev.launch(k, (n,), None, [c.buf, np.int64(c.offset // 4), out, np.int32(n), np.int32(1)])
    assert dev.side_for(b, 4 * n)
    dev.finish()
    for x in (b, c):
        dev.free(x)


@pytest.mark.parametrize("rect", [False, True], ids=["linear", "rect"])
def test_side_copy_waits_for_the_last_use_of_freed_memory(make, rect):
    """A side read-in into memory whose last user (a slow kernel) is still queued waits
    for it (the event given to ``free``), and a command enqueued after the side copy
    sees its data. (Without the event PoCL runs the copy first: 9 of 10 trials read the
    new values in the kernel.)"""
    import pyopencl as cl
    dev, = make(1, cap="4MiB", arena_size=1 << 20)
    assert dev.side
    n = 1 << 14
    box = Box((0, 0), (127, 127))
    region = Box((0, 0), (127, 63)) if rect else box  # half of each row: a rect copy
    k = dev.kernel(_SLOW, "slow")
    for _ in range(3):
        a = dev.alloc(4 * n)
        dev.write_rect(a, box, box, np.full(box.shape, 1.0, np.float32))
        out = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, 4 * n)
        dev.launch(k, (n,), None, [a.buf, np.int64(a.offset // 4), out, np.int32(n),
                                   np.int32(2000)])
        dev.free(a, dev.last)
        b = dev.alloc(4 * n)
        assert (b.buf, b.offset) == (a.buf, a.offset)  # the same memory, at once
        new = np.full(box.shape, 1000.0, np.float32)
        assert dev.write_rect(b, box, region, new, blocking=False, side=True) is not None
        res = np.empty(n, np.float32)
        cl.enqueue_copy(dev.queue, res, out)
        back = np.zeros(box.shape, np.float32)
        dev.read_rect(b, box, region, back)  # after the side copy on the device's queue
        dev.finish()
        assert res.max() < 2.0, "the side copy overtook the kernel that used its memory"
        np.testing.assert_array_equal(back[region.slices()], new[region.slices()])
        dev.free(b)


_FILL = """__kernel void fill(__global float *a, long off, int n, float v, int reps) {
  int i = get_global_id(0);
  if (i >= n) return;
  float s = (float)i;
  for (int r = 0; r < reps; r++) s = s * 0.999f + 1.0f;  /* slow, and stays positive */
  a[off + i] = v + (s < 0.0f ? 1.0f : 0.0f);
}"""


@pytest.mark.parametrize("pair", [False, True], ids=["one", "pair"])
def test_a_copy_out_beside_the_next_launch(make, pair):
    """A copy out given ``side`` goes on the side queue behind the device's last launch
    (it reads that launch's results), the next launch runs beside it, and every later
    command waits for it: a copy in that overwrites the region after that launch leaves
    the host the values copied out before. Two rows apart move as one rect copy on the
    side queue."""
    dev, = make(1, cap="4MiB", arena_size=1 << 20)
    assert dev.side
    rows, cols = 64, 256
    box = Box((0, 0), (rows - 1, cols - 1))
    regions = ([Box((0, 0), (0, cols - 1)), Box((rows - 1, 0), (rows - 1, cols - 1))]
               if pair else [Box((0, 0), (rows - 1, cols - 1))])
    k = dev.kernel(_FILL, "fill")
    n = rows * cols
    for trial in range(3):
        a = dev.alloc(4 * n)
        other = dev.alloc(4 * n)
        # a slow writer of the whole box: the copy out must wait for it
        dev.launch(k, (n,), None, [a.buf, np.int64(a.offset // 4), np.int32(n),
                                   np.float32(trial + 1), np.int32(3000)])
        host = np.zeros((rows, cols), np.float32)
        if pair:
            evt = dev.read_rects(a, box, regions, host, blocking=False, side=True)
        else:
            evt = dev.read_rect(a, box, regions[0], host, blocking=False, side=True)
        assert evt.command_queue.int_ptr == dev._side().int_ptr
        # the next launch (on other memory) runs beside the copy; what follows waits
        dev.launch(k, (n,), None, [other.buf, np.int64(other.offset // 4), np.int32(n),
                                   np.float32(-1), np.int32(3000)])
        dev.write_rect(a, box, box, np.full((rows, cols), 99.0, np.float32), blocking=False)
        dev.finish()
        for r in regions:
            np.testing.assert_array_equal(host[r.slices()], trial + 1.0)
        back = np.zeros((rows, cols), np.float32)
        dev.read_rect(a, box, box, back)
        assert (back == 99.0).all()
        dev.free(a)
        dev.free(other)

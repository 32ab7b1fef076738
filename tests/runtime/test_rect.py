"""Box -> OpenCL rect-copy arguments (:func:`rect_args`, :func:`split_leading`) against numpy.

Two references: :class:`NullDevice`, which copies with numpy slicing, and
:class:`EmuDevice`, which copies the way an OpenCL driver does, byte by byte
through origins, regions and pitches (``offset = origin[2]*slice_pitch +
origin[1]*row_pitch + origin[0]``, zero pitches defaulted as the spec says, and
the driver's bounds checks), on flat byte arenas with each allocation's offset
folded into the first origin component. Both must agree on every copy; boxes are
drawn with a seeded ``default_rng(42)`` in 1 to 5 dimensions.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bbmm.box import Box
from bbmm.devices.base import NullDevice, rect_args, split_leading

# {{{ the OpenCL rect semantics in numpy


def cl_rect_copy(dst: np.ndarray, src: np.ndarray, dst_origin, src_origin, region,
                 dst_pitches, src_pitches) -> None:
    """clEnqueueCopyBufferRect / Read / WriteBufferRect on flat uint8 arrays."""
    def pitches(p, what):
        row, slc = p
        if row and row < region[0]:
            raise ValueError(f"{what} row pitch {row} < region[0] {region[0]}")
        row = row or region[0]
        if slc and (slc < region[1] * row or slc % row):
            raise ValueError(f"{what} slice pitch {slc} invalid for row pitch {row}")
        return row, slc or region[1] * row

    assert all(r > 0 for r in region), region
    dr, ds = pitches(dst_pitches, "dst")
    sr, ss = pitches(src_pitches, "src")
    for arr, o, r, s, what in ((dst, dst_origin, dr, ds, "dst"), (src, src_origin, sr, ss, "src")):
        end = o[0] + region[0] - 1 + r * (o[1] + region[1] - 1) + s * (o[2] + region[2] - 1)
        if end >= arr.size:
            raise ValueError(f"{what} origin+region is outside the buffer ({end} >= {arr.size})")
    for z in range(region[2]):
        for y in range(region[1]):
            d = dst_origin[0] + (dst_origin[1] + y) * dr + (dst_origin[2] + z) * ds
            s = src_origin[0] + (src_origin[1] + y) * sr + (src_origin[2] + z) * ss
            dst[d:d + region[0]] = src[s:s + region[0]]


def host_bytes(host: np.ndarray) -> np.ndarray:
    assert host.flags.c_contiguous
    return host.reshape(-1).view(np.uint8)


def host_box(host: np.ndarray, origin) -> Box:
    lo = tuple(origin) if origin is not None else (0,) * host.ndim
    return Box(lo, tuple(l + n - 1 for l, n in zip(lo, host.shape)))


class EmuDevice(NullDevice):
    """A NullDevice whose copies go through rect_args/split_leading and cl_rect_copy."""

    def _rect(self, dst, dst_box, dst_off, src, src_box, src_off, region, itemsize):
        for (r3, d3, doff), (s3, s3box, soff) in zip(split_leading(region, dst_box, itemsize),
                                                     split_leading(region, src_box, itemsize)):
            assert r3 == s3
            do, ext, dp = rect_args(r3, d3, itemsize)
            so, ext2, sp = rect_args(r3, s3box, itemsize)
            assert ext == ext2
            cl_rect_copy(dst, src, (do[0] + dst_off + doff, do[1], do[2]),
                         (so[0] + src_off + soff, so[1], so[2]), ext, dp, sp)

    def write_rect(self, dst, dst_box, region, host, host_origin=None):
        if region.is_empty:
            return
        self._rect(dst.buf, dst_box, dst.offset, host_bytes(host), host_box(host, host_origin),
                   0, region, host.itemsize)

    def read_rect(self, src, src_box, region, host, host_origin=None):
        if region.is_empty:
            return
        self._rect(host_bytes(host), host_box(host, host_origin), 0, src.buf, src_box,
                   src.offset, region, host.itemsize)

    def copy_rect(self, dst, dst_box, src, src_box, region, itemsize):
        if region.is_empty:
            return
        self._rect(dst.buf, dst_box, dst.offset, src.buf, src_box, src.offset, region,
                   itemsize)

# }}}


def random_box(rng, outer: Box) -> Box:
    lo, hi = [], []
    for l, h in zip(outer.lo, outer.hi):
        a, b = sorted(rng.integers(l, h + 1, size=2))
        lo.append(int(a))
        hi.append(int(b))
    return Box(tuple(lo), tuple(hi))


def random_shape(rng, nd: int) -> tuple[int, ...]:
    top = {1: 40, 2: 12, 3: 7, 4: 5, 5: 4}[nd]
    return tuple(int(n) for n in rng.integers(1, top + 1, size=nd))


def random_array(rng, shape, dtype):
    return (rng.integers(-10**6, 10**6, size=shape)).astype(dtype)


DTYPES = [np.int8, np.int16, np.float32, np.float64, np.complex128]


# {{{ rect_args and split_leading directly

def test_rect_args_2d_matches_pyopencl_convention():
    outer = Box((0, 0), (9, 19))  # 10 rows of 20 floats
    region = Box((2, 3), (5, 7))
    origin, extent, pitches = rect_args(region, outer, 4)
    assert origin == (3 * 4, 2, 0)
    assert extent == (5 * 4, 4, 1)
    assert pitches == (20 * 4, 0)


def test_rect_args_3d_and_offsets_of_outer():
    outer = Box((10, -5, 3), (13, 4, 9))  # shape 4 x 10 x 7
    region = Box((11, -3, 5), (12, 0, 8))
    origin, extent, pitches = rect_args(region, outer, 8)
    assert origin == (2 * 8, 2, 1)
    assert extent == (4 * 8, 4, 2)
    assert pitches == (7 * 8, 7 * 8 * 10)


def test_rect_args_1d_uses_default_pitches():
    assert rect_args(Box((4,), (9,)), Box((2,), (30,)), 2) == ((4, 0, 0), (12, 1, 1), (0, 0))


def test_rect_args_rejects_bad_input():
    with pytest.raises(ValueError, match="at most 3"):
        rect_args(Box((0,) * 4, (1,) * 4), Box((0,) * 4, (1,) * 4), 4)
    with pytest.raises(ValueError, match="not inside"):
        rect_args(Box((0, 0), (3, 3)), Box((1, 1), (5, 5)), 4)


@pytest.mark.parametrize("nd", [1, 2, 3, 4, 5])
def test_rect_args_offsets_address_the_region(nd):
    """Every element of the region, addressed through origin/extent/pitches and
    split_leading's offset, is the element numpy slicing finds."""
    rng = np.random.default_rng(42)
    for _ in range(25):
        shape = random_shape(rng, nd)
        outer = random_box(rng, Box((-3,) * nd, tuple(n - 4 for n in shape))).shift((1,) * nd)
        outer = Box(outer.lo, tuple(l + n - 1 for l, n in zip(outer.lo, shape)))
        region = random_box(rng, outer)
        item = int(rng.choice([1, 2, 4, 8]))
        arr = np.arange(outer.volume, dtype=np.int64).reshape(outer.shape)
        want = arr[region.slices(outer.lo)].reshape(-1, *region.shape[-min(nd, 3):])
        pieces = list(split_leading(region, outer, item))
        assert len(pieces) == (int(np.prod(region.shape[:nd - 3])) if nd > 3 else 1)
        for k, (r3, o3, off) in enumerate(pieces):
            assert r3.ndim == o3.ndim == min(nd, 3) and off % item == 0
            origin, extent, (rp, sp) = rect_args(r3, o3, item)
            rp = rp or extent[0]
            sp = sp or extent[1] * rp
            got = np.empty((extent[2], extent[1], extent[0] // item), dtype=np.int64)
            for z in range(extent[2]):
                for y in range(extent[1]):
                    b = off + origin[0] + (origin[1] + y) * rp + (origin[2] + z) * sp
                    assert b % item == 0
                    got[z, y] = arr.reshape(-1)[b // item:b // item + extent[0] // item]
            np.testing.assert_array_equal(got.reshape(want[k].shape), want[k])


def test_split_leading_covers_region_once():
    outer = Box((0, 1, 0, 0, 2), (3, 4, 2, 5, 6))
    region = Box((1, 2, 0, 1, 3), (2, 4, 1, 4, 6))
    pieces = list(split_leading(region, outer, 4))
    assert len(pieces) == 2 * 3
    assert len({off for _, _, off in pieces}) == 6
    slab = 3 * 6 * 5 * 4  # bytes of one outer 3-D slab
    assert sorted(off // slab for _, _, off in pieces) == sorted(
        (i - 0) * 4 + (j - 1) for i in (1, 2) for j in (2, 3, 4))

# }}}


# {{{ EmuDevice against NullDevice

def pair(arena_size=1 << 16):
    return NullDevice(0, cap=1 << 22, arena_size=arena_size), \
        EmuDevice(1, cap=1 << 22, arena_size=arena_size)


def alloc_pair(devs, nbytes, rng):
    """Same-offset allocations on both devices, after a random pad (non-zero offsets)."""
    pad = int(rng.integers(1, 1000))
    out = []
    for d in devs:
        d.alloc(pad)
        out.append(d.alloc(nbytes))
    assert out[0].offset == out[1].offset > 0
    return out


@pytest.mark.parametrize("nd", [1, 2, 3, 4, 5])
def test_emulated_rect_copies_match_numpy_slicing(nd):
    rng = np.random.default_rng(42)
    null, emu = pair()
    for trial in range(30):
        dtype = DTYPES[trial % len(DTYPES)]
        shape = random_shape(rng, nd)
        whole = Box.from_shape(shape)
        host = random_array(rng, shape, dtype)
        item = host.itemsize
        dbox = random_box(rng, whole)
        a_null, a_emu = alloc_pair((null, emu), dbox.volume * item, rng)
        a_null.buf[:] = a_emu.buf[:] = 0xA5
        region = random_box(rng, dbox)
        for d, a in ((null, a_null), (emu, a_emu)):
            d.write_rect(a, dbox, region, host)
        np.testing.assert_array_equal(a_null.buf, a_emu.buf)
        outs = [np.zeros_like(host), np.zeros_like(host)]
        null.read_rect(a_null, dbox, region, outs[0])
        emu.read_rect(a_emu, dbox, region, outs[1])
        np.testing.assert_array_equal(outs[0], outs[1])
        np.testing.assert_array_equal(outs[1][region.slices()], host[region.slices()])
        # a staging array of one sub-box (host_origin = its lo), both directions
        sub = random_box(rng, region)
        stage = [np.zeros(sub.shape, dtype), np.zeros(sub.shape, dtype)]
        null.read_rect(a_null, dbox, sub, stage[0], host_origin=sub.lo)
        emu.read_rect(a_emu, dbox, sub, stage[1], host_origin=sub.lo)
        np.testing.assert_array_equal(stage[1], host[sub.slices()])
        np.testing.assert_array_equal(stage[0], stage[1])
        new = random_array(rng, sub.shape, dtype)
        null.write_rect(a_null, dbox, sub, new, host_origin=sub.lo)
        emu.write_rect(a_emu, dbox, sub, new, host_origin=sub.lo)
        np.testing.assert_array_equal(a_null.buf, a_emu.buf)
        # device-to-device between two allocations with different boxes
        sbox = dbox
        tbox = random_box(rng, whole)
        while tbox.intersect(sbox) is None:
            tbox = random_box(rng, whole)
        cregion = random_box(rng, tbox.intersect(sbox))
        t_null, t_emu = alloc_pair((null, emu), tbox.volume * item, rng)
        t_null.buf[:] = t_emu.buf[:] = 0x5A
        null.copy_rect(t_null, tbox, a_null, sbox, cregion, item)
        emu.copy_rect(t_emu, tbox, a_emu, sbox, cregion, item)
        np.testing.assert_array_equal(t_null.buf, t_emu.buf)
        view = emu.view(t_emu, tbox, dtype)
        np.testing.assert_array_equal(view[cregion.slices(tbox.lo)],
                                      null.view(a_null, sbox, dtype)[cregion.slices(sbox.lo)])
        for d in (null, emu):
            d.pool.close()


def test_emulator_catches_out_of_bounds():
    buf = np.zeros(100, np.uint8)
    with pytest.raises(ValueError, match="outside the buffer"):
        cl_rect_copy(buf, buf.copy(), (0, 0, 0), (90, 0, 0), (20, 1, 1), (0, 0), (0, 0))
    with pytest.raises(ValueError, match="row pitch"):
        cl_rect_copy(buf, buf.copy(), (0, 0, 0), (0, 0, 0), (20, 2, 1), (10, 0), (0, 0))

# }}}


# {{{ the OpenCL device's own copy plan, when pyopencl is importable (no device needed)

def test_opencl_rect_plan_matches_numpy():
    import bbmm.devices.opencl as opencl  # pyopencl is a dependency: no device needed here
    rng = np.random.default_rng(42)
    for nd in (1, 2, 3, 4, 5):
        for _ in range(10):
            shape = random_shape(rng, nd)
            whole = Box.from_shape(shape)
            host = random_array(rng, shape, np.float32)
            abox = random_box(rng, whole)
            region = random_box(rng, abox)
            a_off = int(rng.integers(0, 64)) * 4
            arena = np.zeros(a_off + abox.volume * 4 + 16, np.uint8)
            for ao, bo, ext, ap, bp in opencl.rect_plan(region, abox, a_off, whole, 0, 4):
                cl_rect_copy(arena, host_bytes(host), ao, bo, ext, ap, bp)
            got = arena[a_off:a_off + abox.volume * 4].view(np.float32).reshape(abox.shape)
            np.testing.assert_array_equal(got[region.slices(abox.lo)], host[region.slices()])
            start = opencl.contiguous_run(region, abox)
            flat = np.arange(abox.volume).reshape(abox.shape)[region.slices(abox.lo)]
            contiguous = bool((np.diff(flat.reshape(-1)) == 1).all())
            assert (start is not None) == contiguous
            if start is not None:
                assert start == flat.reshape(-1)[0]

# }}}


def test_2d_fast_paths_agree_with_the_general_rule():
    """``rect_args`` and ``contiguous_run`` take unrolled paths for 2-D boxes; embedded
    as 3-D boxes with one leading index they take the general one: same copies."""
    from bbmm.devices import opencl
    rng = np.random.default_rng(23)
    for _ in range(3000):
        lo = rng.integers(-5, 5, size=2)
        shape = rng.integers(1, 7, size=2)
        outer = Box(tuple(int(v) for v in lo), tuple(int(v) for v in lo + shape - 1))
        a = [int(rng.integers(outer.lo[d], outer.hi[d] + 1)) for d in range(2)]
        b = [int(rng.integers(a[d], outer.hi[d] + 1)) for d in range(2)]
        region = Box(tuple(a), tuple(b))
        item = int(rng.choice([1, 4, 8]))
        o3, r3 = Box((0,) + outer.lo, (0,) + outer.hi), Box((0,) + region.lo, (0,) + region.hi)
        origin, extent, (row, _) = rect_args(region, outer, item)
        origin3, extent3, (row3, _) = rect_args(r3, o3, item)
        assert (origin, extent, row) == (origin3, extent3, row3), (region, outer)
        assert opencl.contiguous_run(region, outer) == opencl.contiguous_run(r3, o3)
        # and against numpy: a contiguous run is one slice of the flattened array
        idx = np.arange(outer.volume).reshape(outer.shape)[region.slices(outer.lo)].ravel()
        run = opencl.contiguous_run(region, outer)
        contiguous = bool(np.all(np.diff(idx) == 1))
        assert (run is not None) == contiguous and (run is None or run == idx[0])


class _QueuedEvent:
    """A command of an in-order queue; its status reads are counted."""
    reads = 0

    def __init__(self, done: bool):
        self.done = done

    @property
    def command_execution_status(self) -> int:
        _QueuedEvent.reads += 1
        return 0 if self.done else 1


@given(st.integers(0, 300), st.integers(0, 300))
def test_complete_prefix_bisects_an_in_order_queue(done, running):
    """The complete commands of an in-order queue are a prefix: its length, found with
    a logarithmic number of status queries (each is a driver call)."""
    from bbmm.devices.base import complete_prefix
    events = [_QueuedEvent(True) for _ in range(done)] + \
        [_QueuedEvent(False) for _ in range(running)]
    _QueuedEvent.reads = 0
    assert complete_prefix(events, lambda e: e.command_execution_status == 0) == done
    assert _QueuedEvent.reads <= (done + running).bit_length()


# {{{ two regions as one rect copy

@given(st.data())
def test_pair_plan_moves_exactly_the_two_regions(data):
    """Two pairable regions (a stencil's two halos, its two edge rows) as one rect copy
    with the pair as third dimension: through the driver's rules (the emulator), it
    moves both regions and nothing between them, either way."""
    from bbmm.devices.geometry import padded_end, pair_plan, pairable
    nd = data.draw(st.sampled_from((2, 3)))
    shape = tuple(data.draw(st.integers(1 if d else 3, 7)) for d in range(nd))
    whole = Box.from_shape(shape)
    # the copy's box: a block of whole-array rows or planes, narrowed after dimension 0
    lo0 = data.draw(st.integers(0, shape[0] - 3))
    hi0 = data.draw(st.integers(lo0 + 2, shape[0] - 1))
    lo = [lo0] + [data.draw(st.integers(0, s - 1)) for s in shape[1:]]
    hi = [hi0] + [data.draw(st.integers(l, s - 1)) for l, s in zip(lo[1:], shape[1:])]
    abox = Box(tuple(lo), tuple(hi))
    thick = 1 if nd == 3 else data.draw(st.integers(1, (hi0 - lo0 + 1) // 2))
    a0 = data.draw(st.integers(lo0, hi0 - 2 * thick + 1))
    b0 = data.draw(st.integers(a0 + thick, hi0 - thick + 1))
    inner_lo = [data.draw(st.integers(l, h)) for l, h in zip(lo[1:], hi[1:])]
    inner_hi = [data.draw(st.integers(l, h)) for l, h in zip(inner_lo, hi[1:])]
    first = Box((a0, *inner_lo), (a0 + thick - 1, *inner_hi))
    second = Box((b0, *inner_lo), (b0 + thick - 1, *inner_hi))
    assert pairable(first, second) and not pairable(second, first)
    rng = np.random.default_rng(7)
    host = random_array(rng, shape, np.float32)
    a_off = 4 * data.draw(st.integers(0, 8))
    arena = np.zeros(a_off + abox.volume * 4, np.uint8)
    ao, bo, ext, ap, bp = pair_plan(first, second, abox, a_off, whole, 0, 4)
    # NVIDIA's bound on a side (padded_end) lies past every byte the copy touches there
    row = ap[0] or ext[0]
    sl = ap[1] or ext[1] * row
    last = ao[0] + ao[1] * row + ao[2] * sl + (ext[2] - 1) * sl + (ext[1] - 1) * row + ext[0]
    assert last <= padded_end(ao, ext, ap) and last <= len(arena)
    cl_rect_copy(arena, host_bytes(host), ao, bo, ext, ap, bp)          # write
    got = arena[a_off:].view(np.float32).reshape(abox.shape)
    want = np.zeros(abox.shape, np.float32)
    for r in (first, second):
        want[r.slices(abox.lo)] = host[r.slices()]
    np.testing.assert_array_equal(got, want)
    back = np.zeros(shape, np.float32)
    cl_rect_copy(host_bytes(back), arena, bo, ao, ext, bp, ap)           # read
    want = np.zeros(shape, np.float32)
    for r in (first, second):
        want[r.slices()] = host[r.slices()]
    np.testing.assert_array_equal(back, want)


def test_pairable_needs_one_shape_apart_along_dimension_0():
    from bbmm.devices.geometry import pairable
    row = lambda r, a=1, b=8: Box((r, a), (r, b))  # noqa: E731
    assert pairable(row(0), row(9))
    assert not pairable(row(0), row(9, 1, 7))         # another extent
    assert not pairable(row(0), row(9, 2, 9))         # another start after dimension 0
    assert not pairable(row(4), row(4))               # the same row
    assert not pairable(Box((0, 0), (2, 8)), Box((2, 0), (4, 8)))  # overlapping
    assert pairable(Box((0, 0), (1, 8)), Box((2, 0), (3, 8)))      # adjacent slabs
    assert not pairable(Box((0, 0, 0), (1, 3, 3)), Box((5, 0, 0), (6, 3, 3)))  # thick planes
    assert pairable(Box((0, 0, 0), (0, 3, 3)), Box((5, 0, 0), (5, 3, 3)))
    assert not pairable(Box((0,), (3,)), Box((5,), (8,)))  # 1-D
    assert not pairable(Box((0, 0, 0, 0), (0, 1, 1, 1)), Box((2, 0, 0, 0), (2, 1, 1, 1)))

# }}}

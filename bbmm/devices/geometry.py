"""Rect geometry of copies: where a region of a row-major box starts when it is one
contiguous run (:func:`contiguous_run`), the OpenCL rect copies that move a region between
two row-major arrays (:func:`rect_plan`), the checks of a copy's boxes, and the strided-copy
kernel that moves a region between two blocks of one buffer.

Pure functions, unit-tested without OpenCL.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..box import Box
from .base import Allocation, pairable, rect_args, split_leading

__all__ = ["contiguous_run", "rect_plan", "pairable", "pair_plan", "padded_end", "Rect",
           "COPY_KERNELS",
           "host_box", "check_ndim", "check_inside"]


def contiguous_run(region: Box, outer: Box) -> int | None:
    """Element index in ``outer``'s row-major layout where ``region`` starts, if
    ``region``'s elements are one contiguous run there (else None).

    That is the case when ``region`` spans ``outer`` fully in every dimension after
    some dimension ``k`` and has extent 1 in every dimension before ``k``.
    """
    lo, olo, ohi = region.lo, outer.lo, outer.hi
    if len(lo) == 2:  # unrolled: a plan is made per moving row or column (LU, Floyd)
        hi = region.hi
        if lo[1] == olo[1] and hi[1] == ohi[1] or lo[0] == hi[0]:
            return (lo[0] - olo[0]) * (ohi[1] - olo[1] + 1) + lo[1] - olo[1]
        return None
    shape = outer.shape
    rs = region.shape
    nd = len(shape)
    k = nd - 1
    while k > 0 and rs[k] == shape[k]:
        k -= 1
    for d in range(k):
        if rs[d] != 1:
            return None
    start = 0
    for d in range(nd):
        start = start * shape[d] + (region.lo[d] - outer.lo[d])
    return start


Rect = tuple[int, int, int]


def rect_plan(region: Box, a_box: Box, a_offset: int, b_box: Box, b_offset: int,
              itemsize: int) -> list[tuple[Rect, Rect, Rect, tuple[int, int], tuple[int, int]]]:
    """The rect copies moving ``region`` between two row-major arrays: ``a`` holding
    ``a_box`` at byte ``a_offset`` of its buffer, ``b`` holding ``b_box`` at ``b_offset``.

    Returns ``(a_origin, b_origin, extent, a_pitches, b_pitches)`` per copy in OpenCL
    order (bytes first): one copy for up to 3 dimensions, one per leading index
    beyond (:func:`~bbmm.devices.base.split_leading`). Byte offsets are folded into
    the first origin component (no sub-buffers).
    """
    out = []
    for (r3, a3, aoff), (_, b3, boff) in zip(split_leading(region, a_box, itemsize),
                                              split_leading(region, b_box, itemsize)):
        ao, ext, ap = rect_args(r3, a3, itemsize)
        bo, _, bp = rect_args(r3, b3, itemsize)
        out.append(((ao[0] + a_offset + aoff, ao[1], ao[2]),
                    (bo[0] + b_offset + boff, bo[1], bo[2]), ext, ap, bp))
    return out


def pair_plan(first: Box, second: Box, a_box: Box, a_offset: int, b_box: Box, b_offset: int,
              itemsize: int) -> tuple[Rect, Rect, Rect, tuple[int, int], tuple[int, int]]:
    """The one rect copy moving two :func:`pairable` regions between two row-major arrays
    (as :func:`rect_plan`'s items): the pair is the copy's third dimension, its pitch on
    each side the distance between the two regions there (two single rows: its second,
    their distance the row pitch)."""
    step = second.lo[0] - first.lo[0]
    ao, ext, ap = rect_args(first, a_box, itemsize)
    bo, _, bp = rect_args(first, b_box, itemsize)
    if len(first.lo) == 2 and ext[1] == 1:
        # two rows: the pair is the copy's rows, a row pitch of ``step`` rows (no slices),
        # the origin's row (in units of the old pitch) moved into the byte offset
        return ((ao[0] + ao[1] * ap[0] + a_offset, 0, 0),
                (bo[0] + bo[1] * bp[0] + b_offset, 0, 0),
                (ext[0], 2, 1), (step * ap[0], 0), (step * bp[0], 0))
    # bytes between consecutive indices of dimension 0: a row in 2-D, a plane in 3-D,
    # whose origin (in units of the old slice pitch) moves into the byte offset
    if len(first.lo) == 2:
        a0, b0 = ap[0], bp[0]
    else:
        a0, b0 = ap[1], bp[1]
        ao, bo = (ao[0] + ao[2] * a0, ao[1], 0), (bo[0] + bo[2] * b0, bo[1], 0)
    return ((ao[0] + a_offset, ao[1], ao[2]), (bo[0] + b_offset, bo[1], bo[2]),
            (ext[0], ext[1], 2), (ap[0], step * a0), (bp[0], step * b0))


def padded_end(origin: Sequence[int], region: Sequence[int], pitches: Sequence[int]) -> int:
    """The byte past one side of a rect copy as NVIDIA's OpenCL driver bounds it: the
    origin plus ``region[2]`` whole slices (a pitch of 0: the region's own). It refuses a
    copy whose bound passes the end of its buffer (``CL_INVALID_VALUE``), although the
    copy's last slice ends sooner: two halo rows 3073 rows apart in an arena of 5461 rows
    (heat2d 12288^2 over four H100s) span 2 x 3073 rows by this bound."""
    row = pitches[0] or region[0]
    sl = pitches[1] or region[1] * row
    return origin[0] + origin[1] * row + origin[2] * sl + region[2] * sl


COPY_KERNELS = """
#define BBMM_COPY(T, NAME) \\
__kernel void NAME(__global T *dst, ulong dst_off, ulong dst_row, ulong dst_slice, \\
                   __global const T *src, ulong src_off, ulong src_row, ulong src_slice) \\
{ \\
    ulong x = get_global_id(0), y = get_global_id(1), z = get_global_id(2); \\
    dst[dst_off + z * dst_slice + y * dst_row + x] = \\
        src[src_off + z * src_slice + y * src_row + x]; \\
}
BBMM_COPY(uchar, _bbmm_copy_1)
BBMM_COPY(ushort, _bbmm_copy_2)
BBMM_COPY(uint, _bbmm_copy_4)
BBMM_COPY(ulong, _bbmm_copy_8)
BBMM_COPY(uint4, _bbmm_copy_16)
"""


def host_box(host: np.ndarray, host_origin: Sequence[int] | None, region: Box) -> Box:
    if not isinstance(host, np.ndarray) or not host.flags.c_contiguous:
        raise ValueError("host arrays for rect copies must be C-contiguous numpy arrays")
    check_ndim(host, region)
    lo = tuple(int(o) for o in host_origin) if host_origin is not None else (0,) * host.ndim
    return Box._new(lo, tuple(l + s - 1 for l, s in zip(lo, host.shape)))


def check_ndim(host: np.ndarray, region: Box) -> None:
    if host.ndim != len(region.lo):
        raise ValueError(f"host array has {host.ndim} dimensions, region {region} {region.ndim}")


def check_inside(region: Box, box: Box, a: Allocation, itemsize: int, what: str) -> None:
    if not region.issubset(box):
        raise ValueError(f"region {region} is not inside the {what} box {box}")
    if box.volume * itemsize > a.nbytes:
        raise ValueError(f"{what} box {box} of {box.volume * itemsize} bytes does not fit "
                         f"its allocation of {a.nbytes} bytes")

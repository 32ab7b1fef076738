"""Support code for generated host drivers: tile distribution, kernel launch, progress.

A generated driver (``codegen/host.py`` writes it) holds only what is specific to
its program: the serial loops, the closed-form boxes per tile and the kernel
source. Everything generic lives here so drivers stay short and readable.
"""
from __future__ import annotations

import re
import sys
import threading
import time
from typing import Any, Callable, Sequence

import numpy as np

from .config import KernelOptions, local_sizes  # noqa: F401 - local_sizes: re-exported
# the tile grid, which generated drivers import from here
from .grid import (device_of, once_grid, once_tiles, tile_range, tiles_covering,  # noqa: F401
                   whole_tile)
from .devices.base import MEMO_SIZE, Device
from .runtime import TileBuffers, int32, kernel_args, lean_args, lean_count, lean_slots
from .tiles import INT32


def kernel_options(rt: Any) -> KernelOptions:
    """The kernel options of the run of runtime ``rt`` (its :class:`~bbmm.config.
    RuntimeConfig`, read once where the run was set up; the local runtime of a
    :class:`~bbmm.distributed.DistributedRuntime`); the defaults for a runtime without
    one (a dry run's stand-in, :class:`bbmm.run._Footprint`). A generated driver takes
    them once per run and passes them to every :func:`launch`."""
    config = getattr(rt, "config", None)
    if config is None:
        config = getattr(getattr(rt, "local", None), "config", None)
    return config.kernels if config is not None else _DEFAULT


_DEFAULT = KernelOptions()
"""The options of a launch or prebuild that is given none: the defaults, not the
environment (which only a run's :class:`~bbmm.config.RuntimeConfig` reads)."""


STAGE_LANES = 32
"""Band points per work-group of a staged kernel (``BBMM_SL``: an NVIDIA warp)."""


def stage_shape(extent: int, units: int, max_group: int,
                fixed: tuple[int, int] | None = None) -> tuple[int, int]:
    """(G, C) of a staged launch over ``extent`` band points: 16 rows of work-items
    staging chunks of 128 trips, 32 rows where the launch has fewer groups than twice
    the device's ``units`` (mvt's 2048 columns on 132 multiprocessors), never more than
    the device allows in one group (on one H200, 32x4 and 16x8 loads per work-item were
    the fastest: docs/performance.md); ``fixed``: a shape :attr:`KernelOptions.stage`
    sets."""
    if fixed and fixed != (0, 0):
        g, c = fixed
    else:
        groups = -(-extent // STAGE_LANES)
        g, c = (32 if units and groups < 2 * units else 16), 128
    return max(1, min(g, max_group // STAGE_LANES)), c


def parse_points(spec: str) -> list[tuple[int, int]]:
    """``"2x1,2x4"`` -> ``[(2, 1), (2, 4)]``: points per work-item as
    (:attr:`~KernelOptions.coarsen`, :attr:`~KernelOptions.coarsen1`) pairs, for
    benchmarks that compare them."""
    try:
        out = [tuple(int(x) for x in item.lower().split("x"))
               for item in spec.replace(" ", "").split(",") if item]
    except ValueError:
        out = [()]
    if any(len(co) != 2 or min(co) < 1 for co in out):
        raise ValueError(f"{spec!r}: give shapes such as 2x1,2x4")
    return out  # type: ignore[return-value]


def serial_range(rt: Any, first: int, stop: int) -> Sequence[int]:
    """The iterations ``first .. stop - 1`` of a serial loop, as the driver runs them: all
    of them, or, on a runtime that samples (the tile's dry run,
    :class:`bbmm.run._Footprint`), the few it picks spread over the whole range, so that
    a footprint that grows or shrinks with the serial iterators is seen at its ends."""
    sample = getattr(rt, "sample", None)
    return range(first, stop) if sample is None else sample(first, stop)


def scalars(values: Sequence[Any]) -> list[Any]:
    """Kernel scalar arguments: Python ints become OpenCL ``int``; numpy floats stay typed."""
    return [int32(v) if isinstance(v, int) else np.int32(v) if isinstance(v, np.integer) else v
            for v in values]


def launch(dev: Device, tb: TileBuffers, source: str, name: str, scalars: Sequence[Any],
           grid: Sequence[tuple[int, int]], cl_band: Sequence[int],
           arrays: Sequence[tuple[str, int, int]], local: Sequence[int] | None = None,
           coarsen: bool = False, staged: bool = False, blocked: bool = False,
           rows: tuple[int, int] | None = None, options: KernelOptions | None = None) -> Any:
    """Launch one tile's kernel (``rows``: only its points whose tiled iterator, band loop
    0, lies in ``[rows[0], rows[1]]``, or, given as four bounds, in ``[rows[0], rows[1]]``
    or ``[rows[2], rows[3]]``: the rows writing the flow-out at both ends of a tile, in one
    launch, of a kernel over a band of two loops or more).

    ``scalars`` are the leading arguments (parameters, host iterators, lb, ub);
    ``grid[d] = (lo, hi)`` is band loop ``d``'s iterator range over the tile, whose
    ``lo`` values are passed next (the iterator of work-item 0); ``cl_band[c]`` is the
    band loop mapped to OpenCL dimension ``c``; ``arrays`` are ``(name, slots, ndim)``
    in kernel argument order. With ``coarsen`` (the kernel takes ``BBMM_CO``) each
    work-item runs :attr:`~KernelOptions.coarsen` points of OpenCL dimension 0 and, for
    a band of two or more loops, :attr:`~KernelOptions.coarsen1` of dimension 1. With
    ``staged`` (the kernel takes ``BBMM_SG``) and :attr:`~KernelOptions.stage` not off,
    it runs as work-groups of :data:`STAGE_LANES` x G work-items (:func:`stage_shape`).
    With ``blocked`` each runs a register block of :attr:`~KernelOptions.block` points.
    ``options``: the run's (:func:`kernel_options`); None: the defaults.
    """
    fast = None
    if type(grid) is tuple and (local is None or type(local) is tuple):
        # a tile launched again on the same boxes (a replayed iteration, a tile list built
        # once per regime) differs only in its scalars: the rest is looked up
        fast = (dev, name, source, grid, local, rows)
        got = tb.launches.get(fast)
        if got is None and tb.before is not None:
            got = _carried(tb, fast, tb.before.launches.get(fast), arrays, len(grid),
                           _lean(source, options))
        if got is not None and got[0] is (_DEFAULT if options is None else options):
            if rows is not None:
                scalars = _rows_scalars(scalars, (rows[0], rows[-1]))
            else:
                tb.prepared = (dev, grid, got[1], got[2], got[3], got[4], regridder,
                               (cl_band, coarsen, blocked, staged, local, options), name,
                               got[7])
            return dev.launch(got[1], got[2], got[3], [*scalars, *got[4]])
        if rows is not None and grid:
            return _launch_rows(dev, tb, source, name, scalars, grid, cl_band, arrays, local,
                                coarsen, staged, blocked, rows, options, fast)
    o, knl, gsize, lsize, args, narr, small = _plan_launch(
        dev, tb, source, name, scalars, grid, cl_band, arrays, local, coarsen, staged,
        blocked, rows, options)
    if fast is not None:
        tail = args[len(scalars):]
        bare = _bare(tb, arrays, source, o)
        tb.launches[fast] = (o, knl, gsize, lsize, tail, small, narr, bare)
        if rows is None:
            tb.prepared = (dev, grid, knl, gsize, lsize, tail, regridder,
                           (cl_band, coarsen, blocked, staged, local, options), name, bare)
    return dev.launch(knl, gsize, lsize, args)


def _bare(tb: TileBuffers, arrays: Sequence[tuple], source: str, o: KernelOptions
          ) -> frozenset[str]:
    """The arrays whose pieces a lean launch on ``tb`` passes without their bounds
    (:func:`_layout`)."""
    if not _lean(source, o):
        return frozenset()
    return frozenset(e[0] for e in arrays
                     if len(e) > 3 and lean_slots(tb, e[0], e[1], len(e[3])) >= 0)


def _launch_rows(dev: Device, tb: TileBuffers, source: str, name: str,
                 scalars: Sequence[Any], grid: tuple[tuple[int, int], ...],
                 cl_band: Sequence[int], arrays: Sequence[tuple[str, int, int]],
                 local: tuple[int, ...] | None, coarsen: bool, staged: bool, blocked: bool,
                 rows: tuple[int, ...], options: KernelOptions | None, fast: tuple) -> Any:
    """:func:`launch` on rows of a tile that it has not launched on these buffers, looked
    up by the extent of its NDRange rather than by the rows: the rows that write Floyd's
    row ``k + 1``, and those either side of it, move every ``k`` while the launch keeps
    its shape. Only the tile bounds, the grid's origins and the gap's arguments are
    worked out anew; the kernel, NDRange and array arguments are the last launch's of
    that shape on these buffers (or on the same tile at its last replay, its copies
    taking the same kernel variant). Kept under ``fast`` too, for these rows again."""
    o = _DEFAULT if options is None else options
    g, gaps = _narrow(grid, rows, _points(coarsen, len(grid), blocked, o), o.align, cl_band)
    key = ("rows", dev, name, source, local, tuple(h - l for l, h in g), gaps is not None)
    got = tb.launches.get(key)
    if got is None and tb.before is not None:
        old = tb.before.launches.get(key)
        if old is not None:
            new: list[Any] = []
            if (_array_args(tb, arrays, new, _lean(source, o)) == old[5]
                    and len(new) == len(old[4])):
                got = tb.launches[key] = (*old[:4], new, old[5])
    if got is None or got[0] is not o:
        o, knl, gsize, lsize, args, narr, small = _plan_launch(
            dev, tb, source, name, scalars, grid, cl_band, arrays, local, coarsen, staged,
            blocked, rows, options)
        at = len(scalars) + len(grid)
        tb.launches[key] = (o, knl, gsize, lsize, args[at:at + narr], small)
    else:
        knl, gsize, lsize, narr, small = got[1], got[2], got[3], len(got[4]), got[5]
        args = _rows_scalars(scalars, (rows[0], rows[-1]))
        args += [int32(lo) for lo, _ in g]
        args += got[4]
        if gaps is not None:
            args += gaps
    tb.launches[fast] = (o, knl, gsize, lsize, args[len(scalars):], small, narr,
                         _bare(tb, arrays, source, o))
    return dev.launch(knl, gsize, lsize, args)


def _array_args(tb: TileBuffers, arrays: Sequence[tuple], args: list[Any],
                lean: bool = False) -> bool:
    """Append the arrays' kernel arguments of a launch on ``tb`` to ``args``, in kernel
    order (``lean``: of a lean build, :func:`_layout`); whether every copy of ``arrays``
    in ``tb`` has its element offsets in 32-bit ints: the kernel variant their launch
    takes (:func:`_kernel`'s ``small``)."""
    fits = True
    pieces = tb.pieces
    for entry in arrays:
        a = entry[0]
        ns = lean_slots(tb, a, entry[1], len(entry[3])) if lean and len(entry) > 3 else -1
        if ns < 0:
            args += kernel_args(tb, a, entry[1], entry[2])
        else:
            args += lean_args(tb, a, ns, entry[2])
        if fits:
            for _, c in pieces.get(a, ()):
                if not c.fits_int():
                    fits = False
                    break
    return fits


def _carried(tb: TileBuffers, fast: tuple, got: tuple | None,
             arrays: Sequence[tuple[str, int, int]], ngrid: int, lean: bool) -> tuple | None:
    """The launch ``got`` that ``tb.before`` (the same tile at the last replay, its
    accesses in the same slots, other copies) kept under ``fast``, for ``tb``: its
    kernel, NDRange and arguments with ``tb``'s array arguments, where ``tb``'s copies
    take the same kernel variant; else None. Kept in ``tb``. A row ``k`` replayed up to
    a shift is a new copy every serial iteration, whose launch was else planned anew:
    12 of the 85 us a process of four spends on Floyd's step ``k`` on dry devices."""
    if got is None:
        return None
    tail = got[4]
    args: list[Any] = list(tail[:ngrid])  # the grid's origins (the grid is in the key)
    fits = _array_args(tb, arrays, args, lean)
    if got[5] != fits:
        return None
    narr = len(args) - ngrid
    if narr != got[6]:
        return None
    args += tail[ngrid + narr:]  # BBMM_GAPS's two scalars, set by the rows (in the key)
    out = tb.launches[fast] = (got[0], got[1], got[2], got[3], args, fits, narr, got[7])
    return out


def _rows_scalars(scalars: Sequence[Any], rows: tuple[int, int]) -> list[Any]:
    """A tile's scalars for its ``rows`` only: its bounds lb, ub (the last two) narrowed."""
    return [*scalars[:-2], int32(max(int(scalars[-2]), rows[0])),
            int32(min(int(scalars[-1]), rows[1]))]


def _narrow(grid: Sequence[tuple[int, int]], rows: tuple[int, ...] | None,
            co: tuple[int, int], align: int, cl_band: Sequence[int]
            ) -> tuple[Sequence[tuple[int, int]], list[Any] | None]:
    """The NDRange's ``(lo, hi)`` per band loop of a launch of a tile over ``grid`` on its
    ``rows`` (None: all of them; two bounds or four: :func:`launch`), OpenCL dimension 0
    starting aligned, and the two ``BBMM_GAPS`` arguments of a launch on two ranges that
    skips the rows between them (None: one range)."""
    gaps = None
    if rows is not None:
        # a part of the tile is a smaller tile on the same boxes: band loop 0's range
        # narrows to the rows (and the kernel's tile bounds: _rows_scalars)
        lo, hi = grid[0]
        if len(rows) == 4:
            a0, a1, b0, b1 = max(lo, rows[0]), min(hi, rows[1]), max(lo, rows[2]), min(hi, rows[3])
            if a0 > a1:
                rows = (b0, b1)  # a range outside the loop: the other alone
            elif b0 > b1:
                rows = (a0, a1)
            elif b0 <= a1 + 1:
                rows = (a0, b1)
            else:
                # one launch on both ranges (the kernel built with BBMM_GAPS): band loop 0
                # runs from v0 to a1 and on through b1 - b0 + 1 more rows, which the
                # kernel moves past the gap (BBMM_ROW). The first range is padded in
                # front (rows below lb: nothing to do) to whole strips of the points a
                # work-item runs along band loop 0, so that no strip spans the gap.
                per = co[1] if len(grid) == 2 else 1
                v0 = a0 - (-(a1 - a0 + 1) % per)
                grid = [(v0, a1 + b1 - b0 + 1), *grid[1:]]
                gaps = [int32(a1), int32(b0 - a1 - 1)]
        if gaps is None:
            grid = [(max(lo, rows[0]), min(hi, rows[1])), *grid[1:]]
    if grid and align > 1:
        # the work-items of OpenCL dimension 0 start on a multiple of ALIGN indices, so
        # that a warp's loads of a row (whose boxes start at column 0 of rows a multiple
        # of ALIGN long) cover whole memory segments instead of straddling two (heat2d's
        # j from 1: its kernel 4.5% slower). Safe: every kernel skips the indices below its
        # loop's lower bound and outside the tile (bbmm.codegen.opencl), so the work-items added
        # in front of the range do nothing.
        d0 = cl_band[0]
        lo, hi = grid[d0]
        start = lo - lo % align
        if start != lo:
            grid = [*grid[:d0], (start, hi), *grid[d0 + 1:]]
    return grid, gaps


def _plan_launch(dev: Device, tb: TileBuffers, source: str, name: str, scalars: Sequence[Any],
                 grid: Sequence[tuple[int, int]], cl_band: Sequence[int],
                 arrays: Sequence[tuple[str, int, int]], local: Sequence[int] | None,
                 coarsen: bool, staged: bool, blocked: bool, rows: tuple[int, int] | None,
                 options: KernelOptions | None
                 ) -> tuple[Any, Any, tuple[int, ...], tuple[int, ...] | None, list[Any], int,
                            bool]:
    """:func:`launch`'s work before the enqueue: the options it read, the kernel object,
    the NDRange, the work-group shape (None: the driver's), the arguments, how many of
    them are the arrays' (after the scalars and the grid's origins) and whether the
    kernel takes 32-bit offsets (:func:`_array_args`)."""
    o = _DEFAULT if options is None else options
    co = _points(coarsen, len(grid), blocked, o)
    if rows is not None:
        scalars = _rows_scalars(scalars, (rows[0], rows[-1]))
    grid, gaps = _narrow(grid, rows, co, o.align, cl_band)
    extent = [max(1, grid[d][1] - grid[d][0] + 1) for d in cl_band]
    stage = None
    if _runs_staged(dev, staged, len(extent), o.stage):
        stage = stage_shape(extent[0], getattr(dev, "compute_units", 0),
                            getattr(dev, "max_group", 256), o.stage)
    two = gaps is not None
    key = (id(dev), name, source, co, stage, two)
    prep = tb.launches.get(key)
    if prep is None:
        old = None if tb.before is None else tb.before.launches.get(key)
        new: list[Any] = []
        if old is not None and old[3] == _array_args(tb, arrays, new, _lean(source, o)):
            # the same tile at its last replay, its accesses in the same slots (LU's
            # shrinking corner: other pieces, another grid): its kernel, new array args
            prep = (old[0], new, old[2], old[3])
        else:
            prep = _prepare(dev, tb, source, name, arrays, o, co, stage, two)
            if stage:
                fit = _group_fit(dev, prep[0], stage)
                if fit != stage:  # a kernel with many registers: fewer rows per group
                    prep = _prepare(dev, tb, source, name, arrays, o, co, fit, two)
        tb.launches[key] = prep
    knl, array_args, stage, small = prep
    args = list(scalars)
    for lo, _ in grid:
        args.append(int32(lo))
    args += array_args
    if two:
        args += gaps
    narr = len(array_args)
    if not grid:
        return o, knl, (1,), None, args, narr, small
    if stage:
        lanes = STAGE_LANES
        return (o, knl, (-(-extent[0] // lanes) * lanes, stage[0]), (lanes, stage[0]), args,
                narr, small)
    gsize, lsize = _shape(dev, extent, co, local, o)
    return o, knl, gsize, lsize, args, narr, small


def _shape(dev: Device, extent: Sequence[int], co: tuple[int, int],
           local: Sequence[int] | None, o: KernelOptions
           ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The NDRange and work-group shape of a launch over ``extent`` points per OpenCL
    dimension, ``co`` points per work-item (:func:`_points`)."""
    units = getattr(dev, "compute_units", 0)
    gkey = (tuple(extent), co, None if local is None else tuple(local), units,
            o.local[len(extent)], len(extent) in o.local_given)
    shape = _SHAPES.get(gkey)  # a tile launches with the same extent every serial iteration
    if shape is None:
        if local is None:
            local = o.local[len(extent)]
            if len(extent) not in o.local_given:
                local = spread(local, extent, _per(co, len(extent)), units)
        if len(_SHAPES) >= MEMO_SIZE:
            _SHAPES.clear()
        shape = _SHAPES[gkey] = _padded(extent, _per(co, len(extent)), local)
    return shape


def _per(co: tuple[int, int], dims: int) -> tuple[int, ...]:
    """Points per work-item along each of ``dims`` OpenCL dimensions (``co``: along the
    first two)."""
    return (co + (1,) * (dims - 2))[:dims]


def _padded(extent: Sequence[int], per: Sequence[int], local: Sequence[int]
            ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The NDRange over ``extent`` (``per`` points per work-item) in whole work-groups of
    ``local``, and ``local``."""
    # Pad the NDRange to whole work-groups: the kernel skips indices outside the tile
    # and the loop bounds, so extra work-items are harmless, and a driver left to pick
    # a work-group size for an awkward extent (12286 = 2 * 6143) may choose a tiny one.
    return (tuple([-(-e // (l * p)) * l for e, l, p in zip(extent, local, per)]),
            tuple(local))


def regridder(dev: Device, nbands: int, how: tuple
              ) -> Callable[[Sequence[tuple[int, int]]],
                            tuple[tuple[int, ...], tuple[int, ...], list[Any]]] | None:
    """A function giving the NDRange, work-group shape and grid origins (the arguments
    after the scalars) of a whole tile's launch over a grid of ``nbands`` band loops, of
    the kernel launched with ``how`` (``(cl_band, coarsen, blocked, staged, local,
    options)``, :func:`launch`'s) on ``dev``, the kernel object and its array arguments
    unchanged; None where the kernel runs staged (its work-groups depend on the extent)
    or has no grid. What :func:`_narrow` and :func:`_shape` work out per grid is worked
    out once here but for the extent, and written out as straight-line Python for the
    grid's shape (:func:`spread` and :func:`_padded` too), without :func:`_shape`'s memo:
    LU's grid shrinks every serial iteration, and its launches repeated
    (:class:`bbmm.shiftcode.Relaunch`) regrid each time, never to an extent seen before."""
    cl_band, coarsen, blocked, staged, local, options = how
    o = _DEFAULT if options is None else options
    if not nbands or _runs_staged(dev, staged, len(cl_band), o.stage):
        return None
    co = _points(coarsen, nbands, blocked, o)
    dims = len(cl_band)
    units = getattr(dev, "compute_units", 0)
    per = _per(co, dims)
    fixed = None  # the work-group shape where it does not depend on the extent
    if local is not None:
        fixed = tuple(local)
    elif dims not in o.local_given:
        local = o.local[dims]
    else:
        fixed = tuple(o.local[dims])
    los = [f"l{d}" for d in range(nbands)]
    lines = ["def regrid(grid):",
             f"    ({', '.join(f'(l{d}, h{d})' for d in range(nbands))},) = grid"]
    if o.align > 1:  # as _narrow: dimension 0's work-items start aligned
        d0 = cl_band[0]
        lines.append(f"    l{d0} -= l{d0} % {int(o.align)}")
    for i, d in enumerate(cl_band):
        lines += [f"    e{i} = h{d} - l{d} + 1", f"    if e{i} < 1:", f"        e{i} = 1"]
    origins = f"[{', '.join(f'get({x})' for x in los)}]"
    if fixed is not None:
        sizes = ", ".join(f"-(-e{i} // {int(l) * int(p)}) * {int(l)}"
                          for i, (l, p) in enumerate(zip(fixed, per)))
        lines.append(f"    return ({sizes},), LSIZE, {origins}")
    else:  # spread's halving of dimension 0, then _padded
        rest = [(int(l), int(p)) for l, p in zip(local[1:], per[1:])]
        lines.append(f"    w = {int(local[0])}")
        if units > 0:
            others = " * ".join(f"-(-e{i + 1} // {l * p})" for i, (l, p) in enumerate(rest))
            lines.append(f"    g = {others or 1}")
            lines.append(f"    while w > {MIN_LOCAL} and -(-e0 // (w * {int(per[0])})) * g"
                         f" < {2 * int(units)}:")
            lines.append("        w //= 2")
        sizes = "".join(f", -(-e{i + 1} // {l * p}) * {l}" for i, (l, p) in enumerate(rest))
        shape = "".join(f", {l}" for l, _ in rest)
        lines.append(f"    return (-(-e0 // (w * {int(per[0])})) * w{sizes},), (w{shape},), "
                     f"{origins}")
    scope = {"get": INT32.__getitem__, "LSIZE": fixed}
    exec(compile("\n".join(lines) + "\n", "<bbmm.hostlib.regrid>", "exec"), scope)
    return scope["regrid"]


_SHAPES: dict[tuple, tuple[tuple[int, ...], tuple[int, ...]]] = {}
"""NDRange and work-group shape per (extent, points per work-item, given local size,
compute units, the options' local size for the rank and whether it was set): a pure
function of those."""


def _points(coarsen: bool, bands: int, blocked: bool, o: KernelOptions) -> tuple[int, int]:
    """Points per work-item along OpenCL dimensions 0 and 1 of a kernel over ``bands``
    band loops (``coarsen``: it takes ``BBMM_CO``; ``blocked``: a register block)."""
    if blocked and bands:
        return o.block[0], o.block[1] if bands > 1 else 1
    return (o.coarsen, o.coarsen1 if bands > 1 else 1) if coarsen and bands else (1, 1)


def _runs_staged(dev: Device, staged: bool, dims: int, stage: tuple[int, int] | None) -> bool:
    """A staged kernel (``staged``) of ``dims`` OpenCL dimensions runs staged on ``dev``
    (``stage``: :attr:`KernelOptions.stage`)."""
    return (staged and stage is not None and dims == 1
            and (stage != (0, 0) or getattr(dev, "is_gpu", False)))


def _group_fit(dev: Device, knl: Any, stage: tuple[int, int]) -> tuple[int, int]:
    """``stage`` with its G halved until a group of :data:`STAGE_LANES` x G work-items fits
    what ``knl`` allows on ``dev`` (``CL_KERNEL_WORK_GROUP_SIZE``, below the device's
    maximum when the kernel needs many registers: the launch would else fail)."""
    limit = getattr(dev, "group_limit", None)
    if limit is None:
        return stage
    most = limit(knl)
    g = stage[0]
    while g > 1 and STAGE_LANES * g > most:
        g //= 2
    return g, stage[1]


def _prepare(dev: Device, tb: TileBuffers, source: str, name: str,
             arrays: Sequence[tuple[str, int, int]], o: KernelOptions,
             co: tuple[int, int] = (1, 1),
             stage: tuple[int, int] | None = None, gaps: bool = False
             ) -> tuple[Any, list[Any], tuple[int, int] | None, bool]:
    """The kernel object, the array arguments of one tile's launch on ``dev``, the
    staged shape it was built for (``gaps``: the kernel built to take two ranges of rows,
    ``BBMM_GAPS``) and whether it takes 32-bit offsets (:func:`_array_args`)."""
    args: list[Any] = []
    small = _array_args(tb, arrays, args, _lean(source, o))
    sels = (tuple(tuple(tb.access.get(e[0], ())) for e in arrays if len(e) > 3)
            if o.specialize else ())
    return (_kernel(dev, source, name, arrays, sels, small, co, stage, o, gaps=gaps),
            args, stage, small)


def _kernel(dev: Device, source: str, name: str, arrays: Sequence[tuple],
            sels: tuple, small: bool, co: tuple[int, int], stage: tuple[int, int] | None,
            o: KernelOptions = _DEFAULT, wait: bool = True, gaps: bool = False) -> Any:
    """One kernel object per (kernel, slot of every access, index width) and device;
    built here unless cached (after the device's :func:`prebuild`, if any, is done:
    ``wait`` is False only in the prebuild thread itself)."""
    cache = dev.__dict__.setdefault("_bbmm_kernels", {})
    key = (source, name, sels, small, co, o.restrict, o.unroll, stage, gaps)
    knl = cache.get(key)
    if knl is None and wait:
        pending = dev.__dict__.pop("_bbmm_prebuild", None)
        if pending is not None:
            pending.join()  # it may be building this very kernel: wait, not build twice
            knl = cache.get(key)
    if knl is None:
        opts = [f"-DBBMM_CO={co[0]}"] if co[0] > 1 else []
        if stage:
            opts += [f"-DBBMM_SG={stage[0]}", f"-DBBMM_SC={stage[1]}",
                     f"-DBBMM_SL={STAGE_LANES}"]
        opts += [f"-DBBMM_CO1={co[1]}"] if co[1] > 1 else []
        opts += [] if o.restrict else ["-DBBMM_RESTRICT="]
        opts += [] if o.unroll else ["-DBBMM_UNROLL=0"]
        opts += ["-DBBMM_GAPS"] if gaps else []
        if o.specialize:
            for entry, sel in zip((e for e in arrays if len(e) > 3), sels):
                opts += [f"-D{entry[0]}_SEL{k}_IS={s}" for k, s in zip(entry[3], sel)]
            if small:
                opts.append("-DBBMM_IDX=int")
            layout = _layout(source, arrays, sels, o)
            if layout is not None:
                opts.append(f"-DBBMM_LEAN_{name}")
                opts += [f"-DBBMM_NS_{name}_{e[0]}={ns}" for e, ns in zip(arrays, layout)]
        knl = cache[key] = dev.kernel(source, name, " ".join(opts))  # type: ignore[attr-defined]
    return knl


def _lean(source: str, options: KernelOptions | None) -> bool:
    """Whether the kernels of ``source`` are built lean where they are specialized: every
    program's but one generated with every access split (``BBMM_SPLIT_ALL``), whose
    accesses test every slot's bounds."""
    o = _DEFAULT if options is None else options
    if not o.specialize:
        return False
    got = _LEAN.get(source)
    if got is None:
        if len(_LEAN) >= MEMO_SIZE:
            _LEAN.clear()
        got = _LEAN[source] = "BBMM_SPLIT_ALL" not in source
    return got


_LEAN: dict[str, bool] = {}


def _layout(source: str, arrays: Sequence[tuple], sels: tuple, o: KernelOptions
            ) -> tuple[int, ...] | None:
    """The slots of each array a lean build of a kernel specialized for ``sels`` (the
    slot of each access, per array with access ids) takes, as
    :func:`bbmm.runtime.lean_slots` gives them for the tile; None: not a lean build.
    Unused slots, the slots' bounds and the accesses' slots are left out: NVIDIA's
    driver copies every argument at each enqueue (a launch of 8 buffers and 62 scalars
    16.7 us, of a few 6.7-7.6, ``python3 scripts/bench_device_ops.py``,
    ``results/h200x4-2026-11-28/ops/``)."""
    if not sels or not _lean(source, o):
        return None
    out = []
    it = iter(sels)
    for e in arrays:
        if len(e) <= 3:
            out.append(-1)
            continue
        out.append(lean_count(e[0], next(it), e[1], len(e[3])))
    return tuple(out)


def prebuild(module: Any, devices: Sequence[Device],
             options: KernelOptions | None = None) -> list[threading.Thread]:
    """Start building each nest's kernel on every OpenCL device in a background thread,
    in the variant a tile most likely takes (every access in one box, 32-bit offsets).

    A build from pyopencl's cache still takes 5-30 ms on an H200, and the first launch
    needed it after the read-ins were queued: the device sat idle for it. Started when
    the devices are made, it overlaps the preparation of the inputs and the first
    copies. Safe: the thread only fills the device's kernel cache; the first
    :func:`_kernel` call that misses waits for it, and a variant it did not guess is
    built then as before. Staged nests (shape chosen per launch) are left out, and so
    is any failure (the launch builds again and reports it). ``options``: the run's
    (:attr:`bbmm.config.RuntimeConfig.kernels`); None: the defaults."""
    o = _DEFAULT if options is None else options
    if not o.prebuild:
        return []
    nests = sorted(int(m.group(1)) for m in
                   (re.fullmatch(r"NEST(\d+)_LAUNCH", k) for k in vars(module)) if m)
    nests_jobs = []
    for i in nests:
        band = getattr(module, f"NEST{i}_CL_BAND", None)
        if band is None:
            continue
        arrays = getattr(module, f"NEST{i}_LAUNCH")
        co = _points(getattr(module, f"NEST{i}_COARSEN", False), len(band),
                     getattr(module, f"NEST{i}_BLOCKED", False), o)
        sels = tuple(tuple(0 for _ in e[3]) for e in arrays if len(e) > 3) if o.specialize else ()
        staged = bool(getattr(module, f"NEST{i}_STAGED", False))
        nests_jobs.append((staged, len(band), (f"{module.FUNCTION}_nest{i}", arrays, sels, co)))
    threads = []
    for dev in devices:
        if getattr(dev, "build", None) is None or "_bbmm_prebuild" in vars(dev):
            continue
        # a staged kernel's shape is chosen per launch where it runs staged (see launch)
        jobs = [job for staged, dims, job in nests_jobs
                if not _runs_staged(dev, staged, dims, o.stage)]
        if not jobs:
            continue

        def work(dev: Device = dev, jobs: list = jobs) -> None:
            for name, arrays, sels, co in jobs:
                try:
                    _kernel(dev, module.KERNELS, name, arrays, sels, True, co, None, o,
                            wait=False)
                except Exception:  # noqa: BLE001 - the launch builds again and reports it
                    return

        # not a daemon: the interpreter waits for it at exit (a build cut off while the
        # OpenCL driver is torn down crashed short runs, PoCL under MPI)
        t = threading.Thread(target=work, name=f"bbmm-prebuild-{dev.name}", daemon=False)
        dev.__dict__["_bbmm_prebuild"] = t
        t.start()
        threads.append(t)
    return threads


MIN_LOCAL = 32
"""Smallest work-group :func:`spread` makes along dimension 0 (an NVIDIA warp)."""


def spread(local: Sequence[int], extent: Sequence[int], per: Sequence[int], units: int
           ) -> tuple[int, ...]:
    """``local`` with dimension 0 halved (not below :data:`MIN_LOCAL`) while the NDRange
    over ``extent`` (``per`` points per work-item) would have fewer work-groups than twice
    the device's ``units`` compute units. A narrow tile (mvt's 2048 columns under a memory
    cap: 8 groups of 256) would otherwise run on 8 of an H200's 132 multiprocessors, each
    work-item walking its column alone."""
    local = list(local)
    if units > 0:
        def groups() -> int:
            g = 1
            for e, l, p in zip(extent, local, per):
                g *= -(-e // (l * p))
            return g
        while local[0] > MIN_LOCAL and groups() < 2 * units:
            local[0] //= 2
    return tuple(local)


class Progress:
    """A one-line progress bar on stderr, silent when stderr is not a terminal: ``label
    [#####     ] 3/8 1.2s eta 2.0s what`` for a generated driver's serial iterations and
    for the experiment scripts' runs (``what``: the run in progress)."""

    def __init__(self, total: int, label: str = "", enabled: bool | None = None):
        self.total = max(1, total)
        self.label = label
        self.done = 0
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._last = 0.0
        self._t0 = time.perf_counter()

    def step(self, n: int = 1, what: str = "") -> None:
        """``n`` more done; redrawn at most ten times a second (and at the end)."""
        self.done += n
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last < 0.1 and self.done < self.total and not what:
            return
        self._last = now
        self.show(what)

    def show(self, what: str = "") -> None:
        """Draw the bar now, with ``what`` (up to 40 characters) after it."""
        if not self.enabled:
            return
        now = time.perf_counter()
        frac = min(1.0, self.done / self.total)
        bar = "#" * int(30 * frac)
        el = now - self._t0
        eta = el / frac - el if frac > 0 else 0.0
        sys.stderr.write(f"\r\x1b[K{self.label} [{bar:<30}] {self.done}/{self.total} "
                         f"{el:6.1f}s eta {eta:5.1f}s" + (f" {what[:40]}" if what else ""))
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()

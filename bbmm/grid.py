"""The tile grid's pure functions: which iterations a tile holds and which device runs it.
The compiler (:mod:`bbmm.codegen.tiling`) and the generated drivers (through
:mod:`bbmm.hostlib`) both use them; this module imports nothing of either.

.. autofunction:: device_of
.. autofunction:: tile_range
.. autofunction:: tiles_covering
.. autofunction:: once_grid
.. autofunction:: once_tiles
.. autofunction:: whole_tile
"""
from __future__ import annotations


def device_of(t: int, ntiles: int, ndev: int) -> int:
    """Static 1-D block distribution (Section 10): tile ``t`` of ``ntiles`` on a device.

    The same tile index always lands on the same device, for every nest and every
    serial iteration, so a tile's data stays where it was computed.
    """
    return min(ndev - 1, t * ndev // max(1, ntiles))


def tile_range(t: int, size: int) -> tuple[int, int]:
    """Inclusive bounds ``(lb, ub)`` of tile ``t`` of the global grid (tile size ``size``)."""
    return t * size, t * size + size - 1


def tiles_covering(lo: int, hi: int, size: int) -> range:
    """Indices of the grid tiles that meet ``[lo, hi]`` (empty when ``hi < lo``)."""
    if hi < lo:
        return range(0)
    return range(lo // size, hi // size + 1)


def once_grid(lo: int, hi: int, size: int, ntiles: int, ndev: int, t0: int = 0
              ) -> tuple[int, int, int]:
    """``(origin, size, count)``: the grid of a nest that runs once (outside every serial
    loop) over parallel iterations ``[lo, hi]``. Tile ``t`` holds
    ``[origin + t*size, origin + t*size + size - 1]`` and runs on
    ``device_of(t, count, ndev)``.

    The global grid ``(t0*size, size, ntiles)`` (its first tile is ``t0``, below 0 where
    an iteration range starts below 0), as for every other nest, when it gives the nest
    as many devices as it can use; otherwise the nest is cut by its own range, at most
    ``size`` per tile, so that every device gets tiles. A nest narrower than the grid
    (mvt's product with A's columns, ``n`` of ``m = 2n``) would else run on the first
    device alone. Locality is not at stake: nothing runs the nest again.
    """
    devices = {device_of(t - t0, ntiles, ndev) for t in tiles_covering(lo, hi, size)}
    if len(devices) >= min(ndev, hi - lo + 1):
        return t0 * size, size, ntiles
    size = min(size, -(-(hi - lo + 1) // ndev))
    return lo, size, -(-(hi - lo + 1) // size)


def once_tiles(lo: int, hi: int, size: int, ntiles: int, ndev: int, t0: int = 0
               ) -> list[tuple[int, int, int, int]]:
    """``(t, lb, ub, device)`` of each tile of a nest that runs once (:func:`once_grid`)."""
    origin, size, count = once_grid(lo, hi, size, ntiles, ndev, t0)
    return [(t, origin + t * size, origin + t * size + size - 1, device_of(t, count, ndev))
            for t in tiles_covering(lo - origin, hi - origin, size)]


def whole_tile(lo: int, hi: int) -> list[tuple[int, int, int]]:
    """``(t, lb, ub)`` of the one tile of a narrow nest
    (:func:`bbmm.codegen.host.narrow_nests`): all of ``[lo, hi]``, or none when it is
    empty."""
    return [(0, lo, hi)] if lo <= hi else []

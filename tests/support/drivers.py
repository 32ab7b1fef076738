"""Hand-written drivers on the public runtime API (no compiler): Floyd-Warshall and Jacobi-2D.

They run on any devices: on a NullDevice the kernels are numpy code reading and
writing the tile's boxes through :func:`gather`/:func:`scatter`.
"""
from __future__ import annotations

import numpy as np

from bbmm.box import Box
from bbmm.runtime import Runtime, Tile, TileBuffers


def gather(dev, tb: TileBuffers, a: str, region: Box, dtype) -> np.ndarray:
    """The values of ``region`` of array ``a`` as the tile sees them (from its pieces)."""
    out = np.empty(region.shape, dtype=dtype)
    seen = 0
    for p, c in tb.pieces[a]:
        inter = region.intersect(p)
        if inter is not None:
            out[inter.slices(region.lo)] = dev.view(c.alloc, c.box, dtype)[inter.slices(c.box.lo)]
            seen += inter.volume
    assert seen == region.volume, f"{a}{region} not inside the tile's pieces"
    return out


def scatter(dev, tb: TileBuffers, a: str, region: Box, values: np.ndarray) -> None:
    for p, c in tb.pieces[a]:
        inter = region.intersect(p)
        if inter is not None:
            dev.view(c.alloc, c.box, values.dtype)[inter.slices(c.box.lo)] = \
                values[inter.slices(region.lo)]


def tiles_of(n_items: int, tile: int, ndev: int) -> list[tuple[int, int, int]]:
    """(lb, ub, device) per tile: a static 1-D block distribution (Section 10)."""
    ntiles = -(-n_items // tile)
    per = -(-ntiles // ndev)
    return [(t * tile, min(n_items, (t + 1) * tile) - 1, t // per) for t in range(ntiles)]


def floyd_reference(path: np.ndarray) -> np.ndarray:
    p = path.copy()
    for k in range(p.shape[0]):
        p = np.minimum(p, p[:, k:k + 1] + p[k:k + 1, :])
    return p


def queue(kernel):
    """``kernel(d, tb, **kw)`` as a command given to the device's ``launch`` (a null device
    made with ``gates`` holds it behind a closed gate), not run by the callback itself."""
    def enqueue(d, tb, **kw):
        d.launch(lambda dev: kernel(dev, tb, **kw), (1,), None, ())
    return enqueue


def run_floyd(rt: Runtime, n: int, tile: int, flowout: bool = True,
              parts: bool = False, queued: bool = False) -> None:
    """Floyd-Warshall's steps, a tile per block of rows; with ``parts`` a tile can run a
    part of its rows (``Tile.span``/``writers``: the owner of row ``k + 1`` runs it first);
    with ``queued`` each kernel is a device command (:func:`queue`)."""
    dt = rt.host.array("path").dtype
    for k in range(n):
        tiles = []
        for lb, ub, dev in tiles_of(n, tile, len(rt.devices)):
            rows, col, row = Box((lb, 0), (ub, n - 1)), Box((lb, k), (ub, k)), Box((k, 0), (k, n - 1))

            def kernel(d, tb, rows=None, lb=lb, ub=ub, k=k, row=row):
                lo, hi = (lb, ub) if rows is None else (max(lb, rows[0]), min(ub, rows[1]))
                mine = Box((lo, 0), (hi, n - 1))
                A = gather(d, tb, "path", mine, dt)
                new = np.minimum(A, gather(d, tb, "path", Box((lo, k), (hi, k)), dt)
                                 + gather(d, tb, "path", row, dt))
                scatter(d, tb, "path", mine, new)

            fo = [Box((k + 1, 0), (k + 1, n - 1))] if lb <= k + 1 <= ub else []
            part = dict(span=(lb, ub), writers={"path": (0, 0, 0)}) if parts else {}
            tiles.append(Tile(dev, {"path": [rows, col, row]},
                              queue(kernel) if queued else kernel,
                              writes={"path": [rows]},
                              flowout={"path": fo} if flowout else {},
                              writeout={"path": [rows]} if k == n - 1 else {},
                              cleanup={"path": [False, False, True]}, name=f"k{k}:{lb}",
                              **part))
        rt.run_phase(tiles, serial=k)
        rt.end_serial(k)
    rt.finish()


def jacobi_reference(A: np.ndarray, B: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray]:
    A, B = A.copy(), B.copy()
    for _ in range(steps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[:-2, 1:-1] + A[2:, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:])
        A[1:-1, 1:-1] = B[1:-1, 1:-1]
    return A, B


def run_jacobi(rt: Runtime, n: int, steps: int, tile: int, flowout: bool = True,
               rows: bool = False, queued: bool = False) -> None:
    """Jacobi's two sweeps; with ``rows`` the second sweep's tiles can run a part of their
    rows (``Tile.span``/``writers``), and each launch is logged on its device as
    ``("launch", Box((first row,), (last row,)), 0)``; with ``queued`` each kernel is a
    device command (:func:`queue`)."""
    dt = rt.host.array("A").dtype
    inner = tiles_of(n - 2, tile, len(rt.devices))
    for t in range(steps):
        last = t == steps - 1
        nest1, nest2 = [], []
        for lb0, ub0, dev in inner:
            lb, ub = lb0 + 1, ub0 + 1
            c = Box((lb, 1), (ub, n - 2))
            reads = [c, c.shift((-1, 0)), c.shift((1, 0)), c.shift((0, -1)), c.shift((0, 1))]

            def k1(d, tb, c=c):
                s = sum(gather(d, tb, "A", c.shift(o), dt) for o in
                        [(0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)])
                scatter(d, tb, "B", c, (0.2 * s).astype(dt))

            def k2(d, tb, rows=None, c=c):
                if rows is not None:
                    c = Box((max(c.lo[0], rows[0]), c.lo[1]), (min(c.hi[0], rows[1]), c.hi[1]))
                d.log.append(("launch", Box((c.lo[0],), (c.hi[0],)), 0))
                scatter(d, tb, "A", c, gather(d, tb, "B", c, dt))

            nest1.append(Tile(dev, {"A": reads, "B": [c]}, queue(k1) if queued else k1,
                              writes={"B": [c]},
                              writeout={"B": [c]} if last else {}, name=f"t{t}:S1:{lb}"))
            fo = [Box((lb, 1), (lb, n - 2)), Box((ub, 1), (ub, n - 2))]
            part = dict(span=(lb, ub), writers={"A": (0, 0, 0)}) if rows else {}
            nest2.append(Tile(dev, {"A": [c], "B": [c]}, queue(k2) if queued else k2,
                              writes={"A": [c]},
                              flowout={"A": fo} if flowout else {},
                              writeout={"A": [c]} if last else {}, name=f"t{t}:S2:{lb}",
                              **part))
        rt.run_phase(nest1, serial=t)
        rt.run_phase(nest2, serial=t)
        rt.end_serial(t)
    rt.finish()

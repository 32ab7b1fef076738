"""The exchange between processes alone: what one halo swap of ``bbmm run --procs`` costs.

P processes, each with the planes of a 3-D host array (``--shape`` R x C elements per
plane, float32; two planes per process and two more, in the run's coordinates), swap
halos along a chain as a stencil's processes do: each sends its first plane (without its
border: ``[1:R-1, 1:C-1]``, strided in the array like heat-3d's) to the rank before it
and its last to the rank after, and receives into its ghost planes, through :class:`bbmm.shm.ShmComm` as a run does (:func:`bbmm.messages.swap`:
packed straight into shared memory, unpacked straight out of it). ``--staged`` packs
each message into a fresh buffer first, exchanges the buffers and unpacks them (the
path of a communicator without ``swap``). Each round is timed in parts and the medians
of the busiest rank are printed with the bytes per second one process moves.

``--opencl`` adds what a run does around it on the process's own GPU: the sent planes
come from device memory (a rect copy into the host array, waited for) and the received
ones go back (a rect copy, finished before the next round). ``--host`` says where each
process's host array lives: ``shared`` (the default, as ``bbmm run --procs`` keeps it:
shared memory page-locked for the process's GPU, the other processes mapping it, and
messages of at least ``--direct`` bytes copied by their receiver straight out of it),
``pinned`` (an ``ALLOC_HOST_PTR`` buffer, as with ``BBMM_DIRECT=off``) or ``pageable``
(numpy's). ``shared`` and ``pinned`` need an OpenCL device (PoCL's CPU device will do).

::

    python3 scripts/bench_exchange.py --procs 2,4 --shape 512x512,1x12288
    python3 scripts/bench_exchange.py --procs 4 --shape 512x512,1x12288 --opencl --host pinned
    python3 scripts/bench_exchange.py --procs 4 --shape 512x512,1x12288 --opencl --host shared
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from bbmm import shm  # noqa: E402
from bbmm.box import Box  # noqa: E402
from bbmm.messages import Boxes, nbytes, pack, swap, unpack  # noqa: E402

PARTS = ("d2h", "pack", "transfer", "unpack", "h2d", "round")


class _Host:
    """The one array of a rank, as :func:`pack` reads it."""

    def __init__(self, a: np.ndarray):
        self.a = a

    def array(self, name: str) -> np.ndarray:
        return self.a


def _values(rank: int, size: int, r: int, c: int) -> np.ndarray:
    """The host array ``rank`` starts with: its own random planes, 2 per process and 2
    more."""
    return np.random.default_rng(rank).random((2 * size + 2, r, c), dtype=np.float32)


def _rank(path: str, rank: int, size: int, shape: tuple[int, int], rounds: int,
          opencl: bool, staged: bool, out: Any, where: str = "pageable",
          direct: int | None = None) -> None:
    r, c = shape
    interior = r > 2 and c > 2
    # planes in the run's coordinates: rank q holds edge planes 2q+1 and 2q+2 and ghost
    # planes 2q and 2q+3, so the two sides of a message mean the same box (as a run's
    # plan says), as a message taken straight from its sender's array needs
    values = _values(rank, size, r, c)
    comm = shm.ShmComm(path, rank, size)
    ctx = None
    if opencl or where != "pageable":
        import pyopencl as cl
        gpus = [d for p in cl.get_platforms() for d in p.get_devices()]
        ctx = cl.Context([gpus[rank % len(gpus)]])
    if where == "shared":
        from bbmm.devices.pinned import pin
        comm.direct_min = direct
        a = comm.share_array("a", values.shape, values.dtype)
        host = pin(ctx, a) if a is not None else values
        comm.open_peers()  # every process, shared or not
    elif where == "pinned":
        from bbmm.devices.pinned import pinned_empty
        host = pinned_empty(ctx, values.shape, values.dtype)
    else:
        host = values
    host[...] = values

    def box(plane: int) -> Box:
        if interior:
            return Box((plane, 1, 1), (plane, r - 2, c - 2))
        return Box((plane, 0, 0), (plane, r - 1, c - 1))

    mine = 2 * rank
    send = {n: [("a", box(mine + p))] for n, p in ((rank - 1, 1), (rank + 1, 2))
            if 0 <= n < size}
    recv = {n: [("a", box(mine + p))] for n, p in ((rank - 1, 0), (rank + 1, 3))
            if 0 <= n < size}
    h = _Host(host)
    queue = dbuf = None
    if opencl:
        import pyopencl as cl
        queue = cl.CommandQueue(ctx)
        dbuf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, host.nbytes)
        cl.enqueue_copy(queue, dbuf, host).wait()

    def rect(items: list, to_host: bool) -> list:
        import pyopencl as cl
        evs = []
        for _, b in items:
            (p0, r0, c0), (_, r1, c1) = b.lo, b.hi
            org = (4 * c0, r0, p0)
            reg = (4 * (c1 - c0 + 1), r1 - r0 + 1, 1)
            pitches = (4 * c, 4 * c * r)
            if to_host:
                evs.append(cl.enqueue_copy(queue, host, dbuf, buffer_origin=org,
                                           host_origin=org, region=reg,
                                           buffer_pitches=pitches, host_pitches=pitches,
                                           is_blocking=False))
            else:
                evs.append(cl.enqueue_copy(queue, dbuf, host, buffer_origin=org,
                                           host_origin=org, region=reg,
                                           buffer_pitches=pitches, host_pitches=pitches,
                                           is_blocking=False))
        return evs

    outgoing = [(n, Boxes(h, items)) for n, items in send.items()]  # as a run keeps them
    incoming = [(n, Boxes(h, items)) for n, items in recv.items()]
    times = {k: [] for k in PARTS}
    comm.barrier()
    for i in range(rounds + 5):
        t0 = time.perf_counter()
        if opencl:
            for items in send.values():
                for e in rect(items, True):
                    e.wait()
        t1 = time.perf_counter()
        if staged:
            bufs = {dst: pack(h, items) for dst, items in send.items()}
            sizes = {src: nbytes(h, items) for src, items in recv.items()}
            t2 = time.perf_counter()
            got = comm.exchange(bufs, sizes)
            t3 = time.perf_counter()
            for src, items in recv.items():
                unpack(h, items, got[src])
        else:
            t2 = t1
            swap(comm, outgoing, incoming)
            t3 = time.perf_counter()
        t4 = time.perf_counter()
        if opencl:
            for items in recv.values():
                rect(items, False)
            queue.finish()
        t5 = time.perf_counter()
        if i >= 5:  # warm-up rounds left out
            for k, a, b in zip(PARTS, (t0, t1, t2, t3, t4, t0), (t1, t2, t3, t4, t5, t5)):
                times[k].append(b - a)
    comm.barrier()
    moved = sum(nbytes(h, items) for items in send.values())
    # the ghost planes hold the neighbours' edge planes, which never change
    ok = True
    for n, ghost in ((rank - 1, mine), (rank + 1, mine + 3)):
        if 0 <= n < size:
            sl = box(ghost).slices()
            ok = ok and np.array_equal(host[sl], _values(n, size, r, c)[sl])
    out.put((rank, {k: statistics.median(v) for k, v in times.items()}, moved,
             comm.direct_received, ok))
    comm.close()


def measure(procs: int, shape: tuple[int, int], rounds: int, opencl: bool,
            staged: bool = False, where: str = "pageable",
            direct: int | None = None) -> dict[str, Any]:
    path = shm.create(procs)
    try:
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        ps = [ctx.Process(target=_rank, args=(path, r, procs, shape, rounds, opencl, staged, q,
                                               where, direct))
              for r in range(procs)]
        for p in ps:
            p.start()
        got = [q.get(timeout=600) for _ in ps]
        for p in ps:
            p.join()
    finally:
        shm.remove(path)
    busiest = max(got, key=lambda g: g[1]["round"])
    rank, med, moved, _, _ = busiest
    return {"procs": procs, "shape": list(shape), "opencl": opencl, "staged": staged,
            "host": where, "direct_min": direct, "moved_right": all(g[4] for g in got),
            "direct_messages": sum(g[3] for g in got), "rank": rank,
            "bytes_sent": moved, "median_s": med,
            "gb_per_s": moved / med["transfer"] / 1e9 if med["transfer"] else None}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--procs", default="2,4", help="comma-separated process counts")
    p.add_argument("--shape", default="512x512,1x12288", metavar="RxC[,RxC...]",
                   help="elements of one plane (rows x columns); R or C of 1 or 2: the "
                        "whole plane is sent, contiguous (a 2-D stencil's row)")
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--opencl", action="store_true",
                   help="copy the halos out of and into each process's GPU around it")
    p.add_argument("--staged", action="store_true",
                   help="pack into buffers, exchange them, unpack (no swap in place)")
    p.add_argument("--host", choices=("shared", "pinned", "pageable"), default="shared",
                   help="where each process's host array lives (default: shared, as a run "
                        "over processes keeps it)")
    p.add_argument("--direct", default="256KiB", metavar="BYTES|off",
                   help="with --host shared: messages of at least this size are copied "
                        "straight out of the sender's array (as $BBMM_DIRECT)")
    p.add_argument("--json", default=None, metavar="PATH")
    a = p.parse_args(argv)
    from bbmm.config import direct_bytes
    direct = direct_bytes(a.direct, "--direct")
    rows = []
    print(f"{'procs':>5} {'plane':>11} {'MB sent':>8} " +
          " ".join(f"{k + ' us':>11}" for k in PARTS) + f" {'GB/s':>6} {'direct':>7}")
    for shape_s in a.shape.split(","):
        shape = tuple(int(x) for x in shape_s.lower().split("x"))
        for procs in (int(x) for x in a.procs.split(",")):
            r = measure(procs, shape, a.rounds, a.opencl, a.staged, a.host, direct)
            rows.append(r)
            med = r["median_s"]
            print(f"{procs:>5} {shape_s:>11} {r['bytes_sent'] / 1e6:>8.3f} " +
                  " ".join(f"{1e6 * med[k]:>11.1f}" for k in PARTS) +
                  f" {r['gb_per_s'] or 0:>6.2f} {r['direct_messages']:>7}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rounds": a.rounds, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A stencil nest's critical path as one process of a ``--procs`` run walks it, in two
orders: the time per nest, and whether the order ever blocks the host.

Over processes each nest of a stencil waits for its flow-out rows to reach the host,
swaps halos with its neighbours, copies the new halos in and launches the next kernel;
the next kernel starts only once the host has enqueued both (``docs/performance.md``,
"A nest without the split"). This runs that loop on one device with a kernel of the size
of one GPU's share of heat2d 12288^2 over four (``--rows`` x ``--n`` floats, each
row the mean of itself and its two neighbours), the exchange replaced by the host
writing the next halo rows into a page-locked array and, with ``--exchange-us``,
spinning that long as if waiting for a neighbour:

* ``in turn``: wait for the copy out, exchange, enqueue the halo copy in, the launch and
  the copy out, in one queue;
* ``ahead``: the next nest's halo copy in is enqueued before the wait, on a second
  queue, behind a user event; its launch behind that copy, on the first; the exchange
  then writes the halos and sets the event, and only then is the copy out enqueued (a
  copy queued behind a command that waits for an unset user event blocks the host,
  ``bench_hostmem.py``);
* ``ahead, one queue``: the same with the gated copy in on the first queue, before the
  launch.

Each order runs in a child process, stopped after ``--wait`` s: an order whose enqueue
blocks the host until the event is set never sets it, and is reported ``blocked``.
Every kernel records the halo value it read; a nest that read another is counted as
``stale``: a copy in that took its bytes at enqueue, before the exchange wrote them,
fails there.

Usage::

    python3 scripts/bench_nest.py --nests 2000 --exchange-us 0,40 --json $OUT/nest.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from multiprocessing import shared_memory
from typing import Any

import numpy as np

from bench_hostmem import child_messages

SRC = """
__kernel void sweep(__global const float *a, __global float *b, __global float *seen,
                    int n, int rows, int t) {
    int j = get_global_id(0), i = get_global_id(1) + 1;
    if (j < n && i < rows - 1)
        b[i * n + j] = (a[(i - 1) * n + j] + a[i * n + j] + a[(i + 1) * n + j]) / 3.0f;
    if (i == 1 && j == 0) seen[t] = a[0];
}
"""

ORDERS = ("in turn", "ahead", "ahead, one queue")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=12288, help="floats per row")
    p.add_argument("--rows", type=int, default=3074,
                   help="rows of each array, the two halo rows included")
    p.add_argument("--nests", type=int, default=2000)
    p.add_argument("--exchange-us", default="0,40", metavar="US,...",
                   help="host time spent in each exchange after writing the halos")
    p.add_argument("--wait", type=float, default=60.0, metavar="S",
                   help="seconds before an order that has not finished is reported blocked")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    rows = []
    for spin in (float(s) for s in args.exchange_us.split(",")):
        for order in ORDERS:
            r = {"order": order, "exchange_us": spin,
                 **in_child(order, args.n, args.rows, args.nests, spin, args.wait)}
            rows.append(r)
            print(f"{order:16} exchange {spin:5.0f} us: " +
                  ", ".join(f"{k} {v}" for k, v in r.items()
                            if k not in ("order", "exchange_us")))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": args.n, "rows": args.rows, "nests": args.nests,
                       "results": rows}, f, indent=1)
    return 0


def in_child(order: str, n: int, rows: int, nests: int, spin_us: float,
             wait: float) -> dict[str, Any]:
    """:func:`run_order` in a child process, or ``{"result": "blocked"}`` if it has not
    finished after ``wait`` seconds."""
    got, status = child_messages(_child, (order, n, rows, nests, spin_us), wait)
    if status is None:
        return {"result": "blocked"}
    return got[0] if got else {"result": f"failed (exit status {status})"}


def _child(order: str, n: int, rows: int, nests: int, spin_us: float, pipe: Any) -> None:
    pipe.send(run_order(order, n, rows, nests, spin_us))


def run_order(order: str, n: int, rows: int, nests: int, spin_us: float) -> dict[str, Any]:
    """``nests`` nests in ``order``: us per nest (median of the last three quarters'
    nest-to-nest times), the median host time of each enqueue, and the nests whose
    kernel read a halo other than the one the exchange wrote for it."""
    import pyopencl as cl

    from bbmm.devices.opencl import make_devices
    from bbmm.devices.pinned import pin

    dev = make_devices(1)[0]
    ctx = dev.context
    q, side = (cl.CommandQueue(ctx, dev.cl_device) for _ in range(2))
    sweep = cl.Program(ctx, SRC).build().sweep
    # twice the array: NVIDIA's driver bounds a rect copy by whole slices of the row
    # pitch (``bbmm.devices.geometry.padded_end``), here about twice the array
    size = 2 * rows * n * 4
    arrays = [cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size) for _ in range(2)]
    for a in arrays:
        cl.enqueue_fill_buffer(q, a, np.float32(0), 0, size)
    seen = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, (nests + 2) * 4)
    shm = shared_memory.SharedMemory(create=True, size=4 * n * 4)
    try:
        host = pin(ctx, np.ndarray((4, n), np.float32, buffer=shm.buf))
        halo, flow = host[0:2], host[2:4]  # halo rows in, flow-out rows out
        row = n * 4
        far = (rows - 1) * row  # the pitch from a array's first row to its last
        region = (row, 2, 1)
        gsize = (-(-n // 256) * 256, rows - 2)
        q.finish()

        def copy_in(t: int, queue: Any, wait_for: Any = None) -> Any:
            return cl.enqueue_copy(queue, arrays[t % 2], halo, buffer_origin=(0, 0, 0),
                                   host_origin=(0, 0, 0), region=region,
                                   buffer_pitches=(far, 0), host_pitches=(row, 0),
                                   is_blocking=False, wait_for=wait_for)

        def launch(t: int, wait_for: Any = None) -> Any:
            sweep.set_args(arrays[t % 2], arrays[(t + 1) % 2], seen, np.int32(n),
                           np.int32(rows), np.int32(t))
            return cl.enqueue_nd_range_kernel(q, sweep, gsize, (256, 1), wait_for=wait_for)

        def copy_out(t: int) -> Any:
            # rows 1 and rows - 2 of nest t's output
            return cl.enqueue_copy(q, flow, arrays[(t + 1) % 2], buffer_origin=(row, 0, 0),
                                   host_origin=(0, 0, 0), region=region,
                                   buffer_pitches=(far - 2 * row, 0), host_pitches=(row, 0),
                                   is_blocking=False)

        def exchange(t: int) -> None:
            halo[:] = float(t)
            if spin_us:
                end = time.perf_counter() + spin_us * 1e-6
                while time.perf_counter() < end:
                    pass

        took: dict[str, list[float]] = {"copy in": [], "launch": [], "copy out": [],
                                        "set": []}

        def timed(key: str, fn: Any, *a: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            r = fn(*a, **kw)
            took[key].append((time.perf_counter() - t0) * 1e6)
            return r

        stamps = []
        exchange(0)
        copy_in(0, q)
        launch(0)
        out = copy_out(0)
        if order == "in turn":
            for t in range(1, nests + 1):
                out.wait()
                exchange(t)
                timed("copy in", copy_in, t, q)
                timed("launch", launch, t)
                out = timed("copy out", copy_out, t)
                stamps.append(time.perf_counter())
        else:
            one = order == "ahead, one queue"
            for t in range(1, nests + 1):
                gate = cl.UserEvent(ctx)
                got = timed("copy in", copy_in, t, q if one else side, [gate])
                timed("launch", launch, t, None if one else [got])
                out.wait()
                exchange(t)
                timed("set", gate.set_status, cl.command_execution_status.COMPLETE)
                out = timed("copy out", copy_out, t)
                stamps.append(time.perf_counter())
        q.finish()
        side.finish()
        t0 = time.perf_counter()
        for _ in range(20):  # the kernel alone, recording past the nests' halos
            launch(nests + 1)
        q.finish()
        kernel_us = (time.perf_counter() - t0) / 20 * 1e6
        read = np.empty(nests + 1, np.float32)
        cl.enqueue_copy(q, read, seen).wait()
        stale = int(np.count_nonzero(read != np.arange(nests + 1, dtype=np.float32)))
        del host, halo, flow
    finally:
        shm.close()
        shm.unlink()
    steps = np.diff(stamps)[len(stamps) // 4:] * 1e6
    res: dict[str, Any] = {"us per nest": round(float(np.median(steps)), 1),
                           "kernel us": round(kernel_us, 1), "stale": stale}
    for k, v in took.items():
        if v:
            res[f"{k} us"] = round(statistics.median(v), 1)
    return res


if __name__ == "__main__":
    sys.exit(main())

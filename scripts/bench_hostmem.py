"""Kernels on page-locked host memory in place: whether a kernel given the buffer that pins
a host array reads the host's values as they are when it runs, and leaves its writes in
that array, with no copy enqueued; and what a row costs it that way.

Over processes every nest of a stencil copies its halos in and its flow-out rows out, a
few enqueues each costing the host 5-20 us plus its bookkeeping (``docs/performance.md``).
Kernels that read the halos from, and write the flow-out rows to, the processes' shared
host arrays in place would enqueue neither copy. This measures whether the driver allows
it, for the two kinds of page-locked memory bbmm makes
(:mod:`bbmm.devices.pinned`):

* ``shared``: an array in shared memory (``multiprocessing.shared_memory``, as the
  processes of a ``--procs`` run share theirs) wrapped by :func:`~bbmm.devices.pinned.pin`
  (``USE_HOST_PTR``);
* ``alloc``: :func:`~bbmm.devices.pinned.pinned_empty` (``ALLOC_HOST_PTR``, mapped).

For each, with the buffer behind the array as a kernel argument:

* *reads in place*: the host writes new values into the array (numpy, no OpenCL call)
  between launches of a kernel copying a row of it into device memory; yes where every
  launch copied the values the host had written just before it;
* *writes in place*: a kernel writes a row of the array; yes where, once the queue is
  finished, the host's array holds them;
* the kernel's time (profiling events, median of ``--repeat``) for a row of ``--n``
  floats read from that memory, against from device memory.

Then a kernel queued behind a user event: the host time to enqueue it, and from setting
the event to the kernel's end as the host sees it (the latency of a launch that waits for
another process's signal instead of the host).

Usage::

    python3 scripts/bench_hostmem.py --n 12288 --repeat 200 --json $OUT/hostmem.json
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

SRC = """
__kernel void take(__global const float *src, __global float *dst, long off, int n) {
    int j = get_global_id(0);
    if (j < n) dst[j] = src[off + j];
}
__kernel void give(__global float *dst, long off, int n, float v) {
    int j = get_global_id(0);
    if (j < n) dst[off + j] = v + (float)j;
}
"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=12288, help="floats per row")
    p.add_argument("--rows", type=int, default=64, help="rows of the host array")
    p.add_argument("--repeat", type=int, default=200)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    out = measure(args.n, args.rows, args.repeat)
    for k, v in out.items():
        print(f"{k:58} {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": args.n, "rows": args.rows, "repeat": args.repeat, **out}, f,
                      indent=1)
    return 0


def measure(n: int, rows: int, repeat: int) -> dict[str, Any]:
    import pyopencl as cl

    from bbmm.devices.opencl import make_devices
    from bbmm.devices.pinned import pin, pinned_empty

    dev = make_devices(1)[0]
    ctx = dev.context
    q = cl.CommandQueue(ctx, dev.cl_device,
                        properties=cl.command_queue_properties.PROFILING_ENABLE)
    prg = cl.Program(ctx, SRC).build()
    take, give = prg.take, prg.give
    out: dict[str, Any] = {"device": getattr(dev, "physical_name", dev.name)}
    dst = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, n * 4)
    got = np.empty(n, np.float32)
    gsize = (-(-n // 256) * 256,)

    def kernel_ms(knl: Any, knl_args: list[Any]) -> float:
        knl.set_args(*knl_args)
        times = []
        for _ in range(repeat):
            e = cl.enqueue_nd_range_kernel(q, knl, gsize, (256,))
            e.wait()
            times.append((e.profile.end - e.profile.start) * 1e-6)
        return statistics.median(times)

    devmem = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, rows * n * 4)
    cl.enqueue_fill_buffer(q, devmem, np.float32(1), 0, rows * n * 4).wait()
    out["device memory: us per row read"] = round(
        1e3 * kernel_ms(take, [devmem, dst, np.int64(n), np.int32(n)]), 2)

    shm = shared_memory.SharedMemory(create=True, size=rows * n * 4)
    try:
        plain = np.ndarray((rows, n), np.float32, buffer=shm.buf)
        kinds = {"shared": pin(ctx, plain), "alloc": pinned_empty(ctx, (rows, n), np.float32)}
        for kind, arr in kinds.items():
            holder = arr.base if hasattr(arr.base, "buf") else None
            if holder is None:
                out[f"{kind}: pinned"] = False
                continue
            buf = holder.buf
            # reads: the host's newest values, every launch
            fresh = 0
            trials = 16
            for t in range(trials):
                arr[3, :] = float(t + 1)
                take.set_args(buf, dst, np.int64(3 * n), np.int32(n))
                cl.enqueue_nd_range_kernel(q, take, gsize, (256,)).wait()
                cl.enqueue_copy(q, got, dst).wait()
                fresh += bool(np.all(got == float(t + 1)))
            out[f"{kind}: reads in place ({trials} launches)"] = f"{fresh} of {trials}"
            # writes: the kernel's values in the host's array once the queue is done
            arr[5, :] = -1.0
            give.set_args(buf, np.int64(5 * n), np.int32(n), np.float32(7))
            cl.enqueue_nd_range_kernel(q, give, gsize, (256,)).wait()
            q.finish()
            want = 7 + np.arange(n, dtype=np.float32)
            out[f"{kind}: writes in place"] = bool(np.array_equal(arr[5], want))
            out[f"{kind}: us per row read"] = round(
                1e3 * kernel_ms(take, [buf, dst, np.int64(3 * n), np.int32(n)]), 2)
            out[f"{kind}: us per row written"] = round(
                1e3 * kernel_ms(give, [buf, np.int64(5 * n), np.int32(n), np.float32(1)]), 2)
        del kinds, arr, plain
    finally:
        shm.close()
        shm.unlink()

    # a launch gated by a user event
    enq, lat = [], []
    take.set_args(devmem, dst, np.int64(0), np.int32(n))
    for _ in range(repeat):
        u = cl.UserEvent(ctx)
        t0 = time.perf_counter()
        e = cl.enqueue_nd_range_kernel(q, take, gsize, (256,), wait_for=[u])
        t1 = time.perf_counter()
        time.sleep(2e-4)  # the queue idles, as it would waiting for another process
        t2 = time.perf_counter()
        u.set_status(cl.command_execution_status.COMPLETE)
        e.wait()
        t3 = time.perf_counter()
        enq.append((t1 - t0) * 1e6)
        lat.append((t3 - t2) * 1e6)
    direct = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        cl.enqueue_nd_range_kernel(q, take, gsize, (256,)).wait()
        direct.append((time.perf_counter() - t0) * 1e6)
    out["behind a user event: us to enqueue"] = round(statistics.median(enq), 1)
    out["behind a user event: us from setting it to the kernel's end"] = round(
        statistics.median(lat), 1)
    out["no user event: us from enqueue to the kernel's end"] = round(
        statistics.median(direct), 1)
    return out


if __name__ == "__main__":
    sys.exit(main())

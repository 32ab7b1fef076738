"""Host time of one device operation: bbmm's device layer against the pyopencl call under it.

Per serial iteration bbmm's host issues a few copies and launches per device (Floyd-
Warshall on two GPUs: a row in, a row out, a kernel); what each costs the host, beside
the runtime's own bookkeeping, bounds how fast a serial iteration can be. Each operation
runs ``--repeat`` times without waiting (the queue drained every ``--batch``), on device
0, with a row of an ``n x n`` float32 matrix:

* ``h2d``/``d2h``: :meth:`~bbmm.devices.opencl.OpenCLDevice.write_rect` /
  ``read_rect`` of one row (non-blocking), from pageable numpy memory and from pinned
  memory, against ``cl.enqueue_copy`` of the same bytes;
* ``launch``: :meth:`~bbmm.devices.opencl.OpenCLDevice.launch` of a one-row kernel
  with a changing scalar (like ``k``) against pyopencl's ``set_arg`` + ``enqueue_nd_range_kernel``,
  and the parts of the latter: the enqueue alone (arguments set once), the enqueue
  behind a queue kept busy by a long kernel, and ``clEnqueueNDRangeKernel`` called
  through ctypes with and without an event (what an enqueue costs the driver, without
  pyopencl's wrapper; skipped where the OpenCL library cannot be found).

Usage::

    python3 scripts/bench_device_ops.py --n 8192 --repeat 4000 --json $OUT/ops.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

SRC = """
__kernel void row(__global float *a, long off, int n, int k) {
    int j = get_global_id(0);
    if (j < n) a[off + (long)k * n + j] += 1.0f;
}
__kernel void spin(__global float *a, int reps) {
    float x = a[get_global_id(0)];
    for (int r = 0; r < reps; r++) x = x * 0.999f + 0.001f;
    a[get_global_id(0)] = x;
}
"""


def opencl_library() -> "ctypes.CDLL | None":
    """The OpenCL library (an ICD loader) through ctypes: pyopencl's own where its wheel
    bundles one, else the system's; None where there is none."""
    import ctypes
    import ctypes.util
    import glob
    import os

    import pyopencl

    here = os.path.dirname(pyopencl.__file__)
    paths = sorted(glob.glob(os.path.join(here, ".libs", "libOpenCL*.so*"))
                   + glob.glob(os.path.join(os.path.dirname(here), "pyopencl.libs",
                                            "libOpenCL*.so*")))
    found = ctypes.util.find_library("OpenCL")
    for path in paths + ([found] if found else []):
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def timed(fn, repeat: int, batch: int, finish) -> float:
    """Median over batches of the host time per call, in microseconds."""
    per = []
    done = 0
    while done < repeat:
        m = min(batch, repeat - done)
        t0 = time.perf_counter()
        for i in range(m):
            fn(done + i)
        per.append((time.perf_counter() - t0) / m * 1e6)
        finish()
        done += m
    return statistics.median(per)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=8192)
    p.add_argument("--repeat", type=int, default=4000)
    p.add_argument("--batch", type=int, default=200)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)

    import pyopencl as cl

    from bbmm.box import Box
    from bbmm.devices.opencl import make_devices

    dev = make_devices(1)[0]
    n = args.n
    box = Box((0, 0), (n - 1, n - 1))
    alloc = dev.alloc(n * n * 4)
    q = dev.queue
    pageable = np.zeros((n, n), np.float32)
    pinned = dev.pinned_empty((n, n), np.float32)
    pinned[:] = 0
    rows = [Box((i % n, 0), (i % n, n - 1)) for i in range(64)]
    kern = dev.kernel(SRC, "row")
    rows_bytes = n * 4
    out: dict[str, float] = {}

    def finish() -> None:
        dev.finish()

    for label, host in (("pageable", pageable), ("pinned", pinned)):
        out[f"h2d bbmm {label}"] = timed(
            lambda i: dev.write_rect(alloc, box, rows[i % 64], host, blocking=False),
            args.repeat, args.batch, finish)
        out[f"h2d pyopencl {label}"] = timed(
            lambda i: cl.enqueue_copy(q, alloc.buf, host[i % 64],
                                      dst_offset=alloc.offset + (i % 64) * rows_bytes,
                                      is_blocking=False),
            args.repeat, args.batch, finish)
        out[f"d2h bbmm {label}"] = timed(
            lambda i: dev.read_rect(alloc, box, rows[i % 64], host, blocking=False),
            args.repeat, args.batch, finish)
        out[f"d2h pyopencl {label}"] = timed(
            lambda i: cl.enqueue_copy(q, host[i % 64], alloc.buf,
                                      src_offset=alloc.offset + (i % 64) * rows_bytes,
                                      is_blocking=False),
            args.repeat, args.batch, finish)
    off = np.int64(alloc.offset // 4)
    out["launch bbmm"] = timed(
        lambda i: dev.launch(kern, (n,), None, [alloc.buf, off, np.int32(n),
                                                  np.int32(i % n)]),
        args.repeat, args.batch, finish)

    def raw(i: int) -> None:
        kern.set_arg(0, alloc.buf)
        kern.set_arg(1, off)
        kern.set_arg(2, np.int32(n))
        kern.set_arg(3, np.int32(i % n))
        cl.enqueue_nd_range_kernel(q, kern, (n,), None)
    out["launch pyopencl"] = timed(raw, args.repeat, args.batch, finish)
    raw(0)

    def enqueue(i: int) -> None:
        cl.enqueue_nd_range_kernel(q, kern, (n,), None)
    out["launch pyopencl, enqueue only"] = timed(enqueue, args.repeat, args.batch, finish)
    spin = dev.kernel(SRC, "spin")
    spin.set_arg(0, alloc.buf)
    spin.set_arg(1, np.int32(1 << 16))

    def busy() -> None:
        finish()
        cl.enqueue_nd_range_kernel(q, spin, (1 << 16,), None)
    busy()
    out["launch pyopencl, enqueue only, queue busy"] = timed(enqueue, args.repeat,
                                                             args.batch, busy)
    finish()
    lib = opencl_library()
    if lib is not None:
        import ctypes
        size = ctypes.c_size_t
        gws = (size * 1)(n)
        qp, kp = ctypes.c_void_p(q.int_ptr), ctypes.c_void_p(kern.int_ptr)
        call = lib.clEnqueueNDRangeKernel
        call.restype = ctypes.c_int32
        event = ctypes.c_void_p()
        release = lib.clReleaseEvent

        def bare(i: int) -> None:
            if call(qp, kp, 1, None, gws, None, 0, None, None):
                raise RuntimeError("clEnqueueNDRangeKernel failed")

        def evented(i: int) -> None:
            if call(qp, kp, 1, None, gws, None, 0, None, ctypes.byref(event)):
                raise RuntimeError("clEnqueueNDRangeKernel failed")
            release(event)
        out["launch ctypes, no event"] = timed(bare, args.repeat, args.batch, finish)
        out["launch ctypes, event"] = timed(evented, args.repeat, args.batch, finish)
        busy()
        out["launch ctypes, no event, queue busy"] = timed(bare, args.repeat, args.batch,
                                                           busy)
        finish()
    name = getattr(dev, "physical_name", "?")
    print(f"# host time per operation on {name} (median of batches of {args.batch}), "
          f"row of {n} float32")
    for k, v in out.items():
        print(f"{k:44} {v:8.1f} us")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": name, "n": n, "repeat": args.repeat, "us": out}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

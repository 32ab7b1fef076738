"""Host time of one device operation: bbmm's device layer against the pyopencl call under it.

Per serial iteration bbmm's host issues a few copies and launches per device (Floyd-
Warshall on two GPUs: a row in, a row out, a kernel); what each costs the host, beside
the runtime's own bookkeeping, bounds how fast a serial iteration can be. Each operation
runs ``--repeat`` times without waiting (the queue drained every ``--batch``), on device
0, with a row of an ``n x n`` float32 matrix:

* ``h2d``/``d2h``: :meth:`~bbmm.devices.opencl.OpenCLDevice.write_rect` /
  ``read_rect`` of one row (non-blocking), from pageable numpy memory and from pinned
  memory, against ``cl.enqueue_copy`` of the same bytes;
* ``wake``: how soon the host sees a copy out done, by ``clWaitForEvents`` or by
  asking the event's status in a loop (:func:`wake`);
* ``launch``: :meth:`~bbmm.devices.opencl.OpenCLDevice.launch` of a one-row kernel
  with a changing scalar (like ``k``) against pyopencl's ``set_arg`` + ``enqueue_nd_range_kernel``,
  and the parts of the latter: the enqueue alone (arguments set once), the enqueue
  behind a queue kept busy by a long kernel, and ``clEnqueueNDRangeKernel`` called
  through ctypes with and without an event (what an enqueue costs the driver, without
  pyopencl's wrapper; skipped where the OpenCL library cannot be found).

With ``--procs P`` the same runs in P processes at once, each on its share of the GPUs
(as ``bbmm run --procs P`` splits them), started together: what an enqueue costs when
every process of a run enqueues (a trace of heat2d over four H200s showed commands 40-45
us apart where one process alone enqueues in 10-13 us). Each process's figures are
printed, then the median over the processes.

Usage::

    python3 scripts/bench_device_ops.py --n 8192 --repeat 4000 --json $OUT/ops.json
    python3 scripts/bench_device_ops.py --n 16384 --procs 4 --json $OUT/ops4.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

import numpy as np

SRC = """
__kernel void row(__global float *a, long off, int n, int k) {
    int j = get_global_id(0);
    if (j < n) a[off + (long)k * n + j] += 1.0f;
}
__kernel void wide(WIDE_ARGS) {
    int j = get_global_id(0);
    if (j < s0) b0[(long)k * s0 + j] += 1.0f;
}
typedef struct { int v[WIDE_SCALARS]; } scalars;
__kernel void packed(WIDE_BUFS, scalars s) {
    int j = get_global_id(0);
    if (j < s.v[1]) b0[(long)s.v[0] * s.v[1] + j] += 1.0f;
}
__kernel void spin(__global float *a, int reps) {
    float x = a[get_global_id(0)];
    for (int r = 0; r < reps; r++) x = x * 0.999f + 0.001f;
    a[get_global_id(0)] = x;
}
"""


WIDE_BUFFERS = 8
WIDE_SCALARS = 62
"""The wide kernel's arguments: as many as a generated kernel of two 2-D arrays in four
slots each takes (heat2d's: a buffer per slot and 62 scalars of bases, strides, boxes,
tile bounds and slot selectors), to tell what the driver's enqueue costs per argument."""

SRC = (SRC.replace("WIDE_ARGS", ", ".join(
    [f"__global float *b{i}" for i in range(WIDE_BUFFERS)]
    + ["int k"] + [f"int s{i}" for i in range(WIDE_SCALARS - 1)]))
    .replace("WIDE_BUFS", ", ".join(f"__global float *b{i}" for i in range(WIDE_BUFFERS)))
    .replace("WIDE_SCALARS", str(WIDE_SCALARS)))


SPIN_REPS = 1 << 20
"""Default steps of the busy kernel's dependent chain per work-item: at a few ns each, a
few milliseconds on a GPU, longer than a batch of 200 enqueues (before, 1 << 16 steps
kept an H200 busy for only part of a batch)."""


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
    p.add_argument("--spin", type=int, default=SPIN_REPS, metavar="REPS",
                   help="dependent steps per work-item of the kernel queued before each "
                        "batch that measures behind a busy queue (default %(default)s: "
                        "a few milliseconds on a GPU; a CPU device wants far fewer)")
    p.add_argument("--procs", type=int, default=1,
                   help="processes measuring at once, each on its share of the GPUs")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    if args.procs < 1:
        p.error("--procs must be at least 1")
    if args.procs == 1:
        runs = [measure(args.n, args.repeat, args.batch, spin_reps=args.spin)]
    else:
        import multiprocessing as mp
        ctx = mp.get_context("spawn")
        start = ctx.Barrier(args.procs)
        with ctx.Pool(args.procs, initializer=_started_by, initargs=(start,)) as pool:
            runs = pool.starmap(measure, [(args.n, args.repeat, args.batch, (r, args.procs),
                                           args.spin) for r in range(args.procs)])
    for r, (name, out) in enumerate(runs):
        who = f" (process {r} of {args.procs})" if args.procs > 1 else ""
        _print(f"# host time per operation on {name}{who} (median of batches of "
               f"{args.batch}), row of {args.n} float32", out)
    summary = {k: statistics.median(out[k] for _, out in runs) for k in runs[0][1]}
    if args.procs > 1:
        _print(f"# the median over the {args.procs} processes", summary)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": runs[0][0], "n": args.n, "repeat": args.repeat,
                       "procs": args.procs, "us": summary,
                       "per_process": [out for _, out in runs]}, f, indent=1)
    return 0


_START: Any = None
"""In a process of ``--procs``: the barrier every process waits at once its device is
made, so that they measure at once."""


def _started_by(start: Any) -> None:
    global _START
    _START = start


def _print(title: str, figures: dict[str, float]) -> None:
    print(title)
    for k, v in figures.items():
        print(f"{k:76} {v:8.1f} us")


def measure(n: int, repeat: int, batch: int, node: tuple[int, int] | None = None,
            spin_reps: int = SPIN_REPS) -> tuple[str, dict[str, float]]:
    """The device's name and the medians of every operation, in microseconds
    (``spin_reps``: the dependent steps of each work-item of the kernel that keeps the
    queue busy)."""
    import pyopencl as cl

    from bbmm.box import Box
    from bbmm.devices.opencl import make_devices

    dev = make_devices(1, node=node)[0]
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
    if _START is not None:
        _START.wait()  # every process measures at once

    def finish() -> None:
        dev.finish()

    for label, host in (("pageable", pageable), ("pinned", pinned)):
        out[f"h2d bbmm {label}"] = timed(
            lambda i: dev.write_rect(alloc, box, rows[i % 64], host, blocking=False),
            repeat, batch, finish)
        out[f"h2d pyopencl {label}"] = timed(
            lambda i: cl.enqueue_copy(q, alloc.buf, host[i % 64],
                                      dst_offset=alloc.offset + (i % 64) * rows_bytes,
                                      is_blocking=False),
            repeat, batch, finish)
        out[f"d2h bbmm {label}"] = timed(
            lambda i: dev.read_rect(alloc, box, rows[i % 64], host, blocking=False),
            repeat, batch, finish)
        out[f"d2h pyopencl {label}"] = timed(
            lambda i: cl.enqueue_copy(q, host[i % 64], alloc.buf,
                                      src_offset=alloc.offset + (i % 64) * rows_bytes,
                                      is_blocking=False),
            repeat, batch, finish)
    off = np.int64(alloc.offset // 4)
    out["launch bbmm"] = timed(
        lambda i: dev.launch(kern, (n,), None, [alloc.buf, off, np.int32(n),
                                                  np.int32(i % n)]),
        repeat, batch, finish)

    def raw(i: int) -> None:
        kern.set_arg(0, alloc.buf)
        kern.set_arg(1, off)
        kern.set_arg(2, np.int32(n))
        kern.set_arg(3, np.int32(i % n))
        cl.enqueue_nd_range_kernel(q, kern, (n,), None)
    out["launch pyopencl"] = timed(raw, repeat, batch, finish)
    raw(0)

    def enqueue(i: int) -> None:
        cl.enqueue_nd_range_kernel(q, kern, (n,), None)
    out["launch pyopencl, enqueue only"] = timed(enqueue, repeat, batch, finish)
    spin = dev.kernel(SRC, "spin")
    spin.set_arg(0, alloc.buf)
    spin.set_arg(1, np.int32(spin_reps))

    def busy() -> None:
        finish()
        cl.enqueue_nd_range_kernel(q, spin, (1 << 16,), None)
    busy()
    out["launch pyopencl, enqueue only, queue busy"] = timed(enqueue, repeat,
                                                             batch, busy)
    finish()
    # commands queued behind a busy kernel: does a copy queued behind another copy that
    # waits for the kernel hold the host up?
    seq: dict[str, list[float]] = {}
    steps = ("behind a busy kernel: a row copy in", "then a second row copy in",
             "then a row copy out", "then a launch", "the busy kernel and all, waited for")
    for r in range(max(3, min(50, repeat // 100))):
        finish()
        cl.enqueue_nd_range_kernel(q, spin, (1 << 16,), None)
        t = [time.perf_counter()]
        dev.write_rect(alloc, box, rows[r % 64], pinned, blocking=False)
        t.append(time.perf_counter())
        dev.write_rect(alloc, box, rows[(r + 1) % 64], pinned, blocking=False)
        t.append(time.perf_counter())
        dev.read_rect(alloc, box, rows[(r + 2) % 64], pinned, blocking=False)
        t.append(time.perf_counter())
        dev.launch(kern, (n,), None, [alloc.buf, off, np.int32(n), np.int32(r % n)])
        t.append(time.perf_counter())
        finish()
        t.append(time.perf_counter())
        for k, a, b in zip(steps, t, t[1:]):
            seq.setdefault(k, []).append((b - a) * 1e6)
    for k, v in seq.items():
        out[k] = statistics.median(v)
    out.update(wake(dev, alloc, box, rows[0], pinned, spin, max(20, min(400, repeat // 10)),
                    min(WAKE_REPS, spin_reps)))
    spin.set_arg(1, np.int32(spin_reps))  # the busy kernel again, for what follows
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

        def bare_of(kernel_ptr: Any) -> Any:
            """An enqueue of the kernel at ``kernel_ptr`` without an event."""
            def bare(i: int) -> None:
                if call(qp, kernel_ptr, 1, None, gws, None, 0, None, None):
                    raise RuntimeError("clEnqueueNDRangeKernel failed")
            return bare
        bare = bare_of(kp)

        def evented(i: int) -> None:
            if call(qp, kp, 1, None, gws, None, 0, None, ctypes.byref(event)):
                raise RuntimeError("clEnqueueNDRangeKernel failed")
            release(event)
        out["launch ctypes, no event"] = timed(bare, repeat, batch, finish)
        out["launch ctypes, event"] = timed(evented, repeat, batch, finish)
        busy()
        out["launch ctypes, no event, queue busy"] = timed(bare, repeat, batch,
                                                           busy)
        finish()
        # the wide kernel: its buffers all one, then each its own
        wide = dev.kernel(SRC, "wide")
        others = [dev.alloc(n * 64 * 4) for _ in range(WIDE_BUFFERS - 1)]
        scal = [np.int32(0)] + [np.int32(n)] * (WIDE_SCALARS - 1)
        wide_bare = bare_of(ctypes.c_void_p(wide.int_ptr))
        for label, bufs in (("one buffer", [alloc.buf] * WIDE_BUFFERS),
                            ("each its own", [alloc.buf] + [o.buf for o in others])):
            dev.launch(wide, (n,), None, bufs + scal)
            out[f"launch ctypes, no event, {WIDE_BUFFERS} buffers ({label}) and "
                f"{WIDE_SCALARS} scalars"] = timed(wide_bare, repeat, batch, finish)
            out[f"launch bbmm, {WIDE_BUFFERS} buffers ({label}), one scalar changed"] = \
                timed(lambda i: dev.launch(wide, (n,), None,
                                           bufs + [np.int32(i % 64)] + scal[1:]),
                      repeat, batch, finish)
        # the same scalars packed in one struct argument, set anew at every launch
        packed = dev.kernel(SRC, "packed")
        for i in range(WIDE_BUFFERS):
            packed.set_arg(i, alloc.buf)
        block = np.array(scal, np.int32)
        packed_bare = bare_of(ctypes.c_void_p(packed.int_ptr))

        def packed_launch(i: int) -> None:
            block[0] = i % 64
            packed.set_arg(WIDE_BUFFERS, block.tobytes())
            packed_bare(i)
        out[f"launch ctypes, no event, {WIDE_BUFFERS} buffers and the scalars in one "
            f"struct, set anew"] = timed(packed_launch, repeat, batch, finish)
        finish()
    return getattr(dev, "physical_name", "?"), out


WAKE_REPS = 1 << 12
"""Steps of the short busy kernel before the copy whose end the host waits for (tens of
microseconds on a GPU, as a Floyd or LU step's kernel on four GPUs is)."""


def wake(dev: Any, alloc: Any, box: Any, row: Any, host: np.ndarray, spin: Any,
         rounds: int, reps: int = WAKE_REPS) -> dict[str, float]:
    """How soon the host learns that a copy out has finished, by each way of waiting for
    it: a short kernel, a row copied out behind it, then the copy's event waited for
    (``clWaitForEvents``), or its status asked until it says complete (alone, or with
    the thread yielding between asks). The same commands each time, the ways taken in
    turn: what one way takes beyond another is the time its wait lets pass after the
    copy ended (an owner of Floyd's row waits so before it sends the row on). ``reps``:
    the short kernel's steps per work-item (fewer on a CPU device); ``spin`` is left
    with them."""
    import os

    import pyopencl as cl

    spin.set_arg(1, np.int32(reps))

    def by_wait(e: Any) -> None:
        e.wait()

    def by_asking(e: Any) -> None:
        while e.command_execution_status != 0:
            pass

    def by_asking_yielding(e: Any) -> None:
        while e.command_execution_status != 0:
            os.sched_yield()
    ways = {"copy out behind a short kernel, seen done by clWaitForEvents": by_wait,
            "copy out behind a short kernel, seen done by asking its status": by_asking,
            "copy out behind a short kernel, seen done by asking, yielding": by_asking_yielding}
    times: dict[str, list[float]] = {k: [] for k in ways}
    for r in range(rounds):
        for name, way in ways.items():
            dev.finish()
            t0 = time.perf_counter()
            cl.enqueue_nd_range_kernel(dev.queue, spin, (1 << 16,), None)
            e = dev.read_rect(alloc, box, row, host, blocking=False)
            way(e)
            times[name].append((time.perf_counter() - t0) * 1e6)
    return {k: statistics.median(v) for k, v in times.items()}


if __name__ == "__main__":
    sys.exit(main())

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
another process's signal instead of the host); and, while the event is unset, the host
time to queue a copy out behind that kernel, a copy in on a second queue and a second
copy out on the first: whether a thread could queue a nest's commands ahead while
another one waits for the halos.

Usage::

    python3 scripts/bench_hostmem.py --n 12288 --repeat 200 --json $OUT/hostmem.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
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


HOLD_S = 0.05
"""How long the user event stays unset while the host queues commands behind it: an
enqueue that waits for it takes this long (50000 us) instead of a few us."""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=12288, help="floats per row")
    p.add_argument("--rows", type=int, default=64, help="rows of the host array")
    p.add_argument("--repeat", type=int, default=200)
    p.add_argument("--wait", type=float, default=20.0, metavar="S",
                   help="seconds to wait for the commands queued behind an unset user "
                        "event before calling the first that has not returned blocked")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    out = measure(args.n, args.rows, args.repeat, args.wait)
    for k, v in out.items():
        print(f"{k:58} {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": args.n, "rows": args.rows, "repeat": args.repeat, **out}, f,
                      indent=1)
    return 0


def measure(n: int, rows: int, repeat: int, wait: float = 20.0) -> dict[str, Any]:
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
    out.update(queued_behind(n, wait))
    out["behind a user event: us to enqueue"] = round(statistics.median(enq), 1)
    out["behind a user event: us from setting it to the kernel's end"] = round(
        statistics.median(lat), 1)
    out["no user event: us from enqueue to the kernel's end"] = round(
        statistics.median(direct), 1)
    return out


STEPS = ("a launch", "then a copy out behind it", "then a copy in on another queue",
         "then a second copy out on the first queue")
"""What :func:`queued_behind` queues, in order, while the user event is unset."""


def queued_behind(n: int, timeout_s: float = 20.0) -> dict[str, Any]:
    """The host time to queue each of :data:`STEPS` behind a launch that waits for an
    unset user event, set by a thread :data:`HOLD_S` later: an enqueue that waits for
    the event takes about that long. Run in a child process: an enqueue that blocks
    while holding Python's lock keeps the thread from ever setting the event (the child
    is then stopped after ``timeout_s``): that step is reported as ``"blocked"``, the
    ones after it as ``"not reached"``."""
    got: dict[str, list[float]] = {}
    for label, us in child_messages(_queue_behind, (n,), timeout_s)[0]:
        got.setdefault(label, []).append(us)
    out: dict[str, Any] = {}
    blocked = False
    for label in STEPS:
        key = f"behind an unset user event, {label}: us to enqueue"
        if label in got:
            out[key] = round(statistics.median(got[label]), 1)
        else:
            out[key] = "not reached" if blocked else "blocked"
            blocked = True
    return out


def child_messages(target: Any, args: tuple, timeout_s: float) -> tuple[list[Any], int | None]:
    """Run ``target(*args, pipe)`` in a spawned child process (its own OpenCL context):
    the messages it sent through ``pipe`` up to a ``None`` or its end, and its exit
    status; None where it still ran after ``timeout_s`` (an enqueue that blocks while
    holding Python's lock), and was stopped."""
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=target, args=(*args, child))
    proc.start()
    got: list[Any] = []
    ended = False
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        if parent.poll(0.1):
            msg = parent.recv()
            if msg is None:
                ended = True
                break
            got.append(msg)
        elif not proc.is_alive():
            ended = True
            break
    proc.join(max(0.0, deadline - time.perf_counter()))
    if proc.is_alive():
        proc.kill()
        proc.join()
    return got, proc.exitcode if ended else None


def _queue_behind(n: int, pipe: Any) -> None:
    import pyopencl as cl

    from bbmm.devices.opencl import make_devices

    dev = make_devices(1)[0]
    ctx = dev.context
    q, side = (cl.CommandQueue(ctx, dev.cl_device) for _ in range(2))
    take = cl.Kernel(cl.Program(ctx, SRC).build(), "take")
    src = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, n * 4)
    dst = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, n * 4)
    take.set_args(src, dst, np.int64(0), np.int32(n))
    row = np.zeros(n, np.float32)
    gsize = (-(-n // 256) * 256,)
    for _ in range(5):
        u = cl.UserEvent(ctx)
        setter = threading.Timer(HOLD_S, u.set_status,
                                 (cl.command_execution_status.COMPLETE,))
        setter.start()
        steps = (lambda: cl.enqueue_nd_range_kernel(q, take, gsize, (256,), wait_for=[u]),
                 lambda: cl.enqueue_copy(q, row, dst, is_blocking=False),
                 lambda: cl.enqueue_copy(side, src, row, is_blocking=False),
                 lambda: cl.enqueue_copy(q, row, dst, is_blocking=False))
        for label, fn in zip(STEPS, steps):
            t0 = time.perf_counter()
            fn()
            pipe.send((label, (time.perf_counter() - t0) * 1e6))
        setter.join()
        q.finish()
        side.finish()
    pipe.send(None)


if __name__ == "__main__":
    sys.exit(main())

"""Session 38: does NVIDIA's OpenCL block the host when a command on one GPU's queue waits
for an event of the other GPU's queue (one context over both)? Floyd on two H100s enqueues
0.44 ms per k with the GPUs busy but 0.27 ms per k when they are nearly idle (n=4096), as
if some enqueue waited for the other GPU. Here GPU 0 runs a kernel of about 2 ms, then a
64 KiB copy to pinned host memory (event e); the host times the enqueue of commands on
GPU 1 that wait for e (a copy in, a kernel, a barrier), and of the same on a second queue
of GPU 0, each with and without a flush of GPU 0's queue first."""
import time

import numpy as np
import pyopencl as cl

plat = [p for p in cl.get_platforms() if "NVIDIA" in p.name or "Portable" in p.name][0]
devs = plat.get_devices()[:2]
ctx = cl.Context(devs)
qa = cl.CommandQueue(ctx, devs[0])
qa2 = cl.CommandQueue(ctx, devs[0])
qb = cl.CommandQueue(ctx, devs[-1])
src = """__kernel void busy(__global float *a, int iters) {
  float x = a[get_global_id(0)];
  for (int i = 0; i < iters; ++i) x = x * 0.999f + 0.5f;
  a[get_global_id(0)] = x; }
__kernel void small(__global float *a) { if (get_global_id(0) == 0) a[0] += 1.0f; }"""
prg = cl.Program(ctx, src).build()
NB = 1 << 20
ba = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, NB * 4)
bb = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, NB * 4)
pin = cl.Buffer(ctx, cl.mem_flags.ALLOC_HOST_PTR, 1 << 16)
host, _ = cl.enqueue_map_buffer(qa, pin, cl.map_flags.WRITE | cl.map_flags.READ, 0,
                                (1 << 14,), np.float32)
busy, small = prg.busy, prg.small
# calibrate: iterations for about 2 ms
for it in (1000, 4000, 16000, 64000):
    e = busy(qa, (NB,), None, ba, np.int32(it))
    e.wait()
    ms = (e.profile.end - e.profile.start) / 1e6 if False else None
    t = time.perf_counter(); busy(qa, (NB,), None, ba, np.int32(it)).wait(); dt = time.perf_counter() - t
    if dt > 2e-3:
        break
print(f"busy kernel: {it} iterations, {dt * 1e3:.2f} ms")


def trial(target_q, what, flush):
    qa.finish(); target_q.finish()
    busy(qa, (NB,), None, ba, np.int32(it))
    e = cl.enqueue_copy(qa, host, ba, src_offset=0, is_blocking=False)
    if flush:
        qa.flush()
    t = time.perf_counter()
    if what == "h2d":
        cl.enqueue_copy(target_q, bb if target_q is qb else ba, host, is_blocking=False, wait_for=[e])
    elif what == "kernel":
        small(target_q, (64,), None, bb if target_q is qb else ba, wait_for=[e])
    else:
        cl.enqueue_barrier(target_q, wait_for=[e])
    dt = time.perf_counter() - t
    busy_left = e.command_execution_status != cl.command_execution_status.COMPLETE
    qa.finish(); target_q.finish()
    return dt, busy_left


for name, q in (("GPU 1", qb), ("GPU 0, second queue", qa2)):
    for what in ("h2d", "kernel", "barrier"):
        for flush in (False, True):
            ts = [trial(q, what, flush) for _ in range(7)]
            med = sorted(t for t, _ in ts)[3]
            print(f"{name:20} {what:8} flush={flush!s:5}: enqueue {med * 1e6:8.1f} us "
                  f"(event still running after it in {sum(b for _, b in ts)}/7)")

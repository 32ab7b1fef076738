"""Session 23: what a new arena's first touch costs on the H200, and whether the
driver allocates at clCreateBuffer or at first use (does an over-subscription fail at
creation, or only at the touch?)."""
import statistics
import sys
import time

import numpy as np
import pyopencl as cl

plat = [p for p in cl.get_platforms() if "NVIDIA" in p.name][0]
dev = plat.get_devices()[0]
ctx = cl.Context([dev])
q = cl.CommandQueue(ctx)
tq = cl.CommandQueue(ctx)
gm, ma = dev.global_mem_size, dev.max_mem_alloc_size
print(f"{dev.name}: global {gm / 2**30:.1f} GiB, max alloc {ma / 2**30:.1f} GiB")
z = np.uint8(0)


def ms(t0):
    return (time.perf_counter() - t0) * 1e3


# 1. cost of making 5 arenas of 256 MiB: create only / create + touch waited (own queue)
#    / create + touch not waited (main queue), idle and while a 1 GiB h2d copy runs
host = cl.Buffer(ctx, cl.mem_flags.ALLOC_HOST_PTR, 1 << 30)
hview, _ = cl.enqueue_map_buffer(q, host, cl.map_flags.WRITE, 0, (1 << 30,), np.uint8)
hview[:] = 1
big = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 1 << 30)
cl.enqueue_copy(q, big, hview)
q.finish()
for busy in (False, True):
    for mode in ("none", "wait", "async"):
        times = []
        for _ in range(7):
            if busy:
                cl.enqueue_copy(q, big, hview, is_blocking=False)
            t0 = time.perf_counter()
            bufs = []
            for _ in range(5):
                b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 256 << 20)
                if mode == "wait":
                    cl.enqueue_fill_buffer(tq, b, z, 0, 4096).wait()
                elif mode == "async":
                    cl.enqueue_fill_buffer(q, b, z, 0, 4096)
                bufs.append(b)
            times.append(ms(t0))
            q.finish()
            for b in bufs:
                b.release()
        print(f"5 arenas of 256 MiB, {'queue busy' if busy else 'idle'}, touch {mode}: "
              f"median {statistics.median(times):.3f} ms (min {min(times):.3f})")
    sys.stdout.flush()

# 2. eager or lazy: create buffers of max alloc size up to 1.6x global memory, no touch
bufs, total, fail = [], 0, None
t0 = time.perf_counter()
while total < 1.6 * gm:
    try:
        bufs.append(cl.Buffer(ctx, cl.mem_flags.READ_WRITE, ma))
        total += ma
    except cl.Error as e:
        fail = e
        break
print(f"created {len(bufs)} x {ma / 2**30:.1f} GiB = {total / 2**30:.1f} GiB untouched "
      f"({ms(t0):.1f} ms); creation failed: {fail}")
for i, b in enumerate(bufs):
    try:
        cl.enqueue_fill_buffer(q, b, z, 0, 4096).wait()
    except cl.Error as e:
        print(f"touch of buffer {i} (after {i * ma / 2**30:.1f} GiB touched) failed: {e}")
        break
else:
    print("every buffer touched without error")
try:
    q.finish()
except cl.Error as e:
    print("finish:", e)
for b in bufs:
    b.release()

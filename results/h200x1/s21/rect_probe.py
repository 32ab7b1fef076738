"""Session 21: why mvt's column boxes arrive at 34 GB/s in the run (bench_kernels' rect
part gave 49 GB/s for the same 8 KiB rows). Host-to-device copies of an 81920 x 2048 float
column block out of a pinned 81920 x 40960 array into a device box, GB/s (median of 3):
by column offset, blocking or not, split into row chunks on one queue or spread over
2-4 queues."""
import statistics
import sys
import time

import numpy as np
import pyopencl as cl

from bbmm.box import Box
from bbmm.devices.opencl import make_devices, pinned_empty

rows, cols, w = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
dev, = make_devices(1)
host = pinned_empty(dev, (rows, cols), np.float32)
host[...] = np.arange(cols, dtype=np.float32)[None, :]
a = dev.alloc(rows * w * 4)
queues = [dev.queue] + [cl.CommandQueue(dev.context, dev.cl_device) for _ in range(3)]
main = dev.queue


def copy(c0, chunks, nq, blocking=False):
    step = -(-rows // chunks)
    for i in range(chunks):
        r0 = i * step
        r1 = min(rows, r0 + step) - 1
        dev.queue = queues[i % nq]
        dev.write_rect(a, Box((0, c0), (rows - 1, c0 + w - 1)), Box((r0, c0), (r1, c0 + w - 1)),
                       host, blocking=blocking)
    dev.queue = main


def gbs(fn):
    ts = []
    for _ in range(3):
        for q in queues:
            q.finish()
        t0 = time.perf_counter()
        fn()
        for q in queues:
            q.finish()
        ts.append(time.perf_counter() - t0)
    return rows * w * 4 / statistics.median(ts) / 1e9


print(f"{rows} x {w} floats of a {rows} x {cols} pinned array ({rows * w * 4 / 1e6:.0f} MB)")
for c0 in (0, cols // 2 - w // 2, cols - w):
    print(f"col {c0:6d}: blocking {gbs(lambda: copy(c0, 1, 1, True)):5.1f}  "
          f"async {gbs(lambda: copy(c0, 1, 1)):5.1f}")
c0 = 0
for chunks, nq in ((4, 1), (16, 1), (2, 2), (4, 2), (16, 2), (4, 4), (16, 4)):
    print(f"{chunks:3d} chunks on {nq} queues: {gbs(lambda: copy(c0, chunks, nq)):5.1f} GB/s")
# the run's boxes land in memory the copy touches first (a new arena, or one whose
# pages the driver maps lazily): time single copies by their profiling events
pq = cl.CommandQueue(dev.context, dev.cl_device,
                     properties=cl.command_queue_properties.PROFILING_ENABLE)


def one(buf_alloc, c0):
    dev.queue = pq
    e = dev.write_rect(buf_alloc, Box((0, c0), (rows - 1, c0 + w - 1)),
                       Box((0, c0), (rows - 1, c0 + w - 1)), host, blocking=False)
    e.wait()
    dev.queue = main
    return rows * w * 4 / ((e.profile.end - e.profile.start) * 1e-9) / 1e9


for trial in range(3):
    fresh = dev.alloc(rows * w * 4)  # a new arena each time (larger than the arena size)
    print(f"fresh box {trial}: first copy {one(fresh, 0):5.1f} GB/s, "
          f"second {one(fresh, 0):5.1f} GB/s")
    dev.free(fresh)
    dev.pool.trim()
for trial in range(2):
    fresh = dev.alloc(rows * w * 4)
    t0 = time.perf_counter()
    cl.enqueue_fill_buffer(main, fresh.buf, np.uint8(0), 0, fresh.buf.size).wait()
    t1 = time.perf_counter()
    print(f"fresh box filled whole first ({(t1 - t0) * 1e3:.1f} ms): copy "
          f"{one(fresh, 0):5.1f} GB/s")
    dev.free(fresh)
    dev.pool.trim()
lin = pinned_empty(dev, (rows // 2, cols // 8), np.float32)
big = dev.alloc(lin.nbytes)
full = Box((0, 0), (rows // 2 - 1, cols // 8 - 1))
for trial in range(2):
    dev.queue = pq
    dev.write_rect(big, full, full, lin, blocking=False)
    dev.queue = main
    print(f"after a linear {lin.nbytes / 1e6:.0f} MB copy: {one(a, 0):5.1f} GB/s")
back = np.zeros((rows, w), np.float32)
dev.queue = main
dev.read_rect(a, Box((0, 0), (rows - 1, w - 1)), Box((0, 0), (rows - 1, w - 1)), back)
assert np.array_equal(back, host[:, :w]), "copies came back wrong"
print("checked")

"""Session 33: pinned host-device bandwidth of two GPUs alone and at once (target 4: what a
program that streams its data from the host, blackscholes and mvt, can gain from a second
GPU). One context over both GPUs as bbmm makes it, a pinned host array per GPU (ALLOC_HOST_PTR,
mapped), 1 GiB per copy, medians of 5; prints GB/s per GPU and in all."""
import statistics
import sys
import time

import numpy as np
import pyopencl as cl

from bbmm.devices.opencl import pinned_empty

N = int(float(sys.argv[1])) if len(sys.argv) > 1 else 1 << 30
gpus = [d for p in cl.get_platforms() for d in p.get_devices(cl.device_type.GPU)][:2]
ctx = cl.Context(gpus)
qs = [cl.CommandQueue(ctx, g) for g in gpus]
bufs = [cl.Buffer(ctx, cl.mem_flags.READ_WRITE, N) for _ in gpus]
hosts = [pinned_empty(ctx, N, np.uint8, q) for q in qs]
for h in hosts:
    h[:] = 1


def timed(which, direction, reps=5):
    def once():
        for i in which:
            if direction == "h2d":
                cl.enqueue_copy(qs[i], bufs[i], hosts[i], is_blocking=False)
            else:
                cl.enqueue_copy(qs[i], hosts[i], bufs[i], is_blocking=False)
        for i in which:
            qs[i].finish()
    once()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        once()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


print(f"{len(gpus)} GPUs: {[g.name for g in gpus]}, {N / 2**30:.2f} GiB per copy")
for direction in ("h2d", "d2h"):
    for which in ([0], [1], [0, 1])[:1 if len(gpus) == 1 else 3]:
        t = timed(which, direction)
        print(f"{direction} GPUs {which}: {t * 1e3:7.2f} ms, {N / t / 1e9:6.1f} GB/s per GPU, "
              f"{len(which) * N / t / 1e9:6.1f} GB/s in all")

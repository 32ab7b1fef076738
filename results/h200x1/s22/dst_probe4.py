"""Session 22, fourth probe: how the slow first rect copy after device work scales.
Column stripes of a pinned R x C float array copied into a device buffer (timed by their
events), each right after a kernel that writes (or reads) N MB of another buffer; stripe
widths and row counts varied. The extra time over a warm copy is printed in ms."""
import sys

import numpy as np
import pyopencl as cl

R, C = (int(a) for a in sys.argv[1:3])
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
mf = cl.mem_flags
hb = cl.Buffer(ctx, mf.ALLOC_HOST_PTR | mf.READ_WRITE, R * C * 4)
host, _ = cl.enqueue_map_buffer(q, hb, cl.map_flags.WRITE | cl.map_flags.READ, 0, (R, C),
                                np.float32)
host[...] = np.arange(C, dtype=np.float32)[None, :]
prg = cl.Program(ctx, """
__kernel void put(__global float *a) { a[get_global_id(0)] = 0.0f; }
__kernel void get(__global const float *a, __global float *s) {
    float v = a[get_global_id(0)];
    if (v == 12345.0f) s[0] = v;
}""").build()
put, get = cl.Kernel(prg, "put"), cl.Kernel(prg, "get")
big = R * 4096 * 4
dst = cl.Buffer(ctx, mf.READ_WRITE, big)
other = cl.Buffer(ctx, mf.READ_WRITE, big)
sink = cl.Buffer(ctx, mf.READ_WRITE, 64)
cl.enqueue_fill_buffer(q, other, np.uint8(1), 0, big).wait()


def rect(w, rows):
    e = cl.enqueue_copy(q, dst, host, buffer_origin=(0, 0, 0), host_origin=(0, 0, 0),
                        region=(w * 4, rows, 1), buffer_pitches=(w * 4, 0),
                        host_pitches=(C * 4, 0), is_blocking=False)
    e.wait()
    return (e.profile.end - e.profile.start) * 1e-6


def case(w, rows, mb, how):
    warm = min(rect(w, rows) for _ in range(2))
    n = min(mb << 18, big // 4)
    if how == "write":
        put(q, (n,), None, other)
    else:
        get(q, (n,), None, other, sink)
    q.finish()
    first = rect(w, rows)
    gb = w * 4 * rows / 1e6
    print(f"w={w:5d} rows={rows:6d} ({gb:5.0f} MB) after a kernel {how:5s} of {mb:4d} MB: "
          f"{gb / first:5.1f} GB/s, +{first - warm:5.2f} ms over warm ({gb / warm:5.1f})")


for mb in (4, 16, 64, 256, 671):
    case(2048, R, mb, "write")
for mb in (64, 671):
    case(2048, R, mb, "read")
for w, rows in ((4096, R), (2048, R // 2), (1024, R), (512, R), (8192, R // 2)):
    case(w, rows, 671, "write")

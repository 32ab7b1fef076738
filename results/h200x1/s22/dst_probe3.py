"""Session 22, third probe: is the slow first copy about the host side? Rect copies of
R x w float column stripes of a pinned R x C array into one device buffer, timed by their
events: each stripe copied for the first time (cold), then all again (warm), for several
stripe widths; then stripes copied warm with a 671 MB kernel write before each."""
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
put = cl.Kernel(cl.Program(ctx, """
__kernel void put(__global float *a) { a[get_global_id(0)] = 0.0f; }
""").build(), "put")
dst = cl.Buffer(ctx, mf.READ_WRITE, R * 8192 * 4)
other = cl.Buffer(ctx, mf.READ_WRITE, R * 2048 * 4)


def rect(c0, w):
    e = cl.enqueue_copy(q, dst, host, buffer_origin=(0, 0, 0), host_origin=(c0 * 4, 0, 0),
                        region=(w * 4, R, 1), buffer_pitches=(w * 4, 0),
                        host_pitches=(C * 4, 0), is_blocking=False)
    e.wait()
    return R * w * 4 / ((e.profile.end - e.profile.start) * 1e-9) / 1e9


def show(name, rates):
    print(f"{name:40s} " + " ".join(f"{r:5.1f}" for r in rates))


base = 0
for w in (2048, 4096, 8192):
    offs = [base + i * w for i in range(4)]
    base = offs[-1] + w
    show(f"w={w} cold stripes", [rect(c, w) for c in offs])
    show(f"w={w} same stripes again", [rect(c, w) for c in offs])
offs = [i * 2048 for i in range(4)]
rs = []
for c in offs:
    put(q, (R * 2048,), None, other)
    q.finish()
    rs.append(rect(c, 2048))
show("w=2048 warm, a kernel write before each", rs)
rs = []
for c in offs:
    put(q, (min(1 << 20, R * 2048),), None, other)
    q.finish()
    rs.append(rect(c, 2048))
show("w=2048 warm, a 4 MB kernel write before", rs)
rs = []
for c in offs:
    put(q, (min(1 << 24, R * 2048),), None, other)
    q.finish()
    rs.append(rect(c, 2048))
show("w=2048 warm, a 64 MB kernel write before", rs)

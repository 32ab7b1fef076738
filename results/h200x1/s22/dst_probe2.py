"""Session 22, second probe: the first rect copy into a buffer after a device-side write
runs at 32 GB/s, the next at 49.5 (dst_probe.py). Is the state the buffer's or the
memory's, and what clears it? Each line: a new buffer B (81920 x 2048 floats), a
preparation, then one rect copy into B timed by its event (GB/s), twice."""
import statistics
import sys
import time

import numpy as np
import pyopencl as cl

R, C, W = (int(a) for a in sys.argv[1:4])
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
mf = cl.mem_flags
hb = cl.Buffer(ctx, mf.ALLOC_HOST_PTR | mf.READ_WRITE, R * C * 4)
host, _ = cl.enqueue_map_buffer(q, hb, cl.map_flags.WRITE | cl.map_flags.READ, 0, (R, C),
                                np.float32)
host[...] = np.arange(C, dtype=np.float32)[None, :]
nbytes = R * W * 4
pitch = W * 4
put = cl.Kernel(cl.Program(ctx, """
__kernel void put(__global float *a, ulong off) { a[off + get_global_id(0)] = 0.0f; }
""").build(), "put")
small = np.zeros(1024, np.float32)


def ev_rate(e, size):
    e.wait()
    return size / ((e.profile.end - e.profile.start) * 1e-9) / 1e9


def rect(buf, off=0, rows=R):
    return ev_rate(cl.enqueue_copy(q, buf, host, buffer_origin=(off, 0, 0),
                                   host_origin=(0, 0, 0), region=(pitch, rows, 1),
                                   buffer_pitches=(pitch, 0), host_pitches=(C * 4, 0),
                                   is_blocking=False), pitch * rows)


def linear(buf, size=nbytes, off=0):
    src = host.reshape(-1)[: size // 4]
    return ev_rate(cl.enqueue_copy(q, buf, src, dst_offset=off, is_blocking=False), size)


def new(size=nbytes + (1 << 20)):
    b = cl.Buffer(ctx, mf.READ_WRITE, size)
    cl.enqueue_fill_buffer(q, b, np.uint8(0), 0, 4096).wait()
    return b


def kern(b, n=R * W, off=0):
    put(q, (n,), None, b, np.uint64(off))
    q.finish()


cases = {
    "kernel writes 4 KiB at B's end": lambda b: kern(b, 1024, (nbytes >> 2) + 1024),
    "kernel writes 4 KiB at B's start": lambda b: kern(b, 1024, 0),
    "kernel writes another buffer": lambda b: kern(other),
    "kernel writes B, then 100 ms": lambda b: (kern(b), time.sleep(0.1)),
    "kernel writes B, linear 4 KiB into its start": lambda b: (kern(b), linear(b, 4096)),
    "kernel writes B, linear 4 KiB past the box": lambda b: (kern(b), linear(b, 4096, nbytes)),
    "kernel writes B, a one-row rect copy": lambda b: (kern(b), rect(b, 0, 1)),
    "kernel writes B, a 64-row rect copy": lambda b: (kern(b), rect(b, 0, 64)),
    "kernel writes B, a d2h read of 4 KiB": lambda b: (kern(b), cl.enqueue_copy(q, small, b).wait()),
}
other = new()
for name, prep in cases.items():
    rs = []
    for trial in range(2):
        b = new()
        prep(b)
        q.finish()
        rs.append((rect(b), rect(b)))
        b.release()
    print(f"{name:46s} " + "   ".join(f"{a:5.1f} {c:5.1f}" for a, c in rs))
print("-- linear copies (whole box) after a kernel wrote B: first, second")
for trial in range(2):
    b = new()
    kern(b)
    print(f"linear: {linear(b):5.1f} {linear(b):5.1f}")
    b.release()
print("-- rect copy into part 2 of B after a kernel wrote part 1 of B (separate 671 MB halves)")
for trial in range(2):
    b = new(2 * nbytes + 4096)
    kern(b)   # first half
    print(f"second half: {rect(b, nbytes):5.1f} {rect(b, nbytes):5.1f}")
    b.release()

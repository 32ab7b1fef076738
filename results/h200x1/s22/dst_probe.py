"""Session 22: what makes mvt's column boxes arrive at 34 GB/s in the run against 49 alone.

Host-to-device rectangular copies of an R x W float block out of a pinned R x C array,
timed by their profiling events (median of 3), into device memory that differs in

- where the box lies in its buffer, and how that offset reaches OpenCL: folded into the
  origin's byte component (x, bbmm's way: x can exceed the row pitch by far) or split into
  rows and bytes (y = offset // pitch, x = offset % pitch: the same addresses);
- what wrote the destination before: nothing, clEnqueueFillBuffer (zeros or a non-zero
  pattern), a kernel (zeros or indices), a linear host copy, a device copy; and whether a
  second copy into the same memory is as slow as the first.
"""
import statistics
import sys

import numpy as np
import pyopencl as cl

R, C, W = (int(a) for a in sys.argv[1:4])
ctx = cl.create_some_context(interactive=False)
dev = ctx.devices[0]
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
mf = cl.mem_flags
hb = cl.Buffer(ctx, mf.ALLOC_HOST_PTR | mf.READ_WRITE, R * C * 4)
host, _ = cl.enqueue_map_buffer(q, hb, cl.map_flags.WRITE | cl.map_flags.READ, 0, (R, C),
                                np.float32)
host[...] = np.arange(C, dtype=np.float32)[None, :]
nbytes = R * W * 4
pitch = W * 4
print(f"{R} x {W} floats ({nbytes / 1e6:.0f} MB) of a pinned {R} x {C} array; "
      f"{dev.name}")
prg = cl.Program(ctx, """
__kernel void put(__global float *a, ulong off, int idx) {
    size_t i = get_global_id(0);
    a[off + i] = idx ? (float)i : 0.0f;
}""").build()
put = cl.Kernel(prg, "put")


def copy(buf, off, fold="x"):
    """One rect copy of the block into buf at byte offset off; GB/s by its event."""
    if fold == "x":
        org = (off, 0, 0)
    else:
        org = (off % pitch, off // pitch, 0)
    e = cl.enqueue_copy(q, buf, host, buffer_origin=org, host_origin=(0, 0, 0),
                        region=(pitch, R, 1), buffer_pitches=(pitch, 0),
                        host_pitches=(C * 4, 0), is_blocking=False)
    e.wait()
    return nbytes / ((e.profile.end - e.profile.start) * 1e-9) / 1e9


def med(fn):
    return statistics.median(fn() for _ in range(3))


def newbuf(size):
    b = cl.Buffer(ctx, mf.READ_WRITE, size)
    cl.enqueue_fill_buffer(q, b, np.uint8(0), 0, 4096).wait()   # bbmm's first touch
    return b


big = newbuf(4 * nbytes + (64 << 20))
print("-- offset in a large buffer (written by copies only), folded into x / into y and x")
for off in (0, 256, 4096, 1 << 20, (1 << 20) + 256, nbytes, nbytes + 256, 3 * nbytes + 4352):
    x = med(lambda: copy(big, off, "x"))
    y = med(lambda: copy(big, off, "y"))
    print(f"offset {off:11d} ({off % pitch:5d} past a row): x {x:5.1f}  y/x {y:5.1f} GB/s")
big.release()

print("-- what wrote a new buffer first (offset 0): first copy, second copy, GB/s")


def state(name, prep):
    for trial in range(2):
        b = newbuf(nbytes)
        prep(b)
        q.finish()
        first = copy(b, 0)
        second = copy(b, 0)
        print(f"{name:34s} trial {trial}: {first:5.1f} {second:5.1f}")
        b.release()


other = newbuf(nbytes)
cl.enqueue_copy(q, other, np.ones(R * W, np.float32)).wait()
state("nothing (new)", lambda b: None)
state("fill zeros", lambda b: cl.enqueue_fill_buffer(q, b, np.uint8(0), 0, nbytes))
state("fill 0x3f pattern", lambda b: cl.enqueue_fill_buffer(q, b, np.uint32(0x3f3f3f3f), 0,
                                                             nbytes))
state("kernel writes zeros", lambda b: put(q, (R * W,), None, b, np.uint64(0),
                                               np.int32(0)))
state("kernel writes indices", lambda b: put(q, (R * W,), None, b, np.uint64(0),
                                                 np.int32(1)))
state("linear host copy of zeros", lambda b: cl.enqueue_copy(q, b, np.zeros(R * W, np.float32)))
state("device copy (of ones)", lambda b: cl.enqueue_copy(q, b, other))
state("kernel writes first 1/8 zeros", lambda b: put(q, (R * W // 8,), None, b,
                                                         np.uint64(0), np.int32(0)))
print("-- a filled buffer: zeros again by a kernel, then copies")
b = newbuf(nbytes)
cl.enqueue_fill_buffer(q, b, np.uint8(0), 0, nbytes)
for i in range(3):
    print(f"copy {i}: {copy(b, 0):5.1f}")
put(q, (R * W,), None, b, np.uint64(0), np.int32(0))
print(f"after kernel zeros: {copy(b, 0):5.1f}")
back = np.empty((R, W), np.float32)
cl.enqueue_copy(q, back, b, buffer_origin=(0, 0, 0), host_origin=(0, 0, 0),
                region=(pitch, R, 1), buffer_pitches=(pitch, 0), host_pitches=(pitch, 0))
assert np.array_equal(back, host[:, :W]), "copies came back wrong"
print("checked")

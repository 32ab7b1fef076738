"""Host cost of each pyopencl call bbmm makes per serial iteration, on the GPU machine's
host (session 27): kernel launch with and without changed arguments, linear and
rectangular host copies (pinned), with a wait list from another queue, a barrier, an
event status query. Each measured over many calls while the GPU stays nearly idle."""
import time

import numpy as np
import pyopencl as cl

ctx = cl.Context([p for p in cl.get_platforms() if "NVIDIA" in p.name or "Portable" in p.name][0].get_devices()[:1])
dev = ctx.devices[0]
q = cl.CommandQueue(ctx)
q2 = cl.CommandQueue(ctx)
n = 16384
src = "__kernel void k(" + ", ".join(
    [f"__global float *a{i}" for i in range(4)] + [f"int s{i}" for i in range(56)]) + \
    ") { if (get_global_id(0) == 0 && s0 < 0) a0[0] = s1; }"
knl = cl.Program(ctx, src).build().k
bufs = [cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64 << 20) for _ in range(4)]
args = bufs + [np.int32(i) for i in range(56)]
knl.set_args(*args)
pin = cl.Buffer(ctx, cl.mem_flags.ALLOC_HOST_PTR, 64 << 20)
host, _ = cl.enqueue_map_buffer(q, pin, cl.map_flags.WRITE | cl.map_flags.READ, 0,
                                (4096, 4096), np.float32)
row = host[7]
ENQ = cl.enqueue_nd_range_kernel
W, WR = cl._cl._enqueue_write_buffer, cl._cl._enqueue_write_buffer_rect
R = cl._cl._enqueue_read_buffer
N = 3000


def timed(name, f):
    q.finish(); q2.finish()
    t0 = time.perf_counter()
    for i in range(N):
        f(i)
    t1 = time.perf_counter()
    q.finish(); q2.finish()
    print(f"{name:58} {1e6 * (t1 - t0) / N:7.2f} us/call", flush=True)


timed("launch, no argument changed", lambda i: ENQ(q, knl, (256,), (256,)))
timed("launch, 4 int args set (pack_multi) first",
      lambda i: (knl._set_arg_buf_pack_multi((5, b"i", np.int32(i), 6, b"i", np.int32(i), 7, b"i", np.int32(i), 8, b"i", np.int32(i))),
                 ENQ(q, knl, (256,), (256,))))
timed("launch, 2 buffers set (_set_arg_multi) first",
      lambda i: (knl._set_arg_multi((0, bufs[i & 1], 1, bufs[2 + (i & 1)])),
                 ENQ(q, knl, (256,), (256,))))
timed("h2d linear 64 KiB pinned, event", lambda i: W(q, bufs[0], row, dst_offset=(i % 64) * 65536,
                                                       is_blocking=False, wait_for=None))
timed("d2h linear 64 KiB pinned, event", lambda i: R(q, bufs[0], row, src_offset=(i % 64) * 65536,
                                                      is_blocking=False, wait_for=None))
timed("h2d rect 1 row 16 KiB", lambda i: WR(q, bufs[0], host, buffer_origin=(0, i % 64, 0),
                                             host_origin=(0, 7, 0), region=(16384, 1, 1),
                                             buffer_pitches=(16384, 0), host_pitches=(16384, 0),
                                             is_blocking=False, wait_for=None))
evs = []


def cross(i):
    e = ENQ(q2, knl, (256,), (256,))
    W(q, bufs[1], row, dst_offset=0, is_blocking=False, wait_for=[e])


timed("launch on queue 2 + h2d on queue 1 waiting for it (pair)", cross)


def side(i):
    e = W(q2, bufs[1], row, dst_offset=0, is_blocking=False, wait_for=None)
    cl.enqueue_barrier(q, wait_for=[e])


timed("h2d on queue 2 + barrier on queue 1 waiting for it (pair)", side)
e0 = ENQ(q, knl, (256,), (256,))
q.finish()
timed("event status query", lambda i: e0.command_execution_status)
timed("launch + its event status query (pair)",
      lambda i: ENQ(q, knl, (256,), (256,)).command_execution_status)

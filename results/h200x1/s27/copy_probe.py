"""How close an OpenCL kernel gets to enqueue_copy on the H200 (session 27): copy kernels
of several shapes over heat2d's 12288^2 floats, and 5-point stencil sweeps that load a
strip's rows before storing them, against bbmm's strip kernel shape. Median of 20 runs
each, kernel time from profiling events; bytes = read + write once. Arguments: n, and
``random`` (default) or ``constant`` data."""
import statistics
import sys

import numpy as np
import pyopencl as cl

n = int(sys.argv[1]) if len(sys.argv) > 1 else 12288
plat = [p for p in cl.get_platforms() if "NVIDIA" in p.name or "Portable" in p.name][0]
ctx = cl.Context(plat.get_devices()[:1])
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
N = n * n
a = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * N)
b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * N)
DATA = sys.argv[2] if len(sys.argv) > 2 else "random"
if DATA == "random":  # what bbmm's arrays hold; constant data may be compressed
    host = np.random.default_rng(0).random((n, n), dtype=np.float32)
    cl.enqueue_copy(q, a, host)
    cl.enqueue_copy(q, b, host[::-1].copy())
else:
    cl.enqueue_fill_buffer(q, a, np.float32(1), 0, 4 * N)
    cl.enqueue_fill_buffer(q, b, np.float32(0), 0, 4 * N)
q.finish()
SRC = r"""
__kernel void c1(__global const float4 *restrict a, __global float4 *restrict b, int m) {
  int i = get_global_id(0); if (i < m) b[i] = a[i];
}
__kernel void c2(__global const float4 *restrict a, __global float4 *restrict b, int n) {
  const size_t c = (size_t)get_global_id(1) * (n / 4) + get_global_id(0);
  if (get_global_id(0) < n / 4 && get_global_id(1) < n) b[c] = a[c];
}
// K float4 per work-item, strided by the grid (coalesced), all loads before the stores
__kernel void ck(__global const float4 *restrict a, __global float4 *restrict b, int m) {
  int g = get_global_size(0), i = get_global_id(0);
  float4 v[K];
  #pragma unroll
  for (int r = 0; r < K; r++) { int j = i + r * g; v[r] = j < m ? a[j] : (float4)(0); }
  #pragma unroll
  for (int r = 0; r < K; r++) { int j = i + r * g; if (j < m) b[j] = v[r]; }
}
// grid-stride loop, one float4 per trip
__kernel void cg(__global const float4 *restrict a, __global float4 *restrict b, int m) {
  for (int i = get_global_id(0); i < m; i += get_global_size(0)) b[i] = a[i];
}
// heat2d-like sweep: work-item (column j, strip of R rows), rows loaded first
__kernel void sk(__global const float *restrict a, __global float *restrict b, int n) {
  int j = get_global_id(0), r0 = get_global_id(1) * R;
  if (j < 1 || j >= n - 1) return;
  float c[R + 2], l[R], rr[R];
  #pragma unroll
  for (int r = 0; r < R + 2; r++) { int i = r0 + r - 1; c[r] = (i >= 0 && i < n) ? a[i * n + j] : 0.f; }
  #pragma unroll
  for (int r = 0; r < R; r++) { int i = r0 + r; l[r] = i < n ? a[i * n + j - 1] : 0.f; rr[r] = i < n ? a[i * n + j + 1] : 0.f; }
  #pragma unroll
  for (int r = 0; r < R; r++) { int i = r0 + r; if (i >= 1 && i < n - 1)
      b[i * n + j] = 0.2f * (c[r + 1] + c[r] + c[r + 2] + l[r] + rr[r]); }
}
// the same sweep as a sliding window (bbmm's strip shape: load one row, store one row)
__kernel void sw(__global const float *restrict a, __global float *restrict b, int n) {
  int j = get_global_id(0), r0 = get_global_id(1) * R;
  if (j < 1 || j >= n - 1) return;
  float up = r0 >= 1 ? a[(r0 - 1) * n + j] : 0.f, mid = r0 < n ? a[r0 * n + j] : 0.f;
  #pragma unroll
  for (int r = 0; r < R; r++) {
    int i = r0 + r;
    float dn = i + 1 < n ? a[(i + 1) * n + j] : 0.f;
    if (i >= 1 && i < n - 1) b[i * n + j] = 0.2f * (mid + up + dn + a[i * n + j - 1] + a[i * n + j + 1]);
    up = mid; mid = dn;
  }
}
"""


def build(**defs):
    opts = [f"-D{k}={v}" for k, v in defs.items()]
    return cl.Program(ctx, SRC).build(options=opts)


def timed(knl, gsize, lsize, args, reps=20):
    knl.set_args(*args)
    ts = []
    for _ in range(reps + 2):
        e = cl.enqueue_nd_range_kernel(q, knl, gsize, lsize)
        e.wait()
        ts.append((e.profile.end - e.profile.start) * 1e-6)
    return statistics.median(ts[2:])


def rup(x, m):
    return -(-x // m) * m


ts = []
for _ in range(22):
    e = cl.enqueue_copy(q, b, a)
    e.wait()
    ts.append((e.profile.end - e.profile.start) * 1e-6)
floor = statistics.median(ts[2:])
rows = [("enqueue_copy", floor)]
m = N // 4
p = build(K=4, R=8)
rows.append(("copy float4 x1, 256", timed(p.c1, (rup(m, 256),), (256,), [a, b, np.int32(m)])))
rows.append(("copy float4 2-D (n/4, n), 64x1 (bench_kernels)", timed(p.c2, (rup(n // 4, 64), n), (64, 1), [a, b, np.int32(n)])))
rows.append(("copy float4 x1, 1024", timed(p.c1, (rup(m, 1024),), (1024,), [a, b, np.int32(m)])))
for K in (2, 4, 8):
    pk = build(K=K, R=8)
    for L in (256, 512):
        g = rup(-(-m // K), L)
        rows.append((f"copy float4 x{K} loads first, {L}", timed(pk.ck, (g,), (L,), [a, b, np.int32(m)])))
cu = ctx.devices[0].max_compute_units
for per in (4, 8, 16):
    rows.append((f"copy grid-stride, {per} groups/CU x 512", timed(p.cg, (cu * per * 512,), (512,), [a, b, np.int32(m)])))
for R in (4, 8, 16):
    pr = build(K=4, R=R)
    for lx, ly in ((256, 1), (128, 2), (64, 4)):
        gs = (rup(n, lx), rup(-(-n // R), ly))
        rows.append((f"stencil rows first R={R} {lx}x{ly}", timed(pr.sk, gs, (lx, ly), [a, b, np.int32(n)])))
        rows.append((f"stencil sliding R={R} {lx}x{ly}", timed(pr.sw, gs, (lx, ly), [a, b, np.int32(n)])))
nbytes = 8 * N
print(f"# {ctx.devices[0].name}, n={n}, {DATA} data: ms (median of 20), GB/s read + write, x enqueue_copy")
for name, t in rows:
    print(f"{name:44} {t:7.3f} {nbytes / t / 1e6:9.1f} {t / floor:6.3f}")

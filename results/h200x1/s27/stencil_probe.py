"""Which feature of bbmm's generated stencil kernel costs time on the H200 (session 27):
heat2d's sweep as a strip of R rows per work-item, 256x1 groups, one feature changed at a
time from a plain kernel with int indices; and 2-D copies with 64-bit or int indices and
64 or 256 work-items per group. Median of 20, random data; bytes = read + write once."""
import statistics
import sys

import numpy as np
import pyopencl as cl

n = int(sys.argv[1]) if len(sys.argv) > 1 else 12288
plat = [p for p in cl.get_platforms() if "NVIDIA" in p.name or "Portable" in p.name][0]
ctx = cl.Context(plat.get_devices()[:1])
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
N = n * n
host = np.random.default_rng(0).random((n, n), dtype=np.float32)
a = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
SRC = r"""
#pragma OPENCL FP_CONTRACT OFF
#ifndef IDX
#define IDX int
#endif
#define ST(up, l, c, r, dn) (0.125f * (((dn) - 2.0f * (c)) + (up)) + 0.125f * (((r) - 2.0f * (c)) + (l)) + (c))
__kernel void copy2(__global const float4 *restrict a, __global float4 *restrict b, int n) {
  const IDX c = (IDX)get_global_id(1) * (n / 4) + (IDX)get_global_id(0);
  if (get_global_id(0) < n / 4 && get_global_id(1) < n) b[c] = a[c];
}
/* base: a long offset argument added to every index (bbmm's box base); LATE: stores after
   all rows are computed (bbmm: "all loads first, then the stores") */
__kernel void st(__global const float *restrict a, BASE_T abase, __global float *restrict b,
                 BASE_T bbase, int n, int lb, int ub) {
  const int j = get_global_id(0) + 1, i0 = get_global_id(1) * R + 1;
  float v[R];
  const int il = i0 + R - 1;
  if (j > n - 2) return;
  if (i0 >= lb && il <= ub && il <= n - 2) {
    float up = a[abase + (IDX)(i0 - 1) * n + j], mid = a[abase + (IDX)i0 * n + j];
    #pragma unroll
    for (int r = 0; r < R; r++) {
      const int i = i0 + r;
      const float dn = a[abase + (IDX)(i + 1) * n + j];
      v[r] = ST(up, a[abase + (IDX)i * n + j - 1], mid, a[abase + (IDX)i * n + j + 1], dn);
#if !LATE
      b[bbase + (IDX)i * n + j] = v[r];
#endif
      up = mid; mid = dn;
    }
  } else {
    #pragma unroll
    for (int r = 0; r < R; r++) {
      const int i = i0 + r;
      if (i >= lb && i <= ub && i <= n - 2) {
        v[r] = ST(a[abase + (IDX)(i - 1) * n + j], a[abase + (IDX)i * n + j - 1], a[abase + (IDX)i * n + j],
                  a[abase + (IDX)i * n + j + 1], a[abase + (IDX)(i + 1) * n + j]);
#if !LATE
        b[bbase + (IDX)i * n + j] = v[r];
#endif
      }
    }
  }
#if LATE
  #pragma unroll
  for (int r = 0; r < R; r++) {
    const int i = i0 + r;
    if (i >= lb && i <= ub && i <= n - 2) b[bbase + (IDX)i * n + j] = v[r];
  }
#endif
}
"""


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
for idx in ("int", "long"):
    k = cl.Kernel(cl.Program(ctx, SRC).build(options=[f"-DIDX={idx}", "-DR=8", "-DLATE=0",
                                                       "-DBASE_T=int"]), "copy2")
    for L in (64, 256):
        rows.append((f"copy float4 2-D, {idx} index, {L}x1",
                     timed(k, (rup(n // 4, L), n), (L, 1), [a, b, np.int32(n)])))
for R in (4, 8):
    for idx, base, late in (("int", "int", 0), ("long", "int", 0), ("int", "long", 0),
                            ("int", "int", 1), ("int", "long", 1), ("long", "long", 1)):
        p = cl.Program(ctx, SRC).build(options=[f"-DIDX={idx}", f"-DR={R}", f"-DLATE={late}",
                                                f"-DBASE_T={base}"])
        k = cl.Kernel(p, "st")
        bt = np.int64 if base == "long" else np.int32
        for L in (256,):
            gs = (rup(n - 2, L), rup(-(-(n - 2) // R), 1))
            t = timed(k, gs, (L, 1), [a, bt(0), b, bt(0), np.int32(n), np.int32(1),
                                      np.int32(n - 2)])
            rows.append((f"stencil R={R}: {idx} index, {base} base, "
                         f"{'stores last' if late else 'stores inline'}", t))
nbytes = 8 * N
print(f"# {ctx.devices[0].name}, n={n}: ms (median of 20), GB/s read + write, x enqueue_copy")
for name, t in rows:
    print(f"{name:52} {t:7.3f} {nbytes / t / 1e6:9.1f} {t / floor:6.3f}")

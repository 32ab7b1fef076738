"""Session 25: how fast can matmul's nest run on one H200 while keeping bbmm's exact
order of operations (no FMA contraction, each C[i][j] summed over k in order)?

Kernels on the same n x n problem, each checked bit for bit against the first, timed by
profiling events (median of 5): one point per work-item with C read and written every k
(bbmm's kernel today), the same with C in a register, and register blocks of R rows x Q
columns per work-item (columns get_local_size(0) apart, so a warp's loads stay
coalesced), with and without local-memory tiles of A and B.

    python3 mm_probe.py N
"""
import statistics
import sys

import numpy as np
import pyopencl as cl

n = int(sys.argv[1])
gpus = [d for p in cl.get_platforms() for d in p.get_devices() if d.type & cl.device_type.GPU]
dev = (gpus or [d for p in cl.get_platforms() for d in p.get_devices()])[0]
ctx = cl.Context([dev])
q = cl.CommandQueue(ctx, dev, properties=cl.command_queue_properties.PROFILING_ENABLE)
rng = np.random.default_rng(0)
A = rng.random((n, n), dtype=np.float32)
B = rng.random((n, n), dtype=np.float32)
C0 = rng.random((n, n), dtype=np.float32)
mf = cl.mem_flags
dA = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=A)
dB = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=B)
dC = cl.Buffer(ctx, mf.READ_WRITE, C0.nbytes)
alpha, beta = np.float32(1.5), np.float32(1.2)

SRC = r"""
#pragma OPENCL FP_CONTRACT OFF
#ifndef R
#define R 1
#endif
#ifndef Q
#define Q 1
#endif
#ifndef KC
#define KC 32
#endif
__kernel void global_c(int n, float alpha, float beta, __global float* C,
                       __global const float* restrict A, __global const float* restrict B) {
  int i = get_global_id(1), j = get_global_id(0);
  C[(long)i * n + j] = C[(long)i * n + j] * beta;
#pragma unroll 8
  for (int k = 0; k < n; k++)
    C[(long)i * n + j] = C[(long)i * n + j] + alpha * A[(long)i * n + k] * B[(long)k * n + j];
}

__kernel void reg_c(int n, float alpha, float beta, __global float* C,
                    __global const float* restrict A, __global const float* restrict B) {
  int i = get_global_id(1), j = get_global_id(0);
  float c = C[(long)i * n + j] * beta;
#pragma unroll 8
  for (int k = 0; k < n; k++)
    c = c + alpha * A[(long)i * n + k] * B[(long)k * n + j];
  C[(long)i * n + j] = c;
}

/* R rows x Q columns per work-item: rows consecutive, columns get_local_size(0) apart */
__kernel void block(int n, float alpha, float beta, __global float* C,
                    __global const float* restrict A, __global const float* restrict B) {
  const int L = get_local_size(0);
  const int i0 = get_global_id(1) * R;
  const int j0 = get_group_id(0) * L * Q + get_local_id(0);
  float c[R][Q];
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int s = 0; s < Q; s++)
      c[r][s] = C[(long)(i0 + r) * n + j0 + s * L] * beta;
#pragma unroll 4
  for (int k = 0; k < n; k++) {
    float b[Q];
#pragma unroll
    for (int s = 0; s < Q; s++) b[s] = B[(long)k * n + j0 + s * L];
#pragma unroll
    for (int r = 0; r < R; r++) {
      float a = alpha * A[(long)(i0 + r) * n + k];
#pragma unroll
      for (int s = 0; s < Q; s++) c[r][s] = c[r][s] + a * b[s];
    }
  }
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int s = 0; s < Q; s++)
      C[(long)(i0 + r) * n + j0 + s * L] = c[r][s];
}

/* bbmm's generated form: alpha * A and B loaded per point, rows outer, columns inner */
__kernel void bbmm_like(int n, float alpha, float beta, __global float* C,
                        __global const float* restrict A, __global const float* restrict B) {
  const int L = get_local_size(0);
  const int i0 = get_global_id(1) * R;
  const int j0 = get_group_id(0) * L * Q + get_local_id(0);
  float c[R][Q];
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int s = 0; s < Q; s++)
      c[r][s] = C[(long)(i0 + r) * n + j0 + s * L] * beta;
#pragma unroll 4
  for (int k = 0; k < n; k++) {
#pragma unroll
    for (int r = 0; r < R; r++) {
#pragma unroll
      for (int s = 0; s < Q; s++)
        c[r][s] = c[r][s] + ((alpha * A[(int)(i0 + r) * n + k]) * B[(int)k * n + j0 + s * L]);
    }
  }
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int s = 0; s < Q; s++)
      C[(long)(i0 + r) * n + j0 + s * L] = c[r][s];
}

/* bbmm_like plus one feature of bbmm's kernel at a time: -DLONGBASE (addresses from a
   long base argument, as bbmm's slots), -DTWOPATH (a guarded copy of the loop for blocks
   that leave the tile), -DSTRIDE (row strides from arguments, not n) */
__kernel void bbmm_like2(int n, float alpha, float beta, __global float* C,
                         __global const float* restrict A, __global const float* restrict B,
                         long base, int st, int lb, int ub) {
#ifdef STRIDE
  const int sA = st, sB = st;
#else
  const int sA = n, sB = n;
#endif
#ifdef LONGBASE
#define AT(X, s, x0, x1) X[base + (int)(x0) * s + (int)(x1)]
#else
#define AT(X, s, x0, x1) X[(int)(x0) * s + (int)(x1)]
#endif
  const int L = get_local_size(0);
  const int i0 = get_global_id(1) * R;
  const int j0 = get_group_id(0) * L * Q + get_local_id(0);
  float c[R][Q];
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int s = 0; s < Q; s++)
      c[r][s] = C[(long)(i0 + r) * n + j0 + s * L] * beta;
  bool full = true;
#ifdef TWOPATH
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int s = 0; s < Q; s++)
      full = full && !(i0 + r < lb || i0 + r > ub) && !(j0 + s * L > n - 1);
#endif
  if (full) {
#pragma unroll 4
    for (int k = 0; k < n; k++) {
#pragma unroll
      for (int r = 0; r < R; r++) {
#pragma unroll
        for (int s = 0; s < Q; s++)
          c[r][s] = c[r][s] + ((alpha * AT(A, sA, i0 + r, k)) * AT(B, sB, k, j0 + s * L));
      }
    }
  } else {
#pragma unroll 4
    for (int k = 0; k < n; k++) {
#pragma unroll
      for (int r = 0; r < R; r++) {
#pragma unroll
        for (int s = 0; s < Q; s++)
          if (!(i0 + r < lb || i0 + r > ub) && !(j0 + s * L > n - 1))
            c[r][s] = c[r][s] + ((alpha * AT(A, sA, i0 + r, k)) * AT(B, sB, k, j0 + s * L));
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int s = 0; s < Q; s++)
      C[(long)(i0 + r) * n + j0 + s * L] = c[r][s];
}

/* the same with A's rows of the group staged in local memory, KC trips at a time */
__kernel void block_lds(int n, float alpha, float beta, __global float* C,
                        __global const float* restrict A, __global const float* restrict B) {
  const int L = get_local_size(0), G = get_local_size(1);
  const int i0 = get_global_id(1) * R;
  const int j0 = get_group_id(0) * L * Q + get_local_id(0);
  const int lid = get_local_id(1) * L + get_local_id(0);
  __local float As[KC][64];    /* [k][row of the group], G * R <= 64 */
  float c[R][Q];
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int s = 0; s < Q; s++)
      c[r][s] = C[(long)(i0 + r) * n + j0 + s * L] * beta;
  const int gi0 = get_group_id(1) * G * R;
  for (int kk = 0; kk < n; kk += KC) {
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = lid; e < KC * G * R; e += L * G) {
      int row = e / KC, kq = e % KC;
      As[kq][row] = alpha * A[(long)(gi0 + row) * n + kk + kq];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll 4
    for (int kq = 0; kq < KC; kq++) {
      float b[Q];
#pragma unroll
      for (int s = 0; s < Q; s++) b[s] = B[(long)(kk + kq) * n + j0 + s * L];
#pragma unroll
      for (int r = 0; r < R; r++) {
        float a = As[kq][get_local_id(1) * R + r];
#pragma unroll
        for (int s = 0; s < Q; s++) c[r][s] = c[r][s] + a * b[s];
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int s = 0; s < Q; s++)
      C[(long)(i0 + r) * n + j0 + s * L] = c[r][s];
}
"""


def run(name, opts, gsize, lsize):
    prg = cl.Program(ctx, SRC).build(options=opts)
    k = getattr(prg, name)
    extra = ((np.int64(0), np.int32(n), np.int32(0), np.int32(n - 1))
             if name == "bbmm_like2" else ())
    k.set_args(np.int32(n), alpha, beta, dC, dA, dB, *extra)
    ts = []
    for _ in range(5):
        cl.enqueue_copy(q, dC, C0).wait()
        e = cl.enqueue_nd_range_kernel(q, k, gsize, lsize)
        e.wait()
        ts.append((e.profile.end - e.profile.start) * 1e-9)
    out = np.empty_like(C0)
    cl.enqueue_copy(q, out, dC).wait()
    return statistics.median(ts), out


flop = 2.0 * n ** 3
ref = None
print(f"matmul n={n}, {dev.name}: ms, TFLOP/s, bit-identical to the first")
cases = [("global_c", [], (n, n), (256, 1)), ("reg_c", [], (n, n), (256, 1))]
if len(sys.argv) > 2 and sys.argv[2] == "features":
    for R, Q, L in ((8, 2, 256), (8, 4, 64)):
        for f in ([], ["-DLONGBASE"], ["-DTWOPATH"], ["-DSTRIDE"],
                  ["-DLONGBASE", "-DTWOPATH", "-DSTRIDE"]):
            cases.append(("bbmm_like2", [f"-DR={R}", f"-DQ={Q}"] + f, (n // Q, n // R), (L, 1)))
elif len(sys.argv) > 2:      # bbmm's form in its work-group shapes
    for R, Q, L in ((8, 1, 256), (8, 2, 256), (8, 2, 128), (4, 2, 256), (8, 4, 256), (8, 4, 64)):
        cases.append(("bbmm_like", [f"-DR={R}", f"-DQ={Q}"], (n // Q, n // R), (L, 1)))
        cases.append(("block", [f"-DR={R}", f"-DQ={Q}"], (n // Q, n // R), (L, 1)))
for R, Q, L, G in () if len(sys.argv) > 2 else ((8, 1, 256, 1), (8, 2, 128, 1), (8, 4, 64, 1), (4, 4, 64, 4), (8, 4, 32, 4),
                   (8, 8, 32, 4), (4, 8, 32, 8), (8, 8, 16, 8)):
    if n % (L * Q) or n % (R * G):
        continue
    cases.append(("block", [f"-DR={R}", f"-DQ={Q}"], (n // Q, n // R), (L, G)))
    if G * R <= 64:
        cases.append(("block_lds", [f"-DR={R}", f"-DQ={Q}", "-DKC=32"], (n // Q, n // R), (L, G)))
for name, opts, gs, ls in cases:
    try:
        t, out = run(name, opts, gs, ls)
    except cl.Error as e:
        print(f"{name:10} {' '.join(opts):24} local {ls}: {type(e).__name__} {str(e)[:80]}")
        continue
    if ref is None:
        ref = out
    same = np.array_equal(out, ref)
    print(f"{name:10} {' '.join(opts):24} local {str(ls):9} {t * 1e3:9.2f} {flop / t / 1e12:7.2f}  {same}",
          flush=True)

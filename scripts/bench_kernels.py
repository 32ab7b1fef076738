"""What a GPU and its driver allow, measured apart from bbmm: stencil kernel shapes against
the copy floor, the host's cost per kernel launch, and the latency of a cross-device hop.

Three parts (performance issue, targets 1 and 3), each printed as a table:

* **stencil**: heat2d's 5-point sweep (``polybench/heat2d.c``, one nest, A -> B on the
  interior of an n x n float array) written several ways, timed by profiling events
  (median of ``--repeat``) against ``enqueue_copy`` of the same n x n array (the floor
  that ``bench_floor.py`` uses: read + write once). Every variant's result is compared
  bit for bit with the one-point-per-work-item kernel's. Variants:

  - ``point``: one point per work-item (bbmm's default shape and the baseline's);
  - ``copy-float``, ``copy-float4``: a kernel that only copies (what a kernel can reach);
  - ``strip R``: a work-item walks R rows down one column, keeping the rows above, at
    and below in registers (each value loaded once from memory);
  - ``vec4 R``: the same with four consecutive columns per work-item (aligned float4
    loads of the three rows, two scalars for the neighbours left and right);
  - ``bbmm CxR``: bbmm's own generated kernel for the nest, built as the runtime builds
    it for a tile holding the whole arrays, with C x R points per work-item
    (``BBMM_COARSEN`` x ``BBMM_COARSEN1``; R > 1 slides register windows down the rows).

* **launch**: host microseconds per launch of a kernel with 60 arguments (bbmm's
  generated kernels take 40-60): pyopencl ``set_args`` of all of them then enqueue,
  ``set_arg`` of 3 numpy scalars then enqueue, bbmm's ``OpenCLDevice.launch`` with none
  or 3 changed, and a bare ``enqueue_nd_range_kernel``; one work-group each, so the
  device never holds the host up.

* **rect**: host-device copies through bbmm's own ``write_rect``/``read_rect`` of column
  blocks ``--rows`` x W floats (W from ``--widths``) out of a host array ``--rows`` x
  ``--cols``, into a device box of the block's shape: GB/s each way from pinned and from
  pageable host memory (what box-in/box-out of a column-wise access such as mvt's second
  product moves at; W = ``--cols`` is one contiguous copy).

* **hop** (2 devices in one context): a row of ``--row`` floats written by a kernel on
  device 0, read into pinned host memory and written to device 1, whose kernel reads it,
  then back: microseconds per hop (what floyd's row k and the stencils' halos pay per
  serial iteration on the critical path), against a chain of kernels on one queue.

Usage::

    python scripts/bench_kernels.py [--n 12288] [--repeat 20]
                                    [--parts stencil,launch,rect,hop]
                                    [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import os

import numpy as np
import pyopencl as cl

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, _ROOT)

from bbmm.devices.opencl import make_devices, pinned_empty  # noqa: E402

STENCIL = r"""
#pragma OPENCL FP_CONTRACT OFF
#define ST(up, l, c, r, dn) (0.125f * ((dn) - 2.0f * (c) + (up)) \
                           + 0.125f * ((r) - 2.0f * (c) + (l)) + (c))

/* one point per work-item; j on dimension 0 */
__kernel void point(__global float *B, __global const float * restrict A, const int n)
{
    const int j = get_global_id(0) + 1, i = get_global_id(1) + 1;
    if (j > n - 2 || i > n - 2) return;
    const size_t c = (size_t)i * n + j;
    B[c] = ST(A[c - n], A[c - 1], A[c], A[c + 1], A[c + n]);
}

__kernel void copy_float(__global float *B, __global const float * restrict A, const int n)
{
    const size_t c = (size_t)get_global_id(1) * n + get_global_id(0);
    if (get_global_id(0) < n && get_global_id(1) < n) B[c] = A[c];
}

__kernel void copy_float4(__global float4 *B, __global const float4 * restrict A, const int n)
{
    const size_t c = (size_t)get_global_id(1) * (n / 4) + get_global_id(0);
    if (get_global_id(0) < n / 4 && get_global_id(1) < n) B[c] = A[c];
}

/* R rows per work-item down column j, the three rows' values in registers */
__kernel void strip(__global float *B, __global const float * restrict A, const int n)
{
    const int j = get_global_id(0) + 1, i0 = get_global_id(1) * R + 1;
    if (j > n - 2 || i0 > n - 2) return;
    size_t c = (size_t)i0 * n + j;
    float up = A[c - n], mid = A[c];
#pragma unroll
    for (int r = 0; r < R; r++, c += n) {
        if (i0 + r <= n - 2) {  /* a test, not a break: the loop stays unrolled */
            const float dn = A[c + n];
            B[c] = ST(up, A[c - 1], mid, A[c + 1], dn);
            up = mid; mid = dn;
        }
    }
}

/* four columns 4q .. 4q+3 per work-item (n % 4 == 0: aligned float4 rows), R rows */
__kernel void vec4(__global float *B, __global const float * restrict A, const int n)
{
    const int j0 = get_global_id(0) * 4, i0 = get_global_id(1) * R + 1;
    if (j0 >= n || i0 > n - 2) return;
    size_t c = (size_t)i0 * n + j0;
    float4 up = vload4(0, A + c - n), mid = vload4(0, A + c);
    const bool inner = j0 >= 4 && j0 + 4 <= n - 4;
#pragma unroll
    for (int r = 0; r < R; r++, c += n) {
        if (i0 + r > n - 2) continue;
        const float4 dn = vload4(0, A + c + n);
        const float l = j0 > 0 ? A[c - 1] : 0.0f, rr = j0 + 4 < n ? A[c + 4] : 0.0f;
        float4 o;
        o.s0 = ST(up.s0, l, mid.s0, mid.s1, dn.s0);
        o.s1 = ST(up.s1, mid.s0, mid.s1, mid.s2, dn.s1);
        o.s2 = ST(up.s2, mid.s1, mid.s2, mid.s3, dn.s2);
        o.s3 = ST(up.s3, mid.s2, mid.s3, rr, dn.s3);
        if (inner) {
            vstore4(o, 0, B + c);
        } else {  /* the first and last four columns: only the interior is written */
            if (j0 >= 1) B[c] = o.s0;
            if (j0 + 1 >= 1 && j0 + 1 <= n - 2) B[c + 1] = o.s1;
            if (j0 + 2 <= n - 2) B[c + 2] = o.s2;
            if (j0 + 3 <= n - 2) B[c + 3] = o.s3;
        }
        up = mid; mid = dn;
    }
}
"""


COLUMN = r"""
#pragma OPENCL FP_CONTRACT OFF
/* mvt's second product on one tile: x[i] += A[j][i] y[j], j < R in order, i < W (A is
 * R x W, row pitch W).  Every variant adds in the source's order (bit-identical). */
__kernel void col_mem(__global float *x, __global const float * restrict A,
                      __global const float * restrict y, const int R, const int W)
{
    const int i = get_global_id(0);
    if (i >= W) return;
#pragma unroll 8
    for (int j = 0; j < R; j++)
        x[i] = x[i] + A[(size_t)j * W + i] * y[j];
}

__kernel void col_reg(__global float *x, __global const float * restrict A,
                      __global const float * restrict y, const int R, const int W)
{
    const int i = get_global_id(0);
    if (i >= W) return;
    float acc = x[i];
#pragma unroll 8
    for (int j = 0; j < R; j++)
        acc = acc + A[(size_t)j * W + i] * y[j];
    x[i] = acc;
}

/* U loads issued before their U additions */
__kernel void col_pf(__global float *x, __global const float * restrict A,
                     __global const float * restrict y, const int R, const int W)
{
    const int i = get_global_id(0);
    if (i >= W) return;
    float acc = x[i];
    int j = 0;
    for (; j + U <= R; j += U) {
        float a[U];
#pragma unroll
        for (int u = 0; u < U; u++) a[u] = A[(size_t)(j + u) * W + i] * y[j + u];
#pragma unroll
        for (int u = 0; u < U; u++) acc = acc + a[u];
    }
    for (; j < R; j++)
        acc = acc + A[(size_t)j * W + i] * y[j];
    x[i] = acc;
}

/* a work-group of 32 x G work-items owns 32 columns: all G warps stage K x G rows of
 * products in local memory, then warp 0 adds them in order */
__kernel void col_lds(__global float *x, __global const float * restrict A,
                      __global const float * restrict y, const int R, const int W)
{
    __local float st[G * K][32];
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int i = get_group_id(0) * 32 + lx;
    const bool in = i < W;
    float acc = (ly == 0 && in) ? x[i] : 0.0f;
    for (int j0 = 0; j0 < R; j0 += G * K) {
#pragma unroll
        for (int k = 0; k < K; k++) {
            const int r = ly + G * k, j = j0 + r;
            st[r][lx] = (in && j < R) ? A[(size_t)j * W + i] * y[j] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (ly == 0) {
            const int n = min(G * K, R - j0);
            for (int r = 0; r < n; r++) acc = acc + st[r][lx];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (ly == 0 && in) x[i] = acc;
}
"""


def bench_column(dev, rows: int, widths: list[int], repeat: int,
                 after_copy: bool = True) -> list[dict]:
    """mvt's column product x[i] += A[j][i] y[j] on an R x W tile, several kernel shapes,
    each checked bit for bit against ``col_reg`` (the source's order of additions)."""
    ctx = dev.context
    q = cl.CommandQueue(ctx, dev.cl_device,
                        properties=cl.command_queue_properties.PROFILING_ENABLE)
    rng = np.random.default_rng(0)
    rows_out: list[dict] = []
    mf = cl.mem_flags
    for W in widths:
        host = rng.random((rows, W), dtype=np.float32)
        yh = rng.random(rows, dtype=np.float32)
        A = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host)
        y = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=yh)
        x = cl.Buffer(ctx, mf.READ_WRITE, 4 * W)
        R32, W32 = np.int32(rows), np.int32(W)
        variants = []
        base = cl.Program(ctx, COLUMN).build(options="-DU=8 -DG=8 -DK=8")
        for ls in (32, 64, 256):
            g = -(-W // ls) * ls
            variants.append((f"mem l{ls}", cl.Kernel(base, "col_mem"), (g,), (ls,)))
            variants.append((f"reg l{ls}", cl.Kernel(base, "col_reg"), (g,), (ls,)))
            variants.append((f"bbmm l{ls}", _generated_mvt1(ctx, A, x, y, rows, W), (g,), (ls,)))
        variants.append(("bbmm long l32", _generated_mvt1(ctx, A, x, y, rows, W, small=False),
                         (-(-W // 32) * 32,), (32,)))
        for U in (16, 32):
            pf = cl.Program(ctx, COLUMN).build(options=f"-DU={U} -DG=8 -DK=8")
            variants.append((f"pf{U} l32", pf.col_pf, (-(-W // 32) * 32,), (32,)))
        for G, K in ((4, 8), (8, 8), (8, 16), (16, 8), (32, 4)):
            pl = cl.Program(ctx, COLUMN).build(options=f"-DU=8 -DG={G} -DK={K}")
            variants.append((f"lds {G}x{K}", pl.col_lds, (-(-W // 32) * 32, G), (32, G)))
        ref = out = None
        zero = np.zeros(W, np.float32)
        if after_copy:
            from bbmm.devices.opencl import pinned_empty
            pinned = pinned_empty(ctx, host.shape, np.float32)
            pinned[...] = host
        def run(k, gs, ls):
            if isinstance(k, cl.Kernel):
                return k(q, gs, ls, x, A, y, R32, W32)
            return cl.enqueue_nd_range_kernel(q, k(), gs, ls)  # bbmm's: arguments set

        for name, k, gs, ls in variants:
            cl.enqueue_copy(q, x, zero).wait()
            run(k, gs, ls).wait()
            out = np.empty(W, np.float32)
            cl.enqueue_copy(q, out, x).wait()
            if ref is None:
                ref = out
            same = bool(np.array_equal(out, ref))
            ms = _median_ms(q, lambda: run(k, gs, ls), repeat)
            rows_out.append({"W": W, "variant": name, "ms": ms,
                             "GB/s": host.nbytes / ms / 1e6, "same": same})
            if after_copy and name in ("bbmm l32", "lds 32x4"):
                # the kernel right after a host-to-device copy of the tile (as under box-in)
                times = []
                for _ in range(repeat):
                    cl.enqueue_copy(q, A, pinned)
                    evt = run(k, gs, ls)
                    evt.wait()
                    times.append((evt.profile.end - evt.profile.start) * 1e-6)
                ms = statistics.median(times)
                rows_out.append({"W": W, "variant": name + " after h2d", "ms": ms,
                                 "GB/s": host.nbytes / ms / 1e6, "same": same})
        for b in (A, x, y):
            b.release()
    return rows_out


def _median_ms(queue, fn, repeat: int) -> float:
    fn().wait()  # warm: the first launch may build or page in
    times = []
    for _ in range(repeat):
        evt = fn()
        evt.wait()
        times.append((evt.profile.end - evt.profile.start) * 1e-6)
    return statistics.median(times)


def bench_stencil(dev, n: int, repeat: int, strips: list[int],
                  generated: list[tuple[int, int]] = ()) -> list[dict]:
    """Kernel time of each variant on one device, against enqueue_copy of n x n floats."""
    if n % 4:
        raise SystemExit("--n must be a multiple of 4 (vec4 variants)")
    ctx = dev.context
    q = cl.CommandQueue(ctx, dev.cl_device,
                        properties=cl.command_queue_properties.PROFILING_ENABLE)
    rng = np.random.default_rng(0)
    host = rng.random((n, n), dtype=np.float32)
    mf = cl.mem_flags
    A = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=host)
    B = cl.Buffer(ctx, mf.READ_WRITE, host.nbytes)
    C = cl.Buffer(ctx, mf.READ_WRITE, host.nbytes)
    nbytes = 2 * host.nbytes  # read once + write once
    n32 = np.int32(n)
    rows: list[dict] = []

    def add(name, ms):
        floor = rows[0]["ms"] if rows else ms
        rows.append({"variant": name, "ms": ms, "GB/s": nbytes / ms / 1e6,
                     "x floor": ms / floor})

    add("enqueue_copy", _median_ms(q, lambda: cl.enqueue_copy(q, B, A), repeat))
    prg = {R: cl.Program(ctx, STENCIL).build(options=f"-DR={R}") for R in [1] + strips}
    p1 = prg[1]
    k = p1.copy_float
    gn = -(-n // 256) * 256
    add("copy-float", _median_ms(q, lambda: k(q, (gn, n), (256, 1), B, A, n32), repeat))
    k4 = p1.copy_float4
    g4 = -(-(n // 4) // 64) * 64
    add("copy-float4", _median_ms(q, lambda: k4(q, (g4, n), (64, 1), B, A, n32), repeat))
    g4w = -(-(n // 4) // 256) * 256
    # the same copy in groups of 256: as fast as enqueue_copy on the H200 (groups of 64
    # hold it at 1.25x of enqueue_copy), so kernels can reach the floor
    add("copy-float4 256x1", _median_ms(q, lambda: k4(q, (g4w, n), (256, 1), B, A, n32),
                                        repeat))
    m = n - 2
    gx = -(-m // 256) * 256
    kp = p1.point
    add("point 256x1", _median_ms(q, lambda: kp(q, (gx, m), (256, 1), C, A, n32), repeat))
    add("point 32x8", _median_ms(
        q, lambda: kp(q, (-(-m // 32) * 32, -(-m // 8) * 8), (32, 8), C, A, n32), repeat))
    ref = np.empty_like(host)
    cl.enqueue_copy(q, C, np.zeros_like(host)).wait()
    kp(q, (gx, m), (256, 1), C, A, n32).wait()
    cl.enqueue_copy(q, ref, C).wait()
    out = np.empty_like(host)
    for R in strips:
        for name, kern, gsize, lsize in (
                (f"strip {R}", prg[R].strip, (gx, -(-m // R)), (256, 1)),
                (f"vec4 {R}", prg[R].vec4, (-(-(n // 4) // 64) * 64, -(-m // R)), (64, 1))):
            cl.enqueue_copy(q, B, np.zeros_like(host)).wait()
            kern(q, gsize, lsize, B, A, n32).wait()
            cl.enqueue_copy(q, out, B).wait()
            if not np.array_equal(out[1:-1, 1:-1], ref[1:-1, 1:-1]):
                bad = np.argwhere(out[1:-1, 1:-1] != ref[1:-1, 1:-1])
                raise SystemExit(f"{name}: differs from 'point' at {len(bad)} points, "
                                 f"first {tuple(bad[0] + 1)}")
            add(name, _median_ms(q, lambda: kern(q, gsize, lsize, B, A, n32), repeat))
    if generated:
        from bbmm.codegen.compile import compile_program
        prog = compile_program(os.path.join(_ROOT, "polybench", "heat2d.c"))
    for co in generated:
        for start in (1, 0):
            # work-item 0 at column 1 (the loop's lower bound) or 0 (the runtime's
            # default: $BBMM_ALIGN, warps on whole memory segments)
            name = f"bbmm {co[0]}x{co[1]}" + (" from 0" if start == 0 else "")
            launch = _generated_heat2d(prog, ctx, A, B, n, co, start)
            cl.enqueue_copy(q, B, np.zeros_like(host)).wait()
            launch(q).wait()
            cl.enqueue_copy(q, out, B).wait()
            if not np.array_equal(out[1:-1, 1:-1], ref[1:-1, 1:-1]):
                raise SystemExit(f"{name}: bbmm's kernel differs from 'point'")
            add(name, _median_ms(q, lambda: launch(q), repeat))
    for b in (A, B, C):
        b.release()
    return rows


def _whole_tile_kernel(ctx, prog, nest: int, arrays, scalars, opts: list[str]):
    """bbmm's own kernel for ``nest`` of the compiled ``prog``, built as the runtime builds
    it for one tile holding the whole arrays (each access's slot known, ``opts`` added),
    with its arguments set: ``arrays`` are ``(name, buffer, box)``, ``scalars`` the
    leading arguments (parameters, host iterators, lb, ub, g0...)."""
    from bbmm.buffers import Copy
    from bbmm.devices.base import Allocation
    from bbmm.runtime import TileBuffers, lean_args

    ks = prog.nests[nest].kernel
    tb = TileBuffers()
    for name, buf, box in arrays:
        tb.pieces[name] = [(box, Copy(name, box, None, Allocation(buf, 0, 4 * box.volume), 4))]
    args = [np.int32(v) for v in scalars]
    opts = opts + [f"-DBBMM_LEAN_{ks.name}"]  # one slot per array: its first (a lean build)
    for name, ids in zip(ks.arrays, ks.access_ids):
        tb.access[name] = [0] * len(ids)
        opts = opts + [f"-D{name}_SEL{k}_IS=0" for k in ids] + [f"-DBBMM_NS_{ks.name}_{name}=1"]
        args += lean_args(tb, name, 1, tb.pieces[name][0][0].ndim)
    knl = getattr(cl.Program(ctx, ks.source).build(options=" ".join(opts)), ks.name)
    knl.set_args(*args)
    return knl


def _generated_heat2d(prog, ctx, A, B, n: int, co: tuple[int, int], start: int = 1):
    """bbmm's own kernel for heat2d's first nest (B from A) of the compiled ``prog`` on one
    tile holding the whole arrays (32-bit offsets, ``co`` points per work-item, work-item
    0 at column ``start``), as ``launch(queue) -> event``."""
    from bbmm.box import Box

    whole = Box.from_shape((n, n))
    knl = _whole_tile_kernel(
        ctx, prog, 0, [("A", A, whole), ("B", B, whole)],
        [1, n, 0, 1, n - 2, 1, start],                   # tsteps, n, t; lb, ub, g0, g1
        [f"-DBBMM_CO={co[0]}", f"-DBBMM_CO1={co[1]}", "-DBBMM_IDX=int"])
    m = n - 1 - start                                    # columns start .. n-2
    gsize = (-(-m // (256 * co[0])) * 256, -(-(n - 2) // co[1]))
    return lambda q: cl.enqueue_nd_range_kernel(q, knl, gsize, (256, 1))


def _generated_mvt1(ctx, A, x, y, rows: int, W: int, small: bool = True):
    """bbmm's own kernel for mvt's second product (polybench/mvt.c, nest 1) on one tile of
    ``rows`` x ``W`` (m = rows, n = W; 32-bit offsets if ``small``), its arguments set;
    returns ``() -> kernel``."""
    from bbmm.box import Box
    from bbmm.config import RuntimeConfig
    from bbmm.codegen.compile import compile_program

    unroll = RuntimeConfig.from_env().kernels.unroll  # $BBMM_UNROLL, as a run reads it

    prog = compile_program(os.path.join(_ROOT, "polybench", "mvt.c"))
    knl = _whole_tile_kernel(
        ctx, prog, 1, [("A", A, Box.from_shape((rows, W))), ("x2", x, Box.from_shape((W,))),
                       ("y2", y, Box.from_shape((rows,)))],
        [rows, W, 0, W - 1, 0],                          # m, n; lb, ub, g0
        (["-DBBMM_IDX=int"] if small else []) + ([] if unroll else ["-DBBMM_UNROLL=0"]))
    return lambda: knl


def bench_launch(dev, launches: int) -> list[dict]:
    """Host microseconds per launch of a 60-argument kernel, four ways."""
    nbuf, nint = 8, 52
    params = ", ".join([f"__global float *b{i}" for i in range(nbuf)]
                       + [f"int s{i}" for i in range(nint)])
    src = f"__kernel void many({params}) {{ if (get_global_id(0) == 0) b0[0] = s0 + s{nint - 1}; }}"
    kern = dev.kernel(src, "many")
    bufs = [cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, 4096) for _ in range(nbuf)]
    args = bufs + [np.int32(i) for i in range(nint)]
    q = dev.queue
    rows = []

    def per_launch(name, once):
        for _ in range(50):
            once(0)
        q.finish()
        t0 = time.perf_counter()
        for i in range(launches):
            once(i)
            if i % 256 == 255:
                q.flush()
        t1 = time.perf_counter()
        q.finish()
        rows.append({"way": name, "us per launch": (t1 - t0) / launches * 1e6})

    def all_args(i):
        kern.set_args(*args)
        cl.enqueue_nd_range_kernel(q, kern, (32,), (32,))

    def dev_same(i):
        dev.launch(kern, (32,), (32,), args)

    changing = [list(args) for _ in range(2)]
    for v, a in enumerate(changing):
        for j in (nbuf, nbuf + 1, nbuf + 2):
            a[j] = np.int32(1000 + v + j)

    def dev_three(i):
        dev.launch(kern, (32,), (32,), changing[i & 1])

    def set_three(i):  # bbmm before: set_arg of each changed numpy scalar
        a = changing[i & 1]
        for j in (nbuf, nbuf + 1, nbuf + 2):
            kern.set_arg(j, a[j])
        cl.enqueue_nd_range_kernel(q, kern, (32,), (32,))

    def bare(i):
        cl.enqueue_nd_range_kernel(q, kern, (32,), (32,))

    per_launch("set_args (60) + enqueue", all_args)
    per_launch("set_arg x3 (numpy scalars) + enqueue", set_three)
    per_launch("OpenCLDevice.launch, 0 changed", dev_same)
    per_launch("OpenCLDevice.launch, 3 changed", dev_three)
    per_launch("enqueue only", bare)
    for b in bufs:
        b.release()
    return rows


def bench_rect(dev, rows: int, cols: int, widths: list[int], repeat: int) -> list[dict]:
    """GB/s of bbmm's rectangular host-device copies of column blocks (median of
    ``repeat``), from pinned and from pageable host memory, each checked once."""
    from bbmm.box import Box
    out = []
    def host_array(kind: str) -> np.ndarray:
        if kind == "pinned":
            return pinned_empty(dev.context, (rows, cols), np.float32)
        return np.empty((rows, cols), np.float32)
    hosts = {k: host_array(k) for k in ("pinned", "pageable")}
    backs = {k: host_array(k) for k in hosts}  # d2h lands in memory of the same kind
    for h in hosts.values():
        h[...] = np.arange(cols, dtype=np.float32)[None, :]
    for w in widths:
        w = min(w, cols)
        region = Box((0, cols - w), (rows - 1, cols - 1))  # the last w columns
        a = dev.alloc(rows * w * 4)
        for kind, host in hosts.items():
            def timed(fn) -> float:
                ts = []
                for _ in range(repeat):
                    dev.finish()
                    t0 = time.perf_counter()
                    fn()
                    dev.finish()
                    ts.append(time.perf_counter() - t0)
                return rows * w * 4 / statistics.median(ts) / 1e9
            h2d = timed(lambda: dev.write_rect(a, region, region, host))
            back = backs[kind]
            back[...] = 0
            dev.read_rect(a, region, region, back)
            if not np.array_equal(back[:, cols - w:], host[:, cols - w:]):
                raise SystemExit(f"rect: width {w} from {kind} memory came back wrong")
            d2h = timed(lambda: dev.read_rect(a, region, region, back))
            out.append({"width": w, "row bytes": w * 4, "host": kind,
                        "MiB": rows * w * 4 / 2**20, "h2d GB/s": h2d, "d2h GB/s": d2h})
        dev.free(a)
    return out


def bench_hop(devs, row: int, hops: int) -> list[dict]:
    """Microseconds per device -> pinned host -> device hop of a row, ordered by events."""
    d0, d1 = devs[0], devs[1]
    src = """__kernel void touch(__global float *r, const int n)
             { const int j = get_global_id(0); if (j < n) r[j] += 1.0f; }"""
    k = [d.kernel(src, "touch") for d in (d0, d1)]
    bufs = [cl.Buffer(d.context, cl.mem_flags.READ_WRITE, row * 4) for d in (d0, d1)]
    for d, b in zip((d0, d1), bufs):
        cl.enqueue_fill_buffer(d.queue, b, np.float32(0), 0, row * 4)
    stage = pinned_empty(d0.context, row, np.float32)
    g = (-(-row // 256) * 256,)
    n32 = np.int32(row)
    out = []

    def chain(two: bool) -> float:
        d0.queue.finish()
        d1.queue.finish()
        t0 = time.perf_counter()
        evt = None
        for h in range(hops):
            a = h & 1 if two else 0
            dev = (d0, d1)[a]
            k[a].set_args(bufs[a], n32)
            evt = cl.enqueue_nd_range_kernel(dev.queue, k[a], g, (256,),
                                             wait_for=[evt] if evt is not None else None)
            if two:
                e1 = cl.enqueue_copy(dev.queue, stage, bufs[a], is_blocking=False)
                dev.queue.flush()
                other = (d0, d1)[1 - a]
                evt = cl.enqueue_copy(other.queue, bufs[1 - a], stage, is_blocking=False,
                                      wait_for=[e1])
                other.queue.flush()
            else:
                dev.queue.flush()
        evt.wait()
        return (time.perf_counter() - t0) / hops * 1e6

    chain(False)
    out.append({"chain": "kernel -> kernel, one queue", "us per hop": chain(False)})
    chain(True)
    out.append({"chain": f"kernel -> {row * 4 >> 10} KiB d2h -> h2d -> other device's kernel",
                "us per hop": chain(True)})
    for b in bufs:
        b.release()
    return out


def _table(rows: list[dict]) -> str:
    keys = list(rows[0])
    cells = [[f"{r[k]:.3f}" if isinstance(r[k], float) else str(r[k]) for k in keys]
             for r in rows]
    w = [max(len(k), *(len(c[i]) for c in cells)) for i, k in enumerate(keys)]
    lines = ["  ".join(k.ljust(w[i]) for i, k in enumerate(keys))]
    lines += ["  ".join(c[i].ljust(w[i]) for i in range(len(keys))) for c in cells]
    return "\n".join(lines)


def _ints(p: argparse.ArgumentParser, flag: str, spec: str) -> list[int]:
    """``"16,256"`` -> ``[16, 256]``, or a usage error naming ``flag``."""
    try:
        return [int(w) for w in spec.split(",") if w]
    except ValueError:
        p.error(f"{flag}: {spec!r} is not a list of integers")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--parts", default="stencil,launch,rect,hop",
                   help="comma-separated: stencil, launch, rect, hop, column")
    p.add_argument("--n", type=int, default=12288, help="stencil array side (multiple of 4)")
    p.add_argument("--strips", default="4,8,16,32", help="rows per work-item to try")
    p.add_argument("--generated", default="1x1,2x1,2x4,1x8", metavar="CxR[,CxR...]",
                   help="bbmm's generated heat2d kernel with these points per work-item "
                        "(BBMM_COARSEN x BBMM_COARSEN1; empty: none)")
    p.add_argument("--repeat", type=int, default=20, help="timed kernel runs (median)")
    p.add_argument("--launches", type=int, default=4000, help="launches per way")
    p.add_argument("--row", type=int, default=16384, help="floats per hop (floyd's row)")
    p.add_argument("--hops", type=int, default=2000)
    p.add_argument("--rows", type=int, default=16384, help="rect: host array rows")
    p.add_argument("--cols", type=int, default=16384, help="rect: host array columns")
    p.add_argument("--widths", default="16,256,2048,8192,16384",
                   help="rect: column block widths in floats")
    p.add_argument("--col-rows", type=int, default=81920, help="column: tile rows")
    p.add_argument("--col-widths", default="2048,4096",
                   help="column: tile widths (columns = work-items)")
    p.add_argument("--platform", default=None)
    p.add_argument("--json", default=None, metavar="PATH")
    args = p.parse_args(argv)
    parts = set(filter(None, args.parts.split(",")))
    unknown = parts - {"stencil", "launch", "rect", "hop", "column"}
    if unknown:
        p.error(f"--parts: unknown {sorted(unknown)}")
    devs = make_devices(2 if "hop" in parts else 1, platform=args.platform)
    print(f"# {devs[0].physical_name}, {len(devs)} device(s)")
    report: dict[str, list[dict]] = {}
    if "stencil" in parts:
        strips = [int(s) for s in args.strips.split(",") if s]
        from bbmm.hostlib import parse_points
        try:
            gen = parse_points(args.generated)
        except ValueError as e:
            p.error(f"--generated {e}")
        report["stencil"] = bench_stencil(devs[0], args.n, args.repeat, strips, gen)
        print(f"\n# heat2d sweep n={args.n}, kernel ms (median of {args.repeat}), "
              f"bytes = read + write once")
        print(_table(report["stencil"]))
    if "launch" in parts:
        report["launch"] = bench_launch(devs[0], args.launches)
        print(f"\n# host cost per launch, 60 arguments ({args.launches} launches)")
        print(_table(report["launch"]))
    if "rect" in parts:
        widths = _ints(p, "--widths", args.widths)
        if not widths or min(widths) < 1 or min(args.rows, args.cols) < 1:
            p.error("--widths, --rows and --cols must be positive")
        report["rect"] = bench_rect(devs[0], args.rows, args.cols, widths, max(1, args.repeat // 4))
        print(f"\n# rectangular host-device copies, {args.rows} rows of a {args.rows} x "
              f"{args.cols} float array (median of {max(1, args.repeat // 4)})")
        print(_table(report["rect"]))
    if "column" in parts:
        report["column"] = bench_column(devs[0], args.col_rows,
                                        _ints(p, "--col-widths", args.col_widths),
                                        max(1, args.repeat // 4))
        print(f"\n# column product x[i] += A[j][i] y[j], {args.col_rows} rows, kernel ms "
              f"(median of {max(1, args.repeat // 4)}); same: bit-identical to the first")
        print(_table(report["column"]))
    if "hop" in parts:
        if len(devs) < 2:
            print("\n# hop: needs 2 devices in one context; skipped")
        else:
            report["hop"] = bench_hop(devs, args.row, args.hops)
            print(f"\n# cross-device hop ({args.hops} hops)")
            print(_table(report["hop"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": devs[0].physical_name, "args": vars(args), **report}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Hand-written multi-device OpenCL heat2d (polybench/heat2d.c), the paper's manual
baseline (Section 11.2.7).

    for t: B = stencil(A) on the interior rows/columns; A = stencil(B) likewise
    stencil(X)[i][j] = 0.125 (X[i+1][j] - 2 X[i][j] + X[i-1][j])
                     + 0.125 (X[i][j+1] - 2 X[i][j] + X[i][j-1]) + X[i][j]

* The interior rows 1 .. n-2 are split into equal blocks, one per device; device d
  holds rows [r0-1, r1] of A and of B: its block plus exactly one halo row on each side
  (the boundary row 0 / n-1 for the first / last device): the theoretical minimum but
  for the four corner elements of the halo rows, kept so that each buffer is one
  rectangle of whole rows.
* Each sweep is one 2-D NDRange per device (j on dimension 0, coalesced). After the
  A -> B sweep, every pair of neighbours swaps one row of B each way (its first / last
  own row, columns 1 .. n-2, into the other's halo) through pinned host memory; after
  the B -> A sweep likewise for A (except after the last time step, when nobody reads
  it): one halo row each side per sweep, the minimum coherence volume (the flow-out
  sets of each nest; the boundary columns never change).
* Nothing is reallocated or re-read; the blocks stay resident until write-back (own
  rows of A and B; the boundary rows never change).
* One context (GPUs): events order each halo read after the sweep that produced it and
  each halo upload before the next sweep; no host waits in the loop. A context per
  device (the CPU fallback): one host wait per sweep (the halo reads).

The kernel evaluates the stencil in the C program's order with contraction off, so
on IEEE single precision it rounds like the sequential C code.

Usage::

    python scripts/baselines/heat2d.py --n 12288 --tsteps 50 --devices 2 [--repeat 3]
    python scripts/baselines/heat2d.py --n 130 --tsteps 4 --devices 3 --check
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Mapping

import numpy as np
import pyopencl as cl

if __package__:  # imported as scripts.baselines.heat2d
    from .common import (
        F32, Team, Timer, add_common_args, compare_arrays, median_run, nd_range,
        parse_local, print_result, result, row_blocks, team_from_args)
else:  # run as a script
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import (
        F32, Team, Timer, add_common_args, compare_arrays, median_run, nd_range,
        parse_local, print_result, result, row_blocks, team_from_args)

KERNEL = r"""
#pragma OPENCL FP_CONTRACT OFF
/* dst, src: local rows 0 .. rows+1 (global r0-1 .. r1) x n; writes local rows 1 .. rows,
   columns 1 .. n-2 */
__kernel void heat_sweep(__global float *dst, __global const float *src,
                         const int n, const int rows)
{
    const int j = get_global_id(0) + 1;
    const int i = get_global_id(1) + 1;
    if (j > n - 2 || i > rows)
        return;
    const size_t c = (size_t)i * n + j;
    dst[c] = 0.125f * (src[c + n] - 2.0f * src[c] + src[c - n])
           + 0.125f * (src[c + 1] - 2.0f * src[c] + src[c - 1])
           + src[c];
}
"""


# {{{ data and reference

def init_heat2d(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """bbmm's inputs for heat2d (``bbmm.reference.init_arrays``: A then B, uniform
    [0, 1) float32 from ``default_rng(seed)``; heat2d.c has no init function)."""
    rng = np.random.default_rng(seed)
    A = rng.random(size=(n, n), dtype=np.float32)
    B = rng.random(size=(n, n), dtype=np.float32)
    return {"A": A, "B": B}


def _stencil(X: np.ndarray, Y: np.ndarray) -> None:
    c, two = np.float32(0.125), np.float32(2.0)
    m = X[1:-1, 1:-1]
    Y[1:-1, 1:-1] = (c * (X[2:, 1:-1] - two * m + X[:-2, 1:-1])
                     + c * (X[1:-1, 2:] - two * m + X[1:-1, :-2]) + m)


def reference(A: np.ndarray, B: np.ndarray, tsteps: int) -> None:
    """heat2d.c in float32 numpy, in place."""
    for _ in range(tsteps):
        _stencil(A, B)
        _stencil(B, A)

# }}}


def run(devices_or_n: Any, params: Mapping[str, int], arrays: Mapping[str, np.ndarray],
        iterations: int | None = None, local: Any = "auto") -> dict[str, Any]:
    """heat2d on ``arrays["A"]``, ``arrays["B"]`` (float32, n x n, C order) in place.

    :arg params: ``{"tsteps": T, "n": n}``.
    :arg iterations: time steps to run (default tsteps).
    """
    team = Team.of(devices_or_n)
    n = int(params["n"])
    iters = int(params["tsteps"]) if iterations is None else int(iterations)
    A, B = arrays["A"], arrays["B"]
    for name, X in (("A", A), ("B", B)):
        if X.shape != (n, n) or X.dtype != F32 or not X.flags.c_contiguous:
            raise ValueError(f"{name} must be a C-contiguous float32 array of shape ({n}, {n})")
    if iters < 0:
        raise ValueError(f"iterations must be >= 0, got {iters}")
    if n < 3:  # no interior: nothing to compute
        return result(team, iterations=iters, upload_s=0.0, loop_s=0.0, download_s=0.0,
                      alloc_bytes=[0] * len(team), h2d_bytes=0, d2h_bytes=0, coherence_bytes=0,
                      host_waits=0, flowout_bytes=0, program="heat2d",
                      params={"tsteps": iters, "n": n})
    blocks = row_blocks(1, n - 1, len(team))
    lanes = team.lanes[:len(blocks)]
    D = len(lanes)
    rb = n * F32.itemsize
    if isinstance(local, str):
        local = parse_local(local, team, 2)
    kernels = [[team.kernel(ln, KERNEL, "heat_sweep") for _ in range(2)] for ln in lanes]
    sizes = [nd_range(ln, (n - 2, r1 - r0), local) for ln, (r0, r1) in zip(lanes, blocks)]
    # staging slots: per array, per boundary between lanes d and d+1, per direction
    # (columns 1 .. n-2 only: the boundary columns never change)
    slots = {(a, d, way): team.slot(n - 2, lanes[d if way == "down" else d + 1])
             for a in "AB" for d in range(D - 1) for way in ("down", "up")}
    team.finish()
    waits0 = team.host_waits

    clock = Timer()
    loc = {"A": [], "B": []}
    alloc, h2d = [], 0
    for d, (ln, (r0, r1)) in enumerate(zip(lanes, blocks)):
        nb = (r1 - r0 + 2) * rb
        for name, X in (("A", A), ("B", B)):
            buf = team.buffer(ln, nb)
            cl.enqueue_copy(ln.queue, buf, X[r0 - 1:r1 + 1], is_blocking=False)
            loc[name].append(buf)
            h2d += nb
        alloc.append(2 * nb)
    for d in range(D):
        rows = np.int32(blocks[d][1] - blocks[d][0])
        kernels[d][0].set_args(loc["B"][d], loc["A"][d], np.int32(n), rows)  # A -> B
        kernels[d][1].set_args(loc["A"][d], loc["B"][d], np.int32(n), rows)  # B -> A
    team.finish()
    upload_s = clock.lap()

    c1 = F32.itemsize  # byte offset of column 1

    def halo_messages(name: str):
        bufs = loc[name]
        msgs = []
        for d in range(D - 1):
            rows_d = blocks[d][1] - blocks[d][0]
            # last own row of d -> top halo (local row 0) of d+1
            msgs.append((lanes[d], bufs[d], rows_d * rb + c1, slots[(name, d, "down")],
                         [(lanes[d + 1], bufs[d + 1], c1)]))
            # first own row of d+1 (local row 1) -> bottom halo (local row rows_d+1) of d
            msgs.append((lanes[d + 1], bufs[d + 1], rb + c1, slots[(name, d, "up")],
                         [(lanes[d], bufs[d], (rows_d + 1) * rb + c1)]))
        return msgs

    coh_d2h = coh_h2d = 0
    for t in range(iters):
        for sweep, name in ((0, "B"), (1, "A")):
            for d, ln in enumerate(lanes):
                g, l = sizes[d]
                cl.enqueue_nd_range_kernel(ln.queue, kernels[d][sweep], g, l)
            if D > 1 and not (name == "A" and t == iters - 1):
                a, b = team.exchange(halo_messages(name))
                coh_d2h += a
                coh_h2d += b
            else:
                team.flush(lanes)
    team.finish()
    loop_s = clock.lap()
    waits = team.host_waits - waits0

    d2h = 0
    for d, (ln, (r0, r1)) in enumerate(zip(lanes, blocks)):
        for name, X in (("A", A), ("B", B)):
            cl.enqueue_copy(ln.queue, X[r0:r1], loc[name][d], src_offset=rb, is_blocking=False)
            d2h += (r1 - r0) * rb
    team.finish()
    download_s = clock.lap()
    for bufs in loc.values():
        for b in bufs:
            b.release()
    return result(team, iterations=iters, upload_s=upload_s, loop_s=loop_s,
                  download_s=download_s, alloc_bytes=alloc, h2d_bytes=h2d + coh_h2d,
                  d2h_bytes=d2h + coh_d2h, coherence_bytes=coh_d2h + coh_h2d, host_waits=waits,
                  flowout_bytes=coh_d2h,
                  program="heat2d", params={"tsteps": iters, "n": n})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1024, help="grid size (paper: 12288)")
    p.add_argument("--tsteps", type=int, default=10, help="time steps")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    add_common_args(p)
    args = p.parse_args(argv)
    team = team_from_args(args)
    local = parse_local(args.local, team, 2)
    n = args.n
    init = init_heat2d(n, args.seed)
    arrays = {name: team.pinned((n, n), np.float32) for name in ("A", "B")}

    def once():
        for name, X in arrays.items():
            X[...] = init[name]
        return run(team, {"tsteps": args.tsteps, "n": n}, arrays, args.iterations, local)

    res = median_run(once, args.repeat)
    if args.check:
        iters = args.tsteps if args.iterations is None else args.iterations
        if iters * n * n > 2e9:
            res["check"] = "skipped (too large for the numpy reference)"
        else:
            ref = {k: v.copy() for k, v in init.items()}
            reference(ref["A"], ref["B"], iters)
            bad = [m for m in (compare_arrays(k, arrays[k], ref[k], 1e-5) for k in "AB") if m]
            res["check"] = "pass" if not bad else "FAIL: " + "; ".join(bad)
    print_result("heat2d baseline", res, args.json)
    return 1 if str(res.get("check", "")).startswith("FAIL") else 0


if __name__ == "__main__":
    sys.exit(main())

# vim: foldmethod=marker

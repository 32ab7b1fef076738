"""Hand-written multi-device OpenCL Floyd-Warshall (polybench/floyd.c), the paper's
manual baseline (Section 11.2.7).

    for k: for i: for j: path[i][j] = MIN(path[i][j], path[i][k] + path[k][j])

* Rows are split into equal blocks, one per device; device d holds exactly its block
  ``path[r0:r1][0:n]`` plus one pivot-row buffer of n floats (the theoretical minimum:
  iteration k reads row k, which another device owns; column k lies in the block).
* Iteration k: every device updates its block with a 2-D NDRange (j on dimension 0,
  coalesced; i on dimension 1); the owner of row k reads it straight from its block.
  Then the owner of row k+1 reads that row (just final for iteration k) into a pinned
  host slot and the others upload it into their pivot buffers: n floats device -> host
  and (D-1) n floats host -> devices per iteration, the minimum coherence volume.
* Nothing is reallocated or re-read: the blocks stay resident from read-in to write-back.
* One context (GPUs): events order the row's read after the owner's kernel and the
  uploads after the read; queues are flushed; the host never waits in the loop. A
  context per device (the CPU fallback): one host wait per iteration (the row's read).

Exactness: all values are small integers (see init_floyd), so any evaluation order
gives the same floats; the result equals the sequential C program bit for bit.

Usage::

    python scripts/baselines/floyd.py --n 16384 --devices 2 [--iterations K] [--repeat 3]
    python scripts/baselines/floyd.py --n 256 --devices 3 --check
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Mapping

import numpy as np
import pyopencl as cl

if __package__:  # imported as scripts.baselines.floyd
    from .common import (
        F32, Team, Timer, add_common_args, compare_arrays, median_run, nd_range,
        parse_local, print_result, result, row_blocks, team_from_args)
else:  # run as a script
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import (
        F32, Team, Timer, add_common_args, compare_arrays, median_run, nd_range,
        parse_local, print_result, result, row_blocks, team_from_args)

KERNEL = r"""
__kernel void floyd_step(__global float *blk,           /* rows [r0, r1) x n of path */
                         __global const float *rowk,    /* row k: a pivot buffer, or blk */
                         const ulong rowk_off,          /* element offset of row k in rowk */
                         const int n, const int rows, const int k)
{
    const int j = get_global_id(0);
    const int i = get_global_id(1);
    if (j >= n || i >= rows)
        return;
    const size_t ij = (size_t)i * n + j;
    const float a = blk[ij];
    const float b = blk[(size_t)i * n + k] + rowk[rowk_off + j];
    blk[ij] = a < b ? a : b;                            /* MIN(a, b) as in floyd.c */
}
"""


# {{{ data and reference

def init_floyd(n: int, out: np.ndarray | None = None) -> np.ndarray:
    """polybench/floyd.c's init_floyd in numpy (same values)."""
    i = np.arange(n, dtype=np.int64)[:, None]
    j = np.arange(n, dtype=np.int64)[None, :]
    vals = np.where((i * 5 + j * 3) % 4 == 0, np.float32(1.0e6),
                    ((i * 7 + j * 13) % 17 + 1).astype(np.float32))
    vals[np.arange(n), np.arange(n)] = 0.0
    if out is None:
        return vals.astype(np.float32)
    out[...] = vals
    return out


def reference(path: np.ndarray, iterations: int | None = None) -> np.ndarray:
    """Iterations k = 0 .. iterations-1 of floyd.c, in place (float32)."""
    n = path.shape[0]
    for k in range(n if iterations is None else iterations):
        np.minimum(path, path[:, k:k + 1] + path[k:k + 1, :], out=path)
    return path

# }}}


def run(devices_or_n: Any, params: Mapping[str, int], arrays: Mapping[str, np.ndarray],
        iterations: int | None = None, local: Any = "auto") -> dict[str, Any]:
    """Floyd-Warshall on ``arrays["path"]`` (float32, n x n, C order) in place.

    :arg devices_or_n: number of logical devices, a :class:`common.Team`, or bbmm
        OpenCL devices.
    :arg params: ``{"n": n}``.
    :arg iterations: serial iterations k = 0 .. iterations-1 (default n).
    :arg local: work-group shape (``"auto"``, None, or a tuple (lx, ly)).
    """
    team = Team.of(devices_or_n)
    n = int(params["n"])
    path = arrays["path"]
    if path.shape != (n, n) or path.dtype != F32 or not path.flags.c_contiguous:
        raise ValueError(f"path must be a C-contiguous float32 array of shape ({n}, {n})")
    iters = n if iterations is None else int(iterations)
    if not 0 <= iters <= n:
        raise ValueError(f"iterations must be in 0..{n}, got {iters}")
    blocks = row_blocks(0, n, len(team)) if n else [(0, 0)]
    lanes = team.lanes[:len(blocks)]
    D = len(lanes)
    row_bytes = n * F32.itemsize
    if isinstance(local, str):
        local = parse_local(local, team, 2)
    # programs, kernels and slots are set up before the clock starts
    kernels = [team.kernel(ln, KERNEL, "floyd_step") for ln in lanes]
    sizes = [nd_range(ln, (n, r1 - r0), local) for ln, (r0, r1) in zip(lanes, blocks)]
    slots = [[team.slot(n, ln) for _ in range(2)] for ln in lanes] if D > 1 else []
    owner = np.zeros(max(n, 1), dtype=np.int64)
    for d, (r0, r1) in enumerate(blocks):
        owner[r0:r1] = d
    team.finish()
    waits0 = team.host_waits

    clock = Timer()
    # allocation (exactly the block + one pivot row) and read-in (the block; row 0 to the
    # devices that do not own it)
    blk = [team.buffer(ln, (r1 - r0) * row_bytes) for ln, (r0, r1) in zip(lanes, blocks)]
    rowk = [team.buffer(ln, row_bytes) for ln in lanes] if D > 1 else [None]
    alloc = [(r1 - r0) * row_bytes + (row_bytes if D > 1 else 0) for r0, r1 in blocks]
    h2d = 0
    for d, (ln, (r0, r1)) in enumerate(zip(lanes, blocks)):
        cl.enqueue_copy(ln.queue, blk[d], path[r0:r1], is_blocking=False)
        h2d += (r1 - r0) * row_bytes
        if D > 1 and iters > 0 and owner[0] != d:
            cl.enqueue_copy(ln.queue, rowk[d], path[0], is_blocking=False)
            h2d += row_bytes
    for d, (ln, k_) in enumerate(zip(lanes, kernels)):
        r0, r1 = blocks[d]
        k_.set_args(blk[d], rowk[d] if D > 1 else blk[d], np.uint64(0), np.int32(n),
                    np.int32(r1 - r0), np.int32(0))
    team.finish()
    upload_s = clock.lap()

    coh_d2h = coh_h2d = 0
    is_owner = [False] * D  # whether argument 1 is currently the lane's own block
    for k in range(iters):
        o = int(owner[k])
        kk = np.int32(k)
        for d, (ln, kern) in enumerate(zip(lanes, kernels)):
            if d == o:
                kern.set_arg(1, blk[d])
                kern.set_arg(2, np.uint64((k - blocks[d][0]) * n))
                is_owner[d] = True
            elif is_owner[d]:
                kern.set_arg(1, rowk[d])
                kern.set_arg(2, np.uint64(0))
                is_owner[d] = False
            kern.set_arg(5, kk)
            g, l = sizes[d]
            cl.enqueue_nd_range_kernel(ln.queue, kern, g, l)
        if k + 1 < iters and D > 1:
            o1 = int(owner[k + 1])
            off = (k + 1 - blocks[o1][0]) * row_bytes
            dsts = [(lanes[d], rowk[d], 0) for d in range(D) if d != o1]
            a, b = team.exchange([(lanes[o1], blk[o1], off, slots[o1][(k + 1) % 2], dsts)])
            coh_d2h += a
            coh_h2d += b
        else:
            team.flush(lanes)
    team.finish()
    loop_s = clock.lap()
    waits = team.host_waits - waits0

    d2h = 0
    for d, (ln, (r0, r1)) in enumerate(zip(lanes, blocks)):
        cl.enqueue_copy(ln.queue, path[r0:r1], blk[d], is_blocking=False)
        d2h += (r1 - r0) * row_bytes
    team.finish()
    download_s = clock.lap()
    for b in blk + rowk:
        if b is not None:
            b.release()
    return result(team, iterations=iters, upload_s=upload_s, loop_s=loop_s,
                  download_s=download_s, alloc_bytes=alloc, h2d_bytes=h2d + coh_h2d,
                  d2h_bytes=d2h + coh_d2h, coherence_bytes=coh_d2h + coh_h2d, host_waits=waits,
                  flowout_bytes=coh_d2h,
                  program="floyd",
                  params={"n": n})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1024, help="matrix size (paper: 16384)")
    add_common_args(p)
    args = p.parse_args(argv)
    team = team_from_args(args)
    local = parse_local(args.local, team, 2)
    n = args.n
    init = init_floyd(n)
    path = team.pinned((n, n), np.float32)

    def once():
        path[...] = init
        return run(team, {"n": n}, {"path": path}, args.iterations, local)

    res = median_run(once, args.repeat)
    if args.check:
        iters = n if args.iterations is None else args.iterations
        if iters * n * n > 4e9:
            res["check"] = "skipped (too large for the numpy reference)"
        else:
            bad = compare_arrays("path", path, reference(init.copy(), iters))
            res["check"] = "pass" if bad is None else f"FAIL: {bad}"
    print_result("floyd baseline", res, args.json)
    return 1 if str(res.get("check", "")).startswith("FAIL") else 0


if __name__ == "__main__":
    sys.exit(main())

# vim: foldmethod=marker

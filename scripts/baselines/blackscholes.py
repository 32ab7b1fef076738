"""Hand-written multi-device OpenCL Black-Scholes (polybench/blackscholes.c), the paper's
manual baseline (Section 11.2.7).

* The n options are split into equal blocks, one per device; device d holds exactly its
  block of each of the five arrays (the three inputs stock_price, option_strike,
  option_years; the outputs call_result, put_result).
* Read-in: the three input blocks only; one 1-D NDRange per device; write-back: the two
  output blocks. There is no
  coherence traffic and no host wait: every device runs independently.
* ``iterations`` > 1 launches the kernel that many times between read-in and write-back
  (the computation is idempotent); the default is one, like the C program.

The kernel is the C program's arithmetic (single precision, the SDK's CND polynomial,
contraction off); OpenCL's exp/log/sqrt differ from the C library's by a few ulp, so
results agree within float tolerance, not bit for bit.

Usage::

    python scripts/baselines/blackscholes.py --n 67108864 --devices 2 [--repeat 3]
    python scripts/baselines/blackscholes.py --n 100000 --devices 3 --check
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Mapping

import numpy as np
import pyopencl as cl

if __package__:  # imported as scripts.baselines.blackscholes
    from .common import (
        F32, Team, Timer, add_common_args, compare_arrays, median_run, nd_range,
        parse_local, print_result, result, row_blocks, team_from_args)
else:  # run as a script
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import (
        F32, Team, Timer, add_common_args, compare_arrays, median_run, nd_range,
        parse_local, print_result, result, row_blocks, team_from_args)

INPUTS = ("stock_price", "option_strike", "option_years")
OUTPUTS = ("call_result", "put_result")
ARRAYS = ("call_result", "put_result", "stock_price", "option_strike", "option_years")

KERNEL = r"""
#pragma OPENCL FP_CONTRACT OFF
#define CND_A1 0.31938153f
#define CND_A2 -0.356563782f
#define CND_A3 1.781477937f
#define CND_A4 -1.821255978f
#define CND_A5 1.330274429f
#define RSQRT2PI 0.39894228040143267793994605993438f
#define CND_K(d) (1.0f / (1.0f + 0.2316419f * fabs(d)))
#define CND_P(d) (RSQRT2PI * exp(-0.5f * (d) * (d)) * (CND_K(d) * (CND_A1 + CND_K(d) \
    * (CND_A2 + CND_K(d) * (CND_A3 + CND_K(d) * (CND_A4 + CND_K(d) * CND_A5))))))
#define CND(d) ((d) > 0.0f ? 1.0f - CND_P(d) : CND_P(d))

__kernel void blackscholes(__global float *call_result, __global float *put_result,
                           __global const float *stock_price,
                           __global const float *option_strike,
                           __global const float *option_years,
                           const float riskfree, const float volatility, const int m)
{
    const int i = get_global_id(0);
    if (i >= m)
        return;
    const float s = stock_price[i], x = option_strike[i], t = option_years[i];
    const float sqrt_t = sqrt(t);
    const float d1 = (log(s / x) + (riskfree + 0.5f * volatility * volatility) * t)
                     / (volatility * sqrt_t);
    const float d2 = d1 - volatility * sqrt_t;
    const float cndd1 = CND(d1), cndd2 = CND(d2);
    const float exp_rt = exp(-riskfree * t);
    call_result[i] = s * cndd1 - x * exp_rt * cndd2;
    put_result[i] = x * exp_rt * (1.0f - cndd2) - s * (1.0f - cndd1);
}
"""

DEFAULT_SCALARS = {"riskfree": 0.02, "volatility": 0.30}


# {{{ data and reference

def _bs_uniform(i: np.ndarray, salt: int, lo: float, hi: float) -> np.ndarray:
    h = (i * 2654435761 + salt * 40503) % 1000003
    return (np.float32(lo) + (np.float32(hi) - np.float32(lo)) * h.astype(np.float32)
            / np.float32(1000002.0)).astype(np.float32)


def init_blackscholes(n: int) -> dict[str, np.ndarray]:
    """polybench/blackscholes.c's init_blackscholes in numpy (same float32 values)."""
    i = np.arange(n, dtype=np.int64)
    z = np.zeros(n, np.float32)
    return {"call_result": z.copy(), "put_result": z.copy(),
            "stock_price": _bs_uniform(i, 1, 5.0, 30.0),
            "option_strike": _bs_uniform(i, 2, 1.0, 100.0),
            "option_years": _bs_uniform(i, 3, 0.25, 10.0)}


def _cnd(d: np.ndarray) -> np.ndarray:
    f = np.float32
    k = f(1.0) / (f(1.0) + f(0.2316419) * np.abs(d))
    p = (f(0.39894228040143267793994605993438) * np.exp(f(-0.5) * d * d)
         * (k * (f(0.31938153) + k * (f(-0.356563782) + k * (f(1.781477937) + k * (
             f(-1.821255978) + k * f(1.330274429)))))))
    return np.where(d > 0, f(1.0) - p, p).astype(np.float32)


def reference(arrays: Mapping[str, np.ndarray], riskfree: float = 0.02,
              volatility: float = 0.30) -> None:
    """blackscholes.c in float32 numpy, in place."""
    f = np.float32
    r, v = f(riskfree), f(volatility)
    S, X, T = arrays["stock_price"], arrays["option_strike"], arrays["option_years"]
    d1 = (np.log(S / X) + (r + f(0.5) * v * v) * T) / (v * np.sqrt(T))
    d2 = d1 - v * np.sqrt(T)
    d1, d2 = _cnd(d1), _cnd(d2)
    disc = X * np.exp(-r * T)
    arrays["call_result"][...] = S * d1 - disc * d2
    arrays["put_result"][...] = disc * (f(1.0) - d2) - S * (f(1.0) - d1)

# }}}


def run(devices_or_n: Any, params: Mapping[str, Any], arrays: Mapping[str, np.ndarray],
        iterations: int | None = None, local: Any = "auto") -> dict[str, Any]:
    """Black-Scholes on the five float32 arrays of length n (``arrays[name]``) in place.

    :arg params: ``{"n": n, "riskfree": 0.02, "volatility": 0.30}`` (scalars optional).
    :arg iterations: kernel launches between read-in and write-back (default 1).
    """
    team = Team.of(devices_or_n)
    n = int(params["n"])
    r = np.float32(params.get("riskfree", DEFAULT_SCALARS["riskfree"]))
    v = np.float32(params.get("volatility", DEFAULT_SCALARS["volatility"]))
    iters = 1 if iterations is None else int(iterations)
    for name in ARRAYS:
        X = arrays[name]
        if X.shape != (n,) or X.dtype != F32 or not X.flags.c_contiguous:
            raise ValueError(f"{name} must be a contiguous float32 array of length {n}")
    blocks = row_blocks(0, n, len(team)) if n else []
    lanes = team.lanes[:len(blocks)]
    if isinstance(local, str):
        local = parse_local(local, team, 1)
    kernels = [team.kernel(ln, KERNEL, "blackscholes") for ln in lanes]
    sizes = [nd_range(ln, (r1 - r0,), local) for ln, (r0, r1) in zip(lanes, blocks)]
    team.finish()

    clock = Timer()
    bufs: list[dict[str, Any]] = []
    alloc, h2d = [], 0
    for d, (ln, (r0, r1)) in enumerate(zip(lanes, blocks)):
        nb = (r1 - r0) * F32.itemsize
        bd = {name: team.buffer(ln, nb) for name in ARRAYS}
        for name in INPUTS:
            cl.enqueue_copy(ln.queue, bd[name], arrays[name][r0:r1], is_blocking=False)
            h2d += nb
        kernels[d].set_args(*(bd[name] for name in ARRAYS), r, v, np.int32(r1 - r0))
        bufs.append(bd)
        alloc.append(len(ARRAYS) * nb)
    team.finish()
    upload_s = clock.lap()

    for _ in range(iters):
        for d, ln in enumerate(lanes):
            g, l = sizes[d]
            cl.enqueue_nd_range_kernel(ln.queue, kernels[d], g, l)
        team.flush(lanes)
    team.finish()
    loop_s = clock.lap()

    d2h = 0
    for d, (ln, (r0, r1)) in enumerate(zip(lanes, blocks)):
        for name in OUTPUTS:
            cl.enqueue_copy(ln.queue, arrays[name][r0:r1], bufs[d][name], is_blocking=False)
            d2h += (r1 - r0) * F32.itemsize
    team.finish()
    download_s = clock.lap()
    for bd in bufs:
        for b in bd.values():
            b.release()
    return result(team, iterations=iters, upload_s=upload_s, loop_s=loop_s,
                  download_s=download_s, alloc_bytes=alloc,
                  h2d_bytes=h2d, d2h_bytes=d2h, coherence_bytes=0, host_waits=0, flowout_bytes=0,
                  program="blackscholes",
                  params={"n": n, "riskfree": float(r), "volatility": float(v)})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1 << 22, help="options (paper: 67108864)")
    p.add_argument("--riskfree", type=float, default=DEFAULT_SCALARS["riskfree"])
    p.add_argument("--volatility", type=float, default=DEFAULT_SCALARS["volatility"])
    add_common_args(p)
    args = p.parse_args(argv)
    team = team_from_args(args)
    local = parse_local(args.local, team, 1)
    n = args.n
    init = init_blackscholes(n)
    arrays = {name: team.pinned(n, np.float32) for name in ARRAYS}
    params = {"n": n, "riskfree": args.riskfree, "volatility": args.volatility}

    def once():
        for name, X in arrays.items():
            X[...] = init[name]
        return run(team, params, arrays, args.iterations, local)

    res = median_run(once, args.repeat)
    if args.check:
        ref = {k: v.copy() for k, v in init.items()}
        reference(ref, args.riskfree, args.volatility)
        bad = [m for m in (compare_arrays(k, arrays[k], ref[k], 1e-4) for k in ARRAYS) if m]
        res["check"] = "pass" if not bad else "FAIL: " + "; ".join(bad)
    print_result("blackscholes baseline", res, args.json)
    return 1 if str(res.get("check", "")).startswith("FAIL") else 0


if __name__ == "__main__":
    sys.exit(main())

# vim: foldmethod=marker

"""Warm pool allocation against driver allocation on one OpenCL device.

Box buffers come and go every serial iteration, so what an allocation costs
bounds how fine tiles can be. For each size from 4 KiB to 64 MiB this times

* **pool**: ``alloc`` + ``free`` of one block from a :class:`bbmm.pool.Pool`
  that already holds an arena (what bbmm does), and
* **driver**: ``cl.Buffer`` creation + first touch (``enqueue_fill_buffer`` of
  4 KiB, since drivers allocate lazily) + ``release``, ``finish`` included (what
  a runtime without a pool does),

and prints both in microseconds (median of ``--repeat`` runs) and their ratio.
It then runs a random alloc/free workload (40% frees, sizes log-uniform in 4 KiB..4 MiB,
up to ``--live`` bytes held) on the device's pool and prints its fragmentation.

Usage::

    python scripts/bench_pool.py [--device N] [--devices N] [--platform P]
                                 [--repeat 200] [--ops 4000] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time

import numpy as np
import pyopencl as cl

from bbmm.devices.opencl import make_devices
from bbmm.diagnostic import format_bytes, parse_bytes

SIZES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]


def median_us(fn, repeat: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1e3


def bench_sizes(dev, repeat: int) -> list[dict[str, float]]:
    pool = dev.pool
    ctx, queue = dev.context, dev.queue
    zero = np.uint8(0)
    rows = []
    # half a second of pool operations first: a host core that idled runs the first
    # sizes at a lower clock (on an H200 host: 1.1 us at 4-256 KiB, then 0.6 us, in one run)
    keep = pool.alloc(SIZES[0])
    pool.free(*keep)
    end = time.perf_counter() + 0.5
    while time.perf_counter() < end:
        for _ in range(1000):
            pool.free(*pool.alloc(SIZES[0]))
    for size in SIZES:
        keep = pool.alloc(size)  # the pool holds an arena for this size from now on
        pool.free(*keep)

        def pool_once():
            buf, off = pool.alloc(size)
            pool.free(buf, off)

        def driver_once():
            buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size)
            cl.enqueue_fill_buffer(queue, buf, zero, 0, min(size, 4096))
            queue.finish()
            buf.release()

        p = median_us(pool_once, repeat)
        d = median_us(driver_once, max(5, repeat // 4))
        rows.append({"bytes": size, "pool_us": p, "driver_us": d, "ratio": d / p})
    return rows


def random_workload(dev, ops: int, live_cap: int, seed: int = 42) -> dict[str, float]:
    """Random alloc/free with at most ``live_cap`` bytes held; the pool's stats after it."""
    rng = np.random.default_rng(seed)
    pool = dev.pool
    pool.trim()
    held: list[tuple[object, int, int]] = []
    live = 0
    peak_reserved = 0
    for _ in range(ops):
        size = int(np.exp(rng.uniform(np.log(4 << 10), np.log(4 << 20))))
        if held and (rng.random() < 0.4 or live + size > live_cap):
            buf, off, n = held.pop(int(rng.integers(len(held))))
            pool.free(buf, off)
            live -= n
        else:
            buf, off = pool.alloc(size)
            held.append((buf, off, size))
            live += size
        peak_reserved = max(peak_reserved, pool.reserved)
    s = pool.stats()
    out = {"ops": ops, "live_blocks": len(held), "reserved": s.reserved, "in_use": s.in_use,
           "free": s.free, "largest_free": s.largest_free, "arenas": s.arenas,
           "fragmentation": s.fragmentation, "peak_reserved": peak_reserved,
           "arena_allocs": s.arena_allocs}
    for buf, off, _ in held:
        pool.free(buf, off)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", type=int, default=0, help="logical device index (default 0)")
    ap.add_argument("--devices", type=int, default=None, help="logical devices to make")
    ap.add_argument("--platform", default=None, help="OpenCL platform index or name part")
    ap.add_argument("--repeat", type=int, default=200, help="timed runs per size (pool)")
    ap.add_argument("--ops", type=int, default=4000, help="random workload operations")
    ap.add_argument("--live", default="512MiB", help="bytes held at most by the workload")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = ap.parse_args(argv)

    plat = int(args.platform) if args.platform and args.platform.isdigit() else args.platform
    devs = make_devices(args.devices, platform=plat)
    dev = devs[args.device]
    rows = bench_sizes(dev, args.repeat)
    frag = random_workload(dev, args.ops, parse_bytes(args.live))

    print(f"device: {dev.name} on {dev.physical_name} "
          f"({dev.cl_device.platform.name.strip()}), cap {format_bytes(dev.cap)}, "
          f"arena {format_bytes(dev.pool.arena_size)}")
    print(f"{'size':>10}  {'pool us':>9}  {'driver us':>10}  {'driver/pool':>11}")
    for r in rows:
        print(f"{format_bytes(r['bytes']):>10}  {r['pool_us']:9.2f}  {r['driver_us']:10.1f}  "
              f"{r['ratio']:10.0f}x")
    print(f"random workload: {frag['ops']} ops, {frag['live_blocks']} blocks live at the end, "
          f"in use {format_bytes(frag['in_use'])} of {format_bytes(frag['reserved'])} reserved "
          f"({frag['arenas']} arenas, peak {format_bytes(frag['peak_reserved'])}), "
          f"largest free {format_bytes(frag['largest_free'])}, "
          f"fragmentation {frag['fragmentation']:.3f}")
    if args.json:
        doc = {"device": dev.physical_name, "platform": dev.cl_device.platform.name.strip(),
               "python": platform.python_version(), "sizes": rows, "workload": frag}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
    for d in devs:
        d.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

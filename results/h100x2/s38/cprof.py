"""Session 38: Floyd's host time per k under cProfile at n=4096 (GPUs nearly idle) and
n=16384 (GPUs busy) on two GPUs; prints, per function, own time per k at both sizes (or the two given),
largest growth first (what costs more when the GPUs are busy). Usage: cprof.py [DEVICES [N1,N2]]"""
import cProfile
import os
import pstats
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, ROOT)
from bbmm.cli import run_json  # noqa: E402

dev = sys.argv[1] if len(sys.argv) > 1 else "2"
SIZES = [int(s) for s in sys.argv[2].split(",")] if len(sys.argv) > 2 else [4096, 16384]
per_k = {}
for n in SIZES:
    argv = ["run", os.path.join(ROOT, "polybench", "floyd.c"), "--param", f"n={n}",
            "--devices", dev, "--no-progress"]
    run_json(argv)                                  # warm-up (builds, caches)
    prof = cProfile.Profile()
    prof.enable()
    r = run_json(argv)
    prof.disable()
    st = pstats.Stats(prof).stats
    per_k[n] = {f"{os.path.basename(k[0])}:{k[1]}({k[2]})": (v[1], v[2] / n * 1e6) for k, v in st.items()}
    print(f"n={n}: {r['wall_s'] / n * 1e3:.3f} ms per k under cProfile, "
          f"{sum(v[1] for v in per_k[n].values()):.1f} us per k of own time", flush=True)
a, b = per_k[SIZES[0]], per_k[SIZES[1]]
rows = sorted(set(a) | set(b), key=lambda f: b.get(f, (0, 0))[1] - a.get(f, (0, 0))[1], reverse=True)
x, y = SIZES[:2]
print(f"{'function':60} {f'calls/k {x}':>13} {f'us/k {x}':>10} {f'calls/k {y}':>13} {f'us/k {y}':>10}")
for f in rows[:25]:
    ca, ta = a.get(f, (0, 0)); cb, tb = b.get(f, (0, 0))
    print(f"{f[:60]:60} {ca / SIZES[0]:13.2f} {ta:10.1f} {cb / SIZES[1]:13.2f} {tb:10.1f}")

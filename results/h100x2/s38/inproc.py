"""Session 38: why is `bbmm run` of Floyd 15-30% slower inside scripts/baselines/compare.py
than as a process of its own (session 37)? One process; the same fresh run (cli.run_json,
as compare.py's bbmm_once) measured as the neighbours compare.py keeps alive are added one
by one: the baseline's team (one context over the GPUs), its warm run (buffers, pinned
arrays), bbmm's kept devices with their warm run (pool arenas, pinned arrays), and
then with Python's garbage collector off. Usage: inproc.py N DEVICES"""
import gc
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts", "baselines"))
import compare  # noqa: E402
from common import Team  # noqa: E402

n = int(sys.argv[1]) if len(sys.argv) > 1 else 16384
dev = int(sys.argv[2]) if len(sys.argv) > 2 else 2
params = {"n": n}
args = compare.main.__globals__["argparse"].Namespace(platform=None, device_kind="auto")


def fresh(label: str) -> None:
    t = time.perf_counter()
    r = compare.bbmm_once("floyd", params, dev, args)
    print(f"{label:28} {r['wall_s'] / n * 1e3:.3f} ms/k  (wall {r['wall_s']:.2f} s, "
          f"process {time.perf_counter() - t:.2f} s, gc objects {len(gc.get_objects())})",
          flush=True)


fresh("alone (warm-up)")
fresh("alone")
team = Team.create(dev)
fresh("+ baseline team")
init, work = compare.baseline_arrays("floyd", params, team)
for k, v in init.items():
    work[k][...] = v
t = time.perf_counter()
res = compare.floyd.run(team, params, work)
print(f"{'  baseline run':28} {res['time_s'] / n * 1e3:.3f} ms/k", flush=True)
fresh("+ baseline warm run")
from bbmm.devices.opencl import make_devices  # noqa: E402
from bbmm.run import host_arrays  # noqa: E402
kept = make_devices(dev)
arrays = host_arrays(compare._driver("floyd"), params, kept)
r = compare.bbmm_kept_once("floyd", params, kept, arrays, init)
print(f"{'  kept run':28} {r['wall_s'] / n * 1e3:.3f} ms/k", flush=True)
fresh("+ kept devices, warm")
gc.disable()
fresh("+ gc disabled")
gc.enable()
for d in kept:
    d.close()
del kept, arrays
team.close()
del team, work
gc.collect()
fresh("all closed")

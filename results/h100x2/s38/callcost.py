"""Session 38: where Floyd's host time per k goes on two GPUs, at a size where they are
nearly idle (n=4096) and where they are busy (n=16384): each OpenCL call bbmm makes is
timed on the host (kernel launches with their argument setting, host copies, barriers,
event status queries and waits, finishes), the rest of the wall is the runtime's Python;
and the CPU time of the main thread and of the whole process (the OpenCL driver's threads
included) against the wall. Usage:
callcost.py N[,N...] [DEVICES [PROGRAM]] (PROGRAM of polybench/, default floyd; its
size parameter is n)"""
import os
import sys
import time
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, ROOT)
import pyopencl as cl  # noqa: E402

import bbmm.devices.opencl as ocl  # noqa: E402
from bbmm.cli import run_json  # noqa: E402

T: dict[str, float] = defaultdict(float)
N: dict[str, int] = defaultdict(int)
clock = time.perf_counter


def timed(name, fn):
    def wrapper(*a, **kw):
        t = clock()
        try:
            return fn(*a, **kw)
        finally:
            T[name] += clock() - t
            N[name] += 1
    return wrapper


orig = ocl.OpenCLDevice._set_profiling


def set_profiling(self, on, limit):
    orig(self, on, limit)
    self._h2d = timed("h2d", self._h2d)
    self._d2h = timed("d2h", self._d2h)
    self._enqueue_kernel = timed("enqueue kernel", self._enqueue_kernel)


ocl.OpenCLDevice._set_profiling = set_profiling
ocl._set_changed = timed("set kernel args", ocl._set_changed)
cl.enqueue_barrier = timed("barrier", cl.enqueue_barrier)
cl.Event.wait = timed("event wait", cl.Event.wait)
ocl.OpenCLDevice.finish = timed("finish", ocl.OpenCLDevice.finish)
status = cl.Event.command_execution_status
cl.Event.command_execution_status = property(timed("event status", status.fget))

sizes = [int(s) for s in sys.argv[1].split(",")] if len(sys.argv) > 1 else [4096, 16384]
dev = sys.argv[2] if len(sys.argv) > 2 else "2"
prog = sys.argv[3] if len(sys.argv) > 3 else "floyd"
for n in sizes:
    for rep in range(2):
        T.clear(); N.clear()
        th, pr, w0 = time.thread_time(), time.process_time(), clock()
        r = run_json(["run", os.path.join(ROOT, "polybench", f"{prog}.c"), "--param", f"n={n}",
                      "--devices", dev, "--no-progress"])
        wall = r["wall_s"]
        calls = sum(T.values())
        print(f"{prog} n={n} devices={dev} rep {rep}: {wall / n * 1e3:.3f} ms per k, OpenCL calls "
              f"{calls / n * 1e6:.1f} us per k, the rest {(wall - calls) / n * 1e6:.1f} us per k")
        th, pr, w0 = time.thread_time() - th, time.process_time() - pr, clock() - w0
        print(f"    the whole call (compile, inputs, run): {w0:.3f} s, the main thread on a "
              f"CPU {th:.3f} s, the process {pr:.3f} s ({len(os.sched_getaffinity(0))} CPUs)")
        for k in sorted(T, key=T.get, reverse=True):
            print(f"    {k:16} {N[k] / n:6.2f} per k  {T[k] / N[k] * 1e6:7.2f} us each  "
                  f"{T[k] / n * 1e6:7.1f} us per k")

"""Run `bbmm run ARGS...` printing every kernel build's options (session 19 diagnosis)."""
import sys

import bbmm.devices.opencl as o
from bbmm.cli import main

orig = o.OpenCLDevice.kernel


def kernel(self, source, name, options=()):
    print("BUILD", name, options, flush=True)
    return orig(self, source, name, options)


o.OpenCLDevice.kernel = kernel
launch0 = o.OpenCLDevice.launch
seen: dict = {}


def launch(self, kernel, global_size, local_size, args):
    n = seen[kernel.function_name] = seen.get(kernel.function_name, 0) + 1
    if n <= 2:
        shown = [f"buf{a.size}" if hasattr(a, "size") and not hasattr(a, "dtype") else
                 (int(a) if hasattr(a, "dtype") else a) for a in args]
        print("LAUNCH", kernel.function_name, tuple(global_size), local_size, shown, flush=True)
    return launch0(self, kernel, global_size, local_size, args)


o.OpenCLDevice.launch = launch
sys.exit(main(sys.argv[1:]))

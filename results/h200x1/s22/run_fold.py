"""Session 22: ``bbmm`` with rect copies whose buffer offset is folded into the origin's
rows and bytes (y = offset // row pitch, x = offset % row pitch) instead of bytes alone,
when FOLD=y (same addresses; see dst_probe.py). Arguments as for ``python -m bbmm``."""
import os
import sys

import bbmm.devices.opencl as ocl
from bbmm.cli import main

_plan = ocl.rect_plan


def rect_plan_y(*args, **kw):
    out = []
    for ao, bo, ext, ap, bp in _plan(*args, **kw):
        fixed = []
        for o, p in ((ao, ap), (bo, bp)):
            x, y, z = o
            if p[0] > 0 and x >= p[0]:
                y, x = y + x // p[0], x % p[0]
            fixed.append((x, y, z))
        out.append((fixed[0], fixed[1], ext, ap, bp))
    return out


if os.environ.get("FOLD", "x") == "y":
    ocl.rect_plan = rect_plan_y
sys.exit(main(sys.argv[1:]))

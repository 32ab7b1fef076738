"""bbmm: the Bounding-Box-based Memory Manager for affine loop nests on several GPUs.

Ramashekar & Bondhugula, "Automatic data allocation and buffer management for
multi-GPU machines", ACM TACO 10(4), 2013.
"""
from __future__ import annotations

from . import devices
from .api import Program, RunStats, compile
from .box import Box, disjoint
from .diagnostic import BBMMError, UsageError
from .version import __version__
__all__ = ["Box", "disjoint", "BBMMError", "UsageError", "compile", "devices", "Program",
           "RunStats", "__version__"]

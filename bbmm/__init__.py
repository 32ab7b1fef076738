"""bbmm: the Bounding-Box-based Memory Manager for affine loop nests on several GPUs.

Ramashekar & Bondhugula, "Automatic data allocation and buffer management for
multi-GPU machines", ACM TACO 10(4), 2013.
"""
from __future__ import annotations

from .box import Box, disjoint
from .diagnostic import BBMMError

__version__ = "0.1.0"
__all__ = ["Box", "disjoint", "BBMMError", "__version__"]

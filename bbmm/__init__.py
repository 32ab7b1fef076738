"""bbmm: the Bounding-Box-based Memory Manager for affine loop nests on several GPUs.

Ramashekar & Bondhugula, "Automatic data allocation and buffer management for
multi-GPU machines", ACM TACO 10(4), 2013.
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from pathlib import Path


class _CheckoutCompiler(importlib.abc.MetaPathFinder):
    """``bbmm.codegen`` found in a checkout that is not installed (``PYTHONPATH`` set to
    it, docs/gpu.md): the compiler's folder, ``codegen/``, sits beside ``bbmm/``, and only
    an install (wheel or editable) maps it into this package (pyproject.toml)."""

    def __init__(self, folder: Path):
        self.folder = folder

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "bbmm.codegen":
            return None
        return importlib.util.spec_from_file_location(
            fullname, self.folder / "__init__.py",
            submodule_search_locations=[str(self.folder)])


def _find_compiler_in_checkout() -> None:
    here = Path(__file__).resolve().parent
    beside = here.parent / "codegen"
    if not (here / "codegen").is_dir() and (beside / "compile.py").is_file() and \
            not any(isinstance(f, _CheckoutCompiler) for f in sys.meta_path):
        sys.meta_path.append(_CheckoutCompiler(beside))


_find_compiler_in_checkout()

from . import devices  # noqa: E402
from .api import Program, RunStats, compile
from .box import Box, disjoint
from .diagnostic import BBMMError, UsageError
from .version import __version__
__all__ = ["Box", "disjoint", "BBMMError", "UsageError", "compile", "devices", "Program",
           "RunStats", "__version__"]

"""Where the tests find the checkout's files, wherever a test module sits under ``tests/``."""
from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
"""``tests/``."""
ROOT = TESTS.parent
"""The checkout."""
KERNELS = TESTS / "kernels"
"""The C programs the tests compile and run."""
GOLDEN = TESTS / "golden"
"""Checked-in generated code the tests compare with (``UPDATE_GOLDEN=1`` rewrites it)."""
POLYBENCH = ROOT / "polybench"
"""The paper's programs, shipped as bbmm's examples."""
SCRIPTS = ROOT / "scripts"
"""Benchmarks and the paper's experiments."""

"""Shared helpers of the compiler-analysis tests (test_boxes, test_flow): test kernels,
an inline program with several kinds of nests, and isl set enumeration."""
from __future__ import annotations

import islpy as isl

from bbmm.codegen.frontend import parse_file, parse_source
from support.paths import KERNELS


MIXED = """void mixed(int n, float A[n], float B[n][n], float C[n]) {
  A[0] = C[0];
  for (int t = 1; t < n; t++) {
    A[t] = A[t - 1] + 1.0f;
    for (int j = 0; j < n; j++)
      B[t][j] = B[t - 1][j] + A[t];
    for (int i = 0; i < n; i++)
      B[i][t] = B[i][t] * 0.5f + B[i][t - 1];
    for (int j = 1; j < n; j++)
      C[j] = C[j - 1] + B[t][j];
  }
  for (int i = 1; i < n; i++)
    A[i] = A[i - 1] + C[i];
}"""
"""Empty-band nests at top level, inside a host loop and as all-sequential subtrees,
and two band nests whose p0 runs over rows and over columns of B."""


def kernel(name: str):
    """A test kernel by file stem, or the inline ``mixed`` program."""
    if name == "mixed":
        return parse_source(MIXED, "mixed.c")
    return parse_file(KERNELS / f"{name}.c")


def points(s: isl.Set) -> list[tuple[int, ...]]:
    """Every integer point of a bounded set, as tuples of its set coordinates."""
    out = []

    def cb(p):
        n = p.get_space().dim(isl.dim_type.set)
        out.append(tuple(p.get_coordinate_val(isl.dim_type.set, d).to_python()
                         for d in range(n)))
    s.foreach_point(cb)
    return out

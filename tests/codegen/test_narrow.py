"""Nests that run as one tile (bbmm/codegen/host.py, narrow_nests): fewer loops than
another nest of their serial loop, and no access that would make their one box a
square."""
from __future__ import annotations

from bbmm.codegen.compile import compile_program
from bbmm.codegen.deps import plan
from bbmm.codegen.frontend import parse_source
from bbmm.codegen.host import narrow_nests
from support.paths import POLYBENCH


def narrow_of(scop):
    return narrow_nests(scop, list(plan(scop).nests))


def test_lu_and_fdtd2d_have_one_narrow_nest_each():
    for name in ("lu", "fdtd2d"):
        prog = compile_program(POLYBENCH / f"{name}.c")
        assert narrow_of(prog.scop) == {0}, name
        # the driver gives it one tile over its whole range
        assert "in whole_tile(" in prog.host_source


def test_nests_of_equal_depth_are_tiled_as_usual():
    for name in ("floyd", "heat2d", "heat3d"):
        prog = compile_program(POLYBENCH / f"{name}.c")
        assert narrow_of(prog.scop) == set(), name
        assert "in whole_tile(" not in prog.host_source


DIAGONAL = """
void diag(int n, float A[n][n], float B[n][n]) {
  for (int k = 0; k < n; k++) {
    for (int j = 0; j < n; j++)
      A[j][j] = A[j][j] + 1.0f;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        B[i][j] = B[i][j] + A[i][j];
  }
}
"""


def test_a_diagonal_keeps_its_tiles():
    """A[j][j]: one tile's box would be the whole n x n square."""
    assert narrow_of(parse_source(DIAGONAL, "diag.c")) == set()
    row = DIAGONAL.replace("A[j][j] = A[j][j] + 1.0f", "A[k][j] = A[k][j] + 1.0f")
    assert narrow_of(parse_source(row, "row.c")) == {0}


def test_nests_outside_serial_loops_are_not_narrow():
    src = """
void f(int n, float x[n], float A[n][n]) {
  for (int j = 0; j < n; j++)
    x[j] = 2.0f * x[j];
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      A[i][j] = A[i][j] + x[j];
}
"""
    assert narrow_of(parse_source(src, "f.c")) == set()


ALIGNED = """
void f(int n, float A[n][n], float x[n]) {
  for (int k = 0; k < n; k++) {
    for (int i = 0; i < n; i++)
      x[i] = 0.5f * x[i] + A[i][k];
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        A[i][j] = A[i][j] + x[i];
  }
}
"""


def test_a_nest_along_the_distributed_dimension_keeps_its_tiles():
    """x[i] and A[i][k] follow the rows that the 2-D nest distributes: each tile of the
    1-D nest sits beside its data. Along the other dimension it is narrow."""
    assert narrow_of(parse_source(ALIGNED, "aligned.c")) == set()
    across = ALIGNED.replace("x[i] = 0.5f * x[i] + A[i][k]", "x[i] = 0.5f * x[i] + A[k][i]")
    assert narrow_of(parse_source(across, "across.c")) == set()  # x[i] still follows rows
    row = ALIGNED.replace("x[i] = 0.5f * x[i] + A[i][k]", "A[k][i] = 0.5f * A[k][i]")
    assert narrow_of(parse_source(row, "row.c")) == {0}


def test_a_diagonal_through_a_floor_division_keeps_its_tiles():
    src = """
void f(int n, float A[n][n], float x[n], float B[n][n]) {
  for (int k = 0; k < n; k++) {
    for (int j = 0; j < n; j++)
      x[j] = A[k][j] + A[j / 2][j / 2];
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        B[i][j] = B[i][j] + x[j];
  }
}
"""
    assert narrow_of(parse_source(src, "f.c")) == set()
    plain = src.replace(" + A[j / 2][j / 2]", "")
    assert narrow_of(parse_source(plain, "g.c")) == {0}

"""Flat arrays read as rows (codegen/delinearize.py): ``A[i*n + j]`` is ``A[i][j]`` of
``A[][n]`` when every access has that form and its column stays in ``0 .. n - 1``; the
model is then the one of the same program written with two-dimensional arrays (its
dependences compared with isl), and anything else is left alone or refused."""
from __future__ import annotations

import islpy as isl
import pytest
from pycparser import c_generator, c_parser

from bbmm.diagnostic import UnsupportedProgramError
from bbmm.codegen.delinearize import delinearize
from bbmm.codegen.deps import dependences
from bbmm.codegen.frontend import parse_source


def _rows(src: str, ints=("n", "m")):
    f = c_parser.CParser().parse(src).ext[0]
    g, rows = delinearize(f, ints)
    return rows, c_generator.CGenerator().visit(g)


@pytest.mark.parametrize("sub,row,col", [
    ("i*n + j", "i", "j"), ("n*i + j", "i", "j"), ("(i + 1)*n + j - 1", "i + 1", "j - 1"),
    ("j + n*(i - 2)", "i - 2", "j"), ("i * n + (j + 1)", "i", "j + 1"), ("2*i*n + j", "2 * i", "j"),
    ("(int) (i * n) + 3", "i", "3"), ("(i % 2)*n + j / 2", "i % 2", "j / 2"),
])
def test_subscripts_split_into_row_and_column(sub, row, col):
    rows, text = _rows(f"void f(int n, float *A) {{ A[{sub}] = 0; A[0] = 1; }}".replace(
        "float *A", "float A[]"))
    assert rows == {"A": ("n",)}
    assert f"A[{row}][{col}] = 0;" in text and "A[0][0] = 1;" in text
    assert "float A[][n]" in text


@pytest.mark.parametrize("body", [
    "A[i] = 0;",                       # no product: a one-dimensional array
    "A[i*n + j] = A[i*m + j];",        # two strides
    "A[i*n*n*n] = 0;",                 # a product of four
    "A[i*j] = 0;",                     # a product of iterators
    "A[i*n + j] = A[(int) C[i]];",     # an indirect access beside the product
    "A[i*n + j] = B(A);",              # the array passed on
])
def test_other_arrays_are_left_alone(body):
    rows, _ = _rows(f"void f(int n, int m, float A[]) {{ {body} }}")
    assert rows == {}


@pytest.mark.parametrize("sub,ref", [
    ("(i*n + j)*m + k", "A[i][j][k]"), ("i*n*m + j*m + k", "A[i][j][k]"),
    ("((i + 1)*n + j - 1)*m + k + 1", "A[i + 1][j - 1][k + 1]"),
    ("k + m*(j + n*i)", "A[i][j][k]"), ("(i*n + n - 1 - j)*m + k", "A[i + 1][(-j) - 1][k]"),
])
def test_three_dimensional_subscripts(sub, ref):
    """Strides peeled off from the innermost: ``m`` is in every product, then ``n``."""
    f = c_parser.CParser().parse(f"void f(int n, int m, float A[]) {{ A[{sub}] = 0; }}").ext[0]
    g, rows = delinearize(f, ("n", "m"))
    text = c_generator.CGenerator().visit(g)
    assert rows == {"A": ("n", "m")} and f"{ref} = 0;" in text and "float A[][n][m]" in text


def test_three_dimensional_wrap():
    f = c_parser.CParser().parse(
        "void f(int n, int m, float A[]) { A[(i*n + n - 1 - j)*m + m - 1 - k] = 0; }").ext[0]
    g, _ = delinearize(f, ("n", "m"), wrap=True)
    assert "A[i][(n - j) - 1][(m - k) - 1] = 0;" in c_generator.CGenerator().visit(g)


def _deps(src):
    """The dependences where both programs' contexts hold (the flat one's inferred sizes
    add ``n - 1 >= 1``)."""
    s = parse_source(src, "d.c")
    d = dependences(s)
    where = isl.Set("[tsteps, n] -> { : tsteps >= 1 and n >= 3 }")
    return s, {k: getattr(d, k).intersect_params(where) for k in ("flow", "raw", "war", "waw")}


def test_the_model_is_the_two_dimensional_programs():
    flat = """void f(int tsteps, int n, float *A, float *B) {
      for (int t = 0; t < tsteps; t++)
        for (int i = 1; i < n - 1; i++)
          for (int j = 1; j < n - 1; j++)
            B[i*n + j] = A[(i - 1)*n + j] + A[i*n + j + 1] + B[(i + 1)*n + j]; }"""
    rect = """void f(int tsteps, int n, float A[n][n], float B[n][n]) {
      for (int t = 0; t < tsteps; t++)
        for (int i = 1; i < n - 1; i++)
          for (int j = 1; j < n - 1; j++)
            B[i][j] = A[i - 1][j] + A[i][j + 1] + B[i + 1][j]; }"""
    s1, d1 = _deps(flat)
    s2, d2 = _deps(rect)
    assert all(d1[k].is_equal(d2[k]) and not d1[k].is_empty() for k in d1)
    assert {a.name: a.dims for a in s1.arrays} == {"A": ("n - 1", "n"), "B": ("n", "n")}


def test_the_model_is_the_three_dimensional_programs():
    flat = """void f(int tsteps, int n, float *A, float *B) {
      for (int t = 0; t < tsteps; t++)
        for (int i = 1; i < n - 1; i++)
          for (int j = 1; j < n - 1; j++)
            for (int k = 1; k < n - 1; k++)
              B[(i*n + j)*n + k] = A[((i - 1)*n + j)*n + k] + A[(i*n + j + 1)*n + k]
                                   + A[i*n*n + j*n + k - 1] + B[((i + 1)*n + j)*n + k]; }"""
    rect = """void f(int tsteps, int n, float A[n][n][n], float B[n][n][n]) {
      for (int t = 0; t < tsteps; t++)
        for (int i = 1; i < n - 1; i++)
          for (int j = 1; j < n - 1; j++)
            for (int k = 1; k < n - 1; k++)
              B[i][j][k] = A[i - 1][j][k] + A[i][j + 1][k] + A[i][j][k - 1]
                           + B[i + 1][j][k]; }"""
    s1, d1 = _deps(flat)
    s2, d2 = _deps(rect)
    assert all(d1[k].is_equal(d2[k]) and not d1[k].is_empty() for k in d1)
    assert {a.name: a.dims for a in s1.arrays} == {"A": ("n - 1", "n", "n"), "B": ("n", "n", "n")}
    assert dict(s1.rows) == {"A": ("n", "n"), "B": ("n", "n")}


def test_a_middle_subscript_that_can_leave_is_refused():
    src = ("void f(int n, int m, float *A) { for (int i = 0; i < n; i++) "
           "for (int j = 0; j < n; j++) for (int k = 0; k < m; k++) "
           "A[(i*n + j + 1)*m + k] = 1; }")
    with pytest.raises(UnsupportedProgramError,
                       match=r"blocks of 'n' x 'm' elements .*'A\[i\]\[j \+ 1\]\[k\]'.*"
                             r"0 \.\. n - 1, 0 \.\. m - 1"):
        parse_source(src, "bad.c")


def test_a_column_that_can_leave_the_row_is_refused():
    src = ("void f(int n, float *A, float *B) { for (int i = 0; i < n; i++) "
           "for (int j = 0; j < n; j++) B[i*n + j] = A[i*n + j + 1]; }")
    with pytest.raises(UnsupportedProgramError,
                       match=r"rows of 'n' elements .*'A\[i\]\[j \+ 1\]'.*leave 0 \.\. n - 1"):
        parse_source(src, "bad.c")


@pytest.mark.parametrize("sub,row,col", [
    ("i*n + n - 1 - j", "i", "(n - j) - 1"), ("(i + 1)*n - 1 - j", "i", "(n - j) - 1"),
    ("i*n - j + n", "i", "n - j"), ("i*n + j", "i", "j"), ("(i - 1)*n + j", "i - 1", "j"),
])
def test_wrap_reads_a_column_below_zero_one_row_up(sub, row, col):
    f = c_parser.CParser().parse(f"void f(int n, float A[]) {{ A[{sub}] = 0; }}").ext[0]
    g, rows = delinearize(f, ("n",), wrap=True)
    assert rows == {"A": ("n",)}
    assert f"A[{row}][{col}] = 0;" in c_generator.CGenerator().visit(g)


def test_a_row_read_backwards_is_the_two_dimensional_program():
    """``A[i*n + n - 1 - j]``: the first reading (row i + 1 at -1 - j) leaves 0 .. n - 1,
    the second (row i at n - 1 - j) is proven and gives the C99 program's dependences."""
    flat = """void f(int tsteps, int n, float *A, float *B) {
      for (int t = 0; t < tsteps; t++)
        for (int i = 1; i < n - 1; i++)
          for (int j = 0; j < n; j++)
            B[i*n + j] = A[i*n + n - 1 - j] + A[(i + 1)*n - 1 - j] + B[(i - 1)*n + j]; }"""
    rect = """void f(int tsteps, int n, float A[n - 1][n], float B[n - 1][n]) {
      for (int t = 0; t < tsteps; t++)
        for (int i = 1; i < n - 1; i++)
          for (int j = 0; j < n; j++)
            B[i][j] = A[i][n - 1 - j] + A[i][n - 1 - j] + B[i - 1][j]; }"""
    s1, d1 = _deps(flat)
    s2, d2 = _deps(rect)
    assert all(d1[k].is_equal(d2[k]) for k in d1) and not d1["flow"].is_empty()
    assert dict(s1.rows) == {"A": ("n",), "B": ("n",)}


def test_a_column_neither_reading_keeps_in_the_row_is_refused():
    """``A[i*n - j]`` is row i at 0 for j = 0 and row i - 1 at n - j otherwise: one affine
    reading cannot name it, and the refusal quotes the first reading."""
    src = ("void f(int n, float *A, float *B) { for (int i = 1; i < n; i++) "
           "for (int j = 0; j < n; j++) B[i*n + j] = A[i*n - j]; }")
    with pytest.raises(UnsupportedProgramError, match=r"'A\[i\]\[-j\]'.*leave 0 \.\. n - 1"):
        parse_source(src, "bad.c")


def test_bbmm_compile_says_which_arrays_it_shaped(tmp_path):
    """Pointers, flat arrays and a first size left to the caller get their sizes from
    their subscripts; ``bbmm compile`` lists them, a pointer with its C name."""
    from bbmm.codegen.compile import compile_program
    p = tmp_path / "s.c"
    p.write_text("void s(int n, float *A, float *half, float B[][n]) {\n"
                 "  for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) {\n"
                 "    A[i*n + j] = B[i][j] + *half; } }\n")
    prog = compile_program(p)
    text = prog.summary()
    assert "arrays: float A[n][n], float half_[1], float B[n][n]" in text
    assert "sized from their subscripts: A (pointer, flat, rows of n), B, half_ (pointer)" \
        in text

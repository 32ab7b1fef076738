"""File-scope arrays taken as parameters of the kernel (codegen/globals.py) and copied in
and out of the C file's arrays around the sequential call (bbmm/reference/)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from pycparser import c_generator, c_parser

from bbmm.diagnostic import UnsupportedProgramError
from bbmm.reference import trampoline
from bbmm.codegen.frontend import parse_source
from bbmm.codegen.globals import file_arrays

SRC = """
static float A[8][8];
float B[8][8], C[8], unused[4];
void f(int n, float C[n]) {
  float tmp = 0;
  for (int i = 0; i < 8; i++) { tmp = A[i][0]; B[i][1] = tmp + C[i]; }
}"""


def test_the_arrays_used_become_the_last_parameters():
    ast = c_parser.CParser().parse(SRC)
    g, names = file_arrays(ast, ast.ext[-1], lambda m, n: UnsupportedProgramError(m))
    assert names == ["A", "B"]                      # C is the parameter's; unused unused
    text = c_generator.CGenerator().visit(g)
    assert "void f(int n, float C[n], float A[8][8], float B[8][8])" in text
    assert "static" not in text
    s = parse_source(SRC, "g.c")
    assert s.args == ("n", "C", "A", "B") and s.globals == ("A", "B")


def test_a_kernel_without_them_is_left_alone():
    ast = c_parser.CParser().parse("float A[4]; void f(int n, float A[n]) { A[0] = 1; }")
    f = ast.ext[-1]
    assert file_arrays(ast, f, None) == (f, [])


def test_an_array_with_an_initializer_is_refused():
    with pytest.raises(UnsupportedProgramError, match="file-scope array 'w' has an initializer"):
        parse_source("float w[2] = {1, 2};\nvoid f(int n, float A[n]) "
                     "{ for (int i = 0; i < n; i++) A[i] = w[1]; }", "w.c")


def test_the_trampoline_copies_file_arrays_in_and_out():
    text = trampoline("f", ["int", "void *"], ("A", "B"))
    assert text.index("__builtin_memcpy(A, _bbmm_g0, sizeof A);") < text.index("f(_bbmm_a0, _bbmm_a1)")
    assert text.index("f(_bbmm_a0, _bbmm_a1)") < text.index("__builtin_memcpy(_bbmm_g1, B, sizeof B);")
    assert "void *_bbmm_g1" in text


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                    reason="no C compiler")
def test_the_reference_sees_the_values_bbmm_gives(tmp_path):
    """The sequential C program runs on the arrays bbmm made, and the init function that
    fills file-scope arrays fills bbmm's arrays."""
    from bbmm.reference import init_arrays, run_reference
    from bbmm.codegen.frontend import parse_file
    p = tmp_path / "g.c"
    p.write_text("""
    #define N 6
    double A[N][N], s[N];
    void init_array(void) { for (int i = 0; i < N; i++) for (int j = 0; j < N; j++) A[i][j] = i - j; }
    void g(void) { for (int i = 0; i < N; i++) { s[i] = 0; for (int j = 0; j < N; j++) s[i] += A[i][j]; } }
    """)
    scop = parse_file(p)
    arrays, _ = init_arrays(scop, {}, init="init_array")
    i, j = np.meshgrid(np.arange(6), np.arange(6), indexing="ij")
    assert np.array_equal(arrays["A"], i - j)
    arrays["A"] = arrays["A"] * 2
    out = run_reference(p, scop, {}, {}, arrays)
    assert np.array_equal(out["s"], (2 * (i - j)).sum(axis=1))


SCALARS = """
#define K 3
const int N = 2 * K + 1;
static float alpha = 0.1;
static int zero;
int m;
double scale;
void f(float A[N][N], float B[N]) {
  for (int i = 0; i < N; i++) for (int j = zero; j < m; j++) B[i] += alpha * A[i][j] * scale;
}
int main(void) { m = 5; scale = 2.0; return 0; }"""


def test_file_constants_are_written_in_and_variables_main_sets_become_parameters():
    from bbmm.codegen.globals import file_scalars
    ast = c_parser.CParser().parse(SCALARS.replace("#define K 3", "").replace("K", "3"))
    g, names = file_scalars(ast, next(e for e in ast.ext if getattr(e, "decl", None)
                                      and e.decl.name == "f"), None)
    text = " ".join(c_generator.CGenerator().visit(g).split())
    assert names == ["m", "scale"]
    # an integer constant as its value (affine), a float one under its type's cast; a
    # variable without an initializer that nothing assigns is C's 0
    assert "void f(float A[7][7], float B[7], int m, double scale)" in text
    assert "for (int i = 0; i < 7; i++)" in text and "int j = 0; j < m;" in text
    assert "B[i] += (((float) 0.1) * A[i][j]) * scale;" in text
    s = parse_source(SCALARS, "s.c")
    assert s.globals == ("m", "scale") and s.int_params == ("m",)


def test_a_file_scalar_the_kernel_assigns_is_refused():
    with pytest.raises(UnsupportedProgramError, match="file-scope variable 's' is assigned "
                       "by the kernel"):
        parse_source("float s; void f(int n, float A[n]) { for (int i = 0; i < n; i++) "
                     "s += A[i]; }", "s.c")


def test_the_trampoline_assigns_file_scalars():
    text = trampoline("f", ["void *"], ("A", ("n", "int"), ("scale", "double")))
    assert "int _bbmm_g1, double _bbmm_g2" in text
    assert text.index("n = _bbmm_g1; scale = _bbmm_g2;") < text.index("f(_bbmm_a0)")
    assert "_bbmm_g1, n" not in text                # nothing copied back for scalars


def test_the_trampoline_points_a_table_into_the_rows():
    text = trampoline("f", ["int", "void **"])
    assert "void *_bbmm_a1, long _bbmm_n1, long _bbmm_s1" in text
    assert "_bbmm_t1[_bbmm_k] = (char *) _bbmm_a1 + _bbmm_k * _bbmm_s1;" in text
    assert text.index("f(_bbmm_a0, (void *) _bbmm_t1);") < text.index("__builtin_free(_bbmm_t1)")


def test_an_allocator_of_matrices_is_no_kernel_candidate():
    from bbmm.codegen.csource import find_kernel
    ast = c_parser.CParser().parse("""
    void *malloc(unsigned long);
    double **matrix(int n) { double **r = malloc(8 * n); for (int i = 0; i < n; i++) r[i] = 0;
                             return r; }
    void g(int n, double A[n]) { for (int i = 0; i < n; i++) A[i] = 1; }""")
    assert find_kernel(ast, None, "m.c").decl.name == "g"

"""Small local arrays indexed by constants only become scalars (codegen/scalarize.py)."""
from __future__ import annotations

import pytest
from pycparser import c_generator, c_parser

from bbmm.diagnostic import BBMMWarning, UnsupportedProgramError
from bbmm.codegen.frontend import parse_source
from bbmm.codegen.scalarize import MAX_ELEMENTS, pointer_arrays, scalarize_small_arrays


def _run(body: str, taken=("n", "A", "i", "w")):
    f = c_parser.CParser().parse(f"void f(int n, float A[n]) {{ {body} }}").ext[0]
    g, elems = scalarize_small_arrays(f, set(taken))
    return c_generator.CGenerator().visit(g), elems, c_generator.CGenerator().visit(f)


def test_constant_subscripts_make_scalars():
    text, elems, before = _run("for (int i = 1; i < n; i++) { float w[2][2]; "
                               "w[0][1] = A[i]; w[1][0] = w[0][1] * 2; A[i] = w[1][0]; }")
    assert elems == {"w_0_0": "w[0][0]", "w_0_1": "w[0][1]", "w_1_0": "w[1][0]",
                     "w_1_1": "w[1][1]"}
    assert "float w_0_0;" in text and "float w_1_1;" in text
    assert "w_1_0 = w_0_1 * 2;" in text and "w[" not in text
    assert "w[0][1]" in before                         # the original tree is untouched


@pytest.mark.parametrize("body", [
    # a subscript that varies, a partial reference, a bare use, out of bounds
    "for (int i = 0; i < n; i++) { float w[2]; for (int k = 0; k < 2 && k < n; k++) "
    "w[k] = A[i]; A[i] = w[0]; }",
    "for (int i = 0; i < n; i++) { float w[2][2]; w[0][0] = 1; A[i] = *w[1]; }",
    "for (int i = 0; i < n; i++) { float w[2]; w[0] = 1; A[i] = sizeof(w); }",
    "for (int i = 0; i < n; i++) { float w[2]; w[2] = 1; A[i] = w[0]; }",
    # not inside a loop, sized by a parameter, too large
    "float w[2]; for (int i = 0; i < n; i++) { w[0] = A[i]; A[i] = w[0]; }",
    "for (int i = 0; i < n; i++) { float w[n]; w[0] = A[i]; A[i] = w[0]; }",
    f"for (int i = 0; i < n; i++) {{ float w[{MAX_ELEMENTS + 1}]; w[0] = A[i]; A[i] = w[0]; }}",
])
def test_other_arrays_stay_arrays(body):
    text, elems, before = _run(body)
    assert elems == {} and text == before


def test_scalarized_arrays_are_values_of_the_model_and_warnings_name_the_elements():
    s = parse_source("void f(int n, float A[n], float B[n]) {\n"
                     "  for (int i = 1; i < n; i++) {\n"
                     "    float w[3];\n"
                     "    w[0] = A[i - 1]; w[1] = A[i]; w[2] = w[0] + w[1];\n"
                     "    B[i] = w[2];\n  }\n}\n", "s.c")
    assert not [a for a in s.arrays if a.local]        # no memory: temporaries
    assert [acc.array for acc in s.accesses()] == ["A", "A", "B"]
    with pytest.warns(BBMMWarning, match=r"s.c:5:5: .* the scalar 's\[0\]' carries a value"):
        parse_source("void f(int n, float A[n], float B[n]) {\n"
                     "  for (int t = 1; t < n; t++) {\n"
                     "    float s[1]; s[0] = 0;\n"
                     "#pragma omp parallel for\n"
                     "    for (int i = 0; i < n; i++) s[0] += A[i];\n"
                     "    B[t] = s[0];\n  }\n}\n", "s.c")


def test_loops_of_constant_trips_over_such_an_array_are_unrolled():
    text, elems, _ = _run("for (int i = 1; i < n; i++) { float w[3]; "
                          "for (int c = 0; c < 3; c++) w[c] = A[i] * c; "
                          "for (int c = 0; c <= 2; c++) A[i] = A[i] + w[2 - c]; "
                          "for (int c = 0; c < 3; c++) A[c] = A[c] + 1; }")
    assert set(elems) == {"w_0", "w_1", "w_2"}
    assert "w_2 = A[i] * 2;" in text and "A[i] = A[i] + w_0;" in text
    assert text.count("for (int c = 0;") == 1 and "A[c] = A[c] + 1;" in text  # no w: a loop


@pytest.mark.parametrize("loop", [
    "for (int c = 0; c < n; c++) w[c] = A[i];",                  # trips not constant
    "for (int c = 0; c < 2; c++) { w[c] = A[i]; if (c) break; }",  # control flow
    "for (int c = 0; c < 2; c++) { w[c] = A[i]; c++; }",         # the iterator written
    "for (int c = 0; c < 2; c += 2) w[c] = A[i];",                # another step
])
def test_loops_that_cannot_be_unrolled_keep_the_array(loop):
    text, elems, before = _run(f"for (int i = 0; i < n; i++) {{ float w[2]; {loop} "
                               f"A[i] = w[0]; }}")
    assert elems == {} and text == before


def test_an_array_the_model_refuses_as_scalars_stays_memory():
    """A scalar read before any assignment reaches it is refused; the array element
    (whatever C leaves in it) is taken, as memory: the array stays one."""
    body = ("  for (int i = 1; i < n; i++) {{\n    {decl}\n    {t0} = A[i];\n"
            "    B[i] = {t1};\n  }}\n")
    src = "void f(int n, float A[n], float B[n]) {{\n" + body + "}}\n"
    with pytest.raises(UnsupportedProgramError, match="read before it is assigned"):
        parse_source(src.format(decl="float t0, t1;", t0="t0", t1="t1"), "c.c")
    s = parse_source(src.format(decl="float t[2];", t0="t[0]", t1="t[1]"), "c.c")
    assert [(a.name, a.local) for a in s.arrays if a.local] == [("t", "t")]




def test_pointers_used_as_arrays_are_arrays_sized_by_their_subscripts():
    """``float *s`` used as ``*s``/``s[0]`` is ``float s[]`` (size 1), ``float *x`` used
    as ``x[i]`` for ``i < n`` is ``x[n]``, ``B[][m]`` gets its first size the same way; a
    pointer used otherwise stays and is refused with the reason."""
    src = ("void f(int n, int m, float A[n], float *s, int *c, float *x, float B[][m], "
           "float *p) {\n"
           "  for (int i = 0; i < n; i++) { *s += A[i]; c[0] = c[0] + 1; x[i + 1] = 0; "
           "B[i][0] = 1; }\n  *(p + 1) = 0; }\n")
    f = c_parser.CParser().parse(src).ext[0]
    g, names, _ = pointer_arrays(f)
    assert names == {"s", "c", "x"}
    text = c_generator.CGenerator().visit(g)
    assert "float s[]" in text and "int c[]" in text and "float *p" in text
    assert "s[0] += A[i];" in text and "*s" not in text
    with pytest.raises(UnsupportedProgramError, match="pointer parameter 'p' not supported"):
        parse_source(src, "p.c")
    scop = parse_source(src.replace("  *(p + 1) = 0; }", "  *p = *s; }"), "p.c")
    assert {a.name: a.dims for a in scop.param_arrays if a.name != "A"} == {
        "s": ("1",), "c": ("1",), "x": ("n + 1",), "B": ("n", "m"), "p": ("1",)}
    assert pointer_arrays(c_parser.CParser().parse("void f(float A[2]) { A[0] = 1; }")
                          .ext[0])[1] == frozenset()


def test_pointers_to_rows_are_arrays_of_rows():
    """``float (*A)[n]`` (a malloc'ed matrix passed the C99 way) is ``float A[][n]``;
    ``(*A)[j]`` is row 0; ``double (*G)[ny][nz]`` likewise in three dimensions."""
    src = ("void f(int n, int ny, int nz, float (*A)[n], double (*G)[ny][nz]) {\n"
           "  for (int i = 1; i < n; i++) for (int j = 0; j < n; j++) {\n"
           "    A[i][j] = (*A)[j]; G[i][j % ny][0] = 1; } }\n")
    g, names, _ = pointer_arrays(c_parser.CParser().parse(src).ext[0])
    assert names == {"A", "G"}
    text = c_generator.CGenerator().visit(g)
    assert "float A[][n]" in text and "double G[][ny][nz]" in text
    assert "A[i][j] = A[0][j];" in text
    scop = parse_source(src.replace("j % ny", "0"), "rows.c")
    assert {a.name: a.dims for a in scop.param_arrays} == {"A": ("n", "n"),
                                                          "G": ("n", "ny", "nz")}


def test_a_size_that_is_no_affine_expression_is_refused():
    src = ("void f(int n, int m, float *x) { for (int i = 0; i < n; i++) x[i] = 0; "
           "for (int j = 0; j < m; j++) x[j] = 1; }")
    with pytest.raises(UnsupportedProgramError,
                       match="size of 'x' .* not one affine expression"):
        parse_source(src, "x.c")
    with pytest.raises(UnsupportedProgramError, match="explicit size in every dimension but"):
        parse_source("void f(int n, float B[n][]) { for (int i = 0; i < n; i++) "
                     "B[i][0] = 1; }", "b.c")


def test_tables_of_row_pointers_are_arrays_sized_by_their_subscripts():
    """``double **A`` used only as ``A[i][j]`` is ``double A[][]`` with both sizes from its
    subscripts; a row used alone (``A[i]``, a pointer again) leaves the pointer."""
    src = ("void f(int n, int m, double **A, double **B, double **C) {\n"
           "  for (int i = 0; i < n; i++) for (int j = 1; j < m; j++) {\n"
           "    A[i][j] = B[i + 1][j - 1]; C[i][0] = 0; } double *r = C[0]; }\n")
    g, names, tables = pointer_arrays(c_parser.CParser().parse(src).ext[0])
    assert names == frozenset() and tables == {"A", "B"}
    text = c_generator.CGenerator().visit(g)
    assert "double A[][]" in text and "double B[][]" in text and "double **C" in text
    scop = parse_source(src.replace(" double *r = C[0];", "").replace("double **C",
                                                                     "double C[n][m]"), "t.c")
    assert {a.name: a.dims for a in scop.param_arrays} == {
        "A": ("n", "m"), "B": ("n + 1", "m - 1"), "C": ("n", "m")}
    assert scop.tables == ("A", "B") and set(scop.pointers) >= {"A", "B"}

"""Helpers that take arrays or return nothing, inlined at their calls (codegen/inline.py):
the model of the factored program is the model of the same program written out by hand
(statements and dependences compared with isl), each form of call and argument, names
kept apart, and the refusals."""
from __future__ import annotations

import re

import pytest
from pycparser import c_generator, c_parser

from bbmm.diagnostic import UnsupportedProgramError
from bbmm.codegen.csource import find_kernel
from bbmm.codegen.deps import dependences
from bbmm.codegen.frontend import parse_source
from bbmm.codegen.inline import inline_helpers


def _inlined(src: str) -> str:
    ast = c_parser.CParser().parse(src)
    funcs = [f for f in ast.ext]
    kernel = funcs[-1]
    defs = {f.decl.name: f for f in funcs[:-1]}
    out = inline_helpers(kernel, defs, lambda msg, node: UnsupportedProgramError(msg))
    return c_generator.CGenerator().visit(out)


def test_a_row_helper_is_the_program_written_out():
    factored = """
    static void smooth(int n, float *dst, const float *src) {
      for (int j = 1; j < n - 1; j++) dst[j] = src[j - 1] + src[j + 1]; }
    void f(int tsteps, int n, float A[n][n], float B[n][n]) {
      for (int t = 0; t < tsteps; t++) {
        for (int i = 0; i < n; i++) smooth(n, B[i], A[i]);
        for (int i = 0; i < n; i++) smooth(n, A[i], B[i]); } }"""
    by_hand = """
    void f(int tsteps, int n, float A[n][n], float B[n][n]) {
      for (int t = 0; t < tsteps; t++) {
        for (int i = 0; i < n; i++) for (int j = 1; j < n - 1; j++) B[i][j] = A[i][j - 1] + A[i][j + 1];
        for (int i = 0; i < n; i++) for (int j_smooth = 1; j_smooth < n - 1; j_smooth++)
          A[i][j_smooth] = B[i][j_smooth - 1] + B[i][j_smooth + 1]; } }"""
    s1, s2 = parse_source(factored, "a.c"), parse_source(by_hand, "b.c")
    assert [st.text for st in s1.statements] == [st.text for st in s2.statements]
    d1, d2 = dependences(s1), dependences(s2)
    assert all(getattr(d1, k).is_equal(getattr(d2, k)) for k in ("flow", "raw", "war", "waw"))
    assert not d1.flow.is_empty()


@pytest.mark.parametrize("call,expect", [
    ("y[i] = dot(n, A[i], x);", ["s = 0;", "s += A[i][k] * x[k];", "y[i] = s;"]),
    ("y[i] += dot(n, A[i], x);", ["y[i] += s;"]),
    ("float d = dot(n, A[i], x); y[i] = d;", ["float d;", "d = s;", "y[i] = d;"]),
    ("y[i] = 2 * dot(n, A[i], x) + 1;", ["float v_dot;", "v_dot = s;", "y[i] = (2 * v_dot) + 1;"]),
    ("dot(n, A[i], x);", ["s += A[i][k] * x[k];"]),
])
def test_a_value_helper_in_each_form_of_call(call, expect):
    text = _inlined(f"""
    float dot(int n, const float a[], const float b[]) {{
      float s = 0; for (int k = 0; k < n; k++) s += a[k] * b[k]; return s; }}
    void f(int n, float A[n][n], float x[n], float y[n]) {{
      for (int i = 0; i < n; i++) {{ {call} }} }}""")
    pos = [text.index(e) for e in expect]
    assert pos == sorted(pos), text


def test_out_parameters_and_shifted_rows():
    text = _inlined("""
    void mm(int n, const float *r, float *lo, float *hi) {
      *lo = r[0]; *hi = r[0];
      for (int j = 1; j < n; j++) { *lo = r[j] < *lo ? r[j] : *lo; hi[0] = r[j] > *hi ? r[j] : *hi; } }
    void f(int n, float A[n][n], float L[n], float H[n]) {
      for (int i = 0; i < n; i++) { float h; mm(n - 1, &A[i][1], &L[i], &h); H[i] = h; } }""")
    assert "L[i] = A[i][1];" in text and "h = A[i][1];" in text
    assert "L[i] = (A[i][1 + j] < L[i]) ? (A[i][1 + j]) : (L[i]);" in text
    assert "h = (A[i][1 + j] > h) ? (A[i][1 + j]) : (h);" in text


def test_names_are_kept_apart():
    """The helper's loop variable i is the caller's i's neighbour: renamed; a parameter the
    helper assigns, and one whose argument reads an array, become locals holding it."""
    text = _inlined("""
    void g(int n, float v, float w, float *a) {
      a[1] = 0; w = w * 2; for (int i = 0; i < n; i++) a[i] += v + w; }
    void f(int n, float A[n][n]) {
      for (int i = 0; i < n; i++) g(n, A[i][1], 3.0f, A[i]); }""")
    assert "float v = A[i][1];" in text and "float w = 3.0f;" in text
    assert "for (int i_g = 0; i_g < n; i_g++)" in text and "A[i][i_g] += v + w;" in text
    assert text.index("float v = A[i][1];") < text.index("A[i][1] = 0;")


def test_a_value_the_helper_writes_through_a_pointer_is_read_first():
    """``g(s, &s)``: C passes the old ``s`` by value before the body sets ``*out``."""
    text = _inlined("""
    void g(float v, float *out) { *out = 1; out[0] += v; }
    void f(int n, float A[n]) { for (int i = 0; i < n; i++) { float s = A[i]; g(s, &s); A[i] = s; } }""")
    assert text.index("float v = s;") < text.index("s = 1;") < text.index("s += v;")


def test_early_returns_put_the_rest_in_an_else():
    text = _inlined("""
    void clip(int n, float *a, float lo) { if (lo < 0) return; for (int j = 0; j < n; j++) a[j] = lo; }
    float pick(const float *a) { if (a[0] > 1) return a[0]; if (a[1] > 1) { float h = a[1]; return h; } return 0; }
    void f(int n, float A[n][n], float y[n], float L[n]) {
      for (int i = 0; i < n; i++) { clip(n, A[i], L[i]); y[i] = pick(A[i]); } }""")
    flat = " ".join(text.split())
    assert ("float lo = L[i]; if (lo < 0) { } else { for (int j = 0; j < n; j++) A[i][j] = lo;"
            in flat)
    assert ("float result = 0; if (A[i][0] > 1) { result = A[i][0]; } else { if (A[i][1] > 1) "
            "{ float h = A[i][1]; result = h; } else { result = 0; } } y[i] = result;") in flat


def test_helpers_calling_helpers():
    text = _inlined("""
    void inc(float *a, float d) { a[0] += d; }
    void row(int n, float *a) { for (int j = 0; j < n; j++) inc(&a[j], 1.0f); }
    void f(int n, float A[n][n]) { for (int i = 0; i < n; i++) row(n, A[i]); }""")
    assert "A[i][j] += 1.0f;" in text


def test_pure_scalar_helpers_stay_functions():
    src = """
    static float sq(float x) { return x * x; }
    void f(int n, float A[n]) { for (int i = 0; i < n; i++) A[i] = sq(A[i]); }"""
    ast = c_parser.CParser().parse(src)
    kernel = ast.ext[-1]
    assert inline_helpers(kernel, {"sq": ast.ext[0]}, None) is kernel
    assert [h.name for h in parse_source(src, "sq.c").helpers] == ["sq"]


def test_a_helper_with_loops_is_no_kernel_candidate():
    ast = c_parser.CParser().parse("""
    static void clear(int n, float *a) { for (int j = 0; j < n; j++) a[j] = 0; }
    static void both(int n, float A[n][n], int i) { clear(n, A[i]); }
    void f(int n, float A[n][n]) { for (int i = 0; i < n; i++) both(n, A, i); }
    int main(void) { float A[4][4]; f(4, A); return 0; }""")
    assert find_kernel(ast, None, "k.c").decl.name == "f"


@pytest.mark.parametrize("helper,call,match", [
    ("void g(float *a) { a = a + 1; a[0] = 0; }", "g(A);", "assigns its pointer parameter 'a'"),
    ("void g(float *a) { a[0] = 0; }", "g(A + 1);", "argument 'A + 1' for 'a' must be"),
    ("float g(float *a) { a[0] += 1; return a[0]; }", "A[1] = g(A) + 1;",
     "needs its call as a statement of its own"),
    ("float g(const float *a) { return a[0]; }", "A[1] = A[0] > 0 && g(A) > 0;",
     "needs its call as a statement of its own"),
    ("void g(float *a) { a[0] = 0; }", "g(A, A);", "takes 1 argument(s), called with 2"),
    ("void g(float *a) { a[0] = 0; }", "A[0] = g(A);", "returns no value at its end"),
    ("void g(float *a) { g(a); }", "g(A);", "calls itself"),
])
def test_refusals(helper, call, match):
    with pytest.raises(UnsupportedProgramError, match=re.escape(match)):
        parse_source(f"{helper}\nvoid f(int n, float A[n]) {{ {call} }}", "r.c", function="f")

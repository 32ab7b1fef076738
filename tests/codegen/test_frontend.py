"""Front end: C kernels -> polyhedral model (bbmm.codegen.frontend, bbmm.codegen.scop)."""
from __future__ import annotations

import itertools
import re

import islpy as isl
import pytest

from bbmm.diagnostic import UnsupportedProgramError
from bbmm.codegen.frontend import parse_file, parse_source
from bbmm.codegen.scop import (
    Affine, ArrayRef, BinOp, Call, Cast, LoopNode, Num, Statement, Ternary, Var, array_refs,
    to_c)
from support.paths import KERNELS



def kernel(name: str, **kw):
    return parse_file(KERNELS / f"{name}.c", **kw)


def count(scop, s, **params) -> int:
    """Number of integer points of a parametric set at fixed parameter values."""
    return s.intersect_params(scop.params_set(params)).count_val().to_python()


def same(a, b) -> bool:
    """Semantic equality of an isl object with a hand-written isl string."""
    return a.is_equal(type(a)(b))


def accesses(st, kind):
    return sorted(a.text for a in st.accesses if a.kind == kind)


# {{{ floyd


def test_floyd_model():
    s = kernel("floyd")                      # init_floyd and main are skipped
    assert s.function == "floyd" and s.int_params == ("n",) and s.float_params == ()
    assert [(a.name, a.ctype, a.dims) for a in s.arrays] == [("path", "float", ("n", "n"))]
    (st,) = s.statements
    assert st.name == "S0" and st.iterators == ("k", "i", "j") and st.op == "="
    assert same(st.domain, "[n] -> { S0[k, i, j] : 0 <= k < n and 0 <= i < n and 0 <= j < n }")
    assert same(st.schedule, "[n] -> { S0[k, i, j] -> [0, k, 0, i, 0, j, 0] : "
                             "0 <= k, i, j < n }")
    dom = "0 <= k < n and 0 <= i < n and 0 <= j < n"
    assert s.writes().is_equal(isl.UnionMap(f"[n] -> {{ S0[k, i, j] -> path[i, j] : {dom} }}"))
    assert s.reads().is_equal(isl.UnionMap(
        f"[n] -> {{ S0[k, i, j] -> path[i, j] : {dom}; S0[k, i, j] -> path[i, k] : {dom}; "
        f"S0[k, i, j] -> path[k, j] : {dom} }}"))
    assert same(s.context, "[n] -> { : n >= 1 }")
    assert st.domain.get_ctx() == isl.DEFAULT_CONTEXT
    assert count(s, st.domain, n=5) == 125


def test_floyd_loops_pragma_and_tree():
    s = kernel("floyd")
    k, i, j = s.loops()
    assert [lp.iterator for lp in (k, i, j)] == ["k", "i", "j"]
    assert [lp.parallel_pragma for lp in (k, i, j)] == [False, True, False]
    assert (k.lower, k.upper, k.depth) == ("0", "n - 1", 0) and j.depth == 2
    assert s.statements[0].loops == (0, 1, 2)
    (root,) = s.tree
    assert isinstance(root, LoopNode) and root.loop == k
    assert root.children[0].children[0].children == (s.statements[0],)
    assert s.loop_node(1).loop is i


def test_floyd_coords_through_macro():
    """MIN(...) is expanded by cpp; coordinates still point at the user's columns."""
    s = kernel("floyd")
    st = s.statements[0]
    first = {}
    for a in st.accesses:
        first.setdefault(a.text, (a.coord.line, a.coord.column))
    # line 18: "        path[i][j] = MIN(path[i][j], path[i][k] + path[k][j]);"
    assert first == {"path[i][j]": (18, 26), "path[i][k]": (18, 38), "path[k][j]": (18, 51)}
    assert st.write.coord.line == 18 and st.write.coord.column == 9
    assert str(s.loops()[1].coord).endswith("floyd.c:16:5")


def test_floyd_plain_equals_floyd():
    a, b = kernel("floyd"), kernel("floyd_plain")
    assert a.domain().is_equal(b.domain()) and a.reads().is_equal(b.reads())
    assert a.writes().is_equal(b.writes()) and a.schedule().is_equal(b.schedule())
    assert not any(lp.parallel_pragma for lp in b.loops())

# }}}

# {{{ stencils


def test_jacobi2d_two_statements():
    s = kernel("jacobi2d")
    assert s.int_params == ("tsteps", "n") and len(s.statements) == 2
    s0, s1 = s.statements
    dom = "0 <= t < tsteps and 1 <= i <= n - 2 and 1 <= j <= n - 2"
    assert same(s0.domain, f"[tsteps, n] -> {{ S0[t, i, j] : {dom} }}")
    assert same(s1.domain, f"[tsteps, n] -> {{ S1[t, i, j] : {dom} }}")
    assert s.schedule().is_equal(isl.UnionMap(
        f"[tsteps, n] -> {{ S0[t, i, j] -> [0, t, 0, i, 0, j, 0] : {dom}; "
        f"S1[t, i, j] -> [0, t, 1, i, 0, j, 0] : {dom} }}"))
    assert s.reads().is_equal(isl.UnionMap(
        "[tsteps, n] -> { " + "; ".join(
            f"S0[t, i, j] -> A[{a}, {b}] : {dom}" for a, b in
            (("i", "j"), ("i", "j - 1"), ("i", "j + 1"), ("i + 1", "j"), ("i - 1", "j")))
        + f"; S1[t, i, j] -> B[i, j] : {dom} }}"))
    assert accesses(s0, "write") == ["B[i][j]"] and accesses(s1, "write") == ["A[i][j]"]
    t = s.tree[0]
    assert t.loop.iterator == "t" and [c.loop.iterator for c in t.children] == ["i", "i"]
    assert count(s, s0.domain, tsteps=3, n=6) == 3 * 4 * 4


def test_heat3d_3d_arrays_and_define():
    s = kernel("heat3d")                     # '#define N_STEPS tsteps' in a bound
    assert [a.ndim for a in s.arrays] == [3, 3]
    t = s.loops()[0]
    assert (t.lower, t.upper) == ("1", "tsteps")
    s0 = s.statements[0]
    assert len(s0.reads) == 10 and s0.write.text == "B[i][j][k]"
    assert same(s0.domain, "[tsteps, n] -> { S0[t, i, j, k] : 1 <= t <= tsteps and "
                           "1 <= i, j, k <= n - 2 }")
    assert count(s, s0.domain, tsteps=2, n=5) == 2 * 27
    reads = {str(a.relation.range().get_space()) for a in s0.reads}
    assert len(reads) == 1
    assert s.arrays[0].shape({"n": 4, "tsteps": 1}) == (4, 4, 4)

# }}}

# {{{ other nests


def test_matmul_compound_assignment_and_alpha():
    s = kernel("matmul")
    (st,) = s.statements
    assert st.op == "+=" and s.float_params == (("alpha", "float"),)
    assert [(a.kind, a.text) for a in st.accesses] == [
        ("read", "C[i][j]"), ("read", "A[i][k]"), ("read", "B[k][j]"), ("write", "C[i][j]")]
    assert [a.id for a in st.accesses] == [0, 1, 2, 3] and st.lhs.access == 3
    assert to_c(st.rhs) == "((alpha * A[i][k]) * B[k][j])"
    assert Var("alpha", "param", "float") in _walk(st.rhs)
    assert same(st.domain, "[ni, nj, nk] -> { S0[i, j, k] : 0 <= i < ni and 0 <= j < nj "
                           "and 0 <= k < nk }")
    assert [a.dims for a in s.arrays] == [("ni", "nj"), ("ni", "nk"), ("nk", "nj")]


def test_triangular_brute_force():
    s = kernel("triangular")
    (st,) = s.statements
    assert same(st.domain, "[n] -> { S0[i, j] : 0 <= i and i < j < n }")
    assert s.loops()[1].lower == "i + 1"
    for n in range(0, 8):
        want = sum(1 for i in range(n) for j in range(i + 1, n))
        assert count(s, st.domain, n=n) == want


def test_imperfect_nest_tree_and_schedule():
    s = kernel("imperfect")
    (root,) = s.tree
    kinds = [type(c).__name__ for c in root.children]
    assert kinds == ["Statement", "LoopNode", "Statement"]
    s0, s1, s2 = s.statements
    assert s.schedule().is_equal(isl.UnionMap(
        "[n] -> { S0[i] -> [0, i, 0, 0, 0] : 0 <= i < n; "
        "S1[i, j] -> [0, i, 1, j, 0] : 0 <= i, j < n; S2[i] -> [0, i, 2, 0, 0] : 0 <= i < n }"))
    assert s0.rhs == Num("0.0", "double") and s1.op == "+="
    assert isinstance(s2.rhs, BinOp) and [c.func for c in _walk(s2.rhs)
                                          if isinstance(c, Call)] == ["sqrt", "fabs"]
    assert [r.array for r in array_refs(s2.rhs)] == ["s", "x"]


def test_vec1d_affine_extent():
    s = kernel("vec1d")
    x, y = s.arrays
    assert y.dims == ("n + 1",) and y.extents == (Affine.of({"n": 1}, 1),)
    assert y.sizes[0].is_equal(isl.PwAff("[n] -> { [(n + 1)] }"))
    assert y.shape({"n": 5}) == (6,) and x.shape({"n": 5}) == (5,)
    (st,) = s.statements
    assert same(st.write.relation, "[n] -> { S0[i] -> y[i + 1] : 0 <= i < n }")
    assert st.lhs == ArrayRef("y", (Affine.of({"i": 1}, 1),), st.write.id)
    assert same(s.context, "[n] -> { : n >= 1 }")


def test_minmax_bounds_brute_force():
    s = kernel("minmax")
    s0, s1 = s.statements
    j0, j1 = s.loops()[1], s.loops()[3]
    assert (j0.lower, j0.upper) == ("max(0, i - w)", "min(n - 1, i + w)")
    assert j1.upper == "min(i - 1, n - 3)"          # the ternary, then 'j < ...'
    assert same(s0.domain, "[n, w] -> { S0[i, j] : 0 <= i < n and j >= 0 and j >= i - w and "
                           "j <= n - 1 and j <= i + w }")
    for n, w in itertools.product(range(0, 7), range(0, 3)):
        want0 = sum(1 for i in range(n) for j in range(max(0, i - w), min(n - 1, i + w) + 1))
        want1 = sum(1 for i in range(n) for j in range(0, i if i < n - 2 else n - 2))
        assert count(s, s0.domain, n=n, w=w) == want0
        assert count(s, s1.domain, n=n, w=w) == want1


def test_float_params_int_array_casts():
    s = kernel("alpha_int")
    assert s.float_params == (("alpha", "float"), ("beta", "double"))
    assert s.array("counts").ctype == "int" and s.array("out").ctype == "float"
    assert s.args == ("n", "m", "alpha", "beta", "counts", "out")
    s0, s1 = s.statements
    nodes = list(_walk(s1.rhs))
    assert any(isinstance(c, Cast) and c.ctype == "float" for c in nodes)
    assert any(isinstance(c, Ternary) for c in nodes)
    assert Var("beta", "param", "double") in nodes
    assert [c.func for c in nodes if isinstance(c, Call)] == ["exp"]
    assert Var("i", "iterator", "int") in list(_walk(s0.rhs))
    macro = to_c(s1.rhs, lambda r: f"{r.array}_{r.access}({', '.join(map(str, r.index))})")
    assert macro == ("(((alpha * ((float)counts_2(i, j))) + ((beta > 0.5) ? beta : 0.0)) + "
                     "exp(out_3(i, j)))")


def test_if_else_guards():
    s = kernel("guarded")
    s0, s1, s2 = s.statements
    assert s0.guards == () and len(s1.guards) == 1 and s2.guards[0].startswith("!(")
    assert same(s1.domain, "[n] -> { S1[i, j] : 0 <= i < n and 0 <= j < n and i != j "
                           "and j < n - 1 }")
    assert same(s2.domain, "[n] -> { S2[i, j] : 0 <= i < n and 0 <= j < n and "
                           "(i = j or j >= n - 1) }")
    for n in range(6):
        assert count(s, s1.domain, n=n) + count(s, s2.domain, n=n) == n * n

# }}}

# {{{ parse_source options


def test_scop_region_pragmas_and_bbmm_pragma():
    src = """
    void f(int n, float A[n], float B[n]) {
      int i;
      for (i = 0; i < n; i++) B[i] = 0;
    #pragma scop
    #pragma bbmm parallel
      for (i = 1; i < n; i++)
        A[i] = A[i - 1] + B[i];
    #pragma endscop
    }"""
    s = parse_source(src, "region.c")
    (st,) = s.statements
    assert st.text == "A[i] = A[i - 1] + B[i];" and s.loops()[0].parallel_pragma


def test_defines_function_choice_and_increments():
    src = """#include <math.h>
    void g(int n, float A[N]) { for (int i = 0; i < N; i++) A[i] = 1.0f; }
    void h(int n, float A[n]) { for (int i = 0; i < n; i++) A[i]++; }"""
    with pytest.raises(UnsupportedProgramError, match="several kernel candidates: g, h"):
        parse_source(src, "two.c", defines={"N": 16})
    g = parse_source(src, "two.c", function="g", defines={"N": 16})
    assert g.arrays[0].dims == ("16",) and g.int_params == ("n",)
    h = parse_source(src, "two.c", function="h")
    assert h.statements[0].op == "+=" and h.statements[0].rhs == Num("1", "int")
    with pytest.raises(UnsupportedProgramError, match="no function named 'k'"):
        parse_source(src, "two.c", function="k")


def test_loop_forms_and_min_conjunction():
    src = """void f(int n, int m, double A[n]) {
      for (int i = 0; i < n && i <= m; i = i + 1) A[i] = M_PI * i; }"""
    s = parse_source(src, "forms.c")
    assert s.loops()[0].upper == "min(n - 1, m)"
    assert same(s.statements[0].domain, "[n, m] -> { S0[i] : 0 <= i < n and i <= m }")
    assert Num("M_PI", "double") in list(_walk(s.statements[0].rhs))


def test_loops_counting_down_are_loops_of_minus_i():
    """``for (i = U; i >= L && i > M; i--)`` is the loop of ``i_neg = -i`` from ``-U`` to
    ``min(-L, -M - 1)``; subscripts and values read ``-i_neg``, and the schedule keeps the
    C order (i decreasing is i_neg increasing)."""
    src = """void f(int n, int m, float A[n], float B[n][n], float i_neg[n]) {
      for (int i = n - 1; i >= 1 && i > m; i--)
        for (int j = i; j >= 0; j -= 1)
          B[i][j] = A[n - 1 - i] + j + i_neg[i]; }"""
    s = parse_source(src, "down.c")
    outer, inner = s.loops()
    # i_neg is an array of the function: the model's name avoids it
    assert (outer.iterator, inner.iterator) == ("i_neg_", "j_neg")
    assert outer.lower == "-n + 1" and outer.upper == "min(-1, -m - 1)"
    assert same(s.statements[0].domain,
                "[n, m] -> { S0[a, b] : 1 <= -a <= n - 1 and -a > m and 0 <= -b <= -a }")
    w = next(a for a in s.statements[0].accesses if a.kind == "write")
    assert same(w.relation, "[n, m] -> { S0[a, b] -> B[-a, -b] : 1 <= -a <= n - 1 and "
                            "-a > m and 0 <= -b <= -a }")
    text = to_c(s.statements[0].rhs)
    assert "-i_neg_" in text and "-j_neg" in text
    # a first value that is a piecewise bound minus a constant (random programs make these)
    s = parse_source("void f(int n, float A[n]) { for (int i = 0; i < n; i++) "
                     "for (int j = MIN(n, i + 2) - 1; j >= 0; j--) A[j] += 1; }", "m.c")
    assert s.loops()[1].lower == "max(-n + 1, -i - 1)" and s.loops()[1].upper == "0"
    with pytest.raises(UnsupportedProgramError, match="reuses the iterator of an enclosing"):
        parse_source("void f(int n, float A[n]) { for (int i = n; i > 0; i--) "
                     "for (int i = 0; i < n; i++) A[i] = 0; }", "re.c")


def test_comments_keep_columns():
    src = "void f(int n, float A[n]) { /* c */ for (int i = 0; i < n; i++) A[i * i] = 0; }"
    with pytest.raises(UnsupportedProgramError) as e:
        parse_source(src, "c.c")
    assert str(e.value).startswith("c.c:1:67: non-affine subscript")

# }}}

# {{{ refusals


INVALID = sorted(KERNELS.glob("invalid_*.c"))


@pytest.mark.parametrize("path", INVALID, ids=[p.stem for p in INVALID])
def test_invalid_kernel_refused(path):
    head = path.read_text().splitlines()
    expect = re.match(r"// expect: (.*)", head[0]).group(1)
    at = re.match(r"// at: (\d+:\d+)", head[1]).group(1)
    with pytest.raises(UnsupportedProgramError) as e:
        parse_file(path)
    assert expect in str(e.value)
    assert str(e.value).startswith(f"{path}:{at}: "), str(e.value)


def test_invalid_kernel_coverage():
    assert len(INVALID) >= 20


_LOOP = "for (int i = 0; i < n; i++)"
INLINE = [
    (f"{_LOOP} {{ static float x = 1; A[i] = x; }}", "static local variable 'x' not supported"),
    (f"{_LOOP} {{ float *p; A[i] = 0; }}", "local pointer 'p' not supported"),
    (f"{_LOOP} {{ char c = 1; A[i] = c; }}", "local variable 'c' has an unsupported type"),
    (f"{_LOOP} {{ float n = 1; A[i] = n; }}", "local variable 'n' shadows a parameter"),
    (f"{_LOOP} {{ float x = {{1}}; A[i] = x; }}", "brace initialiser of scalar 'x'"),
    (f"{_LOOP} {{ float x = A[i]; for (int j = 0; j < n; j++) x = x + A[j]; A[x] = 0; }}",
     "'x' is a scalar temporary: subscripts"),
    (f"{_LOOP} {{ float x; x += 1; A[i] = x; }}", "temporary 'x' is read before it is assigned"),
    (f"{_LOOP} {{ float x = A[i]; }} A[0] = x;", "unknown identifier 'x'"),
    (f"{_LOOP} if (y > 0) A[i] = 1;", "unknown identifier 'y'"),
    (f"{_LOOP} for (int i = 0; i < n; i++) A[i] = 0;", "reuses the iterator of an enclosing"),
    ("for (int n = 0; n < 3; n++) A[n] = 0;", "loop iterator 'n' is a parameter"),
    (f"{_LOOP} A[i] = A[i] + sizeof(float);", "operator 'sizeof' not supported"),
    (f"{_LOOP} A[i] %= 2;", "assignment operator '%=' not supported"),
    (f"{_LOOP} A[i] = (A[i] = 2);", "assignment inside an expression"),
    (f"{_LOOP} A[i] = 'c';", "char literal 'c' not supported"),
    ("for (;;) A[0] = 0;", "loop initialisation must be"),
    ("for (int i = 0; ; i++) A[0] = 0;", "loop over 'i' has no condition"),
    (f"{_LOOP} A[i] = A;", "array 'A' used without subscripts"),
    (f"{_LOOP} A[i] = n[i];", "subscripted name 'n' is a scalar"),
    (f"{_LOOP} A[i] = (float *) A;", "pointer cast not supported"),
    (f"{_LOOP} A[i & 1] = 0;", "non-affine subscript 'i & 1' in 'A[i & 1]' (operator '&')"),
    (f"{_LOOP} A[i / n] = 0;", "non-affine subscript 'i / n' in 'A[i / n]' ('/' by a variable)"),
    (f"{_LOOP} A[i << n] = 0;", "('<<' by a variable)"),
    (f"{_LOOP} A[i] = A[i] + &A[0];", "pointer address-of not supported"),
    (f"{_LOOP} switch (i) {{ case 0: A[i] = 1; default: A[i] = 0; }}",   # falls through
     "switch statement not supported"),
    (f"{_LOOP} sqrt(A[i]);", "call to 'sqrt' as a statement has no effect"),
    (f"{_LOOP} A[i] = A[2.5];", "'2.5' is not an integer"),
]


@pytest.mark.parametrize("body,expect", INLINE, ids=range(len(INLINE)))
def test_inline_refusals(body, expect):
    src = f"void f(int n, float A[n]) {{ {body} }}"
    with pytest.raises(UnsupportedProgramError) as e:
        parse_source(src, "e.c")
    assert str(e.value).startswith("e.c:1:") and expect in str(e.value), str(e.value)


@pytest.mark.parametrize("sig,expect", [
    ("int n, long double A[n]", "must have element type float, double, an integer type "
                                "(char to long long, <stdint.h>'s) or _Bool"),
    ("int n, char c, float A[n]", "parameter 'c' has unsupported type 'char'"),
])
def test_signature_refusals(sig, expect):
    with pytest.raises(UnsupportedProgramError, match=re.escape(expect)):
        parse_source(f"void f({sig}) {{ for (int i = 0; i < n; i++) A[i] = 0; }}", "s.c")


def test_region_and_function_refusals():
    with pytest.raises(UnsupportedProgramError, match="without '#pragma endscop'"):
        parse_source(f"void f(int n, float A[n]) {{\n#pragma scop\n {_LOOP} A[0] = 0; }}", "r.c")
    with pytest.raises(UnsupportedProgramError, match="no function with a loop nest"):
        parse_source("void f(int n, float A[n]) { A[0] = 0; }", "r.c")
    with pytest.raises(UnsupportedProgramError, match="r.c:1:10: preprocessor: nothere.h"):
        parse_source('#include "nothere.h"\nvoid f(int n) { for (;;) ; }', "r.c")

# }}}


def _walk(e):
    yield e
    for v in vars(e).values():
        items = v if isinstance(v, tuple) else (v,)
        for x in items:
            if hasattr(x, "__dataclass_fields__") and not isinstance(x, (Affine, Statement)):
                yield from _walk(x)


# {{{ element types: C's integer types, <stdint.h>'s, _Bool, typedefs of them


@pytest.mark.parametrize("words,ctype", [
    ("char", "char"), ("signed char", "char"), ("unsigned char", "unsigned char"),
    ("short", "short"), ("short int", "short"), ("unsigned short int", "unsigned short"),
    ("int", "int"), ("signed", "int"), ("unsigned", "unsigned int"), ("long", "long"),
    ("long int", "long"), ("long long", "long"), ("unsigned long long int", "unsigned long"),
    ("int8_t", "char"), ("uint8_t", "unsigned char"), ("int16_t", "short"),
    ("uint16_t", "unsigned short"), ("int32_t", "int"), ("uint32_t", "unsigned int"),
    ("int64_t", "long"), ("uint64_t", "unsigned long"), ("size_t", "unsigned long"),
    ("_Bool", "_Bool"), ("bool", "_Bool"), ("float", "float"), ("double", "double"),
    ("long double", None), ("signed unsigned int", None), ("short long", None),
    ("char int", None), ("long long long", None), ("struct", None),
])
def test_elem_ctype(words, ctype):
    from bbmm.codegen.csource import elem_ctype
    assert elem_ctype(words.split()) == ctype


def test_integer_and_bool_element_types_and_typedefs():
    src = ("#include <stdint.h>\n#include <stdbool.h>\ntypedef char base;\n"
           "typedef base letter;\ntypedef uint16_t pixel;\ntypedef float real;\n"
           "void f(int n, letter s[n], pixel p[n], bool b[n], int64_t w[n], real r[n],\n"
           "       unsigned long long u[n]) {\n"
           "  for (int i = 0; i < n; i++) {\n"
           "    p[i] = s[i] + (base)3; b[i] = (bool) p[i]; w[i] = (int64_t) p[i] * u[i];\n"
           "    r[i] = (real) w[i];\n  }\n}\n")
    s = parse_source(src, "types.c")
    assert {a.name: a.ctype for a in s.arrays} == {
        "s": "char", "p": "unsigned short", "b": "_Bool", "w": "long", "r": "float",
        "u": "unsigned long"}
    # casts to a typedef of char are to char; a cast to _Bool is a test against 0
    assert s.statements[0].text == "p[i] = s[i] + ((char) 3);"
    from bbmm.codegen.scop import to_c
    assert to_c(s.statements[1].rhs) == "(p[i] != 0)"


def test_pointers_to_integer_and_bool_elements_are_arrays():
    s = parse_source("void f(int n, const unsigned char *x, _Bool *y) {\n"
                     "  for (int i = 0; i < n; i++) y[i] = x[i] > 3;\n}\n", "p.c")
    assert [(a.name, a.ctype, a.dims) for a in s.arrays] == [
        ("x", "unsigned char", ("n",)), ("y", "_Bool", ("n",))]


def test_carried_temporary_of_integer_type_is_an_array_of_it():
    s = parse_source("void f(int n, long A[n]) { for (int i = 0; i < n; i++) { "
                     "long x = 0; for (int j = 0; j < n; j++) x += A[j]; A[i] = x; } }", "l.c")
    assert {a.ctype for a in s.arrays if a.local} == {"long"}

# }}}

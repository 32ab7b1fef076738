"""Quasi-affine expressions: floor divisions in :class:`bbmm.codegen.scop.Affine` (its C, isl
and Python texts agree), loops with steps other than 1 and C's ``/`` and ``%`` by positive
constants, each checked against the C semantics simulated in Python (brute force)."""
from __future__ import annotations

import itertools
import json

import islpy as isl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.needs import needs_cl  # skipped only without an OpenCL platform

from bbmm.diagnostic import UnsupportedProgramError
from bbmm.codegen.frontend import parse_source
from bbmm.codegen.scop import Affine, AffMin, bound_floordiv, to_c
from support.paths import KERNELS

# {{{ Affine with floor divisions


def _c_div(a: int, d: int) -> int:
    """C's ``a / d`` (rounds toward zero)."""
    return a // d if a >= 0 else -(-a // d)


@st.composite
def affines(draw, depth: int = 2) -> Affine:
    out = Affine.of({n: draw(st.integers(-3, 3)) for n in ("i", "n")},
                    draw(st.integers(-5, 5)))
    if depth:
        for _ in range(draw(st.integers(0, 2))):
            inner = draw(affines(depth - 1))
            out = out + inner.floordiv(draw(st.integers(1, 4))).scale(draw(st.integers(-2, 2)))
    return out


@settings(max_examples=150, deadline=None)
@given(affines(), st.integers(-9, 9), st.integers(0, 9))
def test_affine_texts_agree(a, i, n):
    """``evaluate``, the isl text and the Python text give the same value everywhere."""
    env = {"i": i, "n": n}
    want = a.evaluate(env)
    assert eval(a.py(), {}, dict(env)) == want
    pw = isl.PwAff(f"[i, n] -> {{ [({a.isl()})] }}")
    at = isl.Set(f"[i, n] -> {{ : i = {i} and n = {n} }}")
    (val,) = [aff.get_constant_val().to_python()
              for _, aff in pw.intersect_params(at).gist_params(at).get_pieces()]
    assert val == want
    # the kernels' macro is floor division too
    c = a.text(lambda num, d: f"_floord({num}, {d})")
    assert eval(c, {"_floord": lambda x, d: -((-x + d - 1) // d) if x < 0 else x // d},
                dict(env)) == want


@given(affines(), st.integers(1, 5), st.integers(-9, 9), st.integers(0, 9))
def test_floordiv(a, d, i, n):
    assert a.floordiv(d).evaluate({"i": i, "n": n}) == a.evaluate({"i": i, "n": n}) // d


def test_floordiv_simplifies_exact_quotients():
    i = Affine.var("i")
    assert (i.scale(4) + 6).floordiv(2) == i.scale(2) + 3
    assert Affine((), -7).floordiv(2) == Affine((), -4)
    assert str(i.floordiv(2)) == "bbmm_floord(i, 2)"
    assert i.floordiv(2).isl() == "floor((i)/2)" and i.floordiv(2).py() == "((i) // 2)"
    assert i.floordiv(2).names == {"i"} and i.floordiv(2).coeffs == {}
    b = bound_floordiv(AffMin((i, Affine.var("n"))), 3)
    assert b == AffMin((i.floordiv(3), Affine.var("n").floordiv(3)))

# }}}

# {{{ loops with steps: the model visits what C visits, in C's order


def _visits(header: str, n: int, outer: int | None = None) -> list[int]:
    """The values the C loop ``header`` gives its iterator ``i`` (simulated)."""
    init, cond, step = header
    out = []
    env = {"n": n, "k": outer}
    i = eval(init, {}, env)
    while eval(cond, {}, {**env, "i": i}):
        out.append(i)
        i += step
    return out


HEADERS = [  # (C header, its Python simulation: first value, condition, step)
    ("int i = 0; i < n; i += 2", ("0", "i < n", 2)),
    ("int i = 1; i <= n; i += 3", ("1", "i <= n", 3)),
    ("int i = n - 1; i >= 0; i -= 2", ("n - 1", "i >= 0", -2)),
    ("int i = n; i > 1; i = i - 3", ("n", "i > 1", -3)),
    ("int i = 2 - n; i < n && i <= 5; i = 4 + i", ("2 - n", "i < n and i <= 5", 4)),
    ("int i = k % 3; i < n; i += 5", ("k % 3", "i < n", 5)),
    ("int i = k / 2 + 1; i < k + n; i += 2", ("k // 2 + 1", "i < k + n", 2)),
]


@pytest.mark.parametrize("header,sim", HEADERS, ids=[h[0] for h in HEADERS])
def test_strided_loop_visits_what_c_visits(header, sim):
    src = f"""void f(int n, float A[100][100]) {{
      for (int k = 0; k < 4; k++)
        for ({header})
          A[k][i + 50] = A[k][i + 50] + 1; }}"""
    s = parse_source(src, "step.c")
    (stmt,) = s.statements
    w = stmt.write
    for n in range(9):
        at = s.params_set({"n": n})
        for k in range(4):
            want = [k_i - 50 for k_i in _order(w, at, k)]
            assert want == _visits(sim, n, k), (n, k)


def _order(w, at, k):
    """The second subscript of the write, instance by instance in schedule order."""
    pts = [(vals[:2], vals[3]) for vals in _points(w.relation.intersect_params(at).wrap())
           if vals[2] == k]
    return [x for _, x in sorted(pts)]        # the iterators' order is the schedule's


def _points(s: isl.Set) -> list[tuple[int, ...]]:
    """Every point of a bounded set, as a tuple of ints (brute force)."""
    out: list[tuple[int, ...]] = []
    d = s.dim(isl.dim_type.set)
    s.foreach_point(lambda p: out.append(tuple(
        p.get_coordinate_val(isl.dim_type.set, j).to_python() for j in range(d))))
    return out


def test_strided_loop_model_names_and_bounds():
    s = parse_source("void f(int n, float A[n]) { for (int i = 1; i < n; i += 3) "
                     "A[i] = i; }", "s.c")
    (lp,) = s.loops()
    assert lp.iterator == "i_s" and lp.lower == "0"
    assert lp.upper == "bbmm_floord(n - 2, 3)"
    assert to_c(s.statements[0].rhs) == "((3 * i_s) + 1)"   # the value of the C iterator i
    assert s.statements[0].write.index == (Affine.of({"i_s": 3}, 1),)

# }}}

# {{{ C's / and % by constants


def test_division_and_remainder_subscripts_match_c():
    src = """void f(int n, float A[n], float B[n][3]) {
      for (int i = 0; i < n; i++)
        B[(i + 3) / 4][i % 3] = A[(2 * i + 1) / 3] + A[(i >> 1) << 1] + A[-7 / 2 + 3]; }"""
    s = parse_source(src, "d.c")
    (stmt,) = s.statements
    n = 11
    at = s.params_set({"n": n})
    for acc, want in [(stmt.write, lambda i: ((i + 3) // 4, i % 3)),
                      (stmt.reads[0], lambda i: ((2 * i + 1) // 3,)),
                      (stmt.reads[1], lambda i: (i // 2 * 2,)),
                      (stmt.reads[2], lambda i: (0,))]:            # C: -7 / 2 is -3
        got = set(_points(acc.relation.intersect_params(at).wrap()))
        assert got == {(i, *want(i)) for i in range(n)}


@pytest.mark.parametrize("cond,sim", [
    ("(i - 5) % 3 == 0", lambda i: (i - 5) - 3 * _c_div(i - 5, 3) == 0),
    ("(i - 5) % 3 != 0", lambda i: (i - 5) - 3 * _c_div(i - 5, 3) != 0),
    ("i % 4 == 1 || i / 3 == 2", lambda i: i % 4 == 1 or i // 3 == 2),
    ("!(i % 2)", lambda i: i % 2 == 0),
    ("(i - 7) % 3 && i", lambda i: (i - 7) % 3 != 0 and i != 0),
    ("i * i", None),
])
def test_conditions_with_remainders_match_c(cond, sim):
    src = f"""void f(int n, float A[n]) {{
      for (int i = 0; i < n; i++)
        if ({cond})
          A[i] = 0; }}"""
    if sim is None:       # not affine: evaluated at run time, every i an instance
        (st,) = parse_source(src, "c.c").statements
        assert st.text == "A[i] = (if3) ? (0) : (A[i]);"
        assert {i for (i,) in _points(st.domain.intersect_params(
            parse_source(src, "c.c").params_set({"n": 20})))} == set(range(20))
        return
    s = parse_source(src, "c.c")
    dom = s.statements[0].domain.intersect_params(s.params_set({"n": 20}))
    got = {i for (i,) in _points(dom)}
    assert got == {i for i in range(20) if sim(i)}


def test_remainder_of_a_negative_value_is_refused_unless_tested_against_zero():
    neg = "void f(int n, float A[n]) { for (int i = 0; i < n; i++) A[(i - 1) / 2 + 1] = 0; }"
    with pytest.raises(UnsupportedProgramError,
                       match=r"'\(i - 1\) / 2': 'i - 1' can be negative here"):
        parse_source(neg, "neg.c")
    # under a guard that makes it non-negative it is fine
    parse_source("void f(int n, float A[n]) { for (int i = 0; i < n; i++) if (i >= 1) "
                 "A[(i - 1) / 2] = 0; }", "ok.c")
    # array sizes may divide the parameters
    s = parse_source("void f(int n, float A[n / 2 + 1]) { for (int i = 0; i < n; i++) "
                     "A[i / 2] = 0; }", "size.c")
    assert s.arrays[0].shape({"n": 7}) == (4,)


def test_kernel_defines_floord_only_when_used(tmp_path):
    from bbmm.codegen.compile import compile_program
    srcs = {"w": "void f(int n, float A[n]) { for (int i = 0; i < n; i += 2) A[i] = 1; }",
            "p": "void f(int n, float A[n]) { for (int i = 0; i < n; i++) A[i] = 1; }"}
    for k, text in srcs.items():
        (tmp_path / f"{k}.c").write_text(text)
    with_div = compile_program(tmp_path / "w.c").kernel_source
    plain = compile_program(tmp_path / "p.c").kernel_source
    assert "#define bbmm_floord" in with_div and "i_s > bbmm_floord(n - 1, 2)" in with_div
    assert "bbmm_floord" not in plain

# }}}

# {{{ boxes past isl's quota


def test_box_past_the_quota_is_a_larger_inexact_box(monkeypatch):
    """A set with floor divisions whose exact box isl cannot find within the quota gets the
    box of its rational projection: never smaller, marked not exact."""
    from bbmm.codegen import tiling
    S = isl.Set("[lb, ub, n] -> { A[x, y] : exists (e, f: x = 3e + 1 and y = 2f and "
                "lb <= e <= ub and 0 <= y <= x and x < n) }")
    ctx = isl.Set("[lb, ub, n] -> { : 0 <= lb <= ub and n >= 0 }")
    exact = tiling.param_box(S, ctx)
    monkeypatch.setattr(tiling, "BOX_OPERATIONS", 50)
    loose = tiling.param_box(S, ctx)
    assert exact.exact is False and loose.exact is False
    f, g = exact.evaluator(["lb", "ub", "n"]), loose.evaluator(["lb", "ub", "n"])
    wider = 0
    for lb, ub, n in itertools.product(range(4), range(4), range(12)):
        if lb > ub:
            continue
        (elo, ehi), (llo, lhi) = f(lb, ub, n), g(lb, ub, n)
        if all(a <= b for a, b in zip(elo, ehi)):            # not empty
            assert all(a <= b for a, b in zip(llo, elo)) and all(a >= b for a, b in zip(lhi, ehi))
            wider += llo != elo or lhi != ehi
    assert wider                     # the projection drops the strides: some box grew


@needs_cl
def test_programs_run_right_with_boxes_past_the_quota(monkeypatch, tmp_path):
    """Every box of the kernels with steps over-approximated still gives the C result."""
    from collections import OrderedDict

    from bbmm.cli import main
    from bbmm.codegen import compile as compile_module, tiling
    monkeypatch.setattr(tiling, "BOX_OPERATIONS", 20_000)
    # compiled afresh under the quota, not taken from the programs compiled before
    monkeypatch.setattr(compile_module, "_COMPILED", OrderedDict())
    kernels = KERNELS / "quasi"
    for name, params in [("redblack", ["tsteps=3", "n=14"]), ("strides", ["tsteps=2", "n=13"])]:
        out = tmp_path / f"{name}.json"
        argv = ["run", str(kernels / f"{name}.c"), "--check", "--no-progress", "--devices", "2",
                "--tile", "3", "--json", str(out)]
        for p in params:
            argv += ["--param", p]
        assert main(argv) == 0
        assert json.loads(out.read_text())["check"] == "pass"

# }}}


# {{{ polycc (Pluto) output: floord/ceild/max/min macros, bounds kept in lbp/ubp/lbv/ubv

PLUTO = KERNELS / "pluto"


def _cdiv(a: int, d: int) -> int:                 # C's '/' (toward zero)
    q = abs(a) // d
    return q if a >= 0 else -q


def _ceild(n: int, d: int) -> int:               # Pluto's macros, with C's division
    return -_cdiv(-n, d) if n < 0 else _cdiv(n + d - 1, d)


def _floord(n: int, d: int) -> int:
    return -_cdiv(-n + d - 1, d) if n < 0 else _cdiv(n, d)


def _seidel_instances(tsteps: int, n: int) -> list[tuple[int, int, int, int]]:
    """The (t1, t2, t3, t4) that tests/kernels/pluto/seidel1d_tiled.c runs, in order."""
    out = []
    if n >= 3 and tsteps >= 1:
        for t1 in range(0, _floord(tsteps + n - 3, 8) + _floord(tsteps - 1, 8) + 1):
            lbp, ubp = max(0, _ceild(8 * t1 - tsteps - n + 3, 8)), min(_floord(tsteps - 1, 8), t1)
            for t2 in range(lbp, ubp + 1):
                for t3 in range(max(8 * t2, 8 * t1 - 8 * t2 - n + 2, 0),
                                min(tsteps - 1, 8 * t2 + 7, 8 * t1 - 8 * t2 + 6) + 1):
                    lbv, ubv = max(8 * t1 - 8 * t2, t3 + 1), min(8 * t1 - 8 * t2 + 7, t3 + n - 2)
                    out += [(t1, t2, t3, t4) for t4 in range(lbv, ubv + 1)]
    return out


def test_pluto_tiled_loops_model_what_c_runs():
    """floord/ceild are floor and ceiling divisions for every sign (isl's), max/min the
    macros' ternaries, lbp/ubp/lbv/ubv the expressions assigned just before the loops:
    the model's instances are those the C program runs, each once, in its order."""
    from bbmm.codegen.frontend import parse_file
    s = parse_file(PLUTO / "seidel1d_tiled.c")
    (st,) = s.statements
    assert [lp.iterator for lp in s.loops()] == ["t1", "t2", "t3", "t4"]
    assert [lp.parallel_pragma for lp in s.loops()] == [False, True, False, False]
    for tsteps, n in [(1, 3), (3, 5), (9, 4), (10, 21), (17, 12), (0, 5), (4, 2)]:
        at = s.params_set({"tsteps": tsteps, "n": n})
        got = sorted(_points(st.domain.intersect_params(at)))
        want = _seidel_instances(tsteps, n)
        assert got == want, (tsteps, n)          # sorted: the loops' order is lexicographic


def test_bound_variables_need_their_assignment_before_the_loop():
    body = ("int lbp, ubp; {pre} for (int t = lbp; t <= ubp; t++) A[t] = 0;")
    ok = parse_source("void f(int n, float A[n]) { " + body.format(
        pre="lbp = max(0, ceild(n - 9, 4)); ubp = min(n - 1, floord(3 * n, 4));\n"
            "#pragma omp parallel for\n") + " }", "b.c")
    (lp,) = ok.loops()
    assert lp.parallel_pragma and (lp.lower, lp.upper) == (
        "max(0, bbmm_floord(n - 6, 4))", "min(n - 1, bbmm_floord(3*n, 4))")
    assert ok.statements[0].domain.is_equal(isl.Set(
        "[n] -> { S0[t] : 0 <= t < n and n - 9 <= 4t <= 3n }"))
    # another statement between the assignment and the loop, or no assignment: refused
    for pre in ("lbp = 0; ubp = n - 1; A[0] = 1;", "ubp = n - 1;"):
        with pytest.raises(UnsupportedProgramError,
                           match=r"lower loop bound is not affine: 'lbp'"):
            parse_source("void f(int n, float A[n]) { " + body.format(pre=pre) + " }", "b.c")
    # a value that reads what the loop assigns (C computed it once, before the loop)
    with pytest.raises(UnsupportedProgramError):
        parse_source("void f(int n, float A[n]) { int ub, t; ub = t + 3; "
                     "for (t = 0; t <= ub && t < n; t++) A[t] = 0; }", "b.c")

# }}}

"""Max and min reductions into scalars split over a loop's iterations
(codegen/reductions.py): which updates and loops are taken, the rewritten C, the model
(the loop turns parallel, or the split is not kept), and the argument that the split is
exact, checked on random sequences with NaNs, zeros of both signs and ties."""
from __future__ import annotations

import math
import struct
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pycparser import c_generator, c_parser

from bbmm.codegen.deps import parallel_loops
from bbmm.codegen.frontend import parse_source
from bbmm.codegen.reductions import (
    FLAT,
    STRIP,
    flat,
    reduction_loops,
    split_reductions,
    strips,
)


def _func(src: str):
    return c_parser.CParser().parse(src).ext[0]


def _split_text(src: str, which: int = 0, strip: bool = False) -> str:
    """The C text of ``src`` with the reductions of its ``which``-th loop to split split
    (its inner loop strip-mined or not)."""
    f = _func(src)
    cands = reduction_loops(f)
    assert cands, "no loop to split"
    k, names = cands[which]
    assert strips(f, k) or not strip
    return " ".join(c_generator.CGenerator().visit(
        split_reductions(f, {k: (names, strip)})[0]).split())


def _names(src: str) -> list[tuple[str, ...]]:
    """The scalars split, per loop that could split them (each once)."""
    return sorted({names for _, names in reduction_loops(_func(src))})


SWEEP = """void f(int n, int m, float A[n][m], float out[1]) {
  float hi = 0.0f;
  for (int i = 1; i < n; i++)
    for (int j = 0; j < m; j++) {
      float a = A[i][j];
      UPDATE
    }
  out[0] = hi;
}"""


@pytest.mark.parametrize("update", [
    "hi = a > hi ? a : hi;", "hi = hi < a ? a : hi;", "hi = a < hi ? a : hi;",
    "hi = hi > a ? a : hi;", "if (a > hi) hi = a;", "if (hi > a) { hi = a; }",
    "hi = fmaxf(hi, a);", "hi = fminf(hi, a);",
])
def test_strict_forms_are_taken(update):
    assert _names(SWEEP.replace("UPDATE", update)) == [("hi",)]


@pytest.mark.parametrize("update,why", [
    ("hi = hi > a ? hi : a;", "takes a NaN a, and the later of -0 and +0"),
    ("hi = a >= hi ? a : hi;", "the later of -0 and +0"),
    ("hi = fmaxf(a, hi);", "returns its first argument on a tie: the later of -0 and +0"),
    ("hi = a > hi ? a * 0.5 : hi;", "not the e compared"),
    ("hi = a * 0.5 > hi ? a * 0.5 : hi;", "a double e into a float: compared as double"),
    ("hi = a > hi ? a : hi; A[i][j] = hi;", "hi read outside its updates"),
    ("hi += a;", "a sum of floats: reassociating it changes the result"),
    ("if (a > hi) { hi = a; A[i][0] = 1; }", "the if does more than the update"),
])
def test_other_forms_are_not(update, why):
    assert _names(SWEEP.replace("UPDATE", update)) == [], why


def test_integers_take_every_form():
    src = SWEEP.replace("float hi = 0.0f;", "int hi = 0;").replace(
        "float a = A[i][j];", "int a = (int)A[i][j];")
    for update in ("hi = hi > a ? hi : a;", "hi = a >= hi ? a : hi;", "if (a <= hi) hi = a;"):
        assert _names(src.replace("UPDATE", update)) == [("hi",)], update


def test_integer_sums_are_taken_from_zero():
    src = SWEEP.replace("float hi = 0.0f;", "int hi = 0;")
    assert _names(src.replace("UPDATE", "hi += a > 0.5f;")) == [("hi",)]
    assert _names(src.replace("UPDATE", "hi += (int)a;")) == [("hi",)]
    assert _names(src.replace("UPDATE", "hi += a;")) == [], "a float e: its sum rounds"
    # one scalar updated two ways: no single fold
    assert _names(src.replace("UPDATE", "hi += (int)a; hi = (int)a > hi ? (int)a : hi;")) == []
    text = _split_text(src.replace("UPDATE", "hi += a > 0.5f;"))
    assert "hi_part[i - 1] = 0;" in text and "hi += hi_part[i - 1];" in text


def test_loops_taken_are_those_with_fixed_bounds():
    # both loops: the inner one is flat (strip-mined itself), the outer one holds it
    src = SWEEP.replace("UPDATE", "hi = a > hi ? a : hi;")
    assert [k for k, _ in reduction_loops(_func(src))] == [0, 1]
    assert [flat(_func(src), k, ("hi",)) for k in (0, 1)] == [False, True]
    # bounds that move with an enclosing loop: no fixed size for the partials
    tri = """void f(int n, float A[n][n], float out[1]) { float hi = 0.0f;
      for (int k = 0; k < n; k++) for (int i = k; i < n; i++) for (int j = 0; j < n; j++)
        hi = A[i][j] > hi ? A[i][j] : hi;
      out[0] = hi; }"""
    assert [k for k, _ in reduction_loops(_func(tri))] == [0, 2]
    # declared inside a loop: a fresh variable per iteration, nothing carried across it
    inner = """void f(int n, float A[n][n], float out[n]) {
      for (int i = 0; i < n; i++) { float hi = 0.0f;
        for (int k = 0; k < n; k++) for (int j = 0; j < n; j++) hi = A[k][j] > hi ? A[k][j] : hi;
        out[i] = hi; } }"""
    assert [k for k, _ in reduction_loops(_func(inner))] == [1, 2]     # k and j, not i


def test_the_split_reads_as_the_module_says():
    text = _split_text(SWEEP.replace("UPDATE", "if (a > hi) hi = a;"))
    assert "float hi_part[n - 1]; for (int i = 1; i < n; i++) { hi_part[i - 1] = hi;" in text
    assert "if (a > hi_part[i - 1]) hi_part[i - 1] = a;" in text
    assert "for (int i = 1; i < n; i++) { if (hi_part[i - 1] > hi) hi = hi_part[i - 1]; }" \
        in text
    text = _split_text(SWEEP.replace("UPDATE", "hi = hi < a ? a : hi;").replace(
        "i = 1; i < n", "i = 0; i <= n - 1"))
    assert "float hi_part[(n - 1) + 1]; for (int i = 0; i <= (n - 1); i++) " \
        "{ hi_part[i] = hi;" in text
    assert "hi = (hi < hi_part[i]) ? (hi_part[i]) : (hi);" in text


def test_strips_of_the_inner_loop_then_rows_then_the_scalar():
    text = _split_text(SWEEP.replace("UPDATE", "hi = a > hi ? a : hi;"), strip=True)
    assert f"float hi_part[n - 1][((m - 1) + {STRIP}) / {STRIP}]; float hi_row[n - 1];" \
        in text
    assert (f"for (int i = 1; i < n; i++) {{ if (((m - 1) - 0) >= 0) for (int j_strip = 0; "
            f"j_strip <= (((m - 1) - 0) / {STRIP}); j_strip++) {{ hi_part[i - 1][j_strip] = hi; "
            f"for (int j = 0 + ({STRIP} * j_strip); (j <= (m - 1)) && "
            f"(j <= ((0 + ({STRIP} * j_strip)) + {STRIP - 1})); j++)") in text
    assert ("hi_row[i - 1] = hi; if (((m - 1) - 0) >= 0) for (int j_strip = 0; j_strip <= "
            f"(((m - 1) - 0) / {STRIP}); j_strip++) hi_row[i - 1] = (hi_part[i - 1][j_strip] > "
            "hi_row[i - 1]) ? (hi_part[i - 1][j_strip]) : (hi_row[i - 1]);") in text
    assert "hi = (hi_row[i - 1] > hi) ? (hi_row[i - 1]) : (hi);" in text
    # only a body that is one loop with fixed bounds is strip-mined
    f = _func(SWEEP.replace("UPDATE", "hi = a > hi ? a : hi;").replace(
        "j < m", "j < i"))
    assert not strips(f, 0)


def test_a_flat_loop_runs_in_strips_then_blocks():
    src = """void f(int n, float x[n], float out[1]) { float m = 0.0f;
      for (int i = 1; i < n; i++) m = x[i] > m ? x[i] : m;
      out[0] = m; }"""
    s1, s2 = FLAT[:2]
    text = _split_text(src)
    # sizes from the last iteration, n - 2 (the loop starts at a non-negative constant)
    assert f"float m_part[((n - 1) + {s1}) / {s1}];" in text
    assert f"float m_block[((((n - 1) + {s1}) / {s1}) + {s2 - 1}) / {s2}];" in text
    assert (f"for (int i_strip = 0; i_strip <= (((n - 1) - 1) / {s1}); i_strip++) "
            f"{{ m_part[i_strip] = m; for (int i = 1 + ({s1} * i_strip);") in text
    assert (f"for (int i_block = 0; i_block <= (((n - 1) - 1) / {s1 * s2}); i_block++) "
            f"{{ m_block[i_block] = m; for (int i_strip = {s2} * i_block;") in text
    last = f"m_block{len(FLAT) - 1}[i_block{len(FLAT) - 1}]" if len(FLAT) > 2 else \
        "m_block[i_block]"
    assert f"m = ({last} > m) ? ({last}) : (m);" in text
    scop = parse_source(src, "f.c")
    assert "i_strip" in _bands(scop) and "i_block" in _bands(scop)
    assert scop.reductions == (f"f.c:2:7: max of 'm' over loop 'i': a partial per strip of "
                               f"{s1}, folded in blocks of " + " and ".join(map(str, FLAT[1:])),)


def test_no_split_inside_a_parallel_loop():
    """A max per row inside a loop over the rows: the rows already run at once, and the
    split row loop would not join the kernel's band."""
    scop = parse_source("""void f(int n, int m, float M[m][n], float r[m]) {
      for (int k = 0; k < m; k++) { float h = -1.0f;
        for (int i = 0; i < n; i++) h = M[k][i] > h ? M[k][i] : h;
        r[k] = h; } }""", "f.c")
    assert scop.reductions == () and "k" in _bands(scop)


def test_partials_go_before_the_pragma_and_a_body_without_braces_gets_a_block():
    text = _split_text("""void f(int t, int n, float A[n][n], float out[1]) { float hi = 0;
      for (int s = 0; s < t; s++)
      #pragma omp parallel for reduction(max:hi)
        for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) hi = A[i][j] > hi ? A[i][j] : hi;
      out[0] = hi; }""".replace("for (int s = 0; s < t; s++)\n", "for (int s = 0; s < t; s++) {\n"
                                ).replace("out[0] = hi; }", "} out[0] = hi; }"), which=1)
    assert "float hi_part[n]; #pragma omp parallel for reduction(max:hi)\n" not in text
    assert text.index("float hi_part[n];") < text.index("#pragma omp") < text.index(
        "for (int i = 0; i < n; i++) { hi_part[i] = hi;")
    text = _split_text("""void f(int t, int n, float A[n][n], float out[1]) { float hi = 0;
      for (int s = 0; s < t; s++)
        for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) hi = A[i][j] > hi ? A[i][j] : hi;
      out[0] = hi; }""", which=1)
    assert "for (int s = 0; s < t; s++) { float hi_part[n]; for (int i = 0;" in text


CONVERGE = """void f(int n, int tmax, float A[n][n], float B[n][n], float out[1]) {
  for (int t = 0; t < tmax; t++) {
    float diff = 0.0f;
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++) {
        float d = B[i][j] - A[i][j];
        diff = d > diff ? d : diff;
        A[i][j] = B[i][j];
      }
    out[0] = diff;
  }
}"""


def _bands(scop) -> list[str]:
    par = parallel_loops(scop)
    return [lp.iterator for lp in scop.loops() if par[lp.id]]


def test_the_model_keeps_a_split_that_makes_the_loop_parallel():
    scop = parse_source(CONVERGE, "c.c")
    assert scop.reductions == ((f"c.c:4:5: max of 'diff' over loop 'i': a partial per row "
                                f"and strip of {STRIP}"),)
    assert {"diff_part", "diff_row"} <= {a.name for a in scop.arrays}
    assert {"i", "j_strip"} <= set(_bands(scop)) and _bands(scop).count("i") == 2
    # an inner loop that moves with the row: partials per row, not strip-mined
    scop = parse_source(CONVERGE.replace("j < n - 1;", "j < i;"), "c.c")
    assert "diff_part" in {a.name for a in scop.arrays} and "i" in _bands(scop)
    assert "diff_row" not in {a.name for a in scop.arrays}
    # rows that depend on the row above: the strips of a row still run at once
    scop = parse_source(CONVERGE.replace("A[i][j] = B[i][j];",
                                         "A[i][j] = B[i][j] + A[i - 1][j];"), "c.c")
    # (its i loops: the split one serial, the rows' combination parallel, the last serial)
    assert "j_strip" in _bands(scop) and _bands(scop).count("i") == 1
    # and on the point before in the row too: nothing would run at once, nothing is split
    scop = parse_source(CONVERGE.replace("A[i][j] = B[i][j];",
                                         "A[i][j] = A[i][j - 1] + A[i - 1][j];"), "c.c")
    assert "diff_part" not in {a.name for a in scop.arrays}
    assert not {"i", "j"} & set(_bands(scop))


def test_a_reduction_pragma_is_followed_without_a_warning_once_split():
    src = CONVERGE.replace("    for (int i = 1;", "#pragma omp parallel for reduction(max:diff)\n"
                           "    for (int i = 1;")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        scop = parse_source(src, "c.c")
    assert not [w for w in said if "pragma" in str(w.message)], [str(w.message) for w in said]
    assert "i" in _bands(scop)
    # a sum stays in order: the pragma is not followed, and the user is told
    with pytest.warns(Warning, match="not followed"):
        parse_source(src.replace("diff = d > diff ? d : diff;", "diff += d;").replace(
            "max:diff", "+:diff"), "c.c")


# {{{ the argument, on random sequences

def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


_VALUES = st.one_of(st.sampled_from([0.0, -0.0, math.nan, 1.0, -1.0, math.inf, -math.inf]),
                    st.floats(width=32, allow_nan=True)).map(_f32)
def _fmax(s: float, e: float) -> float:
    """OpenCL's and C's fmax(s, e): e if s < e, else s; the number of a NaN and a number."""
    if math.isnan(s) or math.isnan(e):
        return s if math.isnan(e) else e
    return e if s < e else s  # noqa: FURB136 (C's comparison, not max())


_FORMS = {
    "fmax(s, e)": _fmax,
    "e > s ? e : s": lambda s, e: e if e > s else s,  # noqa: FURB136 (C's comparisons, not max())
    "s < e ? e : s": lambda s, e: e if s < e else s,  # noqa: FURB136 (C's comparisons, not max())
    "e < s ? e : s": lambda s, e: e if e < s else s,  # noqa: FURB136 (C's comparisons, not max())
    "s > e ? e : s": lambda s, e: e if s > e else s,  # noqa: FURB136 (C's comparisons, not max())
}


def _bits(x: float) -> bytes:
    return struct.pack("f", x)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(_FORMS)), _VALUES,
       st.lists(st.lists(_VALUES, max_size=6), max_size=6))
def test_row_partials_combined_in_order_are_the_sequential_fold(form, s, rows):
    """The partial of each row is the fold from s; folding the partials in order from s
    gives the sequential fold's bits: what split_reductions relies on (fmax from a NaN s
    included: it takes the first number)."""
    u = _FORMS[form]
    seq = s
    for row in rows:
        for e in row:
            seq = u(seq, e)
    parts = []
    for row in rows:
        p = s
        for e in row:
            p = u(p, e)
        parts.append(p)
    got = s
    for p in parts:
        got = u(got, p)
    assert _bits(got) == _bits(seq) or (math.isnan(got) and math.isnan(seq))


def test_a_non_strict_form_is_not_exact():
    """Why ``s > e ? s : e`` on floats is refused: a NaN, or zeros of both signs, in a
    row where nothing beats the value so far, change the result once split."""
    u = lambda s, e: s if s > e else e  # noqa: FURB136
    s, rows = 0.0, [[-0.0], [-1.0]]
    seq = s
    for row in rows:
        for e in row:
            seq = u(seq, e)
    got = s
    for row in rows:
        p = s
        for e in row:
            p = u(p, e)
        got = u(got, p)
    assert _bits(got) != _bits(seq)

# }}}


def test_the_strip_width_comes_from_the_compile_options_not_the_environment(tmp_path,
                                                                            monkeypatch):
    """``$BBMM_STRIP`` is read once, into :class:`bbmm.codegen.compile.CompileOptions`
    (``CompileOptions.from_env``, where the command line or the API starts), and passed
    down: ``strip=`` overrides it, and neither the compiler nor the front end reads it."""
    from bbmm.codegen.compile import CompileOptions, compile_program
    from bbmm.diagnostic import UsageError
    path = tmp_path / "c.c"
    path.write_text(CONVERGE)

    def how(prog) -> str:
        (note,) = prog.scop.reductions
        return note.split(": ", 1)[1]
    monkeypatch.setenv("BBMM_STRIP", "16")
    assert how(compile_program(path)).endswith(f"a partial per row and strip of {STRIP}")
    assert how(compile_program(path, strip=8)).endswith("a partial per row and strip of 8")
    assert how(compile_program(path, strip=1)).endswith("a partial per row")
    read = CompileOptions.from_env()
    assert how(compile_program(path, options=read)).endswith(
        "a partial per row and strip of 16")
    assert how(compile_program(path, options=read, strip=8)).endswith(
        "a partial per row and strip of 8")
    assert parse_source(CONVERGE, "c.c").reductions[0].endswith(f"strip of {STRIP}")
    with pytest.raises(UsageError, match="strip must be an integer of at least 1, got 0"):
        compile_program(path, strip=0)

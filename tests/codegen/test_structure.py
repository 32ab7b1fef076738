"""Early exits as branches (codegen/structure.py): ``if (c) continue;`` at the top of a
loop body puts the rest of the body in its else; the model is then that of the program
written with the else by hand; exits anywhere else are left for the front end to refuse."""
from __future__ import annotations

from pycparser import c_generator, c_parser

from bbmm.codegen.deps import dependences
from bbmm.codegen.frontend import parse_source
from bbmm.codegen.structure import loop_continues


def _text(src: str) -> str:
    f = c_parser.CParser().parse(src).ext[0]
    return " ".join(c_generator.CGenerator().visit(loop_continues(f)).split())


def test_the_rest_of_the_body_goes_to_the_else():
    text = _text("""void f(int n, float A[n]) { for (int i = 0; i < n; i++) {
        float c = A[i]; if (c > 1) { A[i] = 1; continue; } if (i > 2) continue; A[i] = c; } }""")
    assert ("float c = A[i]; if (c > 1) { A[i] = 1; } else { if (i > 2) { } else "
            "{ A[i] = c; } }") in text


def test_nested_loops_and_bodies_without_braces():
    text = _text("""void f(int n, float A[n][n]) { for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) { if (j > i) continue; A[i][j] = 0; } }""")
    assert "for (int j = 0; j < n; j++) { if (j > i) { } else { A[i][j] = 0; } }" in text


def test_a_function_without_continue_is_itself():
    f = c_parser.CParser().parse("void f(int n, float A[n]) { A[0] = 1; }").ext[0]
    assert loop_continues(f) is f


def test_the_model_is_the_program_with_the_else_written_out():
    s1 = parse_source("""void f(int n, float A[n][n]) { for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) { if (j > i) continue; A[i][j] = A[j][i] + 1; } }""", "a.c")
    s2 = parse_source("""void f(int n, float A[n][n]) { for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) { if (j > i) { } else { A[i][j] = A[j][i] + 1; } } }""",
                      "b.c")
    assert [str(st.domain) for st in s1.statements] == [str(st.domain) for st in s2.statements]
    d1, d2 = dependences(s1), dependences(s2)
    assert all(getattr(d1, k).is_equal(getattr(d2, k)) for k in ("flow", "raw", "war", "waw"))
    assert "j <= i" in str(s1.statements[0].domain).replace("i >= j", "j <= i")


def test_a_kernel_returning_a_value_stores_it():
    from bbmm.codegen.structure import kernel_return
    f = c_parser.CParser().parse("""float f(int n, float A[n]) {
        if (n < 2) return 0; float s = 0; for (int i = 0; i < n; i++) s += A[i]; return s; }
        """).ext[0]
    g, name = kernel_return(f, {"n", "A", "s", "i", "result"}, None)
    text = " ".join(c_generator.CGenerator().visit(g).split())
    assert name == "result2" and "float f(int n, float A[n], float result2[1])" in text
    assert ("if (n < 2) { result2[0] = 0; } else { float s = 0; for (int i = 0; i < n; i++) "
            "s += A[i]; result2[0] = s; }") in text
    v = c_parser.CParser().parse("void v(int n, float A[n]) { A[0] = 1; return; }").ext[0]
    g, name = kernel_return(v, set(), None)
    assert name is None and "return" not in c_generator.CGenerator().visit(g)
    s = parse_source("double d(int n, double *x) { double t = 0; "
                     "for (int i = 0; i < n; i++) t += x[i]; return t; }", "d.c")
    assert s.returns == "result" and s.args[-1] == "result"


def test_a_switch_is_an_if_chain():
    from bbmm.codegen.structure import switches
    f = c_parser.CParser().parse("""void f(int n, int K[n], float A[n]) {
        for (int i = 0; i < n; i++) switch (K[i] & 3) {
          case 0: A[i] = 1; break;
          case 1: case 2: for (int j = 0; j < 2; j++) { if (j) break; A[i] += j; } break;
          default: A[i] = 3; } }""").ext[0]
    text = " ".join(c_generator.CGenerator().visit(switches(f)).split())
    assert ("if ((K[i] & 3) == 0) { A[i] = 1; } else if (((K[i] & 3) == 1) || ((K[i] & 3) == 2))"
            " { for (int j = 0; j < 2; j++) { if (j) break; A[i] += j; } } else { A[i] = 3; }"
            ) in text


def test_switches_that_are_no_chain_stay():
    from bbmm.codegen.structure import switches
    for body in ("case 0: A[i] = 1; case 1: A[i] = 2; break;",     # falls through
                 "case 0: if (i) break; A[i] = 1; break;",          # leaves early
                 "case 0: A[i] = 1; break;"):
        sel = "K[i]++" if body.startswith("case 0: A[i] = 1; break;") else "K[i]"
        f = c_parser.CParser().parse(f"void f(int n, int K[n], float A[n]) {{ "
                                     f"for (int i = 0; i < n; i++) switch ({sel}) {{ {body} }} }}"
                                     ).ext[0]
        assert "switch" in c_generator.CGenerator().visit(switches(f))


def _jumps(src: str) -> str:
    from bbmm.codegen.structure import loop_jumps
    f = c_parser.CParser().parse(src).ext[0]
    return " ".join(c_generator.CGenerator().visit(loop_jumps(f)[0]).split())


def test_break_and_continue_set_flags_that_the_rest_tests():
    text = _jumps("""void f(int n, float A[n], int first[n]) { for (int i = 0; i < n; i++) {
        first[i] = -1; for (int j = 0; j < n; j++) { if (A[j] < 0) continue;
        if (A[j] > i) { first[i] = j; break; } A[j] += 1; } } }""")
    assert ("first[i] = -1; { int break_j = 0; for (int j = 0; j < n; j++) { if (!break_j) "
            "{ int skip_j = 0; if (A[j] < 0) { skip_j = 1; } if (!skip_j) { if (A[j] > i) "
            "{ first[i] = j; break_j = 1; } if (!break_j) { A[j] += 1; } } } } }") in text


def test_jumps_of_inner_loops_and_switches_are_theirs():
    # the inner loop's break leaves it only: the outer loop gets no flag
    text = _jumps("""void f(int n, float A[n]) { for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) { if (A[j] > 1) break; A[j] = i; } }""")
    assert "break_i" not in text and text.count("break_j = 0") == 1
    assert "for (int i = 0; i < n; i++) { int break_j = 0; for" in text
    # a break of a switch is the switch's; a continue inside one leaves the loop alone
    src = """void f(int n, float A[n]) { for (int i = 0; i < n; i++) {
        switch (i) { case 0: if (A[i] > 1) continue; A[i] = 0; break; default: A[i] = 1; } } }"""
    assert "continue;" in _jumps(src) and "skip_i" not in _jumps(src)


def test_flag_names_avoid_the_function_s_names():
    text = _jumps("""void f(int n, float A[n], float break_i[n]) {
        for (int i = 0; i < n; i++) { A[i] = 1; break; }
        for (int i = 0; i < n; i++) { if (A[i] > 0) break; break_i[i] = 2; } }""")
    assert "int break_i2 = 0;" in text and "int break_i3 = 0;" in text
    assert "break_i[i] = 2" in text


def test_a_function_without_jumps_is_itself():
    from bbmm.codegen.structure import loop_jumps
    f = c_parser.CParser().parse("void f(int n, float A[n]) { A[0] = 1; }").ext[0]
    assert loop_jumps(f) == (f, frozenset())


def test_a_return_in_loops_ends_them_and_skips_the_rest():
    from bbmm.codegen.structure import return_flags
    f = c_parser.CParser().parse("""void f(int n, float A[n]) {
        if (n > 2) { for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) {
          if (A[j] > i) return; A[j] = 1; } A[0] = 2; } A[1] = 3; }""").ext[0]
    items = return_flags(list(f.body.block_items), "ret", lambda r: [])
    text = " ".join(c_generator.CGenerator().visit(c_ast_compound(items)).split())
    # the inner loop breaks, the outer one breaks after it, the rest runs while ret is 0
    assert ("for (int j = 0; j < n; j++) { if (A[j] > i) { ret = 1; break; } A[j] = 1; } "
            "if (ret) break; } if (!ret) { A[0] = 2; } } if (!ret) { A[1] = 3; }") in text


def test_a_kernel_returning_from_a_loop_gets_a_flag():
    from bbmm.codegen.structure import kernel_return, loop_jumps
    f = c_parser.CParser().parse("""float f(int n, float A[n]) { float s = 0;
        for (int i = 0; i < n; i++) { s += A[i]; if (s > 1) return s; } return -s; }
        """).ext[0]
    g, name = kernel_return(f, {"n", "A", "s", "i"}, None)
    text = " ".join(c_generator.CGenerator().visit(loop_jumps(g)[0]).split())
    assert name == "result" and "int returned = 0;" in text
    assert "if (s > 1) { result[0] = s; returned = 1; break_i = 1; }" in text
    assert "if (!returned) { result[0] = -s; }" in text


def c_ast_compound(items):
    from pycparser import c_ast
    return c_ast.Compound(items)


def _whiles(src: str) -> str:
    from bbmm.codegen.structure import while_loops
    f = c_parser.CParser().parse(src).ext[0]
    return " ".join(c_generator.CGenerator().visit(while_loops(f)).split())


def test_a_counting_while_is_its_for_loop():
    text = _whiles("""void f(int n, float A[n]) { int i = 1; float s = 0;
        while (i < n) { A[i] = s; i += 2; } int k; k = n - 1; while (k >= 0) { A[k] = 1; k--; } }""")
    assert "int i; float s = 0; for (i = 1; i < n; i += 2) { A[i] = s; }" in text
    assert "for (k = n - 1; k >= 0; k--) { A[k] = 1; }" in text


def test_other_whiles_stay():
    for body in ("int i = 0; while (i < n) { i++; A[i] = 0; }",          # step not last
                 "int i = 0; A[i] = 1; while (i < n) { A[i] = 0; i++; }",  # read between
                 "int i = 0; while (i < n) { if (A[i] > 0) continue; i++; }",  # skips the step
                 "int i = 0; while (i < n) { i = 2 * i; i++; }"):         # assigned elsewhere
        src = f"void f(int n, float A[n]) {{ {body} }}"
        assert "while" in _whiles(src) and "for (" not in _whiles(src), body

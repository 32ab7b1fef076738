"""``if`` conditions that are not affine (on array elements, temporaries, floating
parameters, products of iterators, C's ``%`` of values that may be negative): evaluated
at run time, each assignment under them becoming ``X = c ? e : X``
(codegen/builder.py, ``Builder.if_branches``); temporaries whose arrays change before
their use kept in memory (codegen/temporaries.py). Results against the C program:
tests/kernels/dataif through tests/app/e2e/test_run.py, and the random programs' ninth
stream."""
from __future__ import annotations

import islpy as isl
import pytest

from bbmm.diagnostic import UnsupportedProgramError
from bbmm.codegen.frontend import parse_source
from bbmm.codegen.scop import Ternary, Var


def _scop(body: str, params: str = "int n, float A[n], float B[n], int C[n], float lo"):
    return parse_source(f"void f({params}) {{\n{body}\n}}\n", "d.c")


def _kinds(st):
    return sorted((a.array, a.kind) for a in st.accesses)


LOOP = "for (int i = 0; i < n; i++)"


def test_if_else_assigning_one_element_is_one_select_that_never_reads_it():
    s = _scop(f"{LOOP} if (A[i] < lo) B[i] = lo; else B[i] = A[i];")
    (st,) = s.statements
    assert isinstance(st.rhs, Ternary) and st.op == "="
    assert _kinds(st) == [("A", "read"), ("A", "read"), ("B", "write")]
    assert not st.temps                              # the condition is in the select


def test_branches_assigning_the_same_things_in_order_are_selects():
    """Both branches ``fl = ..; fr = ..;``: ``fl = if2 ? a : d; fr = if2 ? b : e;``, the
    test evaluated once; an inner if/else of one assignment is a ternary in its branch."""
    s = _scop(f"{LOOP} {{ float fl, fr; if (A[i] > 0) {{ fl = A[i]; fr = 2 * A[i]; }} "
              f"else {{ fl = -A[i]; fr = lo; }} B[i] = fr - fl; }}")
    assert [st.text for st in s.statements] == ["B[i] = fr - fl;"]
    (st,) = s.statements
    assert [t.text for t in st.temps] == ["int if2 = A[i] > 0;", "fl = (if2) ? (A[i]) : (-A[i]);",
                                         "fr = (if2) ? (2 * A[i]) : (lo);"]
    s = _scop(f"{LOOP} {{ float f; if (A[i] > 1) f = 1; else if (A[i] < -1) f = -1; "
              f"else f = A[i]; B[i] = f; }}")
    (st,) = s.statements
    assert [t.text for t in st.temps] == [
        "f = (A[i] > 1) ? (1) : ((A[i] < (-1)) ? (-1) : (A[i]));"]
    # different lvalues, or another order: each assignment guarded (fl read before it is
    # assigned is then refused, as C would read it uninitialised)
    with pytest.raises(UnsupportedProgramError, match="'fl' is read before it is assigned"):
        _scop(f"{LOOP} {{ float fl, fr; if (A[i] > 0) {{ fl = 1; fr = 2; }} "
              f"else {{ fr = 3; fl = 4; }} B[i] = fr - fl; }}")


def test_if_without_else_writes_the_old_value_back():
    s = _scop(f"{LOOP} if (A[i] < lo) B[i] = lo;")
    (st,) = s.statements
    assert ("B", "read") in _kinds(st) and ("B", "write") in _kinds(st)
    assert st.text == "B[i] = (if2) ? (lo) : (B[i]);"
    (t,) = st.temps                                  # evaluated once, before the branch
    assert (t.name, t.ctype, t.text) == ("if2", "int", "int if2 = A[i] < lo;")


@pytest.mark.parametrize("op,value", [("+= 2", "B[i] + 2"), ("-= A[i]", "B[i] - A[i]"),
                                      ("*= 3", "B[i] * 3"), ("/= 4", "B[i] / 4")])
def test_compound_assignments_and_increments(op, value):
    (st,) = _scop(f"{LOOP} if (A[i] > 0) B[i] {op};").statements
    assert st.text == f"B[i] = (if2) ? ({value}) : (B[i]);"
    (st,) = _scop(f"{LOOP} if (A[i] > 0) C[i]++;").statements
    assert st.text == "C[i] = (if2) ? (C[i] + 1) : (C[i]);"


def test_affine_conjuncts_stay_in_the_domain():
    """``i > 0 && A[i - 1] > 0``: the statement has no instance at i = 0 (where C never
    reads A[-1]); with an else, the whole test runs at run time (C's && still skips)."""
    (st,) = _scop(f"{LOOP} if (i > 0 && A[i - 1] > 0) B[i] = 1;").statements
    assert st.domain.is_equal(isl.Set("[n] -> { S0[i] : 1 <= i < n }"))
    s = _scop(f"{LOOP} if (i > 0 && A[i - 1] > 0) B[i] = 1; else B[i] = 2;")
    (st,) = s.statements
    assert st.domain.is_equal(isl.Set("[n] -> { S0[i] : 0 <= i < n }"))
    assert "(i > 0) && (A[i - 1] > 0)" in st.text


def test_else_if_chains_and_nesting_combine_the_conditions():
    s = _scop(f"{LOOP} {{ if (A[i] > 1) B[i] = 1; else if (A[i] > 0) {{ B[i] = 2; "
              f"if (C[i] % 2) C[i] = 0; }} else B[i] = 3; }}")
    texts = [st.text for st in s.statements]
    assert texts == ["B[i] = (if2) ? (1) : (B[i]);",
                     "B[i] = ((!if2) && if2_1) ? (2) : (B[i]);",
                     "C[i] = (((!if2) && if2_1) && if2_2) ? (0) : (C[i]);",
                     "B[i] = ((!if2) && (!if2_1)) ? (3) : (B[i]);"]


def test_what_is_not_affine_runs_at_run_time():
    """A floating parameter, a product of iterators, a temporary, C's % of a value that
    may be negative: each a run-time test; an affine one stays a domain constraint."""
    for cond in ("lo > 0.5f", "i * i < n", "(i - 5) % 3 == -1"):
        (st,) = _scop(f"{LOOP} if ({cond}) B[i] = 1;").statements
        assert isinstance(st.rhs, Ternary), cond
        assert st.domain.is_equal(isl.Set("[n] -> { S0[i] : 0 <= i < n }")), cond
    (st,) = _scop(f"{LOOP} {{ float t = A[i] * 2; if (t > lo) B[i] = t; }}").statements
    assert isinstance(st.rhs, Ternary)
    (st,) = _scop(f"{LOOP} if (i % 3 == 1) B[i] = 1;").statements
    assert not isinstance(st.rhs, Ternary)
    assert not st.domain.is_equal(isl.Set("[n] -> { S0[i] : 0 <= i < n }"))


def test_undefined_conditions_are_still_refused():
    with pytest.raises(UnsupportedProgramError, match="undefined in C: shift by 40"):
        _scop(f"{LOOP} if ((i << 40) > A[i]) B[i] = 1;")


def test_locals_of_a_branch_need_no_guard():
    """A reduction declared inside a branch: its own statements run unguarded (no one
    outside the branch sees it); the assignment to the array is guarded."""
    s = _scop("for (int i = 0; i < n; i++) if (A[i] > lo) { float s = 0; "
              "for (int j = 0; j < n; j++) s += A[j]; B[i] = s; }")
    texts = [st.text for st in s.statements]
    assert texts == ["s = 0;", "s += A[j];", "B[i] = (if2) ? (s) : (B[i]);"]


def test_a_condition_the_branch_changes_is_kept_in_memory():
    """``if (A[i] > 0) { A[i] = 0; B[i] = 1; }``: the second statement must see the
    test's value from before the first wrote A[i]: the condition becomes a local array."""
    s = _scop(f"{LOOP} if (A[i] > 0) {{ A[i] = 0; B[i] = 1; }}")
    assert [(a.name, a.ctype, a.local) for a in s.arrays if a.local] == [
        ("if2", "int", "if (A[i] > 0)")]                 # bbmm compile: (for 'if (...)')
    assert [st.text for st in s.statements] == [
        "if2 = A[i] > 0;", "A[i] = (if2) ? (0) : (A[i]);", "B[i] = (if2) ? (1) : (B[i]);"]


def test_a_temporary_whose_array_changes_before_its_use_is_kept_in_memory():
    """``float old = A[i]; A[i] = 2 * A[i]; B[i] = old;`` was refused (a temporary is
    recomputed where it is read); it is now a local array, as C keeps it."""
    s = _scop(f"{LOOP} {{ float old = A[i]; A[i] = 2.0f * A[i]; B[i] = old; }}")
    assert [a.name for a in s.arrays if a.local] == ["old"]
    assert [st.text for st in s.statements] == ["old = A[i];", "A[i] = 2.0f * A[i];",
                                                "B[i] = old;"]
    # read on a later trip of a loop that writes what it was computed from
    s = _scop("float t = A[0]; for (int i = 1; i < n; i++) { B[i] = t; A[0] = B[i]; }")
    assert [a.name for a in s.arrays if a.local] == ["t"]


def test_a_value_the_branch_does_not_change_stays_a_value():
    (st,) = _scop(f"{LOOP} if (A[i] > 0) B[i] = A[i] * 2;").statements
    assert [v.name for v in st.temps] == ["if2"]
    assert not [a for a in _scop(f"{LOOP} if (A[i] > 0) B[i] = 1;").arrays if a.local]
    assert isinstance(st.rhs.cond, Var)

"""The regime of a nest's tiles (bbmm/codegen/regime.py): the comparisons through which
the driver's tile expressions depend on the serial iterators, checked against evaluating
the expressions themselves."""
from __future__ import annotations

import itertools

from hypothesis import given, settings, strategies as st

from bbmm.codegen.compile import compile_program
from bbmm.codegen.regime import regime
from support.paths import ROOT

PARAMS = ("n", "tsteps")


def test_stencil_write_out_depends_on_the_step_through_one_comparison():
    texts = ["ub <= 0 or lb + 1 >= n", "lb if lb >= 1 else 0",
             "ub if ub >= 1 and t + 1 == tsteps else -1"]
    assert regime(texts, ["t"], PARAMS) == ("t + 1 == tsteps",)


def test_no_serial_iterator_is_the_empty_regime():
    assert regime(["n - 1", "lb if lb >= 1 else 0"], ["t"], PARAMS) == ()


def test_an_iterator_as_a_coordinate_or_compared_with_a_tile_bound_has_none():
    assert regime(["k if ub >= 0 else 0"], ["k"], PARAMS) is None        # Floyd's row k
    assert regime(["lb if ub >= k + 1 else 0"], ["k"], PARAMS) is None   # with the tile
    assert regime(["max(k, 0) >= 1"], ["k"], PARAMS) is None             # a call in it


def test_comparisons_are_kept_once_in_order():
    texts = ["1 if t >= 2 and t + 1 == tsteps else 0", "2 if t + 1 == tsteps else 3"]
    assert regime(texts, ["t"], PARAMS) == ("t >= 2", "t + 1 == tsteps")


NAMES = ("t", "n", "lb", "7")


@st.composite
def expressions(draw, depth=3):
    """Small Python expressions over t, n, lb and constants, as the driver writes them."""
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from(NAMES))
    kind = draw(st.sampled_from(["add", "cmp", "ifexp"]))
    a = draw(expressions(depth=depth - 1))
    b = draw(expressions(depth=depth - 1))
    if kind == "add":
        return f"({a} + {b})"
    if kind == "cmp":
        op = draw(st.sampled_from([">=", "==", "<="]))
        return f"({a} {op} {b})"
    c = draw(expressions(depth=depth - 1))
    return f"({a} if {c} else {b})"


@settings(max_examples=300, deadline=None)
@given(expressions())
def test_equal_regimes_give_equal_values(text):
    """Brute force: where a regime exists, every two steps whose comparisons agree give
    the expression the same value, whatever the tile bound."""
    conds = regime([text], ["t"], ["n"])
    if conds is None:
        return
    code = compile(text, "<e>", "eval")
    keys = [compile(c, "<c>", "eval") for c in conds]
    for n, lb in itertools.product(range(0, 4), range(-1, 3)):
        seen = {}
        for t in range(-2, 6):
            env = {"t": t, "n": n, "lb": lb}
            key = tuple(eval(k, {}, env) for k in keys)
            value = eval(code, {}, env)
            assert seen.setdefault(key, value) == value, (text, conds, n, lb, t)


def test_the_heat2d_driver_builds_its_tiles_once_per_regime():
    prog = compile_program(ROOT / "polybench" / "heat2d.c")
    src = prog.host_source
    assert src.count("spec=(run_id, key)") == 2
    assert "t + 1 == tsteps" in src
    floyd = compile_program(ROOT / "polybench" / "floyd.c").host_source
    assert "spec=" not in floyd   # row k is a coordinate: built at every k

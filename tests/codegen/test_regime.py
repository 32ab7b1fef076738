"""The regime of a nest's tiles (bbmm/codegen/regime.py): the comparisons through which
the driver's tile expressions depend on the serial iterators, checked against evaluating
the expressions themselves; and the comparisons that pick an affine piece (``shifts``),
checked the same way: where they agree at three steps in a row, every value moves by the
same amount from each to the next."""
from __future__ import annotations

import itertools

from hypothesis import given, settings, strategies as st

from bbmm.codegen.compile import compile_program
from bbmm.codegen.regime import regime, shifts
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


def test_shifts_keep_comparisons_and_who_wins_each_min_and_max():
    texts = ["Box.unchecked((max(0, lb), k), (min(ub, n - 1), k))",
             "k + 1 if n >= k + 2 and ub >= k + 1 else 0", "max(lb, k + 1)"]
    assert shifts(texts, ["k"], PARAMS) == ("n >= k + 2", "ub >= k + 1", "(lb) >= (k + 1)")
    assert shifts(["2 * k - n * k + 3"], ["k"], PARAMS) == ()   # affine, one piece


def test_shifts_refuse_what_is_not_affine_in_the_iterators():
    for text in ("k // 2", "k % 3", "k * k", "lb * k", "abs(k)", "A[k]", "k / 2"):
        assert shifts([text], ["k"], PARAMS) is None, text
    assert shifts(["lb // 2 + k"], ["k"], PARAMS) == ()  # a division of no iterator


@st.composite
def affine_expressions(draw, depth=3):
    """Expressions over k, n, lb and constants with sums, products by constants,
    comparisons, conditionals, min and max, as the driver writes a tile's boxes."""
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from(("k", "n", "lb", "3", "-2")))
    kind = draw(st.sampled_from(["add", "sub", "scale", "cmp", "ifexp", "min", "max",
                                 "and", "or", "not"]))
    a = draw(affine_expressions(depth=depth - 1))
    b = draw(affine_expressions(depth=depth - 1))
    if kind in ("and", "or"):
        return f"({a} {kind} {b})"
    if kind == "not":
        return f"(not {a})"
    if kind == "add":
        return f"({a} + {b})"
    if kind == "sub":
        return f"({a} - {b})"
    if kind == "scale":
        return f"({draw(st.sampled_from(['2', '-3', 'n']))} * {a})"
    if kind == "cmp":
        return f"({a} {draw(st.sampled_from(['>=', '==', '<=', '>']))} {b})"
    if kind in ("min", "max"):
        c = draw(affine_expressions(depth=depth - 1))
        return f"{kind}({a}, {b}, {c})"
    c = draw(affine_expressions(depth=depth - 1))
    return f"({a} if {c} else {b})"


@settings(max_examples=400, deadline=None)
@given(affine_expressions())
def test_equal_comparisons_at_three_steps_move_values_evenly(text):
    """Brute force: where ``shifts`` finds the comparisons, any three steps in a row at
    which they agree give the expression values that move by the same amount."""
    conds = shifts([text], ["k"], ["n"])
    assert conds is not None, text  # the strategy writes affine expressions only
    code = compile(text, "<e>", "eval")
    keys = [compile(c, "<c>", "eval") for c in conds]
    for n, lb in itertools.product(range(0, 4), range(-1, 3)):
        def at(k):
            env = {"k": k, "n": n, "lb": lb}
            return tuple(eval(c, {}, env) for c in keys), int(eval(code, {}, env))
        for k in range(-3, 7):
            (c0, v0), (c1, v1), (c2, v2) = at(k), at(k + 1), at(k + 2)
            if c0 == c1 == c2:
                assert v2 - v1 == v1 - v0, (text, conds, n, lb, k)


def _coordinates(spec) -> list[int]:
    """Every number of a tile's TileSpec, in a fixed order."""
    out = []
    for dct in (spec.boxes, spec.writes, spec.flowout, spec.writeout):
        for a in sorted(dct):
            for b in dct[a]:
                out += [*b.lo, *b.hi]
    for lo, hi in spec.grid:
        out += [lo, hi]
    return out


def test_floyd_and_lu_tiles_move_evenly_while_their_sig_holds():
    """The generated ``nest<N>_sig`` against the generated ``nest<N>_tile``: at every k
    of Floyd and LU (n = 37, several tiles) where the sig agrees at three steps in a
    row, every coordinate of the tile moves by the same amount, and an empty tile stays
    empty."""
    for name in ("floyd", "lu"):
        prog = compile_program(ROOT / "polybench" / f"{name}.c")
        ns: dict = {}
        exec(compile(prog.host_source, f"{name}_host.py", "exec"), ns)
        sigs = sorted(k for k in ns if k.startswith("nest") and k.endswith("_sig"))
        assert sigs, name
        n = 37
        checked = 0
        for sig_name in sigs:
            tile_fn, sig_fn = ns[sig_name.replace("_sig", "_tile")], ns[sig_name]
            for size in (5, 16, 37):
                for lb in range(0, n, size):
                    ub = lb + size - 1
                    for k in range(0, n - 2):
                        s = [sig_fn(n, k + d, lb, ub) for d in range(3)]
                        if not s[0] == s[1] == s[2]:
                            continue
                        specs = [tile_fn(n, k + d, lb, ub) for d in range(3)]
                        if specs[0] is None:
                            assert specs[1] is None and specs[2] is None
                            continue
                        c0, c1, c2 = (_coordinates(sp) for sp in specs)
                        assert [z - y for y, z in zip(c1, c2)] == \
                            [y - x for x, y in zip(c0, c1)], (name, sig_name, lb, k)
                        checked += 1
        assert checked > 100, name

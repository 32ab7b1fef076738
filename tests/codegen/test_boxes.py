"""Tiles, initial bounding boxes and the Python expression printer (bbmm.codegen.tiling,
bbmm.codegen.boxes, bbmm.codegen.pyexpr), checked against brute-force enumeration of the tiles at
concrete sizes: every host iteration, every tile (partial and empty ones included), two
tile sizes. Also the plan rule for all-sequential loops (bbmm.codegen.deps.plan)."""
from __future__ import annotations

import random

import islpy as isl
import pytest

from bbmm.codegen.boxes import plan_boxes
from bbmm.codegen.deps import Nest, plan
from bbmm.codegen.frontend import parse_source
from bbmm.codegen.pyexpr import compile_lambda, pwaff_to_py, set_to_py
from bbmm.codegen.tiling import tile_bounds, tile_indices

from support.analysis import kernel, points

# {{{ brute force helpers




def fix(scop, values):
    """``[n, k, lb, ub] -> { : n = 10 and ... }``."""
    cons = " and ".join(f"{k} = {v}" for k, v in values.items()) or "true"
    return isl.Set(f"[{', '.join(values)}] -> {{ : {cons} }}")


def host_points(tiling, params):
    """Every host iteration (values of the host iterators) at these parameter values."""
    hc = tiling.host_context.intersect_params(fix(None, params))
    for j, h in enumerate(tiling.host):
        pos = hc.find_dim_by_name(isl.dim_type.param, h)
        hc = hc.move_dims(isl.dim_type.set, j, isl.dim_type.param, pos, 1)
    if not tiling.host:
        return [()] if not hc.is_empty() else []
    return sorted(points(hc))


def instances(scop, tiling, params):
    """[(statement, iterators, env)] of the nest, in statement order."""
    out = []
    for s in tiling.statements:
        st = scop.statement(s)
        for it in sorted(points(st.domain.intersect_params(scop.params_set(params)))):
            out.append((st, it, dict(params, **dict(zip(st.iterators, it)))))
    return out


def tiles_of(scop, tiling, params, T):
    """Yield (host, t, lb, ub, instances of the tile) for every host iteration and every
    tile index around the nest's p0 range (one empty tile each side)."""
    insts = instances(scop, tiling, params)
    h = len(tiling.host)
    for host in host_points(tiling, params):
        mine = [x for x in insts if x[1][:h] == host]
        if not tiling.band:
            yield host, None, None, None, mine
            continue
        p0s = [x[1][h] for x in insts] or [0]
        for t in range(min(p0s) // T - 1, max(p0s) // T + 2):
            lb, ub = tile_bounds(t, T)
            yield host, t, lb, ub, [x for x in mine if lb <= x[1][h] <= ub]


def env_args(tiling, params, host, lb, ub):
    env = dict(params, **dict(zip(tiling.host, host)))
    if tiling.lb:
        env[tiling.lb], env[tiling.ub] = lb, ub
    return [env[v] for v in tiling.variables]


def bbox(pts):
    """(lo, hi) of a list of points, None when empty."""
    if not pts:
        return None
    nd = len(pts[0])
    return (tuple(min(p[d] for p in pts) for d in range(nd)),
            tuple(max(p[d] for p in pts) for d in range(nd)))


def check_box(f, args, pts, what):
    """The evaluated ParamBox equals the bounding box of pts (or is empty)."""
    lo, hi = f(*args)
    want = bbox(pts)
    if want is None:
        assert any(a > b for a, b in zip(lo, hi)), (what, args, lo, hi)
    else:
        assert (lo, hi) == want, (what, args, lo, hi, want)
    return lo, hi


def volume(lo, hi):
    v = 1
    for a, b in zip(lo, hi):
        v *= max(0, b - a + 1)
    return v

# }}}

# {{{ pyexpr


def _eval_isl(pa, values):
    pt = isl.Point.zero(pa.get_domain_space())
    for name, v in values.items():
        pos = pa.get_domain_space().find_dim_by_name(isl.dim_type.param, name)
        pt = pt.set_coordinate_val(isl.dim_type.param, pos, v)
    r = pa.eval(pt)
    return None if r.is_nan() else r.to_python()


PWAFFS = [
    "[n] -> { [x] : exists e: x = 3e and n <= x <= n + 10 }",        # floord
    "[n, m] -> { [x] : exists e: x = 2e + 1 and m <= x < n }",         # mod, piecewise
    "[n, k, lb, ub] -> { [a] : (lb <= a <= ub and 0 <= a < n) or a = k }",
    "[n, w] -> { [x] : exists i: 0 <= i < n and x >= i - w and x <= i + w and 0 <= x < n }",
    "[a, b] -> { [x] : exists e: 5e <= a - 2b + 7 and x = e and x >= -a }",
]


@pytest.mark.parametrize("text", PWAFFS)
def test_pwaff_to_py_matches_isl_eval(text):
    rng = random.Random(7)
    s = isl.Set(text)
    names = s.get_space().get_var_names(isl.dim_type.param)
    for pa in (s.dim_min(0), s.dim_max(0)):
        src = pwaff_to_py(pa)
        f = compile_lambda(names, src)
        for _ in range(300):
            vals = {n: rng.randint(-15, 15) for n in names}
            want = _eval_isl(pa, vals)
            if want is not None:                  # outside the domain: any piece
                assert f(*vals.values()) == want, (src, vals)
        cond = set_to_py(s.params())
        g = compile_lambda(names, cond)
        for _ in range(100):
            vals = {n: rng.randint(-15, 15) for n in names}
            assert g(*vals.values()) == (_eval_isl(pa, vals) is not None), (cond, vals)


def test_pyexpr_precedence_and_context():
    assert pwaff_to_py(isl.PwAff("[n, m] -> { [(n - (m - 1))] }")) == "n - m + 1"
    src = pwaff_to_py(isl.PwAff("[n, m] -> { [(floor(n/2) - floor((m - n)/3))] }"))
    f = compile_lambda(["n", "m"], src)
    assert all(f(n, m) == n // 2 - (m - n) // 3 for n in range(-9, 9) for m in range(-9, 9))
    ctx = isl.Set("[n, k] -> { : 0 <= k < n }")
    pa = isl.Set("[n, k] -> { [x] : 0 <= x < n or x = k }").dim_max(0)
    assert pwaff_to_py(pa, ctx) == "n - 1"
    assert set_to_py(isl.Set("[n] -> { : n >= 1 }"), isl.Set("[n] -> { : n >= 3 }")) == "True"
    assert set_to_py(isl.Set("[n] -> { : n < 0 }"), isl.Set("[n] -> { : n >= 3 }")) == "False"
    with pytest.raises(ValueError):
        pwaff_to_py(isl.PwAff("[lambda] -> { [(lambda)] }"))

# }}}

# {{{ plan: all-sequential loops become one empty-band nest


def test_plan_all_sequential_subtree_is_one_nest():
    s = kernel("floyd_plain")
    p = plan(s)
    assert p.serial_loops == () and p.parallel == ()
    assert p.nests == (Nest(0, (), ("S0",), (), (0, 1, 2)),)
    src = """void f(int n, float A[n], float B[n][n], float C[n]) {
      for (int t = 1; t < n; t++) {
        for (int j = 0; j < n; j++)
          B[t][j] = B[t - 1][j] + A[t];
        for (int j = 1; j < n; j++)
          C[j] = C[j - 1] + B[t][j];
      }
      for (int i = 1; i < n; i++)
        A[i] = A[i - 1] + C[i];
    }"""
    s = parse_source(src, "mixed.c")
    p = plan(s)
    assert p.serial_loops == (0,)
    assert p.nests == (Nest(0, (1,), ("S0",), (0,), ()), Nest(1, (), ("S1",), (0,), (2,)),
                       Nest(2, (), ("S2",), (), (3,)))

# }}}

# {{{ tiling and boxes against enumeration

CASES = [("floyd", {"n": 10}), ("jacobi2d", {"tsteps": 3, "n": 9}),
         ("triangular", {"n": 10}), ("matmul", {"ni": 7, "nj": 5, "nk": 4}),
         ("imperfect", {"n": 10}), ("heat3d", {"tsteps": 2, "n": 7}), ("vec1d", {"n": 10}),
         ("minmax", {"n": 10, "w": 2}), ("guarded", {"n": 7}), ("prefix_sum", {"n": 8}),
         ("floyd_plain", {"n": 5}), ("mixed", {"n": 7}),
         # degenerate sizes: empty domains and single-tile programs
         ("jacobi2d", {"tsteps": 2, "n": 2}), ("triangular", {"n": 1}),
         ("minmax", {"n": 3, "w": 0})]


@pytest.fixture(scope="module")
def compiled():
    cache = {}

    def get(name):
        if name not in cache:
            s = kernel(name)
            p = plan(s)
            cache[name] = (s, p, plan_boxes(s, p))
        return cache[name]
    return get


@pytest.mark.parametrize("name,params", CASES,
                         ids=[f"{c[0]}-{'-'.join(map(str, c[1].values()))}" for c in CASES])
def test_tiles_and_boxes_match_enumeration(compiled, name, params):
    s, p, nbs = compiled(name)
    params = {k: v for k, v in params.items() if k in s.int_params}
    for nb in nbs:
        tl = nb.tiling
        h = len(tl.host)
        empty_f = compile_lambda(tl.variables, tl.empty_cond)
        acc_f = [(a, a.evaluator(tl.variables), compile_lambda(tl.variables, a.empty),
                  compile_lambda(tl.variables, a.inexact_cond)) for a in nb.accesses]
        insts = instances(s, tl, params)
        if tl.band:
            # the whole-nest p0 range, in the problem parameters only
            f = tl.p0_range.evaluator(tl.params)
            check_box(f, [params[v] for v in tl.params], [(x[1][h],) for x in insts], "p0")
            p0_at = tl.p0_range_at.evaluator(tl.host_variables)
            grid = tl.grid.evaluator(tl.variables)
        for T in (3, 4):
            seen = set()
            for host, t, lb, ub, tile in tiles_of(s, tl, params, T):
                args = env_args(tl, params, host, lb, ub)
                assert empty_f(*args) == (not tile), (tl.nest, host, t)
                if tl.band:
                    mine = [(x[1][h],) for x in insts if x[1][:h] == host]
                    check_box(p0_at, args[:len(tl.host_variables)], mine, "p0_at")
                    b = len(tl.band)
                    glo, ghi = check_box(grid, args, [x[1][h:h + b] for x in tile], "grid")
                    if tile and tl.grid.exact:
                        assert volume(glo, ghi) == len({x[1][h:h + b] for x in tile})
                seen.update(x[1] for x in tile)
                for a, f, ef, inf in acc_f:
                    acc = s.access(a.access_id)
                    pts = {tuple(ix.evaluate(env) for ix in acc.index)
                           for st, _, env in tile if st.name == acc.statement}
                    lo, hi = check_box(f, args, sorted(pts), a.text)
                    assert ef(*args) == (not pts)
                    if pts:
                        exact_here = volume(lo, hi) == len(pts)
                        assert inf(*args) == (not exact_here), (a.text, args)
                        assert exact_here or not a.exact, (a.text, args)
            # the tiles partition the nest (each host iteration once)
            assert seen == {x[1] for x in insts}
            if tl.band:
                lo = tl.p0_range.evaluator(tl.params)(*[params[v] for v in tl.params])
                ids = tile_indices(lo[0][0], lo[1][0], T)
                assert all(any(tile_bounds(t, T)[0] <= x[1][h] <= tile_bounds(t, T)[1]
                               for t in ids) for x in insts)


def test_floyd_boxes_and_cleanup(compiled):
    s, p, (nb,) = compiled("floyd")
    assert nb.variables == ("n", "k", "lb", "ub")
    by_text = {}
    for a in nb.accesses:
        by_text.setdefault(a.text, set()).add(a.cleanup)
        assert a.exact
    assert by_text == {"path[i][j]": {False}, "path[i][k]": {False}, "path[k][j]": {True}}
    assert [a.text for a in nb.writes] == ["path[i][j]"]
    assert nb.arrays == ("path",)
    row_k = next(a for a in nb.accesses if a.text == "path[k][j]")
    f = row_k.evaluator(nb.variables)
    assert f(10, 4, 3, 5) == ((4, 0), (4, 9))
    assert f(10, 4, 12, 14)[0][0] > f(10, 4, 12, 14)[1][0]      # tile past the last row
    tile = next(a for a in nb.accesses if a.text == "path[i][j]").evaluator(nb.variables)
    assert tile(10, 4, 8, 11) == ((8, 0), (9, 9))                 # partial tile clipped


def test_tile_bound_names_avoid_program_names():
    src = """void f(int lb, float A[lb]) {
      for (int ub = 0; ub < lb; ub++)
        A[ub] = 2.0f * A[ub];
    }"""
    s = parse_source(src, "clash.c")
    (nb,) = plan_boxes(s, plan(s))
    assert nb.variables == ("lb", "lb_", "ub_")
    assert nb.accesses[0].evaluator(nb.variables)(10, 4, 7) == ((4,), (7,))
    assert nb.accesses[0].evaluator(nb.variables)(10, 8, 11) == ((8,), (9,))


def test_matmul_grid_and_tile_count(compiled):
    s, p, (nb,) = compiled("matmul")
    tl = nb.tiling
    assert tl.band == ("i", "j") and tl.host == ()
    lo, hi = tl.p0_range.evaluator(tl.params)(100, 30, 20)
    assert list(tile_indices(lo[0], hi[0], 32)) == [0, 1, 2, 3]
    assert tl.grid.evaluator(tl.variables)(100, 30, 20, 96, 127) == ((96, 0), (99, 29))
    assert tl.grid.exact

# }}}

# vim: foldmethod=marker

"""Dependences, parallel loops and kernel nests (bbmm.codegen.deps), checked against hand-written
isl relations and against a brute-force simulation of the sequential program."""
from __future__ import annotations

import islpy as isl
import pytest

from bbmm.codegen.deps import Nest, carried, dependences, parallel_loops, plan
from bbmm.codegen.frontend import parse_file, parse_source
from support.paths import KERNELS



def kernel(name: str):
    return parse_file(KERNELS / f"{name}.c")


def by_iter(scop, par):
    """{'k0': bool, ...} keyed by iterator and loop id, for readable asserts."""
    return {f"{lp.iterator}{lp.id}": par[lp.id] for lp in scop.loops()}

# {{{ brute force


def _points(s):
    out = []

    def cb(p):
        sp = p.get_space()
        out.append(tuple(p.get_coordinate_val(isl.dim_type.set, d).to_python()
                         for d in range(sp.dim(isl.dim_type.set))))
    s.foreach_point(cb)
    return out


def simulate(scop, params):
    """Sequential execution order; returns (flow, raw, war, waw) as sets of
    ((stmt, iters), (stmt, iters)) pairs."""
    fix = scop.params_set(params)
    inst = []
    for st in scop.statements:
        n = len(st.iterators)
        for pt in _points(st.schedule.intersect_params(fix).wrap()):
            inst.append((pt[n:], st, pt[:n]))
    inst.sort(key=lambda x: x[0])
    last, reads, writes = {}, {}, {}
    flow, raw, war, waw = set(), set(), set(), set()
    for _, st, it in inst:
        env = dict(params, **dict(zip(st.iterators, it)))
        me = (st.name, it)
        for a in st.reads:
            e = (a.array, tuple(ix.evaluate(env) for ix in a.index))
            if e in last:
                flow.add((last[e], me))
            raw.update((w, me) for w in writes.get(e, ()))
            reads.setdefault(e, []).append(me)
        e = (st.write.array, tuple(ix.evaluate(env) for ix in st.write.index))
        war.update((r, me) for r in reads.get(e, ()) if r != me)
        waw.update((w, me) for w in writes.get(e, ()))
        writes.setdefault(e, []).append(me)
        last[e] = me
    return flow, raw, war, waw


def pairs(umap, scop, params):
    out = set()
    m = umap.intersect_params(scop.params_set(params))
    ml = m.get_map_list()
    for k in range(ml.n_map()):
        mp = ml.get_at(k)
        a, b = mp.get_tuple_name(isl.dim_type.in_), mp.get_tuple_name(isl.dim_type.out)
        na = mp.dim(isl.dim_type.in_)
        for pt in _points(mp.wrap()):
            out.add(((a, pt[:na]), (b, pt[na:])))
    return out


CASES = [("floyd", {"n": 4}), ("jacobi2d", {"tsteps": 2, "n": 5}), ("matmul",
         {"ni": 2, "nj": 3, "nk": 3, "alpha": 0}), ("triangular", {"n": 5}),
         ("imperfect", {"n": 3}), ("prefix_sum", {"n": 6}), ("minmax", {"n": 5, "w": 1}),
         ("guarded", {"n": 4}), ("alpha_int", {"n": 3, "m": 2}), ("vec1d", {"n": 5})]


@pytest.mark.parametrize("name,params", CASES, ids=[c[0] for c in CASES])
def test_dependences_match_simulation(name, params):
    s = kernel(name)
    params = {k: v for k, v in params.items() if k in s.int_params}
    d = dependences(s)
    flow, raw, war, waw = simulate(s, params)
    assert pairs(d.flow, s, params) == flow
    assert pairs(d.raw, s, params) == raw
    assert pairs(d.war, s, params) == war
    assert pairs(d.waw, s, params) == waw
    # carried(): brute-force definition on the simulated dependences
    every = flow | raw | war | waw
    for lp in s.loops():
        under = {st.name for st in s.loop_node(lp.id).statements()}
        d_ = lp.depth
        sim = {(a, b) for a, b in every if a[0] in under and b[0] in under
               and a[1][:d_] == b[1][:d_] and a[1][d_] != b[1][d_]}
        assert pairs(carried(s, lp.id, d), s, params) == sim, lp

def test_flow_where_isl_fails_is_conservative():
    """tests/kernels/quasi/stepped_mod.c: isl's compute_flow fails on its access relations
    (existentials from ``g = i + 1 + h % 2; ...; g += 2``); value_flow then keeps every
    true flow and adds only earlier writes of the element read (memory RAW), and the
    memory-based dependences stay exact."""
    from bbmm.codegen.deps import value_flow
    s = parse_file(KERNELS / "quasi"
                   / "stepped_mod.c")
    with pytest.raises(isl.Error):
        (isl.UnionAccessInfo.from_sink(s.reads()).set_must_source(s.writes())
         .set_schedule_map(s.schedule()).compute_flow())
    assert value_flow(s.reads(), s.writes(), s.schedule()).no_source is None
    params = {"n": 9, "m": 5}
    d = dependences(s)
    flow, raw, war, waw = simulate(s, params)
    got = pairs(d.flow, s, params)
    assert flow <= got <= raw | flow and got - flow
    assert pairs(d.raw, s, params) == raw
    assert pairs(d.war, s, params) == war
    assert pairs(d.waw, s, params) == waw



@pytest.mark.parametrize("name,params", CASES[:6], ids=[c[0] for c in CASES[:6]])
def test_flow_past_its_quota_is_conservative(name, params, monkeypatch):
    """Where isl's exact value flow would take more than ``FLOW_OPERATIONS`` (here: any
    at all), value_flow over-approximates it as where isl fails: every true flow kept,
    only earlier writes of the element read added, the memory-based dependences exact."""
    from bbmm.codegen import deps
    monkeypatch.setattr(deps, "FLOW_OPERATIONS", 1)
    monkeypatch.setattr(deps, "_SEEN", [])
    s = kernel(name)
    params = {k: v for k, v in params.items() if k in s.int_params}
    assert deps.value_flow(s.reads(), s.writes(), s.schedule()).no_source is None
    d = dependences(s)
    flow, raw, war, waw = simulate(s, params)
    assert flow <= pairs(d.flow, s, params) <= raw | flow
    assert pairs(d.raw, s, params) == raw
    assert pairs(d.war, s, params) == war
    assert pairs(d.waw, s, params) == waw


def test_a_flow_isl_takes_minutes_over_is_over_approximated():
    """tests/kernels/slow_flow.c: isl's compute_flow ran for minutes on it; past
    ``FLOW_OPERATIONS`` value_flow stops it and over-approximates (no ``no_source``), and
    the same relations asked again take the flow found (the compiler's second ask)."""
    from bbmm.codegen import deps
    s = kernel("slow_flow")
    with deps.isl_quota(deps.FLOW_OPERATIONS), pytest.raises(isl.Error):
        (isl.UnionAccessInfo.from_sink(s.reads()).set_must_source(s.writes())
         .set_schedule_map(s.schedule()).compute_flow())
    got = deps.value_flow(s.reads(), s.writes(), s.schedule())
    assert got.no_source is None
    assert deps.value_flow(s.reads(), s.writes(), s.schedule()) is got
    params = {"n": 6}
    d = dependences(s)
    flow, raw, war, waw = simulate(s, params)
    assert flow <= pairs(d.flow, s, params) <= raw | flow
    assert pairs(d.war, s, params) == war and pairs(d.waw, s, params) == waw


# }}}

# {{{ hand-written relations


def test_prefix_sum_flow_exact():
    s = kernel("prefix_sum")
    d = dependences(s)
    assert d.flow.is_equal(isl.UnionMap("[n] -> { S0[i] -> S0[i + 1] : 1 <= i <= n - 2 }"))
    assert d.war.is_empty() and d.waw.is_empty()
    full = isl.UnionMap("[n] -> { S0[i] -> [S0[i + 1] -> A[i]] : 1 <= i <= n - 2 }")
    assert d.flow_full.is_equal(full)


def test_jacobi_flow_exact():
    s = kernel("jacobi2d")
    dom = "1 <= i <= n - 2 and 1 <= j <= n - 2"
    within = f"S0[t, i, j] -> S1[t, i, j] : 0 <= t < tsteps and {dom}"
    nxt = "; ".join(
        f"S1[t, i, j] -> S0[t + 1, i + {a}, j + {b}] : 0 <= t < tsteps - 1 and {dom} and "
        f"1 <= i + {a} <= n - 2 and 1 <= j + {b} <= n - 2"
        for a, b in ((0, 0), (0, 1), (0, -1), (1, 0), (-1, 0)))
    want = isl.UnionMap(f"[tsteps, n] -> {{ {within}; {nxt} }}")
    assert dependences(s).flow.is_equal(want)


def test_floyd_i_carries_only_row_and_column_k():
    """Row k / column k are rewritten in iteration k: the only reason i is not parallel."""
    s = kernel("floyd")
    c = carried(s, 1)
    assert not c.is_empty()
    assert c.is_subset(isl.UnionMap("[n] -> { S0[k, i, j] -> S0[k, i2, j2] : "
                                    "i = k or i2 = k or j = k or j2 = k }"))

# }}}

# {{{ parallel loops and plans


def test_jacobi_parallel_and_plan():
    s = kernel("jacobi2d")
    par = parallel_loops(s)
    assert by_iter(s, par) == {"t0": False, "i1": True, "j2": True, "i3": True, "j4": True}
    p = plan(s, par)
    assert p.serial_loops == (0,)
    assert p.nests == (Nest(0, (1, 2), ("S0",), (0,), ()), Nest(1, (3, 4), ("S1",), (0,), ()))
    assert p.nest_of("S1").id == 1


def test_floyd_pragma_wins():
    s = kernel("floyd")
    assert by_iter(s, parallel_loops(s, pragmas=False)) == {"k0": False, "i1": False,
                                                            "j2": False}
    assert by_iter(s, parallel_loops(s)) == {"k0": False, "i1": True, "j2": False}
    p = plan(s)
    assert p.serial_loops == (0,) and p.parallel == (1,)
    assert p.nests == (Nest(0, (1,), ("S0",), (0,), (2,)),)


def test_floyd_without_pragma_all_serial():
    s = kernel("floyd_plain")
    p = plan(s)
    # no parallel loop anywhere: the whole nest runs as one work-item, not n^3 launches
    assert p.serial_loops == () and p.parallel == ()
    assert p.nests == (Nest(0, (), ("S0",), (), (0, 1, 2)),)


def test_matmul_band_and_inner_reduction():
    s = kernel("matmul")
    assert by_iter(s, parallel_loops(s)) == {"i0": True, "j1": True, "k2": False}
    assert plan(s).nests == (Nest(0, (0, 1), ("S0",), (), (2,)),)


def test_prefix_sum_serial():
    s = kernel("prefix_sum")
    assert parallel_loops(s) == {0: False}
    assert plan(s).nests == (Nest(0, (), ("S0",), (), (0,)),)


def test_imperfect_and_heat3d_bands():
    s = kernel("imperfect")
    assert by_iter(s, parallel_loops(s)) == {"i0": True, "j1": False}
    assert plan(s).nests == (Nest(0, (0,), ("S0", "S1", "S2"), (), (1,)),)
    h = kernel("heat3d")
    assert [n.band for n in plan(h).nests] == [(1, 2, 3), (4, 5, 6)]
    assert [n.band for n in plan(h, max_band=2).nests] == [(1, 2), (4, 5)]
    assert plan(h, max_band=2).nests[0].inner_loops == (3,)


def test_triangular_and_statements_between_serial_loops():
    s = kernel("triangular")
    assert all(parallel_loops(s).values())
    src = """void f(int n, float A[n], float B[n][n]) {
      for (int t = 1; t < n; t++) {
        A[t] = A[t - 1] + 1.0f;
        B[t][0] = A[t];
        for (int j = 0; j < n; j++)
          B[t][j] = B[t - 1][j] + A[t];
      }
      A[0] = B[0][0];
    }"""
    s = parse_source(src, "mixed.c")
    par = parallel_loops(s)
    assert par == {0: False, 1: True}
    p = plan(s, par)
    assert p.nests == (Nest(0, (), ("S0", "S1"), (0,), ()), Nest(1, (1,), ("S2",), (0,), ()),
                       Nest(2, (), ("S3",), (), ()))

# }}}

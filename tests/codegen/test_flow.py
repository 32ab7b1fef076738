"""Flow-out and write-out sets (bbmm.codegen.flow) against a simulation of the program.

The simulation runs the statement instances in program order, except that the instances
of one band-nest instance (same nest, same host iteration) see only the writes of earlier
nest instances and of their own band point: the parallel semantics under which the
kernels run (and which a ``#pragma omp parallel for`` asserts). It records, for every
read, the instance that wrote the value read, and the last writer of every element.
"""
from __future__ import annotations

import itertools

import islpy as isl
import pytest

from bbmm.codegen.deps import dependences, plan
from bbmm.codegen.flow import parallel_flow, plan_flow
from bbmm.codegen.pyexpr import compile_lambda
from bbmm.codegen.tiling import tile_bounds

from support.analysis import kernel, points

# {{{ simulation




def params_set(names_values):
    cons = " and ".join(f"{k} = {v}" for k, v in names_values.items()) or "true"
    return isl.Set(f"[{', '.join(names_values)}] -> {{ : {cons} }}")


def simulate(scop, pl, params):
    """(flows, last): flows = [(src, sink, (array, index))], last = {element: writer};
    instances are (statement name, iterators)."""
    fix = scop.params_set(params)
    inst = []
    for st in scop.statements:
        n = len(st.iterators)
        for pt in points(st.schedule.intersect_params(fix).wrap()):
            inst.append((pt[n:], st, pt[:n]))
    inst.sort(key=lambda x: x[0])
    last, flows = {}, []
    key, overlay, pending = None, {}, []

    def commit():
        for e, w in pending:
            last[e] = w
        pending.clear()
        overlay.clear()

    for _, st, it in inst:
        nest = pl.nest_of(st.name)
        h, b = len(nest.host_loops), len(nest.band)
        k = (nest.id, it[:h]) if b else None
        if k != key:
            commit()
            key = k
        env = dict(params, **dict(zip(st.iterators, it)))
        me = (st.name, it)
        own = overlay.setdefault(it[h:h + b], {}) if b else {}
        for a in st.reads:
            e = (a.array, tuple(ix.evaluate(env) for ix in a.index))
            w = own.get(e, last.get(e))
            if w is not None:
                flows.append((w, me, e))
        e = (st.write.array, tuple(ix.evaluate(env) for ix in st.write.index))
        if b:
            own[e] = me
            pending.append((e, me))
        else:
            last[e] = me
    commit()
    return flows, last


def pairs(umap, scop, params):
    """{(src, sink, (array, index))} of a { src -> [sink -> element] } relation."""
    out = set()
    m = umap.intersect_params(scop.params_set(params))
    ml = m.get_map_list()
    for i in range(ml.n_map()):
        mp = ml.get_at(i)
        src = mp.get_tuple_name(isl.dim_type.in_)
        na = mp.dim(isl.dim_type.in_)
        rng = mp.range().unwrap()
        sink = rng.get_tuple_name(isl.dim_type.in_)
        ns = rng.dim(isl.dim_type.in_)
        arr = rng.get_tuple_name(isl.dim_type.out)
        for pt in points(mp.wrap().flatten()):
            out.add(((src, pt[:na]), (sink, pt[na:na + ns]), (arr, pt[na + ns:])))
    return out

# }}}


CASES = [("floyd", {"n": 9}), ("jacobi2d", {"tsteps": 3, "n": 8}),
         ("triangular", {"n": 8}), ("matmul", {"ni": 6, "nj": 4, "nk": 3}),
         ("imperfect", {"n": 8}), ("heat3d", {"tsteps": 2, "n": 6}), ("vec1d", {"n": 9}),
         ("minmax", {"n": 9, "w": 2}), ("prefix_sum", {"n": 7}), ("floyd_plain", {"n": 4}),
         ("mixed", {"n": 6}),
         ("guarded", {"n": 6}), ("scratch", {"tsteps": 2, "n": 5})]


@pytest.fixture(scope="module")
def compiled():
    cache = {}

    def get(name):
        if name not in cache:
            s = kernel(name)
            p = plan(s)
            d = dependences(s)
            cache[name] = (s, p, d, plan_flow(s, p, deps=d), parallel_flow(s, p, d))
        return cache[name]
    return get


def _ids(cases):
    return [f"{c[0]}-{'-'.join(map(str, c[1].values()))}" for c in cases]


@pytest.mark.parametrize("name,params", CASES, ids=_ids(CASES))
def test_parallel_flow_matches_simulation(compiled, name, params):
    s, p, d, _, pflow = compiled(name)
    params = {k: v for k, v in params.items() if k in s.int_params}
    flows, _ = simulate(s, p, params)
    assert pairs(pflow, s, params) == set(flows)
    if name != "floyd":             # no pragma over a carried dependence: nothing changes
        assert pflow.is_equal(d.flow_full)


def _bbox_check(box, variables, args, elems, fixed):
    lo, hi = box.evaluator(variables)(*args)
    if not elems:
        assert any(a > b for a, b in zip(lo, hi)), (box.array, args, lo, hi)
        assert compile_lambda(variables, box.empty)(*args)
        return
    nd = len(next(iter(elems)))
    assert lo == tuple(min(e[d] for e in elems) for d in range(nd)), (box.array, args)
    assert hi == tuple(max(e[d] for e in elems) for d in range(nd)), (box.array, args)
    assert not compile_lambda(variables, box.empty)(*args)
    vol = 1
    for a, b in zip(lo, hi):
        vol *= b - a + 1
    assert compile_lambda(variables, box.inexact_cond)(*args) == (vol != len(elems))
    assert box.exact <= (vol == len(elems))
    # the isl set itself is exact
    assert set(points(box.set.intersect_params(fixed))) == set(elems)


def _box_points(box, variables, args):
    lo, hi = box.evaluator(variables)(*args)
    return set(itertools.product(*(range(a, b + 1) for a, b in zip(lo, hi))))


def _cover_check(af, variables, args, fo):
    """The pieces cover the flow-out set; exact pieces hold nothing else; the chosen
    boxes are exactly the set when they are all exact."""
    if af.flow_out_pieces:
        got = set()
        for pc in af.flow_out_pieces:
            pts = _box_points(pc, variables, args)
            assert not pc.exact or pts <= fo
            got |= pts
        assert fo <= got
    chosen = af.flow_out_boxes
    got = set().union(*(_box_points(b, variables, args) for b in chosen))
    assert fo <= got
    if all(b.exact for b in chosen):
        assert got == fo


@pytest.mark.parametrize("name,params", CASES, ids=_ids(CASES))
def test_flow_out_and_write_out_match_simulation(compiled, name, params):
    s, p, _, nflows, _ = compiled(name)
    params = {k: v for k, v in params.items() if k in s.int_params}
    flows, last = simulate(s, p, params)
    by_src = {}
    for w, y, e in flows:
        by_src.setdefault(w, []).append((y, e))
    writer_of = {}
    for e, w in last.items():
        writer_of.setdefault(w, []).append(e)
    band_pos = {st: len(n.host_loops) for n in p.nests if n.band for st in n.statements}
    for nf in nflows:
        tl = nf.tiling
        h = len(tl.host)
        insts = []
        for sname in tl.statements:
            st = s.statement(sname)
            insts += [(sname, it) for it in points(st.domain.intersect_params(
                s.params_set(params)))]
        hosts = sorted({it[:h] for _, it in insts})
        p0s = [it[h] for _, it in insts] if tl.band else [0]
        for T in (2, 3):
            tiles = range(min(p0s, default=0) // T - 1, max(p0s, default=0) // T + 2) \
                if tl.band else [None]
            for host in hosts:
                for t in tiles:
                    env = dict(params, **dict(zip(tl.host, host)))
                    if tl.band:
                        lb, ub = tile_bounds(t, T)
                        env[tl.lb], env[tl.ub] = lb, ub
                        mine = [x for x in insts if x[1][:h] == host and lb <= x[1][h] <= ub]

                        def same(y):
                            pos = band_pos.get(y[0])
                            return pos is not None and lb <= y[1][pos] <= ub
                    else:
                        mine = [x for x in insts if x[1][:h] == host]

                        def same(y):
                            return y[0] in tl.statements and y[1][:h] == host
                    args = [env[v] for v in tl.variables]
                    fixed = params_set(env)
                    for af in nf.arrays:
                        fo_parts, wo_parts = {}, {}
                        for x in mine:
                            acc = s.statement(x[0]).write
                            if acc.array != af.array:
                                continue
                            fo_parts.setdefault(acc.id, set()).update(
                                e[1] for y, e in by_src.get(x, ()) if not same(y))
                            wo_parts.setdefault(acc.id, set()).update(
                                e[1] for e in writer_of.get(x, ()))
                        fo = set().union(*fo_parts.values())
                        wo = set().union(*wo_parts.values())
                        _bbox_check(af.flow_out, tl.variables, args, fo, fixed)
                        _bbox_check(af.write_out, tl.variables, args, wo, fixed)
                        for part in af.flow_out_parts:
                            _bbox_check(part, tl.variables, args,
                                        fo_parts.get(part.access_id, set()), fixed)
                        for part in af.write_out_parts:
                            _bbox_check(part, tl.variables, args,
                                        wo_parts.get(part.access_id, set()), fixed)
                        _cover_check(af, tl.variables, args, fo)


@pytest.mark.parametrize("name,params", CASES, ids=_ids(CASES))
def test_sourced_within_matches_simulation(compiled, name, params):
    """An array said to have no live-in reads (no read-in needed) has every read of every
    tile's instances take a value written by an instance of the same tile (under the
    parallel semantics), at every tile size tried."""
    s, p, _, nflows, _ = compiled(name)
    params = {k: v for k, v in params.items() if k in s.int_params}
    flows, _ = simulate(s, p, params)
    source = {(y, e): w for w, y, e in flows}
    for nf in nflows:
        tl = nf.tiling
        h = len(tl.host)
        for sname in tl.statements:
            st = s.statement(sname)
            for it in points(st.domain.intersect_params(s.params_set(params))):
                env = dict(params, **dict(zip(st.iterators, it)))
                me = (sname, it)
                for a in st.reads:
                    if a.array not in nf.sourced_within:
                        continue
                    e = (a.array, tuple(ix.evaluate(env) for ix in a.index))
                    w = source.get((me, e))
                    assert w is not None, (name, me, e, "live-in")
                    # the same tile at any tile size: same statement group, same host
                    # iteration, same outermost band iterator
                    assert w[0] in tl.statements and w[1][:h] == it[:h], (name, me, e, w)
                    if tl.band:
                        assert w[1][h] == it[h], (name, me, e, w)


def test_sourced_within_of_scratch_arrays(compiled):
    _, _, _, nflows, _ = compiled("scratch")
    assert [set(nf.sourced_within) for nf in nflows] == [{"T"}, {"u", "w"}, set()]


def test_floyd_flow_out_is_row_k_plus_1(compiled):
    s, p, _, (nf,), _ = compiled("floyd")
    af = nf.of_array("path")
    assert af.flow_out.exact
    f = af.flow_out.evaluator(nf.tiling.variables)
    n, T = 10, 4
    for k in range(n):
        for t in range(3):
            lb, ub = tile_bounds(t, T)
            lo, hi = f(n, k, lb, ub)
            if lb <= k + 1 <= ub and k + 1 < n:
                assert (lo, hi) == ((k + 1, 0), (k + 1, n - 1))
            else:
                assert lo[0] > hi[0] or lo[1] > hi[1], (k, t, lo, hi)
    # a tile holding every row sends nothing
    lo, hi = f(n, 3, 0, 15)
    assert lo[0] > hi[0]
    wo = af.write_out.evaluator(nf.tiling.variables)
    assert wo(n, n - 1, 4, 7) == ((4, 0), (7, n - 1))
    assert wo(n, n - 2, 4, 7)[0][0] > wo(n, n - 2, 4, 7)[1][0]


def test_jacobi_flow_out_is_halo_rows(compiled):
    s, p, _, nflows, _ = compiled("jacobi2d")
    a = nflows[1].of_array("A")                 # A = B, read by the next time step
    f = a.flow_out.evaluator(nflows[1].tiling.variables)
    assert f(5, 20, 1, 8, 11) == ((8, 1), (11, 18))        # rows lb and ub: not a box
    assert not a.flow_out.exact
    rows = [pc.evaluator(nflows[1].tiling.variables)(5, 20, 1, 8, 11)
            for pc in a.flow_out_boxes]
    assert sorted(rows) == [((8, 1), (8, 18)), ((11, 1), (11, 18))]   # two exact rows
    assert nflows[0].of_array("B").flow_out.empty == "True"

# vim: foldmethod=marker

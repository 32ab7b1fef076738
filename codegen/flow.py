"""Flow-out and write-out sets of a tile (paper Section 8, Table III).

*Flow-out* (``gpu_to_cpu_flowout``): the elements a tile writes whose value is read later
by an instance in **another tile index**. The tile grid is global (:mod:`bbmm.codegen.tiling`):
tile ``t`` holds ``p0`` in ``[lb, ub]`` in every nest at every host iteration and always
runs on the same device, so a sink needs no flow-out when it lies in a band nest with its
outermost band iterator in ``[lb, ub]`` (any nest, any later host iteration). A sink in an
empty-band nest, or outside any band, counts as another tile.

*Write-out* (``gpu_to_cpu_writeout``): the elements a tile writes that no later write in
the program overwrites (live-out, recipe 5).

Both are parametric in the nest's :attr:`bbmm.codegen.tiling.NestTiling.variables`
(``n, k, lb, ub``) and come per array as :class:`SetBox` es (:class:`bbmm.codegen.tiling.ParamBox`
plus the array): the bounding box of the whole set, one box per write access (source
statement) and, for flow-out, one box per disjunct of the set (Jacobi's halo rows ``lb``
and ``ub`` are two exact boxes where their hull is not exact);
:attr:`ArrayFlow.flow_out_boxes` picks an exact covering list when there is one.

An empty-band nest runs as one work-item whose device is not tied to a tile index, so only
its own instance (same host iteration) counts as "the same tile" for it: the choice that
never misses a transfer whatever device the runtime picks.

**Parallel semantics.** A band loop asserted parallel by a pragma may still carry a
sequential dependence (Floyd-Warshall rewrites row k with its own values inside iteration
k). On the devices, the instances of one band instance run concurrently, so a read sees
the writes of earlier host iterations and of its own band point only. :func:`parallel_flow`
computes the value-based flow under that order: it equals ``deps.flow_full`` when the band
loops carry no dependence, and for Floyd-Warshall it makes row ``k + 1`` (written in
iteration ``k``) the source of the reads of row ``k + 1`` in iteration ``k + 1``, so the
flow-out of iteration k is row k+1 from the tile that holds it, nothing from the others.

.. autodata:: MAX_PIECES
.. autoclass:: SetBox
.. autoclass:: ArrayFlow
.. autoclass:: NestFlow
.. autofunction:: parallel_flow
.. autofunction:: last_writer
.. autofunction:: same_tile
.. autofunction:: nest_flow
.. autofunction:: plan_flow
.. autofunction:: edge_writers
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import islpy as isl

from bbmm.codegen.deps import Dependences, Nest, Plan, carried, dependences
from bbmm.codegen.scop import Scop
from bbmm.codegen.tiling import NestTiling, ParamBox, param_box, tile_plan

__all__ = ["SetBox", "ArrayFlow", "NestFlow", "MAX_PIECES", "parallel_flow", "last_writer",
           "same_tile", "unordered", "nest_flow", "plan_flow", "edge_writers"]


@dataclass(frozen=True)
class SetBox(ParamBox):
    """Bounding box of a flow-out or write-out set of one array for one tile."""

    array: str
    access_id: int | None
    """The write access (source statement) the set is restricted to; None for all of the
    nest's writes to the array."""


@dataclass(frozen=True)
class ArrayFlow:
    """Flow-out and write-out of one array for one tile of a nest."""

    array: str
    flow_out: SetBox
    """Bounding box of the whole flow-out set of the array."""
    flow_out_parts: tuple[SetBox, ...]
    """One box per write access of the nest to the array, in access-id order (their union
    is the flow-out set; use them when :attr:`flow_out` is not exact)."""
    flow_out_pieces: tuple[SetBox, ...]
    """One box per disjunct (basic set) of the coalesced flow-out set, when it has at most
    :data:`MAX_PIECES` of them (else empty): Jacobi's rows ``lb`` and ``ub``, each exact
    where the hull is not. Disjuncts may overlap and may be empty at a given tile."""
    write_out: SetBox
    write_out_parts: tuple[SetBox, ...]

    @property
    def flow_out_boxes(self) -> tuple[SetBox, ...]:
        """The boxes to copy out: the hull when it is exact, else the pieces when they all
        are, else the per-write-access parts when they all are, else the hull."""
        for boxes in ((self.flow_out,), self.flow_out_pieces, self.flow_out_parts):
            if boxes and all(b.exact for b in boxes):
                return boxes
        return (self.flow_out,)


@dataclass(frozen=True)
class NestFlow:
    tiling: NestTiling = field(repr=False)
    arrays: tuple[ArrayFlow, ...]
    """Arrays written by the nest, in order of their first write access."""
    flow_out_set: isl.UnionSet = field(repr=False)
    """``[n, k, lb, ub] -> { path[a, b] : ... }``, all arrays."""
    write_out_set: isl.UnionSet = field(repr=False)
    sourced_within: frozenset[str] = frozenset()
    """Arrays the nest writes whose every read in a tile takes a value the same tile wrote
    before it (under the parallel semantics): nothing of them is live-in, e.g.
    blackscholes' ``d1`` and ``d2``, written then read by each point."""

    def of_array(self, array: str) -> ArrayFlow:
        return next(a for a in self.arrays if a.array == array)

# {{{ dependences under parallel semantics


def _dummies(n: int, prefix: str) -> list[str]:
    return [f"{prefix}{j}" for j in range(n)]


def unordered(scop: Scop, plan: Plan) -> isl.UnionMap:
    """Pairs of instances that run concurrently: the same band nest at the same host
    iteration, different band points. ``{ S0[k, i, j] -> S0[k, i', j'] : i' != i }``."""
    pieces = []
    for nest in plan.nests:
        if not nest.band:
            continue
        h, b = len(nest.host_loops), len(nest.band)
        for a in nest.statements:
            for c in nest.statements:
                sa, sc = scop.statement(a), scop.statement(c)
                xs, ys = _dummies(len(sa.iterators), "x"), _dummies(len(sc.iterators), "y")
                eq = [f"{xs[d]} = {ys[d]}" for d in range(h)]
                ne = " or ".join(f"{xs[d]} != {ys[d]}" for d in range(h, h + b))
                pieces.append(f"{a}[{', '.join(xs)}] -> {c}[{', '.join(ys)}] : "
                              + " and ".join(eq + [f"({ne})"]))
    return isl.UnionMap("{ " + "; ".join(pieces) + " }") if pieces else isl.UnionMap("{ }")


def parallel_flow(scop: Scop, plan: Plan, deps: Dependences | None = None) -> isl.UnionMap:
    """Value-based flow ``{ src -> [sink -> element] }`` when the instances of each band
    nest instance run concurrently (see the module docstring).

    Starts from ``deps.flow_full``; only the reads whose sequential source runs concurrently
    with them get a new source: the latest (in program order) write of the element that is
    ordered before them, or none.
    """
    deps = deps or dependences(scop)
    full = deps.flow_full
    conc = unordered(scop, plan)
    if conc.is_empty():
        return full
    # isl: uncurry turns A -> [B -> C] into [A -> B] -> C, curry goes back
    pairs = full.uncurry()                                # { [src -> sink] -> e }
    bad = pairs.intersect_domain(conc.wrap())
    if bad.is_empty():
        return full
    good = pairs.subtract(bad).curry()
    sched, writes = scop.schedule(), scop.writes()
    sink_elem = bad.domain_factor_range()                 # { sink -> e }
    cand = sink_elem.range_map().apply_range(writes.reverse())   # { [sink -> e] -> src }
    cand = cand.reverse().uncurry()                       # { [src -> sink] -> e }
    before = sched.lex_lt_union_map(sched)
    cand = cand.intersect_domain(before.wrap()).subtract(
        cand.intersect_domain(conc.wrap())).curry()       # { src -> [sink -> e] }
    latest = cand.reverse().apply_range(sched).lexmax().apply_range(sched.reverse())
    return good.union(latest.reverse()).coalesce()


def last_writer(scop: Scop) -> isl.UnionMap:
    """``{ path[a, b] -> S0[k, i, j] }``: the instance that writes each element last, for
    the arrays the caller sees (a local array, an expanded temporary, is dead at the end)."""
    sched = scop.schedule()
    last = scop.writes().reverse().apply_range(sched).lexmax().apply_range(sched.reverse())
    for a in scop.arrays:
        if a.local:
            dead = isl.Set(f"{{ {a.name}[{', '.join(f'_a{d}' for d in range(a.ndim))}] }}")
            last = last.subtract_domain(isl.UnionSet.from_set(dead))
    return last

# }}}

# {{{ flow-out and write-out of a tile


def same_tile(scop: Scop, plan: Plan, tiling: NestTiling) -> isl.UnionSet:
    """Sink instances on the source tile's device without communication:
    ``[lb, ub] -> { S[...] : lb <= p0 <= ub }`` over every band nest's statements (the
    global grid), or the source's own instance for an empty-band nest."""
    if not tiling.band:
        return tiling.tile
    out = isl.UnionSet("{ }")
    lb, ub = tiling.lb, tiling.ub
    for nest in plan.nests:
        if not nest.band:
            continue
        p = len(nest.host_loops)
        for s in nest.statements:
            st = scop.statement(s)
            xs = _dummies(len(st.iterators), "_y")
            out = out.union(isl.UnionSet(
                f"[{lb}, {ub}] -> {{ {s}[{', '.join(xs)}] : {lb} <= {xs[p]} <= {ub} }}"))
    return out.intersect(scop.domain())


MAX_PIECES = 4
"""Most disjuncts of a flow-out set that get one box each (:attr:`ArrayFlow.flow_out_pieces`)."""


def _extract(sets: isl.UnionSet, tiling: NestTiling, scop: Scop, array: str) -> isl.Set:
    nd = scop.array(array).ndim
    names = ", ".join(f"_a{d}" for d in range(nd))
    params = ", ".join(tiling.variables)
    space = isl.Set(f"[{params}] -> {{ {array}[{names}] : false }}").get_space()
    return sets.extract_set(space)


def _box(S: isl.Set, tiling: NestTiling, within: isl.Set, array: str, access_id: int | None
         ) -> SetBox:
    box = param_box(S, tiling.context, within=within, loose_divs=tiling.loose_divs)
    return SetBox(**{f: getattr(box, f) for f in ParamBox.__dataclass_fields__},
                  array=array, access_id=access_id)


def _boxes(sets: isl.UnionSet, tiling: NestTiling, scop: Scop, within: isl.Set, array: str,
           access_id: int | None) -> SetBox:
    return _box(_extract(sets, tiling, scop, array), tiling, within, array, access_id)


def _pieces(sets: isl.UnionSet, tiling: NestTiling, scop: Scop, within: isl.Set, array: str
            ) -> tuple[SetBox, ...]:
    S = _extract(sets, tiling, scop, array).intersect_params(tiling.context).coalesce()
    bsets = S.get_basic_sets()
    if len(bsets) > MAX_PIECES:
        return ()
    return tuple(_box(isl.Set.from_basic_set(b), tiling, within, array, None) for b in bsets)


def nest_flow(scop: Scop, plan: Plan, tiling: NestTiling, pflow: isl.UnionMap | None = None,
              lastw: isl.UnionMap | None = None) -> NestFlow:
    """Flow-out and write-out boxes of one tile of a nest (``pflow``: :func:`parallel_flow`,
    ``lastw``: :func:`last_writer`, computed when not given)."""
    pflow = parallel_flow(scop, plan) if pflow is None else pflow
    lastw = last_writer(scop) if lastw is None else lastw
    other = scop.domain().subtract(same_tile(scop, plan, tiling))
    fo_rel = pflow.intersect_domain(tiling.tile).intersect_range_wrapped_domain_union_set(other)
    wo_rel = lastw.intersect_range(tiling.tile)
    fo_by, wo_by = {}, {}
    writes = []
    for s in tiling.statements:
        w = scop.statement(s).write
        writes.append(w)
        src = isl.UnionSet.from_set(tiling.tile_of(s))
        fo_by[w.id] = fo_rel.intersect_domain(src).range().unwrap().range().coalesce()
        wo_by[w.id] = wo_rel.intersect_range(src).domain().coalesce()
    writes.sort(key=lambda a: a.id)
    fo_all = fo_rel.range().unwrap().range().coalesce()
    wo_all = wo_rel.domain().coalesce()
    arrays = []
    for arr in dict.fromkeys(w.array for w in writes):
        ws = [w for w in writes if w.array == arr]
        within = scop.bounds(arr)
        arrays.append(ArrayFlow(
            array=arr,
            flow_out=_boxes(fo_all, tiling, scop, within, arr, None),
            flow_out_parts=tuple(_boxes(fo_by[w.id], tiling, scop, within, arr, w.id)
                                 for w in ws),
            flow_out_pieces=_pieces(fo_all, tiling, scop, within, arr),
            write_out=_boxes(wo_all, tiling, scop, within, arr, None),
            write_out_parts=tuple(_boxes(wo_by[w.id], tiling, scop, within, arr, w.id)
                                  for w in ws)))
    return NestFlow(tiling, tuple(arrays), fo_all, wo_all,
                    sourced_within=_sourced_within(scop, tiling, pflow,
                                                   [a.array for a in arrays]))


def _sourced_within(scop: Scop, tiling: NestTiling, pflow: isl.UnionMap,
                    arrays: Sequence[str]) -> frozenset[str]:
    """The ``arrays`` without live-in reads in a tile: the tile's reads
    ``[n, k, lb, ub] -> { S[...] -> A[...] }`` minus those whose source (``pflow``) lies
    in the same tile, empty for the array at every point of the tile context."""
    reads = scop.reads().intersect_domain(tiling.tile)
    inner = pflow.intersect_domain(tiling.tile).range().unwrap().intersect_domain(tiling.tile)
    live = reads.subtract(inner).intersect_params(tiling.context).range()
    touched: set[str] = set()
    live.foreach_set(lambda s: touched.add(s.get_tuple_name()) if not s.is_empty() else None)
    return frozenset(a for a in arrays if a not in touched)


def plan_flow(scop: Scop, plan: Plan, tilings: Sequence[NestTiling] | None = None,
              deps: Dependences | None = None) -> tuple[NestFlow, ...]:
    """:func:`nest_flow` for every nest of a plan."""
    if tilings is None:
        tilings = tile_plan(scop, plan)
    pflow = parallel_flow(scop, plan, deps)
    lastw = last_writer(scop)
    return tuple(nest_flow(scop, plan, t, pflow, lastw) for t in tilings)

# }}}

# {{{ which rows of a tile write its flow-out


def edge_writers(scop: Scop, nest: Nest, tiling: NestTiling, deps: Dependences
                 ) -> dict[str, tuple[int, int, int]]:
    """Per array the nest writes, ``(d, cmin, cmax)`` when every write access to it has
    dimension ``d`` equal to the tiled iterator plus a constant in ``[cmin, cmax]``: element
    ``x`` along ``d`` is then written only where the tiled iterator ``i`` lies in
    ``[x - cmax, x - cmin]`` (``B[i][j]``: ``(0, 0, 0)``).

    The runtime uses it to run the rows of a tile that write its flow-out first, so the
    flow-out travels while the rest of the tile computes (:meth:`bbmm.runtime.Runtime.
    _edges`). Running a tile's rows as two launches, one after the other, is the
    same computation only when no dependence joins two rows: empty when the tiled loop
    carries one (Floyd's row ``k``, parallel by its pragma), or for an empty band.
    (Splitting Floyd's tiles anyway, its rows in any order being one of its executions,
    was measured slower over processes: 0.710 against 0.623 ms per ``k`` at n=16384 on
    four H200s, the owner of row ``k + 1`` paying a launch more per ``k``; on four H100s,
    with the split proven safe and the rows above and below row ``k + 1`` in one launch,
    0.483 against 0.495 ms per ``k``, medians of four rounds that changed which tree went
    first, within the 0.95 a tree gives against itself:
    ``results/h100x4-2026-11-27/rounds/``. Once steps were moved on without their tiles,
    the split, every loop asserted parallel by its pragma given its writers, made Floyd
    1.63x slower on four H100s: 0.587 against 0.360 ms per ``k``, medians of three
    alternating rounds, ranges apart: ``results/h100x4-2026-11-28/split/``. With the rows
    either side of row ``k + 1`` in one launch, still 1.28x slower on four H200s, 0.286
    against 0.224 ms per ``k``: the owner's host, not its device, sets the pace,
    ``results/h200x4-2026-11-28/split-again/``.)
    """
    if not tiling.band or not carried(scop, nest.band[0], deps).is_empty():
        return {}
    it = tiling.band[0]
    per: dict[str, list[dict[int, int]]] = {}
    for s in nest.statements:
        w = scop.statement(s).write
        per.setdefault(w.array, []).append(
            {d: e.const for d, e in enumerate(w.index) if e.terms == ((it, 1),) and not e.divs})
    out = {}
    for a, forms in per.items():
        common = set(forms[0]).intersection(*forms[1:])
        if common:
            d = min(common)
            cs = [f[d] for f in forms]
            out[a] = (d, min(cs), max(cs))
    return out

# }}}

# vim: foldmethod=marker

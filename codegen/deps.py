"""Dependences, parallel loops and the kernel-nest plan of a :class:`bbmm.codegen.scop.Scop`.

.. autofunction:: dependences
.. autofunction:: carried
.. autofunction:: parallel_loops
.. autofunction:: plan

Flow (RAW) dependences are value-based (isl's ``compute_flow`` with every write a must
source); WAR and WAW are memory-based, which is conservative without array expansion.
A loop is parallel when no dependence joins two instances that agree on the iterators of
every enclosing loop and differ in this loop's iterator. With only value-based RAW this
test would give the same answer (a killed memory RAW ``w1 -> r`` across iterations
implies a carried WAW ``w1 -> w2`` or a carried flow ``w2 -> r``); we use the memory-based
RAW anyway so :attr:`Dependences.all` is the plain union of the three kinds.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import islpy as isl

from bbmm.codegen.scop import LoopNode, Node, Scop, Statement


@dataclass(frozen=True)
class Dependences:
    """Dependences between statement instances, all ``[n] -> { S0[k, i, j] -> S0[k', i', j'] }``
    (source before sink in the original schedule)."""

    flow: isl.UnionMap
    """Value-based RAW: the last write before each read of the same element."""
    flow_full: isl.UnionMap
    """The same with the element: ``{ S0[k, i, j] -> [S0[k', i', j'] -> path[a, b]] }``."""
    raw: isl.UnionMap
    """Memory-based RAW: any earlier write of the element read."""
    war: isl.UnionMap
    """Memory-based WAR: a read, then a later write of the same element."""
    waw: isl.UnionMap
    """Memory-based WAW: two writes of the same element."""

    @property
    def all(self) -> isl.UnionMap:
        """``raw | war | waw``: every ordering constraint between instances."""
        return self.raw.union(self.war).union(self.waw)


@dataclass(frozen=True)
class ValueFlow:
    """What :func:`value_flow` finds."""

    flow: isl.UnionMap
    """``{ S0[k, i, j] -> S1[k', i', j'] }``: the write each read takes its value from."""
    full: isl.UnionMap
    """The same with the element: ``{ S0[k, i, j] -> [S1[k', i', j'] -> A[a, b]] }``."""
    no_source: isl.UnionMap | None
    """``{ S1[k', i', j'] -> A[a, b] }``: reads no write may reach; None when unknown."""


@contextlib.contextmanager
def isl_quota(ops: int) -> Iterator[None]:
    """isl's default context stops (raising :class:`islpy.Error`) after ``ops`` operations
    within the block; the limit is lifted again after it."""
    ctx = isl.DEFAULT_CONTEXT
    ctx.reset_operations()
    ctx.set_max_operations(ops)
    try:
        yield
    finally:
        ctx.set_max_operations(0)
        ctx.reset_operations()


FLOW_OPERATIONS = 5_000_000
"""isl operations (about a second) that the exact value flow of a program may take: every
kernel of ``polybench/`` and ``tests/kernels/`` takes less than 500 thousand, most less
than 200 thousand, where a random program with a data-dependent condition in a stepped
loop (``tests/kernels/slow_flow.c``) took minutes. Past this the flow is
over-approximated, as where isl fails on the relations."""


_SEEN: list[tuple[str, tuple[isl.UnionMap | isl.Set, ...], Any]] = []
"""The last few value flows and dependences found, by what they were found from: the
compiler asks again for those of a program it has not changed (its parallel loops, then
its nests; a reduction's candidates). On the development machine
``tests/kernels/slow_flow.c`` compiles in 6.8-6.9 s with them against 14.4-14.7,
``tests/kernels/reductions.c`` in 18.0-18.7 s against 24.6-25.3, the kernels of
``polybench/`` and ``tests/kernels/pb42/`` in 10.9-11.3 s against 11.9-12.3 (two runs of
each, in turn)."""


def _seen(kind: str, given: tuple[isl.UnionMap | isl.Set, ...], find: Callable[[], Any]
          ) -> Any:
    """``find()``, or what it gave for equal relations before (isl's relations are values:
    equal ones have the same flow and dependences)."""
    for k, g, got in _SEEN:
        if k == kind and all(a.is_equal(b) for a, b in zip(g, given)):
            return got
    got = find()
    _SEEN.insert(0, (kind, given, got))
    del _SEEN[16:]
    return got


def value_flow(reads: isl.UnionMap, writes: isl.UnionMap, sched: isl.UnionMap) -> ValueFlow:
    """:func:`_value_flow`, found once for equal relations (:func:`_seen`)."""
    return _seen("flow", (reads, writes, sched), lambda: _value_flow(reads, writes, sched))


def _value_flow(reads: isl.UnionMap, writes: isl.UnionMap, sched: isl.UnionMap) -> ValueFlow:
    """isl's ``compute_flow``, every write a must source: the last write before each read.

    isl fails on some access relations with existentials (``affine expression involves
    some of the domain dimensions``: a subscript of a stepped loop's iterator whose first
    value holds a remainder, ``mod[g][g]`` for ``g = i + 1 + h % 2; ...; g += 2``); then
    the relations lose their divisions (each access then covers a few more elements) and
    every write becomes a may source, which kills no other: more pairs, never fewer,
    restricted back to the instances and elements that exist. Every use of the flow
    (webs of expanded scalars, flow-out sets) stays exact for the program, at the cost
    of some needless transfers."""
    try:
        with isl_quota(FLOW_OPERATIONS):
            info = (isl.UnionAccessInfo.from_sink(reads).set_must_source(writes)
                    .set_schedule_map(sched).compute_flow())
        return ValueFlow(info.get_may_dependence(), info.get_full_must_dependence(),
                         info.get_may_no_source())
    except isl.Error:
        pass
    info = (isl.UnionAccessInfo.from_sink(reads.remove_divs())
            .set_may_source(writes.remove_divs()).set_schedule_map(sched).compute_flow())
    # { src -> [sink -> e] }: (src, e) a true write, (sink, e) a true read
    full = (info.get_full_may_dependence().range_reverse().uncurry()   # [src -> e] -> sink
            .intersect_domain(writes.wrap()).curry().range_reverse()
            .intersect_range(reads.wrap()))
    return ValueFlow(full.range_factor_domain(), full, None)


def dependences(scop: Scop) -> Dependences:
    """Compute the flow and memory dependences of a scop (restricted to its context),
    once for equal relations (:func:`_seen`)."""
    reads, writes, sched, ctx = scop.reads(), scop.writes(), scop.schedule(), scop.context
    return _seen("deps", (reads, writes, sched, ctx),
                 lambda: _dependences(reads, writes, sched, ctx))


def _dependences(reads: isl.UnionMap, writes: isl.UnionMap, sched: isl.UnionMap,
                 ctx: isl.Set) -> Dependences:
    info = value_flow(reads, writes, sched)
    before = sched.lex_lt_union_map(sched)             # a -> b : sched(a) << sched(b)
    raw = writes.apply_range(reads.reverse()).intersect(before)
    war = reads.apply_range(writes.reverse()).intersect(before)
    waw = writes.apply_range(writes.reverse()).intersect(before)
    return Dependences(
        flow=info.flow.intersect_params(ctx).coalesce(),
        flow_full=info.full.intersect_params(ctx).coalesce(),
        raw=raw.intersect_params(ctx).coalesce(),
        war=war.intersect_params(ctx).coalesce(),
        waw=waw.intersect_params(ctx).coalesce())


def carried(scop: Scop, loop_id: int, deps: Dependences | isl.UnionMap | None = None
            ) -> isl.UnionMap:
    """The dependences carried by a loop: pairs of instances of statements inside it that
    agree on the iterators of all enclosing loops and differ in this loop's iterator.

    Returned in statement space, ``{ S0[k, i, j] -> S0[k, i', j'] : i' != i }``.
    ``deps`` defaults to :attr:`Dependences.all`.
    """
    if deps is None:
        deps = dependences(scop)
    dep_map = deps.all if isinstance(deps, Dependences) else deps
    node = scop.loop_node(loop_id)
    d = node.loop.depth
    stmts = list(node.statements())
    if not stmts:
        return isl.UnionMap("{ }")
    pieces = []
    for a in stmts:
        for b in stmts:
            xs = [f"x{m}" for m in range(len(a.iterators))]
            ys = [f"y{m}" for m in range(len(b.iterators))]
            eq = [f"x{m} = y{m}" for m in range(d)]
            pieces.append(f"{a.name}[{', '.join(xs)}] -> {b.name}[{', '.join(ys)}] : "
                          + " and ".join(eq + [f"x{d} != y{d}"]))
    return dep_map.intersect(isl.UnionMap("{ " + "; ".join(pieces) + " }"))


def parallel_loops(scop: Scop, deps: Dependences | None = None, pragmas: bool = True
                   ) -> dict[int, bool]:
    """``{loop id: parallel?}``; a loop with ``#pragma omp parallel for`` (or
    ``#pragma bbmm parallel``) is parallel whatever the analysis says when ``pragmas``."""
    if deps is None:
        deps = dependences(scop)
    every = deps.all
    out = {}
    for lp in scop.loops():
        out[lp.id] = (pragmas and lp.parallel_pragma) or carried(scop, lp.id, every).is_empty()
    return out


@dataclass(frozen=True)
class Nest:
    """One kernel: a band of parallel loops (outermost first, at most 3) mapped to a grid of
    work-items, run once per iteration of its enclosing serial (host) loops.

    An empty band means the statements run as a single work-item on one device.
    """

    id: int
    band: tuple[int, ...]
    """Loop ids of the parallel band (the first is the distributed, tiled loop)."""
    statements: tuple[str, ...]
    """Statement names in textual order."""
    host_loops: tuple[int, ...]
    """Enclosing serial loops, outermost first; they run on the host."""
    inner_loops: tuple[int, ...] = ()
    """Loops below the band (or any loop of an empty-band nest): sequential in a work-item."""


@dataclass(frozen=True)
class Plan:
    """Where each loop runs: serial loops on the host, parallel bands as kernels."""

    serial_loops: tuple[int, ...]
    """Loops run on the host (not inside any kernel), preorder."""
    nests: tuple[Nest, ...]
    """Kernel nests in textual order."""
    parallel: tuple[int, ...]
    """Ids of all loops considered parallel (analysis or pragma)."""

    def nest_of(self, statement: str) -> Nest:
        return next(n for n in self.nests if statement in n.statements)


def plan(scop: Scop, parallel: Mapping[int, bool] | None = None, max_band: int = 3) -> Plan:
    """Walk the loop tree from the root and decide where each loop runs.

    * A parallel loop met on a path starts a kernel nest whose band grows with perfectly
      nested parallel loops (up to ``max_band``); the loops below the band are
      ``inner_loops``.
    * A non-parallel loop with some parallel loop below it runs on the host
      (``serial_loops``) and the walk goes on inside it.
    * A non-parallel loop with *no* parallel loop anywhere below it (Floyd-Warshall without
      the pragma, a prefix sum) is not worth n^d host iterations of a one-work-item
      kernel: it and its whole subtree form one empty-band nest whose loops all run
      sequentially inside a single work-item (``inner_loops``).
    * Statements met outside any loop of the above kinds form, per run of consecutive
      statements, a nest with an empty band.
    """
    par = parallel_loops(scop) if parallel is None else dict(parallel)
    nests: list[Nest] = []
    serial: list[int] = []

    def has_parallel(node: LoopNode) -> bool:
        return any(par[lp.id] for lp in node.loops())

    def walk(nodes: tuple[Node, ...], host: tuple[int, ...]) -> None:
        pending: list[str] = []

        def flush() -> None:
            if pending:
                nests.append(Nest(len(nests), (), tuple(pending), host, ()))
                pending.clear()

        for n in nodes:
            if isinstance(n, Statement):
                pending.append(n.name)
                continue
            flush()
            if not par[n.loop.id]:
                if has_parallel(n):
                    serial.append(n.loop.id)
                    walk(n.children, host + (n.loop.id,))
                else:                      # all-sequential subtree: one work-item kernel
                    nests.append(Nest(len(nests), (), tuple(s.name for s in n.statements()),
                                      host, tuple(lp.id for lp in n.loops())))
                continue
            band, inner = [n.loop.id], n
            while len(band) < max_band and len(inner.children) == 1 \
                    and isinstance(inner.children[0], LoopNode) \
                    and par[inner.children[0].loop.id]:
                inner = inner.children[0]
                band.append(inner.loop.id)
            rest = tuple(lp.id for lp in n.loops() if lp.id not in band)
            nests.append(Nest(len(nests), tuple(band), tuple(s.name for s in n.statements()),
                              host, rest))
        flush()

    walk(scop.tree, ())
    return Plan(tuple(serial), tuple(nests), tuple(k for k, v in sorted(par.items()) if v))

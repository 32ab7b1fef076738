"""Scalar expansion: scalars carried across iterations become local arrays.

A scalar temporary assigned in a loop (or under an ``if``) below its declaration carries a
value from one iteration to another: a reduction ``float s = 0; for (j ...) s += A[i][j];``,
PolyBench's ``temp2`` declared before the scop, deriche's filter state. The front end
(:mod:`bbmm.codegen.frontend`) models it as a local array (:class:`bbmm.codegen.scop.Array` with
``local`` set), subscripted by the iterators of the loops that need their own copy of it;
:func:`expand_scalars` decides which, from the value flow of a first model, and the
builder is run again with the decision (a :data:`Plan`). Everything downstream sees an
ordinary array, which the runtime never reads in from the caller nor writes back.

.. autoclass:: NeedsExpansion
.. autodata:: Plan
.. autofunction:: expand_scalars
.. autofunction:: affine_bound
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import islpy as isl

from bbmm.diagnostic import BBMMWarning, UnsupportedProgramError, format_coord
from bbmm.codegen.scop import Affine, Scop

__all__ = ["NeedsExpansion", "Plan", "affine_bound", "expand_scalars"]


class NeedsExpansion(Exception):
    """A temporary turned out to be carried across iterations (assigned in a loop or under
    an ``if`` below its declaration): :func:`expand_scalars` builds again with it expanded."""

    def __init__(self, unique: str, loops: tuple[int, ...]):
        super().__init__(unique)
        self.unique, self.loops = unique, loops


Plan = dict
"""Unique name of a temporary carried across iterations -> ``(loops, webs)``: the loop ids
of the local array it becomes, and per statement that accesses it the ``(array, loops)``
of its web (:func:`expand_scalars`); statements not listed use ``(unique name, loops)``."""


def expand_scalars(build: Callable[..., Scop], taken: set[str]) -> Scop:
    """The scop that ``build(plan, analysis=False, unpragma=frozenset())`` makes (the front
    end's builder; it raises :class:`NeedsExpansion` for a carried temporary the plan leaves
    out, and ignores the parallel pragmas of the loop ids in ``unpragma``), each
    temporary carried across iterations (a reduction into a scalar, ``float s = 0; for (j
    ...) s += A[i][j];``) made local arrays with one element per iteration of the loops
    that need their own copy (scalar expansion). ``taken``: names new arrays must avoid.

    1. over the loops enclosing its declaration: exact, since C gives each of their
       iterations a fresh variable;
    2. split into *webs*, the statements joined by its value-based flow (ludcmp's ``w``
       serves four loop nests one after the other: four arrays, so that one nest's use does
       not serialize another's);
    3. each web privatized over the deeper loops that enclose all its statements and that
       no value of it crosses from one iteration to another (PolyBench's ``temp2``,
       declared at the top of the function, assigned first in every ``(i, j)``);
    4. contracted over the loops that are serial anyway (a time loop): the storage is
       reused from one iteration to the next, which adds dependences carried by those
       loops only, so every parallel loop stays parallel (checked) and the array holds no
       more than the parallel loops need.

    A loop that a pragma asserts parallel but whose iterations a carried value flows
    across (``#pragma omp parallel for reduction(+:s)``, or a race in the OpenMP program)
    would run its iterations at once on one copy of the value: its pragma is not followed,
    with a warning, and the loop runs in the source's order (bbmm computes the sequential
    program's result, the additions of a reduction in their order).
    """
    plan: Plan = {}
    while True:
        try:
            scop = build(plan, analysis=bool(plan))
            break
        except NeedsExpansion as e:          # carried: build again with it expanded
            assert e.unique not in plan, e.unique
            plan[e.unique] = (e.loops, {})
    if not plan:
        return scop
    # the builds in between are for the analyses: subscripted by the loops' iterators
    # (distinct iterations, distinct elements), not yet shifted to start at 0
    taken = set(taken) | {a.name for a in scop.arrays} | set(plan)
    plan, crossed = _webs(scop, plan, taken)
    for lid, name in sorted(crossed.items()):
        lp = scop.loop(lid)
        where = format_coord(lp.coord)
        warnings.warn(f"{where + ': ' if where else ''}the parallel pragma of this loop is not "
                      f"followed: the scalar '{name}' carries a value from one iteration to "
                      f"the next (a reduction), so the loop runs in the source's order",
                      BBMMWarning, stacklevel=2)
    unpragma = frozenset(crossed)
    scop = build(plan, analysis=True, unpragma=unpragma)
    from bbmm.codegen.deps import parallel_loops

    par = parallel_loops(scop)
    narrow = {u: (loops, {s: (a, tuple(lid for lid in dims if par[lid]))
                          for s, (a, dims) in webs.items()})
              for u, (loops, webs) in plan.items()}
    if narrow != plan and parallel_loops(
            build(narrow, analysis=True, unpragma=unpragma)) == par:
        plan = narrow                        # as argued above; kept wide if not
    return build(plan, unpragma=unpragma)


def _webs(scop: Scop, plan: Plan, taken: set[str]) -> tuple[Plan, dict[int, str]]:
    """Steps 2 and 3 of :func:`expand_scalars` on the scop built with each temporary
    expanded over its declaration's loops; and the loops asserted parallel whose
    iterations a temporary's value flows across (loop id: its C name). Refuses a read that
    no assignment reaches (the value before the first one)."""
    from bbmm.codegen.deps import carried, value_flow

    out: Plan = {}
    crossed: dict[int, str] = {}
    sched = scop.schedule()
    for u, (decl_loops, _) in plan.items():
        accs = [acc for acc in scop.accesses() if acc.array == u]
        if not accs:
            out[u] = (decl_loops, {})
            continue
        reads, writes = isl.UnionMap("{ }"), isl.UnionMap("{ }")
        for acc in accs:
            m = isl.UnionMap.from_map(acc.relation)
            if acc.kind == "read":
                reads = reads.union(m)
            else:
                writes = writes.union(m)
        info = value_flow(reads, writes, sched)
        lost = info.no_source.intersect_params(scop.context) if info.no_source is not None \
            else isl.UnionMap("{ }")
        if not lost.is_empty():
            a = scop.array(u)
            bad = next(acc for acc in accs if acc.kind == "read" and not isl.UnionMap
                       .from_map(acc.relation).intersect(lost).is_empty())
            raise UnsupportedProgramError(
                f"temporary '{a.local}' (declared at {format_coord(a.coord)}) may be read "
                f"here before it is assigned (on some iteration no assignment of it comes "
                f"first)", bad.coord)
        flow = info.flow.intersect_params(scop.context)
        for lp in scop.loops():
            if lp.parallel_pragma and lp.id not in crossed \
                    and not carried(scop, lp.id, flow).is_empty():
                crossed[lp.id] = scop.array(u).local
        stmts = list(dict.fromkeys(acc.statement for acc in accs))
        webs = {}
        for k, group in enumerate(_groups(stmts, flow)):
            name = u
            if k:
                j = 1
                while f"{u}_{j}" in taken:
                    j += 1
                name = f"{u}_{j}"
                taken.add(name)
            dims = tuple(decl_loops) + _private_loops(scop, group, len(decl_loops), flow)
            webs.update({n: (name, dims) for n in group})
        out[u] = (decl_loops, webs)
    return out, crossed


def _groups(stmts: Sequence[str], flow: isl.UnionMap) -> list[list[str]]:
    """``stmts`` in the groups that ``flow`` (``{ S1[...] -> S2[...] }``) joins, each in
    the order of ``stmts`` (union-find)."""
    root = {n: n for n in stmts}

    def find(n: str) -> str:
        while root[n] != n:
            n = root[n]
        return n

    pairs: list[tuple[str, str]] = []
    flow.foreach_map(lambda m: pairs.append((m.get_tuple_name(isl.dim_type.in_),
                                             m.get_tuple_name(isl.dim_type.out))))
    for a, b in pairs:
        root[find(a)] = find(b)
    groups: dict[str, list[str]] = {}
    for n in stmts:
        groups.setdefault(find(n), []).append(n)
    return list(groups.values())


def _private_loops(scop: Scop, group: Sequence[str], depth0: int, flow: isl.UnionMap
                   ) -> tuple[int, ...]:
    """The loops below depth ``depth0`` that enclose every statement of ``group`` and that
    no dependence of ``flow`` crosses (``{ S1[i, j] -> S2[i', j'] : j' != j }`` with it is
    empty): a value of the temporary lives within one of their iterations."""
    stmts = [scop.statement(n) for n in group]
    common = stmts[0].loops
    for st in stmts[1:]:
        k = 0
        while k < min(len(common), len(st.loops)) and common[k] == st.loops[k]:
            k += 1
        common = common[:k]
    out = []
    for depth in range(depth0, len(common)):
        cross = []
        for sa in stmts:
            for sb in stmts:
                xs = [f"x{m}" for m in range(len(sa.iterators))]
                ys = [f"y{m}" for m in range(len(sb.iterators))]
                cross.append(f"{sa.name}[{', '.join(xs)}] -> {sb.name}[{', '.join(ys)}] : "
                             f"x{depth} != y{depth}")
        if flow.intersect(isl.UnionMap("{ " + "; ".join(cross) + " }")).is_empty():
            out.append(common[depth])
    return tuple(out)


def affine_bound(pw: isl.PwAff, lower: bool) -> Affine | None:
    """One quasi-affine expression of the parameters that bounds ``pw`` from below
    (``lower``) or above wherever ``pw`` is defined: one of its pieces that does (a minimum
    of ``n`` and ``m`` is bounded above by either), else None. An empty ``pw`` gives 0."""
    pw = pw.coalesce()
    if pw.domain().is_empty():
        return Affine((), 0)
    for _, aff in pw.get_pieces():
        if aff.dim(isl.dim_type.in_):
            continue
        cand = isl.PwAff.from_aff(aff)
        ok = pw.ge_set(cand) if lower else pw.le_set(cand)
        if pw.domain().is_subset(ok):
            out = _aff_affine(aff, 1)
            if out is not None:
                return out
    return None


def _aff_affine(aff: isl.Aff, mult: int) -> Affine | None:
    """``mult * aff`` (``[n] -> { [(-1 + floor((1 + n)/2))] }``, no input dimensions) as an
    :class:`Affine`, or None where a coefficient is not an integer."""
    def int_of(v: isl.Val) -> int | None:
        v = v.mul(isl.Val.int_from_si(v.get_ctx(), mult))
        return v.to_python() if v.is_int() else None

    const = int_of(aff.get_constant_val())
    coeffs = {aff.get_dim_name(isl.dim_type.param, k): int_of(
        aff.get_coefficient_val(isl.dim_type.param, k))
        for k in range(aff.dim(isl.dim_type.param))}
    if const is None or None in coeffs.values():
        return None
    out = Affine.of(coeffs, const)
    for k in range(aff.dim(isl.dim_type.div)):
        c = int_of(aff.get_coefficient_val(isl.dim_type.div, k))
        if c is None:
            return None
        if c:
            inner = aff.get_div(k)           # floor(inner): inner = num / den
            den = inner.get_denominator_val().to_python()
            num = _aff_affine(inner, den)
            if num is None:
                return None
            out = out + num.floordiv(den).scale(c)
    return out

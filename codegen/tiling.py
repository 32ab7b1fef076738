"""Tiles of a kernel nest and parametric boxes (paper Section 5: "a tile is one iteration of
the distributed parallel loop").

The outermost band loop ``p0`` of every nest is cut by a tile size ``T`` chosen at run
time. ``T * t`` is not affine, so a tile is described by its bounds, two extra isl
parameters ``lb <= p0 <= ub``; the host binds ``lb = T*t`` and ``ub = T*t + T - 1``. The
tile grid is global: tile ``t`` holds ``p0`` in ``[T*t, T*t + T - 1]`` in every nest and at
every host iteration, so the same tile index always holds the same rows
(:func:`tile_bounds`, :func:`tile_indices`).

Per-tile queries use isl *parameters* for everything the host knows when it runs a tile:
the problem parameters (``n``), the nest's host iterators (``k``) and ``lb``/``ub``. A tile
of Floyd-Warshall's nest is ``[n, k, lb, ub] -> { S0[k, i, j] : lb <= i <= ub and ... }``.

:class:`ParamBox` is the bounding box of such a parametric set, as isl PwAffs and as Python
source (:mod:`bbmm.codegen.pyexpr`); :mod:`bbmm.codegen.boxes` and :mod:`bbmm.codegen.flow` build theirs
with :func:`param_box` too.

.. autoclass:: ParamBox
.. autoclass:: NestTiling
.. autofunction:: param_box
.. autofunction:: tile_nest
.. autofunction:: tile_plan
.. autofunction:: tile_bounds
.. autofunction:: tile_indices
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import islpy as isl

from bbmm.grid import tile_range, tiles_covering
from bbmm.codegen.deps import Nest, Plan, isl_quota
from bbmm.codegen.pyexpr import compile_lambda, pwaff_to_py, set_to_py
from bbmm.codegen.scop import Scop, Statement, relate_isl

__all__ = ["ParamBox", "NestTiling", "param_box", "box_set", "tile_nest", "tile_plan",
           "tile_bounds", "tile_indices", "fresh_names"]

# {{{ parametric boxes


@dataclass(frozen=True)
class ParamBox:
    """The bounding box of a parametric set ``S`` (``[n, k, lb, ub] -> { A[a, b] : ... }``):
    ``lo[d] <= x_d <= hi[d]``, as Python source over the parameter names and as isl.

    The bounds are *total* on :attr:`context`: where ``S`` is empty they are ``lo = 0``,
    ``hi = -1`` in every dimension, so an evaluated box is empty exactly when ``S`` is
    (``lo[d] > hi[d]`` in some d, the convention of :class:`bbmm.box.Box`). :attr:`empty`
    says the same as a boolean. Expressions are simplified against :attr:`context` and are
    only meaningful inside it.
    """

    lo: tuple[str, ...]
    """Python source of the inclusive lower bound per dimension."""
    hi: tuple[str, ...]
    """Python source of the inclusive upper bound per dimension."""
    lo_isl: tuple[isl.PwAff, ...] = field(repr=False)
    """``[n, k, lb, ub] -> { [(lb)] }`` per dimension, total on the context."""
    hi_isl: tuple[isl.PwAff, ...] = field(repr=False)
    empty: str
    """Python boolean source: ``S`` is empty."""
    exact: bool
    """The box equals ``S`` at every parameter value of the context (recipe 3)."""
    inexact_cond: str
    """Python boolean source: the box holds points that are not in ``S`` (``False`` when
    :attr:`exact`)."""
    set: isl.Set = field(repr=False)
    """``S`` itself, ``[n, k, lb, ub] -> { A[a, b] : ... }``."""
    nonempty: isl.Set = field(repr=False)
    """``[n, k, lb, ub] -> { : S is not empty }`` within the context."""
    context: isl.Set = field(repr=False)
    """``[n, k, lb, ub] -> { : ... }``: where the expressions may be evaluated."""

    @property
    def ndim(self) -> int:
        return len(self.lo)

    def evaluator(self, args: Sequence[str]):
        """``f(*values) -> (lo, hi)`` with ``args`` the names bound, in order."""
        return compile_lambda(args, f"({_tup(self.lo)}, {_tup(self.hi)})")

    def raw(self, d: int) -> tuple[isl.PwAff, isl.PwAff]:
        """``(dim_min, dim_max)`` of dimension d, defined only where ``S`` is not empty."""
        return (self.lo_isl[d].intersect_params(self.nonempty),
                self.hi_isl[d].intersect_params(self.nonempty))

    def invariant_in(self, names: Iterable[str]) -> bool:
        """The box does not change with the parameters ``names`` (wherever ``S`` is not
        empty): two parameter points that differ only in ``names`` give the same box."""
        names = [n for n in names if self.context.find_dim_by_name(isl.dim_type.param, n) >= 0]
        if not names:
            return True
        taken = set(self.context.get_var_names(isl.dim_type.param))
        other = dict(zip(names, fresh_names([n + "_" for n in names], taken)))
        for d in range(self.ndim):
            for pa in self.raw(d):
                pb = pa
                for a, b in other.items():
                    pos = pb.find_dim_by_name(isl.dim_type.param, a)
                    if pos >= 0:
                        pb = pb.set_dim_id(isl.dim_type.param, pos, isl.Id(b))
                both = pa.domain().intersect_params(pb.domain())
                if not both.is_subset(pa.eq_set(pb)):
                    return False
        return True


def _tup(xs: Sequence[str]) -> str:
    return "(" + "".join(f"{x}, " for x in xs) + ")"


def box_set(S: isl.Set, lo: Sequence[isl.PwAff], hi: Sequence[isl.PwAff]) -> isl.Set:
    """The set of points of the box ``lo <= x <= hi`` in S's space (empty where S is)."""
    sp = S.get_space()
    if not lo:
        return S
    lol, hil = isl.PwAffList.alloc(S.get_ctx(), len(lo)), isl.PwAffList.alloc(S.get_ctx(), len(hi))
    for a, b in zip(lo, hi):
        lol, hil = lol.add(a), hil.add(b)
    return (isl.Set.universe(sp)
            .lower_bound_multi_pw_aff(isl.MultiPwAff.from_pw_aff_list(sp, lol))
            .upper_bound_multi_pw_aff(isl.MultiPwAff.from_pw_aff_list(sp, hil))
            .intersect_params(S.params()))


BOX_OPERATIONS = 3_000_000
"""isl operations (under a second) that the exact box of one set may take. Parametric integer
programming over sets with floor divisions (steps, ``%`` in bounds) can take minutes: past
this, :func:`param_box` boxes an over-approximation instead."""


def param_box(S: isl.Set, context: isl.Set, names: Mapping[str, str] | None = None,
              within: isl.Set | None = None, loose_divs: bool = False) -> ParamBox:
    """Bounding box of a parametric set ``S`` (``isl_set_dim_min``/``dim_max`` per
    dimension), made total on ``context`` and printed as Python.

    ``context`` is a parameter set (``[n, k, lb, ub] -> { : ... }``); ``names`` renames
    variables in the Python source. When isl cannot find the exact box within
    :data:`BOX_OPERATIONS`, the box is that of ``S`` with its existentially quantified
    variables projected out rationally (``isl_set_remove_divs``: a superset, so a box at
    least as large, marked not exact), within ``within`` (an array's elements: the
    projection may reach past them). That is safe wherever a box is used: the runtime
    reads in a box that is not exact before a tile writes it, and moves only the valid
    elements of a copy (docs/coherence.md).

    ``loose_divs``: a set with existentially quantified variables gets, without trying
    the exact box, the box of its projections on each dimension taken rationally
    (:func:`_rational_box`, not exact either; :attr:`NestTiling.loose_divs`).
    """
    if loose_divs and _has_divs(S):
        return _rational_box(S, context, names, within)
    try:
        with isl_quota(BOX_OPERATIONS):
            return _param_box(S, context, names)
    except isl.Error:
        pass                    # over the quota (isl reports no other error here)
    return _loose_box(S, context, names, within)


def _has_divs(S: isl.Set) -> bool:
    return any(b.get_local_space().dim(isl.dim_type.div)
               for b in S.coalesce().get_basic_sets())


def _rational_box(S: isl.Set, context: isl.Set, names: Mapping[str, str] | None = None,
                  within: isl.Set | None = None) -> ParamBox:
    """A box of ``S`` (not exact) from its projection on each dimension with the other
    dimensions and the existentially quantified variables projected out rationally: the
    bounds of a skewed tile (``2 - n + c0 - 2i <= 4t < c0 - 2i``) as one or two pieces
    each where the exact box has one per remainder."""
    nd = S.dim(isl.dim_type.set)
    if nd == 0:
        return _loose_box(S, context, names, within)
    prod = None
    for d in range(nd):
        p = S.project_out(isl.dim_type.set, d + 1, nd - d - 1) \
            .project_out(isl.dim_type.set, 0, d).remove_divs()
        prod = p if prod is None else prod.flat_product(p)
    assert prod is not None
    prod = prod.set_tuple_id(S.get_tuple_id()) if S.has_tuple_id() else prod
    return _param_box(prod if within is None else prod.intersect(within), context, names,
                      exact=False)


def _loose_box(S: isl.Set, context: isl.Set, names: Mapping[str, str] | None,
               within: isl.Set | None) -> ParamBox:
    # without floor divisions: the kind of set every affine program gives, no quota
    loose = S.remove_divs()
    return _param_box(loose if within is None else loose.intersect(within), context, names,
                      exact=False)


def _param_box(S: isl.Set, context: isl.Set, names: Mapping[str, str] | None,
               exact: bool | None = None) -> ParamBox:
    """The box of ``S``; ``exact=False``: not exact anywhere in ``context`` (the set is an
    over-approximation), None: find where it is."""
    S = S.intersect_params(context).coalesce()
    nonempty = S.params().coalesce()
    outside = context.subtract(nonempty).coalesce()
    nd = S.dim(isl.dim_type.set)
    lo_raw = [S.dim_min(d).coalesce() for d in range(nd)]
    hi_raw = [S.dim_max(d).coalesce() for d in range(nd)]

    def total(pa: isl.PwAff, v: int) -> isl.PwAff:
        fill = isl.PwAff.val_on_domain(outside, isl.Val(v))
        return (pa.union_add(fill) if not outside.is_empty() else pa).coalesce()

    lo_isl = tuple(total(pa, 0) for pa in lo_raw)
    hi_isl = tuple(total(pa, -1) for pa in hi_raw)
    inexact = (box_set(S, lo_raw, hi_raw).subtract(S).params().intersect(context).coalesce()
               if exact is None else context)
    return ParamBox(
        lo=tuple(pwaff_to_py(pa, context, names) for pa in lo_isl),
        hi=tuple(pwaff_to_py(pa, context, names) for pa in hi_isl),
        lo_isl=lo_isl, hi_isl=hi_isl,
        empty=set_to_py(outside, context, names),
        exact=inexact.is_empty(),
        inexact_cond=set_to_py(inexact, context, names),
        set=S, nonempty=nonempty, context=context)

# }}}

# {{{ tiles of a nest


@dataclass(frozen=True)
class NestTiling:
    """The tiles of one kernel nest.

    Python sources use the names in :attr:`variables`: the problem parameters, the host
    iterators and (band nests only) :attr:`lb`/:attr:`ub`.
    """

    nest: Nest
    params: tuple[str, ...]
    """Integer parameters of the scop (``n``)."""
    host: tuple[str, ...]
    """Iterators of the nest's host loops, outermost first (``k``)."""
    band: tuple[str, ...]
    """Iterators of the band loops (``i``); empty for an empty-band nest."""
    lb: str | None
    """Name of the tile's lower-bound parameter (``lb``), None for an empty band."""
    ub: str | None
    statements: tuple[str, ...]
    domain: isl.UnionSet = field(repr=False)
    """``[n] -> { S0[k, i, j] : ... }``: every instance of the nest's statements."""
    instance: isl.UnionSet = field(repr=False)
    """``[n, k] -> { S0[k, i, j] : ... }``: one host iteration (host iterators equated to
    the parameters of the same name)."""
    tile: isl.UnionSet = field(repr=False)
    """``[n, k, lb, ub] -> { S0[k, i, j] : lb <= i <= ub and ... }`` (:attr:`instance` for
    an empty band)."""
    stmt_tiles: tuple[tuple[str, isl.Set], ...] = field(repr=False)
    """(statement, its part of :attr:`tile`)."""
    host_context: isl.Set = field(repr=False)
    """``[n, k] -> { : scop context and host loop bounds }``."""
    context: isl.Set = field(repr=False)
    """``[n, k, lb, ub] -> { : host_context and lb <= ub }``: where tile expressions hold."""
    p0_range: ParamBox | None
    """1-d box of ``p0`` over the whole nest domain (all host iterations), in the problem
    parameters only: tiles ``p0_range.lo[0] // T .. p0_range.hi[0] // T``."""
    p0_range_at: ParamBox | None
    """1-d box of ``p0`` at given host iterators (``[n, k]``)."""
    grid: ParamBox | None
    """Box of the band iterators over the tile (``[n, k, lb, ub]``): the NDRange origin
    and extent; not :attr:`ParamBox.exact` when the tile is not rectangular in the band."""
    empty_cond: str
    """Python boolean source: the tile has no instance."""
    nonempty: isl.Set = field(repr=False)
    """``[n, k, lb, ub] -> { : the tile has an instance }`` within the context."""
    loose_divs: bool = False
    """The boxes of this nest's data sets that have existentially quantified variables,
    and its :attr:`grid`, are those of the sets' projections on each dimension taken
    rationally (:func:`param_box`, not exact): set for isl's schedules, whose tiles of a
    wavefront reach elements on a lattice (``j = c0 - 4t - 2i``) that no box holds
    exactly, and whose exact boxes are piecewise over the lattice's remainders (seconds
    of isl per box; a minute for seidel-2d's nest)."""

    copy = replace

    @property
    def variables(self) -> tuple[str, ...]:
        """Names every Python expression of this nest may use, in a fixed order."""
        return self.params + self.host + ((self.lb, self.ub) if self.lb else ())

    @property
    def host_variables(self) -> tuple[str, ...]:
        return self.params + self.host

    def tile_of(self, statement: str) -> isl.Set:
        return dict(self.stmt_tiles)[statement]


def fresh_names(wanted: Iterable[str], taken: Iterable[str]) -> list[str]:
    """Each wanted name, with ``_`` appended until it clashes with nothing taken."""
    taken, out = set(taken), []
    for w in wanted:
        while w in taken:
            w += "_"
        taken.add(w)
        out.append(w)
    return out


def tile_bound_names(scop: Scop) -> tuple[str, str]:
    """``("lb", "ub")`` unless the program already uses those names."""
    taken = set(scop.int_params) | {lp.iterator for lp in scop.loops()} | \
        {a.name for a in scop.arrays} | {n for n, _ in scop.float_params}
    lb, ub = fresh_names(["lb", "ub"], taken)
    return lb, ub


def _dummies(n: int, taken: Iterable[str]) -> list[str]:
    taken = set(taken)
    pre = "_x"
    while any(t.startswith(pre) for t in taken):
        pre += "_"
    return [f"{pre}{j}" for j in range(n)]


def _stmt_set(st: Statement, params: Sequence[str], cons: Sequence[str], names: list[str]
              ) -> isl.Set:
    body = f" : {' and '.join(cons)}" if cons else ""
    s = isl.Set(f"[{', '.join(params)}] -> {{ {st.name}[{', '.join(names)}]{body} }}")
    s = s.intersect(st.domain)
    # keep the dummy names: the domain's iterator names would name a host iterator both
    # as a parameter and as a dimension, which islpy cannot pickle (MPI sends programs)
    for j, name in enumerate(names):
        s = s.set_dim_name(isl.dim_type.set, j, name)
    return s


def _project(st: Statement, dom: isl.Set, dims: Sequence[int], dummies: list[str]) -> isl.Set:
    """Image of ``dom`` (a set of st's instances) on the listed iterator positions."""
    xs = dummies[:len(st.iterators)]
    m = isl.Map(f"{{ {st.name}[{', '.join(xs)}] -> [{', '.join(xs[d] for d in dims)}] }}")
    return dom.apply(m)


def _union(sets: Iterable[isl.Set]) -> isl.Set | None:
    out = None
    for s in sets:
        out = s if out is None else out.union(s)
    return out


def host_context(scop: Scop, nest: Nest) -> isl.Set:
    """``[n, k] -> { : scop context and lower(k) <= k <= upper(k) for each host loop }``."""
    host = [scop.loop(h) for h in nest.host_loops]
    cons = [relate_isl(lp.iterator, ">=", lp.lower_expr) + " and " +
            relate_isl(lp.iterator, "<=", lp.upper_expr) for lp in host]
    names = list(scop.int_params) + [lp.iterator for lp in host]
    ctx = isl.Set(f"[{', '.join(names)}] -> {{ : {' and '.join(cons) or 'true'} }}")
    return ctx.intersect_params(scop.context).coalesce()


def tile_nest(scop: Scop, nest: Nest, lb: str = "lb", ub: str = "ub",
              loose_divs: bool = False) -> NestTiling:
    """Describe the tiles of one nest (band nests) or its single instance per host
    iteration (empty-band nests); ``loose_divs``: see :attr:`NestTiling.loose_divs`."""
    params = tuple(scop.int_params)
    host = tuple(scop.loop(h).iterator for h in nest.host_loops)
    band = tuple(scop.loop(b).iterator for b in nest.band)
    h = len(host)
    stmts = [scop.statement(s) for s in nest.statements]
    for st in stmts:
        if st.loops[:h] != nest.host_loops or st.loops[h:h + len(band)] != nest.band:
            raise ValueError(f"statement {st.name} is not nested in nest {nest.id}'s loops")
    bounds = (lb, ub) if band else ()
    all_params = params + host + bounds
    dummies = _dummies(max(len(st.iterators) for st in stmts),
                       set(all_params) | {st.name for st in stmts})
    hctx = host_context(scop, nest)
    ctx = hctx
    if band:
        ctx = ctx.intersect_params(isl.Set(f"[{lb}, {ub}] -> {{ : {lb} <= {ub} }}")).coalesce()

    inst, tiles = [], []
    for st in stmts:
        xs = dummies[:len(st.iterators)]
        eq = [f"{xs[j]} = {host[j]}" for j in range(h)]
        inst.append(_stmt_set(st, params + host, eq, xs))
        tcons = eq + ([f"{lb} <= {xs[h]} <= {ub}"] if band else [])
        tiles.append(_stmt_set(st, all_params, tcons, xs))
    domain = isl.UnionSet("{ }")
    instance, tile = isl.UnionSet("{ }"), isl.UnionSet("{ }")
    for st, i, t in zip(stmts, inst, tiles):
        domain = domain.union(isl.UnionSet.from_set(st.domain))
        instance = instance.union(isl.UnionSet.from_set(i))
        tile = tile.union(isl.UnionSet.from_set(t))

    p0_range = p0_at = grid = None
    if band:
        p0_all = _union(_project(st, st.domain, [h], dummies) for st in stmts)
        p0_range = param_box(p0_all, scop.context)
        p0_at = param_box(_union(_project(st, i, [h], dummies) for st, i in zip(stmts, inst)),
                          hctx)
        dims = list(range(h, h + len(band)))
        grid_set = _union(_project(st, t, dims, dummies) for st, t in zip(stmts, tiles))
        # a larger grid is as good: each work-item tests its band loops' bounds
        grid = _rational_box(grid_set, ctx) if loose_divs else param_box(grid_set, ctx)
    nonempty = tile.params().intersect_params(ctx).coalesce()
    return NestTiling(
        nest=nest, params=params, host=host, band=band, lb=lb if band else None,
        ub=ub if band else None, statements=tuple(nest.statements), domain=domain,
        instance=instance, tile=tile, stmt_tiles=tuple(zip(nest.statements, tiles)),
        host_context=hctx, context=ctx, p0_range=p0_range, p0_range_at=p0_at, grid=grid,
        empty_cond=set_to_py(ctx.subtract(nonempty), ctx), nonempty=nonempty,
        loose_divs=loose_divs)


def tile_plan(scop: Scop, plan: Plan) -> tuple[NestTiling, ...]:
    """:func:`tile_nest` for every nest of a plan (tile bounds named ``lb``/``ub`` unless
    the program uses those names)."""
    lb, ub = tile_bound_names(scop)
    return tuple(tile_nest(scop, n, lb, ub) for n in plan.nests)

# }}}

# {{{ the global tile grid


# The grid is the runtime's: generated drivers call bbmm.hostlib, so there is one
# implementation of it.
tile_bounds = tile_range
"""``(lb, ub)`` of tile ``t`` for tile size ``T``: ``p0`` in ``[T*t, T*t + T - 1]``."""
tile_indices = tiles_covering
"""Indices of the tiles that meet ``p0_lo..p0_hi`` (empty when ``p0_lo > p0_hi``)."""

# }}}

# vim: foldmethod=marker

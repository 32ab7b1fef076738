"""Loops other than those as written: a schedule computed by isl's scheduler, as a new loop
nest over new iterators (``--schedule isl``, and ``auto`` where the loops as written have
no parallel loop around some statement).

The loops as written of an in-place stencil, a Cholesky factorisation or a triangular
solve carry dependences at every level, so BBMM would have no tiles to distribute. isl's
scheduler (the one PPCG uses, with its options: outer coincidence, SCCs not serialized,
bands as deep as possible) finds legal schedules whose outer loops are parallel where the
dependences allow it: a wavefront of the stencil, the interchange that makes the rows
below a finished column of Cholesky independent.

:func:`reschedule` turns such a schedule into a program of the same model: isl's AST
generator writes the loop nest (``for (c0 = ...) for (c1 = max(...); c1 <= min(...); ...)
S0(c2, c1, c0 - c1 - 2*c2)``), and each statement becomes the same statement over the new
iterators, its subscripts and domain rewritten through the call's arguments. Everything
downstream (dependences, the parallel loops, tiles, boxes, kernels, the host driver) then
runs on that program as on any other. The new program is checked against the dependences
of the loops as written before it is used: every dependence must still go forward in the
new order, else it is refused and the loops as written stay.

.. autofunction:: reschedule
.. autofunction:: compute_schedule
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import islpy as isl

from bbmm.codegen.deps import Dependences, isl_quota
from bbmm.codegen.scop import (
    Access,
    AffAnd,
    AffCond,
    AffExpr,
    Affine,
    AffMax,
    AffMin,
    AffNot,
    AffOr,
    AffSelect,
    ArrayRef,
    BinOp,
    Call,
    Cast,
    Cmp,
    Expr,
    Loop,
    LoopNode,
    Node,
    Num,
    Scop,
    Statement,
    Temp,
    Ternary,
    UnOp,
    Var,
    bound_c,
    bound_floordiv,
    bound_neg,
    bound_shift,
    cond_c,
    cond_isl,
    relate_isl,
)

__all__ = ["SCHEDULES", "Rescheduled", "NotRescheduled", "compute_schedule", "reschedule"]

SCHEDULES = ("as-written", "isl", "auto")
"""The values of ``--schedule``."""

_O = isl.ast_expr_op_type
_T = isl.ast_expr_type
_N = isl.ast_node_type


class NotRescheduled(Exception):
    """isl's schedule cannot become a program of the model (a loop with a stride, a
    statement written twice by the AST generator...) or breaks a dependence: the loops
    as written stay. Internal to the compiler: never reaches the user as an error."""


@dataclass(frozen=True)
class Rescheduled:
    """A program rewritten to the order isl's scheduler computed."""

    scop: Scop
    """The same statements over the new loops."""
    schedule: isl.UnionMap
    """``[n] -> { S0[s, r, c] -> [2s + r + c, r, s] }``: each instance of the loops as
    written to its place in the new order."""

    def lines(self) -> list[str]:
        """One ``S0[s, r, c] -> [2s + r + c, r, s]`` per statement, as ``bbmm compile``
        shows them."""
        maps: list[str] = []
        self.schedule.foreach_map(lambda m: maps.append(_map_text(m)))
        return sorted(maps, key=_stmt_key)


def _stmt_key(text: str) -> tuple[int, str]:
    name = text.split("[", 1)[0]
    return (int(name[1:]) if name[1:].isdigit() else 1 << 30, text)


def _map_text(m: isl.Map) -> str:
    """``S0[s, r, c] -> [2s + r + c, r, s]`` without parameters and constraints."""
    text = str(m).split("{", 1)[1]
    return text.split(":", 1)[0].rstrip(" }").strip()


_OPTIONS = (("schedule_outer_coincidence", 1), ("schedule_serialize_sccs", 0),
            ("schedule_maximize_band_depth", 1), ("schedule_maximize_coincidence", 1),
            ("schedule_whole_component", 0))
"""isl's options as PPCG sets them for GPUs: prefer an outer parallel (coincident) loop,
do not serialize the strongly connected components, and bands as deep as possible."""


SCHEDULE_OPERATIONS = 10_000_000
"""isl operations (a few seconds) that isl's scheduler may take for one program: every
kernel of ``polybench/`` and ``tests/kernels/`` takes less than a million. Past them the
program keeps the order of its loops as written, as where isl finds no schedule; an
integer-programming scheduler may otherwise run for as long as it likes."""


def compute_schedule(scop: Scop, deps: Dependences, data_first: bool = True
                     ) -> isl.UnionMap:
    """isl's schedule of the scop's instances that keeps every dependence
    (:attr:`Dependences.all`: validity, and coincidence and proximity too, so that outer
    loops carry none where possible), ``{ S0[s, r, c] -> [2s + r + c, r, s] }``.

    ``data_first``: in each band, the parallel member that subscripts use most comes
    first among the parallel members (:func:`_data_first`), so that the loop BBMM tiles
    and distributes is a loop over data rather than over time steps."""
    ctx = isl.DEFAULT_CONTEXT
    saved = [(name, getattr(ctx, f"get_{name}")()) for name, _ in _OPTIONS]
    try:
        for name, value in _OPTIONS:
            getattr(ctx, f"set_{name}")(value)
        dom = scop.domain().intersect_params(scop.context)
        every = deps.all
        sc = (isl.ScheduleConstraints.on_domain(dom).set_context(scop.context)
              .set_validity(every).set_coincidence(every).set_proximity(every))
        with isl_quota(SCHEDULE_OPERATIONS):
            tree = sc.compute_schedule()
        if data_first:
            tree = _data_first(tree, scop)
        return tree.get_map().intersect_domain(dom)
    except isl.Error as e:        # "unable to carry dependences", or past the quota
        raise NotRescheduled(f"isl's scheduler: {e}") from None
    finally:
        for name, value in saved:
            getattr(ctx, f"set_{name}")(value)


def _member_score(upa: isl.UnionPwAff, scop: Scop) -> int:
    """How many subscripts of the statements use the iterators that a band member
    ``{ S0[t, i, j] -> [(i)] }`` combines: one per access and array dimension whose
    subscript has one of them (``A[i - 1][j]``: 1 for ``i``, 0 for ``t``)."""
    stmts = {st.name: st for st in scop.statements}
    pieces: list[isl.PwAff] = []
    upa.foreach_pw_aff(pieces.append)
    score = 0
    for pa in pieces:
        st = stmts.get(pa.get_domain_space().get_tuple_name(isl.dim_type.set))
        if st is None:
            continue
        affs: list[isl.Aff] = []
        pa.foreach_piece(lambda _s, aff: affs.append(aff))
        used = {st.iterators[d] for aff in affs for d in range(len(st.iterators))
                if not aff.get_coefficient_val(isl.dim_type.in_, d).is_zero()}
        score += sum(1 for acc in st.accesses for x in acc.index
                     if used & x.names)
    return score


def _data_first(tree: isl.Schedule, scop: Scop) -> isl.Schedule:
    """``tree`` with, in every band, the coincident (parallel) member of the highest
    :func:`_member_score` moved to the place of the first coincident member (ties keep
    isl's order).

    BBMM tiles and distributes the outermost loop of a parallel band. isl's band of a
    skewed stencil is ``[t, i]`` under the wavefront ``4t + 2i + j``: tiles of ``t`` hold
    a few time steps of every row, so each tile's boxes are piecewise over the wavefront's
    bounds (minutes of isl) and a short ``t`` range leaves devices without tiles. Tiles of
    ``i`` hold rows. Two coincident members carry no dependence that outer bands leave,
    so exchanging them keeps the schedule legal (:func:`apply_schedule` checks it
    again)."""

    def visit(node: isl.ScheduleNode) -> isl.ScheduleNode:
        if node.get_type() == isl.schedule_node_type.band:
            node = _reorder_band(node, scop)
        for k in range(node.n_children()):
            node = visit(node.child(k)).parent()
        return node

    return visit(tree.get_root()).get_schedule()


def _reorder_band(node: isl.ScheduleNode, scop: Scop) -> isl.ScheduleNode:
    n = node.band_n_member()
    coinc = [bool(node.band_member_get_coincident(k)) for k in range(n)]
    par = [k for k in range(n) if coinc[k]]
    if len(par) < 2:
        return node
    mupa = node.band_get_partial_schedule()
    scores = {k: _member_score(mupa.get_at(k), scop) for k in par}
    best = max(par, key=lambda k: (scores[k], -k))
    first = par[0]
    if best == first:
        return node
    swapped = mupa.set_at(first, mupa.get_at(best)).set_at(best, mupa.get_at(first))
    permutable = node.band_get_permutable()
    node = node.delete().insert_partial_schedule(swapped).band_set_permutable(permutable)
    for k in range(n):
        node = node.band_member_set_coincident(k, coinc[k])
    return node


# {{{ isl AST expressions -> the model's bounds and conditions


def _int(e: isl.AstExpr) -> int | None:
    return e.get_val().to_python() if e.get_type() == _T.int else None


def _affine(e: isl.AstExpr, names: Mapping[str, str]) -> Affine:
    a = _expr(e, names)
    if not isinstance(a, Affine):
        raise NotRescheduled(f"not affine: {e.to_C_str()}")
    return a


def _expr(e: isl.AstExpr, names: Mapping[str, str]) -> AffExpr:
    """An isl AST expression of the AST's iterators and the parameters as a bound tree
    (``min``, ``max``, ``?:``, floor divisions by constants)."""
    t = e.get_type()
    if t == _T.id:
        n = e.get_id().get_name()
        return Affine.var(names.get(n, n))
    if t == _T.int:
        return Affine((), e.get_val().to_python())
    if t != _T.op:
        raise NotRescheduled(f"unexpected expression {e.to_C_str()}")
    op = e.get_op_type()
    args = [e.get_op_arg(k) for k in range(e.get_op_n_arg())]
    if op in (_O.min, _O.max):
        return (AffMin if op == _O.min else AffMax)(tuple(_expr(a, names) for a in args))
    if op in (_O.cond, _O.select):
        return AffSelect(_cond(args[0], names), _expr(args[1], names), _expr(args[2], names))
    if op == _O.minus:
        return bound_neg(_expr(args[0], names))
    if op in (_O.add, _O.sub):
        a, b = _expr(args[0], names), _expr(args[1], names)
        if op == _O.sub:
            b = bound_neg(b)
        if isinstance(b, Affine):
            return bound_shift(a, b)
        if isinstance(a, Affine):
            return bound_shift(b, a)
        raise NotRescheduled(f"sum of two bound trees: {e.to_C_str()}")
    if op == _O.mul:
        k, other = (_int(args[0]), args[1]) if _int(args[0]) is not None else \
            (_int(args[1]), args[0])
        if k is None:
            raise NotRescheduled(f"product of variables: {e.to_C_str()}")
        return _affine(other, names).scale(k)
    if op in (_O.fdiv_q, _O.pdiv_q, _O.div, _O.pdiv_r, _O.zdiv_r):
        d = _int(args[1])
        if d is None or d <= 0:
            raise NotRescheduled(f"division by a variable: {e.to_C_str()}")
        if op in (_O.fdiv_q, _O.pdiv_q, _O.div):
            return bound_floordiv(_expr(args[0], names), d)
        a = _affine(args[0], names)         # a remainder, only ever compared with 0
        return a - a.floordiv(d).scale(d)
    raise NotRescheduled(f"unsupported operation in {e.to_C_str()}")


_CMP = {_O.eq: "==", _O.le: "<=", _O.lt: "<", _O.ge: ">=", _O.gt: ">"}


def _cond(e: isl.AstExpr, names: Mapping[str, str]) -> AffCond:
    if e.get_type() != _T.op:
        raise NotRescheduled(f"unexpected condition {e.to_C_str()}")
    op = e.get_op_type()
    args = [e.get_op_arg(k) for k in range(e.get_op_n_arg())]
    if op in (_O.and_, _O.and_then):
        return AffAnd(tuple(_cond(a, names) for a in args))
    if op in (_O.or_, _O.or_else):
        return AffOr(tuple(_cond(a, names) for a in args))
    if op in _CMP:
        return Cmp(_CMP[op], _affine(args[0], names), _affine(args[1], names))
    raise NotRescheduled(f"unsupported condition {e.to_C_str()}")

# }}}

# {{{ statements over the new iterators


def _subst(a: Affine, sub: Mapping[str, Affine]) -> Affine:
    out = Affine((), a.const)
    for name, k in a.terms:
        out = out + sub.get(name, Affine.var(name)).scale(k)
    for num, den, k in a.divs:
        out = out + _subst(num, sub).floordiv(den).scale(k)
    return out


def _value(a: Affine) -> Expr:
    """An affine value of the iterators as a right-hand-side expression (an iterator read
    as a value, ``A[i] = i``)."""
    if a.divs:
        raise NotRescheduled("an iterator's value is a floor division")
    out: Expr | None = None
    for name, k in a.terms:
        v: Expr = Var(name, "iterator", "int")
        term = v if abs(k) == 1 else BinOp("*", Num(str(abs(k)), "int"), v)
        out = (UnOp("-", term) if k < 0 else term) if out is None else \
            BinOp("-" if k < 0 else "+", out, term)
    if out is None:
        return Num(str(a.const), "int")
    if a.const:
        out = BinOp("-" if a.const < 0 else "+", out, Num(str(abs(a.const)), "int"))
    return out


def _rewrite(e: Expr, sub: Mapping[str, Affine]) -> Expr:
    if isinstance(e, ArrayRef):
        return replace(e, index=tuple(_subst(x, sub) for x in e.index))
    if isinstance(e, Var):
        return _value(sub[e.name]) if e.kind == "iterator" and e.name in sub else e
    if isinstance(e, BinOp):
        return BinOp(e.op, _rewrite(e.left, sub), _rewrite(e.right, sub))
    if isinstance(e, UnOp):
        return UnOp(e.op, _rewrite(e.operand, sub))
    if isinstance(e, Cast):
        return Cast(e.ctype, _rewrite(e.operand, sub))
    if isinstance(e, Call):
        return Call(e.func, tuple(_rewrite(a, sub) for a in e.args))
    if isinstance(e, Ternary):
        return Ternary(_rewrite(e.cond, sub), _rewrite(e.then, sub), _rewrite(e.else_, sub))
    return e

# }}}


def _fresh_iterators(scop: Scop, n: int) -> list[str]:
    """``c0``, ``c1``... unless the function already uses the name (then ``c0_``...)."""
    taken = set(scop.int_params) | {p for p, _ in scop.float_params} | \
        {a.name for a in scop.arrays} | {it for st in scop.statements for it in st.iterators} | \
        {t.name for st in scop.statements for t in st.temps} | \
        {h.name for h in scop.helpers} | set(scop.args)
    out = []
    for k in range(n):
        name = f"c{k}"
        while name in taken:
            name += "_"
        out.append(name)
    return out


def reschedule(scop: Scop, deps: Dependences) -> Rescheduled:
    """The scop with its statements in the order of :func:`compute_schedule`, or
    :class:`NotRescheduled` (see the module docstring)."""
    if any(lp.stop_flag for lp in scop.loops()):
        raise NotRescheduled("a loop stops at a break flag")
    sched = compute_schedule(scop, deps)
    try:
        return apply_schedule(scop, deps, sched)
    except NotRescheduled:
        plain = compute_schedule(scop, deps, data_first=False)
        if plain.is_equal(sched):
            raise
        return apply_schedule(scop, deps, plain)


def apply_schedule(scop: Scop, deps: Dependences, sched: isl.UnionMap) -> Rescheduled:
    """The scop over the loops isl's AST generator writes for ``sched`` (``{ S0[i, j] ->
    [t0, t1] }``), refused (:class:`NotRescheduled`) where it breaks a dependence of
    ``deps``."""
    spaces: list[int] = []
    sched.foreach_map(lambda m: spaces.append(m.dim(isl.dim_type.out)))
    ndim = max(spaces, default=0)
    iters = _fresh_iterators(scop, ndim)
    ids = isl.IdList.alloc(isl.DEFAULT_CONTEXT, ndim)
    for name in iters:
        ids = ids.add(isl.Id(name))
    build = isl.AstBuild.from_context(scop.context).set_iterators(ids)
    if ndim:   # every statement once: no loop split into pieces around it
        xs = ", ".join(f"x{k}" for k in range(ndim))
        build = build.set_options(isl.UnionMap(f"{{ [{xs}] -> atomic[d] : 0 <= d < {ndim} }}"))
    try:
        ast = build.node_from_schedule_map(sched)
    except isl.Error as e:
        raise NotRescheduled(f"isl's AST generator: {e}") from None
    names: dict[str, str] = {}     # the AST already uses bbmm's names (set_iterators)
    params = f"[{', '.join(scop.int_params)}] -> "
    old = {st.name: st for st in scop.statements}
    coord = scop.loops()[0].coord if scop.loops() else None
    made: dict[str, Statement] = {}
    to_old: dict[str, isl.Map] = {}
    betas: dict[str, tuple[int, ...]] = {}
    n_loops = [0]

    def walk(node: isl.AstNode, loops: tuple[Loop, ...], cons: tuple[str, ...],
             guards: tuple[AffCond, ...], beta: tuple[int, ...]) -> list[Node]:
        """The model's nodes for ``node`` (a block gives several); ``beta`` is the
        position of the first of them among its siblings, after the enclosing ones."""
        t = node.get_type()
        if t == _N.block:
            kids = node.block_get_children()
            out: list[Node] = []
            for k in range(kids.n_ast_node()):
                out += walk(kids.get_at(k), loops, cons, guards,
                            beta[:-1] + (beta[-1] + len(out),))
            return out
        if t == _N.mark:
            return walk(node.mark_get_node(), loops, cons, guards, beta)
        if t == _N.if_:
            c = _cond(node.if_get_cond(), names)
            out = walk(node.if_get_then_node(), loops, cons + (cond_isl(c),), guards + (c,),
                       beta)
            if node.if_has_else_node():
                nc = AffNot(c)
                out += walk(node.if_get_else_node(), loops, cons + (cond_isl(nc),),
                            guards + (nc,), beta[:-1] + (beta[-1] + len(out),))
            return out
        if t == _N.for_:
            it_e = node.for_get_iterator()
            it = names.get(it_e.get_id().get_name(), it_e.get_id().get_name())
            if _int(node.for_get_inc()) != 1:
                raise NotRescheduled(f"a loop with a stride: {node.to_C_str()}")
            lower = _expr(node.for_get_init(), names)
            cond = node.for_get_cond()
            if cond.get_type() != _T.op or cond.get_op_type() not in (_O.le, _O.lt) or \
                    cond.get_op_arg(0).get_type() != _T.id or \
                    cond.get_op_arg(0).get_id().get_name() != it:
                raise NotRescheduled(f"a loop condition isl bounds otherwise: "
                                     f"{cond.to_C_str()}")
            upper = _expr(cond.get_op_arg(1), names)
            if cond.get_op_type() == _O.lt:
                upper = bound_shift(upper, -1)
            lo_c, up_c = bound_c(lower), bound_c(upper)
            lp = Loop(n_loops[0], it, lo_c, up_c, False, coord, len(loops), lower, upper,
                      f"for ({it} = {lo_c}; {it} <= {up_c}; {it}++)")
            n_loops[0] += 1
            body = walk(node.for_get_body(), loops + (lp,),
                        cons + (relate_isl(it, ">=", lower), relate_isl(it, "<=", upper)),
                        guards, beta + (0,))
            return [LoopNode(lp, tuple(body))]
        if t == _N.user:
            call = node.user_get_expr()
            name = call.get_op_arg(0).get_id().get_name()
            if name in made:
                raise NotRescheduled(f"the AST generator writes {name} twice")
            st = old[name]
            args = [_affine(call.get_op_arg(k), names) for k in range(1, call.get_op_n_arg())]
            made[name], to_old[name] = _statement(st, loops, cons, guards, args, params,
                                                  scop.context)
            betas[name] = beta
            return [name]       # type: ignore[list-item]   # a leaf until all are made
        raise NotRescheduled(f"unexpected AST node {node.to_C_str()}")

    tree = walk(ast, (), (), (), (0,))
    if set(made) != set(old):
        raise NotRescheduled("a statement is missing from the AST")
    depth = max((len(st.iterators) for st in made.values()), default=0)
    for name, st in made.items():
        its, beta = st.iterators, betas[name]
        vec = []
        for d in range(depth + 1):
            vec.append(str(beta[d]) if d < len(beta) else "0")
            if d < depth:
                vec.append(its[d] if d < len(its) else "0")
        s2 = isl.Map(f"{params}{{ {name}[{', '.join(its)}] -> [{', '.join(vec)}] }}") \
            .intersect_domain(st.domain)
        made[name] = replace(st, schedule=s2)

    order: list[str] = []

    def rebuild(nodes):
        out = []
        for n in nodes:
            if isinstance(n, LoopNode):
                out.append(LoopNode(n.loop, rebuild(n.children)))
            else:
                order.append(n)
                out.append(made[n])
        return tuple(out)
    new_tree = rebuild(tree)
    new = scop.copy(statements=tuple(made[n] for n in order), tree=new_tree)
    _check_legal(new, to_old, deps)
    return Rescheduled(new, sched)


def _statement(st: Statement, loops: tuple[Loop, ...], cons: tuple[str, ...],
               guards: tuple[AffCond, ...], args: list[Affine], params: str,
               context: isl.Set) -> tuple[Statement, isl.Map]:
    """``st`` over the iterators of ``loops``, its old iterators the values ``args``, and
    ``{ S0[c0, c1, c2] -> S0[s, r, c] }`` from its new instances to the old ones."""
    if len(args) != len(st.iterators):
        raise NotRescheduled(f"{st.name}: {len(args)} arguments for {len(st.iterators)} "
                             "iterators")
    its = tuple(lp.iterator for lp in loops)
    sub = dict(zip(st.iterators, args))
    tup = f"{st.name}[{', '.join(its)}]"
    dom = isl.Set(f"{params}{{ {tup} : {' and '.join(cons) or 'true'} }}")
    to_old = isl.Map(f"{params}{{ {tup} -> {st.name}[{', '.join(a.isl() for a in args)}] }}")
    to_old = to_old.intersect_domain(dom)
    # the new loops run each instance exactly once, and no other
    ran = to_old.intersect_params(context)
    if not (ran.range().is_equal(st.domain.intersect_params(context))
            and ran.is_injective()):
        raise NotRescheduled(f"{st.name}: the new loops do not run exactly its instances")
    # the same instances as the preimage of the old domain where that is the same set:
    # without the floor divisions of the AST's bounds (a wavefront's floord(c0 + 1, 2)),
    # which would make every box and flow set of a tile piecewise over their remainders
    free = isl.Map(f"{params}{{ {tup} -> {st.name}[{', '.join(a.isl() for a in args)}] }}")
    pre = st.domain.apply(free.reverse()).coalesce()
    if pre.intersect_params(context).is_equal(dom.intersect_params(context)):
        dom = pre.intersect_params(context).coalesce()
        for j, name in enumerate(its):
            dom = dom.set_dim_name(isl.dim_type.set, j, name)
    accesses = tuple(replace(a, relation=to_old.apply_range(a.relation),
                             index=tuple(_subst(x, sub) for x in a.index))
                     for a in st.accesses)
    lhs = _rewrite(st.lhs, sub)
    assert isinstance(lhs, ArrayRef)
    temps = tuple(replace(t, expr=_rewrite(t.expr, sub)) for t in st.temps)
    out = replace(st, iterators=its, loops=tuple(lp.id for lp in loops), domain=dom,
                  schedule=None, accesses=accesses, lhs=lhs, rhs=_rewrite(st.rhs, sub),
                  guards=tuple(cond_c(g) for g in guards), temps=temps)
    return out, to_old


def _check_legal(new: Scop, to_old: Mapping[str, isl.Map], deps: Dependences) -> None:
    """Every dependence of the loops as written goes forward in the new order
    (:class:`NotRescheduled` otherwise): the new program computes the same values."""
    when = isl.UnionMap("{ }")
    for st in new.statements:
        when = when.union(isl.UnionMap.from_map(
            to_old[st.name].reverse().apply_range(st.schedule)))
    before = when.lex_lt_union_map(when)
    if not deps.all.is_subset(before):
        raise NotRescheduled("the schedule breaks a dependence of the loops as written")

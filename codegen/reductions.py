"""Max and min reductions into a scalar, split over the iterations of a loop.

``float diff = 0; for (i ...) for (j ...) { ...; diff = d > diff ? d : diff; }`` carries
``diff`` from each iteration of ``i`` to the next, so the front end runs the loop in the
source's order, on one work-item (a convergence test's sweep over 1024^2 points: 73 ms
on an H100). :func:`split_reductions` gives each iteration of ``i`` its own partial,
started from the value before the loop, and combines the partials after it, in order::

    float diff_part[hi - lo];
    for (int i = lo; i < hi; i++) {
      diff_part[i - lo] = diff;
      for (j ...) { ...; diff_part[i - lo] = d > diff_part[i - lo] ? d : diff_part[i - lo]; }
    }
    for (int i = lo; i < hi; i++)
      diff = diff_part[i - lo] > diff ? diff_part[i - lo] : diff;

so ``i`` is parallel (when nothing else carries a value across it). The result is the
sequential program's, bit for bit. The update keeps ``s`` unless ``e`` *beats* it (``e >
s``, strictly: a NaN beats nothing and nothing beats a NaN, -0 and +0 do not beat each
other), so a fold from ``x`` over a row ends at ``x`` if nothing in the row beats ``x``,
else at the row's first element of the row's largest value ``v``. Let ``m`` be the
sequential value before row ``r`` (``m`` is ``s`` or beats ``s``) and ``p`` row ``r``'s
partial (the fold from ``s``). If ``v`` beats ``m`` it beats ``s``, so ``p`` is that first
element and beats ``m``: combining gives it, as the fold from ``m`` does. Otherwise the
fold from ``m`` stays at ``m``, and ``p`` (``s``, or an element of value ``v``) does not
beat ``m``: combining keeps ``m``. A NaN ``s`` is beaten by nothing, partials and result
alike. For integers every form of max and min is taken (equal values are the same bits);
for floating types only the strict ones (``e > s ? e : s``, ``if (e < s) s = e;``), not
``s > e ? s : e``, which takes a NaN ``e`` and the later of -0 and +0, nor ``fmax``, whose
choice between -0 and +0 is the implementation's.

Sums of floating values stay in the source's order (reassociating them changes the
result); whether a split pays is the model's to say (:func:`codegen.frontend.parse_source`
keeps it only where the loop turns parallel).

.. autofunction:: reduction_loops
.. autofunction:: split_reductions
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

from pycparser import c_ast, c_generator

from codegen.csource import block_items, identifiers, numbered, scalar_type, walk

__all__ = ["reduction_loops", "split_reductions"]

_GEN = c_generator.CGenerator()
_BEATS = {">": ("e", "s"), "<": ("s", "e")}     # e beats s for max: e > s, s < e
_FLOAT_CALLS = {"float": {"fabsf", "sqrtf", "expf", "logf", "fminf", "fmaxf", "sinf",
                          "cosf", "tanhf", "powf", "floorf", "ceilf", "fmodf"},
                "double": {"fabs", "sqrt", "exp", "log", "fmin", "fmax", "sin", "cos",
                           "tanh", "pow", "floor", "ceil", "fmod"}}


@dataclass(frozen=True)
class _Update:
    """A statement that replaces scalar ``s`` by ``e`` where ``e`` beats it: ``node`` is the
    assignment ``s = c ? x : y`` or the ``if (c) s = e;``."""

    node: c_ast.Node
    s: str
    e: c_ast.Node


def _same(a: c_ast.Node, b: c_ast.Node) -> bool:
    return _GEN.visit(a) == _GEN.visit(b)


def _is(node: c_ast.Node, name: str) -> bool:
    return isinstance(node, c_ast.ID) and node.name == name


def _beats(cond: c_ast.Node, s: str, strict: bool) -> c_ast.Node | None:
    """``e`` when ``cond`` says ``e`` beats ``s`` for a max or a min (``e > s``, ``s < e``,
    ``e < s``, ``s > e``; with ``>=``/``<=`` too unless ``strict``), else None."""
    ops = (">", "<") if strict else (">", "<", ">=", "<=")
    if not isinstance(cond, c_ast.BinaryOp) or cond.op not in ops:
        return None
    if _is(cond.right, s) and s not in identifiers(cond.left):
        return cond.left
    if _is(cond.left, s) and s not in identifiers(cond.right):
        return cond.right
    return None


def _update(node: c_ast.Node, scalars: dict[str, str], types: dict[str, str]
            ) -> _Update | None:
    """``node`` as an update of a max or min reduction of one of ``scalars``, or None (see
    the module's text for the forms taken); ``types``: C types of names (:func:`_types`)."""
    if isinstance(node, c_ast.Assignment) and node.op == "=" and isinstance(
            node.lvalue, c_ast.ID) and isinstance(node.rvalue, c_ast.TernaryOp):
        s, t = node.lvalue.name, node.rvalue
        if s not in scalars:
            return None
        strict = types[s] in ("float", "double")
        if _is(t.iffalse, s):                    # s = (e beats s) ? e : s
            e = _beats(t.cond, s, strict)
            if e is not None and _same(e, t.iftrue):
                return _fits(node, s, e, types)
        if _is(t.iftrue, s) and not strict:     # s = (s beats e) ? s : e, integers only
            e = _beats(t.cond, s, False)
            if e is not None and _same(e, t.iffalse):
                return _fits(node, s, e, types)
        return None
    if isinstance(node, c_ast.If) and node.iffalse is None:
        body = block_items(node.iftrue)
        if len(body) != 1 or not isinstance(body[0], c_ast.Assignment):
            return None
        a = body[0]
        if a.op != "=" or not isinstance(a.lvalue, c_ast.ID) or a.lvalue.name not in scalars:
            return None
        s = a.lvalue.name
        e = _beats(node.cond, s, types[s] in ("float", "double"))
        if e is not None and _same(e, a.rvalue):
            return _fits(node, s, e, types)
    return None


def _fits(node: c_ast.Node, s: str, e: c_ast.Node, types: dict[str, str]) -> _Update | None:
    """The update, when ``e`` has ``s``'s type and no side effect (a partial of ``s``'s
    type must compare and store as ``s`` does)."""
    if any(isinstance(n, (c_ast.Assignment, c_ast.FuncCall)) and not _pure_call(n)
           or isinstance(n, c_ast.UnaryOp) and n.op in ("++", "--", "p++", "p--")
           for n in walk(e)):
        return None
    return _Update(node, s, e) if _type(e, types) == types[s] else None


def _pure_call(n: c_ast.Node) -> bool:
    return isinstance(n, c_ast.FuncCall) and isinstance(n.name, c_ast.ID) and any(
        n.name.name in names for names in _FLOAT_CALLS.values())


def _type(e: c_ast.Node, types: dict[str, str]) -> str | None:
    """The C type of an expression, where this module can tell (scalars and array elements
    of known types, casts, the math library, arithmetic of one type); else None."""
    if isinstance(e, c_ast.ID):
        return types.get(e.name)
    if isinstance(e, c_ast.ArrayRef):
        while isinstance(e, c_ast.ArrayRef):
            e = e.name
        return types.get(e.name) if isinstance(e, c_ast.ID) else None
    if isinstance(e, c_ast.Cast):
        return scalar_type(e.to_type.type)
    if isinstance(e, c_ast.FuncCall) and isinstance(e.name, c_ast.ID):
        return next((t for t, names in _FLOAT_CALLS.items() if e.name.name in names), None)
    if isinstance(e, c_ast.UnaryOp) and e.op in ("-", "+"):
        return _type(e.expr, types)
    if isinstance(e, c_ast.BinaryOp) and e.op in ("+", "-", "*", "/"):
        a, b = _type(e.left, types), _type(e.right, types)
        return a if a == b else None
    if isinstance(e, c_ast.TernaryOp):
        a, b = _type(e.iftrue, types), _type(e.iffalse, types)
        return a if a == b else None
    return None


def _types(func: c_ast.FuncDef) -> dict[str, str]:
    """C type of each scalar and each array's elements declared in ``func`` (its parameters
    included); names declared with two types are left out."""
    out: dict[str, str | None] = {}
    for n in walk(func):
        if isinstance(n, c_ast.Decl) and n.name and not isinstance(n.type, c_ast.FuncDecl):
            t = n.type
            while isinstance(t, (c_ast.ArrayDecl, c_ast.PtrDecl)):
                t = t.type
            ty = scalar_type(t)
            out[n.name] = ty if out.get(n.name, ty) == ty else None
    return {k: v for k, v in out.items() if v is not None}


def _scalars(func: c_ast.FuncDef) -> dict[str, str]:
    """The scalars declared once in ``func``'s body, not parameters (another declaration of
    the name would be another variable), by C type."""
    types = _types(func)
    decls = [n for n in walk(func) if isinstance(n, c_ast.Decl) and n.name]
    once = {d.name for d in decls if sum(1 for x in decls if x.name == d.name) == 1}
    return {n.name: types[n.name] for n in walk(func.body) if isinstance(n, c_ast.Decl)
            and n.name in once and n.name in types and isinstance(n.type, c_ast.TypeDecl)}


def _header(loop: c_ast.For) -> tuple[str, c_ast.Node, c_ast.Node, str] | None:
    """``(i, lo, hi, op)`` of ``for (int i = lo; i op hi; i++)`` (``op`` ``<`` or ``<=``),
    else None."""
    init = loop.init
    if isinstance(init, c_ast.DeclList) and len(init.decls) == 1:
        d = init.decls[0]
        i, lo = d.name, d.init
    elif isinstance(init, c_ast.Assignment) and init.op == "=" and isinstance(
            init.lvalue, c_ast.ID):
        i, lo = init.lvalue.name, init.rvalue
    else:
        return None
    c, nx = loop.cond, loop.next
    if lo is None or not isinstance(c, c_ast.BinaryOp) or c.op not in ("<", "<=") \
            or not _is(c.left, i) or i in identifiers(c.right) or i in identifiers(lo):
        return None
    step = (isinstance(nx, c_ast.UnaryOp) and nx.op in ("++", "p++") and _is(nx.expr, i)) or (
        isinstance(nx, c_ast.Assignment) and _is(nx.lvalue, i) and (
            nx.op == "+=" and isinstance(nx.rvalue, c_ast.Constant) and nx.rvalue.value == "1"))
    return (i, lo, c.right, c.op) if step else None


def reduction_loops(func: c_ast.FuncDef) -> list[tuple[int, tuple[str, ...]]]:
    """The ``for`` loops that :func:`split_reductions` can split, outermost first: their
    preorder numbers among ``func``'s ``for`` loops and the scalars each would split (those
    declared outside the loop that the loop touches only in max or min updates, one of
    them in an inner loop), for loops counting up by 1 from and to bounds that use no
    iterator of a loop around them."""
    types = _types(func)
    scalars = _scalars(func)
    updates = [u for n in walk(func.body) if (u := _update(n, scalars, types)) is not None]
    loops = [n for n in walk(func.body) if isinstance(n, c_ast.For)]
    out = []
    for k, lp in enumerate(loops):
        head = _header(lp)
        if head is None:
            continue
        _, lo, hi, _ = head
        outer = {h[0] for o in loops if o is not lp and lp in walk(o)
                 and (h := _header(o)) is not None} | {
            d.name for o in loops if o is not lp and lp in walk(o)
            and isinstance(o.init, c_ast.DeclList) for d in o.init.decls}
        if (identifiers(lo) | identifiers(hi)) & (outer | set(scalars)):
            continue                     # bounds must not move inside the enclosing loops
        inside = list(walk(lp.stmt))
        declared = {n.name for n in inside if isinstance(n, c_ast.Decl)}
        mine = [u for u in updates if u.node in inside]
        names = []
        for s in sorted({u.s for u in mine} - declared):
            uses = sum(1 for n in inside if _is(n, s))
            of_updates = sum(1 for u in mine if u.s == s for n in walk(u.node) if _is(n, s))
            deep = any(u.s == s and any(u.node in walk(x) for x in inside
                                        if isinstance(x, c_ast.For)) for u in mine)
            if uses == of_updates and deep:
                names.append(s)
        if names:
            out.append((k, tuple(names)))
    return out


def split_reductions(func: c_ast.FuncDef, chosen: dict[int, tuple[str, ...]]
                     ) -> c_ast.FuncDef:
    """A copy of ``func`` with the reductions of ``chosen`` (from :func:`reduction_loops`:
    preorder number of a loop -> its scalars; no loop inside another) split over the
    loop's iterations (see the module's text)."""
    func = copy.deepcopy(func)
    types = _types(func)
    scalars = _scalars(func)
    taken = identifiers(func)
    loops = [n for n in walk(func.body) if isinstance(n, c_ast.For)]
    parents = {id(c): n for n in walk(func) for _, c in n.children()}
    for k, names in chosen.items():
        lp = loops[k]
        i, lo, hi, op = _header(lp)
        coord = lp.coord
        size = copy.deepcopy(hi) if _zero(lo) else c_ast.BinaryOp(
            "-", copy.deepcopy(hi), copy.deepcopy(lo), coord)
        if op == "<=":
            size = c_ast.BinaryOp("+", size, c_ast.Constant("int", "1", coord), coord)
        at = c_ast.ID(i, coord) if _zero(lo) else c_ast.BinaryOp(
            "-", c_ast.ID(i, coord), copy.deepcopy(lo), coord)
        decls, starts, combines = [], [], []
        for s in names:
            part = numbered(f"{s}_part", taken)
            ty = scalars[s]
            decls.append(c_ast.Decl(part, [], [], [], [], c_ast.ArrayDecl(
                c_ast.TypeDecl(part, [], None, c_ast.IdentifierType(ty.split(), coord),
                               coord), size, [], coord), None, None, coord))

            def elem(_part=part, _at=at, _coord=coord) -> c_ast.Node:
                return c_ast.ArrayRef(c_ast.ID(_part, _coord), copy.deepcopy(_at), _coord)
            starts.append(c_ast.Assignment("=", elem(), c_ast.ID(s, coord), coord))
            mine = [u for n in walk(lp.stmt) if (u := _update(n, scalars, types)) is not None
                    and u.s == s]
            combines.append(_with_e(mine[0].node, s, elem))
            for u in mine:
                _replace_in(u.node, s, elem)
        lp.stmt = c_ast.Compound(starts + block_items(lp.stmt),
                                 getattr(lp.stmt, "coord", coord))
        combine = c_ast.For(copy.deepcopy(lp.init), copy.deepcopy(lp.cond),
                            copy.deepcopy(lp.next), c_ast.Compound(combines, coord), coord)
        _place(lp, parents[id(lp)], decls, combine)
    return func


def _zero(e: c_ast.Node) -> bool:
    return isinstance(e, c_ast.Constant) and e.value == "0"


def _with_e(update: c_ast.Node, s: str, elem) -> c_ast.Node:
    """The combine step: a copy of ``update`` with its ``e`` the partial ``elem()``."""
    n = copy.deepcopy(update)
    if isinstance(n, c_ast.If):
        cond, a = n.cond, block_items(n.iftrue)[0]
        a.rvalue = elem()
    else:
        t = n.rvalue
        cond = t.cond
        if _is(t.iffalse, s):
            t.iftrue = elem()
        else:
            t.iffalse = elem()
    if _is(cond.right, s):
        cond.left = elem()
    else:
        cond.right = elem()
    return n


def _replace_in(node: c_ast.Node, s: str, elem) -> None:
    """Every ``s`` in ``node`` (an update) replaced, in place, by ``elem()``."""
    for n in list(walk(node)):
        for attr in n.__slots__:
            c = getattr(n, attr, None)
            if _is(c, s):
                setattr(n, attr, elem())


def _place(lp: c_ast.For, parent: c_ast.Node, decls: list[c_ast.Node],
           combine: c_ast.For) -> None:
    """``decls`` before ``lp`` (and before the pragmas just before it) and ``combine``
    after it, in ``lp``'s block, or a block made for them in place of ``lp``."""
    if isinstance(parent, c_ast.Compound):
        items = list(parent.block_items)
        k = next(j for j, x in enumerate(items) if x is lp)
        first = k
        while first > 0 and isinstance(items[first - 1], c_ast.Pragma):
            first -= 1
        parent.block_items = items[:first] + decls + items[first:k + 1] + [combine] \
            + items[k + 1:]
        return
    block = c_ast.Compound(decls + [lp, combine], lp.coord)
    for attr in parent.__slots__:
        if getattr(parent, attr, None) is lp:
            setattr(parent, attr, block)
            return
    raise AssertionError(f"no child {lp!r} in {parent!r}")

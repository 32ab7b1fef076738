"""Max and min reductions into a scalar, and integer sums, split over the iterations of a
loop.

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
``s > e ? s : e``, which takes a NaN ``e`` and the later of -0 and +0. ``s = fmax(s, e)``
(``fmaxf``, ``fmin``, ``fminf``) is taken with ``s`` first: OpenCL and C's libraries
return ``y`` if ``x < y``, otherwise ``x`` (strict in ``e``), and the non-NaN one of a
NaN and a number. The latter also replaces a NaN ``s`` by the first number that comes,
and the argument still holds: from a NaN the fold is the first element of the largest
value, per row and over the rows' partials alike. ``fmax(e, s)`` takes the later of -0
and +0 and stays in order.

Sums of floating values (``s += e``, ``s -= e``) stay in the source's order by default:
reassociating them changes the result's rounding. With ``reassociate`` (``bbmm compile
--reassociate``, as ``-ffast-math`` allows a C compiler) they are split as integer sums
are: each partial starts from 0 and adds its iterations' terms in their order, and the
partials are added to the value before the loop in the loop's order (``s -= e``: the
partials of ``-= e`` are added). The result is then the sum in another order, within the
rounding error of either order, not the C program's bits. Whether a split pays is the
model's to say (:func:`bbmm.codegen.frontend.parse_source` keeps it only where the loop turns
parallel).

.. autofunction:: reduction_loops
.. autofunction:: split_reductions
.. autofunction:: strips
.. autofunction:: flat
.. autofunction:: describe
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

from pycparser import c_ast, c_generator, c_parser

from bbmm.codegen.csource import (
    block_items,
    const_int,
    identifiers,
    numbered,
    scalar_type,
    walk,
)

__all__ = ["FLAT", "STRIP", "describe", "flat", "reduction_loops", "split_reductions",
           "strips"]

_GEN = c_generator.CGenerator()
_FLOAT_CALLS = {"float": {"fabsf", "sqrtf", "expf", "logf", "fminf", "fmaxf", "sinf",
                          "cosf", "tanhf", "powf", "floorf", "ceilf", "fmodf"},
                "double": {"fabs", "sqrt", "exp", "log", "fmin", "fmax", "sin", "cos",
                           "tanh", "pow", "floor", "ceil", "fmod"}}


@dataclass(frozen=True)
class _Update:
    """A statement that folds ``e`` into scalar ``s``: ``node`` is the assignment ``s = c ?
    x : y``, the ``if (c) s = e;``, ``s = fmax(s, e)`` or (integers) ``s += e``."""

    node: c_ast.Node
    s: str
    e: c_ast.Node
    kind: str = "max"
    """``max``, ``min``, or ``+`` (integers)."""

    @property
    def form(self) -> str:
        """The kind, and whether by ``fmax``: updates of one scalar must share it (a fold
        of ``+`` and ``max``, or of ``fmax`` and ``?:`` from a NaN, is no fold of either)."""
        return self.kind + ("()" if isinstance(getattr(self.node, "rvalue", None),
                                               c_ast.FuncCall) else "")

    @property
    def start(self) -> str | None:
        """What a partial starts from: the operation's identity for an integer sum (the
        partials then add to the value before the loop), None for the value before the
        loop itself (a max or min)."""
        return "0" if self.kind == "+" else None


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


def _update(node: c_ast.Node, scalars: dict[str, str], types: dict[str, str],
            reassociate: bool = False) -> _Update | None:
    """``node`` as an update of a max or min reduction of one of ``scalars``, or None (see
    the module's text for the forms taken); ``types``: C types of names (:func:`_types`);
    ``reassociate``: floating-point sums too."""
    if isinstance(node, c_ast.Assignment) and node.op == "=" and isinstance(
            node.lvalue, c_ast.ID) and isinstance(node.rvalue, c_ast.TernaryOp):
        s, t = node.lvalue.name, node.rvalue
        if s not in scalars:
            return None
        strict = types[s] in ("float", "double")
        if _is(t.iffalse, s):                    # s = (e beats s) ? e : s
            e = _beats(t.cond, s, strict)
            if e is not None and _same(e, t.iftrue):
                return _fits(node, s, e, types, _kind(t.cond, s, True))
        if _is(t.iftrue, s) and not strict:     # s = (s beats e) ? s : e, integers only
            e = _beats(t.cond, s, False)
            if e is not None and _same(e, t.iffalse):
                return _fits(node, s, e, types, _kind(t.cond, s, False))
        return None
    if isinstance(node, c_ast.Assignment) and node.op in ("+=", "-=") \
            and isinstance(node.lvalue, c_ast.ID) and node.lvalue.name in scalars:
        s, e = node.lvalue.name, node.rvalue     # an integer sum: any order, same bits
        if s in identifiers(e):
            return None
        if scalars[s] in ("float", "double"):    # a floating sum: another order's rounding
            return _fits(node, s, e, types, "+", check_type=False) if reassociate else None
        if node.op != "+=" or _type(e, types) in (None, "float", "double"):
            return None
        return _fits(node, s, e, types, "+", check_type=False)
    if isinstance(node, c_ast.Assignment) and node.op == "=" and isinstance(
            node.lvalue, c_ast.ID) and isinstance(node.rvalue, c_ast.FuncCall):
        s, call = node.lvalue.name, node.rvalue     # s = fmax(s, e)
        name = call.name.name if isinstance(call.name, c_ast.ID) else None
        args = call.args.exprs if call.args is not None else []
        if s in scalars and name in _FMAX and len(args) == 2 and _is(args[0], s) \
                and s not in identifiers(args[1]):
            return _fits(node, s, args[1], types, _FMAX[name])
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
            return _fits(node, s, e, types, _kind(node.cond, s, True))
    return None


_FMAX = {"fmax": "max", "fmaxf": "max", "fmin": "min", "fminf": "min"}


def _kind(cond: c_ast.BinaryOp, s: str, taken: bool) -> str:
    """``max`` or ``min``: what an update computes that takes ``e`` where ``cond`` is
    ``taken`` (a comparison of ``e`` and ``s``)."""
    op = cond.op
    if _is(cond.left, s):                       # as e OP s
        op = {">": "<", "<": ">", ">=": "<=", "<=": ">="}[op]
    return "max" if (op in (">", ">=")) == taken else "min"


def _fits(node: c_ast.Node, s: str, e: c_ast.Node, types: dict[str, str], kind: str,
          check_type: bool = True) -> _Update | None:
    """The update, when ``e`` has ``s``'s type and no side effect (a partial of ``s``'s
    type must compare and store as ``s`` does)."""
    if any(isinstance(n, (c_ast.Assignment, c_ast.FuncCall)) and not _pure_call(n)
           or isinstance(n, c_ast.UnaryOp) and n.op in ("++", "--", "p++", "p--")
           for n in walk(e)):
        return None
    return _Update(node, s, e, kind) if not check_type or _type(e, types) == types[s] \
        else None


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
    if isinstance(e, c_ast.BinaryOp) and e.op in ("<", ">", "<=", ">=", "==", "!=", "&&",
                                                  "||"):
        return "int"
    if isinstance(e, c_ast.UnaryOp) and e.op == "!":
        return "int"
    if isinstance(e, c_ast.Constant) and e.type == "int":
        return "int"
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


def reduction_loops(func: c_ast.FuncDef, reassociate: bool = False
                    ) -> list[tuple[int, tuple[str, ...]]]:
    """The ``for`` loops that :func:`split_reductions` can split, outermost first: their
    preorder numbers among ``func``'s ``for`` loops and the scalars each would split (those
    declared outside the loop that the loop touches only in updates of one form), for
    loops counting up by 1 from and to bounds that use no iterator of a loop around them.
    A loop whose updates are all in its own body, in no inner loop, is *flat*
    (:func:`flat`). ``reassociate``: floating-point sums too (see the module's text)."""
    types = _types(func)
    scalars = _scalars(func)
    updates = [u for n in walk(func.body)
               if (u := _update(n, scalars, types, reassociate)) is not None]
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
            if uses == of_updates and len({u.form for u in mine if u.s == s}) == 1:
                names.append(s)
        if names:
            out.append((k, tuple(names)))
    return out


STRIP = 4
"""Iterations of the inner loop per partial when the loop is strip-mined (``$BBMM_STRIP``
overrides it, for experiments: :func:`bbmm.codegen.compile.compile_program` reads it once
and passes it down as ``width``; 1 turns strip-mining off). A work-item walks 4
consecutive elements while its neighbours walk the next ones. Per sweep of converge.c's
8192^2 grid on an H100 (``BBMM_STRIP=N python -m bbmm run tests/kernels/converge.c
--param n=8192 --param tmax=40 --param tol=0 --devices 1``, against ``tmax=10``; see
``results/h100x1-2026-11-25/``): one partial per row,
its walk uncoalesced, 10.6 ms; strips of 4 / 8 / 16 / 32, 1.23 / 1.43 / 1.53 / 4.5 ms
(the sweeps alone: 0.40 ms); wider strips walk worse, narrower ones leave more
partials for the rows to combine."""


def split_reductions(func: c_ast.FuncDef, chosen: dict[int, tuple[tuple[str, ...], bool]],
                     reassociate: bool = False, width: int = STRIP
                     ) -> tuple[c_ast.FuncDef, dict[int, tuple[int, set[str]]]]:
    """A copy of ``func`` with the reductions of ``chosen`` (from :func:`reduction_loops`:
    preorder number of a loop -> its scalars, and whether to strip-mine the loop its body
    is; no loop inside another) split over the loop's iterations (see the module's text).
    Strip-mined, the partials are per row and strip of ``width`` (default :data:`STRIP`)
    iterations of the inner loop, combined per row (rows in parallel), then over the rows. Also returns, per
    loop of ``chosen``, the number of loops around it and the names of its partials'
    arrays: the split pays where a loop around their assignments, the split loop or one
    inside it, is parallel."""
    func = copy.deepcopy(func)
    types = _types(func)
    scalars = _scalars(func)
    taken = identifiers(func)
    loops = [n for n in walk(func.body) if isinstance(n, c_ast.For)]
    parents = {id(c): n for n in walk(func) for _, c in n.children()}
    parts: dict[int, tuple[int, set[str]]] = {}
    for k, (names, strip) in chosen.items():
        lp = loops[k]
        parts[k] = (sum(1 for o in loops if o is not lp and lp in walk(o)), set())
        if _flat_loop(lp, names, scalars, types, reassociate):
            _split_flat(lp, parents[id(lp)], names, scalars, types, taken, parts[k][1],
                        reassociate)
            continue
        i, lo, hi, op = _header(lp)
        size = _count(lo, hi, op)
        at = i if _zero(lo) else f"{i} - ({_text(lo)})"
        inner = block_items(lp.stmt)[0] if strip else None
        if strip:
            jb = numbered(f"{_header(inner)[0]}_strip", taken)
            span, strips = _strip_mine(inner, jb, width)
        decls, starts, rows, combines = [], [], [], []
        for s in names:
            ty = scalars[s]
            part = numbered(f"{s}_part", taken)
            parts[k][1].add(part)
            mine = _updates(lp.stmt, s, scalars, types, reassociate)
            if strip:
                row = numbered(f"{s}_row", taken)
                decls += [f"{ty} {part}[{size}][{strips}];", f"{ty} {row}[{size}];"]
                p_at, r_at = f"{part}[{at}][{jb}]", f"{row}[{at}]"
                start = mine[0].start or s
                starts.append(f"{p_at} = {start};")
                rows.append(f"{r_at} = {start}; if ({span} >= 0) "
                            f"for (int {jb} = 0; {jb} <= ({span}) / {width}; {jb}++) "
                            + _stmt(_instance(mine[0].node, s, r_at, p_at)))
                combines.append(_stmt(_instance(mine[0].node, s, None, r_at)))
            else:
                decls.append(f"{ty} {part}[{size}];")
                p_at = f"{part}[{at}]"
                starts.append(f"{p_at} = {mine[0].start or s};")
                combines.append(_stmt(_instance(mine[0].node, s, None, p_at)))
            for u in mine:
                _replace_in(u.node, s, lambda _p=p_at: _expr(_p))
        head = f"for ({_text(lp.init)}; {_text(lp.cond)}; {_text(lp.next)})"
        if strip:
            # for (jb ...) { partials = s; the inner loop, on strip jb only }
            body = _stmts(f"if ({span} >= 0) for (int {jb} = 0; {jb} <= ({span}) / {width}; "
                          f"{jb}++) {{ " + " ".join(starts) + " }")[0]
            body.iftrue.stmt.block_items.append(inner)
            lp.stmt = c_ast.Compound([body], getattr(lp.stmt, "coord", lp.coord))
            after = _stmts(f"{head} {{ {' '.join(rows)} }} {head} {{ {' '.join(combines)} }}")
        else:
            lp.stmt = c_ast.Compound(_stmts(" ".join(starts)) + block_items(lp.stmt),
                                     getattr(lp.stmt, "coord", lp.coord))
            after = _stmts(f"{head} {{ {' '.join(combines)} }}")
        for n in after + (decl_nodes := _stmts(" ".join(decls))):
            for x in walk(n):
                if hasattr(x, "coord"):
                    x.coord = lp.coord
        _place(lp, parents[id(lp)], decl_nodes, after)
    return func, parts


def describe(func: c_ast.FuncDef, k: int, names: tuple[str, ...], strip: bool,
             reassociate: bool = False, width: int = STRIP) -> tuple[str, object]:
    """What :func:`split_reductions` does to loop ``k`` (for ``bbmm compile``'s report),
    and the loop's coordinate: ``max of 'diff' over loop 'i': a partial per row and strip
    of 4`` (``width``: the strip's iterations); a floating-point sum says that it is
    reassociated."""
    types, scalars = _types(func), _scalars(func)
    lp = [n for n in walk(func.body) if isinstance(n, c_ast.For)][k]
    kinds = {u.s: u.kind for n in walk(lp.stmt)
             if (u := _update(n, scalars, types, reassociate))}

    def what1(s: str) -> str:
        if kinds[s] != "+":
            return f"{kinds[s]} of '{s}'"
        if scalars[s] in ("float", "double"):
            return f"sum of '{s}' (reassociated, {scalars[s]})"
        return f"sum of '{s}'"
    what = ", ".join(what1(s) for s in names)
    how = f"a partial per row and strip of {width}" if strip else "a partial per row"
    if _flat_loop(lp, names, scalars, types, reassociate):
        how = (f"a partial per strip of {FLAT[0]}, folded in blocks of "
               + " and ".join(map(str, FLAT[1:])))
    return f"{what} over loop '{_header(lp)[0]}': {how}", lp.coord


FLAT = (8, 64, 64)
"""A flat loop (:func:`flat`) runs in strips of 8 iterations, each folding a partial; the
partials are folded in blocks of 64, those in blocks of 64 again, and the last blocks'
results in order: a loop of n iterations leaves n / 32768 for the last, serial, fold
(with one level of blocks, n / 512: 1.8 ms of a 2^24-element max norm's 1.8 ms per step
on an H100: ``python -m bbmm run scripts/kernels/maxnorm.c --param n=16777216 --param
tmax=40 --devices 1`` against ``tmax=10``; two levels: 0.5 ms)."""


def flat(func: c_ast.FuncDef, k: int, names: tuple[str, ...], reassociate: bool = False
         ) -> bool:
    """Whether loop ``k`` updates ``names`` in no inner loop: a partial per row would be
    one per element, so :func:`split_reductions` strip-mines the loop itself."""
    lp = [n for n in walk(func.body) if isinstance(n, c_ast.For)][k]
    return _flat_loop(lp, names, _scalars(func), _types(func), reassociate)


def _flat_loop(lp: c_ast.For, names, scalars: dict[str, str], types: dict[str, str],
               reassociate: bool = False) -> bool:
    inner = [x for x in walk(lp.stmt) if isinstance(x, c_ast.For)]
    return not any(u.s in names and any(u.node in walk(x) for x in inner)
                   for n in walk(lp.stmt) if (u := _update(n, scalars, types, reassociate)))


def _split_flat(lp: c_ast.For, parent: c_ast.Node, names, scalars: dict[str, str],
                types: dict[str, str], taken: set[str], parts: set[str],
                reassociate: bool = False) -> None:
    """:func:`split_reductions` of a flat loop, in place: ``for (i = lo; i <= last; i++)``
    becomes strips of ``FLAT[0]`` iterations (``i_strip``), each folding a partial
    ``s_part[i_strip]``; blocks of ``FLAT[1]`` partials fold into ``s_block[i_block]``, blocks
    of ``FLAT[2]`` of those into ``s_block2``..., and the last level into the scalar."""
    s1 = FLAT[0]
    i = _header(lp)[0]
    idx = [numbered(f"{i}_strip", taken)] + [numbered(f"{i}_block", taken) for _ in FLAT[1:]]
    ib = idx[0]
    span, n1 = _strip_mine(lp, ib, s1)
    sizes = [n1]
    per = [s1]                          # iterations of the loop per element of each level
    for w in FLAT[1:]:
        sizes.append(f"({sizes[-1]} + {w - 1}) / {w}")
        per.append(per[-1] * w)
    decls, starts, levels, combines = [], [], [[] for _ in FLAT[1:]], []
    for s in names:
        ty = scalars[s]
        arrs = [numbered(f"{s}_part", taken)] + [numbered(f"{s}_block", taken)
                                                 for _ in FLAT[1:]]
        parts.add(arrs[0])
        mine = _updates(lp.stmt, s, scalars, types, reassociate)
        start = mine[0].start or s
        decls += [f"{ty} {a}[{n}];" for a, n in zip(arrs, sizes)]
        at = [f"{a}[{x}]" for a, x in zip(arrs, idx)]
        starts.append(f"{at[0]} = {start};")
        for lv, w in enumerate(FLAT[1:], 1):    # level lv folds FLAT[lv] of level lv - 1
            b, prev = idx[lv], idx[lv - 1]
            levels[lv - 1].append(
                f"{at[lv]} = {start}; for (int {prev} = {w} * {b}; {prev} <= ({span}) / "
                f"{per[lv - 1]} && {prev} <= {w} * {b} + {w - 1}; {prev}++) "
                + _stmt(_instance(mine[0].node, s, at[lv], at[lv - 1])))
        combines.append(_stmt(_instance(mine[0].node, s, None, at[-1])))
        p_at = at[0]
        for u in mine:
            _replace_in(u.node, s, lambda _p=p_at: _expr(_p))
    strip = _stmts(f"if ({span} >= 0) for (int {ib} = 0; {ib} <= ({span}) / {s1}; {ib}++) "
                   f"{{ {' '.join(starts)} }}")[0]
    strip.iftrue.stmt.block_items.append(lp)
    folds = " ".join(f"for (int {b} = 0; {b} <= ({span}) / {n}; {b}++) {{ {' '.join(lines)} }}"
                     for b, n, lines in zip(idx[1:], per[1:], levels))
    after = _stmts(f"if ({span} >= 0) {{ {folds} for (int {idx[-1]} = 0; {idx[-1]} <= "
                   f"({span}) / {per[-1]}; {idx[-1]}++) {{ {' '.join(combines)} }} }}")
    decl_nodes = _stmts(" ".join(decls))
    for n in [strip, *after, *decl_nodes]:
        for x in walk(n):
            if hasattr(x, "coord") and x is not lp and x not in walk(lp):
                x.coord = lp.coord
    # the strips' loop stands where the loop stood (a parallel pragma before it goes: the
    # model finds the strips parallel or not by itself)
    if isinstance(parent, c_ast.Compound):
        items = list(parent.block_items)
        k = next(j for j, x in enumerate(items) if x is lp)
        while k > 0 and isinstance(items[k - 1], c_ast.Pragma):
            del items[k - 1]
            k -= 1
        items[k] = strip
        parent.block_items = items
    else:
        for attr in parent.__slots__:
            if getattr(parent, attr, None) is lp:
                setattr(parent, attr, strip)
    _place(strip, parent, decl_nodes, after)


def strips(func: c_ast.FuncDef, k: int, width: int = STRIP) -> bool:
    """Whether :func:`split_reductions` can strip-mine loop ``k``'s body in strips of
    ``width`` iterations: one ``for`` loop counting up by 1 between bounds that use no
    loop's iterator, and ``width`` more than 1."""
    if width == 1:
        return False
    lp = [n for n in walk(func.body) if isinstance(n, c_ast.For)][k]
    items = block_items(lp.stmt)
    if len(items) != 1 or not isinstance(items[0], c_ast.For):
        return False
    head = _header(items[0])
    iters = {h[0] for o in walk(func.body) if isinstance(o, c_ast.For)
             and (h := _header(o)) is not None}
    return head is not None and not (identifiers(head[1]) | identifiers(head[2])) & iters


def _updates(node: c_ast.Node, s: str, scalars: dict[str, str], types: dict[str, str],
             reassociate: bool = False) -> list[_Update]:
    """The updates of ``s`` in ``node``, in source order."""
    return [u for n in walk(node) if (u := _update(n, scalars, types, reassociate))
            is not None and u.s == s]


def _strip_mine(loop: c_ast.For, jb: str, width: int) -> tuple[str, str]:
    """``for (j = lo; j <= last; j++)`` made, in place, the loop over strip ``jb`` only
    (``j`` from ``lo + width * jb`` to at most ``width`` iterations later), for the caller
    to run under ``span >= 0`` for each ``jb <= span / width``; returns C text of ``span``
    (``last - lo``) and of the number of strips, an array size that must hold for any
    parameters the model allows: ``last / width + 1`` when the loop starts at a
    non-negative constant (the model's division then needs ``last >= -width``, not ``span
    >= -width``), else ``span / width + 1`` (as ``(x + width) / width``)."""
    j, lo, hi, op = _header(loop)
    last = _text(hi) if op == "<=" else f"({_text(hi)}) - 1"
    span = f"({last}) - ({_text(lo)})"
    low = isinstance(lo, c_ast.Constant) and lo.type == "int" and const_int(lo) >= 0
    first = f"({_text(lo)}) + {width} * {jb}"
    init = copy.deepcopy(loop.init)
    if isinstance(init, c_ast.DeclList):
        init.decls[0].init = _expr(first)
    else:
        init.rvalue = _expr(first)
    loop.init = init
    loop.cond = _expr(f"{j} <= {last} && {j} <= {first} + {width - 1}")
    return span, f"(({last if low else span}) + {width}) / {width}"


def _text(node: c_ast.Node) -> str:
    return _GEN.visit(node)


def _stmt(node: c_ast.Node) -> str:
    """C text of a statement, its ``;`` included."""
    text = _GEN.visit(node).strip()
    return text if text.endswith((";", "}")) else text + ";"


def _stmts(text: str) -> list[c_ast.Node]:
    """The statements of C text (names need no declarations to parse)."""
    f = c_parser.CParser().parse(f"void f(void) {{ {text} }}").ext[0]
    return list(f.body.block_items or [])


def _expr(text: str) -> c_ast.Node:
    return _stmts(f"x = {text};")[0].rvalue


def _count(lo: c_ast.Node, hi: c_ast.Node, op: str) -> str:
    """C text of the trip count of ``for (i = lo; i op hi; i++)`` when it runs."""
    n = _text(hi) if _zero(lo) else f"({_text(hi)}) - ({_text(lo)})"
    return f"({n}) + 1" if op == "<=" else n


def _instance(update: c_ast.Node, s: str, s_new: str | None, e_new: str | None
              ) -> c_ast.Node:
    """A copy of ``update`` with ``s`` replaced by the C text ``s_new`` and its ``e`` by
    ``e_new`` (where not None)."""
    n = copy.deepcopy(update)
    if e_new is not None:
        n = _with_e(n, s, lambda: _expr(e_new))
    if s_new is not None:
        _replace_in(n, s, lambda: _expr(s_new))
    return n


def _zero(e: c_ast.Node) -> bool:
    return isinstance(e, c_ast.Constant) and e.value == "0"


def _with_e(update: c_ast.Node, s: str, elem) -> c_ast.Node:
    """The combine step: a copy of ``update`` with its ``e`` the partial ``elem()``."""
    n = copy.deepcopy(update)
    if isinstance(n, c_ast.Assignment) and n.op != "=":
        n.rvalue = elem()                       # s += e
        n.op = "+="                             # s -= e: the partials hold -(sum of e)
        return n
    if isinstance(n.rvalue if isinstance(n, c_ast.Assignment) else None, c_ast.FuncCall):
        n.rvalue.args.exprs[1] = elem()        # s = fmax(s, e)
        return n
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
            elif isinstance(c, list):           # a call's arguments
                setattr(n, attr, [elem() if _is(x, s) else x for x in c])


def _place(lp: c_ast.For, parent: c_ast.Node, decls: list[c_ast.Node],
           after: list[c_ast.Node]) -> None:
    """``decls`` before ``lp`` (and before the pragmas just before it) and ``after``
    after it, in ``lp``'s block, or a block made for them in place of ``lp``."""
    if isinstance(parent, c_ast.Compound):
        items = list(parent.block_items)
        k = next(j for j, x in enumerate(items) if x is lp)
        first = k
        while first > 0 and isinstance(items[first - 1], c_ast.Pragma):
            first -= 1
        parent.block_items = items[:first] + decls + items[first:k + 1] + after \
            + items[k + 1:]
        return
    block = c_ast.Compound(decls + [lp, *after], lp.coord)
    for attr in parent.__slots__:
        if getattr(parent, attr, None) is lp:
            setattr(parent, attr, block)
            return
    raise AssertionError(f"no child {lp!r} in {parent!r}")

"""Small local arrays indexed by constants only become scalars, before the front end.

``float w[3];`` declared in a loop body and used as ``w[0]``, ``w[1]``, ``w[2]`` is three
scalars in all but name: C gives each iteration a fresh array, and no subscript varies.
As an array it would be memory (a copy per iteration of the parallel loops, read and
written through the device's global memory: three times slower than the same stencil
written with three scalars, on an H100); as the scalars ``w_0``, ``w_1``, ``w_2`` it is
what the front end makes of any scalar temporary: a value a kernel keeps in a register,
or, carried across iterations, an expanded local array (:mod:`bbmm.codegen.expand`).

Only arrays declared inside a loop, with constant sizes of at most :data:`MAX_ELEMENTS`
elements and every use a full subscript by integer constants within bounds, change. A
loop of a few constant trips that subscripts one by its iterator (``for (int c = 0; c <
4; c++) f[c] = ...``, a cell's components) is unrolled first, each trip a block of its
own, where that makes more arrays scalars; any other use (``w[k]`` for ``k < n``) keeps
the array as it is.

The other way round, a pointer parameter used only as ``p[e]`` or ``*p`` (``float *x``
of a saxpy, a result returned through ``*dot = s;``) is the array ``float p[]``
(:func:`pointer_arrays`), which the front end sizes by its largest subscript; C passes
both alike.

.. autofunction:: scalarize_small_arrays
.. autofunction:: pointer_arrays
"""
from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Iterable

from pycparser import c_ast

from bbmm.codegen.csource import const_int, elem_ctype, identifiers, replace_children

__all__ = ["MAX_ELEMENTS", "pointer_arrays", "scalarize_small_arrays"]

MAX_ELEMENTS = 16
"""Most elements of an array turned into scalars (registers of a work-item)."""


def _shape(d: c_ast.Decl) -> tuple[list[int], c_ast.Node] | None:
    """Constant extents and the element type node of an array declaration, else None."""
    dims, t = [], d.type
    while isinstance(t, c_ast.ArrayDecl):
        n = const_int(t.dim)
        if n is None or n < 1:
            return None
        dims.append(n)
        t = t.type
    return (dims, t) if dims and isinstance(t, c_ast.TypeDecl) else None


def _candidates(func: c_ast.FuncDef) -> dict[str, tuple[c_ast.Decl, list[int]]]:
    """Arrays declared inside a loop body of ``func`` with small constant extents (a name
    declared twice is left alone: one rename per name)."""
    out: dict[str, tuple[c_ast.Decl, list[int]]] = {}
    seen: set[str] = set()

    class V(c_ast.NodeVisitor):
        depth = 0

        def visit_For(self, n: c_ast.For) -> None:
            self.depth += 1
            self.generic_visit(n)
            self.depth -= 1

        def visit_Decl(self, d: c_ast.Decl) -> None:
            if d.name in seen:
                out.pop(d.name, None)
            elif self.depth and d.init is None and not d.storage:
                s = _shape(d)
                if s is not None and math.prod(s[0]) <= MAX_ELEMENTS:
                    out[d.name] = (d, s[0])
            seen.add(d.name)
            self.generic_visit(d)

    V().visit(func.body)
    return out


def pointer_arrays(func: c_ast.FuncDef) -> tuple[c_ast.FuncDef, frozenset[str],
                                                  frozenset[str]]:
    """``(func', names, tables)``: a copy of ``func`` whose parameters ``T *p`` (T float,
    double or an integer type) used only as ``p[e]`` or ``*p`` are the arrays ``T p[]``,
    every ``*p`` written ``p[0]``, and likewise pointers to rows, ``T (*p)[n]`` as ``T
    p[][n]``, and tables of row pointers used only as ``p[e][f]``, ``T **p`` as ``T
    p[][]`` (``tables``: the C program gets a table of pointers into the rows of one
    block); the front end sizes them by their largest subscripts
    (:meth:`bbmm.codegen.builder.Builder.infer_sizes`). ``func`` itself when there is none. Any
    other use (``p + 1``, ``*(p + i)``, ``p`` passed on, ``p[i]`` alone for ``T **p``)
    leaves the pointer, which the front end refuses with its reason."""
    params = func.decl.type.args.params if func.decl.type.args else []

    def pointee(t: c_ast.Node) -> c_ast.Node:
        while isinstance(t, c_ast.ArrayDecl):        # T (*p)[n]: a pointer to rows
            t = t.type
        return t
    def element(t: c_ast.Node) -> bool:              # an array's element type
        return isinstance(t, c_ast.TypeDecl) and \
            elem_ctype(getattr(t.type, "names", None)) is not None
    names = {p.name for p in params if isinstance(p, c_ast.Decl)
             and isinstance(p.type, c_ast.PtrDecl) and element(pointee(p.type.type))}
    tables = {p.name for p in params if isinstance(p, c_ast.Decl)
              and isinstance(p.type, c_ast.PtrDecl) and isinstance(p.type.type, c_ast.PtrDecl)
              and element(p.type.type.type)}
    if not names and not tables:
        return func, frozenset(), frozenset()

    def uses(node: c_ast.Node, parent: c_ast.Node | None, grand: c_ast.Node | None) -> None:
        if isinstance(node, c_ast.ID) and node.name in names | tables:
            deref = isinstance(parent, c_ast.UnaryOp) and parent.op == "*"
            indexed = isinstance(parent, c_ast.ArrayRef) and parent.name is node
            if node.name in tables:   # p[e][f] only: a row alone is a pointer again
                if not (indexed and isinstance(grand, c_ast.ArrayRef)
                        and grand.name is parent):
                    tables.discard(node.name)
            elif not (deref or indexed):
                names.discard(node.name)
        for _, c in node.children():
            uses(c, node, parent)
    uses(func.body, None, None)
    if not names and not tables:
        return func, frozenset(), frozenset()
    func = copy.deepcopy(func)

    def element(x: c_ast.Node) -> list[c_ast.Node]:
        if isinstance(x, c_ast.UnaryOp) and x.op == "*" and isinstance(x.expr, c_ast.ID) \
                and x.expr.name in names:
            return [c_ast.ArrayRef(x.expr, c_ast.Constant("int", "0", x.coord), x.coord)]
        replace_children(x, element)
        return [x]
    replace_children(func.body, element)
    for p in func.decl.type.args.params:
        if getattr(p, "name", None) in names:
            p.type = c_ast.ArrayDecl(p.type.type, None, [], p.coord)
        elif getattr(p, "name", None) in tables:
            p.type = c_ast.ArrayDecl(c_ast.ArrayDecl(p.type.type.type, None, [], p.coord),
                                     None, [], p.coord)
    return func, frozenset(names), frozenset(tables)


def _index(ref: c_ast.ArrayRef) -> tuple[str | None, list[int | None]]:
    subs = []
    while isinstance(ref, c_ast.ArrayRef):
        subs.append(const_int(ref.subscript))
        ref = ref.name
    return (ref.name if isinstance(ref, c_ast.ID) else None), subs[::-1]


def scalarize_small_arrays(func: c_ast.FuncDef, taken: Iterable[str]
                           ) -> tuple[c_ast.FuncDef, dict[str, str]]:
    """``(func', {scalar name: the C element it stands for})``: a copy of ``func`` whose
    small local arrays indexed by constants only are scalars (``w[1]`` -> ``w_1``), after
    unrolling the loops of a few constant trips that subscript them (``for (int c = 0; c
    < 4; c++) f[c] = ...``) where that makes more of them scalars. ``taken``: every
    identifier the function uses."""
    plain = _scalarize(func, taken)
    cands = _candidates(func)
    if cands:
        unrolled = _scalarize(_unroll_for_arrays(func, set(cands)), taken)
        if _arrays(unrolled[1]) > _arrays(plain[1]):
            return unrolled
    return plain


def _arrays(elems: dict[str, str]) -> set[str]:
    return {e.split("[", 1)[0] for e in elems.values()}


def _scalarize(func: c_ast.FuncDef, taken: Iterable[str]
               ) -> tuple[c_ast.FuncDef, dict[str, str]]:
    cands = _candidates(func)
    if not cands:
        return func, {}

    class Uses(c_ast.NodeVisitor):
        """Drops the candidates some use of which is not a full constant subscript."""

        def visit_ArrayRef(self, n: c_ast.ArrayRef) -> None:
            name, subs = _index(n)
            if name in cands:
                dims = cands[name][1]
                if len(subs) != len(dims) or any(s is None or not 0 <= s < d
                                                 for s, d in zip(subs, dims)):
                    del cands[name]
            base = n
            while isinstance(base, c_ast.ArrayRef):   # the subscripts' own references
                self.visit(base.subscript)
                base = base.name

        def visit_ID(self, n: c_ast.ID) -> None:      # the bare name: a pointer, a size
            cands.pop(n.name, None)

    Uses().visit(func.body)
    if not cands:
        return func, {}
    taken = set(taken)
    names: dict[tuple[str, tuple[int, ...]], str] = {}
    for name, (_, dims) in cands.items():
        for idx in itertools.product(*(range(d) for d in dims)):
            s = f"{name}_{'_'.join(map(str, idx))}"
            while s in taken:
                s += "_"
            taken.add(s)
            names[name, idx] = s
    func = copy.deepcopy(func)

    def replace(x: c_ast.Node) -> list[c_ast.Node]:
        if isinstance(x, c_ast.Decl) and x.name in cands:
            dims, elem = cands[x.name][1], _shape(x)[1]
            return [c_ast.Decl(names[x.name, idx], list(x.quals), [], [], [],
                               c_ast.TypeDecl(names[x.name, idx], list(elem.quals), None,
                                              copy.deepcopy(elem.type), x.coord),
                               None, None, x.coord)
                    for idx in itertools.product(*(range(d) for d in dims))]
        if isinstance(x, c_ast.ArrayRef):
            name, subs = _index(x)
            if name in cands:
                return [c_ast.ID(names[name, tuple(subs)], x.coord)]
        replace_children(x, replace)
        return [x]

    replace_children(func.body, replace)
    elems = {s: f"{n}[{']['.join(map(str, idx))}]" for (n, idx), s in names.items()}
    return func, elems


def _trips(loop: c_ast.For) -> tuple[str, range] | None:
    """``(c, its values)`` of ``for (int c = a; c < b; c++)`` (or ``<=``, ``++c``,
    ``c += 1``) with constant ``a`` and ``b``, else None."""
    init, cond, nxt = loop.init, loop.cond, loop.next
    if not (isinstance(init, c_ast.DeclList) and len(init.decls) == 1):
        return None
    d = init.decls[0]
    first = const_int(d.init)
    if first is None or not isinstance(d.type, c_ast.TypeDecl):
        return None
    c = d.name
    if not (isinstance(cond, c_ast.BinaryOp) and cond.op in ("<", "<=")
            and isinstance(cond.left, c_ast.ID) and cond.left.name == c):
        return None
    last = const_int(cond.right)
    if last is None:
        return None
    step = (isinstance(nxt, c_ast.UnaryOp) and nxt.op in ("p++", "++")
            and isinstance(nxt.expr, c_ast.ID) and nxt.expr.name == c) or (
        isinstance(nxt, c_ast.Assignment) and nxt.op == "+=" and isinstance(nxt.lvalue, c_ast.ID)
        and nxt.lvalue.name == c and const_int(nxt.rvalue) == 1)
    return (c, range(first, last + (cond.op == "<="))) if step else None


def _unrollable(loop: c_ast.For, c: str, arrays: set[str]) -> bool:
    """The body subscripts one of ``arrays`` with ``c``, and leaves ``c`` and the
    control flow alone (no assignment to ``c``, no ``break``/``continue``/``goto``/
    ``return``, no declaration of another ``c``)."""
    found = False

    class V(c_ast.NodeVisitor):
        ok = True

        def visit_ArrayRef(self, n: c_ast.ArrayRef) -> None:
            nonlocal found
            name, _ = _index(n)
            if name in arrays:
                base = n
                while isinstance(base, c_ast.ArrayRef):
                    found |= c in identifiers(base.subscript)
                    base = base.name
            self.generic_visit(n)

        def visit_Assignment(self, n: c_ast.Assignment) -> None:
            if isinstance(n.lvalue, c_ast.ID) and n.lvalue.name == c:
                self.ok = False
            self.generic_visit(n)

        def visit_UnaryOp(self, n: c_ast.UnaryOp) -> None:
            if "++" in n.op or "--" in n.op:
                if isinstance(n.expr, c_ast.ID) and n.expr.name == c:
                    self.ok = False
            self.generic_visit(n)

        def visit_Decl(self, n: c_ast.Decl) -> None:
            if n.name == c:
                self.ok = False
            self.generic_visit(n)

        def generic_visit(self, n: c_ast.Node) -> None:
            if isinstance(n, (c_ast.Break, c_ast.Continue, c_ast.Goto, c_ast.Return,
                              c_ast.Label)):
                self.ok = False
            super().generic_visit(n)

    v = V()
    v.visit(loop.stmt)
    return found and v.ok


def _unroll_for_arrays(func: c_ast.FuncDef, arrays: set[str]) -> c_ast.FuncDef:
    """A copy of ``func`` whose loops of at most :data:`MAX_ELEMENTS` constant trips that
    subscript one of ``arrays`` by their iterator are unrolled, each trip a block of its
    own with the iterator replaced by its value (inner loops first)."""
    func = copy.deepcopy(func)

    def subst(node: c_ast.Node, c: str, k: int) -> c_ast.Node:
        """A copy of ``node`` with every use of ``c`` the constant ``k``."""
        def value(x: c_ast.Node) -> list[c_ast.Node]:
            if isinstance(x, c_ast.ID) and x.name == c:
                return [c_ast.Constant("int", str(k), x.coord)]
            replace_children(x, value)
            return [x]
        return value(copy.deepcopy(node))[0]

    def unroll(x: c_ast.Node) -> list[c_ast.Node]:
        replace_children(x, unroll)                    # inner loops first
        if isinstance(x, c_ast.For):
            t = _trips(x)
            if t is not None and 0 < len(t[1]) <= MAX_ELEMENTS \
                    and _unrollable(x, t[0], arrays):
                c, values = t
                return [c_ast.Compound([c_ast.Compound([subst(x.stmt, c, k)], x.coord)
                                        for k in values], x.coord)]
        return [x]

    replace_children(func.body, unroll)
    return func

"""Small local arrays indexed by constants only become scalars, before the front end.

``float w[3];`` declared in a loop body and used as ``w[0]``, ``w[1]``, ``w[2]`` is three
scalars in all but name: C gives each iteration a fresh array, and no subscript varies.
As an array it would be memory (a copy per iteration of the parallel loops, read and
written through the device's global memory: three times slower than the same stencil
written with three scalars, on an H100); as the scalars ``w_0``, ``w_1``, ``w_2`` it is
what the front end makes of any scalar temporary: a value a kernel keeps in a register,
or, carried across iterations, an expanded local array (:mod:`codegen.expand`).

Only arrays declared inside a loop, with constant sizes of at most :data:`MAX_ELEMENTS`
elements and every use a full subscript by integer constants within bounds, change;
any other use (``w[c]`` in a loop over ``c``) keeps the array as it is.

.. autofunction:: scalarize_small_arrays
"""
from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable

from pycparser import c_ast

__all__ = ["MAX_ELEMENTS", "scalarize_small_arrays"]

MAX_ELEMENTS = 16
"""Most elements of an array turned into scalars (registers of a work-item)."""


def _const(node: c_ast.Node | None) -> int | None:
    if isinstance(node, c_ast.Constant) and node.type == "int":
        text = node.value.rstrip("uUlL")
        try:
            return int(text, 8) if len(text) > 1 and text[0] == "0" and text[1].isdigit() \
                else int(text, 0)
        except ValueError:
            return None
    return None


def _shape(d: c_ast.Decl) -> tuple[list[int], c_ast.Node] | None:
    """Constant extents and the element type node of an array declaration, else None."""
    dims, t = [], d.type
    while isinstance(t, c_ast.ArrayDecl):
        n = _const(t.dim)
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
                if s is not None and _product(s[0]) <= MAX_ELEMENTS:
                    out[d.name] = (d, s[0])
            seen.add(d.name)
            self.generic_visit(d)

    V().visit(func.body)
    return out


def _product(dims: list[int]) -> int:
    p = 1
    for n in dims:
        p *= n
    return p


def _index(ref: c_ast.ArrayRef) -> tuple[str | None, list[int | None]]:
    subs = []
    while isinstance(ref, c_ast.ArrayRef):
        subs.append(_const(ref.subscript))
        ref = ref.name
    return (ref.name if isinstance(ref, c_ast.ID) else None), subs[::-1]


def scalarize_small_arrays(func: c_ast.FuncDef, taken: Iterable[str]
                           ) -> tuple[c_ast.FuncDef, dict[str, str]]:
    """``(func', {scalar name: the C element it stands for})``: a copy of ``func`` whose
    small local arrays indexed by constants only are scalars (``w[1]`` -> ``w_1``).
    ``taken``: every identifier the function uses."""
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

    class R(c_ast.NodeVisitor):
        def generic_visit(self, node: c_ast.Node) -> None:
            for attr in node.__slots__:
                child = getattr(node, attr, None)
                if isinstance(child, list):       # statements, arguments (or names)
                    setattr(node, attr, [y for x in child for y in (
                        self.replace(x) if isinstance(x, c_ast.Node) else [x])])
                elif isinstance(child, c_ast.Node):
                    new = self.replace(child)
                    if len(new) == 1:
                        setattr(node, attr, new[0])

        def replace(self, x: c_ast.Node) -> list[c_ast.Node]:
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
            self.generic_visit(x)
            return [x]

    R().generic_visit(func.body)
    elems = {s: f"{n}[{']['.join(map(str, idx))}]" for (n, idx), s in names.items()}
    return func, elems

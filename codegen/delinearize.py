"""Flat arrays read as rows, before the front end: ``A[i*n + j]`` is ``A[i][j]``.

C code often keeps a matrix in a one-dimensional array (``float *A`` or ``float A[]``)
and computes the offset itself: ``A[i*n + j]``, ``A[(i + 1)*n + j - 1]``, and a grid of
three dimensions likewise, ``A[(i*ny + j)*nz + k]`` (``A[][ny][nz]``, strides peeled off
from the innermost, :func:`_strides`). The product of
an iterator and the parameter ``n`` is not affine, so the polyhedral model cannot take
the subscript as it is; but when every access of the array has the form ``a*n + b`` for
one integer parameter ``n`` (``a`` and ``b`` affine), the array is the two-dimensional
``A[][n]`` accessed at ``[a][b]``: the same element in memory, the same bytes on the
host, as long as ``0 <= b < n`` wherever the access runs. That keeps each element one
pair ``(a, b)``, which the model needs (``(a + 1, b - n)`` would be the same element under
another name, and its dependences would be lost); the front end proves it for every
access (:meth:`bbmm.codegen.builder.Builder.check_rows`) and refuses the program otherwise.
A column written ``n - 1 - j`` (``A[i*n + n - 1 - j]``, a row read backwards) is found in a
second reading, ``wrap``, that takes one ``n`` into the column of such subscripts: the
row ``i`` at ``n - 1 - j`` rather than the row ``i + 1`` at ``-1 - j``.

.. autofunction:: delinearize
.. autoexception:: FlatColumnError
"""
from __future__ import annotations

import copy
from collections.abc import Iterable

from pycparser import c_ast, c_generator

from bbmm.diagnostic import UnsupportedProgramError
from bbmm.codegen.csource import const_int, replace_children

__all__ = ["FlatColumnError", "delinearize"]


class FlatColumnError(UnsupportedProgramError):
    """A flat array's column can leave ``0 .. n - 1`` where an access runs
    (:meth:`bbmm.codegen.builder.Builder.check_rows`); the front end then tries the reading with
    ``wrap`` before it refuses the program."""


_Poly = dict  # monomial (sorted tuple of names, at most three) -> integer coefficient


_GEN = c_generator.CGenerator()


def _poly(e: c_ast.Node, atoms: dict[str, c_ast.Node]) -> _Poly | None:
    """``e`` as a polynomial of degree at most 3 in its identifiers and *atoms* (a
    subexpression that is no sum or product, ``i % 2``, ``(j + 1) / 3``, kept whole
    under the name ``@`` + its text in ``atoms``), or None."""
    k = const_int(e)
    if k is not None:
        return {(): k} if k else {}
    if isinstance(e, c_ast.ID):
        return {(e.name,): 1}
    if isinstance(e, c_ast.UnaryOp) and e.op in ("-", "+"):
        p = _poly(e.expr, atoms)
        return None if p is None else {m: -c if e.op == "-" else c for m, c in p.items()}
    if isinstance(e, c_ast.Cast) and isinstance(e.to_type.type, c_ast.TypeDecl):
        return _poly(e.expr, atoms)
    if isinstance(e, c_ast.BinaryOp) and e.op in ("/", "%", "<<", ">>"):
        key = "@" + _GEN.visit(e)
        atoms[key] = e
        return {(key,): 1}
    if isinstance(e, c_ast.BinaryOp) and e.op in ("+", "-", "*"):
        a, b = _poly(e.left, atoms), _poly(e.right, atoms)
        if a is None or b is None:
            return None
        out: _Poly = dict(a)
        if e.op == "*":
            out = {}
            for ma, ca in a.items():
                for mb, cb in b.items():
                    m = tuple(sorted(ma + mb))
                    if len(m) > 3:
                        return None
                    out[m] = out.get(m, 0) + ca * cb
        else:
            for m, c in b.items():
                out[m] = out.get(m, 0) + (c if e.op == "+" else -c)
        return {m: c for m, c in out.items() if c}
    return None


def _split(p: _Poly, n: str) -> tuple[_Poly, _Poly] | None:
    """``(a, b)`` with ``p = a*n + b``, ``b`` holding no product: every product of ``p``
    must hold ``n``; None otherwise (``a`` holds a product where ``p`` is of degree 3, the
    next stride's: ``i*n*m`` gives ``i*m``, ``i*n*n`` gives ``i*n``)."""
    a: _Poly = {}
    b: _Poly = {}
    for m, c in p.items():
        if n in m:
            rest = list(m)
            rest.remove(n)
            a[tuple(rest)] = c
        elif len(m) > 1:
            return None                         # a product without n
        else:
            b[m] = c
    return a, b


def _strides(polys: list[_Poly], ints: set[str]) -> list[str] | None:
    """The integer parameters that every subscript of an array is a mixed-radix number
    of, outermost first (``[n]`` for ``a*n + b``, ``[ny, nz]`` for ``(a*ny + b)*nz + c``):
    at each step the one parameter every remaining product holds, by which each subscript
    splits (:func:`_split`); None where there is no such one (two strides ``i*n`` and
    ``i*m`` side by side, ``i*j``) or no product at all (``i*n*n`` has the strides
    ``[n, n]``)."""
    out: list[str] = []
    while True:
        prods = [set(m) for p in polys for m in p if len(m) >= 2]
        if not prods:
            return out[::-1] or None
        common = set.intersection(*prods) & ints
        if len(common) != 1:
            return None
        n = common.pop()
        parts = [_split(p, n) for p in polys]
        if any(x is None for x in parts):
            return None
        out.append(n)
        polys = [a for a, _ in parts]


def _wraps(b: _Poly) -> bool:
    """Whether the column ``b`` is below 0 wherever its variables are at least 0 (no
    positive coefficient, and a negative one or a negative constant): ``-1 - j``, ``-j``.
    Then ``b + n`` is the column to try (``n - 1 - j``)."""
    const = b.get((), 0)
    coefs = [c for m, c in b.items() if m]
    return all(c <= 0 for c in coefs) and (const < 0 or any(c < 0 for c in coefs))


def _expr(p: _Poly, atoms: dict[str, c_ast.Node], coord) -> c_ast.Node:
    """C of a polynomial of degree at most 1 (its atoms as they were written)."""
    out: c_ast.Node | None = None
    # variables before the constant, added ones before subtracted: n - j - 1, not -j + n - 1
    for m, c in sorted(p.items(), key=lambda mc: (len(mc[0]) == 0, mc[1] < 0, mc[0])):
        mag = abs(c)
        var = None if not m else copy.deepcopy(atoms[m[0]]) if m[0].startswith("@") \
            else c_ast.ID(m[0], coord)
        term: c_ast.Node = c_ast.Constant("int", str(mag), coord) if var is None else (
            var if mag == 1 else
            c_ast.BinaryOp("*", c_ast.Constant("int", str(mag), coord), var, coord))
        if out is None:
            out = term if c > 0 else c_ast.UnaryOp("-", term, coord)
        else:
            out = c_ast.BinaryOp("+" if c > 0 else "-", out, term, coord)
    return out if out is not None else c_ast.Constant("int", "0", coord)


def delinearize(func: c_ast.FuncDef, int_params: Iterable[str], wrap: bool = False
                ) -> tuple[c_ast.FuncDef, dict[str, tuple[str, ...]]]:
    """``(func', {array: strides})``: a copy of ``func`` whose one-dimensional array
    parameters (``float A[]``, ``float A[n * m]``, a pointer made an array) subscripted
    ``a*n + b``, for one integer parameter ``n`` and at least one access with such a
    product, are ``A[][n]`` subscripted ``[a][b]`` (the first size is inferred from the
    subscripts), and those subscripted ``(a*n + b)*m + c`` are ``A[][n][m]`` at
    ``[a][b][c]`` (strides ``("n", "m")``); ``func`` itself when there is none. An array
    some access of which has another form stays as it is (and its product is refused as
    not affine). With ``wrap``, a column below 0 wherever its variables are not
    (:func:`_wraps`) is read one row up: ``[a - 1][b + n]``, the same element."""
    ints = set(int_params)
    params = func.decl.type.args.params if func.decl.type.args else []
    flat = {p.name for p in params if isinstance(p, c_ast.Decl)
            and isinstance(p.type, c_ast.ArrayDecl) and isinstance(p.type.type, c_ast.TypeDecl)}
    if not flat:
        return func, {}
    refs: dict[str, list[_Poly | None]] = {}
    atoms: dict[str, c_ast.Node] = {}

    def scan(node: c_ast.Node) -> None:
        if isinstance(node, c_ast.ArrayRef) and isinstance(node.name, c_ast.ID) \
                and node.name.name in flat:
            refs.setdefault(node.name.name, []).append(_poly(node.subscript, atoms))
        elif isinstance(node, c_ast.ID) and node.name in flat:
            refs.setdefault(node.name, []).append(None)     # the array without a subscript
        for _, c in node.children():
            if not (isinstance(node, c_ast.ArrayRef) and c is node.name):
                scan(c)
    scan(func.body)
    rows: dict[str, tuple[str, ...]] = {}
    for a, polys in refs.items():
        if any(p is None for p in polys):
            continue
        strides = _strides(polys, ints)
        if strides:
            rows[a] = tuple(strides)
    if not rows:
        return func, {}
    func = copy.deepcopy(func)

    def rows_of(x: c_ast.Node) -> list[c_ast.Node]:
        if isinstance(x, c_ast.ArrayRef) and isinstance(x.name, c_ast.ID) \
                and x.name.name in rows:
            subs, q = [], _poly(x.subscript, atoms)
            for n in reversed(rows[x.name.name]):       # the innermost subscript first
                a, b = _split(q, n)
                if wrap and _wraps(b):
                    a = {m: c for m, c in {**a, (): a.get((), 0) - 1}.items() if c}
                    b = {**b, (n,): b.get((n,), 0) + 1}
                subs.append(b)
                q = a
            ref: c_ast.Node = x.name
            for sub in [q] + subs[::-1]:
                ref = c_ast.ArrayRef(ref, _expr(sub, atoms, x.coord), x.coord)
            return [ref]
        replace_children(x, rows_of)
        return [x]
    replace_children(func.body, rows_of)
    for p in func.decl.type.args.params:
        if getattr(p, "name", None) in rows:
            t = p.type.type
            for n in reversed(rows[p.name]):
                t = c_ast.ArrayDecl(t, c_ast.ID(n, p.coord), [], p.coord)
            p.type = c_ast.ArrayDecl(t, None, [], p.coord)
    return func, rows

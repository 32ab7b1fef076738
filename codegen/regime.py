"""The regime of a nest's tiles: what of the serial iterators its tiles depend on.

A tile's boxes, flow-out and write-out sets are affine in the serial iterators in general
(Floyd's row ``k``), but in a stencil the iterators only decide *which* piece of a
piecewise box applies: heat-2d's write-out is the tile's rows at ``t + 1 == tsteps`` and
empty before. Such a nest's tiles are then the same at every serial iteration with the
same truth values of those comparisons, and the generated driver builds its tile list
once per value (its *regime*) instead of evaluating every box of every tile at every
iteration; the runtime matches the phase by that key for replay
(:meth:`bbmm.runtime.Runtime.run_phase`'s ``spec``), and only the kernels' scalar
arguments change.

:func:`regime` finds the comparisons from the Python expressions the driver evaluates
for the nest (its boxes, its NDRange, its tile range): every use of a serial iterator
must sit in a comparison of serial iterators and parameters only. Otherwise (an
iterator as a coordinate, or compared with a tile bound) the nest has no regime and its
tiles are evaluated afresh at every serial iteration.

:func:`shifts` takes the other such nests, whose tiles read the iterators affinely (Floyd's
row ``k``): the comparisons that pick each affine piece, which the driver's
``nest<N>_sig`` evaluates so that the runtime can move a step on from the steps before
without its tiles (:meth:`bbmm.runtime.Runtime.ahead`).
"""
from __future__ import annotations

import ast
from typing import Any, Iterable, Sequence

__all__ = ["regime"]


class _Refused(Exception):
    """A serial iterator read in a way the analysis does not take."""


def _visit_all(texts: Iterable[str], visit: Any) -> bool:
    """``visit`` every text's syntax tree; False where it refused one."""
    try:
        for text in texts:
            visit(ast.parse(text))
    except _Refused:
        return False
    except SyntaxError as e:  # the driver's own code: cannot be
        raise AssertionError(f"not Python: {e}") from None
    return True


def regime(texts: Iterable[str], serial: Sequence[str], params: Iterable[str]
           ) -> tuple[str, ...] | None:
    """The distinct comparisons (as Python source, in order of appearance) through which
    ``texts`` (expressions, or whole functions: the driver's ``nest<N>_tile``) depend on
    the ``serial`` iterators; ``()`` when they do not depend on them; None when a serial
    iterator is read in any other way, or in a comparison that also reads a name neither
    serial nor a parameter."""
    serial_set = frozenset(serial)
    allowed = serial_set | frozenset(params)
    found: dict[str, None] = {}

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Compare):
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            if names & serial_set:
                if not names <= allowed or any(
                        isinstance(n, (ast.Call, ast.Attribute, ast.Subscript))
                        for n in ast.walk(node)):
                    raise _Refused
                found[ast.unparse(node)] = None
                return
        if isinstance(node, ast.Name) and node.id in serial_set:
            raise _Refused
        for child in ast.iter_child_nodes(node):
            visit(child)

    return tuple(found) if _visit_all(texts, visit) else None


_CONTAINERS = frozenset(["Box.unchecked", "TileSpec", "tuple", "list"])
"""Calls that only hold their arguments: a serial iterator may appear in them."""


def shifts(texts: Iterable[str], serial: Sequence[str], params: Iterable[str]
           ) -> tuple[str, ...] | None:
    """The comparisons (as Python source) that decide which affine piece of ``texts``
    applies, where every value in them is affine in the ``serial`` iterators: while
    their truth values stay the same, every value moves by a constant per unit step of
    the iterators. A ``min`` or ``max`` of values that read the iterators counts as the
    comparisons of each pair of its arguments (which one wins). None where an iterator
    is read in another way (``//``, ``%``, a product of two iterators, a call)."""
    serial_set = frozenset(serial)
    static = frozenset(params)
    found: dict[str, None] = {}

    def fixed(node: ast.AST) -> bool:
        """Whether ``node`` is built of constants and parameters only."""
        return all(isinstance(n, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator,
                                  ast.unaryop, ast.Load))
                   or (isinstance(n, ast.Name) and n.id in static) for n in ast.walk(node))

    def truth(node: ast.AST) -> None:
        """A value that reads an iterator, taken as true or false: its comparison with 0."""
        found[f"({ast.unparse(node)}) != 0"] = None

    def visit(node: ast.AST) -> bool:
        """Whether ``node``'s value reads a serial iterator (checking that it is affine)."""
        if isinstance(node, ast.Name):
            return node.id in serial_set
        if isinstance(node, ast.Compare):
            if any([visit(n) for n in (node.left, *node.comparators)]):
                found[ast.unparse(node)] = None
            return False  # a truth value: constant while the comparison's holds
        if isinstance(node, ast.BinOp):
            left, right = visit(node.left), visit(node.right)
            if not (left or right):
                return False
            if isinstance(node.op, (ast.Add, ast.Sub)):
                return True
            if isinstance(node.op, ast.Mult) and (fixed(node.left) or fixed(node.right)):
                return True
            raise _Refused
        if isinstance(node, ast.UnaryOp):
            inner = visit(node.operand)
            if inner and isinstance(node.op, ast.Not):
                truth(node.operand)
                return False
            if inner and not isinstance(node.op, (ast.USub, ast.UAdd)):
                raise _Refused
            return inner
        if isinstance(node, ast.BoolOp):
            # ``a and b`` is one of its operands, which each one's truth picks
            reads = [visit(v) for v in node.values]
            for v, r in zip(node.values, reads):
                if r:
                    truth(v)
            return any(reads)
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            reads = [visit(a) for a in node.args] + [visit(k.value) for k in node.keywords]
            if name in ("min", "max") and not node.keywords:
                if any(reads):
                    op = ">=" if name == "max" else "<="
                    args = [ast.unparse(a) for a in node.args]
                    for i, a in enumerate(args):
                        for b in args[i + 1:]:
                            found[f"({a}) {op} ({b})"] = None
                    return True
                return False
            if any(reads) and name not in _CONTAINERS:
                raise _Refused
            return False  # a box or a tile: its values are checked one by one above
        if isinstance(node, ast.IfExp):
            if visit(node.test):
                truth(node.test)
            return visit(node.body) | visit(node.orelse)
        if isinstance(node, (ast.Subscript, ast.Attribute, ast.Lambda, ast.comprehension)):
            if any(isinstance(n, ast.Name) and n.id in serial_set for n in ast.walk(node)):
                raise _Refused
            return False
        out = False
        for child in ast.iter_child_nodes(node):
            out = visit(child) or out
        return out

    return tuple(found) if _visit_all(texts, visit) else None

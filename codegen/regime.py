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
"""
from __future__ import annotations

import ast
from typing import Iterable, Sequence

__all__ = ["regime"]


class _NotRegime(Exception):
    pass


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
                    raise _NotRegime
                found[ast.unparse(node)] = None
                return
        if isinstance(node, ast.Name) and node.id in serial_set:
            raise _NotRegime
        for child in ast.iter_child_nodes(node):
            visit(child)

    try:
        for text in texts:
            visit(ast.parse(text))
    except _NotRegime:
        return None
    except SyntaxError as e:  # the driver's own code: cannot be
        raise AssertionError(f"not Python: {e}") from None
    return tuple(found)

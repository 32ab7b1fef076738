"""Early exits as structured branches, before the front end: ``if (c) continue;`` at the
top of a loop body, ``if (c) return;`` at the top of a helper's.

The polyhedral model has no jumps, but an exit at the top level of a block only says
that the rest of the block runs where ``c`` is false: ``if (c) { s; continue; } rest``
is ``if (c) { s; } else { rest }``, which the front end takes like any ``if`` (an affine
``c`` restricts the domains, a condition on the data runs at run time). An exit anywhere
else (inside a nested loop or block, ``break``) is left as it is, for the front end to
refuse with its location.

.. autofunction:: early_exits
.. autofunction:: loop_continues
"""
from __future__ import annotations

import copy
from collections.abc import Callable

from pycparser import c_ast

from codegen.csource import replace_children

__all__ = ["early_exits", "loop_continues"]


def early_exits(items: list[c_ast.Node], kind: type,
                last: Callable[[c_ast.Node], list[c_ast.Node]]) -> list[c_ast.Node]:
    """The statements ``items`` of a block without top-level exits of type ``kind``
    (``c_ast.Continue``, ``c_ast.Return``): ``if (c) { s; X; } rest`` becomes ``if (c) {
    s; last(X) } else { rest }``, and an exit ``X`` of the block itself ``last(X)`` (what
    follows it never runs). ``last``: the statements an exit leaves behind (a return's
    value into a local, nothing for ``continue``)."""
    def tail(block: c_ast.Node) -> list[c_ast.Node] | None:
        stmts = block.block_items or [] if isinstance(block, c_ast.Compound) else [block]
        if not stmts or not isinstance(stmts[-1], kind):
            return None
        return list(stmts[:-1]) + last(stmts[-1])
    for k, it in enumerate(items):
        if isinstance(it, kind):
            return items[:k] + last(it)
        if isinstance(it, c_ast.If) and it.iffalse is None:
            then = tail(it.iftrue)
            if then is not None:
                rest = early_exits(items[k + 1:], kind, last)
                return items[:k] + [c_ast.If(it.cond, c_ast.Compound(then, it.coord),
                                             c_ast.Compound(rest, it.coord), it.coord)]
    return items


def _has(node: c_ast.Node, kind: type) -> bool:
    return isinstance(node, kind) or any(_has(c, kind) for _, c in node.children())


def loop_continues(func: c_ast.FuncDef) -> c_ast.FuncDef:
    """A copy of ``func`` in which the ``continue`` statements at the top level of each
    loop body (``for (...) { if (j > i) continue; ... }``) are branches; ``func`` itself
    when it has none."""
    if not _has(func.body, c_ast.Continue):
        return func
    func = copy.deepcopy(func)

    def visit(x: c_ast.Node) -> list[c_ast.Node]:
        replace_children(x, visit)                  # inner loops first
        if isinstance(x, (c_ast.For, c_ast.While, c_ast.DoWhile)):
            body = x.stmt
            items = list(body.block_items or []) if isinstance(body, c_ast.Compound) \
                else [body]
            new = early_exits(items, c_ast.Continue, lambda _: [])
            if new is not items:
                x.stmt = c_ast.Compound(new, getattr(body, "coord", x.coord))
        return [x]
    replace_children(func.body, visit)
    return func

"""Early exits as structured branches, before the front end: ``if (c) continue;`` at the
top of a loop body, ``if (c) return;`` at the top of a helper's.

The polyhedral model has no jumps, but an exit at the top level of a block only says
that the rest of the block runs where ``c`` is false: ``if (c) { s; continue; } rest``
is ``if (c) { s; } else { rest }``, which the front end takes like any ``if`` (an affine
``c`` restricts the domains, a condition on the data runs at run time). An exit anywhere
else (inside a nested loop or block, ``break``) is left as it is, for the front end to
refuse with its location.

A ``switch`` whose cases each end in ``break`` (cases without statements sharing the next
one's) is the chain of ``if``/``else if`` it means (:func:`switches`).

A kernel that returns a value (``float dot(...) { ...; return s; }``) stores it in a
one-element array of its model instead (:func:`kernel_return`), early returns at the top
of its body included.

.. autofunction:: early_exits
.. autofunction:: loop_continues
.. autofunction:: kernel_return
.. autofunction:: switches
"""
from __future__ import annotations

import copy
from collections.abc import Callable

from pycparser import c_ast

from bbmm.diagnostic import UnsupportedProgramError
from codegen.csource import append_params, is_void, replace_children, scalar_type, walk

__all__ = ["early_exits", "kernel_return", "loop_continues", "switches"]


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
    return any(isinstance(n, kind) for n in walk(node))


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


def kernel_return(func: c_ast.FuncDef, taken: set[str],
                  err: Callable[[str, c_ast.Node], UnsupportedProgramError]
                  ) -> tuple[c_ast.FuncDef, str | None]:
    """``(func', name)``: a kernel returning a scalar with ``return e;`` made to store
    ``e`` in ``name[0]``, a new last parameter ``T name[1]`` (``name``: ``result``, or a
    variant no name of ``taken`` has); ``return`` at the top of the body (``if (n < 1)
    return 0;``) puts the rest in an ``else``. ``(func, None)`` for a kernel returning
    nothing (a final ``return;`` dropped). A return anywhere else is left for the front
    end to refuse."""
    t = func.decl.type.type
    void = is_void(t)
    if not _has(func.body, c_ast.Return):
        return func, None
    func = copy.deepcopy(func)
    items = list(func.body.block_items or [])
    if void:
        func.body.block_items = early_exits(items, c_ast.Return, lambda _: [])
        return func, None
    ctype = scalar_type(t)
    if ctype is None:
        raise err(f"kernel '{func.decl.name}' must return nothing, an integer, float or "
                  "double", func.decl)
    name, k = "result", 1
    while name in taken:
        k += 1
        name = f"result{k}"

    def store(r: c_ast.Return) -> list[c_ast.Node]:
        if r.expr is None:
            raise err(f"kernel '{func.decl.name}' returns no value here", r)
        return [c_ast.Assignment("=", c_ast.ArrayRef(c_ast.ID(name, r.coord),
                                                     c_ast.Constant("int", "0"), r.coord),
                                 r.expr, r.coord)]
    func.body.block_items = early_exits(items, c_ast.Return, store)
    decl = c_ast.Decl(name, [], [], [], [], c_ast.ArrayDecl(
        c_ast.TypeDecl(name, [], None, copy.deepcopy(t.type)), c_ast.Constant("int", "1"),
        []), None, None, func.decl.coord)
    append_params(func, [decl])
    return func, name


def _pure(e: c_ast.Node) -> bool:
    """Whether evaluating ``e`` twice is evaluating it once (no assignment, ``++``,
    ``--`` or call)."""
    return not any(isinstance(n, (c_ast.Assignment, c_ast.FuncCall)) or (
        isinstance(n, c_ast.UnaryOp) and n.op in ("++", "--", "p++", "p--"))
        for n in walk(e))


def _chain(sw: c_ast.Switch) -> c_ast.Node | None:
    """The ``if`` chain of ``sw``, or None where it is no plain chain (a case falling
    through into statements, a ``break`` before a case's end, a selector with side
    effects, labels outside the switch's top-level block)."""
    if not isinstance(sw.stmt, c_ast.Compound) or not _pure(sw.cond):
        return None
    groups: list[tuple[list[c_ast.Node], list[c_ast.Node]]] = []   # (labels, body)
    labels: list[c_ast.Node] = []
    items = sw.stmt.block_items or []
    for k, it in enumerate(items):
        if not isinstance(it, (c_ast.Case, c_ast.Default)):
            return None
        labels.append(it)
        body = list(it.stmts or [])
        if not body:
            if k == len(items) - 1:
                groups.append((labels, []))             # an empty last case
            continue
        if isinstance(body[-1], c_ast.Break):
            body.pop()
        elif k != len(items) - 1:
            return None                                 # falls through into the next
        if any(isinstance(n, c_ast.Break) for b in body for n in _top_breaks(b)):
            return None
        groups.append((labels, body))
        labels = []
    default = [b for ls, b in groups if any(isinstance(x, c_ast.Default) for x in ls)]
    cases = [(ls, b) for ls, b in groups if not any(isinstance(x, c_ast.Default) for x in ls)]
    out: c_ast.Node | None = c_ast.Compound(default[0], sw.coord) if default else None
    for ls, b in reversed(cases):
        test = None
        for x in ls:
            eq = c_ast.BinaryOp("==", copy.deepcopy(sw.cond), x.expr, x.coord)
            test = eq if test is None else c_ast.BinaryOp("||", test, eq, x.coord)
        out = c_ast.If(test, c_ast.Compound(b, ls[0].coord), out, ls[0].coord)
    return out if out is not None else c_ast.Compound([], sw.coord)


def _top_breaks(node: c_ast.Node):
    """``break`` statements of ``node`` that leave the switch (not those of its loops)."""
    if isinstance(node, c_ast.Break):
        yield node
    if isinstance(node, (c_ast.For, c_ast.While, c_ast.DoWhile, c_ast.Switch)):
        return
    for _, c in node.children():
        yield from _top_breaks(c)


def switches(func: c_ast.FuncDef) -> c_ast.FuncDef:
    """A copy of ``func`` whose plain ``switch`` statements are ``if`` chains
    (``switch (A[i] & 3) { case 0: ...; break; case 1: case 2: ...; break; default: ... }``
    is ``if ((A[i] & 3) == 0) {...} else if ((A[i] & 3) == 1 || (A[i] & 3) == 2) {...}
    else {...}``); ``func`` itself when it has none. Any other switch stays, for the front
    end to refuse with its location."""
    if not _has(func.body, c_ast.Switch):
        return func
    func = copy.deepcopy(func)

    def visit(x: c_ast.Node) -> list[c_ast.Node]:
        replace_children(x, visit)
        if isinstance(x, c_ast.Switch):
            chain = _chain(x)
            if chain is not None:
                return [chain]
        return [x]
    replace_children(func.body, visit)
    return func

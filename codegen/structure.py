"""Early exits as structured branches, before the front end: ``if (c) continue;`` at the
top of a loop body, ``if (c) return;`` at the top of a helper's.

The polyhedral model has no jumps, but an exit at the top level of a block only says
that the rest of the block runs where ``c`` is false: ``if (c) { s; continue; } rest``
is ``if (c) { s; } else { rest }``, which the front end takes like any ``if`` (an affine
``c`` restricts the domains, a condition on the data runs at run time).

``break`` and a ``continue`` deeper in a loop body (:func:`loop_jumps`) set a flag instead,
an ``int`` local that the statements after the jump test: ``for (j ...) { if (A[i][j] >
x) { first[i] = j; break; } }`` runs as ``int break_j = 0; for (j ...) if (!break_j) {
if (A[i][j] > x) { first[i] = j; break_j = 1; } }``. The flag is a scalar carried across
the loop's iterations, which the front end expands like any other (one per iteration of
the parallel loops around it); the loop's remaining iterations run and do nothing.

A ``while`` loop that counts (``int k = 0; while (k < n) { ...; k++; }``: the counter set
just before it, stepped by the body's last statement and assigned nowhere else, no
``continue``, which would skip the step) is the ``for`` loop it means
(:func:`while_loops`); any other stays, for the front end to refuse.

Loop bounds kept in integer locals, as polycc (Pluto) writes its tiled loops (``lbp =
max(0, ceild(t1, 2)); ubp = min(...); for (t2 = lbp; t2 <= ubp; t2++)``), are the
expressions they hold (:func:`bound_variables`).

A ``switch`` whose cases each end in ``break`` (cases without statements sharing the next
one's) is the chain of ``if``/``else if`` it means (:func:`switches`).

A kernel that returns a value (``float dot(...) { ...; return s; }``) stores it in a
one-element array of its model instead (:func:`kernel_return`), early returns at the top
of its body included.

.. autofunction:: bound_variables
.. autofunction:: early_exits
.. autofunction:: loop_continues
.. autofunction:: loop_jumps
.. autofunction:: return_flags
.. autofunction:: kernel_return
.. autofunction:: switches
.. autofunction:: while_loops
"""
from __future__ import annotations

import copy
import itertools
from collections.abc import Callable

from pycparser import c_ast

from bbmm.diagnostic import UnsupportedProgramError
from bbmm.codegen.csource import (
    append_params,
    assignments,
    block_items,
    identifiers,
    is_void,
    numbered,
    replace_children,
    scalar_type,
    walk,
)

__all__ = ["bound_variables", "early_exits", "kernel_return", "loop_continues", "loop_jumps",
           "return_flags", "returns_left", "switches", "while_loops"]


def early_exits(items: list[c_ast.Node], kind: type,
                last: Callable[[c_ast.Node], list[c_ast.Node]]) -> list[c_ast.Node]:
    """The statements ``items`` of a block without top-level exits of type ``kind``
    (``c_ast.Continue``, ``c_ast.Return``): ``if (c) { s; X; } rest`` becomes ``if (c) {
    s; last(X) } else { rest }``, and an exit ``X`` of the block itself ``last(X)`` (what
    follows it never runs). ``last``: the statements an exit leaves behind (a return's
    value into a local, nothing for ``continue``)."""
    def tail(block: c_ast.Node) -> list[c_ast.Node] | None:
        stmts = block_items(block)
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


def return_flags(items: list[c_ast.Node], flag: str,
                 last: Callable[[c_ast.Return], list[c_ast.Node]]) -> list[c_ast.Node]:
    """The statements ``items`` of a helper's body with every ``return`` (inside loops,
    deep in blocks) setting the ``int`` local ``flag``: ``last(r)`` then ``flag = 1;``,
    and ``break;`` inside a loop, which the loops around it repeat while the flag is set
    (``if (flag) break;`` after the inner loop); what follows outside every loop runs under
    ``if (!flag)``. :func:`loop_jumps` then makes the breaks flags too."""
    def rewrite(s: c_ast.Node, in_loop: bool) -> tuple[list[c_ast.Node], bool]:
        coord = getattr(s, "coord", None)
        if isinstance(s, c_ast.Return):
            out = last(s) + [c_ast.Assignment("=", c_ast.ID(flag, coord),
                                              c_ast.Constant("int", "1"), coord)]
            return out + ([c_ast.Break(coord)] if in_loop else []), True
        if not _has(s, c_ast.Return):
            return [s], False
        if isinstance(s, c_ast.Compound):
            return [c_ast.Compound(guard(list(s.block_items or []), in_loop), coord)], True
        if isinstance(s, c_ast.If):
            def branch(b: c_ast.Node | None) -> c_ast.Node | None:
                if b is None:
                    return None
                return c_ast.Compound(guard(block_items(b), in_loop),
                                      getattr(b, "coord", coord))
            return [c_ast.If(s.cond, branch(s.iftrue), branch(s.iffalse), coord)], True
        if isinstance(s, c_ast.For):
            s.stmt = c_ast.Compound(guard(block_items(s.stmt), True),
                                    getattr(s.stmt, "coord", coord))
            if in_loop:     # the loop around this one stops too
                return [s, c_ast.If(c_ast.ID(flag, coord), c_ast.Break(coord), None,
                                    coord)], True
            return [s], True
        return [s], False   # a return elsewhere (a while loop): left for the front end

    def guard(its: list[c_ast.Node], in_loop: bool) -> list[c_ast.Node]:
        out: list[c_ast.Node] = []
        for k, s in enumerate(its):
            new, jumps = rewrite(s, in_loop)
            out += new
            if jumps and not in_loop and its[k + 1:]:
                coord = getattr(its[k + 1], "coord", None)
                rest = guard(its[k + 1:], in_loop)
                out.append(c_ast.If(c_ast.UnaryOp("!", c_ast.ID(flag, coord), coord),
                                    c_ast.Compound(rest, coord), None, coord))
                break
        return out
    return guard(items, False)


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
            items = block_items(body)
            new = early_exits(items, c_ast.Continue, lambda _: [])
            if new is not items:
                x.stmt = c_ast.Compound(new, getattr(body, "coord", x.coord))
        return [x]
    replace_children(func.body, visit)
    return func


def loop_jumps(func: c_ast.FuncDef,
               err: Callable[[str, c_ast.Node], UnsupportedProgramError] | None = None
               ) -> tuple[c_ast.FuncDef, frozenset[str]]:
    """A copy of ``func`` in which every ``for`` loop's own ``break`` and ``continue``
    statements (those not of an inner loop or ``switch``) set flags: ``break_i`` (declared
    0 before the loop, which then runs its body only while it is 0) and ``skip_i`` (0 at
    the top of each trip); the statements after a jump, in every block around it up to the
    loop body, run only while the flags are 0. ``func`` itself when it has no jump; a loop
    whose jump sits anywhere but in ``if``/``else`` and blocks (a ``continue`` in a
    ``switch``) is left as it is, for the front end to refuse. A ``break`` of a loop that
    a ``#pragma omp parallel for`` asserts parallel is refused through ``err`` (OpenMP
    forbids it: the iterations after it would not run). Also returns the names of the
    break flags: each is 0 before its loop and only ever set to 1 in it, and the loop's
    whole body runs under ``if (!flag)``, so the loop may stop once the flag is set."""
    if not (_has(func.body, c_ast.Break) or _has(func.body, c_ast.Continue)):
        return func, frozenset()
    if err is not None:
        _parallel_breaks(func.body, err)
    func = copy.deepcopy(func)
    taken = identifiers(func)
    breaks: set[str] = set()

    def fresh(base: str) -> str:
        name = numbered(base, taken)
        if base.startswith("break_"):
            breaks.add(name)
        return name

    def visit(x: c_ast.Node) -> list[c_ast.Node]:
        replace_children(x, visit)                  # inner loops first: their jumps are theirs
        if isinstance(x, c_ast.For):
            return [_flag_jumps(x, fresh)]
        return [x]
    replace_children(func.body, visit)
    return func, frozenset(breaks)


def _parallel_breaks(body: c_ast.Node,
                     err: Callable[[str, c_ast.Node], UnsupportedProgramError]) -> None:
    """Refuse a ``break`` of a loop asserted parallel by a pragma before it (with
    ``collapse(n)``, of any of the n loops)."""
    from bbmm.codegen.builder import PARALLEL_PRAGMAS, collapse_count
    for block in walk(body):
        if not isinstance(block, c_ast.Compound):
            continue
        items = block.block_items or []
        for prev, it in itertools.pairwise(items):
            text = (getattr(prev, "string", None) or "").strip()
            if not (isinstance(prev, c_ast.Pragma) and isinstance(it, c_ast.For)
                    and text.startswith(PARALLEL_PRAGMAS)):
                continue
            loop: c_ast.Node = it
            for _ in range(collapse_count(prev)):
                if not isinstance(loop, c_ast.For):
                    break
                items_in = block_items(loop.stmt)
                brk = next((b for it in items_in for b in _top_breaks(it)), None)
                if brk is not None:
                    raise err(f"'break' in a loop that '#pragma {text}' asserts parallel "
                              "(OpenMP forbids it: the iterations after it would not run)",
                              brk)
                loop = items_in[0] if len(items_in) == 1 else None


def _own_jumps(node: c_ast.Node) -> set[type] | None:
    """The kinds of jump (``c_ast.Break``, ``c_ast.Continue``) in ``node`` that leave the
    loop around it, or None when one sits where :func:`_guarded` cannot rewrite it."""
    if isinstance(node, (c_ast.Break, c_ast.Continue)):
        return {type(node)}
    if isinstance(node, (c_ast.For, c_ast.While, c_ast.DoWhile)):
        return set()                                # their jumps are their own
    if isinstance(node, c_ast.Switch):
        # its breaks are its own; a continue in it would leave the loop from a case
        return None if _has(node, c_ast.Continue) else set()
    kinds: set[type] = set()
    for _, c in node.children():
        k = _own_jumps(c)
        if k is None:
            return None
        kinds |= k
    if kinds and not isinstance(node, (c_ast.If, c_ast.Compound)):
        return None                                 # a jump in a label, a pragma...
    return kinds


def _flag_jumps(loop: c_ast.For, fresh: Callable[[str], str]) -> c_ast.Node:
    """``loop`` with its own jumps as flags (:func:`loop_jumps`): the loop itself, or a
    block declaring the break flag before it."""
    body = loop.stmt
    items = block_items(body)
    kinds = _own_jumps(c_ast.Compound(items))
    if not kinds:
        return loop
    coord = loop.coord
    names = [d.name for d in (getattr(loop.init, "decls", None) or [])]
    if not names and isinstance(loop.init, c_ast.Assignment) and isinstance(
            loop.init.lvalue, c_ast.ID):
        names = [loop.init.lvalue.name]
    it = names[0] if names else "loop"
    brk = fresh(f"break_{it}") if c_ast.Break in kinds else None
    skip = fresh(f"skip_{it}") if c_ast.Continue in kinds else None
    new = _guarded(items, brk, skip)
    if skip:
        new = [_flag_decl(skip, coord)] + new
    if brk:
        new = [c_ast.If(c_ast.UnaryOp("!", c_ast.ID(brk, coord), coord),
                        c_ast.Compound(new, coord), None, coord)]
    loop.stmt = c_ast.Compound(new, getattr(body, "coord", coord))
    if brk:
        return c_ast.Compound([_flag_decl(brk, coord), loop], coord)
    return loop


def _flag_decl(name: str, coord: object) -> c_ast.Decl:
    """``int name = 0;``"""
    return c_ast.Decl(name, [], [], [], [], c_ast.TypeDecl(
        name, [], None, c_ast.IdentifierType(["int"], coord), coord),
        c_ast.Constant("int", "0"), None, coord)


def _guarded(items: list[c_ast.Node], brk: str | None, skip: str | None
             ) -> list[c_ast.Node]:
    """``items`` with the loop's jumps setting their flags and what follows a statement
    that may jump under ``if (!flag)``, for each flag that statement may set."""
    out: list[c_ast.Node] = []
    for k, s in enumerate(items):
        s, flags = _rewrite(s, brk, skip)
        out.append(s)
        if flags:
            rest = _guarded(items[k + 1:], brk, skip)
            if rest:
                coord = getattr(items[k + 1], "coord", None)
                cond = None
                for f in (brk, skip):
                    if f in flags:
                        t = c_ast.UnaryOp("!", c_ast.ID(f, coord), coord)
                        cond = t if cond is None else c_ast.BinaryOp("&&", cond, t, coord)
                out.append(c_ast.If(cond, c_ast.Compound(rest, coord), None, coord))
            break
    return out


def _rewrite(s: c_ast.Node, brk: str | None, skip: str | None
             ) -> tuple[c_ast.Node, set[str]]:
    """``(s', flags)``: statement ``s`` with the loop's jumps setting flags, and the flags
    it may set (:func:`_own_jumps` checked that its jumps lie in ifs and blocks only)."""
    coord = getattr(s, "coord", None)
    if isinstance(s, (c_ast.Break, c_ast.Continue)):
        flag = brk if isinstance(s, c_ast.Break) else skip
        assert flag is not None
        return c_ast.Assignment("=", c_ast.ID(flag, coord), c_ast.Constant("int", "1"),
                                coord), {flag}
    kinds = _own_jumps(s) if isinstance(s, (c_ast.Compound, c_ast.If)) else None
    if not kinds:
        return s, set()
    flags = {f for f, k in ((brk, c_ast.Break), (skip, c_ast.Continue)) if k in kinds}
    if isinstance(s, c_ast.Compound):
        return c_ast.Compound(_guarded(list(s.block_items or []), brk, skip), coord), flags

    def branch(b: c_ast.Node | None) -> c_ast.Node | None:
        if b is None:
            return None
        return c_ast.Compound(_guarded(block_items(b), brk, skip), getattr(b, "coord", coord))
    return c_ast.If(s.cond, branch(s.iftrue), branch(s.iffalse), coord), flags


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
        func.body.block_items = returns_left(
            early_exits(items, c_ast.Return, lambda _: []), taken, lambda _: [])
        return func, None
    ctype = scalar_type(t)
    if ctype is None:
        raise err(f"kernel '{func.decl.name}' must return nothing, an integer, float or "
                  "double", func.decl)
    name = numbered("result", set(taken))

    def store(r: c_ast.Return) -> list[c_ast.Node]:
        if r.expr is None:
            raise err(f"kernel '{func.decl.name}' returns no value here", r)
        return [c_ast.Assignment("=", c_ast.ArrayRef(c_ast.ID(name, r.coord),
                                                     c_ast.Constant("int", "0"), r.coord),
                                 r.expr, r.coord)]
    func.body.block_items = returns_left(early_exits(items, c_ast.Return, store),
                                          taken | {name}, store)
    decl = c_ast.Decl(name, [], [], [], [], c_ast.ArrayDecl(
        c_ast.TypeDecl(name, [], None, copy.deepcopy(t.type)), c_ast.Constant("int", "1"),
        []), None, None, func.decl.coord)
    append_params(func, [decl])
    return func, name


def returns_left(items: list[c_ast.Node], taken: set[str],
                 last: Callable[[c_ast.Return], list[c_ast.Node]]) -> list[c_ast.Node]:
    """``items`` (a kernel's or an inlined helper's body) with the returns
    :func:`early_exits` left (inside loops, deep in blocks) setting a flag ``returned``
    (or ``returned2``... a name not in ``taken``) declared first (:func:`return_flags`)."""
    if not any(isinstance(n, c_ast.Return) for it in items for n in walk(it)) or any(
            isinstance(n, c_ast.Pragma) and (n.string or "").strip() == "scop"
            for it in items for n in walk(it)):
        # none, or in a '#pragma scop' region, which a return would leave for the code
        # after it: left for the front end to refuse
        return items
    flag = numbered("returned", set(taken))
    return [_flag_decl(flag, None)] + return_flags(items, flag, last)


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


def while_loops(func: c_ast.FuncDef) -> c_ast.FuncDef:
    """A copy of ``func`` whose counting ``while`` loops are ``for`` loops: ``int k = lo;
    ... while (c) { body; k += s; }`` is ``int k; ... for (k = lo; c; k += s) { body }``
    when the statements between the counter's setting and the loop do not mention it,
    ``c`` does, the body's last statement steps it (``k++``, ``k--``, ``k += s``, ``k -= s``,
    ``k = k + s``, ``k = s + k``) and nothing else in the body assigns it or continues the loop. ``func``
    itself when it has no ``while``."""
    if not _has(func.body, c_ast.While):
        return func
    func = copy.deepcopy(func)

    def visit(x: c_ast.Node) -> list[c_ast.Node]:
        replace_children(x, visit)
        if isinstance(x, c_ast.Compound) and x.block_items:
            x.block_items = _counted(list(x.block_items))
        return [x]
    replace_children(func, visit)
    return func


def _counted(items: list[c_ast.Node]) -> list[c_ast.Node]:
    """The statements of a block with each counting ``while`` a ``for`` (see
    :func:`while_loops`)."""
    for k, w in enumerate(items):
        if not isinstance(w, c_ast.While):
            continue
        body = block_items(w.stmt)
        name = _step_of(body[-1]) if body else None
        if name is None or name not in identifiers(w.cond) or any(
                assignments(b, {name}) for b in body[:-1]):
            continue
        kinds = _own_jumps(c_ast.Compound(body[:-1]))
        if kinds is None or c_ast.Continue in kinds:
            continue                            # a continue would skip the step
        for j in range(k - 1, -1, -1):          # the counter's setting, just before
            prev = items[j]
            if isinstance(prev, c_ast.Decl) and prev.name == name and prev.init is not None \
                    and scalar_type(prev.type) is not None:
                init = c_ast.Assignment("=", c_ast.ID(name, prev.coord), prev.init,
                                        prev.coord)
                decl = copy.copy(prev)
                decl.init = None
                items[j] = decl
                break
            if isinstance(prev, c_ast.Assignment) and prev.op == "=" and isinstance(
                    prev.lvalue, c_ast.ID) and prev.lvalue.name == name:
                init = prev
                items[j] = c_ast.EmptyStatement(prev.coord)
                break
            if name in identifiers(prev):
                j = -1
                break
        else:
            j = -1
        if j < 0:
            continue
        stmt = c_ast.Compound(body[:-1], getattr(w.stmt, "coord", w.coord))
        items[k] = c_ast.For(init, w.cond, body[-1], stmt, w.coord)
    return items


def bound_variables(func: c_ast.FuncDef) -> c_ast.FuncDef:
    """A copy of ``func`` whose loop bounds kept in integer locals (polycc's tiled code:
    ``lbp = max(0, ceild(t1, 2)); ubp = min(...); #pragma omp parallel for ... for (t2 =
    lbp; t2 <= ubp; t2++)``, ``lbv``/``ubv`` before its inner loops) are the expressions
    they hold, written into the loops, the assignments gone. A variable qualifies when it
    is assigned only by statements ``v = e;`` (``e`` not mentioning it) and read only as
    a bound of a ``for`` loop (its first value, or one side of a comparison of its
    condition) that follows such an assignment in the same block, with nothing but
    pragmas and other such assignments between them, and the value not reading what the
    loop assigns. ``func`` itself when no loop bound is such a variable, or when one is
    read where no such assignment precedes it (the front end then refuses the bound as it
    is)."""
    taken = [d.name for d in walk(func.body) if isinstance(d, c_ast.Decl) and d.name
             and scalar_type(d.type) not in (None, "float", "double")]
    if not taken:
        return func
    original, func = func, copy.deepcopy(func)
    allowed: dict[str, set[int]] = {n: set() for n in taken}
    loops = [x for x in walk(func.body) if isinstance(x, c_ast.For)]

    def bound_ids(lp: c_ast.For) -> list[c_ast.ID]:
        out = []
        init = lp.init
        if isinstance(init, c_ast.DeclList) and len(init.decls) == 1:
            out.append(init.decls[0].init)
        elif isinstance(init, c_ast.Assignment) and init.op == "=":
            out.append(init.rvalue)
        todo = [lp.cond] if lp.cond is not None else []
        while todo:
            c = todo.pop()
            if isinstance(c, c_ast.BinaryOp) and c.op == "&&":
                todo += [c.left, c.right]
            elif isinstance(c, c_ast.BinaryOp) and c.op in ("<", "<=", ">", ">="):
                out += [c.left, c.right]
        return [x for x in out if isinstance(x, c_ast.ID) and x.name in allowed]
    for lp in loops:
        for x in bound_ids(lp):
            allowed[x.name].add(id(x))
    for blk in walk(func.body):
        if isinstance(blk, c_ast.Compound):
            for it in blk.block_items or []:
                if isinstance(it, c_ast.Assignment) and it.op == "=" \
                        and isinstance(it.lvalue, c_ast.ID) and it.lvalue.name in allowed \
                        and it.lvalue.name not in identifiers(it.rvalue):
                    allowed[it.lvalue.name].add(id(it.lvalue))
    for x in walk(func.body):                  # read or written anywhere else: not one
        if isinstance(x, c_ast.ID) and x.name in allowed and id(x) not in allowed[x.name]:
            del allowed[x.name]
    if not any(bound_ids(lp) for lp in loops):
        return original

    def substitute(items: list[c_ast.Node]) -> list[c_ast.Node] | None:
        pending: dict[str, c_ast.Node] = {}
        out = []
        for it in items:
            if isinstance(it, c_ast.Assignment) and it.op == "=" \
                    and isinstance(it.lvalue, c_ast.ID) and it.lvalue.name in allowed:
                pending[it.lvalue.name] = it.rvalue
                continue                         # the value goes into the loops
            if isinstance(it, c_ast.For):
                for x in bound_ids(it):
                    # C computed the value before the loop: it must not read what the
                    # loop assigns (its iterator), which a condition reads anew each trip
                    if x.name not in pending or assignments(it, identifiers(pending[x.name])):
                        return None
                _put_bounds(it, pending)
                pending = {}
            elif not isinstance(it, c_ast.Pragma):
                pending = {}
            out.append(it)
        return out
    for blk in walk(func.body):
        if isinstance(blk, c_ast.Compound) and blk.block_items:
            new = substitute(list(blk.block_items))
            if new is None:
                return original
            blk.block_items = new
    if any(bound_ids(lp) for lp in loops):     # a loop no block holds (a loop's only
        return original                        # statement): no assignment before it
    return func


def _put_bounds(lp: c_ast.For, values: dict[str, c_ast.Node]) -> None:
    """The bounds of ``lp`` that name variables of ``values`` replaced by copies of them."""
    def value(x: c_ast.Node) -> c_ast.Node:
        return copy.deepcopy(values[x.name]) if isinstance(x, c_ast.ID) and x.name in values \
            else x
    init = lp.init
    if isinstance(init, c_ast.DeclList) and len(init.decls) == 1:
        init.decls[0].init = value(init.decls[0].init)
    elif isinstance(init, c_ast.Assignment) and init.op == "=":
        init.rvalue = value(init.rvalue)

    def cond(c: c_ast.Node) -> None:
        if isinstance(c, c_ast.BinaryOp) and c.op == "&&":
            cond(c.left)
            cond(c.right)
        elif isinstance(c, c_ast.BinaryOp) and c.op in ("<", "<=", ">", ">="):
            c.left, c.right = value(c.left), value(c.right)
    if lp.cond is not None:
        cond(lp.cond)


def _step_of(s: c_ast.Node) -> str | None:
    """The counter a statement steps by a constant (``k++``, ``k -= 2``, ``k = k + 1``)."""
    if isinstance(s, c_ast.UnaryOp) and s.op in ("++", "--", "p++", "p--") \
            and isinstance(s.expr, c_ast.ID):
        return s.expr.name
    if isinstance(s, c_ast.Assignment) and isinstance(s.lvalue, c_ast.ID):
        k = s.lvalue.name
        if s.op in ("+=", "-=") and k not in identifiers(s.rvalue):
            return k
        r = s.rvalue
        if s.op == "=" and isinstance(r, c_ast.BinaryOp) and r.op in ("+", "-"):
            for a, b in ((r.left, r.right), (r.right, r.left) if r.op == "+" else ()):
                if isinstance(a, c_ast.ID) and a.name == k and k not in identifiers(b):
                    return k                    # k = k + s, k = s + k, k = k - s
    return None

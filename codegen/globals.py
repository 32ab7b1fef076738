"""Arrays and scalars of the file's scope, before the front end: arrays (and scalars set
elsewhere) taken as parameters of the kernel, constants written in.

C benchmarks often keep their data in file-scope arrays (``#define N 4096`` and ``float
A[N][N], B[N][N];``, PolyBench before 4.0) that the kernel uses without parameters. bbmm
moves data in and out of each array of the model, so a file-scope array the kernel uses
becomes one more parameter of the kernel's model, after the C ones: ``bbmm run`` makes and
fills it like any array, and the sequential C program for ``--check`` gets the same
values copied into the C file's array before the kernel runs and copied back after it
(:func:`bbmm.reference.trampoline`). An array with an initializer (a table of constants)
is refused: its values are the C file's, not inputs bbmm could make.

A file-scope scalar the kernel reads (:func:`file_scalars`) is a constant when it is
``const`` or nothing in the file assigns it (``const int steps = 10;``, ``static double
alpha = 0.25;``, ``int n;`` is 0): its value, converted to its type as C does, is written
where the kernel uses it, so an integer one may bound loops and subscript arrays. One that
another function assigns (``main`` setting ``n = atoi(argv[1])``) is a parameter of the
model, given with ``--param`` and assigned to the C file's variable before the sequential
kernel runs. One the kernel assigns is refused: its value would outlive the call.

.. autofunction:: file_arrays
.. autofunction:: file_scalars
"""
from __future__ import annotations

import copy
from collections.abc import Callable

from pycparser import c_ast

from bbmm.diagnostic import UnsupportedProgramError
from bbmm.codegen.csource import (
    INT_WORDS,
    append_params,
    assignments,
    const_int,
    identifiers,
    params_of,
    replace_children,
    scalar_type,
    walk,
)

__all__ = ["file_arrays", "file_scalars"]


def file_arrays(ast: c_ast.FileAST, func: c_ast.FuncDef,
                err: Callable[[str, c_ast.Node], UnsupportedProgramError]
                ) -> tuple[c_ast.FuncDef, list[str]]:
    """``(func', names)``: a copy of ``func`` with the file-scope arrays its body uses
    appended to its parameters (``static`` and ``extern`` dropped), and their names in
    that order; ``func`` itself and ``[]`` when it uses none. A name the function declares
    itself (a parameter, a local) hides the file's array, as in C."""
    used = _file_names(func)
    found = []
    for d in ast.ext:
        if isinstance(d, c_ast.Decl) and isinstance(d.type, c_ast.ArrayDecl) \
                and d.name in used and d.name not in (f.name for f in found):
            if d.init is not None:
                raise err(f"file-scope array '{d.name}' has an initializer: bbmm makes the "
                          f"kernel's inputs itself; pass the table as a parameter", d)
            found.append(d)
    if not found:
        return func, []
    func = copy.deepcopy(func)
    params = []
    for d in found:
        p = copy.deepcopy(d)
        p.storage = [s for s in p.storage or [] if s not in ("static", "extern")]
        params.append(p)
    append_params(func, params)
    return func, [d.name for d in found]


def _own(func: c_ast.FuncDef) -> set[str]:
    """The names ``func`` declares: its parameters and locals."""
    own = {p.name for p in params_of(func) if getattr(p, "name", None)}
    own |= {d.name for d in walk(func.body) if isinstance(d, c_ast.Decl) and d.name}
    return own


def _file_names(func: c_ast.FuncDef) -> set[str]:
    """The names ``func``'s body uses that it does not declare (the file's, or unknown)."""
    return identifiers(func.body) - _own(func)


def file_scalars(ast: c_ast.FileAST, func: c_ast.FuncDef,
                 err: Callable[[str, c_ast.Node], UnsupportedProgramError]
                 ) -> tuple[c_ast.FuncDef, list[str]]:
    """``(func', names)``: a copy of ``func`` in which the file-scope scalars it reads are
    their values where they are constants, and more parameters (``names``, in order)
    where another function assigns them; ``func`` itself and ``[]`` when it reads none."""
    decls: dict[str, c_ast.Decl] = {}
    # the body's names and the parameters' sizes (float A[N][N] with const int N = 64)
    todo = sorted(identifiers(func) - _own(func) - {func.decl.name})
    while todo:                      # a constant's initializer may read another constant
        name = todo.pop()
        found = [e for e in ast.ext if isinstance(e, c_ast.Decl) and e.name == name
                 and scalar_type(e.type)]
        # 'extern int n;' and 'int n = 5;': the definition
        d = next((e for e in found if e.init is not None), found[-1] if found else None)
        if d is None or name in decls:
            continue
        decls[name] = d
        if d.init is not None:
            todo += sorted(identifiers(d.init) - set(decls))
    if not decls:
        return func, []
    mine = assignments(func.body, set(decls))
    if mine:
        name, node = next(iter(mine.items()))
        raise err(f"file-scope variable '{name}' is assigned by the kernel: its value would "
                  f"outlive the call; make it a parameter or a local", node)
    elsewhere: set[str] = set()
    for f in ast.ext:
        if isinstance(f, c_ast.FuncDef) and f is not func:
            elsewhere |= set(assignments(f.body, set(decls) - _own(f)))
    order = {id(e): k for k, e in enumerate(ast.ext)}  # parameters in the file's order
    params = sorted((d for n, d in decls.items() if n in elsewhere and "const" not in d.quals),
                    key=lambda d: order[id(d)])
    consts = {n: d for n, d in decls.items() if d not in params}
    values: dict[str, c_ast.Node] = {}

    def value(name: str, seen: tuple[str, ...] = ()) -> c_ast.Node:
        if name not in values:
            d = consts[name]
            if name in seen:
                raise err(f"file-scope constant '{name}' is defined through itself", d)
            init = c_ast.Constant("int", "0") if d.init is None else copy.deepcopy(d.init)
            if isinstance(init, c_ast.InitList):
                raise err(f"brace initializer of file-scope scalar '{name}'", d)
            init = _substituted(init, lambda n: value(n, seen + (name,))
                                if n in consts else None)
            values[name] = _converted(init, d)
        return copy.deepcopy(values[name])
    func = copy.deepcopy(func)
    _substituted(func, lambda n: value(n) if n in consts else None)
    if params:
        append_params(func, [_param(d) for d in params])
    return func, [d.name for d in params]


def _substituted(node: c_ast.Node, repl: Callable[[str], c_ast.Node | None]) -> c_ast.Node:
    """``node`` with each identifier ``x`` for which ``repl(x)`` gives a node replaced."""
    if isinstance(node, c_ast.ID):
        new = repl(node.name)
        return node if new is None else new

    def visit(x: c_ast.Node) -> list[c_ast.Node]:
        if isinstance(x, c_ast.ID):
            new = repl(x.name)
            return [x if new is None else new]
        replace_children(x, visit)
        return [x]
    replace_children(node, visit)
    return node


def _converted(init: c_ast.Node, d: c_ast.Decl) -> c_ast.Node:
    """``init`` converted to ``d``'s type as C's initialization does: an integer constant
    as its value (so that it stays affine), anything else under a cast."""
    names = d.type.type.names
    if set(names) <= INT_WORDS:
        v = const_int(init)
        if v is not None:
            return c_ast.Constant("int", str(v)) if v >= 0 else c_ast.UnaryOp(
                "-", c_ast.Constant("int", str(-v)))
    typ = c_ast.Typename(None, [], None, c_ast.TypeDecl(None, [], None,
                                                        c_ast.IdentifierType(list(names))))
    return c_ast.Cast(typ, init)


def _param(d: c_ast.Decl) -> c_ast.Decl:
    """The parameter for file-scope scalar ``d``: its type, no storage class, no value."""
    p = copy.deepcopy(d)
    p.storage = []
    p.quals = [q for q in p.quals if q != "const"]
    p.init = None
    return p

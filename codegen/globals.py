"""Arrays of the file's scope, taken as parameters of the kernel, before the front end.

C benchmarks often keep their data in file-scope arrays (``#define N 4096`` and ``float
A[N][N], B[N][N];``, PolyBench before 4.0) that the kernel uses without parameters. bbmm
moves data in and out of each array of the model, so a file-scope array the kernel uses
becomes one more parameter of the kernel's model, after the C ones: ``bbmm run`` makes and
fills it like any array, and the sequential C program for ``--check`` gets the same
values copied into the C file's array before the kernel runs and copied back after it
(:func:`bbmm.reference.trampoline`). An array with an initializer (a table of constants)
is refused: its values are the C file's, not inputs bbmm could make.

.. autofunction:: file_arrays
"""
from __future__ import annotations

import copy
from collections.abc import Callable

from pycparser import c_ast

from bbmm.diagnostic import UnsupportedProgramError
from codegen.csource import append_params, identifiers, params_of

__all__ = ["file_arrays"]


def file_arrays(ast: c_ast.FileAST, func: c_ast.FuncDef,
                err: Callable[[str, c_ast.Node], UnsupportedProgramError]
                ) -> tuple[c_ast.FuncDef, list[str]]:
    """``(func', names)``: a copy of ``func`` with the file-scope arrays its body uses
    appended to its parameters (``static`` and ``extern`` dropped), and their names in
    that order; ``func`` itself and ``[]`` when it uses none. A name the function declares
    itself (a parameter, a local) hides the file's array, as in C."""
    own = {p.name for p in params_of(func) if getattr(p, "name", None)}

    class Locals(c_ast.NodeVisitor):
        def visit_Decl(self, d: c_ast.Decl) -> None:
            own.add(d.name)
            self.generic_visit(d)
    Locals().visit(func.body)
    used = identifiers(func.body) - own             # the names it declares are in own
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

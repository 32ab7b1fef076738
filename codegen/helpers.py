"""Pure helper functions of the C file (``static inline float sqr(float x)``, the SDK's
``CND``): statements may call them, and the kernels get their definitions.

A helper takes scalar parameters (integer, ``float`` or ``double``) and returns a scalar;
its body may declare scalar locals, assign them, branch, loop and return, and call math
functions and other helpers, but may not touch anything else: no arrays or pointers, no
variable of the file (its value on the device is unknown), no other function (printf has
side effects), no recursion (OpenCL C has none). Everything else is refused with its
location, so a call that is accepted computes on the device what it computes in C.

.. autofunction:: helper
.. autofunction:: opencl_definitions
"""
from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence

from pycparser import c_ast, c_generator

from bbmm.diagnostic import UnsupportedProgramError
from bbmm.codegen.csource import OPENCL_RESERVED, params_of, scalar_type
from bbmm.codegen.scop import Helper

__all__ = ["helper", "opencl_definitions"]


def helper(name: str, defs: Mapping[str, c_ast.FuncDef], math: frozenset[str],
           constants: Mapping[str, str], coord: Callable[[c_ast.Node], object],
           done: dict[str, Helper], active: Sequence[str] = ()) -> Helper:
    """The :class:`Helper` for the call of ``name`` (defined in ``defs``), checked, with the
    helpers it calls added to ``done`` first (``active``: the helpers being checked, for
    recursion). ``math``: pure functions a body may call; ``constants``: known names."""
    if name in done:
        return done[name]
    fd = defs[name]

    def err(msg: str, node: c_ast.Node) -> UnsupportedProgramError:
        return UnsupportedProgramError(f"helper function '{name}': {msg}", coord(node))

    if name in active:
        raise err("is recursive (OpenCL C has no recursion)", fd.decl)
    if name in OPENCL_RESERVED:
        raise err("its name is a word of OpenCL C; rename it", fd.decl)
    ftype = fd.decl.type
    ret = scalar_type(ftype.type)
    if ret is None:
        raise err("must return an integer, float or double", fd.decl)
    params, names = [], set()
    for p in params_of(fd):
        t = scalar_type(getattr(p, "type", None))
        if t is None or not getattr(p, "name", None):
            raise err(f"parameter '{getattr(p, 'name', '?')}' must be a named integer, float "
                      f"or double (no arrays or pointers)", p)
        params.append(t)
        names.add(p.name)
    calls: list[str] = []

    class Check(c_ast.NodeVisitor):
        def visit_Decl(self, d: c_ast.Decl) -> None:
            if scalar_type(d.type) is None or any(s in ("static", "extern")
                                                   for s in d.storage or ()):
                raise err(f"local '{d.name}' must be an integer, float or double (not "
                          f"static, no arrays or pointers)", d)
            names.add(d.name)
            if d.init is not None:
                self.visit(d.init)

        def visit_ID(self, n: c_ast.ID) -> None:
            if n.name not in names and n.name not in constants:
                raise err(f"'{n.name}' is neither a parameter nor a local (a helper may "
                          f"not read or write the file's variables)", n)

        def visit_FuncCall(self, n: c_ast.FuncCall) -> None:
            fn = n.name.name if isinstance(n.name, c_ast.ID) else None
            if fn in math:
                pass
            elif fn in defs and fn != name:
                calls.append(fn)
            elif fn == name:
                raise err("is recursive (OpenCL C has no recursion)", n)
            else:
                raise err(f"calls '{fn}', which is neither a math function nor a helper "
                          f"of this file", n)
            if n.args is not None:
                self.visit(n.args)

        def visit_ArrayRef(self, n: c_ast.ArrayRef) -> None:
            raise err("reads or writes an array (a helper takes scalars only)", n)

        def visit_UnaryOp(self, n: c_ast.UnaryOp) -> None:
            if n.op in ("*", "&"):
                raise err("uses a pointer", n)
            self.generic_visit(n)

        def visit_Goto(self, n: c_ast.Goto) -> None:
            raise err("uses goto", n)

    Check().visit(fd.body)
    for c in calls:
        helper(c, defs, math, constants, coord, done, tuple(active) + (name,))
    plain = copy.deepcopy(fd)
    plain.decl.storage, plain.decl.funcspec = [], []
    source = c_generator.CGenerator().visit(plain)
    done[name] = Helper(name, ret, tuple(params), source, coord(fd.decl))
    return done[name]


_F_MATH = re.compile(r"\b([a-z0-9]+)f\b")


def opencl_definitions(helpers: Sequence[Helper], math: frozenset[str], fp64: bool
                       ) -> list[str]:
    """Lines defining ``helpers`` in a kernel source (guarded, so that the sources of
    several nests can be joined): OpenCL C names C's ``expf`` ``exp`` and its ``abs`` of an
    int returns an unsigned int, so both are mapped back (``abs`` to ``bbmm_c_abs``: PoCL
    defines ``abs`` as a macro), and without double precision ``double`` is ``float`` as
    everywhere in the kernels. ``math``: the math functions' double-precision names
    (``exp``; C's float ones add an ``f``)."""
    if not helpers:
        return []
    out = ["/* helper functions of the C file, as written there */"]
    text = "\n".join(h.source for h in helpers)
    for base in sorted({m.group(1) for m in _F_MATH.finditer(text)
                        if m.group(1) in math}):
        out += [f"#ifndef {base}f", f"#define {base}f {base}", "#endif"]
    c_abs = re.search(r"\babs\s*\(", text) is not None
    if c_abs:
        out += ["#ifndef BBMM_C_ABS", "#define BBMM_C_ABS",
                "int bbmm_c_abs(int x) { return x < 0 ? -x : x; }  /* C's abs(int) is an int */",
                "#endif"]
    for h in helpers:
        src = h.source if fp64 else re.sub(r"\bdouble\b", "float", h.source)
        if c_abs:
            src = re.sub(r"\babs(\s*\()", r"bbmm_c_abs\1", src)
        out += [f"#ifndef BBMM_HELPER_{h.name}", f"#define BBMM_HELPER_{h.name}",
                src.rstrip(), "#endif"]
    return out

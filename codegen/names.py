"""C names that a generated program cannot use, renamed before the front end sees them.

A C kernel's names reach three other languages: isl's set notation (``min``, ``floor``
and ``S0``, a statement's name, are words there), the generated Python host driver
(integer parameters and loop iterators become Python variables, so ``lambda``, ``iter``
or ``np`` cannot) and OpenCL C (``half``, ``local``, ``uint``). Rather than refuse such
a kernel, :func:`rename_unsafe` gives every declared name that one of them cannot take a
*model name* (``iter`` -> ``iter_``) that no name of the function uses, in a copy of the
function's syntax tree; everything after the front end sees model names only.

The user keeps the C names: ``--param iter=10``, ``--init``'s parameters matched by
name, ``--check``'s messages and the front end's errors speak of ``iter``
(:attr:`bbmm.codegen.scop.Scop.c_names`, the driver's ``C_NAMES``, :func:`c_text`).

.. autofunction:: rename_unsafe
.. autofunction:: c_text
.. autofunction:: in_c_names
"""
from __future__ import annotations

import builtins
import contextlib
import copy
import keyword
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping

from pycparser import c_ast

from bbmm.codegen.csource import OPENCL_RESERVED

__all__ = ["ISL_KEYWORDS", "OPENCL_WORDS", "DRIVER_NAMES", "unsafe", "rename_unsafe",
           "c_text", "in_c_names"]

ISL_KEYWORDS = frozenset({"exists", "and", "or", "not", "implies", "mod", "min", "max", "floor",
                          "ceil", "floord", "ceild", "true", "false", "infty", "Infty", "NaN",
                          "nan", "rat"})
"""Words of isl's notation, which a name in a set or map may not be."""

OPENCL_WORDS = OPENCL_RESERVED | frozenset({
    "kernel", "__kernel", "global", "__global", "local", "__local", "constant", "__constant",
    "private", "__private", "read_only", "write_only", "read_write", "half", "bool",
    "complex", "imaginary", "quad", "vec_type_hint", "reqd_work_group_size",
    "work_group_size_hint", "max", "min", "get_global_id", "get_local_id", "get_group_id",
    "get_local_size", "get_global_size", "get_num_groups", "get_work_dim", "barrier",
    "mem_fence", "CLK_LOCAL_MEM_FENCE", "CLK_GLOBAL_MEM_FENCE", "INFINITY", "NAN"})
"""Names a generated kernel may not give a variable: OpenCL C's words and the built-ins
the kernels call (``min``, ``get_global_id``, ``barrier``); the names the generator
declares itself (``lb``, ``g0``, ``slot``) are chosen around the program's."""

DRIVER_NAMES = frozenset({
    "Box", "Tile", "TileSpec", "np", "launch", "device_of", "once_tiles", "tiles_covering", "serial_range",
    "Progress",
    "_ints", "KERNELS", "SLOTS", "ARRAYS", "FUNCTION", "SOURCE", "INT_PARAMS", "FLOAT_PARAMS",
    "run", "default_tile", "annotations", "PARAM_DEFAULTS", "C_NAMES", "LOCALS", "READ_ONLY",
    "RUNS_ONCE", "SHARED"})
"""Names the generated host driver defines or imports itself (the tile bounds ``lb`` and
``ub`` are chosen around the program's names)."""

_DRIVER_PATTERN = re.compile(r"_bbmm_\w*|nest\d+_(tile|kernel)|NEST\d+_\w+")


def unsafe(name: str, array: bool = False) -> str | None:
    """Why a C name cannot be used as it is (None: it can). Arrays are only names in isl
    and OpenCL; scalars and iterators are Python variables of the driver as well."""
    if name in ISL_KEYWORDS:
        return "a word of isl's notation"
    if re.fullmatch(r"S\d+", name):
        return "the form of bbmm's statement names"
    if name in OPENCL_WORDS:
        return "a word of OpenCL C"
    if array:
        return None
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        return "a Python keyword"
    if hasattr(builtins, name):
        return "a Python built-in"
    if name in DRIVER_NAMES or _DRIVER_PATTERN.fullmatch(name):
        return "a name of the generated host driver"
    return None


def _declared(func: c_ast.FuncDef) -> dict[str, bool]:
    """Every name the function declares (parameters, locals, loop variables): is it no
    Python variable of the driver (an array, or a floating-point local: a temporary, not
    an iterator)?"""
    out: dict[str, bool] = {}

    class V(c_ast.NodeVisitor):
        def __init__(self, params: bool):
            self.params = params

        def visit_Decl(self, d: c_ast.Decl) -> None:
            if d.name and not isinstance(d.type, c_ast.FuncDecl):
                names = getattr(getattr(d.type, "type", None), "names", None)
                array = isinstance(d.type, c_ast.ArrayDecl) or (
                    not self.params and names in (["float"], ["double"]))
                out[d.name] = out.get(d.name, True) and array
            self.generic_visit(d)

    if func.decl.type.args is not None:
        V(True).visit(func.decl.type.args)
    V(False).visit(func.body)
    return out


def _model_name(name: str, taken: set[str]) -> str:
    """``name_`` (``name__``... while taken); ``c_name_`` where every such form is still
    unsafe (``NEST1_FRESH_`` has the form of the driver's ``NEST1_*`` names)."""
    stem = name.lstrip("_") or "v"
    for base in (stem, f"c_{stem}"):
        out = f"{base}_"
        while out in taken:
            out += "_"
        if unsafe(out) is None:
            return out
    raise AssertionError(name)             # c_<name>_ is no word of any target


def rename_unsafe(func: c_ast.FuncDef, taken: Iterable[str]) -> tuple[c_ast.FuncDef,
                                                                     dict[str, str]]:
    """``(func', {model name: C name})``: a copy of the kernel function whose declared
    names that isl, Python or OpenCL cannot take are renamed, every use with them.
    ``taken``: every identifier the function uses (a model name avoids them all, so it
    renames only what it should). Called functions' names are left alone."""
    declared = _declared(func)
    taken = set(taken) | set(declared)
    renames: dict[str, str] = {}
    for name, array in declared.items():
        if unsafe(name, array) is not None:
            renames[name] = _model_name(name, taken)
            taken.add(renames[name])
    if not renames:
        return func, {}
    func = copy.deepcopy(func)

    class R(c_ast.NodeVisitor):
        def visit_Decl(self, d: c_ast.Decl) -> None:
            if d.name in renames:
                d.name = renames[d.name]
                t = d.type
                while not isinstance(t, c_ast.TypeDecl) and hasattr(t, "type"):
                    t = t.type
                if isinstance(t, c_ast.TypeDecl):
                    t.declname = d.name
            self.generic_visit(d)

        def visit_ID(self, n: c_ast.ID) -> None:
            if n.name in renames:
                n.name = renames[n.name]

        def visit_FuncCall(self, n: c_ast.FuncCall) -> None:
            if n.args is not None:          # the callee keeps its name
                self.visit(n.args)

    if func.decl.type.args is not None:
        R().visit(func.decl.type.args)
    R().visit(func.body)
    return func, {m: c for c, m in renames.items()}


def c_text(text: str, c_names: Mapping[str, str]) -> str:
    """``text`` (a message, a C expression of the model) with the C names back. Safe: a
    model name is a word no name of the C function is, so each of its occurrences is it."""
    if not c_names:
        return text
    pat = re.compile(r"\b(" + "|".join(map(re.escape, sorted(c_names, key=len,
                                                               reverse=True))) + r")\b")
    return pat.sub(lambda m: c_names[m.group(1)], text)


@contextlib.contextmanager
def in_c_names(c_names: Mapping[str, str]) -> Iterator[None]:
    """Errors (:class:`~bbmm.diagnostic.UnsupportedProgramError`) and warnings raised
    inside speak of the C names, as the user wrote them."""
    from bbmm.diagnostic import UnsupportedProgramError

    if not c_names:
        yield
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        except UnsupportedProgramError as e:
            raise UnsupportedProgramError(c_text(e.message, c_names), e.coord) from None
    for w in caught:     # issued again, after the filters are restored
        warnings.warn_explicit(c_text(str(w.message), c_names), w.category, w.filename,
                               w.lineno)

"""Exported C entry points of the reference library: a trampoline per function bbmm
calls (:func:`trampoline`), so that a ``static`` kernel or initialisation function can be
called, and the library built with them (:func:`reference_library`)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
import ctypes
import os

import numpy as np

from bbmm.diagnostic import UsageError
from .compiler import build_library


def trampoline(function: str, types: list[str] | tuple[str, ...],
               file_vars: Sequence[str | tuple[str, str]] = (),
               returns: str | None = None) -> str:
    """C text of the exported entry point ``_bbmm_<function>``: it takes arguments of
    the given C ``types`` (``void *`` for arrays and pointers; ``void **`` for a table of
    row pointers, passed as the block, its rows and their bytes) and calls ``function``;
    then one argument per variable of ``file_vars`` (the C file's own): a ``void *`` for an
    array (a name), whose bytes it copies into the array before the call and back after
    it, the value for a scalar (``(name, C type)``), which it assigns before the call;
    then, for a function returning the C type ``returns``, a ``void *`` where it stores
    the value."""
    args, cin, cout, call = [], "", "", []
    for i, t in enumerate(types):
        if t == "void **":
            # a table of row pointers (T **A): built here into the rows of one block
            args += [f"void *_bbmm_a{i}", f"long _bbmm_n{i}", f"long _bbmm_s{i}"]
            cin += (f"void **_bbmm_t{i} = __builtin_malloc(sizeof(void *) * (_bbmm_n{i} > 0 "
                    f"? _bbmm_n{i} : 1)); for (long _bbmm_k = 0; _bbmm_k < _bbmm_n{i}; "
                    f"_bbmm_k++) _bbmm_t{i}[_bbmm_k] = (char *) _bbmm_a{i} + _bbmm_k * "
                    f"_bbmm_s{i}; ")
            cout += f" __builtin_free(_bbmm_t{i});"
            call.append(f"(void *) _bbmm_t{i}")
        else:
            args.append(f"{t} _bbmm_a{i}")
            call.append(f"_bbmm_a{i}")
    for i, g in enumerate(file_vars):
        if isinstance(g, tuple):
            args.append(f"{g[1]} _bbmm_g{i}")
            cin += f"{g[0]} = _bbmm_g{i}; "
        else:
            args.append(f"void *_bbmm_g{i}")
            cin += f"__builtin_memcpy({g}, _bbmm_g{i}, sizeof {g}); "
            cout += f" __builtin_memcpy(_bbmm_g{i}, {g}, sizeof {g});"
    if returns:
        args.append("void *_bbmm_r")
    into = f"*({returns} *) _bbmm_r = " if returns else "(void) "
    return (f'__attribute__((visibility("default"))) void _bbmm_{function}('
            f'{", ".join(args) or "void"}) {{ {cin}{into}{function}({", ".join(call)});'
            f'{cout} }}')


def _int_types(scop) -> dict[str, str]:
    """The C type of each integer parameter of the scop (``int`` unless declared)."""
    return dict(zip(scop.int_params, scop.int_param_types or ("int",) * len(scop.int_params)))


def _array_args(a: np.ndarray, table: bool) -> tuple[list[Any], list[Any]]:
    """``(ctypes, values)`` passing array ``a`` to a trampoline: its data, and for a table
    of row pointers (:func:`trampoline`'s ``void **``) its rows and their bytes too."""
    if table:
        return [ctypes.c_void_p, ctypes.c_long, ctypes.c_long], \
            [a.ctypes.data, a.shape[0], a.strides[0]]
    return [ctypes.c_void_p], [a.ctypes.data]


def _file_vars(scop) -> tuple[str | tuple[str, str], ...]:
    """:func:`trampoline`'s ``file_vars`` of the scop: its file-scope arrays by their C
    names, its file-scope scalars with their C types."""
    ints = _int_types(scop)
    scalars = {**ints, **dict(scop.float_params)}
    return tuple((scop.c_name(g), scalars[g]) if g in scalars else scop.c_name(g)
                 for g in scop.globals)


def _c_args(scop) -> list[str]:
    """The kernel's arguments that are parameters of the C function (not the file-scope
    arrays or the returned value's array the model adds)."""
    extra = set(scop.globals) | {scop.returns}
    return [a for a in scop.args if a not in extra]


def _kernel_trampoline(scop) -> str:
    ints = _int_types(scop)
    floats = dict(scop.float_params)
    returns = next((a.ctype for a in scop.param_arrays if a.name == scop.returns), None)
    return trampoline(scop.function, [ints.get(a) or floats.get(a) or (
        "void **" if a in scop.tables else "void *") for a in _c_args(scop)],
        _file_vars(scop), returns)


def init_signature(scop, name: str, defines: Mapping[str, object] | None = None,
                   include_dirs: tuple[str, ...] | list[str] = ()):
    """Parameters (:class:`bbmm.codegen.csource.CParam`) of the C file's function ``name``."""
    from bbmm.codegen import csource

    src = csource.read_file(scop.filename, defines, include_dirs)
    f = csource.function_def(src.ast, name)
    if f is None:
        found = [e.decl.name for e in src.ast.ext if type(e).__name__ == "FuncDef"]
        raise UsageError(f"--init {name}: {scop.filename} defines no function {name} "
                         f"(its functions: {', '.join(found) or 'none'})")
    return csource.signature(f)


def reference_library(scop, defines: Mapping[str, object] | None = None,
                      include_dirs: tuple[str, ...] | list[str] = (), init: str | None = None,
                      cache_dir: str | os.PathLike | None = None,
                      sources: Sequence[str | os.PathLike] = ()) -> Path:
    """:func:`build_library` of the scop's file with entry points for the kernel and, if
    given, the initialisation function ``init`` (either may be ``static``); ``sources``:
    more C files to build with it (:func:`extra_sources`)."""
    entries = [_kernel_trampoline(scop)]
    if init is not None:
        sig = init_signature(scop, init, defines, include_dirs)
        entries.append(trampoline(init, [p.ctype if p.kind in ("int", "float") else
                                         "void **" if p.kind == "table" else "void *"
                                         for p in sig],
                                  _file_vars(scop)))
    return build_library(scop.filename, defines, cache_dir, include_dirs=include_dirs,
                         entry_points=tuple(entries), sources=sources)

"""Calling the reference library through ctypes: loading it from a verified private copy
(:func:`load_library`), and calling the kernel (:func:`call_kernel`) and the file's
initialisation function (:func:`call_init`) on numpy arrays."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
import ctypes
import functools
import os
import tempfile

import numpy as np

from bbmm.cache import is_hashed, read_verified
from bbmm.diagnostic import BBMMError, UsageError
from .common import _CTYPES_ELEM, _DTYPES
from .trampolines import _array_args, _c_args, _int_types


def _entry(lib: str | os.PathLike | ctypes.CDLL, fname: str):
    """The library's ``_bbmm_<fname>`` trampoline, else its exported ``fname``."""
    dll = load_library(lib)
    for name in (f"_bbmm_{fname}", fname):
        try:
            return getattr(dll, name)
        except AttributeError:
            pass
    raise UsageError(f"function {fname} not found in the reference library {lib} "
                     f"(is it static?)")


_MEMFDS: list[int] = []


@functools.lru_cache(maxsize=None)
def _load(path: str) -> ctypes.CDLL:
    """Load a library; a cache entry (:func:`bbmm.cache.store`: its hash, then its bytes)
    only if its bytes match the hash, and then from a private copy of exactly the bytes
    checked (nobody can swap the file between the check and the load)."""
    mode = getattr(os, "RTLD_LOCAL", 0) | getattr(os, "RTLD_NOW", 0)
    if not is_hashed(Path(path)):           # a library of the caller's, not the cache's
        return ctypes.CDLL(path, mode=mode)
    data = read_verified(Path(path))
    if data is None:
        raise BBMMError(f"reference library {path} changed while in use (now damaged); "
                        f"run again")
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        # the descriptor stays open: the loader knows a library by its name, and a closed
        # descriptor's number (its /proc/self/fd name) would come back for the next one
        fd = os.memfd_create("bbmm-reference")
        with open(fd, "wb", closefd=False) as f:
            f.write(data)
        _MEMFDS.append(fd)
        return ctypes.CDLL(f"/proc/self/fd/{fd}", mode=mode)
    with tempfile.TemporaryDirectory(prefix="bbmm-lib-") as d:
        copy = os.path.join(d, os.path.basename(path))
        with open(copy, "wb") as f:
            f.write(data)
        return ctypes.CDLL(copy, mode=mode)


def load_library(lib: str | os.PathLike | ctypes.CDLL) -> ctypes.CDLL:
    """A loaded library (each path is loaded once per process)."""
    if isinstance(lib, ctypes.CDLL):
        return lib
    try:
        return _load(os.fspath(Path(lib).resolve()))
    except OSError as e:
        raise UsageError(f"cannot load reference library {lib}: {e}") from None




def dtype_of(ctype: str) -> np.dtype:
    """numpy dtype of an array element type (``float`` -> float32, ``int`` -> C int)."""
    try:
        return _DTYPES[ctype]
    except KeyError:
        raise UsageError(f"unsupported array element type {ctype!r}") from None


def _int_ctype(ctype: str):
    words = ctype.split()
    fixed = {"size_t": ctypes.c_size_t, "ptrdiff_t": ctypes.c_ssize_t,
             "int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64,
             "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64}
    for w in words:
        if w in fixed:
            return fixed[w]
    unsigned = "unsigned" in words
    longs = words.count("long")
    if longs >= 2:
        return ctypes.c_ulonglong if unsigned else ctypes.c_longlong
    if longs == 1:
        return ctypes.c_ulong if unsigned else ctypes.c_long
    if "short" in words:
        return ctypes.c_ushort if unsigned else ctypes.c_short
    return ctypes.c_uint if unsigned else ctypes.c_int


def _int_value(name: str, value: object, ct) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise UsageError(f"integer parameter {name} must be an int, got {value!r}")
    bits = 8 * ctypes.sizeof(ct)
    signed = ct(-1).value == -1
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if not lo <= int(value) <= hi:
        raise UsageError(f"integer parameter {name}={value} does not fit its C type")
    return int(value)


def _check_array(scop, name: str, a: object, params: Mapping[str, int]) -> np.ndarray:
    arr = scop.array(name)
    want_dtype = dtype_of(arr.ctype)
    want_shape = arr.shape(params)
    if not isinstance(a, np.ndarray):
        raise UsageError(f"array {name} must be a numpy array, got {type(a).__name__}")
    if a.dtype != want_dtype:
        raise UsageError(f"array {name} ({arr.ctype}) needs dtype {want_dtype}, got {a.dtype}")
    if a.shape != want_shape:
        raise UsageError(f"array {name} needs shape {want_shape} for "
                         f"{_fmt_params(params)}, got {a.shape}")
    if not a.flags.c_contiguous:
        raise UsageError(f"array {name} must be C-contiguous")
    if not a.flags.writeable:
        raise UsageError(f"array {name} must be writeable")
    return a


def _fmt_params(params: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "no parameters"


def call_kernel(lib: str | os.PathLike | ctypes.CDLL, scop,
                params: Mapping[str, int], scalars: Mapping[str, float],
                arrays: Mapping[str, np.ndarray], function: str | None = None) -> None:
    """Call ``function`` (default ``scop.function``) of the library in place on ``arrays``.

    Arguments follow ``scop.args``: integer parameters from ``params`` (as their declared
    C type), float/double scalars from ``scalars``, arrays as pointers to the numpy data,
    which must be C-contiguous with the element dtype (float32, float64, C int) and the
    shape of the scop's extents at ``params``. Raises :class:`UsageError` otherwise.
    """
    fname = function or scop.function
    fn = _entry(lib, fname)
    missing = [p for p in scop.int_params if p not in params]
    if missing:
        raise UsageError(f"missing value for integer parameter(s) {', '.join(missing)}")
    int_types = _int_types(scop)
    float_types = dict(scop.float_params)
    array_names = {a.name for a in scop.param_arrays}
    argtypes, argv, keep = [], [], []
    # the C parameters, then the file-scope arrays (the trampoline copies them in and
    # out), then the returned value's array: the trampoline's order
    for name in _c_args(scop) + list(scop.globals) + ([scop.returns] if scop.returns else []):
        if name in int_types:
            ct = _int_ctype(int_types[name])
            argtypes.append(ct)
            argv.append(_int_value(name, params[name], ct))
        elif name in float_types:
            if name not in scalars:
                raise UsageError(f"missing value for scalar parameter {name} "
                                 f"({float_types[name]})")
            try:
                value = float(scalars[name])
            except (TypeError, ValueError):
                raise UsageError(f"scalar parameter {name} must be a number, "
                                 f"got {scalars[name]!r}") from None
            argtypes.append(_CTYPES_ELEM[float_types[name]])
            argv.append(value)
        elif name in array_names:
            if name not in arrays:
                raise UsageError(f"missing array {name}")
            a = _check_array(scop, name, arrays[name], params)
            keep.append(a)
            types, values = _array_args(a, name in scop.tables)
            argtypes += types
            argv += values
        else:
            raise UsageError(f"parameter {name} of {scop.function} has no known type")
    fn.restype = None
    fn.argtypes = argtypes
    fn(*argv)
    del keep


def _init_reach(scop, init: str, params: Mapping[str, int],
                defines: Mapping[str, object] | None,
                include_dirs: tuple[str, ...] | list[str]) -> dict[str, tuple[int, ...]]:
    """``{C name: extents}`` of the arrays the C file's function ``init`` touches, from
    bbmm's own model of it at ``params`` (empty where bbmm cannot model it)."""
    from bbmm.codegen.frontend import parse_file

    try:
        s = parse_file(scop.filename, init, defines, include_dirs)
    except BBMMError:
        return {}
    by_c = {scop.c_name(k): v for k, v in params.items()}
    env = {p: by_c[s.c_name(p)] for p in s.int_params if s.c_name(p) in by_c}
    if len(env) != len(s.int_params):
        return {}
    return {s.c_name(a.name): tuple(a.shape(env)) for a in s.param_arrays}


def call_init(lib: str | os.PathLike | ctypes.CDLL, scop, name: str, sig,
              params: Mapping[str, int], scalars: Mapping[str, float],
              arrays: Mapping[str, np.ndarray],
              reach: Mapping[str, tuple[int, ...]] | None = None) -> dict[str, float]:
    """Call the C file's initialisation function ``name`` (parameters ``sig``, from
    :func:`init_signature`) on ``arrays`` in place; return ``scalars`` updated with the
    values it stores through pointers (PolyBench's ``DATA_TYPE *alpha``).

    Its parameters are matched to the kernel's by name: integers get ``params``, scalars
    by value get ``scalars``, pointers to a scalar must name a floating parameter of the
    kernel, arrays an array of the same element type and shape. Anything else is a
    :class:`UsageError` naming the parameter.
    """
    from bbmm.codegen.csource import const_int

    fn = _entry(lib, name)
    kernel = scop.function
    ints = _int_types(scop)
    floats = dict(scop.float_params)
    arrays_of = {a.name: a for a in scop.param_arrays}
    out = dict(scalars)
    # the init function's parameters carry the C names; the model's renamed ones differ
    model_of = {c: m for m, c in scop.c_names}
    c_params = {scop.c_name(k): v for k, v in params.items()}
    argtypes, argv, keep, outs = [], [], [], {}
    for p in sig:
        what = f"--init {name}: parameter '{p.name}'"
        m = model_of.get(p.name, p.name)
        if p.kind == "int" and m in ints:
            ct = _int_ctype(p.ctype)
            argtypes.append(ct)
            argv.append(_int_value(p.name, params[m], ct))
        elif p.kind == "float" and m in floats:
            argtypes.append(_CTYPES_ELEM[p.ctype])
            argv.append(float(out[m]))
        elif p.kind == "out" and m in floats:
            if p.ctype != floats[m]:
                raise UsageError(f"{what} is a {p.ctype} * but {kernel}'s {p.name} is a "
                                 f"{floats[m]}")
            cell = _CTYPES_ELEM[p.ctype](float(out[m]))
            outs[m] = cell
            argtypes.append(ctypes.c_void_p)
            argv.append(ctypes.addressof(cell))
        elif p.kind in ("array", "table") and m in arrays_of:
            arr = arrays_of[m]
            a = _check_array(scop, m, arrays[m], params)
            if p.kind == "table":       # row pointers: the rows must hold what it writes
                got = (reach or {}).get(p.name)
                if got is None or len(got) != a.ndim or any(
                        r > e for r, e in zip(got, a.shape)):
                    how = ("bbmm cannot model how far it reaches" if got is None else
                           f"it reaches {' x '.join(map(str, got))}")
                    raise UsageError(
                        f"{what} is a table of rows, and {kernel}'s {p.name} holds "
                        f"{' x '.join(map(str, a.shape))} elements (sized from {kernel}'s "
                        f"subscripts) for {_fmt_params(c_params)}, but {how}; leave --init "
                        f"out (bbmm then fills the arrays itself)")
            dims = [None if d is None else const_int(d, c_params) for d in p.dims]
            if p.ctype != arr.ctype or len(dims) != arr.ndim or any(
                    d is not None and d != s for d, s in zip(dims, a.shape)):
                shape = " x ".join("?" if d is None else str(d) for d in dims)
                raise UsageError(f"{what} is {p.ctype} [{shape}] but {kernel}'s {p.name} is "
                                 f"{arr.ctype} [{' x '.join(map(str, a.shape))}] for "
                                 f"{_fmt_params(c_params)}")
            keep.append(a)
            types, values = _array_args(a, p.kind == "table")
            argtypes += types
            argv += values
        elif p.kind == "other":
            raise UsageError(f"{what} has a type bbmm cannot pass (integers, float/double "
                             f"scalars or pointers to them, and arrays)")
        else:
            raise UsageError(f"{what} ({p.kind}) matches no {p.kind} parameter of {kernel} "
                             f"by name (its parameters: "
                             f"{', '.join(map(scop.c_name, scop.args)) or 'none'})")
    for g in scop.globals:      # file-scope arrays: the trampoline copies them in and out
        if g in ints:           # file-scope scalars: it assigns them
            ct = _int_ctype(ints[g])
            argtypes.append(ct)
            argv.append(_int_value(g, params[g], ct))
        elif g in floats:
            argtypes.append(_CTYPES_ELEM[floats[g]])
            argv.append(float(out[g]))
        else:
            a = _check_array(scop, g, arrays[g], params)
            keep.append(a)
            types, values = _array_args(a, False)
            argtypes += types
            argv += values
    fn.restype = None
    fn.argtypes = argtypes
    fn(*argv)
    del keep
    out.update({n: float(c.value) for n, c in outs.items()})
    return out

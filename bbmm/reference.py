"""The sequential reference: the user's C file compiled by the system C compiler.

``bbmm --check`` runs the kernel once on the devices and once as plain C on the host, on
the same inputs, and compares every array.

.. autofunction:: build_library
.. autofunction:: reference_library
.. autofunction:: call_kernel
.. autofunction:: call_init
.. autofunction:: init_arrays
.. autofunction:: compare
.. autofunction:: run_reference

The C file is compiled as is (its ``main`` does no harm in a shared library) with
``-O2 -fPIC -shared -std=c99 -fno-fast-math -ffp-contract=off -lm``: no fused multiply-add
and no reassociation, so results follow the source order like OpenCL without
``-cl-mad-enable``. A small prelude is force-included: ``<math.h>``, ``<float.h>``,
``<stdlib.h>`` (so ``exp``, ``sqrt``, ``M_PI``, ``FLT_MAX`` need no ``#include``) and the
OpenCL built-ins the front end accepts but C lacks (``min``, ``max``, ``MIN``, ``MAX``,
``rsqrt``, ``rsqrtf``), each left out when the file defines that name itself.

A kernel or initialisation function may be ``static`` (PolyBench's are): the library is
then built from a small translation unit that includes the user's file and adds one
exported trampoline ``_bbmm_<function>`` per function bbmm calls; everything else is
hidden and unreferenced code is dropped (``-fvisibility=hidden``, ``--gc-sections``), so a
``main`` that calls a function no source defines does no harm. The same flags compile
the user's code either way.

Functions the file calls but does not define (an ``init_array`` that allocates with
PolyBench's ``POLYBENCH_2D_ARRAY_DECL``, hence ``polybench_alloc_data``) come from more C
sources, compiled each on its own with the same flags, defines and ``-I`` folders and
linked in (``bbmm run k.c more.c``, ``--extra-source``; :func:`extra_sources`): as a
PolyBench program is built, the ``polybench.c`` beside the ``polybench.h`` that the file
includes is one without being named.

Libraries are cached by content hash (the file, the extra sources and the local headers
they include, the ``-D`` defines, the compiler and its version, the flags; not the
files' paths) in ``<cache>/reference/`` (:mod:`bbmm.cache`: ``$BBMM_CACHE``, else the
platform's user cache folder), each entry holding its SHA-256 before the library's
bytes, checked before every load (from a private copy of the bytes checked).
The compiler is ``$CC`` if set, else the first of ``cc``, ``gcc``, ``clang`` found.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bbmm import settings
from bbmm.cache import is_hashed, read_verified, store
from bbmm.diagnostic import BBMMError, BBMMWarning, UsageError

__all__ = [
    "CompileError", "DEFAULT_SCALAR", "Mismatch", "TOLERANCES", "build_library",
    "call_init", "call_kernel", "compare", "default_cache_dir", "dtype_of", "extra_sources",
    "find_compiler",
    "init_arrays", "init_function", "init_signature", "load_library", "reference_library",
    "run_reference", "trampoline",
]

DEFAULT_SCALAR = 1.5
"""Value of a float/double scalar parameter (``alpha``) that the user did not give."""

TOLERANCES = {"float": 1e-4, "double": 1e-10}
"""Largest accepted ``|got - expected| / (|expected| + scale)`` per element type, ``scale``
the array's largest finite ``|expected|`` (:func:`compare`).

float: 1e-4 is about 800 ulp (float eps 1.19e-7): room for OpenCL's 3-4 ulp ``exp``/
``sqrt``/divide and for a sum of a few hundred terms done in another order, yet far below
any real bug on values of magnitude ~1. double: 1e-10 is about 450000 ulp (eps 2.2e-16),
the same room for sums of ~1e5-1e6 terms. int: exact. ``compare(..., rtol=)`` overrides.
"""

CFLAGS = ("-O2", "-fPIC", "-shared", "-std=c99", "-fno-fast-math", "-ffp-contract=off",
          "-fsigned-char")
_LINUX_LDFLAGS = ("-Wl,-Bsymbolic", "-Wl,-z,defs")   # bind locally; undefined symbol = error
_ENTRY_FLAGS = ("-fvisibility=hidden", "-ffunction-sections", "-fdata-sections")
_LINUX_ENTRY_LDFLAGS = ("-Wl,--gc-sections",)  # main & co. go, with their undefined symbols
_COMPILER_CANDIDATES = ("cc", "gcc", "clang")
_COMPILE_TIMEOUT_S = 300

_DTYPES = {"float": np.dtype(np.float32), "double": np.dtype(np.float64),
           "int": np.dtype(np.intc), "char": np.dtype(np.int8),
           "unsigned char": np.dtype(np.uint8), "short": np.dtype(np.int16),
           "unsigned short": np.dtype(np.uint16), "unsigned int": np.dtype(np.uint32),
           "long": np.dtype(np.int64), "unsigned long": np.dtype(np.uint64),
           "_Bool": np.dtype(np.bool_)}
"""numpy dtype per array element type (:data:`codegen.csource.ELEM_CTYPES`): the width
of the C type on LP64 and of the OpenCL type bbmm's kernels use (``char`` signed: the
reference is built with ``-fsigned-char``, as OpenCL's is; ``_Bool`` one byte, 0 or 1)."""


def exact(ctype: str) -> bool:
    """Whether arrays of element type ``ctype`` compare exactly (integers and _Bool)."""
    return ctype in _DTYPES and _DTYPES[ctype].kind in "iub"
_CTYPES_ELEM = {"float": ctypes.c_float, "double": ctypes.c_double}


class CompileError(BBMMError):
    """The reference C compiler rejected the user's file.

    ``str()`` is a one-line summary (with the compiler's first error) followed by the
    first lines of the compiler's output, indented; :attr:`summary` and :attr:`details`
    hold the two parts.
    """

    def __init__(self, summary: str, details: str = "", command: tuple[str, ...] = (),
                 returncode: int | None = None):
        self.summary, self.details = summary, details
        self.command, self.returncode = command, returncode
        text = summary
        if details:
            text += "\n" + "\n".join("    " + ln for ln in details.splitlines())
        super().__init__(text)


# {{{ compiler and cache

def default_cache_dir() -> Path:
    """``<cache>/reference`` (:mod:`bbmm.cache`: ``$BBMM_CACHE``, else the platform's
    user cache folder, ``$XDG_CACHE_HOME/bbmm`` or ``~/.cache/bbmm`` on Linux)."""
    from bbmm.cache import directory
    return directory("reference")


def find_compiler() -> tuple[str, ...]:
    """The C compiler command: ``$CC`` (split like a shell word list), else the first of
    ``cc``, ``gcc``, ``clang`` on ``PATH``."""
    env = (settings.text("CC") or "").strip()
    if env:
        cmd = tuple(shlex.split(env))
        if shutil.which(cmd[0]) is None:
            raise CompileError(f"C compiler $CC={env!r} not found")
        return cmd
    for name in _COMPILER_CANDIDATES:
        path = shutil.which(name)
        if path:
            return (path,)
    raise CompileError("no C compiler found (tried $CC, cc, gcc, clang); install one to "
                       "run the sequential reference")


@functools.lru_cache(maxsize=None)
def _compiler_version(cmd: tuple[str, ...]) -> str:
    try:
        p = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=60)
    except OSError as e:
        raise CompileError(f"cannot run C compiler {cmd[0]}: {e}") from None
    return (shutil.which(cmd[0]) or cmd[0]) + "\n" + p.stdout + p.stderr


_HELPERS = {
    "min": "#define min(a, b) ((a) < (b) ? (a) : (b))",
    "max": "#define max(a, b) ((a) > (b) ? (a) : (b))",
    "MIN": "#define MIN(a, b) ((a) < (b) ? (a) : (b))",
    "MAX": "#define MAX(a, b) ((a) > (b) ? (a) : (b))",
    "rsqrt": "static inline double rsqrt(double x) { return 1.0 / sqrt(x); }",
    "rsqrtf": "static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }",
}
_TYPE_WORD = r"(?:void|char|short|int|long|float|double|signed|unsigned|static|inline|extern|" \
             r"const|[A-Za-z_]\w*_t)"


def _prelude(text: str) -> str:
    """Force-included header: standard math headers and the OpenCL built-ins that the
    file uses but does not define itself."""
    out = ["/* bbmm reference prelude */", "#ifndef _DEFAULT_SOURCE",
           "#define _DEFAULT_SOURCE 1", "#endif", "#include <math.h>", "#include <float.h>",
           "#include <stdlib.h>"]
    for name, definition in _HELPERS.items():
        if not re.search(rf"\b{name}\b", text):
            continue
        defined = (re.search(rf"^\s*#\s*define\s+{name}\b", text, re.M)
                   or re.search(rf"\b{_TYPE_WORD}[\s*]+{name}\s*\(", text))
        if not defined:
            out.append(definition)
    return "\n".join(out) + "\n"


def _local_includes(path: Path, include_dirs: tuple[Path, ...] = (),
                    seen: set[Path] | None = None) -> list[tuple[str, Path]]:
    """Files named by ``#include "..."`` beside the including file or in ``include_dirs``,
    and by ``#include <...>`` in ``include_dirs`` (recursively), for the cache key."""
    seen = set() if seen is None else seen
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found = []
    for m in re.finditer(r'^\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)', text, re.M):
        dirs = ((path.parent,) if m.group(1) else ()) + include_dirs
        name = m.group(1) or m.group(2)
        p = next((c for c in ((d / name).resolve() for d in dirs) if c.is_file()), None)
        if p is not None and p not in seen:
            seen.add(p)
            found.append((name, p))
            found += _local_includes(p, include_dirs, seen)
    return found


def _define_flags(defines: Mapping[str, object] | None) -> list[str]:
    flags = []
    for k, v in sorted((defines or {}).items()):
        if not re.fullmatch(r"[A-Za-z_]\w*", str(k)):
            raise UsageError(f"bad macro name {k!r} in defines")
        flags.append(f"-D{k}" if v is None else f"-D{k}={v}")
    return flags


def _first_error_lines(output: str, limit: int = 12) -> tuple[str, str]:
    lines = [ln for ln in output.splitlines() if ln.strip()]
    pat = re.compile(r"(\berror\b|undefined reference|undefined symbol|fatal)", re.I)
    start = next((i for i, ln in enumerate(lines) if pat.search(ln)), 0)
    first = lines[start].strip() if lines else ""
    return first, "\n".join(lines[start:start + limit])


def extra_sources(c_path: str | os.PathLike, include_dirs: Sequence[str] = (),
                  given: Sequence[str | os.PathLike] = ()) -> tuple[Path, ...]:
    """The C sources built with ``c_path`` (resolved, each once): ``given`` (the user's
    ``bbmm run FILE MORE.c`` or ``--extra-source``), then, when the file includes
    ``polybench.h``, the ``polybench.c`` beside the ``polybench.h`` the preprocessor would
    find (beside the file for a quoted include, else in ``include_dirs`` in order), as a
    PolyBench program is built (``cc -I utilities k.c utilities/polybench.c``). A given
    file that does not exist is a :class:`UsageError`."""
    out: list[Path] = []
    for g in given:
        p = Path(g)
        if not p.is_file():
            raise UsageError(f"extra C source {g}: no such file")
        if p.resolve() not in out:
            out.append(p.resolve())
    src = Path(c_path)
    try:
        text = _strip_comments(src.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return tuple(out)
    m = re.search(r'^\s*#\s*include\s*(?:"([^"]*\bpolybench\.h)"|<([^>]*\bpolybench\.h)>)',
                  text, re.M)
    if m is None or re.search(r'^\s*#\s*include\s*["<][^">]*\bpolybench\.c[">]', text, re.M):
        return tuple(out)
    name = m.group(1) or m.group(2)
    dirs = ([src.resolve().parent] if m.group(1) else []) + [Path(d) for d in include_dirs]
    header = next((d / name for d in dirs if (d / name).is_file()), None)
    if header is not None:
        lib_c = (header.parent / "polybench.c").resolve()
        if lib_c.is_file() and lib_c not in out and lib_c != src.resolve():
            out.append(lib_c)
    return tuple(out)


_EXTRA_PRELUDE = ("/* bbmm reference prelude of extra sources */\n#ifndef _DEFAULT_SOURCE\n"
                  "#define _DEFAULT_SOURCE 1\n#endif\n")
"""Force-included in the extra sources: POSIX and BSD declarations (``posix_memalign`` in
PolyBench's ``polybench.c``) under ``-std=c99``, as the kernel's prelude has them."""


def build_library(c_path: str | os.PathLike, defines: Mapping[str, object] | None = None,
                  cache_dir: str | os.PathLike | None = None, *,
                  include_dirs: tuple[str, ...] | list[str] = (),
                  entry_points: tuple[str, ...] = (),
                  sources: Sequence[str | os.PathLike] = ()) -> Path:
    """Compile the C file into a shared library and return its path (cached).

    :arg include_dirs: ``-I`` folders.
    :arg entry_points: C definitions (:func:`trampoline`) compiled after the file in the
        same translation unit; when given, they are the library's only exported symbols.
    :arg sources: more C files the file's functions call (an ``--init`` function's
        ``polybench_alloc_data``), each compiled on its own with the same flags, defines
        and include folders and linked in; :func:`extra_sources` adds ``polybench.c``
        beside ``polybench.h`` when the file includes it.

    The cache key hashes the file's bytes and local headers, the extra sources and
    theirs, ``defines``, the include folders, the entry points, the compiler command and
    version, the flags and the prelude; a hit runs no compiler at all. Raises
    :class:`CompileError` (a :class:`BBMMError`) with the compiler's first errors.
    """
    src = Path(c_path)
    try:
        data = src.read_bytes()
    except OSError as e:
        raise UsageError(f"cannot read {src}: {e.strerror or e}") from None
    text = data.decode("utf-8", errors="replace")
    extras = extra_sources(src, include_dirs, sources)
    cc = find_compiler()
    dflags = _define_flags(defines)
    linux = sys.platform.startswith("linux")
    ldflags = list(_LINUX_LDFLAGS) if linux else []
    if entry_points:
        ldflags = list(_ENTRY_FLAGS) + ldflags + (list(_LINUX_ENTRY_LDFLAGS) if linux else [])
    idirs = tuple(Path(d).resolve() for d in include_dirs)
    iflags = [f"-I{d}" for d in idirs]
    prelude = _prelude(text)
    unit = ""
    if entry_points:
        # the user's file comes in by ``-include PATH`` (an argument, never pasted into C
        # text: a path may hold quotes, backslashes, newlines), then these definitions
        unit = "/* bbmm entry points */\n" + "\n".join(entry_points) + "\n"

    h = hashlib.sha256()
    for part in (data, "\0".join(dflags + iflags).encode(), "\0".join(cc).encode(),
                 _compiler_version(cc).encode(), "\0".join(CFLAGS + tuple(ldflags)).encode(),
                 prelude.encode(), unit.encode()):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    for name, inc in _local_includes(src.resolve(), idirs):   # by name: no absolute path
        h.update(name.encode() + b"\0" + inc.read_bytes())
    for x in extras:
        h.update(b"\0extra\0" + x.name.encode() + b"\0" + x.read_bytes())
        for name, inc in _local_includes(x, idirs):
            h.update(name.encode() + b"\0" + inc.read_bytes())
    key = h.hexdigest()[:24]

    out_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    stem = re.sub(r"[^\w.-]", "_", src.stem) or "kernel"
    lib = out_dir / f"{stem}-{key}.lib"     # its hash, then the shared library's bytes
    if read_verified(lib) is not None:
        return lib
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create cache directory {out_dir}: {e.strerror or e}") from None

    fd, tmp = tempfile.mkstemp(prefix=f".{stem}-", suffix=".so.tmp", dir=out_dir)
    os.close(fd)
    pre_path = Path(tmp[:-len(".so.tmp")] + "-prelude.h")
    extra_pre = Path(tmp[:-len(".so.tmp")] + "-extra.h")
    unit_path = Path(tmp[:-len(".so.tmp")] + "-entry.c")
    objects = [Path(f"{tmp[:-len('.so.tmp')]}-x{i}.o") for i in range(len(extras))]
    try:
        pre_path.write_text(prelude, encoding="utf-8")
        if unit:
            unit_path.write_text(unit, encoding="utf-8")
        if extras:
            extra_pre.write_text(_EXTRA_PRELUDE, encoding="utf-8")
        # the extra sources one by one (the kernel's prelude, with its min/max macros, is
        # the kernel's only), then the library from the file and their objects
        cflags = [f for f in CFLAGS if f != "-shared"] \
            + (list(_ENTRY_FLAGS) if entry_points else [])
        for x, obj in zip(extras, objects):
            _run_cc((*cc, *cflags, *dflags, *iflags, "-include", str(extra_pre), "-c",
                     "-o", str(obj), str(x)), x, cc)
        user = ("-include", str(src.resolve())) if unit else ()
        cmd = (*cc, *CFLAGS, *dflags, *iflags, "-include", str(pre_path), *user, "-o", tmp,
               str(unit_path) if unit else os.fspath(src), *map(str, objects), "-lm",
               *ldflags)
        _run_cc(cmd, src, cc, link=True)
        store(lib, Path(tmp).read_bytes())   # atomic, with its hash beside it
    finally:
        for f in (tmp, pre_path, unit_path, extra_pre, *objects):
            try:
                os.unlink(f)
            except OSError:
                pass
    return lib


def _run_cc(cmd: tuple[str, ...], src: Path, cc: tuple[str, ...], link: bool = False) -> None:
    """Run the compiler command ``cmd`` on ``src``; :class:`CompileError` if it fails (when
    it links, a function no source defines gets a hint)."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=_COMPILE_TIMEOUT_S,
                           env={**settings.environ(), "LC_ALL": "C"})   # ASCII diagnostics
    except subprocess.TimeoutExpired:
        raise CompileError(f"{src}: C compiler timed out after {_COMPILE_TIMEOUT_S} s",
                           command=cmd) from None
    except OSError as e:
        raise CompileError(f"cannot run C compiler {cc[0]}: {e}", command=cmd) from None
    if p.returncode != 0:
        first, details = _first_error_lines(p.stderr + p.stdout)
        summary = f"{src}: C compiler {os.path.basename(cc[0])} failed " \
                  f"(exit {p.returncode})" + (f": {first}" if first else "")
        if link and re.search(r"undefined (reference|symbol)", first):
            summary += (" (a function defined in another C source? name that file after "
                        "the kernel's: bbmm run FILE MORE.c, or --extra-source MORE.c)")
        raise CompileError(summary, details, cmd, p.returncode)


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
    """Parameters (:class:`codegen.csource.CParam`) of the C file's function ``name``."""
    from codegen import csource

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

# }}}


# {{{ calling

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
    from codegen.frontend import parse_file

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
    from codegen.csource import const_int

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

# }}}


# {{{ inputs

def _signature(text: str, fname: str) -> list[str] | None:
    """Tokens of the parameter list of the *definition* of ``fname`` in C text, or None."""
    for m in re.finditer(rf"\b{re.escape(fname)}\s*\(", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        if depth:
            return None
        rest = text[i:].lstrip()
        if rest.startswith("{"):
            return re.findall(r"\w+|[^\s\w]", text[m.end():i - 1])
    return None


def _strip_comments(text: str) -> str:
    return re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)


def init_function(scop, source: str | None = None) -> str | None:
    """``init_<kernel>`` if the C file defines it with the kernel's parameter list
    (token by token), else None; a definition with another list warns and is ignored."""
    if source is None:
        try:
            source = Path(scop.filename).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    text = _strip_comments(source)
    name = f"init_{scop.function}"
    init_sig = _signature(text, name)
    if init_sig is None:
        return None
    if init_sig != _signature(text, scop.function):
        warnings.warn(f"{scop.filename}: {name} does not have the parameter list of "
                      f"{scop.function}; filling the arrays with random values instead",
                      BBMMWarning, stacklevel=3)
        return None
    return name


def init_arrays(scop, params: Mapping[str, int], seed: int = 0,
                lib: str | os.PathLike | ctypes.CDLL | None = None, *,
                scalars: Mapping[str, float] | None = None,
                defines: Mapping[str, object] | None = None,
                use_init: bool = True, init: str | None = None,
                include_dirs: tuple[str, ...] | list[str] = (),
                sources: Sequence[str | os.PathLike] = ()
                ) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Host inputs for the kernel: ``(arrays, scalars)``.

    Every array (in declaration order) is first filled from ``numpy.random.default_rng
    (seed)``: uniform [0, 1) for float/double, uniform integers in [0, 100) for int. Then,
    if ``use_init`` and the C file defines ``init_<kernel>`` with the same parameter list,
    it is called on those arrays (from ``lib``, or from a library built from
    ``scop.filename`` with ``defines`` when ``lib`` is None), so its writes replace the
    random values. ``init`` names another initialisation function (``--init``: PolyBench's
    ``init_array``), called through :func:`call_init`, so that scalars it returns through
    pointers replace the defaults. Scalars are ``scalars`` where given, else the init
    function's, else :data:`DEFAULT_SCALAR` (1.5) for every float/double parameter.
    """
    for p in scop.int_params:
        if p not in params:
            raise UsageError(f"missing value for integer parameter {p}")
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    for arr in scop.param_arrays:
        shape = arr.shape(params)
        if any(s < 0 for s in shape):
            raise UsageError(f"array {arr.name} has negative extent {shape} for "
                             f"{_fmt_params(params)}")
        dt = dtype_of(arr.ctype)
        if arr.ctype == "int":
            arrays[arr.name] = rng.integers(0, 100, size=shape, dtype=dt)
        elif exact(arr.ctype):          # other integers: the same range; _Bool: 0 or 1
            arrays[arr.name] = rng.integers(0, 2 if arr.ctype == "_Bool" else 100,
                                            size=shape).astype(dt)
        else:
            arrays[arr.name] = rng.random(size=shape, dtype=dt)
    given = {k: float(v) for k, v in (scalars or {}).items()}
    out_scalars = {name: given.get(name, DEFAULT_SCALAR) for name, _ in scop.float_params}
    if init is None and use_init:
        init = init_function(scop)
    if init is not None:
        if lib is None:
            lib = reference_library(scop, defines, include_dirs, init=init, sources=sources)
        sig = init_signature(scop, init, defines, include_dirs)
        reach = _init_reach(scop, init, params, defines, include_dirs) \
            if any(p.kind == "table" for p in sig) else None
        out_scalars = call_init(lib, scop, init, sig, params, out_scalars, arrays, reach)
        out_scalars.update({k: v for k, v in given.items() if k in out_scalars})
    return arrays, out_scalars

# }}}


# {{{ comparison

@dataclass(frozen=True)
class Mismatch:
    """The arrays ``got`` and ``expected`` differ; ``str()`` is one line."""

    name: str
    count: int
    """Number of differing elements."""
    total: int
    index: tuple[int, ...]
    """First differing element (C order)."""
    got: object
    expected: object
    max_error: float
    """Largest ``|got - expected| / (|expected| + scale)`` (float/double; ``scale`` the
    array's largest finite ``|expected|``; inf when a NaN or an infinity is involved), the
    figure compared with the tolerance, or largest ``|got - expected|`` (int)."""
    ctype: str
    tolerance: float = 0.0
    worst: tuple[int, ...] = ()
    """The element of ``max_error`` (C order)."""
    worst_got: object = None
    worst_expected: object = None
    scale: float = 0.0
    """The array's largest finite ``|expected|`` (the absolute floor's scale)."""

    def __str__(self) -> str:
        idx = ", ".join(str(i) for i in self.index)
        kind = "absolute" if exact(self.ctype) else "relative"
        err = str(int(self.max_error)) if exact(self.ctype) else f"{self.max_error:.3g}"
        out = (f"{self.name}: {self.count} of {self.total} elements differ; first at [{idx}]:"
               f" got {self.got}, expected {self.expected}")
        if self.worst and self.worst != self.index:
            w = ", ".join(str(i) for i in self.worst)
            out += f"; worst at [{w}]: got {self.worst_got}, expected {self.worst_expected}"
        out += f"; max {kind} error {err}"
        if not exact(self.ctype):
            out += f" (of |expected| + {self.scale:.3g}; tolerance {self.tolerance:.3g})"
        return out


def compare(name: str, got: np.ndarray, expect: np.ndarray, ctype: str,
            rtol: float | None = None) -> Mismatch | None:
    """None if ``got`` matches ``expect``, else a :class:`Mismatch` naming the first and
    the worst differing elements.

    Integers and _Bool (:func:`exact`): exact. float/double: element i is equal when
    ``|got - expect| <= rtol * (|expect| + scale)``, ``scale`` the array's largest finite
    ``|expect|``: relative to the element, with an absolute floor ``rtol * scale`` at the
    array's magnitude (a value near 0 that results from values of the array's size
    carries their rounding, not its own; an array of small values is held to its own
    size, not to 1); ``rtol`` from :data:`TOLERANCES` (1e-4 float, 1e-10 double). Both the
    same infinity, or both NaN, are equal; a NaN or infinity on one side only differs.
    Different shapes raise :class:`UsageError`.
    """
    got, expect = np.asarray(got), np.asarray(expect)
    if got.shape != expect.shape:
        raise UsageError(f"{name}: cannot compare shape {got.shape} with {expect.shape}")
    total = int(expect.size)
    scale = 0.0
    if exact(ctype):
        # exact; through Python integers' width where unsigned long would wrap in int64
        wide = np.int64 if np.dtype(expect.dtype).kind != "u" or expect.itemsize < 8 \
            else object
        diff = np.abs(got.astype(wide) - expect.astype(wide))
        bad = diff != 0
        tol = 0.0
    elif ctype in TOLERANCES:
        tol = TOLERANCES[ctype] if rtol is None else float(rtol)
        g, e = got.astype(np.float64), expect.astype(np.float64)
        finite = np.abs(e[np.isfinite(e)])
        scale = float(finite.max()) if finite.size else 0.0
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            same = (g == e) | (np.isnan(g) & np.isnan(e))
            diff = np.abs(g - e) / (np.abs(e) + scale)
        diff = np.where(same, 0.0, np.where(np.isnan(diff), np.inf, diff))
        bad = diff > tol
    else:
        raise UsageError(f"{name}: unsupported element type {ctype!r}")
    count = int(np.count_nonzero(bad))
    if count == 0:
        return None
    flat = int(np.flatnonzero(bad.ravel())[0])
    index = tuple(int(i) for i in np.unravel_index(flat, expect.shape))
    worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), expect.shape))
    return Mismatch(name, count, total, index, got[index], expect[index],
                    float(diff.max()), ctype, tol, worst, got[worst], expect[worst], scale)

# }}}


def run_reference(c_path: str | os.PathLike, scop, params: Mapping[str, int],
                  scalars: Mapping[str, float], arrays: Mapping[str, np.ndarray], *,
                  defines: Mapping[str, object] | None = None,
                  cache_dir: str | os.PathLike | None = None,
                  include_dirs: tuple[str, ...] | list[str] = (),
                  lib: str | os.PathLike | ctypes.CDLL | None = None,
                  sources: Sequence[str | os.PathLike] = ()) -> dict[str, np.ndarray]:
    """Run the sequential C kernel on copies of ``arrays``; return the copies afterwards
    (every array of the scop). The inputs are not modified. ``lib``: a library from
    :func:`reference_library` (default: built from ``c_path`` and ``sources``)."""
    if lib is None:
        lib = build_library(c_path, defines, cache_dir, include_dirs=include_dirs,
                            entry_points=(_kernel_trampoline(scop),), sources=sources)
    work = {}
    for arr in scop.param_arrays:
        if arr.name not in arrays:
            raise UsageError(f"missing array {arr.name}")
        a = arrays[arr.name]
        work[arr.name] = np.array(a, copy=True, order="C") if isinstance(a, np.ndarray) else a
    call_kernel(lib, scop, params, scalars, work)
    return work

# vim: foldmethod=marker

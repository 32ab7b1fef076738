"""The system C compiler driven for the reference: found (``$CC``, else ``cc``, ``gcc``,
``clang``), run with bbmm's flags on the user's file and its extra sources, the library
cached by content hash (:func:`build_library`)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
import functools
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

from bbmm import settings
from bbmm.cache import read_verified, store
from bbmm.diagnostic import UsageError
from .common import (_COMPILE_TIMEOUT_S, _COMPILER_CANDIDATES, _ENTRY_FLAGS, _LINUX_ENTRY_LDFLAGS,
                     _LINUX_LDFLAGS, CFLAGS, CompileError, _strip_comments)


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

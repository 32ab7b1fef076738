"""bbmm's cache: compiled host drivers (``drivers/``) and reference libraries
(``reference/``).

Where: ``$BBMM_CACHE``, else the platform's user cache folder
(``platformdirs.user_cache_dir("bbmm")``: ``~/.cache/bbmm`` on Linux, or
``$XDG_CACHE_HOME/bbmm``). ``bbmm cache`` prints it and its size; ``bbmm cache --clear``
empties it (deleting the folder by hand is as good).

Entries are keyed by what produced them (the C file's content, the options, the
compiler, bbmm's version; never the file's path, so copies of a file share entries).
Each entry is trusted only after it checks out: a driver must equal the source just
generated (and runs from that source, not from the file); a library entry holds its
SHA-256 in a first line (``#bbmm-sha256 <hex>``) before the library's bytes, which must
match it, and is loaded from a private copy of exactly the bytes checked. A damaged entry
(truncated, empty, changed) is rebuilt with a one-line note on stderr. An entry is one
file written atomically (a temporary file renamed into place), so concurrent runs and an
interrupted one never see half an entry, nor an entry and a hash that disagree.

Size: after each new entry, the least recently used entries of its folder go until at
most :data:`MAX_ENTRIES` entries and ``$BBMM_CACHE_SIZE`` bytes (default 512 MiB)
remain.

An unusable cache folder (not creatable, not writable) gives one warning and a
temporary cache for the rest of the process.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from . import settings

__all__ = ["MAX_ENTRIES", "clear", "directory", "is_hashed", "max_bytes", "note", "prune",
           "read_verified", "root", "store", "usage"]

MAX_ENTRIES = 400
"""Most entries kept per cache folder (``drivers``, ``reference``)."""

_DEFAULT_BYTES = 512 << 20
_MAGIC = b"#bbmm-sha256 "
_fallback: Path | None = None


def max_bytes() -> int:
    """``$BBMM_CACHE_SIZE``: most bytes kept per cache folder (default 512 MiB)."""
    return settings.size("BBMM_CACHE_SIZE", _DEFAULT_BYTES)


def root() -> Path:
    """The cache's folder: ``$BBMM_CACHE``, else ``platformdirs.user_cache_dir("bbmm")``."""
    env = (settings.text("BBMM_CACHE") or "").strip()
    if env:
        return Path(env).expanduser()
    try:
        import platformdirs
        return Path(platformdirs.user_cache_dir("bbmm", appauthor=False))
    except ImportError:      # pragma: no cover - platformdirs comes with pyopencl
        xdg = settings.text("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                               ".cache")
        return Path(xdg) / "bbmm"


def note(text: str) -> None:
    """One line on stderr."""
    print(f"bbmm: {text}", file=sys.stderr, flush=True)


def _usable(d: Path) -> str | None:
    """Why ``d`` cannot hold cache entries (None: it can), after creating it."""
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as e:
        return e.strerror or str(e)
    if not d.is_dir():
        return "not a directory"
    if not os.access(d, os.W_OK | os.X_OK):
        return "not writable"
    return None


def directory(sub: str) -> Path:
    """``root()/sub``, created; a temporary folder (with one warning per process) where
    that cannot be made or written."""
    global _fallback
    d = root() / sub
    why = _usable(d)
    if why is None:
        return d
    if _fallback is None:
        _fallback = Path(tempfile.mkdtemp(prefix="bbmm-cache-"))
        import atexit
        atexit.register(shutil.rmtree, _fallback, True)
        note(f"warning: cache {root()} is unusable ({why}); using a temporary cache "
             f"{_fallback} for this run (set BBMM_CACHE to a writable folder)")
    d = _fallback / sub
    d.mkdir(parents=True, exist_ok=True)
    return d


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def store(path: Path, data: bytes, hashed: bool = True) -> None:
    """Write the entry ``path`` (atomically; ``hashed``: behind a first line holding the
    SHA-256 of ``data``, for :func:`read_verified`), then prune its folder. A failure to
    write is a warning (the run goes on uncached)."""
    try:
        _atomic_write(path, _MAGIC + _sha(data).encode() + b"\n" + data if hashed else data)
    except OSError as e:
        note(f"warning: cannot write cache entry {path}: {e.strerror or e}")
        return
    prune(path.parent, keep=path)


def is_hashed(path: Path) -> bool:
    """Whether ``path`` is an entry written by :func:`store` with its hash."""
    try:
        with open(path, "rb") as f:
            return f.read(len(_MAGIC)) == _MAGIC
    except OSError:
        return False


def read_verified(path: Path) -> bytes | None:
    """The bytes stored in entry ``path`` if it is there and they match the hash it
    holds, else None (a damaged entry, removed with a one-line note)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        note(f"cache entry {path} is unreadable ({e.strerror or e}); rebuilding it")
        return None
    head, nl, data = raw.partition(b"\n")
    if not raw:
        why = "empty"
    elif not head.startswith(_MAGIC) or not nl:
        why = "no recorded hash"
    elif head[len(_MAGIC):].decode("ascii", "replace") != _sha(data):
        why = "its content does not match its recorded hash"
    else:
        why = None
    if why is not None:
        note(f"cache entry {path.name} is damaged ({why}); rebuilding it")
        try:
            path.unlink()
        except OSError:
            pass
        return None
    try:
        os.utime(path)          # recently used: pruned last
    except OSError:
        pass
    return data


def _entries(d: Path) -> list[tuple[float, int, Path]]:
    """(last use, bytes, path) of every entry of ``d``."""
    out = []
    try:
        names = os.listdir(d)
    except OSError:
        return []
    for n in names:
        if n.startswith(".") or n == "__pycache__":
            continue
        p = d / n
        try:
            st = p.stat()
        except OSError:
            continue
        if not p.is_file():
            continue
        out.append((st.st_mtime, st.st_size, p))
    return out


def prune(d: Path, keep: Path | None = None, entries: int | None = None,
          nbytes: int | None = None) -> int:
    """Remove the least recently used entries of folder ``d`` until at most ``entries``
    (:data:`MAX_ENTRIES`) and ``nbytes`` (:func:`max_bytes`) remain, never ``keep``;
    also stale temporary files of crashed writers (older than a day). Returns how many
    entries went."""
    import time

    entries = MAX_ENTRIES if entries is None else entries
    nbytes = max_bytes() if nbytes is None else nbytes
    items = sorted(_entries(d), key=lambda t: t[0], reverse=True)
    total, gone = 0, 0
    for i, (_, size, p) in enumerate(items):
        total += size
        if p != keep and (i >= entries or total > nbytes):
            try:
                p.unlink()
            except OSError:
                pass
            gone += 1
    now = time.time()
    try:
        for n in os.listdir(d):
            if n.startswith(".") and n.endswith(".tmp"):
                try:
                    if now - (d / n).stat().st_mtime > 86400:
                        (d / n).unlink()
                except OSError:
                    pass
    except OSError:
        pass
    return gone


def usage(base: Path | None = None) -> dict[str, tuple[int, int]]:
    """``{folder: (entries, bytes)}`` of the cache."""
    base = root() if base is None else base
    out = {}
    for sub in ("drivers", "reference"):
        items = _entries(base / sub)
        out[sub] = (len(items), sum(s for _, s, _ in items))
    return out


def clear(base: Path | None = None) -> int:
    """Remove every entry of the cache (its ``drivers`` and ``reference`` folders);
    returns the bytes freed."""
    base = root() if base is None else base
    freed = sum(b for _, b in usage(base).values())
    for sub in ("drivers", "reference"):
        shutil.rmtree(base / sub, ignore_errors=True)
    return freed

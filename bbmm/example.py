"""The example kernels shipped with bbmm (``bbmm examples``, ``bbmm run --example NAME``).

They are the C files of ``polybench/`` in a checkout: the programs of the paper's Table IV
and ``matmul``. A wheel ships them as ``bbmm/examples/`` (pyproject.toml maps that package
onto ``polybench/``), so that the README's commands run from an installed bbmm as from a
checkout. :func:`folder` finds them either way. From Python, ``bbmm.compile(example=
"floyd")`` compiles one, and :func:`names` and :func:`path` list and find them.
"""
from __future__ import annotations

import re
from pathlib import Path

from .diagnostic import UsageError

__all__ = ["folder", "names", "path", "describe"]


def folder() -> Path:
    """The folder of the example kernels: ``bbmm/examples`` where bbmm is installed from
    a wheel, ``polybench/`` beside the package in a checkout (an editable install)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "examples", here.parent / "polybench"):
        if candidate.is_dir() and any(candidate.glob("*.c")):
            return candidate
    raise UsageError(f"no example kernels beside {here} (neither bbmm/examples nor "
                     f"polybench/): a broken install; reinstall bbmm")


def names() -> list[str]:
    """The examples' names (their files without ``.c``), sorted."""
    return sorted(p.stem for p in folder().glob("*.c"))


def path(name: str, option: str = "--example") -> Path:
    """The C file of the example ``name``; a UsageError that lists the known ones for a
    name that is none of them, naming it as ``option`` gave it (``--example`` on the
    command line, ``example`` in :func:`bbmm.compile`)."""
    known = names()
    if not isinstance(name, str) or name not in known:
        raise UsageError(f"{option} {name!r}: no such example (known: {', '.join(known)}; "
                         f"bbmm examples lists them)")
    return folder() / f"{name}.c"


def describe(name: str) -> str:
    """The first sentence of the example's leading comment, without its ``name:`` prefix
    (``Floyd-Warshall all-pairs shortest paths (PolyBench floyd-warshall).``)."""
    text = path(name).read_text()
    m = re.match(r"\s*/\*(.*?)(?:\n\s*\*\s*\n|\*/)", text, re.S)
    if m is None:
        return ""
    words = " ".join(line.strip().lstrip("*").strip() for line in m.group(1).splitlines())
    words = " ".join(words.split())
    if words.startswith(f"{name}:"):
        words = words[len(name) + 1:].strip()
    end = re.search(r"\.(\s|$)", words)
    return words[:end.start() + 1] if end else words

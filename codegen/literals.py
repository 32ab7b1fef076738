"""Text from the user (a file's path, a C statement's text) made safe for generated code.

Nothing taken from a file, a path or an argument reaches the generated Python driver or
the OpenCL/C sources unescaped: literals go through :func:`py_str` (a raw triple-quoted
string only where it reads back exactly, else ``repr()``) and :func:`c_string`; comments
through :func:`py_comment`, :func:`py_doc` and :func:`c_comment`, which keep one line of
printable text that cannot end the comment (or docstring) it sits in.
"""
from __future__ import annotations

import ast

__all__ = ["c_comment", "c_comment_text", "c_string", "py_comment", "py_doc", "py_str"]


def _printable(text: str) -> str:
    """``text`` on one line: whitespace runs (newlines included) become one space, other
    non-printable characters (and lone surrogates from undecodable bytes) ``?``."""
    out = []
    for ch in " ".join(str(text).split()):
        out.append(ch if ch.isprintable() and not 0xD800 <= ord(ch) <= 0xDFFF else "?")
    return "".join(out)


def py_comment(text: str) -> str:
    """Text for a Python ``# ...`` comment: one line, printable."""
    return _printable(text)


def py_doc(text: str) -> str:
    """Text for inside a (non-raw) ``\"\"\"...\"\"\"`` docstring: one printable line with
    every backslash doubled and every double quote escaped, so that it can neither end the
    docstring nor start an escape sequence."""
    return _printable(text).replace("\\", "\\\\").replace('"', '\\"')


def py_str(text: str) -> str:
    """A Python string literal evaluating to ``text``: ``r\"\"\"...\"\"\"`` when that reads
    back as exactly ``text`` (readable kernels in the driver), else ``repr(text)``."""
    lit = 'r"""' + text + '"""'
    try:
        if ast.literal_eval(lit) == text and isinstance(ast.parse(lit, mode="eval").body,
                                                          ast.Constant):
            return lit
    except (SyntaxError, ValueError):
        pass
    return repr(text)


def c_comment_text(text: str) -> str:
    """Text for inside ``/* ... */``: one printable line without ``*/`` (nor ``/*``, nor
    ``\"\"\"``, which the driver's raw literal of the kernels must not meet)."""
    t = _printable(text)
    while "*/" in t or "/*" in t or '"""' in t:
        t = t.replace("*/", "* /").replace("/*", "/ *").replace('"""', '" ""')
    return t.replace("\\", "/")   # no line splice, no escape for the Python literal


def c_comment(text: str) -> str:
    """A C block comment holding ``text`` (:func:`c_comment_text`)."""
    return "/* " + c_comment_text(text) + " */"


def c_string(text: str) -> str:
    """A C string literal evaluating to ``text`` (UTF-8, surrogate escapes as their
    bytes): printable ASCII as is, ``\\\\`` and ``\\"`` escaped, every other byte as a
    three-digit octal escape (which cannot run into the next character), ``?`` escaped
    so that no trigraph forms."""
    out = ['"']
    for b in str(text).encode("utf-8", "surrogateescape"):
        c = chr(b)
        if c in '\\"?':
            out.append("\\" + c)
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    out.append('"')
    return "".join(out)

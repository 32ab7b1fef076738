"""C source files as a C compiler sees them: preprocessing, the kernel, and the rest.

.. autofunction:: read_source
.. autofunction:: find_kernel
.. autofunction:: main_sizes
.. autofunction:: signature
.. autofunction:: function_def
.. autofunction:: const_int
.. autofunction:: identifiers
.. autoclass:: CSource
.. autoclass:: CParam

A whole program (PolyBench/C's ``main``, ``init_array``, ``print_array``, timers and a
``static void kernel_gemm(...)`` whose loop nest sits between ``#pragma scop`` and
``#pragma endscop``) is preprocessed like a C compiler would: the user's ``-I``/``-D``,
system headers (``stdio.h``, ``math.h``...) from the stand-in headers of
``pycparser-fake-libc`` (pycparser cannot read glibc's), ``#pragma`` lines kept, line
markers kept so that a front-end error points at the user's ``file:line:col``. The kernel
is the function holding ``#pragma scop`` (or the one named); everything else is parsed and
otherwise ignored, except for two facts read from it: the integer sizes ``main`` passes to
the kernel (:func:`main_sizes`, so PolyBench's ``int n = N;`` makes ``--param`` optional)
and the parameter list of an initialisation function (:func:`signature`, for ``--init``).
"""
from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pycparser import c_ast, c_parser
from pycparser.c_parser import Coord

from bbmm.diagnostic import BBMMError, UnsupportedProgramError

INT_WORDS = frozenset({"int", "long", "short", "unsigned", "signed", "size_t", "ptrdiff_t",
                       "int32_t", "int64_t", "uint32_t", "uint64_t"})
FLOAT_WORDS = frozenset({"float", "double"})


def scalar_type(t: c_ast.Node | None) -> str | None:
    """The C type of a scalar declaration's type node (``int``, ``unsigned long``,
    ``float``, ``double``), else None: an array, a pointer, a struct, ``char``..."""
    names = getattr(getattr(t, "type", None), "names", None)
    if isinstance(t, c_ast.TypeDecl) and names and (
            set(names) <= INT_WORDS or names in (["float"], ["double"])):
        return " ".join(names)
    return None

FIXED_INTS = {"int8_t": "char", "uint8_t": "unsigned char", "int16_t": "short",
              "uint16_t": "unsigned short", "int32_t": "int", "uint32_t": "unsigned int",
              "int64_t": "long", "uint64_t": "unsigned long", "size_t": "unsigned long",
              "ptrdiff_t": "long", "ssize_t": "long", "intptr_t": "long",
              "uintptr_t": "unsigned long"}
"""``<stdint.h>`` and ``<stddef.h>`` integer types as the element types of
:func:`elem_ctype` (LP64: ``long`` is 64 bits, as OpenCL's). The stand-in system headers
declare them all as ``int``: :func:`resolve_typedefs` leaves these names alone."""
ELEM_CTYPES = ("float", "double", "char", "unsigned char", "short", "unsigned short", "int",
               "unsigned int", "long", "unsigned long", "_Bool")
"""The element types of arrays, as :func:`elem_ctype` names them; all but ``_Bool`` are
OpenCL C types of the same width (``char`` is signed in OpenCL, and in the reference
build: ``-fsigned-char``); a ``_Bool`` array is ``uchar`` there."""


def elem_ctype(names: Sequence[str] | None) -> str | None:
    """The element type (one of :data:`ELEM_CTYPES`) of the type specifier words
    ``names`` (``['unsigned', 'short', 'int']``: ``unsigned short``; ``['int64_t']``:
    ``long``; ``['signed', 'char']``: ``char``; ``['long', 'long']``: ``long``;
    ``['bool']``: ``_Bool``), else None (``long double``, a struct...)."""
    names = list(names or ())
    if names in (["float"], ["double"]):
        return names[0]
    if len(names) == 1 and names[0] in FIXED_INTS:
        return FIXED_INTS[names[0]]
    if names in (["_Bool"], ["bool"]):
        return "_Bool"
    words = set(names)
    if not names or not words <= {"char", "short", "int", "long", "signed", "unsigned"} \
            or {"signed", "unsigned"} <= words \
            or any(names.count(w) > 1 for w in ("char", "short", "int", "signed", "unsigned")) \
            or names.count("long") > 2:
        return None
    u = "unsigned " if "unsigned" in words else ""
    if "char" in words:
        return None if words & {"short", "int", "long"} else u + "char"
    if "short" in words:
        return None if "long" in words else u + "short"
    return u + ("long" if "long" in words else "int")


def resolve_typedefs(ast: c_ast.FileAST) -> c_ast.FileAST:
    """``ast`` with the names of the file's typedefs of plain types replaced by what they
    name (``typedef char base; base seq[N];`` as ``char seq[N];``), through chains of
    typedefs; the :data:`FIXED_INTS` names (which the stand-in headers declare as
    ``int``) and typedefs of anything else (structs, pointers) are left as they are."""
    named: dict[str, list[str]] = {}
    for d in ast.ext:
        if isinstance(d, c_ast.Typedef) and isinstance(d.type, c_ast.TypeDecl) \
                and isinstance(d.type.type, c_ast.IdentifierType) and d.name not in FIXED_INTS:
            names = list(d.type.type.names)
            if len(names) == 1 and names[0] in named:
                names = list(named[names[0]])
            named[d.name] = names
    named = {k: v for k, v in named.items() if v != [k]}
    if not named:
        return ast

    class V(c_ast.NodeVisitor):
        def visit_Typedef(self, n: c_ast.Typedef) -> None:
            pass                                       # the definitions stay

        def visit_IdentifierType(self, n: c_ast.IdentifierType) -> None:
            if len(n.names) == 1 and n.names[0] in named:
                n.names = list(named[n.names[0]])
    V().visit(ast)
    return ast


_CL_SCALARS = ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float",
               "double", "half")
OPENCL_RESERVED = frozenset(
    {"global", "local", "constant", "private", "kernel", "read_only", "write_only",
     "read_write", "uniform", "pipe", "half", "uchar", "ushort", "uint", "ulong", "bool",
     "size_t", "ptrdiff_t", "intptr_t", "uintptr_t", "sampler_t", "event_t", "image1d_t",
     "image2d_t", "image3d_t", "image1d_array_t", "image2d_array_t", "image1d_buffer_t",
     "complex", "imaginary", "quad", "vector"}
    | {f"{t}{n}" for t in _CL_SCALARS for n in (2, 3, 4, 8, 16)}
    | {f"{t}{a}x{b}" for t in ("float", "double", "half") for a in (2, 3, 4, 8, 16)
       for b in (2, 3, 4, 8, 16)})
"""Words of OpenCL C (address spaces, types, vector types, reserved names) that a C name
may be but a name in a generated kernel may not."""
_PRELUDE = {"size_t": "unsigned long", "ptrdiff_t": "long", "int32_t": "int",
            "int64_t": "long", "uint32_t": "unsigned int", "uint64_t": "unsigned long"}
_NON_KERNEL_PREFIXES = ("init_", "print_", "check_")


def fake_libc_dir() -> str | None:
    """The stand-in system headers of ``pycparser-fake-libc`` (None if not installed)."""
    try:
        import pycparser_fake_libc
    except ImportError:
        return None
    return pycparser_fake_libc.directory


# {{{ source coordinates


class ColumnMap:
    """Maps coordinates in the preprocessed text back to columns of the user's file.

    Line numbers come from the preprocessor's line markers; columns are recovered by
    aligning each preprocessed line with the original one (macro expansion shifts them).
    """

    def __init__(self, filename: str, text: str):
        self.filename = filename
        self.orig = text.splitlines()
        self.pp: dict[int, str] = {}          # user line -> preprocessed line text
        self._cache: dict[int, list[int]] = {}

    def record(self, pp_text: str) -> None:
        file, line = None, 0
        for ln in pp_text.splitlines():
            m = re.match(r'^#\s*(?:line\s+)?(\d+)(?:\s+"((?:[^"\\]|\\.)*)")?', ln)
            if m and not ln.lstrip("# \t").startswith("pragma"):
                line = int(m.group(1))
                file = m.group(2).replace("\\\\", "\\") if m.group(2) is not None else file
                continue
            if file == self.filename:
                self.pp.setdefault(line, ln)
            line += 1

    def fix(self, coord: Coord | None) -> Coord | None:
        if coord is None or coord.file != self.filename or coord.line not in self.pp:
            return coord
        cols = self._cache.get(coord.line)
        if cols is None:
            cols = self._cache[coord.line] = self._columns(coord.line)
        col = coord.column or 1
        return Coord(coord.file, coord.line, cols[col - 1] + 1 if col - 1 < len(cols) else col)

    def _columns(self, line: int) -> list[int]:
        pp = self.pp[line]
        orig = self.orig[line - 1] if line - 1 < len(self.orig) else pp
        out = list(range(len(pp)))
        sm = difflib.SequenceMatcher(None, pp, orig, autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            for i in range(i1, i2):
                out[i] = j1 + (i - i1) if tag == "equal" else j1
        return out

# }}}


# {{{ preprocessing and parsing


@dataclass(frozen=True)
class CSource:
    """A preprocessed and parsed C file."""

    filename: str
    ast: c_ast.FileAST
    cmap: ColumnMap
    """Coordinates of ``ast`` -> columns of the user's file (:meth:`ColumnMap.fix`)."""


_COMMENT = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'', re.S)


def strip_comments(text: str) -> str:
    """Blank out comments (pycparser has no comment support), keeping every other
    character, and newlines, where they are so that coordinates stay exact."""
    def blank(m: re.Match) -> str:
        s = m.group(0)
        return s if s[0] in "\"'" else re.sub(r"[^\n]", " ", s)
    return _COMMENT.sub(blank, text)


def shown_name(filename: str) -> str:
    """A file's name as line markers and messages carry it: one printable line, with
    ``?`` for a double quote or a backslash (nothing a ``#line`` string would escape,
    nothing the preprocessor writes back escaped)."""
    return "".join(c if c.isprintable() and c not in '"\\' and not 0xD800 <= ord(c) <= 0xDFFF
                   else "?" for c in filename)


def read_source(text: str, filename: str = "<input>",
                defines: Mapping[str, object] | None = None,
                include_dirs: Sequence[str] = (), base_dir: str | None = None) -> CSource:
    """Preprocess (when the text has directives or ``defines``) and parse C text.

    :arg include_dirs: the user's ``-I`` folders (relative to the current directory).
    :arg base_dir: the folder of the file: quoted includes are looked up there first.
    Raises :class:`UnsupportedProgramError` at ``file:line:col`` for preprocessor and
    syntax errors.
    """
    filename = shown_name(filename)   # in line markers and coordinates: no escapes
    text = _keep_floord(strip_comments(text))
    cmap = ColumnMap(filename, text)
    src = _preprocess(text, filename, defines, include_dirs, base_dir, cmap)
    parser = c_parser.CParser()
    try:
        ast = parser.parse(src, filename)
    except c_parser.ParseError as e:
        m = re.match(r"^(.*?):(\d+):(\d+): (.*)$", str(e), re.S)
        if m:
            coord, msg = Coord(m.group(1), int(m.group(2)), int(m.group(3))), m.group(4)
        else:                           # some pycparser errors carry no position
            tok = _next_token(parser)
            coord = Coord(tok.filename, tok.lineno, tok.column) if tok is not None else None
            msg = str(e).split(": ", 1)[-1]
        raise UnsupportedProgramError(f"C syntax error: {msg}", cmap.fix(coord)) from None
    return CSource(filename, resolve_typedefs(ast), cmap)


def preprocessed(text: str, filename: str = "<input>",
                 defines: Mapping[str, object] | None = None,
                 include_dirs: Sequence[str] = (), base_dir: str | None = None) -> str:
    """The text :func:`read_source` parses: comments stripped, ``floord`` kept, directives
    and ``defines`` applied (what a compiled program depends on of its file and the
    files it includes)."""
    filename = shown_name(filename)
    text = _keep_floord(strip_comments(text))
    return _preprocess(text, filename, defines, include_dirs, base_dir,
                       ColumnMap(filename, text))


_FLOORD = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(?:floord|ceild)[ \t]*\([^\n]*$", re.M)


def _keep_floord(text: str) -> str:
    """``text`` with its one-line definitions of ``floord`` and ``ceild`` (Pluto's and
    CLooG's ``#define floord(n,d) (((n)<0) ? -((-(n)+(d)-1)/(d)) : (n)/(d))``) blanked,
    so that their uses stay calls, which the front end reads as the floor and ceiling
    divisions they are (:meth:`bbmm.codegen.cexpr.Expressions.affine`); the C compiler of the
    reference build still sees them."""
    return _FLOORD.sub(lambda m: " " * len(m.group(0)), text)


def read_text(path: str | os.PathLike) -> str:
    """A C file's text: UTF-8, else Latin-1 (a comment in another encoding is no
    error: every byte decodes); a :class:`UsageError` for a folder, an unreadable file
    or one that is not text (NUL bytes)."""
    from bbmm.diagnostic import UsageError

    if os.path.isdir(path):
        raise UsageError(f"{path}: is a directory, not a C file")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror or e}") from None
    if b"\0" in data:
        raise UsageError(f"{path}: not a C source file (it holds NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def read_file(path: str | os.PathLike, defines: Mapping[str, object] | None = None,
              include_dirs: Sequence[str] = ()) -> CSource:
    """:func:`read_source` of a file."""
    path = os.fspath(path)
    text = read_text(path)
    return read_source(text, path, defines, include_dirs, os.path.dirname(path) or ".")


def _preprocess(text: str, filename: str, defines: Mapping[str, object] | None,
                include_dirs: Sequence[str], base_dir: str | None, cmap: ColumnMap) -> str:
    """Run the C preprocessor, keeping line markers and pragmas, if the text has any
    directive other than ``#pragma`` or there are ``defines``/``include_dirs``.

    The preprocessor runs in ``base_dir`` on the text read from stdin, behind a line
    marker naming ``filename``: quoted includes resolve beside the file, then in
    ``include_dirs``; ``<...>`` includes in ``include_dirs``, then in the stand-in system
    headers (no real system header: ``-nostdinc``, and ``-undef`` so that no compiler-
    specific branch of a header is taken).
    """
    marker = f'#line 1 "{filename}"\n'   # filename: read_source's shown_name
    lines = text.splitlines()
    needs_cpp = defines or include_dirs or any(re.match(r"\s*#\s*(?!pragma\b)\w", ln)
                                               for ln in lines)
    if not needs_cpp:
        return _typedef_prelude(text) + marker + text
    fake = fake_libc_dir()
    cpp = shutil.which("cpp")
    cmd = [cpp] if cpp else [shutil.which("gcc") or "gcc", "-E", "-x", "c"]
    cmd += ["-undef", "-nostdinc"] + [f"-I{os.path.abspath(d)}" for d in include_dirs]
    if fake is not None:
        cmd += ["-isystem", fake]
    cmd += [f"-D{k}={v}" for k, v in (defines or {}).items()] + ["-"]
    try:
        res = subprocess.run(cmd, input=marker + text, capture_output=True, text=True,
                             cwd=base_dir or None)
    except OSError as e:
        raise BBMMError(f"cannot run the C preprocessor ({cmd[0]}): {e}") from None
    if res.returncode != 0:
        first = next((ln for ln in res.stderr.splitlines() if "error" in ln), res.stderr.strip())
        m = re.match(r"^(.*?):(\d+):(\d+): (?:fatal )?error: (.*)$", first)
        if m:
            msg = m.group(4)
            if fake is None and re.search(r"No such file|no include path", msg) and "<" in \
                    (lines[int(m.group(2)) - 1] if m.group(1) == filename else ""):
                msg += " (install pycparser-fake-libc for stand-in system headers)"
            raise UnsupportedProgramError(f"preprocessor: {msg}",
                                          Coord(m.group(1), int(m.group(2)), int(m.group(3))))
        raise UnsupportedProgramError(f"preprocessor failed: {first}")
    cmap.record(res.stdout)
    return _typedef_prelude(res.stdout) + res.stdout


def _typedef_prelude(src: str) -> str:
    """typedefs of ``size_t`` & co. that the text uses but no header declared."""
    return "".join(f"typedef {t} {n};\n" for n, t in _PRELUDE.items()
                   if re.search(rf"\b{n}\b", src)
                   and not re.search(rf"typedef[^;]*\b{n}\s*;", src))


def _next_token(parser: c_parser.CParser):
    try:                                # private API, used only to locate an error
        return parser._tokens.peek()
    except Exception:                   # noqa: BLE001
        return None

# }}}


# {{{ finding functions


def function_def(ast: c_ast.FileAST, name: str) -> c_ast.FuncDef | None:
    """The definition of function ``name`` (None if the file has none)."""
    return next((f for f in ast.ext if isinstance(f, c_ast.FuncDef) and f.decl.name == name),
                None)


def walk(node: c_ast.Node):
    """Every node of ``node``'s tree, ``node`` first (pre-order)."""
    yield node
    for _, c in node.children():
        yield from walk(c)


def block_items(node: c_ast.Node) -> list[c_ast.Node]:
    """The statements of a block, or the one statement a loop or ``if`` holds without one."""
    return list(node.block_items or []) if isinstance(node, c_ast.Compound) else [node]


def numbered(base: str, taken: set[str]) -> str:
    """``base``, else ``base2``, ``base3``... the first name not in ``taken`` (added to it)."""
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}{k}"
    taken.add(name)
    return name


def assignments(node: c_ast.Node, names: set[str]) -> dict[str, c_ast.Node]:
    """The first assignment (``=``, ``op=``, ``++``, ``--``, ``&x``) of each of ``names``
    in ``node``."""
    out: dict[str, c_ast.Node] = {}
    for n in walk(node):
        target = None
        if isinstance(n, c_ast.Assignment):
            target = n.lvalue
        elif isinstance(n, c_ast.UnaryOp) and n.op in ("++", "--", "p++", "p--", "&"):
            target = n.expr
        if isinstance(target, c_ast.ID) and target.name in names:
            out.setdefault(target.name, n)
    return out


def _pragmas(node: c_ast.Node):
    return (n for n in walk(node) if isinstance(n, c_ast.Pragma))


def holds_scop(func: c_ast.FuncDef) -> bool:
    """Whether the function body has a ``#pragma scop`` (at any depth)."""
    return any((p.string or "").strip() == "scop" for p in _pragmas(func.body))


def find_kernel(ast: c_ast.FileAST, name: str | None, filename: str) -> c_ast.FuncDef:
    """The kernel function: ``name`` if given, else the one holding ``#pragma scop``,
    else the only function with a loop nest not named ``main``/``init_*``/``print_*``/
    ``check_*``, not called by another function but ``main`` (a helper), and, among
    several, not returning a pointer or allocating memory (an allocator of matrices)."""
    funcs = [f for f in ast.ext if isinstance(f, c_ast.FuncDef)]
    if name is not None:
        f = function_def(ast, name)
        if f is None:
            raise UnsupportedProgramError(f"no function named '{name}' (found: "
                                          f"{', '.join(f.decl.name for f in funcs) or 'none'})")
        return f
    scops = [f for f in funcs if holds_scop(f)]
    if len(scops) == 1:
        return scops[0]
    if scops:
        raise UnsupportedProgramError(
            f"{filename}: several functions hold '#pragma scop' ("
            f"{', '.join(f.decl.name for f in scops)}); choose one with --function")
    cands = [f for f in funcs if _has_loop(f.body) and f.decl.name != "main"
             and not f.decl.name.startswith(_NON_KERNEL_PREFIXES)]
    if len(cands) > 1:
        # a function another function (but main) calls is a helper, not a kernel
        called = {c.name.name for f in funcs if f.decl.name != "main"
                  for c in _calls(f.body) if c.name.name != f.decl.name}
        cands = [f for f in cands if f.decl.name not in called] or cands
    if len(cands) > 1:
        # a function that returns a pointer or allocates (a 'double **matrix(n, m)' of
        # row pointers) makes data, it is no kernel
        cands = [f for f in cands if not _makes_data(f)] or cands
    if len(cands) != 1:
        what = "no function with a loop nest" if not cands else \
            "several kernel candidates: " + ", ".join(f.decl.name for f in cands)
        raise UnsupportedProgramError(f"{filename}: {what}; choose one with --function "
                                      f"or mark its loop nest with '#pragma scop'")
    return cands[0]


_ALLOCATORS = frozenset({"malloc", "calloc", "realloc", "free", "aligned_alloc",
                         "posix_memalign"})


def _makes_data(f: c_ast.FuncDef) -> bool:
    """Whether ``f`` returns a pointer or calls the C library's allocator."""
    return isinstance(f.decl.type.type, c_ast.PtrDecl) or any(
        c.name.name in _ALLOCATORS for c in _calls(f.body))


def _has_loop(node: c_ast.Node) -> bool:
    return any(isinstance(n, (c_ast.For, c_ast.While, c_ast.DoWhile)) for n in walk(node))

# }}}


# {{{ facts from the rest of the program


def int_literal(text: str) -> int:
    """The value of a C integer literal: decimal, octal (``017``), hex, with ``u``/``l``
    suffixes and C23's ``'`` digit separators."""
    t = text.rstrip("uUlL").replace("'", "")
    return int(t, 8) if len(t) > 1 and t[0] == "0" and t[1].isdigit() else int(t, 0)


def const_int(node: c_ast.Node | None, env: Mapping[str, int] | None = None) -> int | None:
    """Value of an integer constant expression (literals, names bound in ``env``, ``+ - *
    / %``, unary minus, integer casts); None if it is not one."""
    env = env or {}
    if isinstance(node, c_ast.Constant) and node.type in ("int", "long int", "unsigned int",
                                                          "long long int"):
        try:
            return int_literal(node.value)
        except ValueError:
            return None
    if isinstance(node, c_ast.ID):
        return env.get(node.name)
    if isinstance(node, c_ast.UnaryOp) and node.op in ("-", "+"):
        v = const_int(node.expr, env)
        return None if v is None else (-v if node.op == "-" else v)
    if isinstance(node, c_ast.Cast) and isinstance(node.to_type.type, c_ast.TypeDecl) \
            and set(getattr(node.to_type.type.type, "names", ["?"])) <= INT_WORDS:
        return const_int(node.expr, env)
    if isinstance(node, c_ast.BinaryOp) and node.op in ("+", "-", "*", "/", "%"):
        a, b = const_int(node.left, env), const_int(node.right, env)
        if a is None or b is None or (node.op in ("/", "%") and b == 0):
            return None
        if node.op == "/":                       # C truncates toward zero
            q = abs(a) // abs(b)
            return q if (a >= 0) == (b >= 0) else -q
        if node.op == "%":
            return a - b * (abs(a) // abs(b) if (a >= 0) == (b >= 0) else -(abs(a) // abs(b)))
        return a + b if node.op == "+" else a - b if node.op == "-" else a * b
    return None


def replace_children(node: c_ast.Node, fn: Callable[[c_ast.Node], list[c_ast.Node]]
                     ) -> None:
    """Each child ``x`` of ``node`` replaced, in place, by the nodes ``fn(x)`` (a list of
    children takes them all; a single child is replaced only by a single node)."""
    for attr in node.__slots__:
        child = getattr(node, attr, None)
        if isinstance(child, list):       # statements, arguments (or names: strings)
            setattr(node, attr, [y for x in child for y in (
                fn(x) if isinstance(x, c_ast.Node) else [x])])
        elif isinstance(child, c_ast.Node):
            new = fn(child)
            if len(new) == 1:
                setattr(node, attr, new[0])


def identifiers(node: c_ast.Node) -> set[str]:
    """Every name ``node`` uses or declares (new names must avoid them)."""
    out: set[str] = set()

    class V(c_ast.NodeVisitor):
        def visit_ID(self, n: c_ast.ID) -> None:
            out.add(n.name)

        def visit_Decl(self, n: c_ast.Decl) -> None:
            if n.name:
                out.add(n.name)
            self.generic_visit(n)

    V().visit(node)
    return out


def _calls(node: c_ast.Node, name: str | None = None):
    """The calls in ``node`` of function ``name`` (of any named function for None)."""
    return (n for n in walk(node) if isinstance(n, c_ast.FuncCall)
            and isinstance(n.name, c_ast.ID) and name in (None, n.name.name))


def main_sizes(ast: c_ast.FileAST, kernel: c_ast.FuncDef) -> dict[str, int]:
    """The integer sizes ``main`` gives the kernel: ``{"ni": 20, ...}``.

    ``main``'s top-level ``int ni = NI;`` declarations (integer constant expressions after
    preprocessing, so the dataset macros pick them) are matched to the kernel's integer
    parameters through the arguments of ``main``'s call to the kernel, or by name when
    ``main`` does not call it. Parameters with no constant value are left out.
    """
    main = function_def(ast, "main")
    if main is None:
        return {}
    consts: dict[str, int] = {}
    for it in main.body.block_items or []:
        if isinstance(it, c_ast.Decl) and isinstance(it.type, c_ast.TypeDecl) \
                and set(getattr(it.type.type, "names", ["?"])) <= INT_WORDS:
            v = const_int(it.init, consts)
            if v is not None:
                consts[it.name] = v
    ints = [p.name for p in signature(kernel) if p.kind == "int"]
    call = next(_calls(main.body, kernel.decl.name), None)
    if call is None:
        return {n: consts[n] for n in ints if n in consts}
    out = {}
    params = [p.name for p in signature(kernel)]
    args = call.args.exprs if call.args is not None else []
    for name, arg in zip(params, args):
        if name in ints:
            v = const_int(arg, consts)
            if v is not None:
                out[name] = v
    return out


@dataclass(frozen=True)
class CParam:
    """One parameter of a C function, as bbmm can pass it."""

    name: str
    kind: str
    """``int`` and ``float`` (scalars by value), ``array`` (``double A[n][m]`` or
    ``double (*A)[m]``), ``table`` (row pointers, ``double **A``), ``out`` (pointer to a
    scalar: PolyBench's ``DATA_TYPE *alpha``), or ``other`` (anything else)."""
    ctype: str
    """C type of the scalar or of the array elements (``int``, ``double``...)."""
    dims: tuple[c_ast.Node | None, ...] = ()
    """Array extents (the first is None for ``(*A)[m]``)."""
    coord: object = None


def is_void(t: c_ast.Node | None) -> bool:
    """Whether the type node ``t`` (a declaration's type, a ``Typename``) is plain
    ``void``."""
    if isinstance(t, c_ast.Typename):
        t = t.type
    return isinstance(t, c_ast.TypeDecl) and getattr(t.type, "names", None) == ["void"]


def params_of(func: c_ast.FuncDef) -> list[c_ast.Node]:
    """The parameter declarations of a function definition (``(void)`` has none)."""
    params = func.decl.type.args.params if func.decl.type.args else []
    return [p for p in params if not (isinstance(p, c_ast.Typename) and is_void(p))]


def append_params(func: c_ast.FuncDef, decls: list[c_ast.Decl]) -> None:
    """Add the parameter declarations ``decls`` after ``func``'s own, in place (a
    ``(void)`` list becomes theirs)."""
    ftype = func.decl.type
    if ftype.args is None:
        ftype.args = c_ast.ParamList([], func.decl.coord)
    ftype.args.params = params_of(func) + list(decls)


def signature(func: c_ast.FuncDef) -> tuple[CParam, ...]:
    """The parameters of a function definition."""
    out = []
    for p in params_of(func):
        name = getattr(p, "name", None) or "?"
        t, dims = p.type, []
        if isinstance(t, c_ast.PtrDecl) and isinstance(t.type, c_ast.ArrayDecl):
            dims.append(None)                       # double (*A)[m]
            t = t.type
        while isinstance(t, c_ast.ArrayDecl):
            dims.append(t.dim)
            t = t.type
        pointer = table = False
        if not dims and isinstance(t, c_ast.PtrDecl) and isinstance(t.type, c_ast.PtrDecl):
            table, t, dims = True, t.type.type, [None, None]     # double **A: row pointers
        elif not dims and isinstance(t, c_ast.PtrDecl):
            pointer, t = True, t.type
        names = getattr(getattr(t, "type", None), "names", None) \
            if isinstance(t, c_ast.TypeDecl) else None
        ctype = " ".join(names or ["?"])
        elem = elem_ctype(names)
        if (table or dims) and elem is not None:    # arrays: any element type, canonical
            kind, ctype = ("table" if table else "array"), elem
        elif names is None or not (set(names) <= INT_WORDS or names in (["float"], ["double"])):
            kind = "other"
        elif table:
            kind = "table"
        elif dims:
            kind = "array"
        elif pointer:
            kind = "out"
        else:
            kind = "int" if set(names) <= INT_WORDS else "float"
        out.append(CParam(name, kind, ctype, tuple(dims), p.coord))
    return tuple(out)

# }}}

# vim: foldmethod=marker

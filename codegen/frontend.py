"""C front end: one kernel function of a C file -> :class:`codegen.scop.Scop`.

.. autofunction:: parse_file
.. autofunction:: parse_source

The accepted subset: integer and floating scalar parameters, C99 array parameters
(float/double/int) with sizes affine in the integer parameters, ``for`` loops with a
constant step, counting up or down, and affine bounds (``min``/``max``/``MIN``/``MAX``/
ternaries, ``&&`` of upper bounds, or of lower bounds for a loop counting down), affine
``if``/``else`` conditions, assignments (``=``, ``+=``, ``-=``, ``*=``, ``/=``,
``A[..]++``, ``a = b = e`` for scalars) to array elements with affine subscripts, calls
of math functions and of the file's pure helper functions (:mod:`codegen.helpers`), scalar
temporaries (``float d1 = ...; d1 = CND(d1);`` in a loop body, C block scope, or declared
before ``#pragma scop``), and local arrays (inside loops: one copy per iteration of the
parallel loops around them, :func:`_narrow_private`). The region is the function body, or
what lies between ``#pragma scop`` and ``#pragma endscop``. Names that isl, the Python
driver or OpenCL C cannot take are renamed before the walk (:mod:`codegen.names`).
``#pragma omp parallel for`` / ``#pragma bbmm parallel`` before a loop asserts it parallel;
with ``collapse(n)`` the n perfectly nested loops it starts are all asserted parallel.

A temporary assigned only where it is declared is a value, not memory
(:class:`codegen.scop.Temp`): each statement that reads one replays the assignments it
needs and models their array reads as its own. That is exact when the value is the same
wherever it is read, so the front end refuses one computed from an array that is written
before it is read (in source order, or on a later trip of a loop that holds the read but
not the assignment). A temporary assigned in a loop or under an ``if`` below its
declaration carries a value across iterations (a reduction into a scalar): it becomes a
local array (:class:`codegen.scop.Array` with ``local`` set), expanded, split and
contracted by :func:`codegen.expand.expand_scalars`. Temporaries may not appear in
subscripts, bounds or conditions (those must stay affine).

"Affine" here includes C's ``/``, ``%``, ``<<`` and ``>>`` by constants (quasi-affine:
floor divisions of :class:`codegen.scop.Affine`) of values the front end proves
non-negative, where C's rounding toward zero and isl's toward minus infinity agree. A loop
with step ``s`` other than 1 or -1 becomes the loop of ``i_s`` from 0 to
``floor((last - first) / s)``, ``i`` read as ``first + s*i_s`` (a loop counting down by 1
keeps its ``i_neg = -i``).

Everything else raises :class:`bbmm.diagnostic.UnsupportedProgramError` naming the
construct and its ``file:line:col`` in the user's file. Preprocessing, finding the
kernel in a whole program and the sizes ``main`` passes it are :mod:`codegen.csource`'s.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import islpy as isl
from pycparser import c_ast, c_generator
from pycparser.c_parser import Coord

from bbmm.diagnostic import UnsupportedProgramError, _format_coord
from codegen.csource import (
    INT_WORDS,
    OPENCL_RESERVED,
    ColumnMap,
    find_kernel,
    identifiers,
    main_sizes,
    read_source,
    scalar_type,
)
from codegen.expand import NeedsExpansion, Plan, affine_bound, expand_scalars
from codegen.helpers import helper
from codegen.names import c_text, in_c_names, rename_unsafe
from codegen.scalarize import scalarize_small_arrays
from codegen.scop import (
    Access,
    AffAnd,
    AffExpr,
    Affine,
    AffMax,
    AffMin,
    AffNot,
    AffOr,
    AffSelect,
    Array,
    ArrayRef,
    BinOp,
    Call,
    Cast,
    Cmp,
    Expr,
    Helper,
    Loop,
    LoopNode,
    Node,
    Num,
    Scop,
    Statement,
    Temp,
    Ternary,
    UnOp,
    Var,
    bound_c,
    bound_floordiv,
    bound_neg,
    bound_shift,
    cond_c,
    cond_isl,
    relate_isl,
)

_Cur = tuple  # (statement name, domain, list of its accesses) while a statement is built;
# (None, None, list of _Ref) while a temporary's assignment is read

MATH_FUNCS = frozenset(
    f + s for f in ("sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "fabs",
                    "fmin", "fmax", "pow", "sin", "cos", "tan", "asin", "acos", "atan",
                    "atan2", "sinh", "cosh", "tanh", "floor", "ceil", "round", "trunc",
                    "erf", "erfc", "fmod", "cbrt", "hypot", "copysign", "rsqrt")
    for s in ("", "f")) | {"abs", "min", "max", "MIN", "MAX"}
"""Pure functions a right-hand side may call (all exist in OpenCL C, ``MIN``/``MAX`` aside)."""
SIDE_EFFECT_FUNCS = frozenset({"printf", "fprintf", "puts", "malloc", "calloc", "free", "rand",
                               "srand", "memcpy", "memset", "exit", "abort", "scanf"})
KNOWN_CONSTANTS = {"M_PI": "double", "M_E": "double", "M_SQRT2": "double", "INFINITY": "float",
                   "FLT_MAX": "float", "FLT_MIN": "float", "DBL_MAX": "double",
                   "DBL_MIN": "double"}
PARALLEL_PRAGMAS = ("omp parallel for", "omp for", "bbmm parallel")


def _collapse_count(pragma: c_ast.Pragma, fe: object) -> int:
    """n of a ``collapse(n)`` clause (1 without one): the next n nested loops are parallel."""
    m = re.search(r"\bcollapse\s*\(\s*([^)]*)\)", pragma.string or "")
    if m is None:
        return 1
    if not m.group(1).strip().isdigit() or int(m.group(1)) < 1:
        raise fe.err(f"collapse({m.group(1)}) needs a positive integer", pragma)  # type: ignore[attr-defined]
    return int(m.group(1))
_INT_WORDS = INT_WORDS
_ELEM_TYPES = ("float", "double", "int")
_ASSIGN_OPS = ("=", "+=", "-=", "*=", "/=")
_RHS_BINOPS = {"+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||", "&", "|",
               "^", "<<", ">>"}
_CMP_OPS = ("<", "<=", ">", ">=", "==", "!=")


def parse_file(path: str | os.PathLike, function: str | None = None,
               defines: Mapping[str, object] | None = None,
               include_dirs: Sequence[str] = ()) -> Scop:
    """Parse the kernel ``function`` of a C file (default: the function holding
    ``#pragma scop``, else the only function with a loop nest not named ``main``/
    ``init_*``/``print_*``); ``defines`` are extra ``-D`` macros, ``include_dirs`` the
    ``-I`` folders."""
    path = os.fspath(path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return parse_source(text, path, function, defines, include_dirs,
                        base_dir=os.path.dirname(path) or ".")


def parse_source(text: str, filename: str = "<input>", function: str | None = None,
                 defines: Mapping[str, object] | None = None,
                 include_dirs: Sequence[str] = (), base_dir: str | None = None) -> Scop:
    """Same as :func:`parse_file` for C text; ``filename`` is used in coordinates and
    quoted includes are looked up in ``base_dir`` (default: the current directory)."""
    src = read_source(text, filename, defines, include_dirs, base_dir)
    func = find_kernel(src.ast, function, filename)
    taken = identifiers(func)
    # the file's other functions, which statements may call: their kernels' copies are
    # OpenCL C, so their parameters and locals get model names too (half -> half_)
    defs = {f.decl.name: rename_unsafe(f, identifiers(f))[0] for f in src.ast.ext
            if isinstance(f, c_ast.FuncDef) and f is not func and f.decl.name != "main"}
    # names isl, the Python driver or OpenCL cannot take get model names (iter -> iter_)
    func, c_names = rename_unsafe(func, taken)
    taken |= set(c_names)
    # float w[3] used as w[0], w[1], w[2] only: the scalars w_0, w_1, w_2, unless the
    # model refuses them where it takes the array (a scalar temporary is a value, which
    # may not outlive a write to what it was computed from; an array element may)
    scalar_func, elements = scalarize_small_arrays(func, taken)
    scop = None
    if elements:
        speak = {**c_names, **{s: c_text(e, c_names) for s, e in elements.items()}}
        try:
            scop = _model(scalar_func, filename, src.cmap, defs, taken | set(elements), speak)
            func = scalar_func
        except UnsupportedProgramError:
            pass
    if scop is None:
        scop = _model(func, filename, src.cmap, defs, taken, c_names)
    sizes = main_sizes(src.ast, func)
    return scop.copy(param_defaults=tuple((p, sizes[p]) for p in scop.int_params
                                          if p in sizes), c_names=tuple(c_names.items()))


def _model(func: c_ast.FuncDef, filename: str, cmap: ColumnMap,
           defs: Mapping[str, c_ast.FuncDef], taken: set[str], speak: Mapping[str, str]
           ) -> Scop:
    """The scop of ``func``: built, scalars carried across iterations expanded
    (:func:`codegen.expand.expand_scalars`), local arrays declared in loops narrowed
    (:func:`_narrow_private`); errors and warnings in the C names of ``speak``."""
    private_plan: dict[str, tuple[int, ...]] = {}
    private_decl: dict[str, tuple[int, ...]] = {}

    def build(plan: Plan, analysis: bool = False, unpragma: frozenset[int] = frozenset()
              ) -> Scop:
        b = _Builder(filename, cmap, plan, analysis, unpragma, defs, private_plan)
        out = b.build(func)
        private_decl.update(b.private_decl)
        return out
    with in_c_names(speak):
        scop = expand_scalars(build, taken)
        if private_decl:
            scop = _narrow_private(scop, build, taken, private_plan, private_decl)
    return scop


def _narrow_private(scop: Scop, build, taken: set[str], private_plan: dict,
                    private_decl: Mapping[str, tuple[int, ...]]) -> Scop:
    """Local arrays declared inside loops, first one copy per iteration of every loop
    around them, get one per iteration of the parallel ones only (a time loop around a
    sweep's ``float row[n]`` per row would otherwise multiply its storage by the steps,
    and make every step's boxes new), when the parallel loops stay the same (checked, as
    for scalars in :func:`codegen.expand.expand_scalars`, step 4)."""
    from codegen.deps import parallel_loops

    par = parallel_loops(scop)
    narrow = {a: tuple(lid for lid in loops if par[lid]) for a, loops in private_decl.items()}
    if all(narrow[a] == loops for a, loops in private_decl.items()):
        return scop
    private_plan.update(narrow)                # build() reads it
    narrowed = expand_scalars(build, taken)
    if parallel_loops(narrowed) == par:
        return narrowed
    private_plan.clear()
    return expand_scalars(build, taken)


# {{{ the builder


class _NotAffine(Exception):
    def __init__(self, detail: str = ""):
        super().__init__(detail)
        self.detail = detail


@dataclass(frozen=True)
class _Ctx:
    """Where the walk is: enclosing loops, domain constraints (isl text), guards, 2d+1 prefix."""

    loops: tuple[Loop, ...] = ()
    cons: tuple[str, ...] = ()
    guards: tuple[str, ...] = ()
    beta: tuple[int, ...] = ()
    iters: tuple[str, ...] = ()


@dataclass(eq=False)
class _Temp:
    """A scalar temporary in scope: where it was declared and its latest assignment."""

    name: str
    unique: str
    ctype: str
    coord: object
    iters: tuple[str, ...]
    guards: tuple[str, ...]
    loops: tuple[int, ...]
    version: int | None = None
    expand: tuple[int, ...] | None = None
    """Loop ids of a temporary carried across iterations: it is then the local array
    ``unique[...]`` with one element per iteration of these loops (scalar expansion)."""
    webs: dict = field(default_factory=dict)
    """Statement name -> ``(array, loop ids)`` where the temporary's webs have arrays of
    their own (:func:`codegen.expand.expand_scalars`)."""
    outside: bool = False
    """Declared before ``#pragma scop``: whatever value it has there is not modelled."""


@dataclass(frozen=True)
class _Ref:
    """An array reference of a temporary's assignment, made an access of each statement
    that reads the value."""

    array: str
    index: tuple[Affine, ...]
    text: str
    coord: object
    temp: _Temp | None = None
    """An expanded temporary read: its array and subscripts depend on the reading
    statement (its web), so they are found there."""


@dataclass(eq=False)
class _Version:
    """One assignment of a temporary; ``expr``'s array references are ``_Ref``s, numbered
    -1, -2, ... in :attr:`ArrayRef.access`."""

    seq: int
    temp: _Temp
    op: str
    expr: Expr
    refs: tuple[_Ref, ...]
    deps: frozenset[int]
    """Assignments (of any temporary) whose values this one reads."""
    arrays: frozenset[str]
    """Arrays the value is computed from, through ``deps`` too."""
    text: str
    coord: object = None
    clobbered: tuple[str, object] | None = None
    """(array, where) of the first write since to an array in :attr:`arrays`."""
    readers: list = field(default_factory=list)
    """(loop ids, where) of each statement that reads the value."""


class _Scope:
    """Marks where a C block opens or closes in :meth:`_Builder.flatten`'s output."""


_SCOPE_OPEN, _SCOPE_CLOSE = _Scope(), _Scope()


class _Builder:
    def __init__(self, filename: str, cmap: ColumnMap,
                 plan: Plan | None = None, analysis: bool = False,
                 unpragma: frozenset[int] = frozenset(),
                 helper_defs: Mapping[str, c_ast.FuncDef] | None = None,
                 private_plan: Mapping[str, tuple[int, ...]] | None = None):
        """``plan``: the temporaries (by unique name) to model as local arrays
        (:func:`codegen.expand.expand_scalars` finds them); ``analysis``: subscript them by
        their loops' iterators as they are (a model for the analyses, not for code);
        ``unpragma``: loop ids whose parallel pragma is not followed; ``helper_defs``: the
        file's other functions, which statements may call; ``private_plan``: per local
        array declared inside loops (by its array name) the loops it gets a copy per
        iteration of (default: all that enclose its declaration)."""
        self.filename, self.cmap = filename, cmap
        self.private_plan = dict(private_plan or {})
        # local arrays declared inside loops: C name in scope -> (array name, loops, the
        # array as declared); array name -> (the declared array, its loops)
        self.private: dict[str, tuple[str, tuple[int, ...], Array]] = {}
        self.privates: dict[str, tuple[Array, tuple[int, ...]]] = {}
        self.private_decl: dict[str, tuple[int, ...]] = {}   # the loops enclosing each
        self.plan = dict(plan or {})
        self.analysis = analysis
        self.unpragma = unpragma
        self.helper_defs = dict(helper_defs or {})
        self.helpers: dict[str, Helper] = {}             # those called, checked
        self.locals: dict[str, tuple[_Temp, tuple[int, ...]]] = {}  # local arrays in use
        self.loop_dom: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self.loop_range: dict[int, tuple[Affine, Affine]] = {}
        self.gen = c_generator.CGenerator()
        self.int_params: dict[str, str] = {}
        self.float_params: dict[str, str] = {}
        self.arrays: dict[str, Array] = {}
        self.args: list[str] = []
        self.n_loops = 0
        self.n_access = 0
        self.stmts: dict[str, Statement] = {}       # schedules are set in finish()
        self.seen_iters: set[str] = set()
        self.betas: dict[str, tuple[int, ...]] = {}
        self.outer_locals: dict[str, c_ast.Decl] = {}  # declared outside the scop
        self.temps: dict[str, _Temp] = {}           # scalar temporaries in scope, by C name
        self.versions: list[_Version] = []          # every assignment of a temporary
        self.temp_names: set[str] = set()
        self.uses: list[int] = []                    # versions read by the expression at hand
        self.down: dict[str, tuple[str, Affine]] = {}  # C iterator of a loop counting down
        # or with a step -> (its model iterator, the C iterator's value: -i_neg, 2*i_s + 1)
        self.dividends: list[tuple[Affine, c_ast.Node]] = []  # of '/' and '%' in the
        # affine expression at hand: checked non-negative by check_dividends()
        self.idents: set[str] = set()               # every identifier of the function
        self.param_coords: dict[str, Coord | None] = {}

    # {{{ helpers

    def err(self, msg: str, node: c_ast.Node | None) -> UnsupportedProgramError:
        return UnsupportedProgramError(msg, self.coord(node))

    def coord(self, node: c_ast.Node | None) -> Coord | None:
        return self.cmap.fix(getattr(node, "coord", None)) if node is not None else None

    def text(self, node: c_ast.Node) -> str:
        return self.gen.visit(node)

    @property
    def params_text(self) -> str:
        return f"[{', '.join(self.int_params)}] -> "

    # }}}

    # {{{ function signature

    def build(self, func: c_ast.FuncDef) -> Scop:
        fname = func.decl.name
        self.idents = identifiers(func)
        params = func.decl.type.args.params if func.decl.type.args else []
        arrays = []
        for p in params:
            if isinstance(p, c_ast.Typename) and self.text(p) == "void":
                continue
            if isinstance(p, c_ast.EllipsisParam) or not getattr(p, "name", None):
                raise self.err("unnamed or variadic parameter not supported", p)
            self.args.append(p.name)
            if isinstance(p.type, c_ast.ArrayDecl):
                arrays.append(p)
            else:
                self.scalar_param(p)
        for p in arrays:
            self.arrays[p.name] = self.array_param(p)
        items = self.region(func, fname)
        self.idents_in_region = set().union(*(identifiers(x) for x in items))
        for d in self.outer_locals.values():
            if scalar_type(d.type) is not None:  # PolyBench's 'DATA_TYPE temp2;' before the scop
                self.local_decl(d, _Ctx(), outside=True)
            elif isinstance(d.type, c_ast.ArrayDecl) and d.init is None \
                    and d.name in self.idents_in_region:  # durbin's 'DATA_TYPE z[N];'
                self.local_array(d, _Ctx())
        tree = self.block(items, _Ctx())
        if not self.stmts:
            raise self.err(f"function '{fname}' has no statement to model", func)
        return self.finish(fname, tree)

    def scalar_param(self, p: c_ast.Decl) -> None:
        if isinstance(p.type, c_ast.PtrDecl):
            raise self.err(f"pointer parameter '{p.name}' not supported; declare it as a C99 "
                           f"array such as 'float {p.name}[n]'", p)
        names = getattr(getattr(p.type, "type", None), "names", None)
        if not isinstance(p.type, c_ast.TypeDecl) or not names:
            raise self.err(f"parameter '{p.name}' has an unsupported type", p)
        self.param_coords[p.name] = self.coord(p)
        if set(names) <= _INT_WORDS:
            self.int_params[p.name] = " ".join(names)
        elif names in (["float"], ["double"]):
            self.float_params[p.name] = names[0]
        else:
            raise self.err(f"parameter '{p.name}' has unsupported type '{' '.join(names)}'", p)

    def array_param(self, p: c_ast.Decl) -> Array:
        dims, t = [], p.type
        while isinstance(t, c_ast.ArrayDecl):
            if t.dim is None:
                raise self.err(f"array parameter '{p.name}' needs an explicit size in every "
                               f"dimension", p)
            dims.append(t.dim)
            t = t.type
        names = getattr(getattr(t, "type", None), "names", None)
        if not isinstance(t, c_ast.TypeDecl) or names is None or len(names) != 1 \
                or names[0] not in _ELEM_TYPES:
            raise self.err(f"array '{p.name}' must have element type float, double or int", p)
        extents = []
        for d in dims:
            try:
                extents.append(self.affine(d, ()))
            except _NotAffine as e:
                raise self.err(f"array size not affine in the integer parameters: "
                               f"'{self.text(d)}' in '{p.name}'" + _why(e), d) from None
            self.check_dividends(None)
        sizes = tuple(isl.PwAff(f"{self.params_text}{{ [({e.isl()})] }}") for e in extents)
        return Array(p.name, names[0], tuple(self.text(d) for d in dims), tuple(extents),
                     sizes, self.coord(p))

    def region(self, func: c_ast.FuncDef, fname: str) -> list[c_ast.Node]:
        items = list(func.body.block_items or [])
        prag = [getattr(x, "string", "").strip() if isinstance(x, c_ast.Pragma) else None
                for x in items]
        if "scop" in prag:
            start = prag.index("scop")
            if "endscop" not in prag[start:]:
                raise self.err("'#pragma scop' without '#pragma endscop'", items[start])
            end = prag.index("endscop", start)
            for d in items[:start] + items[end + 1:]:      # locals the scop cannot see
                if isinstance(d, c_ast.Decl) and d.name:
                    self.outer_locals[d.name] = d
            return items[start + 1: end]
        if items and isinstance(items[-1], c_ast.Return) and items[-1].expr is None:
            items.pop()                  # a final 'return;' of a void function is a no-op
        return items

    # }}}

    # {{{ statements and loops

    def flatten(self, items: list[c_ast.Node], ctx: _Ctx):
        """Yield (item, ctx) with compound blocks inlined and ``if`` branches guarded."""
        for it in items:
            if isinstance(it, c_ast.Compound):
                yield _SCOPE_OPEN, ctx
                yield from self.flatten(list(it.block_items or []), ctx)
                yield _SCOPE_CLOSE, ctx
            elif isinstance(it, c_ast.If):
                try:
                    c = self.cond(it.cond, ctx)
                    self.check_dividends(ctx)
                except _NotAffine as e:
                    raise self.err(f"if condition is not an affine comparison of iterators and "
                                   f"parameters: '{self.text(it.cond)}'" + _why(e),
                                   it.cond) from None
                yes = replace(ctx, cons=ctx.cons + (cond_isl(c),), guards=ctx.guards + (cond_c(c),))
                yield _SCOPE_OPEN, ctx
                yield from self.flatten(_items(it.iftrue), yes)
                yield _SCOPE_CLOSE, ctx
                if it.iffalse is not None:
                    no = replace(ctx, cons=ctx.cons + (f"not ({cond_isl(c)})",),
                                 guards=ctx.guards + (f"!({cond_c(c)})",))
                    yield _SCOPE_OPEN, ctx
                    yield from self.flatten(_items(it.iffalse), no)
                    yield _SCOPE_CLOSE, ctx
            elif isinstance(it, c_ast.Assignment) and it.op == "=" \
                    and isinstance(it.rvalue, c_ast.Assignment) and it.rvalue.op == "=" \
                    and isinstance(it.rvalue.lvalue, c_ast.ID):
                # 'a1 = a5 = k;' (deriche): 'a5 = k;' then 'a1 = a5;'
                yield from self.flatten([it.rvalue], ctx)
                yield c_ast.Assignment("=", it.lvalue, it.rvalue.lvalue, it.coord), ctx
            else:
                yield it, ctx

    def block(self, items: list[c_ast.Node], ctx: _Ctx, collapse: int = 0,
              collapse_from: c_ast.Node | None = None) -> tuple[Node, ...]:
        """``collapse``: the number of loops a ``collapse(n)`` clause still marks parallel;
        the block must then be exactly one for loop (perfect nesting)."""
        out: list[Node] = []
        pos, pragma = 0, None
        if collapse:
            loops = [it for it, _ in self.flatten(items, ctx)
                     if not isinstance(it, (c_ast.Pragma, c_ast.EmptyStatement, _Scope))]
            if len(loops) != 1 or not isinstance(loops[0], c_ast.For):
                raise self.err(f"'#pragma {collapse_from.string.strip()}' needs perfectly "
                               f"nested for loops", collapse_from)
        saved: list[tuple[dict, dict]] = []
        for it, ictx in self.flatten(items, ctx):
            if it is _SCOPE_OPEN:                   # C block scope: temporaries die with it
                saved.append((dict(self.temps), dict(self.private)))
                continue
            if it is _SCOPE_CLOSE:
                self.temps, self.private = saved.pop()
                continue
            if isinstance(it, c_ast.Pragma):
                s = (it.string or "").strip()
                if s in ("scop", "endscop"):
                    raise self.err(f"'#pragma {s}' must be at the top level of the function "
                                   f"body", it)
                if s.startswith(PARALLEL_PRAGMAS):
                    pragma = it
                continue
            if pragma is not None and not isinstance(it, c_ast.For):
                raise self.err(f"'#pragma {pragma.string.strip()}' must be followed by a for "
                               f"loop", pragma)
            sub = replace(ictx, beta=ctx.beta + (pos,))
            if isinstance(it, c_ast.For):
                if collapse:
                    pragma, n = collapse_from, collapse
                else:
                    n = _collapse_count(pragma, self) if pragma is not None else 0
                out.append(self.loop(it, sub, pragma is not None, max(0, n - 1), pragma))
            elif isinstance(it, c_ast.Decl):
                init = self.local_decl(it, sub)
                if init is None:
                    continue
                out.append(init)                 # an expanded temporary's initialisation
            elif isinstance(it, c_ast.EmptyStatement):
                continue
            elif (assigned := self.temp_target(it)) is not None \
                    and assigned[0].expand is None:
                self.new_version(*assigned, sub, it)
                continue
            else:
                out.append(self.statement(it, sub))
            pos, pragma = pos + 1, None
        if pragma is not None:
            raise self.err(f"'#pragma {pragma.string.strip()}' must be followed by a for loop",
                           pragma)
        return tuple(out)

    # {{{ scalar temporaries

    def local_decl(self, d: c_ast.Decl, ctx: _Ctx, outside: bool = False) -> str | None:
        """``float t = e;`` declares a scalar temporary (``int i, j;`` may also declare
        iterators of later loops). ``outside``: declared before ``#pragma scop`` (its
        initialiser, if any, is not modelled). Returns the statement that initialises an
        expanded temporary, else None."""
        if isinstance(d.type, c_ast.ArrayDecl):
            self.local_array(d, ctx)
            return None
        if isinstance(d.type, c_ast.PtrDecl):
            raise self.err(f"local pointer '{d.name}' not supported: subscript the array "
                           f"parameters instead", d)
        ctype = scalar_type(d.type)
        if ctype is None:
            raise self.err(f"local variable '{d.name}' has an unsupported type (scalar "
                           f"temporaries must be float, double or an integer type)", d)
        if any(s in ("static", "extern") for s in d.storage or ()):
            raise self.err(f"{d.storage[0]} local variable '{d.name}' not supported (its value "
                           f"would outlive one iteration)", d)
        if d.name in self.int_params or d.name in self.float_params or d.name in self.arrays \
                or d.name in ctx.iters:
            raise self.err(f"local variable '{d.name}' shadows a parameter or an enclosing "
                           f"loop's iterator", d)
        if isinstance(d.init, c_ast.InitList):
            raise self.err(f"brace initialiser of scalar '{d.name}' not supported", d.init)
        unique, k = d.name, 0
        # the name in generated kernels: not an OpenCL word ('half'), not another name
        while unique in self.temp_names or unique in OPENCL_RESERVED \
                or (k and unique in self.idents):
            k += 1
            unique = f"{d.name}_{k}"
        self.temp_names.add(unique)
        t = _Temp(d.name, unique, ctype, self.coord(d), ctx.iters, ctx.guards,
                  tuple(lp.id for lp in ctx.loops), outside=outside)
        if unique in self.plan:
            t.expand, t.webs = self.plan[unique]
        self.temps[d.name] = t
        if t.expand is not None:
            if t.ctype not in _ELEM_TYPES:
                raise self.err(f"temporary '{d.name}' of type '{t.ctype}' is carried across "
                               f"iterations: bbmm keeps such a value in an array of its own "
                               f"(scalar expansion), and arrays hold float, double or int",
                               d)
        if (d.init is None or outside) and ctype not in ("float", "double"):
            self.seen_iters.add(d.name)          # 'int i, j;' may declare iterators
        if d.init is None or outside:
            return None
        if t.expand is not None:
            return self.statement(c_ast.Assignment("=", c_ast.ID(d.name, d.coord), d.init,
                                                   d.coord), ctx)
        self.new_version(t, "=", d.init, ctx, d)
        return None

    def local_array(self, d: c_ast.Decl, ctx: _Ctx) -> None:
        """``double z[n];`` outside every loop (durbin's): a local array, one copy for the
        whole run; like an array parameter but never read in nor written back."""
        if any(s in ("static", "extern") for s in d.storage or ()) or d.init is not None:
            what = "initialised" if d.init is not None else d.storage[0]
            raise self.err(f"{what} local array '{d.name}' not supported: pass it to the "
                           f"kernel function as an array parameter", d)
        if d.name in self.int_params or d.name in self.float_params or d.name in self.arrays \
                or d.name in self.temps or d.name in self.private or d.name in ctx.iters:
            raise self.err(f"local array '{d.name}' shadows a parameter or another local", d)
        if ctx.loops:
            self.private_array(d, ctx)
            return
        self.arrays[d.name] = replace(self.array_param(d), local=d.name)

    def private_array(self, d: c_ast.Decl, ctx: _Ctx) -> None:
        """``float w[3];`` inside loops: C gives every iteration of them a fresh array, so
        it becomes the local array ``w[i][j][3]``, one copy per iteration of the loops in
        :attr:`private_plan` (all that enclose it unless :func:`parse_source` narrowed
        them to the parallel ones: reusing a copy across a serial loop's iterations only
        adds dependences that loop carries anyway)."""
        name, k = d.name, 0
        while name in self.privates or name in self.arrays or name in self.temp_names \
                or (k and name in self.idents):
            k += 1
            name = f"{d.name}_{k}"
        self.temp_names.add(name)
        decl = tuple(lp.id for lp in ctx.loops)
        loops = self.private_plan.get(name, decl)
        t = d.type
        while isinstance(t, c_ast.ArrayDecl):
            its = sorted(n for n in identifiers(t.dim) if self.iterator(n, ctx.iters)) \
                if t.dim is not None else []
            if its:
                raise self.err(f"the size of local array '{d.name}' depends on the loop "
                               f"iterator '{its[0]}': bbmm sizes arrays by the integer "
                               f"parameters; declare it with a size every iteration fits "
                               f"in", t.dim)
            t = t.type
        declared = self.array_param(d)
        for lid in loops:                       # sized by affine loop ranges
            self.range_of(lid, f"local array '{d.name}' gets a copy per iteration of", d)
        self.private[d.name] = (name, loops, declared)
        self.privates[name] = (declared, loops)
        self.private_decl[name] = decl

    def temp_target(self, node: c_ast.Node) -> tuple[_Temp, str, c_ast.Node | None] | None:
        """``(temporary, op, right-hand side)`` of a statement that assigns a temporary in
        scope (``t = e;``, ``t += e;``, ``t++;``), else None."""
        parts = self.assignment(node)
        if parts is None or not isinstance(parts[1], c_ast.ID) or parts[1].name not in self.temps:
            return None
        return self.temps[parts[1].name], parts[0], parts[2]

    def new_version(self, t: _Temp, op: str, rhs: c_ast.Node | None, ctx: _Ctx,
                    node: c_ast.Node) -> None:
        """Record one assignment of ``t``: its expression (array references kept as
        :class:`_Ref` until a statement reads the value) and the assignments it reads."""
        if ctx.iters != t.iters or ctx.guards != t.guards:
            raise NeedsExpansion(t.unique, t.loops)     # carried: a local array (parse_source)
        refs: list[_Ref] = []
        self.uses = []
        expr = Num("1", "int") if rhs is None else self.expr(rhs, ctx, (None, None, refs))
        deps = set(self.uses)
        if op != "=":
            deps.add(self.version_of(t, node))
        arrays = frozenset({r.array for r in refs}).union(
            *(self.versions[v].arrays for v in deps))
        self.versions.append(_Version(len(self.versions), t, op, expr, tuple(refs),
                                      frozenset(deps), arrays, self.text(node) + ";",
                                      self.coord(node)))
        t.version = len(self.versions) - 1

    def version_of(self, t: _Temp, node: c_ast.Node) -> int:
        """The assignment of ``t`` a read at ``node`` sees; refused when it was never
        assigned, or when an array its value was computed from has been written since."""
        if t.version is None:
            if t.name in self.seen_iters:
                raise self.err(f"iterator '{t.name}' used outside its loop", node)
            if t.outside:
                raise self.err(f"local variable '{t.name}' (declared at "
                               f"{_format_coord(t.coord)}, before '#pragma scop') is read "
                               f"before the modelled region assigns it", node)
            raise self.err(f"temporary '{t.name}' is read before it is assigned", node)
        v = self.versions[t.version]
        if v.clobbered is not None:
            raise self.err(self.clobber_msg(v, v.clobbered), node)
        return v.seq

    def clobber_msg(self, v: _Version, write: tuple[str, object]) -> str:
        a, where = write
        return (f"temporary '{v.temp.name}' (assigned at {_format_coord(v.coord)}) was "
                f"computed from array '{a}', which {_format_coord(where)} writes before this "
                f"read: bbmm recomputes a temporary where it is read, so the arrays it reads "
                f"must not change while it is in use; copy the value into an array element")

    def needed(self, uses: Sequence[int]) -> list[_Version]:
        """The assignments a statement reading the versions ``uses`` must replay, in order."""
        todo, seen = list(uses), set()
        while todo:
            v = todo.pop()
            if v not in seen:
                seen.add(v)
                todo.extend(self.versions[v].deps)
        return [self.versions[v] for v in sorted(seen)]

    def temp_writes(self, array: str, ctx: _Ctx, node: c_ast.Node) -> None:
        """A statement at ``node`` writes ``array``: values computed from it are stale from
        now on, and one read by a statement inside a loop that also holds this write (but
        not the assignment) would be recomputed from the new values on the next trip."""
        here = set(lp.id for lp in ctx.loops)
        for v in self.versions:
            if array not in v.arrays:
                continue
            if v.clobbered is None:
                v.clobbered = (array, self.coord(node))
            for loops, where in v.readers:
                if (set(loops) & here) - set(v.temp.loops):
                    raise self.err(
                        f"'{array}' is written here, but temporary '{v.temp.name}' (assigned at "
                        f"{_format_coord(v.coord)}) is computed from it and read at "
                        f"{_format_coord(where)} in the same loop: bbmm recomputes a temporary "
                        f"where it is read, so the arrays it reads must not change while it "
                        f"is in use; copy the value into an array element", node)

    def replay(self, uses: Sequence[int], ctx: _Ctx, cur: _Cur, where: object
               ) -> tuple[Temp, ...]:
        """The statement ``cur``'s :class:`Temp` list: the assignments it needs, their array
        references made accesses of this statement."""
        out, declared = [], set()
        loops = tuple(lp.id for lp in ctx.loops)
        for v in self.needed(uses):
            v.readers.append((loops, where))
            expr = _map_refs(v.expr, lambda r, refs=v.refs: self.rehome(r, refs, ctx, cur))
            out.append(Temp(v.temp.unique, v.temp.ctype, v.op, expr,
                            v.temp.unique not in declared, v.text, v.seq))
            declared.add(v.temp.unique)
        return tuple(out)

    def rehome(self, e: ArrayRef, refs: Sequence[_Ref], ctx: _Ctx, cur: _Cur) -> ArrayRef:
        r = refs[-e.access - 1]
        if r.temp is not None:
            return self.temp_access(r.temp, r.coord, ctx, cur, "read")
        return self.new_access(r.array, r.index, r.text, r.coord, ctx, cur, "read")

    def temp_access(self, t: _Temp, coord: object, ctx: _Ctx, cur: _Cur, kind: str
                    ) -> ArrayRef:
        """An access of the expanded temporary ``t`` by the statement ``cur``: to the array
        of the statement's web, subscripted by the iterators of the web's loops."""
        name, _, refs = cur
        if name is None:                         # a temporary's assignment reads it
            refs.append(_Ref(t.unique, (), t.name, coord, t))
            return ArrayRef(t.unique, (), -len(refs))
        arr, loops = t.webs.get(name, (t.unique, t.expand))
        self.locals.setdefault(arr, (t, loops))
        return self.new_access(arr, self.temp_index(t, loops, ctx, coord), t.name, coord,
                               ctx, cur, kind)

    def expanded(self, node: c_ast.Node) -> _Temp | None:
        """The expanded temporary ``node`` names, else None."""
        if isinstance(node, c_ast.ID) and node.name in self.temps:
            t = self.temps[node.name]
            return t if t.expand is not None else None
        return None

    def temp_index(self, t: _Temp, loops: tuple[int, ...], ctx: _Ctx, coord: object
                   ) -> tuple[Affine, ...]:
        """The subscripts of the expanded temporary ``t`` at ``ctx``: per loop of its array
        the loop's iterator minus its least value (``[0]`` for no loop)."""
        out = []
        for lid in loops:
            iters, _ = self.loop_dom[lid]
            # _webs expands over loops that enclose every statement of the web
            assert iters[-1] in ctx.iters, (t.name, lid, ctx.iters)
            lo = Affine((), 0) if self.analysis else self.range_of(
                lid, f"temporary '{t.name}' is carried across iterations of", coord)[0]
            out.append(Affine.var(iters[-1]) - lo)
        return tuple(out) or (Affine((), 0),)

    def range_of(self, lid: int, what: str, coord: object) -> tuple[Affine, Affine]:
        """``(least, greatest)`` value of loop ``lid``'s iterator over all its iterations,
        each one affine expression of the integer parameters (``what``: why one is
        needed, for the refusal)."""
        if lid in self.loop_range:
            return self.loop_range[lid]
        iters, cons = self.loop_dom[lid]
        dom = isl.Set(f"{self.params_text}{{ [{', '.join(iters)}] : "
                      f"{' and '.join(cons) or 'true'} }}")
        pos = len(iters) - 1
        lo = affine_bound(dom.dim_min(pos), lower=True)
        hi = affine_bound(dom.dim_max(pos), lower=False)
        if lo is None or hi is None:
            raise UnsupportedProgramError(
                f"{what} the loop over '{iters[-1]}', whose range is not one affine interval "
                f"of the parameters; bbmm would keep a copy of it per iteration and cannot "
                f"size that array; use an array parameter instead", self.coord(coord)
                if isinstance(coord, c_ast.Node) else coord)
        self.loop_range[lid] = (lo, hi)
        return lo, hi

    def local_arrays(self) -> list[Array]:
        """The expanded temporaries as arrays, one element per iteration of their loops;
        the local arrays declared inside loops, one copy per iteration of theirs."""
        def copies(loops: Sequence[int]) -> list[Affine]:
            if self.analysis:                    # no ranges found: the size is moot
                return [Affine((), 1) for _ in loops]
            return [hi - lo + 1 for lo, hi in (self.loop_range[lid] for lid in loops)]

        def array(name: str, ctype: str, extents: Sequence[Affine], coord: object,
                  c_name: str) -> Array:
            # the driver evaluates dims as Python (run.host_arrays): floor divisions '//'
            dims = tuple(str(max(1, e.const)) if e.is_const() else f"max(1, {e.py()})"
                         for e in extents)
            sizes = tuple(isl.PwAff(f"{self.params_text}{{ [({e.isl()})] }}") for e in extents)
            return Array(name, ctype, dims, tuple(extents), sizes, coord, local=c_name)

        out = [array(name, t.ctype, copies(loops) or [Affine((), 1)], t.coord, t.name)
               for name, (t, loops) in self.locals.items()]
        out += [array(name, declared.ctype, copies(loops) + list(declared.extents),
                      declared.coord, declared.name)
                for name, (declared, loops) in self.privates.items()]
        return out

    # }}}

    def loop(self, node: c_ast.For, ctx: _Ctx, pragma: bool, collapse: int = 0,
             pragma_node: c_ast.Node | None = None) -> LoopNode:
        """A loop node; a loop counting down (``for (i = n - 1; i >= 0; i--)``) becomes the
        loop of ``i_neg = -i`` counting up from ``-(n - 1)`` to ``0``, every use of ``i`` in
        its body reading ``-i_neg``: the same instances in the same order, so everything
        downstream sees an ordinary loop and subscripts stay affine."""
        v, lower, upper, step = self.loop_header(node, ctx)
        c_name = v
        value = None
        if step == -1:
            v = self.down_name(v)
            value = -Affine.var(v)
        elif step != 1:
            # i = first + step*i_s for i_s = 0, 1, ... while the bound holds: the bounds
            # (of -i when counting down) shift by -first and divide by |step|, rounding down
            if not isinstance(lower, Affine):
                init = node.init.decls[0] if isinstance(node.init, c_ast.DeclList) \
                    else node.init
                raise self.err(f"the first value of a loop with step {step} must be affine "
                               f"(no min, max or ?:): '{self.text(init)}'", init)
            v = self.down_name(v, "_s")
            upper = bound_floordiv(bound_shift(upper, -lower), abs(step))
            value = (lower + Affine.var(v).scale(abs(step))).scale(-1 if step < 0 else 1)
            lower = Affine()
        head = [self.text(x) if x is not None else "" for x in (node.init, node.cond, node.next)]
        # a parallel pragma that a carried scalar's value crosses is not followed (the
        # loop is then what the analysis says: serial)
        pragma = pragma and self.n_loops not in self.unpragma
        lp = Loop(self.n_loops, v, bound_c(lower), bound_c(upper), pragma, self.coord(node),
                  len(ctx.loops), lower, upper, f"for ({'; '.join(head)})")
        self.n_loops += 1
        self.seen_iters.add(v)
        self.seen_iters.add(c_name)
        cons = (relate_isl(v, ">=", lower), relate_isl(v, "<=", upper))
        body = _Ctx(ctx.loops + (lp,), ctx.cons + cons, ctx.guards, ctx.beta, ctx.iters + (v,))
        self.loop_dom[lp.id] = (body.iters, body.cons)
        saved = dict(self.temps), dict(self.private)   # the body is a scope of its own
        saved_down = dict(self.down)
        if value is not None:
            self.down[c_name] = (v, value)
        children = self.block(_items(node.stmt), body, collapse, pragma_node)
        self.temps, self.private = saved
        self.down = saved_down
        return LoopNode(lp, children)

    def down_name(self, v: str, suffix: str = "_neg") -> str:
        """The model iterator of a loop over ``v`` counting down (``v_neg``) or with a step
        (``v_s``); ``v_neg_``... if the function already uses that name."""
        w = f"{v}{suffix}"
        while w in self.idents or w in self.seen_iters \
                or any(w == m for m, _ in self.down.values()):
            w += "_"
        return w

    def iterator(self, n: str, iters: Sequence[str]) -> Affine | None:
        """``n`` as an affine expression when it is an iterator in scope (``-i_neg`` for
        the C iterator of a loop counting down, ``2*i_s + 1`` for one with a step), else
        None."""
        if n in iters:
            return Affine.var(n)
        w = self.down.get(n)
        if w is not None and w[0] in iters:
            return w[1]
        return None

    def loop_header(self, node: c_ast.For, ctx: _Ctx) -> tuple[str, AffExpr, AffExpr, int]:
        """``(C iterator, lower, upper, step)``; for a loop counting down (a negative step),
        the bounds are those of the negated iterator."""
        init = node.init
        if isinstance(init, c_ast.DeclList) and len(init.decls) == 1 \
                and set(getattr(init.decls[0].type.type, "names", ["?"])) <= _INT_WORDS \
                and init.decls[0].init is not None:
            v, lb = init.decls[0].name, init.decls[0].init
        elif isinstance(init, c_ast.Assignment) and init.op == "=" \
                and isinstance(init.lvalue, c_ast.ID):
            v, lb = init.lvalue.name, init.rvalue
        else:
            raise self.err("loop initialisation must be 'i = lower' or 'int i = lower'",
                           init or node)
        if self.iterator(v, ctx.iters) is not None:
            raise self.err(f"loop iterator '{v}' reuses the iterator of an enclosing loop", node)
        if v in self.int_params or v in self.float_params or v in self.arrays:
            raise self.err(f"loop iterator '{v}' is a parameter of the function", node)
        step = self.loop_step(node, v)
        down = step < 0
        first = self.bound(lb, ctx, "first" if down else "lower")
        if node.cond is None:
            raise self.err(f"loop over '{v}' has no condition", node)
        # counting up: upper bounds (i < ub, i <= ub); counting down: lower bounds of i,
        # which are upper bounds of -i (i > lb: -i < -lb)
        below, above = (("<", "<="), (">", ">=")) if not down else ((">", ">="), ("<", "<="))
        limits = []
        for c in _conjuncts(node.cond):
            if isinstance(c, c_ast.BinaryOp) and c.op in below and _is_id(c.left, v):
                e, strict = c.right, c.op in ("<", ">")
            elif isinstance(c, c_ast.BinaryOp) and c.op in above and _is_id(c.right, v):
                e, strict = c.left, c.op in ("<", ">")
            elif down:
                raise self.err(f"the condition of a loop counting down must bound the iterator "
                               f"from below ('{v} >= lb' or '{v} > lb'): '{self.text(c)}'", c)
            else:
                raise self.err(f"loop condition must bound the iterator from above "
                               f"('{v} < ub' or '{v} <= ub'): '{self.text(c)}'", c)
            b = self.bound(e, ctx, "lower" if down else "upper")
            if down:
                b = bound_neg(b)
            limits.append(bound_shift(b, -1) if strict else b)
        last = limits[0] if len(limits) == 1 else AffMin(tuple(limits))
        return v, bound_neg(first) if down else first, last, step

    def loop_step(self, node: c_ast.For, v: str) -> int:
        """The step of the loop's increment (``i++``, ``++i``, ``i += 2``, ``i = i + 2``,
        ``i = 2 + i``, or the same with ``-``): a non-zero integer constant."""
        nx = node.next
        if isinstance(nx, c_ast.UnaryOp) and nx.op in ("p++", "++", "p--", "--") \
                and _is_id(nx.expr, v):
            return 1 if "++" in nx.op else -1
        by, sign = None, 1
        if isinstance(nx, c_ast.Assignment) and _is_id(nx.lvalue, v):
            r = nx.rvalue
            if nx.op in ("+=", "-="):
                by, sign = r, (1 if nx.op == "+=" else -1)
            elif nx.op == "=" and isinstance(r, c_ast.BinaryOp) and r.op in ("+", "-") \
                    and _is_id(r.left, v):
                by, sign = r.right, (1 if r.op == "+" else -1)
            elif nx.op == "=" and isinstance(r, c_ast.BinaryOp) and r.op == "+" \
                    and _is_id(r.right, v):
                by = r.left
        if by is None:
            raise self.err(f"loop increment must be '{v}++', '{v}--', '{v} += step', "
                           f"'{v} -= step' or '{v} = {v} + step'", nx if nx is not None else node)
        try:
            k = self.affine(by, ())
        except _NotAffine:
            k = None
        self.dividends = []
        if k is None or not k.is_const():
            raise self.err(f"loop step must be an integer constant: '{self.text(nx)}'", by)
        if k.const == 0:
            raise self.err(f"loop step is 0 (the loop never ends): '{self.text(nx)}'", by)
        return sign * k.const

    def assignment(self, node: c_ast.Node) -> tuple[str, c_ast.Node, c_ast.Node | None] | None:
        """``(op, target, right-hand side)`` of an assignment statement (``x++`` is ``+=``
        with no right-hand side), else None."""
        if isinstance(node, c_ast.UnaryOp) and node.op in ("p++", "++", "p--", "--"):
            return ("+=" if "++" in node.op else "-="), node.expr, None
        if isinstance(node, c_ast.Assignment):
            if node.op not in _ASSIGN_OPS:
                raise self.err(f"assignment operator '{node.op}' not supported", node)
            return node.op, node.lvalue, node.rvalue
        return None

    def statement(self, node: c_ast.Node, ctx: _Ctx) -> str:
        parts = self.assignment(node)
        if parts is None or (parts[2] is None and not isinstance(parts[1], c_ast.ArrayRef)
                             and self.expanded(parts[1]) is None):
            raise self.err(_unsupported(node, self.text), node)
        op, lhs_node, rhs_node = parts
        if self.expanded(lhs_node) is None:
            self.check_lvalue(lhs_node, ctx)
        name = f"S{len(self.stmts)}"
        tup = f"{name}[{', '.join(ctx.iters)}]"
        dom = isl.Set(f"{self.params_text}{{ {tup} : {' and '.join(ctx.cons) or 'true'} }}")
        cur: _Cur = (name, dom, [])
        self.uses = []
        if op != "=":
            self.access(lhs_node, ctx, cur, "read")
        rhs = Num("1", "int") if rhs_node is None else self.expr(rhs_node, ctx, cur)
        temps = self.replay(self.uses, ctx, cur, self.coord(node))
        lhs = self.access(lhs_node, ctx, cur, "write")
        t = self.expanded(lhs_node)              # values read from it know it by this name
        self.temp_writes(t.unique if t is not None else lhs.array, ctx, node)
        self.stmts[name] = Statement(name, ctx.iters, tuple(lp.id for lp in ctx.loops), dom,
                                     None, tuple(cur[2]), lhs, rhs, op, self.coord(node),
                                     self.text(node) + ";", ctx.guards, temps)
        self.betas[name] = ctx.beta
        return name                    # a leaf of the loop tree until finish()

    def check_lvalue(self, lv: c_ast.Node, ctx: _Ctx) -> None:
        if isinstance(lv, c_ast.ArrayRef):
            return
        if isinstance(lv, c_ast.ID):
            n = lv.name
            if n in ctx.iters or n in self.seen_iters:
                raise self.err(f"assignment to loop iterator '{n}'", lv)
            if n in self.int_params or n in self.float_params or n in self.arrays:
                raise self.err(f"write to parameter '{n}' (only array elements may be written)",
                               lv)
            if n in self.outer_locals and n not in self.seen_iters:
                raise self.err(self.scalar_temp(n), lv)
            raise self.err(f"write to scalar '{n}' (only array elements may be written)", lv)
        if isinstance(lv, c_ast.UnaryOp) and lv.op == "*":
            raise self.err(f"pointer dereference '{self.text(lv)}' not supported (a pointer walk "
                           f"is not an affine array access; subscript the array instead)", lv)
        raise self.err(f"unsupported assignment target '{self.text(lv)}'", lv)

    def finish(self, fname: str, tree: tuple[Node, ...]) -> Scop:
        depth = max(len(st.iterators) for st in self.stmts.values())
        stmts = {}
        for name, st in self.stmts.items():
            its, beta = st.iterators, self.betas[name]
            vec = []                        # 2d+1: [beta0, i0, beta1, i1, ..., beta_depth]
            for d in range(depth + 1):
                vec.append(str(beta[d]) if d < len(beta) else "0")
                if d < depth:
                    vec.append(its[d] if d < len(its) else "0")
            sched = isl.Map(f"{self.params_text}{{ {name}[{', '.join(its)}] -> "
                            f"[{', '.join(vec)}] }}").intersect_domain(st.domain)
            stmts[name] = replace(st, schedule=sched)

        def rebuild(nodes):                   # statement leaves are names until now
            return tuple(LoopNode(n.loop, rebuild(n.children)) if isinstance(n, LoopNode)
                         else stmts[n] for n in nodes)
        cons = [f"{p} >= 0" for p in self.int_params]
        cons += [f"{e.isl()} >= 1" for a in self.arrays.values() for e in a.extents
                 if not e.is_const()]
        ctx = isl.Set(f"{self.params_text}{{ : {' and '.join(cons) or 'true'} }}")
        return Scop(self.filename, fname, tuple(self.int_params),
                    tuple(self.float_params.items()),
                    tuple(self.arrays.values()) + tuple(self.local_arrays()),
                    tuple(stmts.values()), rebuild(tree), ctx, tuple(self.args),
                    tuple(self.int_params.values()),
                    param_coords=tuple(self.param_coords.items()),
                    helpers=tuple(self.helpers.values()))

    # }}}

    # {{{ affine expressions, bounds and conditions

    def affine(self, node: c_ast.Node, iters: tuple[str, ...]) -> Affine:
        if isinstance(node, c_ast.Constant):
            if node.type not in ("int", "long int", "unsigned int", "long long int"):
                raise _NotAffine(f"'{node.value}' is not an integer")
            return Affine((), _int_literal(node.value))
        if isinstance(node, c_ast.ID):
            n = node.name
            it = self.iterator(n, iters)
            if it is not None:
                return it
            if n in self.int_params:
                return Affine.var(n)
            raise _NotAffine(self.unknown_name(n, iters))
        if isinstance(node, c_ast.UnaryOp) and node.op in ("-", "+"):
            a = self.affine(node.expr, iters)
            return -a if node.op == "-" else a
        if isinstance(node, c_ast.BinaryOp) and node.op in ("+", "-"):
            a, b = self.affine(node.left, iters), self.affine(node.right, iters)
            return a + b if node.op == "+" else a - b
        if isinstance(node, c_ast.BinaryOp) and node.op == "*":
            a, b = self.affine(node.left, iters), self.affine(node.right, iters)
            if a.is_const():
                a, b = b, a
            if not b.is_const():
                raise _NotAffine("product of two variables")
            return a.scale(b.const)
        if isinstance(node, c_ast.BinaryOp) and node.op in ("/", "%", "<<", ">>"):
            a, b = self.affine(node.left, iters), self.affine(node.right, iters)
            if not b.is_const():
                raise _NotAffine(f"'{node.op}' by a variable")
            d = b.const
            if node.op in ("<<", ">>"):          # by 0 <= d < 31: times or over 2**d
                if not 0 <= d < 31:
                    raise _NotAffine(f"shift by {d}")
                if node.op == "<<":
                    return a.scale(2 ** d)
                d = 2 ** d
            if d <= 0:
                raise _NotAffine(f"'{node.op}' by {d} (only by a positive constant)")
            if a.is_const():                     # C's rounding toward zero (gcc's >> floors)
                q = a.const // d if a.const >= 0 or node.op == ">>" else -(-a.const // d)
                return Affine((), a.const - d * q if node.op == "%" else q)
            # C rounds toward zero and isl toward minus infinity: the same for a
            # dividend that is never negative, which check_dividends() proves
            self.dividends.append((a, node))
            q = a.floordiv(d)
            return a - q.scale(d) if node.op == "%" else q
        if isinstance(node, c_ast.Cast) and set(getattr(node.to_type.type.type, "names", ["?"])) \
                <= _INT_WORDS:
            return self.affine(node.expr, iters)
        if isinstance(node, c_ast.ArrayRef):
            raise _NotAffine("indirect access through an array")
        if isinstance(node, c_ast.FuncCall):
            raise _NotAffine("function call")
        raise _NotAffine(f"operator '{getattr(node, 'op', type(node).__name__)}'")

    def check_dividends(self, ctx: _Ctx | None) -> None:
        """Refuse a ``/`` or ``%`` of the expression just built whose dividend can be
        negative where it is evaluated (the enclosing loops and conditions of ``ctx``;
        the parameters alone for ``None``): there C and the model round differently."""
        pending, self.dividends = self.dividends, []
        if not pending:
            return
        iters, cons = (ctx.iters, ctx.cons) if ctx is not None else ((), ())
        cons = (*cons, *(f"{p} >= 0" for p in self.int_params))
        dom = isl.Set(f"{self.params_text}{{ [{', '.join(iters)}] : "
                      f"{' and '.join(cons) or 'true'} }}")
        for a, node in pending:
            neg = dom.intersect(isl.Set(f"{self.params_text}{{ [{', '.join(iters)}] : "
                                        f"{a.isl()} < 0 }}"))
            if not neg.is_empty():
                how = "is implementation-defined" if node.op == ">>" else "rounds toward zero"
                raise self.err(f"'{self.text(node)}': '{self.text(node.left)}' can be negative "
                               f"here (C's '{node.op}' of a negative value {how}; bbmm models "
                               f"it for non-negative values only)", node)

    def affine_expr(self, a: Affine) -> Expr:
        """An iterator's value (:meth:`iterator`) as a right-hand-side expression: ``-i_neg``
        as before; ``2*i_s + 1``; a floor division is C's ``/``, its dividend being
        non-negative (checked where it was written)."""
        if len(a.terms) == 1 and a == -Affine.var(a.terms[0][0]):
            return UnOp("-", Var(a.terms[0][0], "iterator", "int"))
        parts: list[Expr] = []
        for name, k in a.terms:
            v = Var(name, "param", self.int_params[name]) if name in self.int_params \
                else Var(name, "iterator", "int")
            parts.append(v if k == 1 else BinOp("*", Num(str(k), "int"), v))
        for num, den, k in a.divs:
            q = BinOp("/", self.affine_expr(num), Num(str(den), "int"))
            parts.append(q if k == 1 else BinOp("*", Num(str(k), "int"), q))
        if a.const or not parts:
            parts.append(Num(str(a.const), "int"))
        out = parts[0]
        for p in parts[1:]:
            out = BinOp("+", out, p)
        return out

    def unknown_name(self, n: str, iters: tuple[str, ...]) -> str:
        if n in self.float_params:
            return f"'{n}' is a floating-point parameter"
        if n in self.arrays:
            return f"'{n}' is an array"
        if n in self.temps and (self.temps[n].version is not None
                                or self.temps[n].expand is not None):
            return (f"'{n}' is a scalar temporary: subscripts, loop bounds and conditions "
                    f"must be affine in iterators and integer parameters")
        if n in self.seen_iters:
            return f"iterator '{n}' used outside its loop"
        if n in self.outer_locals:
            return self.scalar_temp(n)
        return f"unknown identifier '{n}'"

    def scalar_temp(self, n: str) -> str:
        """Message for a local variable of the kernel declared outside the scop that the
        front end does not model (scalars of other types, initialised arrays)."""
        where = _format_coord(self.coord(self.outer_locals[n]))
        return (f"local variable '{n}' (declared at {where}, before '#pragma scop') is not "
                f"modelled: bbmm takes scalars of type float, double or an integer type, "
                f"and local arrays without an initialiser")

    def bound(self, node: c_ast.Node, ctx: _Ctx, which: str) -> AffExpr:
        try:
            out = self.bound_expr(node, ctx)
        except _NotAffine as e:
            raise self.err(f"{which} loop bound is not affine: '{self.text(node)}'" + _why(e),
                           node) from None
        self.check_dividends(ctx)
        return out

    def bound_expr(self, node: c_ast.Node, ctx: _Ctx) -> AffExpr:
        if isinstance(node, c_ast.FuncCall) and isinstance(node.name, c_ast.ID) \
                and node.name.name.lower() in ("min", "max") and node.args is not None:
            args = tuple(self.bound_expr(a, ctx) for a in node.args.exprs)
            return AffMin(args) if node.name.name.lower() == "min" else AffMax(args)
        if isinstance(node, c_ast.TernaryOp):
            c = self.cond(node.cond, ctx)
            a, b = self.bound_expr(node.iftrue, ctx), self.bound_expr(node.iffalse, ctx)
            if isinstance(c, Cmp) and c.op in ("<", "<=", ">", ">="):
                if (c.lhs, c.rhs) == (a, b):
                    return AffMin((a, b)) if c.op in ("<", "<=") else AffMax((a, b))
                if (c.lhs, c.rhs) == (b, a):
                    return AffMax((b, a)) if c.op in ("<", "<=") else AffMin((b, a))
            return AffSelect(c, a, b)
        if isinstance(node, c_ast.BinaryOp) and node.op in ("+", "-"):
            # min/max/ternary plus or minus an affine term (the first value of a loop
            # counting down from an exclusive bound: MIN(n, i + 2) - 1)
            a, b = self.bound_expr(node.left, ctx), self.bound_expr(node.right, ctx)
            if node.op == "-":
                b = bound_neg(b)
            if isinstance(b, Affine):
                return bound_shift(a, b)
            if isinstance(a, Affine):
                return bound_shift(b, a)
            raise _NotAffine("sum of two piecewise bounds (min, max or ?:)")
        return self.affine(node, ctx.iters)

    def cond(self, node: c_ast.Node, ctx: _Ctx):
        if isinstance(node, c_ast.BinaryOp) and node.op in ("&&", "||"):
            args = (self.cond(node.left, ctx), self.cond(node.right, ctx))
            return AffAnd(args) if node.op == "&&" else AffOr(args)
        if isinstance(node, c_ast.UnaryOp) and node.op == "!":
            return AffNot(self.cond(node.expr, ctx))
        if isinstance(node, c_ast.BinaryOp) and node.op in _CMP_OPS:
            c = Cmp(node.op, self.affine(node.left, ctx.iters),
                    self.affine(node.right, ctx.iters))
            if node.op in ("==", "!="):
                # 'e % d == 0' tests divisibility, whatever the sign of e
                for m, z in ((node.left, node.right), (node.right, node.left)):
                    if isinstance(m, c_ast.BinaryOp) and m.op == "%" and _is_zero(z):
                        self.dividends = [x for x in self.dividends if x[1] is not m]
            return c
        # a bare value, C's 'if (i % 2)': true when not 0 (divisibility again: any sign)
        dividends = len(self.dividends)
        c = Cmp("!=", self.affine(node, ctx.iters), Affine())
        if isinstance(node, c_ast.BinaryOp) and node.op == "%":
            self.dividends = self.dividends[:dividends] + [
                x for x in self.dividends[dividends:] if x[1] is not node]
        return c

    # }}}

    # {{{ right-hand sides and accesses

    def expr(self, node: c_ast.Node, ctx: _Ctx, cur: _Cur) -> Expr:
        if isinstance(node, c_ast.Constant):
            if node.type in ("char", "string"):
                raise self.err(f"{node.type} literal {node.value} not supported", node)
            t = "float" if node.type == "float" else "double" if node.type == "double" else "int"
            return Num(node.value, t)
        if isinstance(node, c_ast.ID):
            n = node.name
            if n in ctx.iters:
                return Var(n, "iterator", "int")
            w = self.down.get(n)
            if w is not None and w[0] in ctx.iters:   # i == -i_neg, i == 2*i_s + 1
                return self.affine_expr(w[1])
            if n in self.int_params:
                return Var(n, "param", self.int_params[n])
            if n in self.float_params:
                return Var(n, "param", self.float_params[n])
            if n in self.temps:
                t = self.temps[n]
                if t.expand is not None:
                    return self.access(node, ctx, cur, "read")
                self.uses.append(self.version_of(t, node))
                return Var(t.unique, "temp", t.ctype)
            if n in KNOWN_CONSTANTS:
                return Num(n, KNOWN_CONSTANTS[n])
            if n in self.arrays or n in self.private:
                raise self.err(f"array '{n}' used without subscripts", node)
            raise self.err(self.unknown_name(n, ctx.iters), node)
        if isinstance(node, c_ast.ArrayRef):
            return self.access(node, ctx, cur, "read")
        if isinstance(node, c_ast.BinaryOp) and node.op in _RHS_BINOPS:
            return BinOp(node.op, self.expr(node.left, ctx, cur), self.expr(node.right, ctx, cur))
        if isinstance(node, c_ast.UnaryOp):
            if node.op in ("-", "+", "!", "~"):
                return UnOp(node.op, self.expr(node.expr, ctx, cur))
            if node.op in ("*", "&"):
                raise self.err(f"pointer {'dereference' if node.op == '*' else 'address-of'} "
                               f"not supported: '{self.text(node)}'", node)
            if "++" in node.op or "--" in node.op:
                raise self.err(f"increment inside an expression (side effect): "
                               f"'{self.text(node)}'", node)
            raise self.err(f"operator '{node.op}' not supported", node)
        if isinstance(node, c_ast.TernaryOp):
            return Ternary(self.expr(node.cond, ctx, cur), self.expr(node.iftrue, ctx, cur),
                           self.expr(node.iffalse, ctx, cur))
        if isinstance(node, c_ast.Cast):
            t = node.to_type.type
            if not isinstance(t, c_ast.TypeDecl):
                raise self.err(f"pointer cast not supported: '{self.text(node)}'", node)
            return Cast(" ".join(t.type.names), self.expr(node.expr, ctx, cur))
        if isinstance(node, c_ast.FuncCall):
            fn = node.name.name if isinstance(node.name, c_ast.ID) else self.text(node.name)
            if fn in MATH_FUNCS:
                args = node.args.exprs if node.args is not None else []
                return Call(fn, tuple(self.expr(a, ctx, cur) for a in args))
            if fn in self.helper_defs:
                h = helper(fn, self.helper_defs, MATH_FUNCS, KNOWN_CONSTANTS, self.coord,
                           self.helpers)
                args = node.args.exprs if node.args is not None else []
                if len(args) != len(h.params):
                    raise self.err(f"'{fn}' takes {len(h.params)} argument(s), given "
                                   f"{len(args)}", node)
                return Call(fn, tuple(self.expr(a, ctx, cur) for a in args))
            raise self.err(_call_msg(fn), node)
        if isinstance(node, c_ast.Assignment):
            raise self.err(f"assignment inside an expression: '{self.text(node)}'", node)
        raise self.err(_unsupported(node, self.text), node)

    def access(self, node: c_ast.ArrayRef | c_ast.ID, ctx: _Ctx, cur: _Cur, kind: str
               ) -> ArrayRef:
        t = self.expanded(node)
        if t is not None:                        # an expanded temporary: its local array
            return self.temp_access(t, self.coord(node), ctx, cur, kind)
        subs, base = [], node
        while isinstance(base, c_ast.ArrayRef):
            subs.append(base.subscript)
            base = base.name
        subs.reverse()
        text = self.text(node)
        if not isinstance(base, c_ast.ID):
            raise self.err(f"unsupported array reference '{text}'", node)
        if base.name in self.private:
            return self.private_access(base.name, subs, text, node, ctx, cur, kind)
        arr = self.arrays.get(base.name)
        if arr is None:
            what = "a scalar" if base.name in self.int_params or base.name in self.float_params \
                else "not an array parameter"
            raise self.err(f"subscripted name '{base.name}' is {what}: '{text}'", node)
        index = self.subscripts(arr.name, arr.ndim, subs, text, node, ctx)
        return self.new_access(arr.name, index, text, self.coord(node), ctx, cur, kind)

    def subscripts(self, array: str, ndim: int, subs: list[c_ast.Node], text: str,
                   node: c_ast.Node, ctx: _Ctx) -> tuple[Affine, ...]:
        """The affine subscripts of the reference ``text`` to an ``ndim``-dimensional
        array, each dividend checked non-negative."""
        if len(subs) != ndim:
            raise self.err(f"array '{array}' has {ndim} dimension(s) but '{text}' has "
                           f"{len(subs)} subscript(s)", node)
        index = []
        for s in subs:
            try:
                index.append(self.affine(s, ctx.iters))
            except _NotAffine as e:
                raise self.err(f"non-affine subscript '{self.text(s)}' in '{text}'" + _why(e),
                               s) from None
            self.check_dividends(ctx)
        return tuple(index)

    def private_access(self, c_name: str, subs: list[c_ast.Node], text: str,
                       node: c_ast.Node, ctx: _Ctx, cur: _Cur, kind: str) -> ArrayRef:
        """``w[k]`` of a local array declared inside loops: ``w[i - lo_i][k]``, the copy of
        this iteration of its loops (:meth:`private_array`)."""
        name, loops, declared = self.private[c_name]
        declared_index = self.subscripts(c_name, declared.ndim, subs, text, node, ctx)
        copy = tuple(Affine.var(self.loop_dom[lid][0][-1])
                     - (Affine((), 0) if self.analysis else self.loop_range[lid][0])
                     for lid in loops)
        return self.new_access(name, copy + declared_index, text, self.coord(node), ctx, cur,
                               kind)

    def new_access(self, arr: str, index: tuple[Affine, ...], text: str, coord: object,
                   ctx: _Ctx, cur: _Cur, kind: str) -> ArrayRef:
        name, dom, accs = cur
        if name is None:                         # a temporary's assignment: kept for later
            accs.append(_Ref(arr, index, text, coord))
            return ArrayRef(arr, index, -len(accs))
        aid = self.n_access
        self.n_access += 1
        rel = isl.Map(f"{self.params_text}{{ {name}[{', '.join(ctx.iters)}] -> "
                      f"{arr}[{', '.join(x.isl() for x in index)}] }}").intersect_domain(dom)
        accs.append(Access(aid, name, arr, kind, rel, index, text, coord))
        return ArrayRef(arr, index, aid)

    # }}}

# }}}

# {{{ small helpers


def _map_refs(e: Expr, f) -> Expr:
    """``e`` with every array reference ``r`` replaced by ``f(r)``."""
    if isinstance(e, ArrayRef):
        return f(e)
    if isinstance(e, BinOp):
        return BinOp(e.op, _map_refs(e.left, f), _map_refs(e.right, f))
    if isinstance(e, UnOp):
        return UnOp(e.op, _map_refs(e.operand, f))
    if isinstance(e, Cast):
        return Cast(e.ctype, _map_refs(e.operand, f))
    if isinstance(e, Call):
        return Call(e.func, tuple(_map_refs(a, f) for a in e.args))
    if isinstance(e, Ternary):
        return Ternary(_map_refs(e.cond, f), _map_refs(e.then, f), _map_refs(e.else_, f))
    return e


def _items(node: c_ast.Node) -> list[c_ast.Node]:
    return list(node.block_items or []) if isinstance(node, c_ast.Compound) else [node]


def _conjuncts(node: c_ast.Node) -> list[c_ast.Node]:
    if isinstance(node, c_ast.BinaryOp) and node.op == "&&":
        return _conjuncts(node.left) + _conjuncts(node.right)
    return [node]


def _is_id(node: c_ast.Node, name: str) -> bool:
    return isinstance(node, c_ast.ID) and node.name == name


def _is_zero(node: c_ast.Node) -> bool:
    return isinstance(node, c_ast.Constant) and node.type == "int" \
        and _int_literal(node.value) == 0


def _int_literal(text: str) -> int:
    t = text.rstrip("uUlL").replace("'", "")
    if len(t) > 1 and t[0] == "0" and t[1].isdigit():
        return int(t, 8)
    return int(t, 0)


def _why(e: _NotAffine) -> str:
    return f" ({e.detail})" if e.detail else ""


def _call_msg(fn: str) -> str:
    if fn in SIDE_EFFECT_FUNCS:
        return f"call to '{fn}' has side effects"
    return f"call to unknown function '{fn}' (only pure math functions are allowed)"


def _unsupported(node: c_ast.Node, text) -> str:
    names = {c_ast.While: "while loop", c_ast.DoWhile: "do-while loop", c_ast.Goto: "'goto'",
             c_ast.Break: "'break'", c_ast.Continue: "'continue'", c_ast.Return: "'return'",
             c_ast.Switch: "switch statement", c_ast.Label: "label"}
    for cls, what in names.items():
        if isinstance(node, cls):
            return f"{what} not supported in the modelled region"
    if isinstance(node, c_ast.FuncCall):
        fn = node.name.name if isinstance(node.name, c_ast.ID) else text(node.name)
        return _call_msg(fn) if fn not in MATH_FUNCS else \
            f"call to '{fn}' as a statement has no effect"
    return f"unsupported statement '{text(node)}'"

# }}}

# vim: foldmethod=marker

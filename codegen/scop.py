"""The polyhedral model of one kernel function (a *scop*), as built by :mod:`bbmm.codegen.frontend`.

Every isl object lives in islpy's default context and carries **all** integer parameters
of the kernel (``[n, m]`` below), so binary operations never need to align spaces.
Statement ``S0`` at loop depth 3 has the tuple ``S0[k, i, j]`` (iterator names of its
enclosing loops, outermost first).

Three small layers:

* affine expressions (:class:`Affine`) and piecewise-affine bound trees
  (:class:`AffMin`, :class:`AffMax`, :class:`AffSelect`, conditions :class:`Cmp`,
  :class:`AffAnd`, :class:`AffOr`, :class:`AffNot`), printable as C and as isl text;
* the right-hand-side expression IR (:class:`Num`, :class:`Var`, :class:`ArrayRef`,
  :class:`BinOp`, :class:`UnOp`, :class:`Call`, :class:`Ternary`, :class:`Cast`), printed
  by :func:`to_c` with an optional callback that replaces each array reference;
* the model itself: :class:`Array`, :class:`Access`, :class:`Loop`, :class:`Statement`,
  :class:`LoopNode` and :class:`Scop`.

.. autofunction:: to_c
.. autofunction:: array_refs
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Union

import islpy as isl

# {{{ affine expressions


@dataclass(frozen=True)
class Affine:
    """``const + sum(coeff * name) + sum(coeff * floor(num / den))`` over loop iterators and
    integer parameters: affine, or quasi-affine when it has floor divisions by positive
    constants (C's ``i / 2`` and ``i % 2`` of a non-negative ``i``, the trip count of a loop
    with a step).

    As an isl object it is ``[n] -> { [i, j] -> [(2i + n - 1)] }``. Three texts: :meth:`__str__`
    is C (``2*i + n - 1``; a floor division is ``bbmm_floord(i, 2)``, the kernels' macro),
    :meth:`isl` is isl (``floor((i)/2)``) and :meth:`py` is Python (``((i) // 2)``); without
    floor divisions the three are the same text.
    """

    terms: tuple[tuple[str, int], ...] = ()
    """(name, coefficient) pairs, sorted by name, no zero coefficient."""
    const: int = 0
    divs: tuple[tuple[Affine, int, int], ...] = ()
    """(numerator, denominator > 1, coefficient) of each ``coeff * floor(num / den)``,
    sorted, no zero coefficient."""

    @staticmethod
    def of(coeffs: Mapping[str, int], const: int = 0,
           divs: Mapping[tuple[Affine, int], int] | None = None) -> Affine:
        return Affine(tuple(sorted((k, v) for k, v in coeffs.items() if v)), const,
                      tuple(sorted(((n, d, c) for (n, d), c in (divs or {}).items() if c),
                                   key=repr)))

    @staticmethod
    def var(name: str) -> Affine:
        return Affine(((name, 1),), 0)

    @property
    def coeffs(self) -> dict[str, int]:
        """Coefficients of the linear terms (names inside floor divisions excluded)."""
        return dict(self.terms)

    @property
    def names(self) -> frozenset[str]:
        """Every name used, inside floor divisions too."""
        out = frozenset(k for k, _ in self.terms)
        return out.union(*(n.names for n, _, _ in self.divs))

    def is_const(self) -> bool:
        return not self.terms and not self.divs

    def floordiv(self, den: int) -> Affine:
        """``floor(self / den)`` for a constant ``den >= 1``, simplified where exact."""
        assert den >= 1
        if den == 1:
            return self
        if self.is_const():
            return Affine((), self.const // den)
        if all(v % den == 0 for _, v in self.terms) and \
                all(c % den == 0 for _, _, c in self.divs):
            # floor((den*x + c) / den) = x + floor(c / den) for integer x
            return Affine.of({k: v // den for k, v in self.terms}, self.const // den,
                             {(n, d): c // den for n, d, c in self.divs})
        return Affine.of({}, 0, {(self, den): 1})

    def __add__(self, other: Affine | int) -> Affine:
        if isinstance(other, int):
            return Affine(self.terms, self.const + other, self.divs)
        c = self.coeffs
        for k, v in other.terms:
            c[k] = c.get(k, 0) + v
        dv = {(n, d): k for n, d, k in self.divs}
        for n, d, k in other.divs:
            dv[(n, d)] = dv.get((n, d), 0) + k
        return Affine.of(c, self.const + other.const, dv)

    def __neg__(self) -> Affine:
        return self.scale(-1)

    def __sub__(self, other: Affine | int) -> Affine:
        return self + (-other)

    def scale(self, k: int) -> Affine:
        return Affine.of({n: v * k for n, v in self.terms}, self.const * k,
                         {(n, d): c * k for n, d, c in self.divs})

    def evaluate(self, env: Mapping[str, int]) -> int:
        return (self.const + sum(v * env[k] for k, v in self.terms)
                + sum(c * (n.evaluate(env) // d) for n, d, c in self.divs))

    def text(self, floordiv: Callable[[str, int], str]) -> str:
        """The expression, each floor division written ``floordiv(numerator text, den)``."""
        parts = [(name, v) for name, v in self.terms]
        parts += [(floordiv(n.text(floordiv), d), c) for n, d, c in self.divs]
        out = ""
        for name, v in parts:
            mag = name if abs(v) == 1 else f"{abs(v)}*{name}"
            out += (" - " if v < 0 else " + ") + mag if out else ("-" if v < 0 else "") + mag
        if self.const or not out:
            c = self.const
            out += (f" - {-c}" if c < 0 else f" + {c}") if out else str(c)
        return out

    def __str__(self) -> str:
        return self.text(_c_floordiv)

    def isl(self) -> str:
        return self.text(_isl_floordiv)

    def py(self) -> str:
        return self.text(_py_floordiv)


def _c_floordiv(n: str, d: int) -> str:
    return f"bbmm_floord({n}, {d})"


def _isl_floordiv(n: str, d: int) -> str:
    return f"floor(({n})/{d})"


def _py_floordiv(n: str, d: int) -> str:
    return f"(({n}) // {d})"


FLOORD_C = ("#define bbmm_floord(n, d) (((n) < 0) ? -((-(n) + (d) - 1) / (d)) : (n) / (d))")
"""OpenCL C definition of the floor division :meth:`Affine.__str__` writes (``d >= 1``)."""


@dataclass(frozen=True)
class Cmp:
    """Affine comparison ``lhs op rhs``; op is a C operator (``<``, ``<=``, ``==``, ``!=``...)."""

    op: str
    lhs: Affine
    rhs: Affine


@dataclass(frozen=True)
class AffAnd:
    args: tuple[AffCond, ...]


@dataclass(frozen=True)
class AffOr:
    args: tuple[AffCond, ...]


@dataclass(frozen=True)
class AffNot:
    arg: AffCond


AffCond = Union[Cmp, AffAnd, AffOr, AffNot]
"""An affine condition over iterators and integer parameters (an isl set, possibly a union)."""


@dataclass(frozen=True)
class AffMin:
    args: tuple[AffExpr, ...]


@dataclass(frozen=True)
class AffMax:
    args: tuple[AffExpr, ...]


@dataclass(frozen=True)
class AffSelect:
    """``cond ? then : else_`` with an affine condition (a C ternary in a loop bound)."""

    cond: AffCond
    then: AffExpr
    else_: AffExpr


AffExpr = Union[Affine, AffMin, AffMax, AffSelect]
"""A piecewise-affine loop bound: ``[n, m] -> { [i] -> [(min(n, m + i))] }``."""

_ISL_OP = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "=", "!=": "!="}


def cond_isl(c: AffCond) -> str:
    """isl text of a condition (``(i <= n - 1 and j >= 0)``)."""
    if isinstance(c, Cmp):
        return f"{c.lhs.isl()} {_ISL_OP[c.op]} {c.rhs.isl()}"
    if isinstance(c, AffNot):
        return f"not ({cond_isl(c.arg)})"
    sep = " and " if isinstance(c, AffAnd) else " or "
    return "(" + sep.join(f"({cond_isl(a)})" for a in c.args) + ")"


def cond_c(c: AffCond) -> str:
    """C text of a condition."""
    if isinstance(c, Cmp):
        return f"{c.lhs} {c.op} {c.rhs}"
    if isinstance(c, AffNot):
        return f"!({cond_c(c.arg)})"
    sep = " && " if isinstance(c, AffAnd) else " || "
    return sep.join(f"({cond_c(a)})" for a in c.args)


def bound_c(e: AffExpr) -> str:
    """C text of a bound; ``min``/``max`` are the OpenCL C integer built-ins."""
    if isinstance(e, Affine):
        return str(e)
    if isinstance(e, AffSelect):
        return f"(({cond_c(e.cond)}) ? {bound_c(e.then)} : {bound_c(e.else_)})"
    name = "min" if isinstance(e, AffMin) else "max"
    args = [bound_c(a) for a in e.args]
    out = args[0]
    for a in args[1:]:
        out = f"{name}({out}, {a})"
    return out


def bound_shift(e: AffExpr, k: Affine | int) -> AffExpr:
    """``e + k`` pushed into the leaves (``min(x, y) + k`` is ``min(x + k, y + k)``)."""
    if isinstance(e, Affine):
        return e + k
    if isinstance(e, AffSelect):
        return AffSelect(e.cond, bound_shift(e.then, k), bound_shift(e.else_, k))
    return type(e)(tuple(bound_shift(a, k) for a in e.args))


def bound_neg(e: AffExpr) -> AffExpr:
    """``-e`` pushed into the leaves (``-min(a, b)`` is ``max(-a, -b)``)."""
    if isinstance(e, Affine):
        return -e
    if isinstance(e, AffSelect):
        return AffSelect(e.cond, bound_neg(e.then), bound_neg(e.else_))
    flip = AffMax if isinstance(e, AffMin) else AffMin
    return flip(tuple(bound_neg(a) for a in e.args))


def bound_floordiv(e: AffExpr, den: int) -> AffExpr:
    """``floor(e / den)`` pushed into the leaves (floor is monotone: ``floor(min(a, b) / d)``
    is ``min(floor(a / d), floor(b / d))``)."""
    if isinstance(e, Affine):
        return e.floordiv(den)
    if isinstance(e, AffSelect):
        return AffSelect(e.cond, bound_floordiv(e.then, den), bound_floordiv(e.else_, den))
    return type(e)(tuple(bound_floordiv(a, den) for a in e.args))


def relate_isl(var: str, op: str, e: AffExpr) -> str:
    """isl text of ``var op e`` (op ``<=``/``>=``): ``i <= min(a, b)`` -> ``i <= a and i <= b``."""
    if isinstance(e, Affine):
        return f"{var} {op} {e.isl()}"
    if isinstance(e, AffSelect):
        c = cond_isl(e.cond)
        return (f"((({c}) and {relate_isl(var, op, e.then)}) or "
                f"((not ({c})) and {relate_isl(var, op, e.else_)}))")
    conj = isinstance(e, AffMin) == (op == "<=")      # i <= min(..) and i >= max(..): all
    sep = " and " if conj else " or "
    return "(" + sep.join(f"({relate_isl(var, op, a)})" for a in e.args) + ")"


def bound_names(e: AffExpr | AffCond) -> frozenset[str]:
    """Names (iterators, parameters) used by a bound or a condition."""
    if isinstance(e, Affine):
        return e.names
    if isinstance(e, Cmp):
        return e.lhs.names | e.rhs.names
    if isinstance(e, AffNot):
        return bound_names(e.arg)
    if isinstance(e, AffSelect):
        return bound_names(e.cond) | bound_names(e.then) | bound_names(e.else_)
    return frozenset().union(*(bound_names(a) for a in e.args))

# }}}

# {{{ right-hand-side expression IR


@dataclass(frozen=True)
class Num:
    """A literal as written (``0.2``, ``1.0f``, ``3``); ctype ``int``, ``float`` or ``double``."""

    value: str
    ctype: str


@dataclass(frozen=True)
class Var:
    """A scalar name: kind ``iterator`` (ctype ``int``), ``param`` (its declared ctype) or
    ``temp`` (a local scalar temporary, :class:`Temp`; ``name`` is its unique name)."""

    name: str
    kind: str
    ctype: str


@dataclass(frozen=True)
class ArrayRef:
    """``A[i][j+1]``: one access, ``access`` is :attr:`Access.id`."""

    array: str
    index: tuple[Affine, ...]
    access: int


@dataclass(frozen=True)
class BinOp:
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class UnOp:
    op: str
    operand: Expr


@dataclass(frozen=True)
class Call:
    """A call of a pure math function (``sqrt``, ``fmax``, ``min``...)."""

    func: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Ternary:
    cond: Expr
    then: Expr
    else_: Expr


@dataclass(frozen=True)
class Cast:
    ctype: str
    operand: Expr


Expr = Union[Num, Var, ArrayRef, BinOp, UnOp, Call, Ternary, Cast]


def default_ref(ref: ArrayRef) -> str:
    return ref.array + "".join(f"[{ix}]" for ix in ref.index)


def to_c(e: Expr, ref: Callable[[ArrayRef], str] = default_ref) -> str:
    """C/OpenCL text of an expression, fully parenthesised; ``ref`` prints each array
    reference (a kernel generator passes a macro call such as ``path_0(i, k)``)."""
    if isinstance(e, Num):
        return e.value
    if isinstance(e, Var):
        return e.name
    if isinstance(e, ArrayRef):
        return ref(e)
    if isinstance(e, BinOp):
        return f"({to_c(e.left, ref)} {e.op} {to_c(e.right, ref)})"
    if isinstance(e, UnOp):
        return f"({e.op}{to_c(e.operand, ref)})"
    if isinstance(e, Call):
        return f"{e.func}({', '.join(to_c(a, ref) for a in e.args)})"
    if isinstance(e, Ternary):
        return f"({to_c(e.cond, ref)} ? {to_c(e.then, ref)} : {to_c(e.else_, ref)})"
    if isinstance(e, Cast):
        return f"(({e.ctype}){to_c(e.operand, ref)})"
    raise TypeError(f"not an expression: {e!r}")


def array_refs(e: Expr) -> Iterator[ArrayRef]:
    """Array references of an expression, left to right."""
    if isinstance(e, ArrayRef):
        yield e
    elif isinstance(e, BinOp):
        yield from array_refs(e.left)
        yield from array_refs(e.right)
    elif isinstance(e, (UnOp, Cast)):
        yield from array_refs(e.operand)
    elif isinstance(e, Call):
        for a in e.args:
            yield from array_refs(a)
    elif isinstance(e, Ternary):
        for a in (e.cond, e.then, e.else_):
            yield from array_refs(a)

# }}}

# {{{ the model


@dataclass(frozen=True)
class Array:
    """An array parameter ``float path[n][n]``, or a *local* array: a scalar temporary
    whose value is carried across iterations (``float s = 0; for (j ...) s += ...;``),
    expanded by the front end over the loops that need their own copy of it, or an array
    the C function declares (``double z[n];``; inside loops, ``float w[3];`` with a copy
    per iteration of the parallel loops around it).

    ``sizes[d]`` is the extent of dimension d as ``[n] -> { [(n)] }``.
    """

    name: str
    ctype: str
    """Element type: ``float``, ``double`` or ``int``."""
    dims: tuple[str, ...]
    """C text of each extent, as declared (after macro expansion); for a local array,
    Python text that the driver evaluates (``max(1, ((n + 2) // 3))``)."""
    extents: tuple[Affine, ...]
    sizes: tuple[isl.PwAff, ...]
    coord: object = None
    local: str = ""
    """For a local array, the C name of the temporary it expands (not a parameter of the
    function: never read in from the caller, never written back, not compared by
    ``--check``); empty for an array parameter."""

    @property
    def ndim(self) -> int:
        return len(self.dims)

    def shape(self, params: Mapping[str, int]) -> tuple[int, ...]:
        return tuple(e.evaluate(params) for e in self.extents)


@dataclass(frozen=True)
class Access:
    """One array reference of one statement.

    ``relation`` is ``[n] -> { S0[k, i, j] -> path[i, k] : (S0's domain) }``, i.e. already
    restricted to the statement's domain. A compound assignment ``A[i] += e`` has two
    accesses for its left-hand side, a read and a write, with the same text.
    """

    id: int
    """Unique in the scop, in textual order."""
    statement: str
    array: str
    kind: str
    """``read`` or ``write``."""
    relation: isl.Map
    index: tuple[Affine, ...]
    text: str
    coord: object = None


@dataclass(frozen=True)
class Loop:
    """``for (int i = lower; i <= upper; i++)``; bounds may use outer iterators and parameters.

    ``lower``/``upper`` are C text of the *inclusive* first and last values (``i < n``
    gives upper ``n - 1``); ``lower_expr``/``upper_expr`` are the same bounds as trees,
    i.e. ``[n] -> { [k] -> [(n - 1)] }`` over the outer iterators.
    """

    id: int
    """Preorder number in the scop (0, 1, ...)."""
    iterator: str
    lower: str
    upper: str
    parallel_pragma: bool
    """The user asserted the loop parallel (``#pragma omp parallel for``/``bbmm parallel``)."""
    coord: object = None
    depth: int = 0
    """Number of enclosing loops."""
    lower_expr: AffExpr = field(default=Affine(), compare=False)
    upper_expr: AffExpr = field(default=Affine(), compare=False)
    text: str = ""
    """The loop header as C text."""
    stop_flag: str | None = None
    """A ``break`` flag of the loop (:func:`bbmm.codegen.structure.loop_jumps`): its whole body
    runs while the flag is 0, and nothing sets it back, so the loop may stop once it is
    set (the host does, for a serial loop: :meth:`bbmm.runtime.Runtime.stopped`)."""


@dataclass(frozen=True)
class Temp:
    """One assignment to a local scalar temporary (``float d1 = log(S[i] / X[i]);``,
    ``d1 = CND(d1);``), replayed by the statement that reads it, just before it.

    A temporary is not memory: each statement that reads one recomputes the assignments
    it needs, in source order, in its own instance, and models their array reads as its
    own accesses. That is exact because a temporary whose arrays could change between its
    assignment and a use is kept in memory instead, a local array
    (:mod:`bbmm.codegen.temporaries`).
    """

    name: str
    """Unique in the function (``t``, or ``t_1`` for a second declaration of ``t``)."""
    ctype: str
    op: str
    """``=``, ``+=``, ``-=``, ``*=`` or ``/=``."""
    expr: Expr
    declare: bool = False
    """The statement's first assignment of this temporary: it declares it."""
    text: str = ""
    version: int = 0
    """Number of the assignment in the function, in source order: statements side by side
    that replay the same one may share it."""


@dataclass(frozen=True)
class Statement:
    """``path[i][j] = min(path[i][j], path[i][k] + path[k][j]);``.

    ``domain`` is ``[n] -> { S0[k, i, j] : 0 <= k < n and 0 <= i < n and 0 <= j < n }``
    (loop bounds and enclosing ``if`` conditions); ``schedule`` is the 2d+1 map
    ``[n] -> { S0[k, i, j] -> [0, k, 0, i, 0, j, 0] }`` padded with zeros to the
    deepest statement of the scop, so all statements share one time space.
    """

    name: str
    iterators: tuple[str, ...]
    loops: tuple[int, ...]
    """Enclosing :attr:`Loop.id`, outermost first."""
    domain: isl.Set
    schedule: isl.Map
    accesses: tuple[Access, ...]
    """Reads in textual order (the left-hand side first for ``+=``), then the write."""
    lhs: ArrayRef
    rhs: Expr
    op: str
    """``=``, ``+=``, ``-=``, ``*=`` or ``/=``."""
    coord: object = None
    text: str = ""
    guards: tuple[str, ...] = ()
    """C text of the enclosing ``if`` conditions (already part of ``domain``)."""
    temps: tuple[Temp, ...] = ()
    """Assignments of scalar temporaries the right-hand side needs, in source order;
    their array reads are among :attr:`accesses`."""

    @property
    def write(self) -> Access:
        return next(a for a in self.accesses if a.kind == "write")

    @property
    def reads(self) -> tuple[Access, ...]:
        return tuple(a for a in self.accesses if a.kind == "read")


@dataclass(frozen=True)
class LoopNode:
    """A loop and its body in textual order: nested :class:`LoopNode` and :class:`Statement`."""

    loop: Loop
    children: tuple[Node, ...]

    def statements(self) -> Iterator[Statement]:
        return _statements(self.children)

    def loops(self) -> Iterator[Loop]:
        yield self.loop
        yield from _loops(self.children)


Node = Union[LoopNode, Statement]


def _statements(nodes: tuple[Node, ...]) -> Iterator[Statement]:
    for n in nodes:
        if isinstance(n, LoopNode):
            yield from n.statements()
        else:
            yield n


def _loops(nodes: tuple[Node, ...]) -> Iterator[Loop]:
    for n in nodes:
        if isinstance(n, LoopNode):
            yield from n.loops()


@dataclass(frozen=True)
class Helper:
    """A pure function of the C file that statements call (``static inline float sqr(float
    x)``): scalars in, a scalar out, nothing else touched (:mod:`bbmm.codegen.helpers`). The
    kernels get its definition; the reference program calls its own."""

    name: str
    ctype: str
    """Return type: ``float``, ``double`` or an integer type."""
    params: tuple[str, ...]
    """C type of each parameter."""
    source: str
    """Its definition as C text, storage class and ``inline`` dropped."""
    coord: object = None


@dataclass(frozen=True)
class Scop:
    """The modelled region of one kernel function.

    ``context`` is ``[n, m] -> { : n >= 0 and m >= 0 and (every array extent) >= 1 }``.
    """

    filename: str
    function: str
    int_params: tuple[str, ...]
    float_params: tuple[tuple[str, str], ...]
    """(name, ctype) of the floating scalar parameters (``alpha``)."""
    arrays: tuple[Array, ...]
    statements: tuple[Statement, ...]
    tree: tuple[Node, ...]
    context: isl.Set
    args: tuple[str, ...] = ()
    """All parameter names of the function, in declaration order."""
    int_param_types: tuple[str, ...] = ()
    """C type of each integer parameter (``int``, ``long``...), parallel to ``int_params``."""
    param_defaults: tuple[tuple[str, int], ...] = ()
    """(name, value) of the integer parameters whose value the C program's ``main`` passes
    the kernel as a compile-time constant (PolyBench's ``int n = N;``): ``--param`` may
    leave them out."""
    param_coords: tuple[tuple[str, object], ...] = ()
    """(name, source location) of each scalar parameter's declaration."""
    helpers: tuple[Helper, ...] = ()
    """The C file's functions that the statements call, callees before callers."""
    c_names: tuple[tuple[str, str], ...] = ()
    """(model name, C name) of each name of the C function that isl, the Python driver or
    OpenCL cannot take, renamed by the front end (:mod:`bbmm.codegen.names`): ``iter_``, ``iter``.
    Every other field holds model names."""
    rows: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(array, strides) of each flat array read as rows of its parameters, outermost first
    (:mod:`bbmm.codegen.delinearize`: ``A[i*n + j]`` as ``A[i][j]``, strides ``("n",)``)."""
    pointers: tuple[str, ...] = ()
    """Pointer parameters taken as arrays (:func:`bbmm.codegen.scalarize.pointer_arrays`)."""
    tables: tuple[str, ...] = ()
    """Those of them that are tables of row pointers (``double **A`` used as ``A[i][j]``):
    the sequential C program gets a table of pointers into the rows of the array."""
    inferred: tuple[str, ...] = ()
    """Arrays whose first size the front end inferred from their subscripts (pointers,
    flat arrays, ``float B[][n]``: :meth:`bbmm.codegen.builder.Builder.infer_sizes`)."""
    returns: str | None = None
    """The one-element array holding the value the kernel returns, its last argument
    (:func:`bbmm.codegen.structure.kernel_return`); None for a kernel returning nothing."""
    globals: tuple[str, ...] = ()
    """File-scope arrays the kernel uses, the last of :attr:`args` (not C parameters:
    :func:`bbmm.codegen.globals.file_arrays`; the reference copies them in and out)."""
    reductions: tuple[str, ...] = ()
    """Max and min reductions split over a loop's rows, as ``bbmm compile`` reports them
    (``converge.c:13:5: max of 'diff' over loop 'i': a partial per row and strip of 4``;
    :mod:`bbmm.codegen.reductions`)."""

    copy = replace

    # {{{ look-ups

    def c_name(self, name: str) -> str:
        """The C source's name for a model name (itself unless renamed)."""
        return dict(self.c_names).get(name, name)

    def coord_of(self, param: str) -> object:
        """Where the scalar parameter ``param`` is declared (None: unknown)."""
        return dict(self.param_coords).get(param)

    def loops(self) -> tuple[Loop, ...]:
        """All loops, preorder (by id)."""
        return tuple(_loops(self.tree))

    def loop(self, id: int) -> Loop:
        return self.loops()[id]

    def loop_node(self, id: int) -> LoopNode:
        stack = list(self.tree)
        while stack:
            n = stack.pop()
            if isinstance(n, LoopNode):
                if n.loop.id == id:
                    return n
                stack.extend(n.children)
        raise KeyError(id)

    def loops_by_iterator(self, iterator: str) -> tuple[Loop, ...]:
        return tuple(lp for lp in self.loops() if lp.iterator == iterator)

    def statement(self, name: str) -> Statement:
        return next(s for s in self.statements if s.name == name)

    def array(self, name: str) -> Array:
        return next(a for a in self.arrays if a.name == name)

    def helper(self, name: str) -> Helper | None:
        return next((h for h in self.helpers if h.name == name), None)

    @property
    def param_arrays(self) -> tuple[Array, ...]:
        """The arrays the caller passes (every array but the local ones)."""
        return tuple(a for a in self.arrays if not a.local)

    def accesses(self) -> tuple[Access, ...]:
        return tuple(a for s in self.statements for a in s.accesses)

    def access(self, id: int) -> Access:
        return next(a for a in self.accesses() if a.id == id)

    # }}}

    # {{{ union objects

    def domain(self) -> isl.UnionSet:
        """``[n] -> { S0[k, i, j] : ...; S1[...] : ... }``."""
        return _union_set(s.domain for s in self.statements)

    def schedule(self) -> isl.UnionMap:
        """``[n] -> { S0[k, i, j] -> [0, k, 0, i, 0, j, 0]; ... }``."""
        return _union_map(s.schedule for s in self.statements)

    def reads(self) -> isl.UnionMap:
        """``[n] -> { S0[k, i, j] -> path[a, b] : ... }`` over all read accesses."""
        return _union_map(a.relation for a in self.accesses() if a.kind == "read")

    def writes(self) -> isl.UnionMap:
        """``[n] -> { S0[k, i, j] -> path[i, j] : ... }`` over all write accesses."""
        return _union_map(a.relation for a in self.accesses() if a.kind == "write")

    def bounds(self, array: str) -> isl.Set:
        """``[n] -> { A[x0, x1] : 0 <= x0 < n and 0 <= x1 < n }``: every element of ``array``."""
        a = self.array(array)
        xs = [f"x{d}" for d in range(a.ndim)]
        cons = " and ".join(f"0 <= {x} < {e.isl()}" for x, e in zip(xs, a.extents)) or "true"
        return isl.Set(f"[{', '.join(self.int_params)}] -> {{ {a.name}[{', '.join(xs)}] : "
                       f"{cons} }}")

    def params_set(self, values: Mapping[str, int]) -> isl.Set:
        """``[n] -> { : n = 5 }`` for the given parameter values (others free)."""
        cons = " and ".join(f"{k} = {int(v)}" for k, v in values.items()) or "true"
        return isl.Set(f"[{', '.join(self.int_params)}] -> {{ : {cons} }}")

    # }}}


def _union_set(sets: Iterator[isl.Set]) -> isl.UnionSet:
    out = isl.UnionSet("{ }")
    for s in sets:
        out = out.union(isl.UnionSet.from_set(s))
    return out


def _union_map(maps: Iterator[isl.Map]) -> isl.UnionMap:
    out = isl.UnionMap("{ }")
    for m in maps:
        out = out.union(isl.UnionMap.from_map(m))
    return out

# }}}

# vim: foldmethod=marker

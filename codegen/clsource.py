"""OpenCL C text for bbmm's kernels: C's types and conversions kept in OpenCL C, the
access macros of Figure 9, and the line emitter the kernel generators share.

.. autofunction:: expr_type

C semantics are kept where OpenCL differs: math functions get their C argument types
(``exp(float)`` is a double computation in C, ``sqrtf`` a float one; OpenCL's overloads
would pick float and reject ``sqrt(int)``), ``abs`` stays int, ``MIN``/``MAX``/``min``/
``max`` become OpenCL ``min``/``max`` on the common type. Without fp64 every double
(literal, parameter, cast, math function) becomes float (:class:`Lower`).
"""
from __future__ import annotations

from bbmm.codegen.scop import (
    ArrayRef,
    BinOp,
    Call,
    Cast,
    Expr,
    Num,
    Scop,
    Statement,
    Ternary,
    UnOp,
    Var,
)

# {{{ C types of expressions


_INT_RANK = {"_Bool": 0, "char": 1, "signed char": 1, "unsigned char": 1, "short": 2,
             "unsigned short": 2,
             "int": 3, "signed": 3, "signed int": 3, "unsigned": 4, "unsigned int": 4,
             "long": 5, "long int": 5, "long long": 5, "unsigned long": 6,
             "unsigned long long": 6}
_CL_TYPE = {"long long": "long", "long int": "long", "unsigned long long": "unsigned long",
            "long double": "double", "signed": "int", "signed int": "int",
            "unsigned": "unsigned int", "_Bool": "int", "bool": "int"}
CL_MATH = frozenset({
    "sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "fabs", "fmin", "fmax",
    "pow", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
    "floor", "ceil", "round", "trunc", "erf", "erfc", "fmod", "cbrt", "hypot", "copysign",
    "rsqrt"})
"""C math functions taking and returning double; ``<name>f`` takes and returns float."""
_MINMAX = {"min": "min", "max": "max", "MIN": "min", "MAX": "max"}
_FLOAT_CONSTANTS = {"M_PI": "M_PI_F", "M_E": "M_E_F", "M_SQRT2": "M_SQRT2_F",
                    "DBL_MAX": "INFINITY", "DBL_MIN": "0.0f"}
"""Double constants without fp64: the nearest float (``(float)DBL_MAX`` is inf in C)."""


def cl_ctype(t: str) -> str:
    return _CL_TYPE.get(t, t)


def cl_elem(t: str) -> str:
    """The OpenCL type of array elements of the C type ``t`` (:data:`bbmm.codegen.csource.
    ELEM_CTYPES`): the same width; ``_Bool`` as ``uchar`` (OpenCL's ``bool`` has no
    size a buffer may hold)."""
    return "uchar" if t == "_Bool" else cl_ctype(t)


def store(lhs: str, op: str, rhs: str, ctype: str) -> str:
    """The OpenCL statement ``lhs op rhs;`` storing into an element of C type ``ctype``:
    C converts a value stored in a ``_Bool`` to 0 or 1, where a ``uchar`` would keep its
    low byte, so such a store is ``lhs = (lhs op' rhs) != 0;``."""
    if ctype != "_Bool":
        return f"{lhs} {op} {rhs};"
    value = f"({rhs})" if op == "=" else f"(({lhs}) {op[:-1]} ({rhs}))"
    return f"{lhs} = {value} != 0;"


def _is_real(t: str) -> bool:
    return t in ("float", "double")


def _common(a: str, b: str) -> str:
    """C's usual arithmetic conversions, for the types this IR has."""
    for real in ("double", "float"):
        if real in (a, b):
            return real
    ra, rb = _INT_RANK.get(a, 3), _INT_RANK.get(b, 3)
    r = max(ra, rb, 3)
    return a if r == ra else b if r == rb else "int"


def _promote(t: str) -> str:
    return t if _is_real(t) or _INT_RANK.get(t, 3) >= 3 else "int"


def expr_type(e: Expr, scop: Scop) -> str:
    """The C type of an expression under C's rules (``int``, ``long``, ``float``,
    ``double``...): ``alpha * (float) c[i]`` is float, ``0.2 * A[i]`` double."""
    if isinstance(e, (Num, Var)):
        return cl_ctype(e.ctype)
    if isinstance(e, ArrayRef):
        return scop.array(e.array).ctype
    if isinstance(e, Cast):
        return cl_ctype(e.ctype)
    if isinstance(e, UnOp):
        return "int" if e.op == "!" else _promote(expr_type(e.operand, scop))
    if isinstance(e, BinOp):
        if e.op in ("<", "<=", ">", ">=", "==", "!=", "&&", "||"):
            return "int"
        if e.op in ("<<", ">>"):
            return _promote(expr_type(e.left, scop))
        return _common(expr_type(e.left, scop), expr_type(e.right, scop))
    if isinstance(e, Ternary):
        return _common(expr_type(e.then, scop), expr_type(e.else_, scop))
    if isinstance(e, Call):
        h = scop.helper(e.func)
        if h is not None:
            return cl_ctype(h.ctype)
        if e.func in _MINMAX:
            out = "int"
            for a in e.args:
                out = _common(out, expr_type(a, scop))
            return out
        if e.func == "abs":
            return "int"
        return "float" if e.func.endswith("f") and e.func[:-1] in CL_MATH else "double"
    raise TypeError(f"not an expression: {e!r}")


class Lower:
    """Rewrite an expression so that OpenCL C computes what C does (see module docstring)."""

    def __init__(self, scop: Scop, fp64: bool):
        self.scop, self.fp64 = scop, fp64

    def real(self, t: str) -> str:
        return "float" if t == "double" and not self.fp64 else t

    def type(self, e: Expr) -> str:
        return self.real(expr_type(e, self.scop))

    def cast(self, e: Expr, t: str) -> Expr:
        """``e`` lowered, converted to ``t`` where C's type is another (an argument of a
        call: ``fmaxf(m, fabsf(d))`` needs its inner ``fabsf`` lowered too)."""
        return self(e) if self.type(e) == t else Cast(t, self(e))

    def __call__(self, e: Expr) -> Expr:
        if isinstance(e, Num):
            if e.ctype == "double" and not self.fp64:
                if e.value in _FLOAT_CONSTANTS:
                    return Num(_FLOAT_CONSTANTS[e.value], "float")
                return Num(e.value.rstrip("lL") + "f", "float")
            return Num(e.value.rstrip("lL"), e.ctype) if e.ctype == "double" else e
        if isinstance(e, (Var, ArrayRef)):
            return e
        if isinstance(e, Cast):
            return Cast(self.real(cl_ctype(e.ctype)), self(e.operand))
        if isinstance(e, UnOp):
            return UnOp(e.op, self(e.operand))
        if isinstance(e, BinOp):
            return BinOp(e.op, self(e.left), self(e.right))
        if isinstance(e, Ternary):
            return Ternary(self(e.cond), self(e.then), self(e.else_))
        if isinstance(e, Call):
            return self.call(e)
        raise TypeError(f"not an expression: {e!r}")

    def call(self, e: Call) -> Expr:
        h = self.scop.helper(e.func)
        if h is not None:                    # C converts each argument to its parameter type
            return Call(e.func, tuple(self.cast(a, self.real(cl_ctype(t)))
                                      for a, t in zip(e.args, h.params)))
        if e.func in _MINMAX:
            t = self.type(e)
            return Call(_MINMAX[e.func], tuple(self.cast(a, t) for a in e.args))
        if e.func == "abs":                  # OpenCL abs(int) is uint; C's is int
            return Cast("int", Call("abs", tuple(self.cast(a, "int") for a in e.args)))
        t = self.type(e)
        name = e.func[:-1] if e.func.endswith("f") and e.func[:-1] in CL_MATH else e.func
        return Call(name, tuple(self.cast(a, t) for a in e.args))


def any_double(scop: Scop, stmts: list[Statement], arrays: list) -> bool:
    if any(a.ctype == "double" for a in arrays) or \
            any(t == "double" for _, t in scop.float_params):
        return True

    def walk(e: Expr) -> bool:
        if isinstance(e, (Num, Var)):
            return cl_ctype(e.ctype) == "double"
        if isinstance(e, Cast):
            return cl_ctype(e.ctype) == "double" or walk(e.operand)
        if isinstance(e, Call):
            return expr_type(e, scop) == "double" or any(walk(a) for a in e.args)
        if isinstance(e, UnOp):
            return walk(e.operand)
        if isinstance(e, BinOp):
            return walk(e.left) or walk(e.right)
        if isinstance(e, Ternary):
            return walk(e.cond) or walk(e.then) or walk(e.else_)
        return False

    return any(walk(s.rhs) or any(walk(t.expr) or cl_ctype(t.ctype) == "double" for t in s.temps)
               for s in stmts)


# }}}

# {{{ access macros (Figure 9)


def access_macros(a: str, ndim: int, slots: int, split_all: bool) -> list[str]:
    xs = [f"x{d}" for d in range(ndim)]
    xl = ", ".join(xs)
    off = " + ".join([f"(BBMM_IDX)({x}) * {a}_st##s##_{d}" for d, x in enumerate(xs[:-1])]
                     + [f"(BBMM_IDX)({xs[-1]})"])
    inside = " && ".join(f"({x}) >= {a}_lo##s##_{d} && ({x}) <= {a}_hi##s##_{d}"
                         for d, x in enumerate(xs))

    def chain(test, last: int) -> str:
        out = f"&{a}_AT({last}, {xl})"
        for s in reversed(range(last)):
            out = f"{test(s)} ? &{a}_AT({s}, {xl}) : {out}"
        return f"({out})"

    sel = chain(lambda s: f"(k) == {s}", slots - 1)
    find = chain(lambda s: f"{a}_IN({s}, {xl})", slots - 1)
    ref = f"(*{a}_FIND({xl}))" if split_all else \
        f"(*((k) >= 0 ? {a}_SEL(k, {xl}) : {a}_FIND({xl})))"
    return [
        f"/* {a}: element ({xl}) of slot s (offsets in BBMM_IDX: long, or int when the "
        f"host knows they fit) */",
        f"#define {a}_AT(s, {xl}) {a}_buf##s[{a}_base##s + {off}]",
        f"/* {a}: is ({xl}) inside slot s's box? */",
        f"#define {a}_IN(s, {xl}) ({inside})",
        f"/* {a}: unsplit access, slot k chosen by its uniform sel value (no bounds test) */",
        f"#define {a}_SEL(k, {xl}) {sel}",
        f"/* {a}: split access, the first slot whose box holds the index */",
        f"#define {a}_FIND({xl}) {find}",
        "/* " + a + (": every access split (split_all)" if split_all else
                     ": an lvalue; k is the access's sel (-1: split)") + " */",
        f"#define {a}_REF(k, {xl}) {ref}",
    ]

# }}}

# {{{ emitting lines


class Emitter:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.level = 0

    def __call__(self, line: str = "") -> None:
        self.lines.append("  " * self.level + line if line else "")

    def directive(self, text: str) -> None:
        """Preprocessor lines, unindented whatever the level."""
        self.lines.extend(text.split("\n"))


UNROLL8 = "#if BBMM_UNROLL\n#pragma unroll 8\n#endif"
"""Before a loop a work-item walks alone: its loads are in flight together."""


def comment(text: str) -> str:
    """A C comment of one printable line that cannot end early
    (:func:`bbmm.codegen.literals.c_comment`): it may hold a path or the C source's text."""
    from bbmm.codegen.literals import c_comment
    return c_comment(text)


# }}}

# vim: foldmethod=marker

"""C expressions in the model: affine subscripts, loop bounds and conditions, and the
right-hand sides and array accesses of statements.

The front end's walk (:class:`bbmm.codegen.builder.Builder`) turns every C expression it meets
through :class:`Expressions`, mixed into it: :meth:`~Expressions.affine` for what must be
affine in the iterators and integer parameters (subscripts, array sizes, bounds,
conditions; C's ``/``, ``%``, ``<<``, ``>>`` by constants as floor divisions of dividends
proved non-negative, :meth:`~Expressions.check_dividends`), :meth:`~Expressions.expr` for
right-hand sides, :meth:`~Expressions.access` for array references, each an
:class:`bbmm.codegen.scop.Access` of ``{ S[i, j] -> A[a, b] }``. Also the walk's context
(:class:`Ctx`) and the small helpers on pycparser nodes the walk shares.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import islpy as isl
from pycparser import c_ast

from bbmm.diagnostic import format_coord
from bbmm.codegen.csource import ELEM_CTYPES, INT_WORDS, elem_ctype, int_literal
from bbmm.codegen.helpers import helper
from bbmm.codegen.scop import (
    Access,
    AffAnd,
    AffExpr,
    Affine,
    AffMax,
    AffMin,
    AffNot,
    AffOr,
    AffSelect,
    ArrayRef,
    BinOp,
    Call,
    Cast,
    Cmp,
    Expr,
    Loop,
    Num,
    Ternary,
    UnOp,
    Var,
    bound_neg,
    bound_shift,
)

if TYPE_CHECKING:
    from bbmm.codegen.temporaries import Temporary

Cur = tuple  # (statement name, domain, list of its accesses) while a statement is built;
# (None, None, list of Ref) while a temporary's assignment is read

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
ELEM_TYPES = ELEM_CTYPES
"""The element types of arrays (:data:`bbmm.codegen.csource.ELEM_CTYPES`)."""
_RHS_BINOPS = {"+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||", "&", "|",
               "^", "<<", ">>"}
_CMP_OPS = ("<", "<=", ">", ">=", "==", "!=")


class NotAffine(Exception):
    """An expression that is not (quasi-)affine; ``undefined``: one C leaves undefined
    (``% 0``, a shift by 31 or more), which no run-time evaluation can mend either."""

    def __init__(self, detail: str = "", undefined: bool = False):
        super().__init__(detail)
        self.detail, self.undefined = detail, undefined


@dataclass(frozen=True)
class Ctx:
    """Where the walk is: enclosing loops, domain constraints (isl text), guards, 2d+1
    prefix, and the run-time conditions of enclosing ``if``s that are not affine."""

    loops: tuple[Loop, ...] = ()
    cons: tuple[str, ...] = ()
    guards: tuple[str, ...] = ()
    beta: tuple[int, ...] = ()
    iters: tuple[str, ...] = ()
    when: tuple[c_ast.Node, ...] = ()
    """``if5``, ``!if5``: the temporaries holding such conditions, outermost first."""


@dataclass(frozen=True)
class Ref:
    """An array reference of a temporary's assignment, made an access of each statement
    that reads the value."""

    array: str
    index: tuple[Affine, ...]
    text: str
    coord: object
    temp: Temporary | None = None
    """An expanded temporary read: its array and subscripts depend on the reading
    statement (its web), so they are found there."""


class Expressions:
    """C expressions to the model's: mixed into :class:`bbmm.codegen.builder.Builder`, whose
    state (parameters, arrays, iterators in scope, temporaries) they read."""

    # {{{ affine expressions, bounds and conditions

    def affine(self, node: c_ast.Node, iters: tuple[str, ...]) -> Affine:
        if isinstance(node, c_ast.Constant):
            if node.type not in ("int", "long int", "unsigned int", "long long int"):
                raise NotAffine(f"'{node.value}' is not an integer")
            return Affine((), int_literal(node.value))
        if isinstance(node, c_ast.ID):
            n = node.name
            it = self.iterator(n, iters)
            if it is not None:
                return it
            if n in self.int_params:
                return Affine.var(n)
            raise NotAffine(self.unknown_name(n, iters))
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
                raise NotAffine("product of two variables")
            return a.scale(b.const)
        if isinstance(node, c_ast.BinaryOp) and node.op in ("/", "%", "<<", ">>"):
            a, b = self.affine(node.left, iters), self.affine(node.right, iters)
            if not b.is_const():
                raise NotAffine(f"'{node.op}' by a variable")
            d = b.const
            if node.op in ("<<", ">>"):          # by 0 <= d < 31: times or over 2**d
                if not 0 <= d < 31:
                    raise NotAffine(f"shift by {d}", undefined=True)
                if node.op == "<<":
                    return a.scale(2 ** d)
                d = 2 ** d
            if d <= 0:
                raise NotAffine(f"'{node.op}' by {d} (only by a positive constant)",
                                undefined=d == 0)
            if a.is_const():                     # C's rounding toward zero (gcc's >> floors)
                q = a.const // d if a.const >= 0 or node.op == ">>" else -(-a.const // d)
                return Affine((), a.const - d * q if node.op == "%" else q)
            # C rounds toward zero and isl toward minus infinity: the same for a
            # dividend that is never negative, which check_dividends() proves
            self.dividends.append((a, node))
            q = a.floordiv(d)
            return a - q.scale(d) if node.op == "%" else q
        if isinstance(node, c_ast.Cast) and set(getattr(node.to_type.type.type, "names", ["?"])) \
                <= INT_WORDS:
            return self.affine(node.expr, iters)
        if isinstance(node, c_ast.ArrayRef):
            raise NotAffine("indirect access through an array")
        if isinstance(node, c_ast.FuncCall) and isinstance(node.name, c_ast.ID) \
                and node.name.name in ("floord", "ceild") and node.args is not None \
                and len(node.args.exprs) == 2:
            # Pluto's and CLooG's floor and ceiling divisions (true floor and ceiling for
            # every sign, as isl's): quasi-affine by a positive constant
            a, b = (self.affine(x, iters) for x in node.args.exprs)
            if not b.is_const() or b.const <= 0:
                raise NotAffine(f"'{node.name.name}' by {'a variable' if not b.is_const() else b.const} "
                                f"(only by a positive constant)")
            if node.name.name == "ceild":
                a = a + Affine((), b.const - 1)
            return a.floordiv(b.const)
        if isinstance(node, c_ast.FuncCall):
            raise NotAffine("function call")
        raise NotAffine(f"operator '{getattr(node, 'op', type(node).__name__)}'")

    def check_dividends(self, ctx: Ctx | None) -> None:
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
        """An iterator's value (:meth:`bbmm.codegen.builder.Builder.iterator`) as a
        right-hand-side expression: ``-i_neg`` as before; ``2*i_s + 1``; a floor division
        is C's ``/``, its dividend being non-negative (checked where it was written)."""
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
        where = format_coord(self.coord(self.outer_locals[n]))
        return (f"local variable '{n}' (declared at {where}, before '#pragma scop') is not "
                f"modelled: bbmm takes scalars of type float, double or an integer type, "
                f"and local arrays without an initialiser")

    def bound(self, node: c_ast.Node, ctx: Ctx, which: str) -> AffExpr:
        try:
            out = self.bound_expr(node, ctx)
        except NotAffine as e:
            raise self.err(f"{which} loop bound is not affine: '{self.text(node)}'" + why(e),
                           node) from None
        self.check_dividends(ctx)
        return out

    def bound_expr(self, node: c_ast.Node, ctx: Ctx) -> AffExpr:
        if isinstance(node, c_ast.FuncCall) and isinstance(node.name, c_ast.ID) \
                and node.name.name.lower() in ("min", "max") and node.args is not None:
            args = tuple(self.bound_expr(a, ctx) for a in node.args.exprs)
            return AffMin(args) if node.name.name.lower() == "min" else AffMax(args)
        if isinstance(node, c_ast.TernaryOp):
            m = node.cond
            if isinstance(m, c_ast.BinaryOp) and m.op in ("<", "<=", ">", ">="):
                # max and min macros ('(x) > (y) ? (x) : (y)'), nested ones too (Pluto's
                # 'max(max(a, b), c)'): their operands bounds, whatever they are
                sides = (self.text(m.left), self.text(m.right))
                arms = (self.text(node.iftrue), self.text(node.iffalse))
                if sides in (arms, arms[::-1]):
                    a, b = (self.bound_expr(x, ctx) for x in (node.iftrue, node.iffalse))
                    bigger = (m.op in (">", ">=")) == (sides == arms)
                    return AffMax((a, b)) if bigger else AffMin((a, b))
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
            raise NotAffine("sum of two piecewise bounds (min, max or ?:)")
        return self.affine(node, ctx.iters)

    def cond(self, node: c_ast.Node, ctx: Ctx):
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

    def expr(self, node: c_ast.Node, ctx: Ctx, cur: Cur) -> Expr:
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
            ctype = elem_ctype(t.type.names) or " ".join(t.type.names)
            if ctype == "_Bool":                 # C's (_Bool) x is 0 or 1
                return BinOp("!=", self.expr(node.expr, ctx, cur), Num("0", "int"))
            return Cast(ctype, self.expr(node.expr, ctx, cur))
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
        raise self.err(unsupported(node, self.text), node)

    def access(self, node: c_ast.ArrayRef | c_ast.ID, ctx: Ctx, cur: Cur, kind: str
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
                   node: c_ast.Node, ctx: Ctx) -> tuple[Affine, ...]:
        """The affine subscripts of the reference ``text`` to an ``ndim``-dimensional
        array, each dividend checked non-negative."""
        if len(subs) != ndim:
            raise self.err(f"array '{array}' has {ndim} dimension(s) but '{text}' has "
                           f"{len(subs)} subscript(s)", node)
        index = []
        for s in subs:
            try:
                index.append(self.affine(s, ctx.iters))
            except NotAffine as e:
                raise self.err(f"non-affine subscript '{self.text(s)}' in '{text}'" + why(e),
                               s) from None
            self.check_dividends(ctx)
        return tuple(index)

    def private_access(self, c_name: str, subs: list[c_ast.Node], text: str,
                       node: c_ast.Node, ctx: Ctx, cur: Cur, kind: str) -> ArrayRef:
        """``w[k]`` of a local array declared inside loops: ``w[i - lo_i][k]``, the copy of
        this iteration of its loops (:meth:`bbmm.codegen.temporaries.Temporaries.private_array`)."""
        name, loops, declared = self.private[c_name]
        declared_index = self.subscripts(c_name, declared.ndim, subs, text, node, ctx)
        copy = tuple(Affine.var(self.loop_dom[lid][0][-1])
                     - (Affine((), 0) if self.analysis else self.loop_range[lid][0])
                     for lid in loops)
        return self.new_access(name, copy + declared_index, text, self.coord(node), ctx, cur,
                               kind)

    def new_access(self, arr: str, index: tuple[Affine, ...], text: str, coord: object,
                   ctx: Ctx, cur: Cur, kind: str) -> ArrayRef:
        name, dom, accs = cur
        if name is None:                         # a temporary's assignment: kept for later
            accs.append(Ref(arr, index, text, coord))
            return ArrayRef(arr, index, -len(accs))
        aid = self.n_access
        self.n_access += 1
        rel = isl.Map(f"{self.params_text}{{ {name}[{', '.join(ctx.iters)}] -> "
                      f"{arr}[{', '.join(x.isl() for x in index)}] }}").intersect_domain(dom)
        accs.append(Access(aid, name, arr, kind, rel, index, text, coord))
        return ArrayRef(arr, index, aid)

    # }}}

# {{{ small helpers


def map_refs(e: Expr, f) -> Expr:
    """``e`` with every array reference ``r`` replaced by ``f(r)``."""
    if isinstance(e, ArrayRef):
        return f(e)
    if isinstance(e, BinOp):
        return BinOp(e.op, map_refs(e.left, f), map_refs(e.right, f))
    if isinstance(e, UnOp):
        return UnOp(e.op, map_refs(e.operand, f))
    if isinstance(e, Cast):
        return Cast(e.ctype, map_refs(e.operand, f))
    if isinstance(e, Call):
        return Call(e.func, tuple(map_refs(a, f) for a in e.args))
    if isinstance(e, Ternary):
        return Ternary(map_refs(e.cond, f), map_refs(e.then, f), map_refs(e.else_, f))
    return e


def conjuncts(node: c_ast.Node) -> list[c_ast.Node]:
    if isinstance(node, c_ast.BinaryOp) and node.op == "&&":
        return conjuncts(node.left) + conjuncts(node.right)
    return [node]


def is_id(node: c_ast.Node, name: str) -> bool:
    return isinstance(node, c_ast.ID) and node.name == name


def _is_zero(node: c_ast.Node) -> bool:
    return isinstance(node, c_ast.Constant) and node.type == "int" \
        and int_literal(node.value) == 0


def why(e: NotAffine) -> str:
    return f" ({e.detail})" if e.detail else ""


def _call_msg(fn: str) -> str:
    if fn in SIDE_EFFECT_FUNCS:
        return f"call to '{fn}' has side effects"
    return f"call to unknown function '{fn}' (only pure math functions are allowed)"


def unsupported(node: c_ast.Node, text) -> str:
    names = {c_ast.While: "while loop", c_ast.DoWhile: "do-while loop", c_ast.Goto: "'goto'",
             c_ast.Break: "'break'", c_ast.Continue: "'continue'", c_ast.Return: "'return'",
             c_ast.Switch: "switch statement", c_ast.Label: "label"}
    for cls, what in names.items():
        if isinstance(node, cls):
            if cls is c_ast.While:
                return (f"{what} not supported in the modelled region (bbmm takes one that "
                        "counts: its counter set just before it, stepped by a constant in "
                        "the body's last statement and assigned nowhere else, without "
                        "'continue')")
            return f"{what} not supported in the modelled region"
    if isinstance(node, c_ast.FuncCall):
        fn = node.name.name if isinstance(node.name, c_ast.ID) else text(node.name)
        return _call_msg(fn) if fn not in MATH_FUNCS else \
            f"call to '{fn}' as a statement has no effect"
    return f"unsupported statement '{text(node)}'"

# }}}

# vim: foldmethod=marker

"""The front end's walk of one C function: parameters, the modelled region, blocks,
loops and statements, each statement with its iteration domain
``{ S[i, j] : 0 <= i < n and ... }`` and its 2d+1 schedule ``{ S[i, j] -> [b0, i, b1, j, b2] }``.

:class:`Builder` holds the walk's state; expressions (:mod:`bbmm.codegen.cexpr`),
temporaries and local arrays (:mod:`bbmm.codegen.temporaries`) and ``if`` statements
(:mod:`bbmm.codegen.dataif`) are its mixins. One walk builds
one :class:`bbmm.codegen.scop.Scop` for one plan of expanded temporaries;
:func:`bbmm.codegen.frontend.parse_source` runs it as often as scalar expansion needs.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

import islpy as isl
from pycparser import c_ast, c_generator
from pycparser.c_parser import Coord

from bbmm.diagnostic import UnsupportedProgramError, format_coord
from bbmm.codegen.cexpr import (
    Ctx,
    Cur,
    Expressions,
    NotAffine,
    conjuncts,
    is_id,
    unsupported,
    why,
)
from bbmm.codegen.csource import (
    INT_WORDS,
    ColumnMap,
    block_items,
    elem_ctype,
    identifiers,
    params_of,
    scalar_type,
    walk,
)
from bbmm.codegen.dataif import _SCOPE_CLOSE, _SCOPE_OPEN, DataConditions, _Scope
from bbmm.codegen.delinearize import FlatColumnError
from bbmm.codegen.expand import Plan, affine_bound
from bbmm.codegen.scop import (
    AffExpr,
    Affine,
    AffMin,
    Array,
    Helper,
    Loop,
    LoopNode,
    Node,
    Num,
    Scop,
    Statement,
    bound_c,
    bound_floordiv,
    bound_neg,
    bound_shift,
    relate_isl,
)
from bbmm.codegen.temporaries import Temporaries, Temporary, Version

PARALLEL_PRAGMAS = ("omp parallel for", "omp for", "bbmm parallel")


def _array_decl(p: c_ast.Decl) -> tuple[list[c_ast.Node | None], c_ast.Node]:
    """The declared sizes of array parameter ``p`` (None where missing) and its element
    type node."""
    dims, t = [], p.type
    while isinstance(t, c_ast.ArrayDecl):
        dims.append(t.dim)
        t = t.type
    return dims, t


def collapse_count(pragma: c_ast.Pragma) -> int:
    """n of a ``collapse(n)`` clause (1 without one, or where n is no positive integer)."""
    m = re.search(r"\bcollapse\s*\(\s*(\d+)\s*\)", pragma.string or "")
    return max(1, int(m.group(1))) if m else 1


def _collapse_count(pragma: c_ast.Pragma, fe: Builder) -> int:
    """n of a ``collapse(n)`` clause (1 without one): the next n nested loops are parallel."""
    m = re.search(r"\bcollapse\s*\(\s*([^)]*)\)", pragma.string or "")
    if m is None:
        return 1
    if not m.group(1).strip().isdigit() or int(m.group(1)) < 1:
        raise fe.err(f"collapse({m.group(1)}) needs a positive integer", pragma)
    return int(m.group(1))


_ASSIGN_OPS = ("=", "+=", "-=", "*=", "/=")


class Builder(Temporaries, Expressions, DataConditions):
    """The walk of one C function into a :class:`bbmm.codegen.scop.Scop`."""

    def __init__(self, filename: str, cmap: ColumnMap,
                 plan: Plan | None = None, analysis: bool = False,
                 unpragma: frozenset[int] = frozenset(),
                 helper_defs: Mapping[str, c_ast.FuncDef] | None = None,
                 private_plan: Mapping[str, tuple[int, ...]] | None = None,
                 rows: Mapping[str, tuple[str, ...]] | None = None,
                 stops: frozenset[str] = frozenset()):
        """``plan``: the temporaries (by unique name) to model as local arrays
        (:func:`bbmm.codegen.expand.expand_scalars` finds them); ``analysis``: subscript them by
        their loops' iterators as they are (a model for the analyses, not for code);
        ``unpragma``: loop ids whose parallel pragma is not followed; ``helper_defs``: the
        file's other functions, which statements may call; ``private_plan``: per local
        array declared inside loops (by its array name) the loops it gets a copy per
        iteration of (default: all that enclose its declaration); ``rows``: flat arrays
        read as rows of the parameter given (:mod:`bbmm.codegen.delinearize`); ``stops``: the
        break flags of :func:`bbmm.codegen.structure.loop_jumps` (:attr:`Loop.stop_flag`)."""
        self.filename, self.cmap = filename, cmap
        self.rows = dict(rows or {})
        self.stops = stops
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
        self.locals: dict[str, tuple[Temporary, tuple[int, ...]]] = {}  # local arrays in use
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
        self.temps: dict[str, Temporary] = {}           # scalar temporaries in scope, by C name
        self.versions: list[Version] = []          # every assignment of a temporary
        self.temp_names: set[str] = set()
        self.uses: list[int] = []                    # versions read by the expression at hand
        self.down: dict[str, tuple[str, Affine]] = {}  # C iterator of a loop counting down
        # or with a step -> (its model iterator, the C iterator's value: -i_neg, 2*i_s + 1)
        self.dividends: list[tuple[Affine, c_ast.Node]] = []  # of '/' and '%' in the
        # affine expression at hand: checked non-negative by check_dividends()
        self.idents: set[str] = set()               # every identifier of the function
        self.param_coords: dict[str, Coord | None] = {}
        self.if_names: dict[int, str] = {}          # if node -> its run-time condition
        self.if_texts: dict[str, str] = {}          # that temporary -> 'if (A[i] > 0)'
        self.unsized: dict[str, c_ast.Decl] = {}    # arrays whose first size is inferred
        self.pre_scop: list[c_ast.Node] = []        # the function body before '#pragma scop'

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
        arrays = []
        for p in params_of(func):
            if isinstance(p, c_ast.EllipsisParam) or not getattr(p, "name", None):
                raise self.err("unnamed or variadic parameter not supported", p)
            self.args.append(p.name)
            if isinstance(p.type, c_ast.ArrayDecl):
                arrays.append(p)
            else:
                self.scalar_param(p)
        for p in arrays:
            self.arrays[p.name] = self.array_param(p, unsized=True)
        items = self.region(func, fname)
        self.idents_in_region = set().union(*(identifiers(x) for x in items))
        initialised = []
        for d in self.outer_locals.values():
            if scalar_type(d.type) is not None and d.init is not None \
                    and d.name in self.idents_in_region and d in self.pre_scop:
                # correlation's 'DATA_TYPE eps = SCALAR_VAL(0.1);' before the scop: the
                # declaration is an assignment, modelled at the start of the region
                self.check_unwritten_before(d)
                initialised.append(d)
            elif scalar_type(d.type) is not None:  # 'DATA_TYPE temp2;' before the scop
                self.local_decl(d, Ctx(), outside=True)
            elif isinstance(d.type, c_ast.ArrayDecl) and d.init is None \
                    and d.name in self.idents_in_region:  # durbin's 'DATA_TYPE z[N];'
                self.local_array(d, Ctx())
        tree = self.block(initialised + items, Ctx())
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
        if set(names) <= INT_WORDS:
            self.int_params[p.name] = " ".join(names)
        elif names in (["float"], ["double"]):
            self.float_params[p.name] = names[0]
        else:
            raise self.err(f"parameter '{p.name}' has unsupported type '{' '.join(names)}'", p)

    def array_param(self, p: c_ast.Decl, unsized: bool = False) -> Array:
        """The array ``p`` declares; with ``unsized``, the first size may be missing
        (``float A[][n]``, or a pointer :func:`bbmm.codegen.scalarize.pointer_arrays` made an
        array): :meth:`infer_sizes` finds it once the accesses are known."""
        dims, t = _array_decl(p)
        # 'float A[][n]': the first size missing; a table of row pointers (pointer_arrays:
        # 'T **A' as 'T A[][]'): every size missing
        table = unsized and dims == [None, None]
        if not table and (any(d is None for d in dims[1:])
                          or (dims and dims[0] is None and not unsized)):
            raise self.err(f"array parameter '{p.name}' needs an explicit size in every "
                           f"dimension but the first", p)
        if dims and dims[0] is None:            # placeholders until infer_sizes()
            self.unsized[p.name] = p
            dims = [c_ast.Constant("int", "1", p.coord) if d is None else d for d in dims]
        names = getattr(getattr(t, "type", None), "names", None)
        ctype = elem_ctype(names) if isinstance(t, c_ast.TypeDecl) else None
        if ctype is None:
            raise self.err(f"array '{p.name}' must have element type float, double, an "
                           f"integer type (char to long long, <stdint.h>'s) or _Bool", p)
        extents = []
        for d in dims:
            try:
                extents.append(self.affine(d, ()))
            except NotAffine as e:
                raise self.err(f"array size not affine in the integer parameters: "
                               f"'{self.text(d)}' in '{p.name}'" + why(e), d) from None
            self.check_dividends(None)
        sizes = tuple(isl.PwAff(f"{self.params_text}{{ [({e.isl()})] }}") for e in extents)
        return Array(p.name, ctype, tuple(self.text(d) for d in dims), tuple(extents),
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
            self.pre_scop = items[:start]
            return items[start + 1: end]
        if items and isinstance(items[-1], c_ast.Return) and items[-1].expr is None:
            items.pop()                  # a final 'return;' of a void function is a no-op
        return items

    def check_unwritten_before(self, d: c_ast.Decl) -> None:
        """The scalar ``d``, declared with an initialiser before ``#pragma scop``, must
        keep that value until the scop: refused where a statement before it may change
        it (an assignment, ``++``/``--``, its address taken)."""
        for item in self.pre_scop:
            for n in walk(item):
                target = None
                if isinstance(n, c_ast.Assignment):
                    target = n.lvalue
                elif isinstance(n, c_ast.UnaryOp) and n.op in ("p++", "++", "p--", "--", "&"):
                    target = n.expr
                if isinstance(target, c_ast.ID) and target.name == d.name:
                    what = "takes the address of" if n.op == "&" else "assigns"
                    raise self.err(
                        f"'{self.text(n)}' {what} local variable '{d.name}' (declared at "
                        f"{format_coord(self.coord(d))}) before '#pragma scop': bbmm models "
                        f"the value of its declaration only; assign it in its declaration "
                        f"or inside the modelled region", n)

    # }}}

    # {{{ statements and loops

    def flatten(self, items: list[c_ast.Node], ctx: Ctx):
        """Yield (item, ctx) with compound blocks inlined and ``if`` branches guarded."""
        for it in items:
            if isinstance(it, c_ast.Compound):
                yield _SCOPE_OPEN, ctx
                yield from self.flatten(list(it.block_items or []), ctx)
                yield _SCOPE_CLOSE, ctx
            elif isinstance(it, c_ast.If):
                yield from self.if_branches(it, ctx)
            elif isinstance(it, c_ast.Assignment) and it.op == "=" \
                    and isinstance(it.rvalue, c_ast.Assignment) and it.rvalue.op == "=" \
                    and isinstance(it.rvalue.lvalue, c_ast.ID):
                # 'a1 = a5 = k;' (deriche): 'a5 = k;' then 'a1 = a5;'
                yield from self.flatten([it.rvalue], ctx)
                yield c_ast.Assignment("=", it.lvalue, it.rvalue.lvalue, it.coord), ctx
            else:
                yield it, ctx

    def block(self, items: list[c_ast.Node], ctx: Ctx, collapse: int = 0,
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
            if ictx.when:                     # under an if evaluated at run time
                it = self.guarded(it, ictx)
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


    def stop_flag(self, node: c_ast.For) -> str | None:
        """The break flag whose test holds the loop's whole body (``{ if (!break_t) {...}
        }``, :func:`bbmm.codegen.structure.loop_jumps`), or None."""
        items = block_items(node.stmt)
        if len(items) == 1 and isinstance(items[0], c_ast.If) and items[0].iffalse is None:
            c = items[0].cond
            if isinstance(c, c_ast.UnaryOp) and c.op == "!" and isinstance(c.expr, c_ast.ID) \
                    and c.expr.name in self.stops:
                return c.expr.name
        return None

    def loop(self, node: c_ast.For, ctx: Ctx, pragma: bool, collapse: int = 0,
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
                  len(ctx.loops), lower, upper, f"for ({'; '.join(head)})",
                  self.stop_flag(node))
        self.n_loops += 1
        self.seen_iters.add(v)
        self.seen_iters.add(c_name)
        cons = (relate_isl(v, ">=", lower), relate_isl(v, "<=", upper))
        body = replace(ctx, loops=ctx.loops + (lp,), cons=ctx.cons + cons, iters=ctx.iters + (v,))
        self.loop_dom[lp.id] = (body.iters, body.cons)
        saved = dict(self.temps), dict(self.private)   # the body is a scope of its own
        saved_down = dict(self.down)
        if value is not None:
            self.down[c_name] = (v, value)
        children = self.block(block_items(node.stmt), body, collapse, pragma_node)
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

    def loop_header(self, node: c_ast.For, ctx: Ctx) -> tuple[str, AffExpr, AffExpr, int]:
        """``(C iterator, lower, upper, step)``; for a loop counting down (a negative step),
        the bounds are those of the negated iterator."""
        init = node.init
        if isinstance(init, c_ast.DeclList) and len(init.decls) == 1 \
                and set(getattr(init.decls[0].type.type, "names", ["?"])) <= INT_WORDS \
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
        for c in conjuncts(node.cond):
            if isinstance(c, c_ast.BinaryOp) and c.op in below and is_id(c.left, v):
                e, strict = c.right, c.op in ("<", ">")
            elif isinstance(c, c_ast.BinaryOp) and c.op in above and is_id(c.right, v):
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
                and is_id(nx.expr, v):
            return 1 if "++" in nx.op else -1
        by, sign = None, 1
        if isinstance(nx, c_ast.Assignment) and is_id(nx.lvalue, v):
            r = nx.rvalue
            if nx.op in ("+=", "-="):
                by, sign = r, (1 if nx.op == "+=" else -1)
            elif nx.op == "=" and isinstance(r, c_ast.BinaryOp) and r.op in ("+", "-") \
                    and is_id(r.left, v):
                by, sign = r.right, (1 if r.op == "+" else -1)
            elif nx.op == "=" and isinstance(r, c_ast.BinaryOp) and r.op == "+" \
                    and is_id(r.right, v):
                by = r.left
        if by is None:
            raise self.err(f"loop increment must be '{v}++', '{v}--', '{v} += step', "
                           f"'{v} -= step' or '{v} = {v} + step'", nx if nx is not None else node)
        try:
            k = self.affine(by, ())
        except NotAffine:
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

    def statement(self, node: c_ast.Node, ctx: Ctx) -> str:
        parts = self.assignment(node)
        if parts is None or (parts[2] is None and not isinstance(parts[1], c_ast.ArrayRef)
                             and self.expanded(parts[1]) is None):
            raise self.err(unsupported(node, self.text), node)
        op, lhs_node, rhs_node = parts
        if self.expanded(lhs_node) is None:
            self.check_lvalue(lhs_node, ctx)
        name = f"S{len(self.stmts)}"
        tup = f"{name}[{', '.join(ctx.iters)}]"
        dom = isl.Set(f"{self.params_text}{{ {tup} : {' and '.join(ctx.cons) or 'true'} }}")
        cur: Cur = (name, dom, [])
        self.uses = []
        if op != "=":
            self.access(lhs_node, ctx, cur, "read")
        rhs = Num("1", "int") if rhs_node is None else self.expr(rhs_node, ctx, cur)
        temps = self.replay(self.uses, ctx, cur)
        lhs = self.access(lhs_node, ctx, cur, "write")
        t = self.expanded(lhs_node)              # values read from it know it by this name
        self.temp_writes(t.unique if t is not None else lhs.array, ctx)
        self.stmts[name] = Statement(name, ctx.iters, tuple(lp.id for lp in ctx.loops), dom,
                                     None, tuple(cur[2]), lhs, rhs, op, self.coord(node),
                                     self.text(node) + ";", ctx.guards, temps)
        self.betas[name] = ctx.beta
        return name                    # a leaf of the loop tree until finish()

    def check_lvalue(self, lv: c_ast.Node, ctx: Ctx) -> None:
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

    def infer_sizes(self) -> None:
        """The first size of each array declared without one (``float *x``, ``float
        A[][n]``): its largest first subscript over every access, plus one, when that is
        one affine expression of the parameters (``{ x[a] : 0 <= a < n }``: ``n``); the
        size C leaves to the caller, so that a subscript below 0 is still out of bounds."""
        for a, decl in self.unsized.items():
            data = None
            for st in self.stmts.values():
                for acc in st.accesses:
                    if acc.array == a:
                        r = acc.relation.range()
                        data = r if data is None else data.union(r)
            arr = self.arrays[a]
            if data is None:                   # never accessed: one element will do
                continue
            # the first size, or every size of a table of row pointers (T **A)
            dims = [d for d, t in enumerate(_array_decl(decl)[0]) if t is None] or [0]
            for d in dims:
                hi = affine_bound(data.dim_max(d), lower=False)
                if hi is None:
                    which = "first subscript" if d == 0 else f"subscript {d + 1}"
                    raise self.err(f"the size of '{a}' (declared without one) would be its "
                                   f"largest {which} plus one, which is not one affine "
                                   f"expression of the parameters here; declare it with "
                                   f"its size, such as '{arr.ctype} {a}[n]'", decl)
                size = hi + 1
                arr = replace(arr, dims=arr.dims[:d] + (str(size),) + arr.dims[d + 1:],
                              extents=arr.extents[:d] + (size,) + arr.extents[d + 1:],
                              sizes=arr.sizes[:d]
                              + (isl.PwAff(f"{self.params_text}{{ [({size.isl()})] }}"),)
                              + arr.sizes[d + 1:])
            self.arrays[a] = arr

    def check_rows(self) -> None:
        """Every access of a flat array read as rows of ``n`` (``A[i*n + j]`` as
        ``A[i][j]``; ``A[(i*n + j)*m + k]`` as ``A[i][j][k]``) must have each subscript but
        the first within ``0 ..`` its stride ``- 1`` wherever it runs: then each element has
        one name, and the model's dependences are the program's."""
        for a, strides in self.rows.items():
            xs = [f"x{d}" for d in range(len(strides) + 1)]
            inside = isl.Set(f"{self.params_text}{{ {a}[{', '.join(xs)}] : "
                             + " and ".join(f"0 <= {x} < {n}" for x, n in zip(xs[1:], strides))
                             + " }")
            for st in self.stmts.values():
                for acc in st.accesses:
                    if acc.array == a and not acc.relation.range().is_subset(inside):
                        if len(strides) == 1:
                            n = strides[0]
                            how = (f"as rows of '{n}' elements ({a}[r*{n} + c] as {a}[r][c])")
                            leave = f"the column can leave 0 .. {n} - 1"
                        else:
                            how = (f"as blocks of {' x '.join(map(repr, strides))} elements "
                                   f"({a}[(r*{strides[0]} + s)*{strides[1]} + c] as "
                                   f"{a}[r][s][c])")
                            leave = ("a subscript can leave 0 .. its stride - 1 ("
                                     + ", ".join(f"0 .. {n} - 1" for n in strides) + ")")
                        shape = "".join(f"[{n}]" for n in strides)
                        raise FlatColumnError(
                            f"bbmm reads the flat array '{a}' {how}; here, as '{acc.text}', "
                            f"{leave} (an element would then have two names); declare "
                            f"'{a}' as a C99 array ('{self.arrays[a].ctype} {a}[..]{shape}') "
                            f"and subscript it by {'row and column' if len(strides) == 1 else 'each index'}",
                            acc.coord)

    def finish(self, fname: str, tree: tuple[Node, ...]) -> Scop:
        self.check_rows()
        self.infer_sizes()
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
                    inferred=tuple(sorted(self.unsized)),
                    helpers=tuple(self.helpers.values()))

    # }}}

# vim: foldmethod=marker

"""``if`` statements in the front end's walk: affine conditions guard the domains of the
branches, conditions on the data run at run time.

An ``if`` whose condition is an affine comparison of iterators and parameters restricts
the iteration domains of its branches (``{ S[i] : i > 0 }``). Anything else (``A[i][j] <
lo``, a temporary, ``i * j``) is evaluated when the program runs: the condition once,
into an ``int`` temporary named after its line (``if12``), and every assignment of a
branch becomes ``X = c ? e : X``, which writes back the value C leaves where ``c`` is
false, so that the model and every box stay exact; if/else pairs that assign the same
things in the same order are one select each (``fl = c ? a : d;``, nothing read back).
:class:`DataConditions` is a mixin of :class:`bbmm.codegen.builder.Builder`.
"""
from __future__ import annotations

from dataclasses import replace

from pycparser import c_ast

from bbmm.diagnostic import UnsupportedProgramError
from bbmm.codegen.cexpr import Ctx, NotAffine, conjuncts
from bbmm.codegen.csource import block_items
from bbmm.codegen.scop import AffAnd, cond_c, cond_isl

__all__ = ["DataConditions"]


def _restrict(ctx: Ctx, c, holds: bool = True) -> Ctx:
    """``ctx`` under the affine condition ``c`` (or its negation): a domain constraint and
    a guard."""
    if holds:
        return replace(ctx, cons=ctx.cons + (cond_isl(c),), guards=ctx.guards + (cond_c(c),))
    return replace(ctx, cons=ctx.cons + (f"not ({cond_isl(c)})",),
                   guards=ctx.guards + (f"!({cond_c(c)})",))


def _conjunction(tests) -> c_ast.Node:
    """``t0 && t1 && ...`` (C's order: each evaluated only where the ones before hold)."""
    out = tests[0]
    for t in tests[1:]:
        out = c_ast.BinaryOp("&&", out, t, t.coord)
    return out


def _select(lv: c_ast.Node, test: c_ast.Node, a: c_ast.Node, b: c_ast.Node,
            coord) -> c_ast.Assignment:
    """``lv = test ? a : b;``, at ``coord`` in the source."""
    return c_ast.Assignment("=", lv, c_ast.TernaryOp(test, a, b, coord), coord)


class _Scope:
    """Marks where a C block opens or closes in :meth:`Builder.flatten`'s output."""


_SCOPE_OPEN, _SCOPE_CLOSE = _Scope(), _Scope()


class DataConditions:
    """The walk's handling of ``if`` (a mixin of :class:`bbmm.codegen.builder.Builder`)."""

    def if_branches(self, it: c_ast.If, ctx: Ctx):
        """:meth:`flatten` of an ``if``: an affine condition guards the branches' domains;
        what is not affine (``A[i][j] < lo``, a temporary, ``i * j``) is evaluated at run
        time, each assignment of the branches becoming ``X = c ? e : X``
        (:meth:`guarded`); C's ``&&`` and ``||`` still skip what they skip. Affine
        conjuncts of an ``if`` without ``else`` stay domain constraints
        (``i < n - 1 && A[i + 1] > 0``)."""
        parts = [it.cond] if it.iffalse is not None else conjuncts(it.cond)
        affine, data = [], []
        for c in parts:
            try:
                a = self.cond(c, ctx)
                self.check_dividends(ctx)
                affine.append(a)
            except NotAffine as e:
                if e.undefined:
                    raise self.err(f"undefined in C: {e.detail} in the if condition "
                                   f"'{self.text(it.cond)}'", c) from None
                self.dividends = []
                data.append(c)
            except UnsupportedProgramError:
                # a '/' or '%' of a value that may be negative, which C rounds toward
                # zero: C's own operators evaluate it exactly at run time
                self.dividends = []
                data.append(c)
        if not data:
            c = affine[0] if len(affine) == 1 else AffAnd(tuple(affine))
            yes, no = _restrict(ctx, c), _restrict(ctx, c, holds=False)
        else:
            for c in affine:
                ctx = _restrict(ctx, c)
            test = _conjunction(data)
            pairs = self.selects(it)
            if pairs is not None and len(pairs) == 1:   # X = c ? a : b;
                (a, b), = pairs
                yield _select(a.lvalue, test, a.rvalue, b.rvalue, a.coord), ctx
                return
            name = self.if_name(it)
            self.if_texts[name] = f"if ({self.text(it.cond)})"
            decl = c_ast.Decl(name, [], [], [], [], c_ast.TypeDecl(
                name, [], None, c_ast.IdentifierType(["int"])), test, None, it.cond.coord)
            yield decl, ctx                     # evaluated once, before either branch
            ref = c_ast.ID(name, it.cond.coord)
            if pairs is not None:               # X = ifN ? a : d; Y = ifN ? b : e;
                for a, b in pairs:
                    yield _select(a.lvalue, ref, a.rvalue, b.rvalue, a.coord), ctx
                return
            yes = replace(ctx, when=ctx.when + (ref,))
            no = replace(ctx, when=ctx.when + (c_ast.UnaryOp("!", ref, it.cond.coord),))
        yield _SCOPE_OPEN, ctx
        yield from self.flatten(block_items(it.iftrue), yes)
        yield _SCOPE_CLOSE, ctx
        if it.iffalse is not None:
            yield _SCOPE_OPEN, ctx
            yield from self.flatten(block_items(it.iffalse), no)
            yield _SCOPE_CLOSE, ctx

    def selects(self, it: c_ast.If) -> list[tuple[c_ast.Assignment, c_ast.Assignment]] | None:
        """The pairs of assignments of ``if (c) { X = a; Y = b; } else { X = d; Y = e; }``:
        each branch plain assignments (or an inner ``if``/``else`` of one such pair, as a
        ternary) to the same scalars or elements in the same order, so that ``X = c ? a :
        d; Y = c ? b : e;`` is the same program with nothing read back (a temporary
        assigned in both branches needs no value from before). None for any other
        ``if``."""
        if it.iffalse is None:
            return None
        yes, no = self.plain(block_items(it.iftrue)), self.plain(block_items(it.iffalse))
        if yes is None or no is None or len(yes) != len(no) or not yes \
                or any(self.text(a.lvalue) != self.text(b.lvalue) for a, b in zip(yes, no)):
            return None
        return list(zip(yes, no))

    def plain(self, items: list[c_ast.Node]) -> list[c_ast.Assignment] | None:
        """``items`` as plain assignments ``X = e`` for :meth:`selects`, else None."""
        out = []
        for x in items:
            if isinstance(x, c_ast.If):
                pairs = self.selects(x)
                if pairs is None or len(pairs) != 1:      # the test inlined: one use only
                    return None
                (a, b), = pairs
                x = _select(a.lvalue, x.cond, a.rvalue, b.rvalue, a.coord)
            if not (isinstance(x, c_ast.Assignment) and x.op == "="
                    and isinstance(x.lvalue, (c_ast.ID, c_ast.ArrayRef))
                    and not isinstance(x.rvalue, c_ast.Assignment)):
                return None
            out.append(x)
        return out

    def if_name(self, it: c_ast.If) -> str:
        """The temporary holding the run-time condition of ``it``: ``if<line>``, a name
        the function does not use; the same on every walk (:meth:`block` may flatten a
        block twice)."""
        key = id(it)
        if key not in self.if_names:
            base = f"if{it.coord.line}" if it.coord is not None else "if"
            name, k = base, 0
            while name in self.idents or name in self.if_names.values():
                k += 1
                name = f"{base}_{k}"
            self.if_names[key] = name
        return self.if_names[key]

    def guarded(self, node: c_ast.Node, ctx: Ctx) -> c_ast.Node:
        """An assignment under run-time conditions (``ctx.when``) as one that always runs:
        ``X = c ? e : X`` (``X = c ? X + e : X`` for ``X += e``), the value unchanged where
        C would skip it. A temporary declared inside some of the conditions needs only
        the others (nothing outside them sees it). Anything else is returned as is (a
        loop's statements are guarded one by one; the walk refuses what it does not
        take)."""
        parts = self.assignment(node)
        if parts is None:
            return node
        op, lv, rhs = parts
        conds = ctx.when
        t = self.temps.get(lv.name) if isinstance(lv, c_ast.ID) else None
        if t is not None:
            conds = conds[t.when:]
        if not conds:
            return node
        if op == "=":
            value = rhs
        else:
            value = c_ast.BinaryOp(op[0], lv, rhs if rhs is not None
                                   else c_ast.Constant("int", "1", node.coord), node.coord)
        return _select(lv, _conjunction(conds), value, lv, node.coord)

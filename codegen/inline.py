"""Helper functions that take arrays, or return nothing, inlined at their calls, before the
front end.

C code factors a kernel into functions: ``smooth_row(n, B[i], A[i]);`` applies a row
update, ``y[i] = dot(n, A[i], x);`` reduces a row, ``minmax(n, A[i], &lo, &hi);`` returns
through pointers. A pure helper of scalars (``float sqr(float x)``) becomes an OpenCL
function (:mod:`bbmm.codegen.helpers`); one that takes an array or a pointer, or returns
nothing, is inlined here instead, so that the model sees its loops and accesses as the
kernel's own: a call statement becomes a block of the helper's body in which

- an array or pointer parameter is its argument (``dst[j]`` with ``dst`` = ``B[i]`` is
  ``B[i][j]``; ``*p`` is ``p[0]``; an argument ``&X[i][k]`` shifts the last subscript,
  ``p[j]`` = ``X[i][k + j]``, and ``&s`` of a scalar is ``s`` itself),
- a scalar parameter the body never assigns is its argument's expression when that reads
  no array (C evaluates it once, before the body, and nothing the body does changes it),
  else a local initialised by the argument,
- the body's locals and loop variables get names of their own where the caller's names
  would clash (``j`` -> ``j_dot``),
- ``return e;`` as the body's last statement becomes the assignment of the call's result
  (``y[i] = dot(...)`` -> ``... y[i] = s;``; ``float d = dot(...)`` declares ``d`` first);
  ``if (c) return ...;`` at the body's top level puts the rest of the body in its
  ``else`` (:func:`bbmm.codegen.structure.early_exits`, the value in a local ``result``), and
  a ``return`` inside loops sets a flag ``returned`` that ends the loops around it and
  skips the rest (:func:`bbmm.codegen.structure.return_flags`),
- a call inside an expression is evaluated first, into a temporary, when the helper
  writes nothing but its locals.

Anything else (a call inside an expression of a helper that
writes arrays or under ``&&``, ``||``, ``?:``, recursion, an argument that is not an array,
a subscript of one, or ``&`` of one) is refused with its location.

.. autofunction:: inline_helpers
"""
from __future__ import annotations

import copy
from collections.abc import Callable

from pycparser import c_ast, c_generator

from bbmm.diagnostic import UnsupportedProgramError
from bbmm.codegen.csource import (
    const_int,
    identifiers,
    is_void,
    params_of,
    replace_children,
    walk,
)
from bbmm.codegen.structure import early_exits, returns_left

__all__ = ["inline_helpers"]

_GEN = c_generator.CGenerator()


def inlined(fd: c_ast.FuncDef) -> bool:
    """Whether calls of ``fd`` are inlined: it returns nothing or takes an array or a
    pointer (a helper of scalars returning a scalar stays an OpenCL function)."""
    return is_void(fd.decl.type.type) or any(
        isinstance(p.type, (c_ast.ArrayDecl, c_ast.PtrDecl)) for p in params_of(fd))


def _assigned(body: c_ast.Node) -> set[str]:
    """Names assigned, incremented or decremented anywhere in ``body``."""
    out: set[str] = set()

    class V(c_ast.NodeVisitor):
        def visit_Assignment(self, n: c_ast.Assignment) -> None:
            if isinstance(n.lvalue, c_ast.ID):
                out.add(n.lvalue.name)
            self.generic_visit(n)

        def visit_UnaryOp(self, n: c_ast.UnaryOp) -> None:
            if n.op in ("++", "--", "p++", "p--") and isinstance(n.expr, c_ast.ID):
                out.add(n.expr.name)
            self.generic_visit(n)
    V().visit(body)
    return out


def _reads_array(e: c_ast.Node) -> bool:
    return isinstance(e, (c_ast.ArrayRef, c_ast.FuncCall)) or (
        isinstance(e, c_ast.UnaryOp) and e.op == "*") or any(
        _reads_array(c) for _, c in e.children())


def _root(e: c_ast.Node) -> str | None:
    """The variable an array argument names (``B`` of ``B[i]``, ``s`` of ``&s``)."""
    while isinstance(e, (c_ast.ArrayRef, c_ast.UnaryOp)):
        e = e.name if isinstance(e, c_ast.ArrayRef) else e.expr
    return e.name if isinstance(e, c_ast.ID) else None


def _locals(body: c_ast.Node) -> list[str]:
    out: list[str] = []

    class V(c_ast.NodeVisitor):
        def visit_Decl(self, n: c_ast.Decl) -> None:
            if n.name and n.name not in out:
                out.append(n.name)
            self.generic_visit(n)
    V().visit(body)
    return out


class _Inliner:
    """One kernel's inlining: the file's helpers to inline, the names taken so far."""

    def __init__(self, defs: dict[str, c_ast.FuncDef], taken: set[str],
                 err: Callable[[str, c_ast.Node], UnsupportedProgramError]):
        self.defs, self.taken, self.err = defs, taken, err

    def fresh(self, name: str, fn: str) -> str:
        new, k = f"{name}_{fn}", 1
        while new in self.taken:
            k += 1
            new = f"{name}_{fn}{k}"
        self.taken.add(new)
        return new

    def block(self, call: c_ast.FuncCall, result: c_ast.Node | None, op: str,
              active: tuple[str, ...]) -> c_ast.Compound:
        """The statements of one call: the helper's body with its parameters bound,
        ``result op= <returned value>`` at the end when ``result`` is given (``active``:
        the helpers being inlined around it)."""
        fn = call.name.name
        if fn in active:
            raise self.err(f"helper '{fn}' calls itself (directly or not): bbmm inlines "
                           "helpers that take arrays and cannot inline recursion", call)
        fd = self.defs[fn]
        params = params_of(fd)
        args = call.args.exprs if call.args else []
        if len(args) != len(params):
            raise self.err(f"helper '{fn}' takes {len(params)} argument(s), called with "
                           f"{len(args)}", call)
        items = list(copy.deepcopy(fd.body).block_items or [])
        ret = None
        if any(isinstance(n, c_ast.Return) for it in items[:-1] for n in walk(it)):
            # 'if (c) return ...;' before the end: the rest of the body in its else
            value = fd.decl.type.type
            res = None
            if not is_void(value):
                res = "result"
                # set on every path; 0 first, since a branch on the data reads back the
                # value it leaves (X = c ? e : X)
                d = c_ast.Decl(res, [], [], [], [], copy.deepcopy(value),
                               c_ast.Constant("int", "0"), None)
                _rename_decl(d, res)
                ret = c_ast.ID(res)
                items = [d] + early_exits(items, c_ast.Return, self.returned(fn, res)) \
                    + [c_ast.Return(ret)]
            else:
                items = early_exits(items, c_ast.Return, lambda _: [])
        if items and isinstance(items[-1], c_ast.Return):
            ret = items.pop().expr
        # a return inside a loop: a flag that ends the loops around it and skips the rest
        # (the value, if any, in 'result' as above)
        items = returns_left(items, identifiers(fd),
                             self.returned(fn, "result") if ret is not None else lambda _: [])
        if result is not None and ret is None:
            raise self.err(f"helper '{fn}' returns no value at its end", call)
        assigned = _assigned(c_ast.Compound(items))
        bind: dict[str, tuple[str, c_ast.Node]] = {}   # parameter -> (kind, argument)
        copies: list[tuple[c_ast.Decl, c_ast.Node]] = []
        pointers = [(p, a) for p, a in zip(params, args)
                    if isinstance(p.type, (c_ast.ArrayDecl, c_ast.PtrDecl))]
        for p, a in pointers:
            bind[p.name] = self.array_arg(fn, p, a, assigned)
        # what the helper may write through its pointers: a value read from there is
        # copied before the body, as C passes it
        written = {_root(a) for _, a in pointers}
        for p, a in zip(params, args):
            if isinstance(p.type, (c_ast.ArrayDecl, c_ast.PtrDecl)):
                continue
            if p.name in assigned or _reads_array(a) or identifiers(a) & written:
                copies.append((p, a))                   # a local holding the argument
            else:
                bind[p.name] = ("value", a)
        # the helper's locals (and copied parameters) get names no caller name has
        names = {}
        for name in _locals(c_ast.Compound(items)) + [p.name for p, _ in copies]:
            names[name] = self.fresh(name, fn) if name in self.taken else name
            self.taken.add(names[name])
        tail = [c_ast.Return(ret)] if ret is not None else []
        body = _bind(c_ast.Compound(items + tail), bind, names)
        stmts = list(body.block_items or [])
        if result is not None:
            stmts[-1] = c_ast.Assignment(op, result, stmts[-1].expr, call.coord)
        elif tail:
            stmts.pop()                                 # the value is not used
        head = []
        for p, a in copies:
            d = copy.deepcopy(p)
            _rename_decl(d, names[p.name])
            d.init = copy.deepcopy(a)                   # the caller's expression, as it is
            head.append(d)
        out = c_ast.Compound(head + stmts, call.coord)
        return self.statement(out, active + (fn,))[0]   # the helpers it calls, in turn

    def returned(self, fn: str, res: str) -> Callable[[c_ast.Return], list[c_ast.Node]]:
        """What an early ``return e;`` of helper ``fn`` leaves: ``res = e;``."""
        def last(r: c_ast.Return) -> list[c_ast.Node]:
            if r.expr is None:
                raise self.err(f"helper '{fn}' returns no value here", r)
            return [c_ast.Assignment("=", c_ast.ID(res), r.expr, r.coord)]
        return last

    def array_arg(self, fn: str, p: c_ast.Decl, a: c_ast.Node, assigned: set[str]
                  ) -> tuple[str, c_ast.Node]:
        if p.name in assigned:
            raise self.err(f"helper '{fn}' assigns its pointer parameter '{p.name}': bbmm "
                           "inlines helpers that take arrays and needs each pointer fixed", p)
        if isinstance(a, c_ast.UnaryOp) and a.op == "&":
            if isinstance(a.expr, c_ast.ArrayRef):
                return "shift", a.expr                  # p[j] = X[..][k + j]
            if isinstance(a.expr, c_ast.ID):
                return "scalar", a.expr                 # *p, p[0] = s
        else:
            ref = a
            while isinstance(ref, c_ast.ArrayRef):
                ref = ref.name
            if isinstance(ref, c_ast.ID):
                return "prefix", a                      # p[j] = B[i][j]
        raise self.err(f"helper '{fn}': argument '{_GEN.visit(a)}' for '{p.name}' must be "
                       "an array, a row of one (B[i]) or the address of an element or a "
                       "variable (&B[i][0], &s)", a)

    def no_calls(self, x: c_ast.Node | None) -> None:
        """Refuse a call of an inlined helper inside an expression."""
        for n in walk(x) if x is not None else ():
            if isinstance(n, c_ast.FuncCall) and isinstance(n.name, c_ast.ID) \
                    and n.name.name in self.defs:
                f = n.name.name
                raise self.err(f"helper '{f}' takes arrays or returns nothing, so bbmm "
                               f"inlines it and needs its call as a statement of its own "
                               f"('{f}(...);', 'x = {f}(...);')", n)

    def writes_arrays(self, fn: str) -> bool:
        """Whether helper ``fn`` assigns anything but its own locals (through a pointer or
        array parameter, or by calling a helper that does)."""
        fd = self.defs[fn]
        local = set(_locals(fd.body)) | {p.name for p in params_of(fd)
                                        if not isinstance(p.type, (c_ast.ArrayDecl,
                                                                   c_ast.PtrDecl))}
        for n in walk(fd.body):
            target = n.lvalue if isinstance(n, c_ast.Assignment) else n.expr \
                if isinstance(n, c_ast.UnaryOp) and n.op in ("++", "--", "p++", "p--") \
                else None
            if target is not None and not (isinstance(target, c_ast.ID)
                                           and target.name in local):
                return True
            if isinstance(n, c_ast.FuncCall) and isinstance(n.name, c_ast.ID) \
                    and n.name.name in self.defs and n.name.name != fn \
                    and self.writes_arrays(n.name.name):
                return True
        return False

    def hoist(self, x: c_ast.Node, top: c_ast.Node | None) -> list[c_ast.Node]:
        """Declarations ``T t = f(...);`` for the calls of inlined helpers inside the
        expression ``x`` (but ``top``, the statement's own call), each replaced by its
        ``t``: only calls of helpers that write nothing but their locals, and none under
        ``&&``, ``||`` or ``?:`` (C might not evaluate it there), since the call then
        runs before the rest of the expression instead of amid it."""
        out: list[c_ast.Node] = []

        def visit(e: c_ast.Node, guarded: bool) -> list[c_ast.Node]:
            inner = guarded or isinstance(e, c_ast.TernaryOp) or (
                isinstance(e, c_ast.BinaryOp) and e.op in ("&&", "||"))
            replace_children(e, lambda c: visit(c, inner))
            if e is top or not (isinstance(e, c_ast.FuncCall) and isinstance(e.name, c_ast.ID)
                                and e.name.name in self.defs):
                return [e]
            fn = e.name.name
            if guarded or self.writes_arrays(fn):
                self.no_calls(e)                        # refused, with the reason
            t = copy.deepcopy(self.defs[fn].decl.type.type)
            name = self.fresh("v", fn)
            _rename_decl_type(t, name)
            out.append(c_ast.Decl(name, [], [], [], [], t, e, None, e.coord))
            return [c_ast.ID(name, e.coord)]
        if x is top:
            replace_children(x, lambda c: visit(c, False))
        else:
            x = visit(x, False)[0]
        return out

    def statement(self, x: c_ast.Node, active: tuple[str, ...] = ()) -> list[c_ast.Node]:
        """The statement ``x`` with every call statement of an inlined helper in it
        replaced by the helper's block."""
        call, result, op, decl = _call_of(x, self.defs)
        if isinstance(x, (c_ast.Assignment, c_ast.Decl, c_ast.FuncCall)):
            # calls inside the statement's expressions first, as temporaries before it
            pre = self.hoist(x, call)
            if pre:
                return [y for d in pre for y in self.statement(d, active)] + \
                    self.statement(x, active)
        if call is not None:
            for a in call.args.exprs if call.args else []:
                self.no_calls(a)
            self.no_calls(result)
            if decl is not None:                        # T d = f(...): declare d first
                d = copy.deepcopy(decl)
                d.init = None
                return [d, self.block(call, c_ast.ID(decl.name, decl.coord), "=", active)]
            return [self.block(call, result, op, active)]

        def one(nodes: list[c_ast.Node]) -> c_ast.Node:
            return nodes[0] if len(nodes) == 1 else c_ast.Compound(nodes, x.coord)
        if isinstance(x, c_ast.Compound):
            x.block_items = [y for s in x.block_items or [] for y in self.statement(s, active)]
        elif isinstance(x, c_ast.For):
            for part in (x.init, x.cond, x.next):
                self.no_calls(part)
            x.stmt = one(self.statement(x.stmt, active))
        elif isinstance(x, c_ast.If):
            self.no_calls(x.cond)
            x.iftrue = one(self.statement(x.iftrue, active))
            if x.iffalse is not None:
                x.iffalse = one(self.statement(x.iffalse, active))
        elif isinstance(x, (c_ast.While, c_ast.DoWhile)):
            self.no_calls(x.cond)
            x.stmt = one(self.statement(x.stmt, active))
        else:
            self.no_calls(x)
        return [x]


def _rename_decl_type(t: c_ast.Node, name: str) -> None:
    while not isinstance(t, c_ast.TypeDecl):
        t = t.type
    t.declname = name


def _rename_decl(d: c_ast.Decl, name: str) -> None:
    d.name = name
    _rename_decl_type(d.type, name)


def _call_of(x: c_ast.Node, defs: dict[str, c_ast.FuncDef]):
    """``(call, result, op, decl)`` when ``x`` is a statement calling an inlined helper:
    ``f(...);``, ``r op= f(...);`` or ``T d = f(...);``; Nones otherwise."""
    def named(e):
        return isinstance(e, c_ast.FuncCall) and isinstance(e.name, c_ast.ID) \
            and e.name.name in defs
    if named(x):
        return x, None, "=", None
    if isinstance(x, c_ast.Assignment) and named(x.rvalue):
        return x.rvalue, x.lvalue, x.op, None
    if isinstance(x, c_ast.Decl) and x.init is not None and named(x.init):
        return x.init, None, "=", x
    return None, None, None, None


def _bind(node: c_ast.Node, bind: dict[str, tuple[str, c_ast.Node]],
          names: dict[str, str]) -> c_ast.Node:
    """``node`` with parameters replaced by their arguments and locals renamed."""
    def sub(x: c_ast.Node) -> list[c_ast.Node]:
        if isinstance(x, c_ast.UnaryOp) and x.op == "*" and isinstance(x.expr, c_ast.ID) \
                and x.expr.name in bind:                # *p is p[0]
            x = c_ast.ArrayRef(x.expr, c_ast.Constant("int", "0"), x.coord)
        if isinstance(x, c_ast.ArrayRef) and isinstance(x.name, c_ast.ID) \
                and bind.get(x.name.name, ("",))[0] in ("shift", "scalar"):
            kind, arg = bind[x.name.name]
            replace_children(x, sub)                    # the subscript first
            if kind == "scalar":
                if const_int(x.subscript) != 0:
                    raise UnsupportedProgramError(
                        f"'{_GEN.visit(x)}' reads past the variable its pointer points to",
                        x.coord)
                return [copy.deepcopy(arg)]
            out = copy.deepcopy(arg)
            if const_int(x.subscript) != 0:             # p[0] is the element itself
                out.subscript = c_ast.BinaryOp("+", out.subscript, x.subscript, x.coord)
            return [out]
        if isinstance(x, c_ast.ID):
            if x.name in bind:
                kind, arg = bind[x.name]
                if kind in ("shift", "scalar"):         # the pointer itself, passed on
                    return [c_ast.UnaryOp("&", copy.deepcopy(arg), x.coord)]
                return [copy.deepcopy(arg)]
            if x.name in names:
                return [c_ast.ID(names[x.name], x.coord)]
            return [x]
        if isinstance(x, c_ast.Decl) and x.name in names:
            _rename_decl(x, names[x.name])
        replace_children(x, sub)
        return [x]
    replace_children(node, sub)
    return node


def inline_helpers(func: c_ast.FuncDef, defs: dict[str, c_ast.FuncDef],
                   err: Callable[[str, c_ast.Node], UnsupportedProgramError]
                   ) -> c_ast.FuncDef:
    """A copy of ``func`` whose calls of helpers taking arrays or returning nothing (of
    ``defs``, the file's other functions) are their bodies (see the module docstring);
    ``func`` itself when it calls none. ``err(message, node)`` makes the refusals."""
    mine = {n: f for n, f in defs.items() if inlined(f)}
    if not mine or not any(isinstance(n, c_ast.FuncCall) and isinstance(n.name, c_ast.ID)
                           and n.name.name in mine for n in walk(func.body)):
        return func
    func = copy.deepcopy(func)
    taken = identifiers(func) | set(defs)
    _Inliner(mine, taken, err).statement(func.body)
    return func

"""isl piecewise-affine values and parameter conditions as Python expression source.

The host driver evaluates tile bounds, grids and boxes with plain Python ints, so every
parametric quantity of :mod:`bbmm.codegen.tiling`, :mod:`bbmm.codegen.boxes` and
:mod:`bbmm.codegen.flow` is also emitted as Python source over the names of the C program
(``n``, ``k``) and the tile bounds (``lb``, ``ub``). isl's AST expression builder does
the hard part (pieces, existentials, floor division); this module only prints its tree:

=================================  ==================================================
isl AST operation                  Python
=================================  ==================================================
``add sub mul minus``              ``+ - * -x``
``fdiv_q`` (floord), ``pdiv_q``,   ``//`` (floor division: exact for ``fdiv_q``; the
``div`` (exact)                    others have a non-negative or divisible dividend)
``pdiv_r``, ``zdiv_r``             ``%`` (``zdiv_r`` only appears compared with 0, where
                                   the sign convention does not matter)
``min max``                        the ``min``/``max`` built-ins
``cond select``                    ``a if c else b``
``and and_then or or_else``        ``and`` / ``or``
``eq le lt ge gt``                 ``== <= < >= >``
=================================  ==================================================

Parentheses are only written where Python's precedence needs them.

.. autofunction:: ast_to_py
.. autofunction:: pwaff_to_py
.. autofunction:: set_to_py
.. autofunction:: compile_lambda
"""
from __future__ import annotations

import contextlib
import keyword
from collections.abc import Callable, Mapping, Sequence

import islpy as isl

__all__ = ["ast_to_py", "pwaff_to_py", "set_to_py", "compile_lambda", "params_universe"]

_O = isl.ast_expr_op_type
_T = isl.ast_expr_type

# precedence, higher binds tighter (Python's grammar)
_COND, _OR, _AND, _CMP, _ADD, _MUL, _NEG, _ATOM = range(8)
_BIN = {_O.add: ("+", _ADD), _O.sub: ("-", _ADD), _O.mul: ("*", _MUL),
        _O.div: ("//", _MUL), _O.fdiv_q: ("//", _MUL), _O.pdiv_q: ("//", _MUL),
        _O.pdiv_r: ("%", _MUL), _O.zdiv_r: ("%", _MUL),
        _O.eq: ("==", _CMP), _O.le: ("<=", _CMP), _O.lt: ("<", _CMP),
        _O.ge: (">=", _CMP), _O.gt: (">", _CMP),
        _O.and_: ("and", _AND), _O.and_then: ("and", _AND),
        _O.or_: ("or", _OR), _O.or_else: ("or", _OR)}
_RESERVED = frozenset(keyword.kwlist) | {"min", "max"}


def _name(name: str, names: Mapping[str, str] | None) -> str:
    out = names.get(name, name) if names else name
    if out in _RESERVED or not out.isidentifier():
        raise ValueError(f"'{out}' cannot be a Python variable in a generated expression; "
                         f"pass names={{'{name}': '...'}} to rename it")
    return out


def _wrap(text: str, prec: int, need: int) -> str:
    return f"({text})" if prec < need else text


def _print(e: isl.AstExpr, names: Mapping[str, str] | None) -> tuple[str, int, str]:
    """(text, precedence, top-level operator symbol or '')."""
    t = e.get_type()
    if t == _T.id:
        return _name(e.get_id().get_name(), names), _ATOM, ""
    if t == _T.int:
        v = e.get_val().to_python()
        return str(v), (_ATOM if v >= 0 else _NEG), ""
    op = e.get_op_type()
    args = [_print(e.get_op_arg(i), names) for i in range(e.get_op_n_arg())]
    if op in _BIN:
        sym, prec = _BIN[op]
        (a, pa, _), (b, pb, sb) = args
        left = _wrap(a, pa, prec + (prec == _CMP))           # comparisons do not chain
        # a + (b - c) == a + b - c and a * (b * c) == a * b * c; every other operator
        # needs its right operand of equal precedence parenthesised
        assoc = sym in ("+", "and", "or") or (sym == "*" and sb == "*")
        right_need = prec if assoc else prec + 1
        if prec in (_ADD, _MUL) and pb == _NEG:               # a - (-1), not a - -1
            right_need = _ATOM
        return f"{left} {sym} {_wrap(b, pb, right_need)}", prec, sym
    if op == _O.minus:
        a, pa, _ = args[0]
        return f"-{_wrap(a, pa, _ATOM)}", _NEG, "-"
    if op in (_O.min, _O.max):
        fn = "min" if op == _O.min else "max"
        return f"{fn}({', '.join(a for a, _, _ in args)})", _ATOM, ""
    if op in (_O.cond, _O.select):
        (c, pc, _), (a, pa, _), (b, _, _) = args
        return f"{_wrap(a, pa, _OR)} if {_wrap(c, pc, _OR)} else {b}", _COND, "if"
    raise NotImplementedError(f"isl AST operation {op} has no Python form")


def ast_to_py(e: isl.AstExpr, names: Mapping[str, str] | None = None) -> str:
    """Python source of an isl AST expression; ``names`` renames identifiers."""
    return _print(e, names)[0]


def params_universe(obj: isl.PwAff | isl.Set) -> isl.Set:
    """``[n, k] -> { : }`` in the parameter space of a PwAff or a Set."""
    sp = obj.get_domain_space() if isinstance(obj, isl.PwAff) else obj.get_space()
    return isl.Set.universe(sp.params())


@contextlib.contextmanager
def _detect_min_max(ctx: isl.Context, on: bool):
    """isl's AST builder writes pieces that are the minimum or maximum of their
    expressions as ``min``/``max`` within the block (isl's option
    ``ast_build_detect_min_max``), as it did before after it."""
    old = ctx.get_ast_build_detect_min_max()
    ctx.set_ast_build_detect_min_max(int(on))
    try:
        yield
    finally:
        ctx.set_ast_build_detect_min_max(old)


def pwaff_to_py(pa: isl.PwAff, context: isl.Set | None = None,
                names: Mapping[str, str] | None = None, min_max: bool = False) -> str:
    """Python source of a PwAff over parameters only (``[n, lb, ub] -> { [(...)] }``).

    ``context`` is a parameter set under which the expression will be evaluated: pieces
    are simplified against it and the result is only meaningful inside it. Outside
    ``pa.domain()`` the expression returns the value of some piece (isl's choice); make the
    PwAff total first where that matters (:func:`bbmm.codegen.boxes.param_box` does).
    ``min_max``: pieces that are the minimum or maximum of their expressions are written
    as ``min``/``max`` (``max(0, lb)``, not ``0 if lb <= -1 else lb``).
    """
    if not pa.get_domain_space().is_params():
        raise ValueError(f"PwAff over set dimensions: {pa}; move them to parameters first")
    if context is None:
        context = params_universe(pa)
    if pa.domain().intersect_params(context).is_empty():
        return "0"
    with _detect_min_max(pa.get_ctx(), min_max):
        build = isl.AstBuild.from_context(context)
        return ast_to_py(build.expr_from_pw_aff(pa.gist_params(context)), names)


def set_to_py(s: isl.Set, context: isl.Set | None = None,
              names: Mapping[str, str] | None = None) -> str:
    """Python boolean source, true exactly at the parameter values of a parameter set
    (``[n, k] -> { : ... }``) inside ``context``."""
    if not s.get_space().is_params():
        s = s.params()
    if context is None:
        context = params_universe(s)
    s = s.intersect_params(context)
    if s.is_empty():
        return "False"
    if context.is_subset(s):
        return "True"
    build = isl.AstBuild.from_context(context)
    src = ast_to_py(build.expr_from_set(s.gist_params(context)), names)
    return {"0": "False", "1": "True"}.get(src, src)


def compile_lambda(args: Sequence[str], exprs: str | Sequence[str]) -> Callable[..., object]:
    """``compile_lambda(["n", "k"], ["k", "n - 1"])`` -> ``lambda n, k: (k, n - 1)``;
    a single string gives a function returning one value."""
    body = exprs if isinstance(exprs, str) else "(" + "".join(f"{x}, " for x in exprs) + ")"
    return eval(f"lambda {', '.join(args)}: {body}", {"__builtins__": {"min": min, "max": max}})

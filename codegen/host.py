"""The host driver generator: a readable Python module implementing Algorithm 4.

The driver mirrors the C program's loop tree: serial (host) loops become Python
``for`` loops, each kernel nest becomes one *phase* per host iteration whose tiles
(Algorithm 1's closed-form boxes, Section 8's flow-out and write-out boxes) go to
:meth:`bbmm.runtime.Runtime.run_phase`, and each host iteration ends with
``bb_cleanup``. Each nest's ``nest<N>_tile`` returns a tile's boxes as a
:class:`bbmm.tiles.TileSpec`, their bounds simplified under the tile's non-empty
condition, one box for the accesses that share it; the driver's own variables go without
bbmm's prefix where no C name is in their way (:class:`Locals`), and ``run`` says which
step of Algorithm 4 each call of the runtime is. The module is runnable on its own
(``python floyd_host.py --devices 2 --param n=4096``) and importable (``run(rt, ...)``).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import islpy as isl

from bbmm.codegen.boxes import AccessBox, NestBoxes
from bbmm.codegen.deps import Nest, Plan
from bbmm.codegen.flow import NestFlow
from bbmm.codegen.literals import py_comment, py_doc, py_str
from bbmm.codegen.opencl import KernelSource
from bbmm.codegen.pyexpr import pwaff_to_py, set_to_py
from bbmm.codegen.regime import regime, shifts
from bbmm.codegen.scop import (AffAnd, AffMax, AffMin, AffNot, AffOr, AffSelect, Affine, Array,
                          Cmp, LoopNode, Scop)
from bbmm.codegen.deps import isl_quota
from bbmm.codegen.tiling import BOX_OPERATIONS, ParamBox


class Emitter:
    """Lines with indentation (loopy's CodeGenerator, in small)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.level = 0
        self.tile_sources: dict[int, str] = {}
        """Each nest's ``nest<N>_tile`` function as emitted (:func:`_phase_regime`)."""
        self.regimes = 0
        """Phases emitted with their tile lists built once per regime."""
        self.narrow: frozenset[int] = frozenset()
        """Nests run as one tile (:func:`narrow_nests`)."""
        self.sigs: set[int] = set()
        """Nests with a ``nest<N>_sig`` function (:func:`_emit_sig`)."""

    def __call__(self, line: str = "") -> None:
        self.lines.append(("    " * self.level + line) if line else "")

    def __enter__(self) -> None:
        self.level += 1

    def __exit__(self, *exc: object) -> None:
        self.level -= 1

    def source(self) -> str:
        return "\n".join(self.lines) + "\n"


def cond_py(c: object) -> str:
    """Python source of an affine condition of the front end's IR."""
    if isinstance(c, Cmp):
        return f"{c.lhs.py()} {c.op} {c.rhs.py()}"
    if isinstance(c, AffNot):
        return f"not ({cond_py(c.arg)})"
    sep = " and " if isinstance(c, AffAnd) else " or "
    assert isinstance(c, (AffAnd, AffOr))
    return sep.join(f"({cond_py(a)})" for a in c.args)


def bound_py(e: object) -> str:
    """Python source of a loop bound (affine, min/max, ternary)."""
    if isinstance(e, Affine):
        return e.py()
    if isinstance(e, AffSelect):
        return f"({bound_py(e.then)} if {cond_py(e.cond)} else {bound_py(e.else_)})"
    name = "min" if isinstance(e, AffMin) else "max"
    assert isinstance(e, (AffMin, AffMax))
    return f"{name}({', '.join(bound_py(a) for a in e.args)})"


def _extents_py(a: Array) -> tuple[str, ...]:
    """An array's extents as Python source over the parameters (``n // 2 + 1`` for C's
    ``n / 2 + 1``: evaluating the C text in Python would divide exactly)."""
    return a.dims if a.local else tuple(e.py() for e in a.extents)


def _tuple(xs: Sequence[str]) -> str:
    return f"({xs[0]},)" if len(xs) == 1 else f"({', '.join(xs)})"


def box_py(b: ParamBox, within: isl.Set | None = None) -> tuple[str, str | None]:
    """``(box, cond)``: Python source of a box of the tile and of the condition under which
    the tile has it, None where it always does (then ``box`` is all there is).

    ``within`` is the parameter set the driver evaluates the box in (the tile not empty):
    ``cond`` is said within it, and the bounds within it and ``cond``, as ``min``/``max``
    where isl finds them such (Floyd's ``max(0, lb)``, not ``0 if lb <= -1 else lb``; the
    row ``(k, 0)..(k, n - 1)`` without a condition). Outside ``cond`` the box is empty,
    ``lo = 0 > hi = -1`` as :class:`ParamBox`'s are. Without ``within``: the box as the
    :class:`ParamBox` prints it."""
    plain = f"Box.unchecked({_tuple(b.lo)}, {_tuple(b.hi)})", None
    if within is None or not b.lo:
        return plain
    try:
        with isl_quota(BOX_OPERATIONS):
            return _box_within(b, within)
    except isl.Error:
        return plain            # over the quota (sets with floor divisions): as it is


def _box_within(b: ParamBox, within: isl.Set) -> tuple[str, str | None]:
    within = within.intersect_params(b.context)
    has = b.nonempty.intersect_params(within).coalesce()
    if has.is_empty():
        return _empty_py(len(b.lo)), None
    cond = None if within.is_subset(has) else _cond_py(has, within)
    lo = [pwaff_to_py(pa, has, min_max=True) for pa in b.lo_isl]
    hi = [pwaff_to_py(pa, has, min_max=True) for pa in b.hi_isl]
    return f"Box.unchecked({_tuple(lo)}, {_tuple(hi)})", cond


def _cond_py(s: isl.Set, within: isl.Set) -> str:
    """Python source of the parameter set ``s`` within ``within``, what all of its parts
    have in common first (their convex hull), then what tells them apart:
    ``lb <= k + 1 <= ub and (ub <= n - 2 or lb >= 1)``, not each part in full (the set as
    isl prints it where it has existentially quantified variables: their hull is costly)."""
    if any(p.dim(isl.dim_type.div) for p in s.get_basic_sets()):
        return set_to_py(s, within)
    hull = isl.Set.from_basic_set(s.polyhedral_hull())
    common, rest = set_to_py(hull, within), set_to_py(s, within.intersect(hull))
    if rest == "True":
        return common
    if common == "True":
        return rest
    return f"{common} and ({rest})" if " or " in rest else f"{common} and {rest}"


def _empty_py(ndim: int) -> str:
    return f"Box.unchecked({_tuple(['0'] * ndim)}, {_tuple(['-1'] * ndim)})"


@dataclass(frozen=True)
class NestCode:
    """Everything the driver needs about one nest."""

    nest: Nest
    boxes: NestBoxes
    flow: NestFlow
    kernel: KernelSource
    writers: Mapping[str, tuple[int, int, int]] = field(default_factory=dict)
    """:func:`bbmm.codegen.flow.edge_writers`: where the tile's rows write each array."""


def generate_host(scop: Scop, plan: Plan, nests: list[NestCode], kernel_source: str,
                  slots: dict[str, int], c_path: str, version: str,
                  schedule: str = "as-written", reassociate: bool = False) -> str:
    """The driver module's source; ``schedule`` (the loop order taken) and
    ``reassociate`` (floating-point sums allowed in another order) are part of it, and so
    of the key the driver is cached by."""
    g = Emitter()
    fn = scop.function
    g('"""bbmm host driver for `%s` (%s): Algorithm 4 of Ramashekar & Bondhugula, TACO 2013.'
      % (fn, py_doc(c_path)))
    g()
    g("Generated by bbmm %s from the C source; edit the C file and recompile rather than this."
      % version)
    g("Serial loops run here on the host; in each serial iteration the tiles of every")
    g("parallel nest go to the devices (static block distribution; a nest with fewer")
    g("loops than another of its serial loop runs as one tile, where its data is), and the runtime")
    g("allocates their boxes (Algorithm 2), reuses resident ones, boxes data in and out,")
    g("and keeps the devices coherent (flow-out, flow-in, write-out).")
    g('"""')
    g("from __future__ import annotations")
    g()
    g("import numpy as np")
    g()
    g("from bbmm.box import Box")
    g("from bbmm.hostlib import (Progress, device_of, kernel_options, launch, once_tiles,\n"
      "                          scalars as _ints, serial_range, tiles_covering, whole_tile)")
    g("from bbmm.tiles import Tile, TileSpec")
    g()
    g(f"FUNCTION = {fn!r}")
    g(f"SCHEDULE = {schedule!r}  # the loops as written, or isl's schedule")
    g(f"REASSOCIATE = {bool(reassociate)!r}  # floating-point sums allowed in another order")
    g(f"SOURCE = {c_path!r}")
    g(f"INT_PARAMS = {tuple(scop.int_params)!r}")
    if scop.int_param_types and any(t != "int" for t in scop.int_param_types):
        g(f"INT_TYPES = {dict(zip(scop.int_params, scop.int_param_types))!r}  # C types")
    g(f"PARAM_DEFAULTS = {dict(scop.param_defaults)!r}  # sizes main passes the kernel")
    g(f"FLOAT_PARAMS = {tuple(scop.float_params)!r}")
    if scop.returns:
        g(f"RETURNS = {scop.returns!r}  # the array holding the value the kernel returns")
    if scop.c_names:
        g(f"C_NAMES = {dict(scop.c_names)!r}  # model name: the C source's name, which "
          f"Python, isl or OpenCL C cannot take (--param and messages use the C name)")
    g("ARRAYS = {%s}  # name: (C type, extents as Python)" % ", ".join(
        f"{a.name!r}: ({a.ctype!r}, {_extents_py(a)!r})" for a in scop.arrays))
    g(f"LOCALS = frozenset({sorted(a.name for a in scop.arrays if a.local)!r})"
      f"  # expanded scalars, C local arrays: the runtime's, not the caller's")
    g(f"SLOTS = {slots!r}  # kernel box slots per array (more boxes fall back to their hull)")
    written = {acc.array for st in scop.statements for acc in st.accesses if acc.kind == "write"}
    read_only = sorted(a.name for a in scop.arrays if a.name not in written)
    g(f"READ_ONLY = frozenset({read_only!r})  # arrays the program never writes")
    g(f"RUNS_ONCE = {not plan.serial_loops!r}  # no serial loop on the host: every nest runs once")
    by_name = {st.name: st for st in scop.statements}
    touched: dict[str, int] = {}
    for nc in nests:
        for a in {acc.array for s in nc.nest.statements for acc in by_name[s].accesses}:
            touched[a] = touched.get(a, 0) + 1
    shared = sorted(a for a, c in touched.items() if c > 1)
    g(f"SHARED = frozenset({shared!r})  # arrays more than one nest accesses")
    g()
    # readable as a raw triple-quoted string where that reads back exactly, else repr()
    lit = py_str(kernel_source.rstrip("\n") + "\n")
    g.lines.extend(("KERNELS = " + lit).split("\n"))
    g()
    ftypes = {"float": "np.float32", "double": "np.float64"}
    g.narrow = narrow_nests(scop, [nc.nest for nc in nests])
    for nc in nests:
        _emit_nest(g, scop, nc, ftypes)
    _emit_default_tile(g, scop, nests)
    _emit_run(g, scop, plan, nests)
    g()
    g()
    g('if __name__ == "__main__":')
    with g:
        g("import sys")
        g()
        g("from bbmm.driver import driver_main")
        g("sys.exit(driver_main(sys.modules[__name__]))")
    return g.source()


class Locals:
    """The driver's own variable names: each as wanted (``rt``, ``tile``, ``spec``) unless
    the C program has a name so spelt (its parameters, iterators and arrays are the
    driver's variables too), then with the prefix ``_bbmm_``, which no name of a compiled
    program has (:func:`bbmm.codegen.names.unsafe` renames such C names)."""

    def __init__(self, scop: Scop, more: Iterable[str] = ()) -> None:
        self.taken = (set(scop.int_params) | {p for p, _ in scop.float_params}
                      | {lp.iterator for lp in scop.loops()} | {a.name for a in scop.arrays}
                      | set(more))

    def __getitem__(self, want: str) -> str:
        return f"_bbmm_{want}" if want in self.taken else want


def _roles(boxes: Sequence[AccessBox]) -> str:
    """``path[i][j] (read x2, write)``: the references that share one box, and how."""
    texts = list(dict.fromkeys(py_comment(b.text) for b in boxes))
    kinds = [b.kind for b in boxes]
    how = [k if kinds.count(k) == 1 else f"{k} x{kinds.count(k)}"
           for k in dict.fromkeys(kinds)]
    return f"{', '.join(texts)} ({', '.join(how)})"


def _emit_nest(g: Emitter, scop: Scop, nc: NestCode, ftypes: dict[str, str]) -> None:
    nest, nb, fl, ks = nc.nest, nc.boxes, nc.flow, nc.kernel
    t = nb.tiling
    L = Locals(scop, t.variables)
    stmts = ", ".join(nest.statements)
    band = ", ".join(t.band) or "none: one work-item"
    host = ", ".join(t.host) or "none"
    g(f"# {{{{{{ nest {nest.id}: {stmts}; parallel band ({band}); host loops ({host})")
    g()
    g()
    args = ", ".join(t.variables)
    first = len(g.lines)
    g(f"def nest{nest.id}_tile({args}):")
    with g:
        if t.lb:
            g(f'"""The boxes of tile {t.lb} <= {t.band[0]} <= {t.ub} of nest {nest.id} at '
              f'one serial iteration, or None if it is empty."""')
        else:
            g(f'"""The boxes of nest {nest.id}\'s single instance at one serial iteration, '
              f'or None if it is empty."""')
        for sname in nest.statements:
            st = scop.statement(sname)
            g(f"# {sname}: {py_comment(st.text)}")
        within = t.nonempty
        if nb.empty_cond != "False":
            g(f"if {nb.empty_cond}:")
            with g:
                g("return None  # an empty tile")
            g(f"# from here on {set_to_py(t.nonempty, t.context)}: the bounds below are "
              f"simplified under that")
        writeouts = {af.array: [af.write_out] if af.write_out.exact or
                     len(af.write_out_parts) <= 1 else list(af.write_out_parts)
                     for af in fl.arrays}
        printed: dict[int, tuple[str, str | None]] = {}

        def printed_of(b: ParamBox) -> tuple[str, str | None]:
            if id(b) not in printed:
                printed[id(b)] = box_py(b, within)
            return printed[id(b)]

        # a box that several references or lists share (Floyd's path[i][j] is read and
        # written, its write-out is the same box) is evaluated once: the tile's boxes are
        # computed at every serial iteration
        every = [printed_of(ab)[0] for a in nb.arrays for ab in nb.distinct(a)]
        every += [printed_of(p)[0] for af in fl.arrays for p in af.flow_out_boxes]
        every += [printed_of(p)[0] for ps in writeouts.values() for p in ps]
        shared: dict[str, str] = {}
        for text in every:
            if every.count(text) > 1 and text not in shared:
                shared[text] = L[f"b{len(shared)}"]
        for text, name in shared.items():
            g(f"{name} = {text}")

        def ref(b: ParamBox) -> str:
            box, cond = printed_of(b)
            box = shared.get(box, box)
            return box if cond is None else f"{box} if {cond} else {_empty_py(len(b.lo))}"

        def item(b: ParamBox, comment: str = "") -> None:
            # one box of a list, its condition on lines of their own where it is long
            text = ref(b) + "," + (f"  # {comment}" if comment else "")
            box, cond = printed_of(b)
            if cond is None or len(text) + 4 * g.level <= 100:
                g(text)
                return
            g(shared.get(box, box) + (f"  # {comment}" if comment else ""))
            g(f"if {cond}")
            g(f"else {_empty_py(len(b.lo))},")

        def lists(field: str, boxes: dict[str, Sequence[ParamBox]]) -> None:
            # {array: [box, ...]} on one line where it fits, else a box a line
            one = "%s={%s}," % (field, ", ".join(
                f"{a!r}: [{', '.join(ref(b) for b in bs)}]" for a, bs in boxes.items()))
            if len(one) + 4 * g.level <= 100:
                g(one)
                return
            g(f"{field}={{")
            with g:
                for a, bs in boxes.items():
                    g(f"{a!r}: [")
                    with g:
                        for b in bs:
                            item(b)
                    g("],")
            g("},")

        g("return TileSpec(")
        with g:
            g("# Algorithm 1: the initial bounding box of each access, one for the references")
            g("# that share it, per array")
            g("boxes={")
            with g:
                for a in nb.arrays:
                    g(f"{a!r}: [")
                    with g:
                        for ab in nb.distinct(a):
                            item(ab, _roles(nb.sharers(ab)))
                    g("],")
            g("},")
            writes = {a: [ab for ab in nb.writes if ab.array == a]
                      for a in dict.fromkeys(ab.array for ab in nb.writes)}
            lists("writes", writes)
            g("# Table III: flow-out (read later by other tiles) and write-out (final values)")
            lists("flowout", {af.array: af.flow_out_boxes for af in fl.arrays})
            lists("writeout", writeouts)
            g("# Section 7.2: a box of the serial iteration, freed at its end (bb_cleanup)")
            g("cleanup={%s}," % ", ".join(
                f"{a!r}: {[ab.cleanup for ab in nb.distinct(a)]!r}" for a in nb.arrays))
            if t.grid is not None:
                ranges = [f"({pwaff_to_py(lo, within, min_max=True)}, "
                          f"{pwaff_to_py(hi, within, min_max=True)})"
                          for lo, hi in zip(t.grid.lo_isl, t.grid.hi_isl)]
                g("# each band iterator's range over the tile: the NDRange")
                g(f"grid={_tuple(ranges)},")
            else:
                g("grid=(),")
        g(")")
    g.tile_sources[nest.id] = "\n".join(g.lines[first:])
    g()
    g()
    _emit_sig(g, scop, nc)
    arrays = [(a, len(scop.array(a).dims)) for a in ks.arrays]
    # no read-in: the tile overwrites every element of the array's exact boxes before
    # reading any (only written, or each read takes a value the tile wrote: blackscholes'
    # d1, d2); the runtime then never fuses those boxes into a hull (bbmm.runtime)
    fresh = sorted(a for a in nb.arrays
                   if all(ab.exact for ab in nb.of_array(a))
                   and (all(ab.kind == "write" for ab in nb.of_array(a))
                        or a in fl.sourced_within))
    g(f"NEST{nest.id}_FRESH = frozenset({fresh!r})  # written before read, through exact "
      f"boxes: no read-in")
    ids = dict(zip(ks.arrays, ks.access_ids))
    g(f"NEST{nest.id}_ARRAYS = {tuple((a, n, tuple(ids[a])) for a, n in arrays)!r}"
      f"  # (array, ndim, ids of the accesses whose boxes the kernel takes) in kernel order")
    g(f"NEST{nest.id}_CL_BAND = {tuple(ks.band_dim_of_cl_dim)!r}  # band loop of each OpenCL dim")
    g(f"NEST{nest.id}_COARSEN = {ks.coarsen!r}  # several points per work-item (one assignment)")
    g(f"NEST{nest.id}_BLOCKED = {ks.blocked!r}  # a register block of points per work-item")
    g(f"NEST{nest.id}_STAGED = {ks.staged!r}  # inner-loop reads staged in local memory")
    g(f"NEST{nest.id}_LAUNCH = tuple((a, SLOTS[a], n, ids) for a, n, ids in NEST{nest.id}_ARRAYS)")
    g(f"NEST{nest.id}_WRITERS = {dict(nc.writers)!r}  # array: (d, cmin, cmax): element x along d "
      f"is written by rows {t.band[0] if t.band else 'p0'} in [x - cmax, x - cmin]")
    g()
    g()
    # no name of the C program is in scope here: these locals cannot clash
    g(f"def nest{nest.id}_kernel(scalars, grid, options=None):")
    with g:
        two = bool(t.lb) and ks.band_ndim > 1
        g(f'"""The compute step of Algorithm 4 (line 13): launch {ks.name} on the tile '
          f'(``rows``: on its rows in that range only{", or in either of two ranges" if two else ""}; '
          f'``options``: the run\'s kernel options)."""')
        if t.lb:
            g("def kernel(dev, buffers, rows=None, args=None, at=None):")
        else:
            g("def kernel(dev, buffers, rows=None):")
        with g:
            if t.lb:
                g("# args: this serial iteration's scalars, for a tile built at an earlier one;")
                g("# at: its scalars and grid, for a tile replayed from an earlier one's")
                g("if at is None:")
                with g:
                    g("sc, gr = scalars if args is None else [*args, *scalars[-2:]], grid")
                g("else:")
                with g:
                    g("sc, gr = at")
            g(f"return launch(dev, buffers, KERNELS, {ks.name!r}, "
              f"{'sc, gr' if t.lb else 'scalars, grid'},")
            g(f"              NEST{nest.id}_CL_BAND, NEST{nest.id}_LAUNCH, "
              f"coarsen=NEST{nest.id}_COARSEN, staged=NEST{nest.id}_STAGED,")
            g(f"              blocked=NEST{nest.id}_BLOCKED, rows=rows, options=options)")
        if t.lb:
            g("kernel.at = (scalars, grid)  # what Runtime.ahead moves on from")
            g(f"kernel.name = {ks.name!r}  # the kernel it launches, once per call")
        if two:
            g("kernel.ranges = 2  # rows=(r0, r1, r2, r3): both ends of a tile in one launch")
        g("return kernel")
    g()
    g("# }}}")
    g()
    g()


def _grid_extent(nests: list[NestCode]) -> tuple[str, str] | None:
    """Python expressions of the lowest and highest tiled iterator value over every nest,
    0 included (the global grid starts at 0 or below), or None without tiled nests; the
    minimum and maximum taken by isl, so that they come out folded (lu's ``0``, not
    ``min(0 if n == 1 else 1, 0)``)."""
    ranges = [nc.boxes.p0_range for nc in nests if nc.boxes.p0_range is not None]
    if not ranges:
        return None
    ctx = ranges[0].context
    lo = hi = isl.PwAff.val_on_domain(ctx, isl.Val(0))
    for r in ranges:
        lo, hi = lo.min(r.lo_isl[0]), hi.max(r.hi_isl[0])
    return (pwaff_to_py(lo.coalesce(), ctx, min_max=True),
            pwaff_to_py(hi.coalesce(), ctx, min_max=True))


def _operand(text: str) -> str:
    """The Python expression ``text`` as an operand of ``//``: parenthesised unless it is a
    name, a literal or one call (``max(n - 1, 0)``)."""
    if text.isidentifier() or text.isdigit():
        return text
    if text.split("(", 1)[0].isidentifier() and text.endswith(")"):
        depth = 0
        for i, ch in enumerate(text):
            depth += (ch == "(") - (ch == ")")
            if depth == 0 and ch == ")":
                return text if i == len(text) - 1 else f"({text})"
    return f"({text})"


def _trip_count(lp) -> str:
    """Python source of the iterations of the serial loop ``lp`` (0 when it runs none),
    folded where both bounds are affine: ``max(0, n)``, not ``max(0, (n - 1) - (0) + 1)``."""
    lo, hi = lp.lower_expr, lp.upper_expr
    if isinstance(lo, Affine) and isinstance(hi, Affine):
        count = hi - lo + 1
        return str(max(0, count.const)) if count.is_const() else f"max(0, {count.py()})"
    return f"max(0, ({bound_py(hi)}) - ({bound_py(lo)}) + 1)"


def _emit_default_tile(g: Emitter, scop: Scop, nests: list[NestCode]) -> None:
    L = Locals(scop)
    g(f"def default_tile({L['params']}, {L['ndev']}):")
    with g:
        g('"""A tile size giving each device one tile of the global grid (one box per array)."""')
        for p in scop.int_params:
            g(f"{p} = int({L['params']}[{p!r}])")
        extent = _grid_extent(nests)
        if extent is not None:
            g(f"{L['lo']} = {extent[0]}  # the grid starts at 0 or below")
            g(f"{L['hi']} = {extent[1]}")
            g(f"return max(1, -(-({L['hi']} - {L['lo']} + 1) // {L['ndev']}))")
        else:
            g("return 1")
    g()
    g()


def _emit_run(g: Emitter, scop: Scop, plan: Plan, nests: list[NestCode]) -> None:
    by_stmt = {s: nc for nc in nests for s in nc.nest.statements}
    band_first = {nc.nest.band[0]: nc for nc in nests if nc.nest.band}
    serial = set(plan.serial_loops)
    ftypes = {"float": "np.float32", "double": "np.float64"}
    L = Locals(scop, [x for nc in nests for x in nc.boxes.tiling.variables])
    rt, tile = L["rt"], L["tile"]
    g(f"def run({rt}, {L['params']}, {L['scalars']}, {tile}, {L['progress']}=None):")
    with g:
        g(f'"""Run the program on the runtime ``{rt}`` with tile size ``{tile}``: '
          f'Algorithm 4."""')
        for p in scop.int_params:
            g(f"{p} = int({L['params']}[{p!r}])")
        for p, ct in scop.float_params:
            g(f"{p} = {ftypes.get(ct, 'np.float64')}({L['scalars']}[{p!r}])")
        g(f"{L['ndev']} = len({rt}.devices)")
        g(f"{L['ko']} = kernel_options({rt})  # the run's, read once where it was set up")
        regime_lines = len(g.lines)
        g(f"{L['phases']} = {{}}  # tile lists built once per regime, by (nest, regime)")
        g(f"{L['run_id']} = object()  # names this run's tile lists for the runtime")
        extent = _grid_extent(nests)
        t0, ntiles = L["t0"], L["ntiles"]
        if extent is not None:
            g(f"# the global tile grid: tile t holds rows [t*{tile}, t*{tile} + {tile} - 1] of "
              f"every nest;")
            g(f"# tiles {t0} .. {t0} + {ntiles} - 1 ({t0} < 0 where a range starts below 0)")
            g(f"{t0} = 0" if extent[0] == "0" else f"{t0} = {_operand(extent[0])} // {tile}")
            g(f"{ntiles} = max(1, {_operand(extent[1])} // {tile} + 1 - {t0})")
        else:
            g(f"{t0}, {ntiles} = 0, 1")
        top = [n for n in scop.tree]
        outer = next((n for n in top if isinstance(n, LoopNode) and n.loop.id in serial), None)
        if outer is not None:
            lp = outer.loop
            g(f"{L['bar']} = Progress({_trip_count(lp)}, {scop.function!r}, {L['progress']})")
        else:
            g(f"{L['bar']} = None")
        emitted: set[int] = set()
        _emit_nodes(g, scop, top, serial, by_stmt, band_first, emitted, (), outer, L)
        if not g.regimes:  # every phase's tiles built at every serial iteration
            del g.lines[regime_lines:regime_lines + 2]
        g(f"{rt}.finish()  # the last write-outs done: the results are in the host's arrays")
        g(f"if {L['bar']} is not None:")
        with g:
            g(f"{L['bar']}.close()")
        g(f"return {rt}")


def _upper_py(lp) -> str:
    """The exclusive upper end of the serial loop ``lp``, folded where affine (``n``, not
    ``n - 1 + 1``)."""
    hi = lp.upper_expr
    return (hi + 1).py() if isinstance(hi, Affine) else f"{bound_py(hi)} + 1"


def _emit_nodes(g, scop, nodes, serial, by_stmt, band_first, emitted, host, outer, L) -> None:
    rt = L["rt"]
    for node in nodes:
        if isinstance(node, LoopNode) and node.loop.id in serial:
            lp = node.loop
            g(f"# Algorithm 4: each iteration of the serial loop runs the parallel phases in it")
            g(f"for {lp.iterator} in serial_range({rt}, {bound_py(lp.lower_expr)}, "
              f"{_upper_py(lp)}):  # {lp.text.strip() or lp.iterator}")
            with g:
                key = _tuple([*host, lp.iterator])
                sig = _loop_sig(g, scop, node, serial, by_stmt, band_first, emitted, host, L)
                if sig is not None:
                    g("# where every phase's tiles meet their comparisons as in the last "
                      "iterations, the")
                    g("# runtime replays this one from those, each box moved on as it "
                      "moved then, its tiles")
                    g("# never built (Runtime.ahead)")
                    g(f"{L['sig']} = (")
                    with g:
                        for part in sig:
                            for i, line in enumerate(part.split("\n")):
                                g(line + ("," if i == part.count("\n") else ""))
                    g(")")
                    g(f"if {rt}.ahead({key}, {L['sig']}):")
                    with g:
                        g(f"{rt}.end_serial({key})")
                        if node is outer:
                            g(f"if {L['bar']} is not None:")
                            with g:
                                g(f"{L['bar']}.step()")
                        g("continue")
                _emit_nodes(g, scop, node.children, serial, by_stmt, band_first, emitted,
                            host + (lp.iterator,), outer, L)
                g(f"{rt}.end_serial({key})  # bb_cleanup (Algorithm 4, line 19): the "
                  f"boxes of this iteration")
                flag = next((a.name for a in scop.arrays if a.local and lp.stop_flag in (
                    a.name, a.local)), None) if lp.stop_flag else None
                if flag is not None:
                    g(f"if {rt}.stopped({flag!r}):  # the loop's 'break' was taken: every "
                      "later iteration would do nothing")
                    with g:
                        g("break")
                if node is outer:
                    g(f"if {L['bar']} is not None:")
                    with g:
                        g(f"{L['bar']}.step()")
            continue
        nc = _nest_of(node, band_first, by_stmt)
        if nc is None or nc.nest.id in emitted:
            continue
        emitted.add(nc.nest.id)
        _emit_phase(g, scop, nc, host, L)


def _nest_of(node, band_first, by_stmt):
    """The nest a node of the loop tree below the serial loops emits (None: none)."""
    if isinstance(node, LoopNode):
        nc = band_first.get(node.loop.id)
        return nc if nc is not None else _nest_below(node, by_stmt)
    return by_stmt.get(node.name)


def _nest_below(node, by_stmt):
    for c in node.children:
        if isinstance(c, LoopNode):
            r = _nest_below(c, by_stmt)
            if r is not None:
                return r
        elif c.name in by_stmt:
            return by_stmt[c.name]
    return None


def _emit_phase(g: Emitter, scop: Scop, nc: NestCode, host: tuple[str, ...], L: Locals) -> None:
    t = nc.boxes.tiling
    nid = nc.nest.id
    rt, tile, tiles, spec, ti = L["rt"], L["tile"], L["tiles"], L["spec"], L["t"]
    key = _tuple(host) if host else "()"
    # kernel scalars in argument order: int params, float params, host iterators (0 for
    # those the kernel never reads: its launches then set no argument anew)
    sc = list(t.params) + [p for p, _ in scop.float_params] + [
        "0" if h in nc.kernel.host_unused else h for h in t.host]
    g(f"# nest {nid} ({', '.join(nc.nest.statements)}): one parallel phase, its tiles")
    conds = _phase_regime(g, scop, nc, host)
    if conds is not None:
        g.regimes += 1
        it = ", ".join(host)
        g(f"# (they depend on {it} only through {', '.join(conds)}: built once per value)"
          if conds else f"# (they do not depend on {it}: built once)")
        g(f"{L['key']} = {_tuple([str(nid), *conds])}")
        g(f"{tiles} = {L['phases']}.get({L['key']})")
        g(f"if {tiles} is None:")
        g.level += 1
    g(f"{tiles} = []")

    def tile_lines(device: str, name: str, more: list[str]) -> None:
        g("# Algorithm 1 and Table III: the tile's initial bounding boxes, its flow-out "
          "and")
        g("# write-out boxes")
        g(f"{spec} = nest{nid}_tile({', '.join(t.variables)})")
        if t.lb:
            g(f"if {spec} is None:")
            with g:
                g("continue  # an empty tile")
        else:
            g(f"if {spec} is not None:")
            g.level += 1
        scalars = _tuple(sc + ([t.lb, t.ub] if t.lb else [])) if sc or t.lb else "()"
        pad = " " * len(f"{tiles}.append(Tile(")
        g(f"{tiles}.append(Tile({device}, {spec}.boxes,")
        g(f"{pad}nest{nid}_kernel(_ints({scalars}), {spec}.grid, {L['ko']}),")
        g(f"{pad}{spec}.writes, {spec}.flowout, {spec}.writeout, {spec}.cleanup,")
        last = [f"fresh=NEST{nid}_FRESH", f"name={name}", *more]
        if len(pad) + len(", ".join(last)) + 4 * g.level + 2 <= 100:
            g(f"{pad}{', '.join(last)}))")
        else:
            g(f"{pad}{', '.join(last[:2])},")
            g(f"{pad}{', '.join(last[2:])}))")
        if not t.lb:
            g.level -= 1

    if t.lb:
        pr = t.p0_range_at
        if host and nid in g.narrow:
            g("# fewer loops than the other nests of the serial loop: one tile, which the")
            g("# runtime runs where its data is (a launch per device is not worth its points)")
            g(f"for {ti}, {t.lb}, {t.ub} in whole_tile({pr.lo[0]}, {pr.hi[0]}):")
            with g:
                tile_lines("0", f'"nest{nid}"',
                           [f"span={spec}.grid[0]", f"writers=NEST{nid}_WRITERS"])
        elif host:
            g(f"for {ti} in tiles_covering({pr.lo[0]}, {pr.hi[0]}, {tile}):")
            with g:
                g(f"{t.lb}, {t.ub} = {ti} * {tile}, {ti} * {tile} + {tile} - 1")
                tile_lines(f"device_of({ti} - {L['t0']}, {L['ntiles']}, {L['ndev']})",
                           f'f"nest{nid} tile {{{ti}}}"',
                           [f"span={spec}.grid[0]", f"writers=NEST{nid}_WRITERS"])
        else:
            g("# runs once: spread over every device even if narrower than the grid")
            g(f"for {ti}, {t.lb}, {t.ub}, {L['d']} in once_tiles({pr.lo[0]}, {pr.hi[0]}, "
              f"{tile}, {L['ntiles']}, {L['ndev']}, {L['t0']}):")
            with g:
                tile_lines(L["d"], f'f"nest{nid} tile {{{ti}}}"',
                           [f"span={spec}.grid[0]", f"writers=NEST{nid}_WRITERS"])
    else:
        tile_lines("0", f'"nest{nid}"', [])
    if conds is not None:
        g(f"{L['phases']}[{L['key']}] = {tiles}")
        g.level -= 1
    g(f"# per tile on its device (Algorithm 4, lines 4-18): its disjoint boxes (Algorithm 2),")
    g(f"# bb_present or bb_alloc and bb_readin of each, the compute step, flow-out; then")
    g(f"# flow-in and write-out")
    if conds is None:
        g(f"{rt}.run_phase({tiles}, serial={key})")
    else:
        g(f"{rt}.run_phase({tiles}, serial={key}, spec=({L['run_id']}, {L['key']}),")
        g(" " * len(f"{rt}.run_phase(") + f"args=_ints({_tuple(sc) if sc else '()'}))")


def narrow_nests(scop: Scop, nests: list[Nest]) -> frozenset[int]:
    """Ids of the nests that run as one tile: a nest inside serial loops with fewer loops
    below them than another nest of the same serial loops (LU's scaling of row ``k``
    beside the update of the rows below it, fdtd-2d's ``ey[0][j]`` beside its 2-D
    sweeps), whose accesses follow its band in at most one dimension (a row, a column:
    no diagonal, whose box would span a square) and never in a dimension that the wider
    nests distribute (their tiled loop's): its points are then few, and its tiles would
    sit on devices that hold none of its data. A narrow nest along the distributed
    dimension (doitgen's ``A[r][q][p] = sum[p]`` beside the product that tiles ``p``)
    keeps its tiles, each beside its data."""
    info = {}
    for n in nests:
        if not n.band or not n.host_loops:
            continue
        d = max(len(scop.statement(s).iterators) for s in n.statements) - len(n.host_loops)
        info[n.id] = (n.host_loops, d, n)

    def uses(e: Affine, iterators: set[str]) -> bool:
        return any(v in iterators for v, _ in e.terms) or any(
            uses(num, iterators) for num, _, _ in e.divs)

    def dims(n: Nest, iterators: set[str]) -> list[tuple[str, set[int]]]:
        """Per access of ``n``: its array and the dimensions ``iterators`` index."""
        return [(a.array, {i for i, e in enumerate(a.index) if uses(e, iterators)})
                for s in n.statements for a in scop.statement(s).accesses]

    out = set()
    for nid, (host, d, n) in info.items():
        wider = [m for h, d2, m in info.values() if h == host and d2 > d]
        if not wider:
            continue
        tiled: dict[str, set[int]] = {}
        for m in wider:
            for a, ds in dims(m, {scop.loop(m.band[0]).iterator}):
                tiled.setdefault(a, set()).update(ds)
        mine = dims(n, {scop.loop(lp).iterator for lp in n.band})
        if all(len(ds) <= 1 and not ds & tiled.get(a, set()) for a, ds in mine):
            out.add(nid)
    return frozenset(out)


def _emit_sig(g: Emitter, scop: Scop, nc: NestCode) -> None:
    """``nest<N>_sig``: the truth values of the comparisons that decide which affine piece
    of ``nest<N>_tile`` applies (:func:`bbmm.codegen.regime.shifts`), for a tiled nest
    inside serial loops whose tile list is not built once per regime. A run of serial
    iterations with the same values moves every box of the tile by the same amount each
    iteration (:meth:`bbmm.runtime.Runtime.ahead`)."""
    t = nc.boxes.tiling
    nid = nc.nest.id
    host = tuple(t.host)
    if not host or not t.lb or _phase_regime(g, scop, nc, host) is not None:
        return
    # a nest run as one tile takes its bounds from the serial iterators too
    serial = host + ((t.lb, t.ub) if nid in g.narrow else ())
    conds = shifts([g.tile_sources[nid]], serial, scop.int_params)
    if conds is None:
        return
    g.sigs.add(nid)
    g(f"def nest{nid}_sig({', '.join(t.variables)}):")
    with g:
        g(f'"""The comparisons of {", ".join(host)} that pick the pieces of nest{nid}_tile: '
          f'while they')
        g('hold as in the last iterations, each box moves on as it moved then."""')
        g(f"return {_tuple(list(conds)) if conds else '()'}")
    g()
    g()


def _loop_sig(g: Emitter, scop: Scop, node: LoopNode, serial: set[int], by_stmt, band_first,
              emitted: set[int], host: tuple[str, ...], L: Locals) -> list[str] | None:
    """Python source of the items of the value :meth:`bbmm.runtime.Runtime.ahead` is
    given at the top of the serial loop ``node``'s body: every phase's ``nest<N>_sig`` per
    tile, with the tiles and the comparisons of the tile ranges; None where the body
    holds anything but phases with such a function (a serial loop, a ``break``)."""
    lp = node.loop
    if lp.stop_flag:
        return None
    ncs = []
    seen = set(emitted)
    for child in node.children:
        if isinstance(child, LoopNode) and child.loop.id in serial:
            return None
        nc = _nest_of(child, band_first, by_stmt)
        if nc is None or nc.nest.id in seen:
            continue
        seen.add(nc.nest.id)
        ncs.append(nc)
    if not ncs:
        return None
    parts: list[str] = []
    its = host + (lp.iterator,)
    tile, ti = L["tile"], L["t"]
    for nc in ncs:
        t = nc.boxes.tiling
        nid = nc.nest.id
        if nid not in g.sigs or tuple(t.host) != its:
            return None
        pr = t.p0_range_at
        conds = shifts([pr.lo[0], pr.hi[0]], its, scop.int_params)
        if conds is None:
            return None
        parts.extend(c for c in conds if c not in parts)
        if nid in g.narrow:
            parts.append(f"tuple(nest{nid}_sig({', '.join(t.variables)})\n"
                         f"      for {ti}, {t.lb}, {t.ub} in whole_tile({pr.lo[0]}, "
                         f"{pr.hi[0]}))")
        else:
            at = {t.lb: f"{ti} * {tile}", t.ub: f"{ti} * {tile} + {tile} - 1"}
            args = ", ".join(at.get(v, v) for v in t.variables)
            parts.append(f"tuple(({ti}, nest{nid}_sig({args}))\n"
                         f"      for {ti} in tiles_covering({pr.lo[0]}, {pr.hi[0]}, {tile}))")
    return parts


def _phase_regime(g: Emitter, scop: Scop, nc: NestCode, host: tuple[str, ...]
                  ) -> tuple[str, ...] | None:
    """The comparisons of the serial iterators ``host`` through which the nest's tile
    list depends on them (:func:`bbmm.codegen.regime.regime` over the nest's tile
    function as emitted and its tile range), or None: built afresh at every serial
    iteration."""
    t = nc.boxes.tiling
    if not host or not t.lb:
        return None
    pr = t.p0_range_at
    return regime([g.tile_sources[nc.nest.id], pr.lo[0], pr.hi[0]], host, scop.int_params)


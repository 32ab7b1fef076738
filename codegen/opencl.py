"""OpenCL C kernels for the kernel nests of a plan (paper Section 6.4 and Figure 9).

.. autoclass:: KernelSource
.. autofunction:: generate_kernel

One kernel per :class:`bbmm.codegen.deps.Nest`. A work-item runs one point of the nest's
parallel band; everything below the band (loops and statements, in textual order)
runs sequentially inside it. When the band's body is a single assignment, a build with
``-DBBMM_CO=c`` makes a work-item run ``c`` points of the innermost band loop,
``get_local_size(0)`` apart (each step coalesced), loading for all of them before storing
any (:attr:`KernelSource.coarsen`). The kernel never sees a whole array: each array arrives
as a few *slots*, one per disjoint bounding box the tile holds of it on the device
(:func:`bbmm.runtime.kernel_args` packs them), and every array reference goes through
an access macro. Per access function the host passes ``A_sel<id>``: the slot whose
box holds everything that access touches in this tile, or -1 when the access is split
over several boxes (one ``A_sel`` for the accesses with the same box, given as
``share``: Floyd's three ``path[i][j]``). A selected slot is picked by a ternary on that
uniform value (no
bounds test, no divergence); a split access tests each slot's ``lo``/``hi`` in order
and uses the first holding the index (Figure 9's ``split`` path).

Argument order (``KernelSource.arg_names``)::

    int params..., float params..., host iterators...,
    int lb, int ub, int g0[, int g1[, int g2]]           (absent for an empty band)
    per array accessed (scop order), per slot s:
        __global T* A_buf<s>, long A_base<s>, int A_st<s>_<d> (d < ndim-1),
        int A_lo<s>_<d>..., int A_hi<s>_<d>...
    then int A_sel<access id>... (access ids of the array in the nest, increasing; of
                                     the first access of each box where boxes are shared)
    then, built with -DBBMM_GAPS (a band of two loops or more), int gap_at, int gap:
    band loop 0's rows past gap_at lie gap rows further on (a launch on two ranges of
    rows, :func:`bbmm.hostlib.launch`)

A host iterator the kernel never reads is still an argument; the driver passes 0 for it
(:attr:`KernelSource.host_unused`).

A *lean* build (``-DBBMM_LEAN_<kernel>``, with ``-DBBMM_NS_<kernel>_<array>=k`` per array,
:func:`bbmm.hostlib._layout`) is one specialized for the slot of every access: of an
array with ``k >= 1`` it takes only the buffer, base and strides of slots ``0 .. k-1``,
no bounds and no ``A_sel``; ``k = -1`` keeps every argument of that array (an access
split over slots). The arguments left out are defined as constants in the kernel, never
read. A program generated with ``split_all`` defines ``BBMM_SPLIT_ALL`` and is never
built lean.

Band mapping: the *innermost* band loop is OpenCL dimension 0 (consecutive
work-items then touch consecutive elements of a row-major array, which coalesces on a
GPU); :attr:`KernelSource.band_dim_of_cl_dim` records it.

C semantics are kept where OpenCL differs (:mod:`bbmm.codegen.clsource`: C's types of
expressions, their lowering, the access macros); without fp64 every double becomes float
and double arrays are refused. Inner loops staged in local memory and register blocks
are :mod:`bbmm.codegen.clshapes`'.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from bbmm.diagnostic import UnsupportedProgramError, UsageError
from bbmm.codegen.clshapes import block_plan, emit_block, emit_staged, stage_plan
from bbmm.codegen.clsource import (
    CL_MATH,
    UNROLL8,
    Emitter,
    Lower,
    access_macros,
    any_double,
    cl_ctype,
    cl_elem,
    comment,
    expr_type,
    store,
)
from bbmm.codegen.deps import Nest, Plan
from bbmm.codegen.helpers import opencl_definitions
from bbmm.codegen.names import OPENCL_WORDS
from bbmm.codegen.scop import (
    FLOORD_C,
    Affine,
    ArrayRef,
    BinOp,
    Call,
    Cast,
    Expr,
    LoopNode,
    Node,
    Scop,
    Statement,
    Temp,
    Ternary,
    UnOp,
    array_refs,
    to_c,
)

__all__ = ["KernelSource", "expr_type", "generate_kernel"]

# {{{ result


@dataclass(frozen=True)
class KernelSource:
    """The OpenCL C text of one nest's kernel and what the host needs to launch it."""

    name: str
    """``<function>_nest<id>``."""
    source: str
    arg_names: tuple[str, ...]
    """Every kernel argument, in order (see the module docstring)."""
    arrays: tuple[str, ...]
    """Arrays accessed by the nest, in argument order (the scop's order)."""
    band_ndim: int
    """Number of band loops (0: the kernel runs as one work-item)."""
    arg_types: tuple[str, ...] = ()
    """OpenCL C type of each argument, parallel to :attr:`arg_names`."""
    band_dim_of_cl_dim: tuple[int, ...] = ()
    """``band_dim_of_cl_dim[c]`` is the band loop (0 = outermost) that OpenCL dimension c
    enumerates: ``(band_ndim - 1, ..., 0)``, innermost band loop first."""
    slots: tuple[int, ...] = ()
    """Kernel slots per array, parallel to :attr:`arrays`."""
    access_ids: tuple[tuple[int, ...], ...] = ()
    """Per array (parallel to :attr:`arrays`), the access ids whose ``A_sel<id>`` arguments
    follow its slots, in order: ``TileBuffers.access[a][k]`` must describe
    ``access_ids[a][k]`` (one initial bounding box per access function, or per distinct
    box where :func:`generate_kernel`'s ``share`` names the access whose box another
    takes)."""
    band_iterators: tuple[str, ...] = ()
    host_iterators: tuple[str, ...] = ()
    host_unused: frozenset[str] = frozenset()
    """Host iterators the kernel's text never names outside its argument list (a
    stencil's time step): the driver passes 0 for them, so that a launch sets no argument
    that changed (setting one scalar costs a launch 5-8 us on an H200 host)."""
    split_all: bool = False
    """Every access takes the split path whatever its ``A_sel`` (Figure 10(c))."""
    fp64: bool = False
    """The kernel uses doubles (enables ``cl_khr_fp64``)."""
    coarsen: bool = False
    """Built with ``-DBBMM_CO=c``, a work-item runs ``c`` points of the innermost band loop,
    ``get_local_size(0)`` apart: OpenCL dimension 0 of the NDRange is then ``c`` times
    smaller (:func:`bbmm.hostlib.launch`); with ``-DBBMM_CO1=r`` (a band of two or more
    loops) also ``r`` consecutive points of the next loop, dimension 1 ``r`` times
    smaller."""
    blocked: bool = False
    """A register block (:func:`bbmm.codegen.clshapes.block_plan`): like ``coarsen``,
    ``BBMM_CO`` points of the innermost band loop ``get_local_size(0)`` apart and
    ``BBMM_CO1`` consecutive points of the next one per work-item, whose inner loop runs
    once for all of them (:data:`bbmm.hostlib.BLOCK` gives the shape)."""
    staged: bool = False
    """Built with ``-DBBMM_SG=g``, the kernel runs as work-groups of ``BBMM_SL`` x ``g``
    work-items (NDRange dimension 1 is ``g``): the ``BBMM_SL`` points of the 1-D band a
    group owns walk their inner loop in chunks of ``BBMM_SC`` trips, whose reads of
    read-only arrays all ``BBMM_SL * g`` work-items first stage in local memory
    (:func:`bbmm.codegen.clshapes.stage_plan`)."""

    copy = replace

    def global_size(self, extents: Sequence[int]) -> tuple[int, ...]:
        """NDRange global size from the extent of each band loop (outermost first)."""
        if len(extents) != self.band_ndim:
            raise UsageError(f"{self.name}: {len(extents)} extents for a band of "
                             f"{self.band_ndim} loop(s)")
        if not self.band_ndim:
            return (1,)
        return tuple(int(extents[d]) for d in self.band_dim_of_cl_dim)

# }}}
# {{{ the kernel


def _nodes_of(scop: Scop, nest: Nest) -> tuple[Node, ...]:
    """The nodes a work-item runs: children of the innermost band loop, or for an empty
    band the nest's statements (and loops) among the innermost host loop's children."""
    if nest.band:
        return scop.loop_node(nest.band[-1]).children
    siblings = scop.loop_node(nest.host_loops[-1]).children if nest.host_loops else scop.tree
    names = set(nest.statements)

    def ours(n: Node) -> bool:
        stmts = list(n.statements()) if isinstance(n, LoopNode) else [n]
        return bool(stmts) and all(s.name in names for s in stmts)

    return tuple(n for n in siblings if ours(n))


def generate_kernel(scop: Scop, plan: Plan, nest: Nest, slots: dict[str, int], *,
                    split_all: bool = False, fp64: bool = True,
                    share: Mapping[int, int] | None = None) -> KernelSource:
    """OpenCL C for one kernel nest, parameterised on bounding-box slots (Figure 9).

    :arg slots: kernel slots per array accessed by the nest (at least 1); the host
        passes ``kernel_args(tb, a, slots[a], ndim)`` for each.
    :arg split_all: force every access through the split path (the paper's worst case,
        Figure 10(c)); ``A_sel`` arguments are still taken and ignored.
    :arg fp64: the device supports doubles; without, doubles become float and a double
        array is an :class:`UnsupportedProgramError`.
    :arg share: access id -> the access id whose ``A_sel`` argument it takes (accesses
        with the same initial bounding box, :meth:`bbmm.codegen.boxes.NestBoxes.shared`:
        Floyd's three ``path[i][j]``); an access not named has its own.
    """
    share = dict(share or {})
    if nest not in plan.nests:
        raise UsageError(f"nest {nest.id} is not a nest of the given plan")
    name = f"{scop.function}_nest{nest.id}"
    stmts = [scop.statement(s) for s in nest.statements]
    accesses = sorted((a for s in stmts for a in s.accesses), key=lambda a: a.id)
    arrays = [a for a in scop.arrays if any(acc.array == a.name for acc in accesses)]
    band = [scop.loop(i) for i in nest.band]
    host = [scop.loop(i) for i in nest.host_loops]
    inner = [scop.loop(i) for i in nest.inner_loops]
    nb = len(band)
    lower = Lower(scop, fp64)
    used = set(scop.int_params) | {n for n, _ in scop.float_params} | \
        {a.name for a in scop.arrays} | {lp.iterator for lp in scop.loops()}
    # the front end renamed every name OpenCL C cannot take (bbmm.codegen.names)
    assert not used & OPENCL_WORDS, used & OPENCL_WORDS

    def fresh(n: str) -> str:
        return n if n not in used else f"_bbmm_{n}"

    lb, ub = fresh("lb"), fresh("ub")
    gs = [fresh(f"g{d}") for d in range(nb)]
    for a in arrays:
        if a.ctype == "double" and not fp64:
            raise UnsupportedProgramError(f"array '{a.name}' is double but the device has no "
                                          f"fp64 support", a.coord)
        if slots.get(a.name, 0) < 1:
            raise UsageError(f"{name}: no kernel slots given for array '{a.name}' "
                             f"(slots={dict(slots)})")

    # {{{ arguments: (comment, lines of (type, name))
    groups: list[tuple[str, list[list[tuple[str, str]]]]] = []
    groups.append(("parameters", [[("int", p) for p in scop.int_params]
                                  + [(lower.real(cl_ctype(t)), p) for p, t in scop.float_params]]))
    groups.append(("host (serial) iterators, outermost first",
                   [[("int", lp.iterator) for lp in host]]))
    if nb:
        groups.append((f"tile bounds on band loop '{band[0].iterator}'; iterator of "
                       f"work-item 0 per band loop", [[("int", lb), ("int", ub)],
                                                      [("int", g) for g in gs]]))
    access_ids = []
    written = {acc.array for acc in accesses if acc.kind == "write"}
    guards: dict[int, str] = {}  # id of a line of arguments: the #if that keeps it
    lean_defs: list[str] = []    # what a lean build puts in place of the lines it drops
    lean = f"BBMM_LEAN_{name}"
    for a in arrays:
        ns, lines = slots[a.name], []
        nsm = f"BBMM_NS_{name}_{a.name}"
        # an array the nest only reads is modified through no pointer while the kernel
        # runs, whatever buffer it shares with others: restrict is exact for it, and lets
        # the compiler use read-only caches (-DBBMM_RESTRICT= turns it off)
        ptr = f"__global {cl_elem(a.ctype)}*" if a.name in written else \
            f"__global const {cl_elem(a.ctype)}* BBMM_RESTRICT"
        full = f"!defined({lean}) || {nsm} < 0"  # every slot, with bounds and sels
        for s in range(ns):
            lines.append([(ptr, f"{a.name}_buf{s}"),
                          ("long", f"{a.name}_base{s}")]
                         + [("int", f"{a.name}_st{s}_{d}") for d in range(a.ndim - 1)])
            if s and not split_all:
                guards[id(lines[-1])] = f"{full} || {nsm} > {s}"
                lean_defs.append(f"#if {nsm} >= 0 && {nsm} <= {s}")
                lean_defs += [f"#define {n} {v}" for (_, n), v in zip(
                    lines[-1], [f"{a.name}_buf0", "0"] + ["0"] * (a.ndim - 1))]
                lean_defs.append("#endif")
            lines.append([("int", f"{a.name}_lo{s}_{d}") for d in range(a.ndim)]
                         + [("int", f"{a.name}_hi{s}_{d}") for d in range(a.ndim)])
            if not split_all:
                guards[id(lines[-1])] = full
                lean_defs.append(f"#if {nsm} >= 0")
                lean_defs += [f"#define {n} 0" for _, n in lines[-1]]
                lean_defs.append("#endif")
        ids = tuple(dict.fromkeys(share.get(acc.id, acc.id) for acc in accesses
                                  if acc.array == a.name))
        access_ids.append(ids)
        lines.append([("int", f"{a.name}_sel{k}") for k in ids])
        if not split_all:
            guards[id(lines[-1])] = full
        groups.append((f"array {a.name}: {ns} slot(s) (buffer, base, strides; box), then "
                       f"the slot of each access or -1 when split", lines))
    flat = [arg for _, lines in groups for line in lines for arg in line]
    # }}}

    uses_double = fp64 and (any_double(scop, stmts, arrays) or any(
        re.search(r"\bdouble\b", h.source) for h in scop.helpers))
    out = Emitter()
    out(comment(f"{os.path.basename(scop.filename)}: {scop.function}, nest {nest.id}; band: "
                 f"{', '.join(lp.iterator for lp in band) or '(none: one work-item)'}; "
                 f"host loops: {', '.join(lp.iterator for lp in host) or '(none)'}; "
                 f"inner loops: {', '.join(lp.iterator for lp in inner) or '(none)'}"))
    if uses_double:
        out("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    # C semantics: no fused multiply-add unless the source has one (the sequential
    # reference is built with -ffp-contract=off; OpenCL C may contract by default)
    out("#pragma OPENCL FP_CONTRACT OFF")
    for line in opencl_definitions(scop.helpers, CL_MATH, fp64):
        out(line)
    out("#ifndef BBMM_IDX\n#define BBMM_IDX long  /* the host passes -DBBMM_IDX=int when "
        "every offset fits */\n#endif")
    out("#ifndef BBMM_CO\n#define BBMM_CO 1  /* points per work-item along OpenCL dimension 0 "
        "(-DBBMM_CO=c) */\n#endif")
    out("#ifndef BBMM_CO1\n#define BBMM_CO1 1  /* consecutive points per work-item along "
        "dimension 1 */\n#endif")
    if nb > 1:
        out("#ifdef BBMM_GAPS  /* a launch on two ranges of band loop 0 (the rows writing a "
            "tile's flow-out at both ends): past the first, the second */\n"
            "#define BBMM_ROW(v) ((v) > gap_at ? (v) + gap : (v))\n#else\n"
            "#define BBMM_ROW(v) (v)\n#endif")
    out("#ifndef BBMM_RESTRICT\n#define BBMM_RESTRICT restrict\n#endif")
    out("#ifndef BBMM_UNROLL\n#define BBMM_UNROLL 1  /* unroll innermost loops 8 times "
        "(-DBBMM_UNROLL=0: not) */\n#endif")
    body = _nodes_of(scop, nest)
    stage = stage_plan(scop, band, body, written)
    block = None if stage else block_plan(band, body)
    if stage:
        out("#ifndef BBMM_SG\n#define BBMM_SG 0  /* work-items staging reads per band point "
            "(-DBBMM_SG=g: staged) */\n#endif")
        out("#ifndef BBMM_SL\n#define BBMM_SL 32  /* band points per work-group when "
            "staged */\n#endif")
        out("#ifndef BBMM_SC\n#define BBMM_SC 128  /* inner-loop trips per staged chunk "
            "*/\n#endif")
    out()
    for a in arrays:
        for line in access_macros(a.name, a.ndim, slots[a.name], split_all):
            out(line)
        out()
    if split_all:
        out("#define BBMM_SPLIT_ALL 1  /* every argument taken: the host builds no lean "
            "kernel */")
    if guards:
        out(comment(f"arguments under #if: a lean build (-D{lean}, bbmm's default) takes only "
                    f"the buffer, base and strides of the slots the accesses use"))
    out(f"__kernel void {name}(")
    # A lean build (-D{lean}, BBMM_NS_<kernel>_<array> slots of each array, -1: all) takes
    # only the buffer, base and strides of each slot its accesses use
    # (bbmm.runtime.lean_args): a launch of heat2d's kernel takes 13 arguments instead
    # of 69, and NVIDIA's driver copies every argument at each enqueue.
    first = True
    for g, lines in groups:
        if any(lines):
            out(f"    /* {g} */")
        for line in lines:
            if line:
                guard = guards.get(id(line))
                if guard:
                    out.directive(f"#if {guard}")
                out(("    " if first else "    , ") + ", ".join(f"{t} {n}" for t, n in line))
                if guard:
                    out.directive("#endif")
                first = False
    if nb > 1:
        # built with -DBBMM_GAPS, the kernel takes two more arguments: a launch then
        # covers two ranges of band loop 0's rows (BBMM_ROW below)
        out.directive("#ifdef BBMM_GAPS\n    , int gap_at, int gap  /* band loop 0's rows "
                      "past gap_at lie gap rows further on */\n#endif")
    out(")")
    out("{")
    if lean_defs:
        out.directive("\n".join([f"#ifdef {lean}  /* the arguments a lean build leaves out: "
                                  "never read (every access's slot is known) */",
                                  *lean_defs, "#endif"]))
    out.level = 1
    cl_dim = {nb - 1 - c: c for c in range(nb)}
    # Several points per work-item when the band's body is one plain assignment: the
    # loads of all of them are issued before any store (legal: no dependence joins two
    # points of a parallel band), so each work-item keeps BBMM_CO independent loads in
    # flight, which one-point work-items cannot do on a GPU whose memory needs more
    # bytes in flight than one load per resident thread.
    coarsen = (nb > 0 and len(body) == 1 and isinstance(body[0], Statement)
               and body[0].op == "=" and scop.array(body[0].lhs.array).ctype != "_Bool")
    def outside(x: str, d: int) -> str:
        """C test: value ``x`` of band loop ``d`` lies outside the tile (d = 0) or the loop."""
        lp = band[d]
        return " || ".join(([f"{x} < {lb}", f"{x} > {ub}"] if d == 0 else [])
                           + [f"{x} < {lp.lower}", f"{x} > {lp.upper}"])

    if stage:
        out.directive("#if !BBMM_SG  /* not staged: a work-item per band point */")
    inner_test = outer_test = ""

    def row(d: int, first: str) -> str:
        """Band loop ``d``'s first point of a work-item; band loop 0's past a launch's
        gap where the kernel takes two ranges of rows (``BBMM_ROW``)."""
        return f"BBMM_ROW({first})" if d == 0 and nb > 1 else first

    for d, lp in enumerate(band):
        out(comment(f"band loop {d} '{lp.iterator}' (loop {lp.id}): OpenCL dimension "
                     f"{cl_dim[d]}" + ("; outside the tile or the loop: nothing to do"
                                       if d == 0 else "; outside the loop: nothing to do")))
        test = outside(lp.iterator, d)
        if (coarsen or block) and d >= nb - 2:
            # the two innermost band loops start each work-item's points (dimension 0:
            # BBMM_CO of them get_local_size(0) apart; dimension 1: BBMM_CO1 consecutive)
            start = ("(int)(get_group_id(0) * get_local_size(0) * BBMM_CO + get_local_id(0))"
                     if d == nb - 1 else "(int)get_global_id(1) * BBMM_CO1")
            what = ("BBMM_CO points per work-item, get_local_size(0) apart" if d == nb - 1
                    else "BBMM_CO1 consecutive points per work-item")
            out(comment(f"{what} from {fresh(lp.iterator + '0')} on"))
            out(f"const int {fresh(lp.iterator + '0')} = {row(d, f'{gs[d]} + {start}')};")
            if d == nb - 1:
                inner_test = test
            else:
                outer_test = test
            continue
        out(f"const int {lp.iterator} = "
            f"{row(d, f'{gs[d]} + (int)get_global_id({cl_dim[d]})')};")
        out(f"if ({test})")
        out("  return;")
    if not nb:
        out("/* empty band: the nest runs as a single work-item */")
    if stage:
        out.directive("#endif")

    def ref(r: ArrayRef) -> str:
        sel = share.get(r.access, r.access)
        return f"{r.array}_REF({r.array}_sel{sel}_v, {', '.join(str(x) for x in r.index)})"

    def temp_line(t: Temp, declare: bool) -> str:
        return (f"{lower.real(cl_ctype(t.ctype))} " if declare else "") + \
            f"{t.name} {t.op} {to_c(lower(t.expr), ref)};"

    def temp_lines(st: Statement) -> list[str]:
        return [temp_line(t, t.declare) for t in st.temps]

    def assign(st: Statement) -> str:
        return store(ref(st.lhs), st.op, to_c(lower(st.rhs), ref),
                     scop.array(st.lhs.array).ctype)

    def emit_group(group: list[tuple[Statement, list[Temp]]]) -> None:
        """Statements side by side under the same guards, each after the assignments of
        scalar temporaries it needs that the ones before it did not (bbmm.codegen.scop.Temp)."""
        guards = group[0][0].guards
        out(comment("scalar temporaries, each computed once, where the source computes it"))
        out(f"if ({' && '.join(f'({g})' for g in guards)}) {{" if guards else "{")
        out.level += 1
        declared: set[str] = set()
        for st, temps in group:
            for t in temps:
                out(temp_line(t, t.name not in declared))
                declared.add(t.name)
            out(comment(f"{st.name}: {st.text or to_c(st.rhs)}"))
            out(assign(st))
        out.level -= 1
        out("}")

    def emit(nodes: tuple[Node, ...]) -> None:
        for n in _temp_groups(nodes):
            if isinstance(n, list):
                emit_group(n)
                continue
            if isinstance(n, LoopNode):
                lp = n.loop
                out(comment(f"loop {lp.id}: {lp.text or lp.iterator}"))
                if not any(isinstance(c, LoopNode) for c in n.children):
                    # a work-item walks it alone (mvt's column): unrolled, its loads
                    # are in flight together instead of one after the other
                    out.directive(UNROLL8)
                out(f"for (int {lp.iterator} = {lp.lower}; {lp.iterator} <= {lp.upper}; "
                    f"{lp.iterator}++) {{")
                out.level += 1
                emit(n.children)
                out.level -= 1
                out("}")
                continue
            out(comment(f"{n.name}: {n.text or to_c(n.rhs)}"))
            body = assign(n)
            if n.guards:
                out(f"if ({' && '.join(f'({g})' for g in n.guards)})")
                out("  " + body)
            else:
                out(body)

    # the host may build this kernel with each access's slot known (-DA_SEL<id>_IS=s):
    # then every access compiles to one direct load (the paper's common unsplit case)
    sel_names = [(a.name, k) for a, ids in zip(arrays, access_ids) for k in ids]
    for an, k in sel_names:
        out.directive(f"#ifdef {an}_SEL{k}_IS\n#define {an}_sel{k}_v ({an}_SEL{k}_IS)\n#else\n"
                      f"#define {an}_sel{k}_v {an}_sel{k}\n#endif")
    if coarsen:
        st = body[0]
        it = band[-1].iterator
        j0, u, v = fresh(it + "0"), fresh("u"), fresh("v")
        elem = scop.array(st.lhs.array).ctype
        loops = [(u, "BBMM_CO", f"const int {it} = {j0} + {u} * (int)get_local_size(0);")]
        tests = [inner_test]
        index = f"[{u}]"
        if nb >= 2:
            it1 = band[-2].iterator
            r = fresh("r")
            loops.insert(0, (r, "BBMM_CO1", f"const int {it1} = {fresh(it1 + '0')} + {r};"))
            tests.insert(0, outer_test)
            index = f"[{r}]{index}"
        guards = "".join(f" && ({g})" for g in st.guards)
        cond = " && ".join(f"!({t})" for t in tests) + guards
        rhs = lower(st.rhs)
        out(comment(f"{st.name}: {st.text or to_c(st.rhs)}"))
        out(comment("all loads first, then the stores"))
        out(f"{elem} {v}{'[BBMM_CO1]' if nb >= 2 else ''}[BBMM_CO];")

        def each_point(phase: str) -> None:
            """``phase`` at every point of the work-item that lies inside the tile."""
            for var, bound, point in loops:
                out("#pragma unroll")
                out(f"for (int {var} = 0; {var} < {bound}; {var}++) {{")
                out.level += 1
                out(point)
            out(f"if ({cond})")
            out("  " + phase)
            for _ in loops:
                out.level -= 1
                out("}")

        load = f"{v}{index} = {to_c(rhs, ref)};"
        temps = temp_lines(st) if st.temps else []
        if temps:
            load = "{ " + " ".join(temps) + " " + load + " }"
        if nb >= 2 and not any(re.search(rf"\b{re.escape(it1)}\b", t)
                               for t in (inner_test, *st.guards, *temps)):
            # When every row of the work-item's strip lies inside the tile and loop
            # '{it1}' (an interval: the first and the last row tell) and nothing else
            # depends on the row, the rows need no test each and slide a window down
            # the strip: each value is loaded once (:func:`_emit_strip`). Scalar
            # temporaries that depend on no row (a loop's break flag tested at every
            # point) are computed once per column, where the column's points are.
            first, last = fresh(it1 + "_first"), fresh(it1 + "_last")
            out("#if BBMM_CO1 > 1")
            out(comment(f"the strip's rows, all inside '{it1}''s range: one load per value"))
            out(f"const int {first} = {fresh(it1 + '0')}, {last} = {first} + BBMM_CO1 - 1;")
            out(f"if (!({outside(first, nb - 2)}) && !({outside(last, nb - 2)})) {{")
            out.level += 1
            u_var, u_bound, u_point = loops[1]
            out("#pragma unroll")
            out(f"for (int {u_var} = 0; {u_var} < {u_bound}; {u_var}++) {{")
            out.level += 1
            out(u_point)
            out(f"if (!({inner_test}){guards}) {{")
            out.level += 1
            for line in temps:
                out(line)
            _emit_strip(out, scop, rhs, it1, first, r, f"{v}{index}", ref, fresh)
            for _ in range(2):
                out.level -= 1
                out("}")
            out.level -= 1
            out("} else")
            out("#endif")
            out("{")
            out.level += 1
            each_point(load)
            out.level -= 1
            out("}")
        else:
            each_point(load)
        each_point(f"{ref(st.lhs)} = {v}{index};")
    elif block:
        emit_block(out, scop, block, band, [outer_test, inner_test], lower, ref, fresh)
    elif stage:
        out.directive("#if BBMM_SG")
        emit_staged(out, scop, stage, lower, ref, fresh, gs[0], band[0].iterator, outside)
        out.directive("#else")
        emit(body)
        out.directive("#endif")
    else:
        emit(body)
    out.level = 0
    out("}")
    out()
    for a in arrays:
        out(f"#undef {a.name}_AT\n#undef {a.name}_IN\n#undef {a.name}_SEL\n"
            f"#undef {a.name}_FIND\n#undef {a.name}_REF")
    for an, k in sel_names:
        out(f"#undef {an}_sel{k}_v")
    dropped = [line.split()[1] for line in lean_defs if line.startswith("#define ")]
    if dropped:
        out("\n".join(f"#undef {n}" for n in dropped))
    if any("bbmm_floord(" in line for line in out.lines):    # a quasi-affine bound or index
        at = out.lines.index("#pragma OPENCL FP_CONTRACT OFF") + 1
        out.lines[at:at] = [f"#ifndef bbmm_floord\n{FLOORD_C}\n#endif"]
    return KernelSource(
        name=name, source="\n".join(out.lines) + "\n",
        host_unused=_unnamed([lp.iterator for lp in host], out.lines, name),
        arg_names=tuple(n for _, n in flat), arrays=tuple(a.name for a in arrays),
        band_ndim=nb, arg_types=tuple(t for t, _ in flat),
        band_dim_of_cl_dim=tuple(nb - 1 - c for c in range(nb)),
        slots=tuple(slots[a.name] for a in arrays), access_ids=tuple(access_ids),
        band_iterators=tuple(lp.iterator for lp in band),
        host_iterators=tuple(lp.iterator for lp in host), split_all=split_all,
        fp64=uses_double, coarsen=coarsen, blocked=block is not None,
        staged=stage is not None)



_COMMENT_OR_QUOTED = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"'
                                r"|'(?:\\.|[^'\\\n])*'", re.S)
"""C's comments and quoted literals, the first to start winning: a quote inside a
comment is the comment's, a comment's marker inside a string the string's."""


def _unnamed(names: Sequence[str], lines: Sequence[str], kernel: str) -> frozenset[str]:
    """The ``names`` that a kernel's text, without its comments and its argument list
    (from ``__kernel void <kernel>(`` to its opening brace), never contains as a word. A
    name in a macro, a string or a character literal counts as used."""
    head = f"__kernel void {kernel}("
    start = next(i for i, line in enumerate(lines) if line.startswith(head))
    end = lines.index("{", start)
    text = _COMMENT_OR_QUOTED.sub(
        lambda m: " " if m.group(0)[0] == "/" else m.group(0),
        "\n".join([*lines[:start], *lines[end + 1:]]))
    return frozenset(n for n in names if not re.search(rf"\b{re.escape(n)}\b", text))


def _else_only(e: Expr) -> set[tuple]:
    """``(array, index)`` of the reads of ``e`` that lie only in the else branches of its
    ``?:`` (evaluated only where the condition is false)."""
    inside: set[tuple] = set()
    other: set[tuple] = set()

    def walk(x: Expr, in_else: bool) -> None:
        if isinstance(x, ArrayRef):
            (inside if in_else else other).add((x.array, x.index))
        elif isinstance(x, Ternary):
            walk(x.cond, in_else)
            walk(x.then, in_else)
            walk(x.else_, True)
        elif isinstance(x, BinOp):
            walk(x.left, in_else)
            walk(x.right, in_else)
        elif isinstance(x, (UnOp, Cast)):
            walk(x.operand, in_else)
        elif isinstance(x, Call):
            for a in x.args:
                walk(a, in_else)
    walk(e, False)
    return inside - other


def _emit_strip(out: Emitter, scop: Scop, rhs: Expr, it: str, first: str, r: str, dst: str,
                ref, fresh) -> None:
    """The loads of a strip of BBMM_CO1 consecutive rows of ``it`` (from ``first`` on, all
    inside the loop) through register windows, then ``dst = rhs`` per row.

    Reads ``X[it + c][rest]`` with the same ``X`` and ``rest`` (independent of ``it``) and
    offsets c = cmin .. cmax with none missing form a window of registers: row ``r``
    reads element ``first + r + c`` from position c, the rows above are loaded before
    the first row, each row loads only row ``+ cmax`` (through the access of offset
    cmax, whose box holds it: the access reads it at a row of the strip) and the window
    then slides. Reads that do not depend on ``it`` are loaded once; any other read is
    loaded at its row. Values are the same as one load per access: a parallel band
    writes nothing that another of its points reads, and no store comes between.
    """
    groups: dict[tuple, dict[int, ArrayRef]] = {}   # reads that share registers
    lazy = _else_only(rhs)
    for a in array_refs(rhs):
        if (a.array, a.index) in lazy:
            # read only where a ?: takes its else (the old value X of 'X = c ? e : X'
            # under a loop's break flag): loaded there, not at every row
            continue
        dims = [d for d, x in enumerate(a.index) if it in x.names]
        if not dims:
            groups.setdefault((a.array, a.index, None), {}).setdefault(0, a)
        elif len(dims) == 1 and a.index[dims[0]].coeffs.get(it) == 1 \
                and not a.index[dims[0]].divs:
            d = dims[0]
            x = a.index[d]
            rest = x - Affine.var(it) - x.const
            key = (a.array, a.index[:d] + (rest,) + a.index[d + 1:], d)
            groups.setdefault(key, {}).setdefault(x.const, a)
        # else: 2i, or i in two subscripts: loaded at its row (use() finds no register)
    regs: dict[tuple, str] = {}     # (array, index) -> register
    decls: list[str] = []
    before: list[str] = []          # loads of row 'first' (window) and invariant loads
    each: list[str] = []            # loads of each row
    slide: list[str] = []
    for key, by_c in groups.items():
        cs = sorted(by_c)
        if key[2] is not None and cs != list(range(cs[0], cs[-1] + 1)):
            continue  # offsets with a gap: no window, each loaded at its row
        g = fresh(f"w{len(decls)}")
        ctype = cl_elem(scop.array(key[0]).ctype)
        names = [fresh(f"{g}_{c - cs[0]}") for c in cs]
        decls.append(f"{ctype} {', '.join(names)};")
        for c, name in zip(cs, names):
            regs[(by_c[c].array, by_c[c].index)] = name
        if key[2] is None:
            before.append(f"{names[0]} = {ref(by_c[0])};")
            continue
        before += [f"{name} = {ref(by_c[c])};" for c, name in zip(cs[:-1], names)]
        each.append(f"{names[-1]} = {ref(by_c[cs[-1]])};")
        slide += [f"{a} = {b};" for a, b in zip(names, names[1:])]

    def use(a: ArrayRef) -> str:
        return regs.get((a.array, a.index)) or ref(a)

    for line in decls:
        out(line)
    if before:
        out("{")
        out(f"  const int {it} = {first};")
        for line in before:
            out("  " + line)
        out("}")
    out("#pragma unroll")
    out(f"for (int {r} = 0; {r} < BBMM_CO1; {r}++) {{")
    out.level += 1
    out(f"const int {it} = {first} + {r};")
    for line in each:
        out(line)
    out(f"{dst} = {to_c(rhs, use)};")
    if slide:
        out(comment("slide the windows down one row"))
        for line in slide:
            out(line)
    out.level -= 1
    out("}")



def _temp_groups(nodes: tuple[Node, ...]) -> list:
    """``nodes`` with each run of side-by-side statements that read temporaries and share
    their guards turned into one group, a list ``[(statement, temps to assign before it)]``: an
    assignment several of them replay is emitted once, before the first that needs it.

    Safe because such statements have one domain (same loops, same guards) and the front
    end refused every temporary computed from an array written before its read; a run
    whose assignments would not come out in source order is split."""
    out: list = []
    run: list[Statement] = []

    def flush() -> None:
        group, done, last = [], set(), -1
        for st in run:
            new = [t for t in st.temps if t.version not in done]
            if new and new[0].version < last:          # out of order: start a new group
                out.append(group)
                group, done, new = [], set(), list(st.temps)
            group.append((st, new))
            done |= {t.version for t in new}
            last = max([last] + [t.version for t in new])
        if group:
            out.append(group)
        run.clear()

    for n in nodes:
        if isinstance(n, Statement) and n.temps and (not run or run[0].guards == n.guards):
            run.append(n)
            continue
        if run:
            flush()
        if isinstance(n, Statement) and n.temps:
            run.append(n)
        else:
            out.append(n)
    if run:
        flush()
    return out

# }}}

# vim: foldmethod=marker

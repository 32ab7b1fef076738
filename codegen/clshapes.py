"""Kernel shapes for GPUs beyond one point per work-item: inner loops staged in local
memory (a work-group loads a chunk of what its points read in common, as mvt's column
walk) and register blocks (several rows and columns per work-item, as matmul's), with
arrays held in registers across a loop (:func:`promotable`). :mod:`bbmm.codegen.opencl`
picks one for a nest and emits the rest of its kernel.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from bbmm.codegen.clsource import UNROLL8, Emitter, cl_ctype, cl_elem, comment, store
from bbmm.codegen.scop import (
    ArrayRef,
    LoopNode,
    Node,
    Scop,
    Statement,
    array_refs,
    default_ref,
    to_c,
)


@dataclass(frozen=True)
class Stage:
    """How :func:`emit_staged` writes a 1-D band whose body is one inner loop."""

    loop: LoopNode
    staged: tuple[tuple[ArrayRef, bool], ...]
    """The reads staged in local memory, each with True when its last (contiguous)
    subscript moves with the inner loop (a row walk: mvt's ``A[i][j]``) rather than with
    the band (a column walk: ``A[j][i]``); the staging work-items then run along it."""
    regs: dict
    """Arrays held in a register across the loop (:func:`promotable`)."""


def stage_plan(scop: Scop, band: list, body: tuple[Node, ...], written: set[str]
                ) -> Stage | None:
    """Whether the kernel can stage its inner loop's reads (None: it cannot).

    A work-item that walks a long inner loop alone (mvt's ``x2[i] += A[j][i] * y2[j]``)
    has few loads in flight: 2048 columns on an H200 sum at 80 GB/s. Staged, the
    ``BBMM_SL`` band points of a work-group still run their trips in order, each in one
    work-item, but the reads of read-only arrays that depend on both the band iterator
    and the loop's are first loaded, a chunk of ``BBMM_SC`` trips at a time, by all the
    group's work-items into local memory (0.99 ms instead of 8.3, see
    docs/performance.md). The results are bit-identical: the same operations in the
    same order on the same values (the arrays staged are not written by the nest).

    Taken: a 1-D band whose body is one innermost loop with bounds not depending on the
    band iterator (every work-item of a group runs the same chunks, as the barriers
    need), holding unguarded statements without temporaries, at least one read to stage,
    and no reference left to global memory that moves with both iterators: written
    elements must stay put in the loop (held in a register, :func:`promotable`). On one
    H200, adi's sweeps (``X[i][j]`` from ``X[i][j-1]``) staged took 0.44 s instead of
    0.30: the owners' chain of global accesses is what bounds them.
    """
    if len(band) != 1 or len(body) != 1 or not isinstance(body[0], LoopNode):
        return None
    node = body[0]
    it, jt = band[0].iterator, node.loop.iterator
    stmts = [c for c in node.children if isinstance(c, Statement)]
    if len(stmts) != len(node.children) or not stmts:
        return None
    if any(st.guards or st.temps for st in stmts):
        return None
    if any(re.search(rf"\b{re.escape(it)}\b", b) for b in (node.loop.lower, node.loop.upper)):
        return None
    regs = promotable(node)
    staged: dict[tuple, tuple[ArrayRef, bool]] = {}
    for st in stmts:
        for r in [st.lhs, *array_refs(st.rhs)]:
            names = set().union(*(x.names for x in r.index)) if r.index else set()
            if r.array in regs or it not in names or jt not in names:
                continue    # in a register, or the same for the group (y2[j]) or the loop
            if r.array in written:
                # a written element that moves with the loop (adi's X[i][j] after
                # X[i][j-1]): the trips' global accesses stay, and with one running
                # work-item in BBMM_SG they would overlap less than unstaged
                return None
            staged.setdefault((r.array, r.index), (r, jt in r.index[-1].names
                                                   and it not in r.index[-1].names))
    if not staged or len(staged) > 2:   # local memory: two float chunks are 33 KiB
        return None
    return Stage(node, tuple(staged.values()), regs)


def emit_staged(out: Emitter, scop: Scop, stage: Stage, lower, ref, fresh, g0: str,
                 it: str, outside) -> None:
    """The staged body (:func:`stage_plan`): the group's band points, ``BBMM_SC`` trips
    of the inner loop at a time, their reads staged by every work-item of the group."""
    lp = stage.loop.loop
    jt = lp.iterator
    st_names = {}
    for k, (r, _) in enumerate(stage.staged):
        st_names[(r.array, r.index)] = fresh(f"_st{k}")
    lx, ly, base, own, jc, rw, e, k, nrow = (fresh(n) for n in (
        "lx", "ly", "i0", "own", "jc", "rw", "e", "k", "nrow"))
    out(comment(f"staged: a work-group of BBMM_SL x BBMM_SG work-items owns BBMM_SL points "
                 f"of '{it}'; work-items of row 0 run them, trip after trip of loop "
                 f"'{jt}' as the source does, reading "
                 + ", ".join(default_ref(r) for r, _ in stage.staged)
                 + " from local memory where all the group staged them"))
    for (r, _), name in zip(stage.staged, st_names.values()):
        out(f"__local {cl_elem(scop.array(r.array).ctype)} {name}[BBMM_SC][BBMM_SL + 1];"
            f"  /* {default_ref(r)} */")
    out(f"const int {lx} = (int)get_local_id(0), {ly} = (int)get_local_id(1);")
    out(f"const int {base} = {g0} + (int)get_group_id(0) * BBMM_SL;")
    out(f"const int {it} = {base} + {lx};")
    out(f"const bool {own} = {ly} == 0 && !({outside(it, 0)});")
    promoted: dict[str, str] = {}
    for a, (rd, _) in stage.regs.items():
        reg = promoted[a] = fresh(f"{a}_reg")
        out(f"{lower.real(cl_ctype(scop.array(a).ctype))} {reg} = 0;")
        out(f"if ({own} && {lp.lower} <= {lp.upper})")
        out(f"  {reg} = {ref(rd)};  /* kept in a register across loop '{jt}' */")

    def use(r: ArrayRef) -> str:
        name = st_names.get((r.array, r.index))
        if name is not None:
            return f"{name}[{rw}][{lx}]"
        if r.array in promoted:
            return promoted[r.array]
        return ref(r)

    out(comment(f"loop {lp.id}: {lp.text or jt}, BBMM_SC trips at a time"))
    out(f"for (int {jc} = {lp.lower}; {jc} <= {lp.upper}; {jc} += BBMM_SC) {{")
    out.level += 1
    for (r, along), name in zip(stage.staged, st_names.values()):
        # along the row: consecutive work-items take consecutive trips of one band point
        # (A[i][j]: consecutive addresses); else consecutive band points of one trip
        lane, row = (f"{e} / BBMM_SC", f"{e} % BBMM_SC") if along else \
            (f"{e} % BBMM_SL", f"{e} / BBMM_SL")
        out(comment(f"stage {default_ref(r)} for the group's points and this chunk"))
        # a constant trip count, unrolled: each work-item's loads are in flight together
        out("#pragma unroll")
        out(f"for (int {k} = 0; {k} < (BBMM_SC + BBMM_SG - 1) / BBMM_SG; {k}++) {{")
        out.level += 1
        out(f"const int {e} = ({k} * BBMM_SG + {ly}) * BBMM_SL + {lx};")
        out(f"const int {it} = {base} + {lane}, {jt} = {jc} + {row};")
        out(f"if ({e} < BBMM_SC * BBMM_SL && !({outside(it, 0)}) && {jt} <= {lp.upper})")
        out(f"  {name}[{row}][{lane}] = {ref(r)};")
        out.level -= 1
        out("}")
    out("barrier(CLK_LOCAL_MEM_FENCE);")
    out(f"if ({own}) {{")
    out.level += 1
    out(f"const int {nrow} = min(BBMM_SC, {lp.upper} - {jc} + 1);")
    out.directive(UNROLL8)
    out(f"for (int {rw} = 0; {rw} < {nrow}; {rw}++) {{")
    out.level += 1
    out(f"const int {jt} = {jc} + {rw};")
    for st in stage.loop.children:
        out(comment(f"{st.name}: {st.text or to_c(st.rhs)}"))
        out(store(use(st.lhs), st.op, to_c(lower(st.rhs), use), scop.array(st.lhs.array).ctype))
    out.level -= 1
    out("}")
    out.level -= 1
    out("}")
    out("barrier(CLK_LOCAL_MEM_FENCE);  /* the chunk is used up before the next is staged */")
    out.level -= 1
    out("}")
    for a, (_, wr) in stage.regs.items():
        out(f"if ({own} && {lp.lower} <= {lp.upper})")
        out(f"  {ref(wr)} = {promoted[a]};")


@dataclass(frozen=True)
class Block:
    """A band body that runs as a register block (:func:`block_plan`)."""

    before: tuple[Node, ...]
    """Statements before the inner loop."""
    loop: LoopNode
    after: tuple[Node, ...]
    """Statements after it."""
    regs: dict
    """Every array the loop writes, held in a register per point (:func:`promotable`)."""


def block_plan(band: list, body: tuple[Node, ...]) -> Block | None:
    """Whether each work-item can run a block of band points with one inner loop for all
    of them (None: it cannot).

    matmul's ``C[i][j] += alpha * A[i][k] * B[k][j]`` with one point per work-item reads
    ``B[k][j]`` once per point and trip; a work-item holding ``BBMM_CO1`` rows by
    ``BBMM_CO`` columns in registers reads ``A[i][k]`` once per row and ``B[k][j]`` once
    per column of its block (on one H200 at n = 8192, 4 x 1 points: about 200 -> 172 ms;
    hand-written kernels of this form ran in 68-156 ms, depending on details the compiler
    should not care about; ``BBMM_BLOCK=1x1`` gives the one-point kernel). The result is
    bit-identical: every point runs its own statements in the source's order; only the
    order *between* points changes, and no dependence joins two points of a parallel band.

    Taken: a band whose body is statements without temporaries around exactly one inner
    loop, whose bounds do not depend on the band's iterators (every point of a work-item
    runs the same trips), holding unguarded statements without temporaries that write
    only elements that stay put across the loop (kept in registers: nothing in the loop
    writes global memory)."""
    if not band:
        return None
    at = [k for k, n in enumerate(body) if isinstance(n, LoopNode)]
    if len(at) != 1:
        return None
    node = body[at[0]]
    if any(n.temps for k, n in enumerate(body) if k != at[0]):
        return None
    stmts = node.children
    if not stmts or any(not isinstance(c, Statement) or c.guards or c.temps for c in stmts):
        return None
    for lp in band:
        if any(re.search(rf"\b{re.escape(lp.iterator)}\b", b)
               for b in (node.loop.lower, node.loop.upper)):
            return None
    regs = promotable(node)
    if not regs or any(st.lhs.array not in regs for st in stmts):
        return None
    return Block(body[:at[0]], node, body[at[0] + 1:], regs)


def emit_block(out: Emitter, scop: Scop, block: Block, band: list, tests: list[str],
                lower, ref, fresh) -> None:
    """The register-blocked body (:func:`block_plan`). ``tests`` are the C tests that
    put a row (the second band loop from the inside) or a column (the innermost) outside
    the tile or its loop."""
    nb = len(band)
    it = band[-1].iterator
    u = fresh("u")
    pts = [(u, "BBMM_CO", f"const int {it} = {fresh(it + '0')} + {u} * (int)get_local_size(0);")]
    conds = [tests[1]]
    idx, dims = f"[{u}]", "[BBMM_CO]"
    if nb >= 2:
        it1, r = band[-2].iterator, fresh("r")
        pts.insert(0, (r, "BBMM_CO1", f"const int {it1} = {fresh(it1 + '0')} + {r};"))
        conds.insert(0, tests[0])
        idx, dims = f"[{r}]{idx}", f"[BBMM_CO1]{dims}"
    inside = " && ".join(f"!({t})" for t in conds)
    lp = block.loop.loop
    trips = f"{lp.lower} <= {lp.upper}"
    regs = {a: fresh(f"{a}_reg") for a in block.regs}

    def use(rf: ArrayRef) -> str:
        return f"{regs[rf.array]}{idx}" if rf.array in regs else ref(rf)

    def each_point(lines: list[str]) -> None:
        """``lines`` at every point of the work-item's block (unrolled: the block's
        values stay in registers)."""
        for var, bound, point in pts:
            out("#pragma unroll")
            out(f"for (int {var} = 0; {var} < {bound}; {var}++) {{")
            out.level += 1
            out(point)
        for line in lines:
            out(line)
        for _ in pts:
            out.level -= 1
            out("}")

    def statements(nodes, how) -> None:
        for st in nodes:
            guard = " && ".join([inside] + [f"({g})" for g in st.guards])
            out(comment(f"{st.name}: {st.text or to_c(st.rhs)}"))
            each_point([f"if ({guard})",
                        "  " + store(how(st.lhs), st.op, to_c(lower(st.rhs), how),
                                     scop.array(st.lhs.array).ctype)])

    out(comment("register block: BBMM_CO1 rows x BBMM_CO columns (get_local_size(0) apart) "
                 "per work-item; each point runs its statements in the source's order, and "
                 f"loop '{lp.iterator}' runs once for all of them"))
    statements(block.before, ref)
    for a, reg in regs.items():
        rd = block.regs[a][0]
        out(f"{lower.real(cl_ctype(scop.array(a).ctype))} {reg}{dims};"
            f"  /* {default_ref(rd)} of each point, kept in a register across loop "
            f"'{lp.iterator}' */")
        each_point([f"if ({inside} && {trips})", f"  {reg}{idx} = {ref(rd)};"])
    full = fresh("full")
    out(f"bool {full} = true;  /* every point of the block inside the tile and its loops */")
    each_point([f"{full} = {full} && {inside};"])
    for guarded in (False, True):
        out(f"if ({full}) {{" if not guarded else "} else {")
        out.level += 1
        out(comment(f"loop {lp.id}: {lp.text or lp.iterator}"
                     + ("; only the points inside" if guarded else "")))
        out.directive("#if BBMM_UNROLL\n#pragma unroll 4\n#endif")
        out(f"for (int {lp.iterator} = {lp.lower}; {lp.iterator} <= {lp.upper}; "
            f"{lp.iterator}++) {{")
        out.level += 1
        lines = []
        for st in block.loop.children:
            line = store(use(st.lhs), st.op, to_c(lower(st.rhs), use),
                         scop.array(st.lhs.array).ctype)
            lines += [f"if ({inside})", "  " + line] if guarded else [line]
        each_point(lines)
        out.level -= 1
        out("}")
        out.level -= 1
    out("}")
    for a, reg in regs.items():
        wr = block.regs[a][1]
        each_point([f"if ({inside} && {trips})", f"  {ref(wr)} = {reg}{idx};"])
    statements(block.after, ref)


def promotable(n: LoopNode) -> dict[str, tuple[ArrayRef, ArrayRef]]:
    """Arrays to keep in a register across the innermost loop ``n``: every reference to
    the array in the loop is one and the same element, not depending on the loop's
    iterator, and at least one writes it (mvt's ``x2[i]``). ``{array: (a read, the
    write)}``. Exact: a tile's boxes of different arrays never share memory, so nothing
    else in the loop reads or writes that element (the statements are unguarded)."""
    it = n.loop.iterator
    refs: dict[str, list[tuple[ArrayRef, bool]]] = {}
    for st in n.children:
        for r in array_refs(st.rhs):
            refs.setdefault(r.array, []).append((r, False))
        if st.op != "=":
            refs.setdefault(st.lhs.array, []).append((st.lhs, False))
        refs.setdefault(st.lhs.array, []).append((st.lhs, True))
    out = {}
    for a, rs in refs.items():
        index = rs[0][0].index
        reads = [r for r, w in rs if not w]
        writes = [r for r, w in rs if w]
        if writes and reads and all(r.index == index for r, _ in rs) \
                and not any(it in x.names for x in index):
            out[a] = (reads[0], writes[-1])
    return out


# vim: foldmethod=marker

"""C front end: one kernel function of a C file -> :class:`bbmm.codegen.scop.Scop`.

.. autofunction:: parse_file
.. autofunction:: parse_source

The accepted subset: integer and floating scalar parameters, C99 array parameters
(float, double, C's integer types and ``_Bool``, typedefs of them:
:func:`bbmm.codegen.csource.elem_ctype`) with sizes affine in the integer parameters, ``for`` loops with a
constant step, counting up or down, and affine bounds (``min``/``max``/``MIN``/``MAX``/
ternaries, ``&&`` of upper bounds, or of lower bounds for a loop counting down),
``if``/``else`` (affine conditions restrict the statements' domains; others, on the
data, are evaluated at run time: :meth:`bbmm.codegen.builder.Builder.if_branches`), assignments (``=``, ``+=``, ``-=``, ``*=``, ``/=``,
``A[..]++``, ``a = b = e`` for scalars) to array elements with affine subscripts, calls
of math functions and of the file's pure helper functions (:mod:`bbmm.codegen.helpers`), scalar
temporaries (``float d1 = ...; d1 = CND(d1);`` in a loop body, C block scope, or declared
before ``#pragma scop``), and local arrays (inside loops: one copy per iteration of the
parallel loops around them, :func:`_narrow_private`). The region is the function body, or
what lies between ``#pragma scop`` and ``#pragma endscop``. Names that isl, the Python
driver or OpenCL C cannot take are renamed before the walk (:mod:`bbmm.codegen.names`).
``#pragma omp parallel for`` / ``#pragma bbmm parallel`` before a loop asserts it parallel;
with ``collapse(n)`` the n perfectly nested loops it starts are all asserted parallel.

A temporary assigned only where it is declared is a value, not memory
(:class:`bbmm.codegen.scop.Temp`): each statement that reads one replays the assignments it
needs and models their array reads as its own. That is exact when the value is the same
wherever it is read, so one computed from an array that is written before it is read (in
source order, or on a later trip of a loop that holds the read but not the assignment)
is kept in memory instead. A temporary assigned in a loop or under an affine ``if``
below its declaration carries a value across iterations (a reduction into a scalar): it
becomes a local array (:class:`bbmm.codegen.scop.Array` with ``local`` set), expanded, split
and contracted by :func:`bbmm.codegen.expand.expand_scalars`. Temporaries may not appear in
subscripts or loop bounds (those must stay affine).

"Affine" here includes C's ``/``, ``%``, ``<<`` and ``>>`` by constants (quasi-affine:
floor divisions of :class:`bbmm.codegen.scop.Affine`) of values the front end proves
non-negative, where C's rounding toward zero and isl's toward minus infinity agree. A loop
with step ``s`` other than 1 or -1 becomes the loop of ``i_s`` from 0 to
``floor((last - first) / s)``, ``i`` read as ``first + s*i_s`` (a loop counting down by 1
keeps its ``i_neg = -i``).

Everything else raises :class:`bbmm.diagnostic.UnsupportedProgramError` naming the
construct and its ``file:line:col`` in the user's file. Preprocessing, finding the
kernel in a whole program and the sizes ``main`` passes it are :mod:`bbmm.codegen.csource`'s.

This module runs the stages; the walk itself is :mod:`bbmm.codegen.builder` (blocks, loops,
statements), :mod:`bbmm.codegen.cexpr` (affine expressions, right-hand sides, accesses) and
:mod:`bbmm.codegen.temporaries` (scalar temporaries and local arrays).
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence

from pycparser import c_ast, c_generator

from bbmm.diagnostic import UnsupportedProgramError, format_coord
from bbmm.codegen.builder import Builder
from bbmm.codegen.csource import (
    ColumnMap,
    find_kernel,
    identifiers,
    main_sizes,
    read_source,
    signature,
    walk,
)
from bbmm.codegen.delinearize import FlatColumnError, delinearize
from bbmm.codegen.expand import Plan, expand_scalars
from bbmm.codegen.globals import file_arrays, file_scalars
from bbmm.codegen.inline import inline_helpers
from bbmm.codegen.names import c_text, in_c_names, rename_unsafe
from bbmm.codegen.reductions import (STRIP, describe, flat, reduction_loops, split_reductions,
                                     strips)
from bbmm.codegen.scalarize import pointer_arrays, scalarize_small_arrays
from bbmm.codegen.scop import Scop
from bbmm.codegen.structure import (
    bound_variables,
    kernel_return,
    loop_continues,
    loop_jumps,
    switches,
    while_loops,
)

_GEN = c_generator.CGenerator()


def parse_file(path: str | os.PathLike, function: str | None = None,
               defines: Mapping[str, object] | None = None,
               include_dirs: Sequence[str] = (), reassociate: bool = False,
               strip: int = STRIP) -> Scop:
    """Parse the kernel ``function`` of a C file (default: the function holding
    ``#pragma scop``, else the only function with a loop nest not named ``main``/
    ``init_*``/``print_*``); ``defines`` are extra ``-D`` macros, ``include_dirs`` the
    ``-I`` folders; ``reassociate``: floating-point sums into scalars may be split too
    (:mod:`bbmm.codegen.reductions`), which changes their order of additions; ``strip``:
    iterations of an inner loop per partial of a strip-mined reduction."""
    from bbmm.codegen.csource import read_text

    path = os.fspath(path)
    text = read_text(path)
    return parse_source(text, path, function, defines, include_dirs,
                        base_dir=os.path.dirname(path) or ".", reassociate=reassociate,
                        strip=strip)


def parse_source(text: str, filename: str = "<input>", function: str | None = None,
                 defines: Mapping[str, object] | None = None,
                 include_dirs: Sequence[str] = (), base_dir: str | None = None,
                 reassociate: bool = False, strip: int = STRIP) -> Scop:
    """Same as :func:`parse_file` for C text; ``filename`` is used in coordinates and
    quoted includes are looked up in ``base_dir`` (default: the current directory)."""
    src = read_source(text, filename, defines, include_dirs, base_dir)
    func = find_kernel(src.ast, function, filename)
    def err(msg: str, node: c_ast.Node) -> UnsupportedProgramError:
        return UnsupportedProgramError(msg, src.cmap.fix(getattr(node, "coord", None)))
    from bbmm.codegen.csource import _calls
    for call in _calls(func.body, func.decl.name):   # before helpers call it unknown
        raise err(f"'{func.decl.name}' calls itself: recursion is not supported (OpenCL C "
                  f"has none)", call)
    # helpers that take arrays or return nothing: their bodies at their calls
    func = inline_helpers(func, {f.decl.name: f for f in src.ast.ext
                                 if isinstance(f, c_ast.FuncDef) and f is not func
                                 and f.decl.name != "main"}, err)
    # switch as if/else; 'if (c) continue;' at the top of a loop body: the rest in its else
    # a counting while loop as its for loop
    # polycc's 'lbp = max(...); for (t2 = lbp; ...)': the bound's expression in the loop
    func = loop_continues(switches(bound_variables(while_loops(func))))
    # file-scope arrays the kernel uses (float A[N][N]; at the top): more parameters
    func, globs = file_arrays(src.ast, func, err)
    # file-scope scalars: constants written in, those main sets more parameters
    func, scalar_globs = file_scalars(src.ast, func, err)
    globs += scalar_globs
    # a kernel returning a value: the value in result[0], a parameter of the model; a
    # return inside a loop: a flag, and a break of each loop around it
    func, returns = kernel_return(func, identifiers(func), err)
    # any other break or continue: a flag the statements after the jump test
    func, stops = loop_jumps(func, err)
    with warnings.catch_warnings(record=True) as kept:
        warnings.simplefilter("always")
        scop = _modelled(func, filename, src, stops, globs, returns)
    # a max or min into a scalar across a loop: a partial per iteration, where the loop
    # then runs in parallel (bbmm.codegen.reductions; the result is the same, bit for bit,
    # except for the floating-point sums that reassociate lets it split)
    scop, kept = _split_reductions(func, scop, kept, filename, src, stops, globs, returns,
                                   reassociate, strip)
    for w in kept:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return scop


def _split_reductions(func: c_ast.FuncDef, scop: Scop, kept: list, filename: str, src,
                      stops: frozenset[str], globs: list, returns: str | None,
                      reassociate: bool = False, width: int = STRIP
                      ) -> tuple[Scop, list]:
    """``scop`` (the model of ``func``, built with the warnings ``kept``) with the
    reductions :func:`bbmm.codegen.reductions.reduction_loops` finds split where that pays
    (:func:`_pays`), outermost loop first, strip-mined where possible; and the warnings
    of the build kept. ``Scop.reductions`` says what was split."""
    chosen: dict[int, tuple[tuple[str, ...], bool]] = {}
    inside: list[int] = []
    loops = [n for n in walk(func.body) if isinstance(n, c_ast.For)]
    for k, names in reduction_loops(func, reassociate):
        if any(loops[k] in walk(loops[j]) for j in inside):
            continue
        for strip in (True, False) if strips(func, k, width) and not flat(func, k, names,
                                                                   reassociate) \
                else (False,):
            trial = {**chosen, k: (names, strip)}
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                try:
                    rewritten, parts = split_reductions(func, trial, reassociate, width)
                    split = _modelled(rewritten, filename, src, stops, globs, returns)
                except UnsupportedProgramError:
                    continue
            if _pays(split, *parts[k]):
                chosen, scop, kept = trial, split, said
                inside.append(k)
                break
    notes = []
    for k, (names, strip) in chosen.items():
        text, coord = describe(func, k, names, strip, reassociate, width)
        where = format_coord(src.cmap.fix(coord))
        notes.append(f"{where}: {text}" if where else text)
    return (scop.copy(reductions=tuple(notes)) if notes else scop), kept


def _pays(scop: Scop, depth: int, parts: set[str]) -> bool:
    """Whether a loop at ``depth`` or deeper around an assignment of the partials ``parts``
    (:func:`bbmm.codegen.reductions.split_reductions`) is parallel in ``scop``, and none of the
    ``depth`` loops around the split one is: inside a parallel loop, the split loop would
    not join the kernel's band (the combinations after it make the nest imperfect), and
    its work-items would fold their partials one after the other."""
    from bbmm.codegen.deps import parallel_loops

    par = parallel_loops(scop)
    mine = [st for st in scop.statements if st.write.array in parts]
    return any(par[lid] for st in mine for lid in st.loops[depth:]) and not any(
        par[lid] for st in mine for lid in st.loops[:depth])


def _modelled(func: c_ast.FuncDef, filename: str, src, stops: frozenset[str], globs: list,
              returns: str | None) -> Scop:
    """The scop of ``func`` (the kernel after the structural passes of
    :func:`parse_source`): pointers as arrays, names made safe, flat arrays as rows."""
    taken = identifiers(func)
    # the file's other functions, which statements may call: their kernels' copies are
    # OpenCL C, so their parameters and locals get model names too (half -> half_)
    defs = {f.decl.name: rename_unsafe(f, identifiers(f))[0] for f in src.ast.ext
            if isinstance(f, c_ast.FuncDef) and f is not func and f.decl.name != "main"}
    # float *x used as x[i] or *x only: the array float x[], sized by its subscripts
    func, pointers, tables = pointer_arrays(func)
    # names isl, the Python driver or OpenCL cannot take get model names (iter -> iter_)
    func, c_names = rename_unsafe(func, taken)
    taken |= set(c_names)
    # a flat array subscripted A[i*n + j] everywhere: the rows A[][n] at [i][j]
    ints = [p.name for p in signature(func) if p.kind == "int"]
    flat, rows = delinearize(func, ints)
    try:
        scop, func = _scop_of(flat, filename, src.cmap, defs, taken, c_names, rows, stops)
    except FlatColumnError as e:
        # a column the first reading puts below 0 (A[i*n + n - 1 - j]: row i + 1 at
        # -1 - j) may be a column of the row above (row i at n - 1 - j); check_rows
        # proves the second reading or refuses it as it did the first
        wrapped, rows = delinearize(func, ints, wrap=True)
        if _GEN.visit(wrapped) == _GEN.visit(flat):
            raise
        try:
            scop, func = _scop_of(wrapped, filename, src.cmap, defs, taken, c_names, rows,
                                  stops)
        except FlatColumnError:
            raise e from None
    sizes = main_sizes(src.ast, func)
    return scop.copy(param_defaults=tuple((p, sizes[p]) for p in scop.int_params
                                          if p in sizes), c_names=tuple(c_names.items()),
                     rows=tuple(sorted(rows.items())),
                     pointers=tuple(sorted(c_names_of(pointers | tables, c_names))),
                     tables=tuple(sorted(c_names_of(tables, c_names))),
                     globals=tuple(c_names_of(globs, c_names)),
                     returns=c_names_of([returns], c_names)[0] if returns else None)


def _scop_of(func: c_ast.FuncDef, filename: str, cmap: ColumnMap,
             defs: Mapping[str, c_ast.FuncDef], taken: set[str], c_names: Mapping[str, str],
             rows: Mapping[str, tuple[str, ...]], stops: frozenset[str] = frozenset()
             ) -> tuple[Scop, c_ast.FuncDef]:
    """The scop of ``func`` and the function it was built from: with the small arrays
    used element by element as scalars where the model takes them, else as written."""
    # float w[3] used as w[0], w[1], w[2] only: the scalars w_0, w_1, w_2, unless the
    # model refuses them where it takes the array (a scalar read before any assignment
    # is refused; an array element holds whatever C left there)
    scalar_func, elements = scalarize_small_arrays(func, taken)
    if elements:
        speak = {**c_names, **{s: c_text(e, c_names) for s, e in elements.items()}}
        try:
            return _model(scalar_func, filename, cmap, defs, taken | set(elements), speak,
                          rows, stops), scalar_func
        except UnsupportedProgramError:
            pass
    return _model(func, filename, cmap, defs, taken, c_names, rows, stops), func


def c_names_of(names, c_names: Mapping[str, str]) -> list[str]:
    """The model names of C names (those :func:`bbmm.codegen.names.rename_unsafe` renamed)."""
    model = {c: m for m, c in c_names.items()}
    return [model.get(n, n) for n in names]


def _model(func: c_ast.FuncDef, filename: str, cmap: ColumnMap,
           defs: Mapping[str, c_ast.FuncDef], taken: set[str], speak: Mapping[str, str],
           rows: Mapping[str, tuple[str, ...]], stops: frozenset[str] = frozenset()) -> Scop:
    """The scop of ``func``: built, scalars carried across iterations expanded
    (:func:`bbmm.codegen.expand.expand_scalars`), local arrays declared in loops narrowed
    (:func:`_narrow_private`); errors and warnings in the C names of ``speak``; ``rows``:
    the flat arrays :func:`bbmm.codegen.delinearize.delinearize` read as rows; ``stops``: the
    break flags of :func:`bbmm.codegen.structure.loop_jumps`."""
    private_plan: dict[str, tuple[int, ...]] = {}
    private_decl: dict[str, tuple[int, ...]] = {}

    def build(plan: Plan, analysis: bool = False, unpragma: frozenset[int] = frozenset()
              ) -> Scop:
        b = Builder(filename, cmap, plan, analysis, unpragma, defs, private_plan, rows, stops)
        out = b.build(func)
        private_decl.update(b.private_decl)
        return out
    with in_c_names(speak):
        scop = expand_scalars(build, taken)
        if private_decl:
            scop = _narrow_private(scop, build, taken, private_plan, private_decl)
    return scop


def _narrow_private(scop: Scop, build, taken: set[str], private_plan: dict,
                    private_decl: Mapping[str, tuple[int, ...]]) -> Scop:
    """Local arrays declared inside loops, first one copy per iteration of every loop
    around them, get one per iteration of the parallel ones only (a time loop around a
    sweep's ``float row[n]`` per row would otherwise multiply its storage by the steps,
    and make every step's boxes new), when the parallel loops stay the same (checked, as
    for scalars in :func:`bbmm.codegen.expand.expand_scalars`, step 4)."""
    from bbmm.codegen.deps import parallel_loops

    par = parallel_loops(scop)
    narrow = {a: tuple(lid for lid in loops if par[lid]) for a, loops in private_decl.items()}
    if all(narrow[a] == loops for a, loops in private_decl.items()):
        return scop
    private_plan.update(narrow)                # build() reads it
    narrowed = expand_scalars(build, taken)
    if parallel_loops(narrowed) == par:
        return narrowed
    private_plan.clear()
    return expand_scalars(build, taken)

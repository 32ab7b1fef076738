"""The whole compiler: C file -> model -> plan -> boxes and flow sets -> kernels -> driver.

:func:`compile_program` runs the stages in the paper's order and returns a
:class:`Program`; :func:`write_program` puts the OpenCL kernels and the host driver
in a folder; :func:`load_driver` compiles (cached by content) and imports the driver.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import warnings
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping, Sequence

from bbmm.codegen.boxes import extract_initial_bounding_boxes
from bbmm.codegen.deps import Plan, dependences, plan as make_plan
from bbmm.codegen.flow import edge_writers, plan_flow
from bbmm.codegen.frontend import parse_file
from bbmm.codegen.host import NestCode, generate_host
from bbmm.codegen.names import c_text, in_c_names
from bbmm.codegen.opencl import generate_kernel
from bbmm.codegen.schedule import SCHEDULES, NotRescheduled, Rescheduled, reschedule
from bbmm.codegen.reductions import STRIP
from bbmm.codegen.scop import Scop
from bbmm.codegen.tiling import tile_bound_names, tile_nest
from bbmm.diagnostic import BBMMWarning

MAX_SLOTS = 4


@dataclass(frozen=True)
class CompileOptions:
    """How :func:`compile_program` compiles: one frozen object, built once where the
    command line or the API is read (:meth:`from_env` for the environment's part) and
    passed down; the compiler reads no setting of its own."""

    schedule: str = "auto"
    """The loops as written (``as-written``), isl's schedule (``isl``, where it is legal
    and can be written as loops), or ``auto``: isl's where the loops as written leave some
    statement without a parallel loop or with parallel loops only inside serial ones, and
    isl's schedule does better there (:func:`better`; ``--schedule``)."""
    reassociate: bool = False
    """Floating-point sums into scalars may be split over a loop's iterations, which then
    run in parallel, in another order of additions (:mod:`bbmm.codegen.reductions`;
    ``--reassociate``)."""
    strip: int = STRIP
    """Iterations of an inner loop per partial of a strip-mined reduction
    (``$BBMM_STRIP``, ``--tune strip=N``; :data:`bbmm.codegen.reductions.STRIP`)."""
    split_all: bool = False
    """Every access takes the split (several-box) path in the kernels: the worst case of
    ``scripts/exp_split.py``."""
    fp64: bool = True
    """Kernels may use ``double`` (a device without it runs ``float`` programs only)."""

    def __post_init__(self) -> None:
        from bbmm.diagnostic import UsageError

        if self.schedule not in SCHEDULES:
            raise UsageError(f"schedule must be one of {', '.join(SCHEDULES)}, "
                             f"got {self.schedule!r}")
        strip = self.strip
        if isinstance(strip, bool) or not isinstance(strip, int) or strip < 1:
            raise UsageError(f"strip must be an integer of at least 1, got {strip!r}")

    @classmethod
    def from_env(cls, tune: Sequence[str] | Mapping[str, object] | None = None
                 ) -> CompileOptions:
        """The options the ``$BBMM_*`` variables set (``$BBMM_STRIP``), with ``tune``
        (``--tune NAME=VALUE`` items, :func:`bbmm.settings.parse_tune`) over them; the
        rest keep their defaults, for the caller to set from its own options."""
        from bbmm import settings

        r = settings.Reader(settings.parse_tune(tune))
        return cls(strip=r.integer("BBMM_STRIP", STRIP, lo=1))


@dataclass(frozen=True)
class Program:
    """A compiled C kernel: its model, plan, per-nest boxes/flow/kernels, and sources."""

    path: str
    scop: Scop
    plan: Plan
    nests: tuple[NestCode, ...]
    slots: Mapping[str, int]
    kernel_source: str
    host_source: str
    schedule: str = "as-written"
    """The loop order taken: ``as-written``, or ``isl`` (isl's scheduler,
    :mod:`bbmm.codegen.schedule`)."""
    rescheduled: Rescheduled | None = None
    """isl's schedule when :attr:`schedule` is ``isl``."""
    schedule_note: str = ""
    """Why that order (``bbmm compile`` shows it)."""
    reassociate: bool = False
    """Floating-point sums into scalars were allowed in another order (``--reassociate``);
    :attr:`Scop.reductions` says which were split."""

    def summary(self) -> str:
        """What ``bbmm compile`` prints: arrays, serial loops, bands, boxes per access."""
        s = self.scop
        out = [f"{self.path}: kernel {s.function}({', '.join(s.args)})"]
        out.append("  arrays: " + ", ".join(f"{a.ctype} {a.name}[{']['.join(a.dims)}]"
                                           for a in s.param_arrays))
        if s.c_names:   # below, the generated code and the dumps use the model names
            from bbmm.codegen.names import unsafe
            out.append("  renamed: " + ", ".join(
                f"{c} -> {m} ({unsafe(c)})"
                for m, c in s.c_names))
        if s.returns:    # the kernel's value: one more array of the model
            ret = next(a for a in s.arrays if a.name == s.returns)
            out.append(f"  returns: {ret.ctype}, stored in {s.returns}[0]")
        if s.globals:    # the C file's variables the kernel uses: arguments of the model
            arrs = {a.name for a in s.param_arrays}
            for kind, names in (("arrays", [g for g in s.globals if g in arrs]),
                                ("scalars", [g for g in s.globals if g not in arrs])):
                if names:
                    out.append(f"  file-scope {kind} (taken as arguments): "
                               + ", ".join(names))
        if s.inferred:   # arrays bbmm shaped itself (pointers, flat, B[][n]): say how
            rows, shaped = dict(s.rows), []
            for a in s.inferred:
                why = (["row pointers" if a in s.tables else "pointer"]
                       if a in s.pointers else []) + \
                    ([f"flat, rows of {rows[a][0]}" if len(rows[a]) == 1 else
                      f"flat, blocks of {' x '.join(rows[a])}"] if a in rows else [])
                shaped.append(f"{a} ({', '.join(why)})" if why else a)
            out.append("  sized from their subscripts: " + ", ".join(shaped))
        local = [a for a in s.arrays if a.local]
        if local:   # expanded scalars and C local arrays: the runtime's, not the caller's
            out.append("  local arrays: " + ", ".join(
                f"{a.ctype} {a.name}[{']['.join(a.dims)}]"
                + (f" (for '{a.local}')" if a.local != a.name else "") for a in local))
        for note in s.reductions:   # a max or min split over a loop's rows
            out.append(f"  reduction split: {note}")
        if self.reassociate and not any("reassociated" in n for n in s.reductions):
            out.append("  reassociate: no floating-point sum split (none whose loop "
                       "turns parallel)")
        out.append(f"  schedule: {self.schedule}"
                   + (f" ({self.schedule_note})" if self.schedule_note else ""))
        if self.rescheduled is not None:
            for line in self.rescheduled.lines():
                out.append(f"    {c_text(line, dict(s.c_names))}")
            for lp in s.loops():
                par = "parallel" if lp.id in self.plan.parallel else "serial"
                out.append(f"    loop {lp.id}: {lp.text} ({par})")
        ser = [s.loop(i).iterator for i in self.plan.serial_loops]
        out.append(f"  serial loops (host): {', '.join(ser) or 'none'}")
        for nc in self.nests:
            t = nc.boxes.tiling
            band = ", ".join(t.band) or "none (one work-item)"
            out.append(f"  nest {nc.nest.id} ({', '.join(nc.nest.statements)}): parallel band "
                       f"[{band}], tiled on {t.band[0] if t.band else '-'}, host loops "
                       f"[{', '.join(t.host) or '-'}]")
            for ab in nc.boxes.accesses:
                box = ", ".join(f"{lo}..{hi}" for lo, hi in zip(ab.lo, ab.hi))
                flags = [ab.kind] + (["cleanup"] if ab.cleanup else []) + \
                    ([] if ab.exact else ["not exact"])
                out.append(f"    {ab.text:<16} [{box}]  ({', '.join(flags)})")
            for af in nc.flow.arrays:
                fo = af.flow_out
                box = ", ".join(f"{lo}..{hi}" for lo, hi in zip(fo.lo, fo.hi))
                out.append(f"    flow-out {af.array}: [{box}]{'' if fo.exact else ' (bounding box)'}")
        return "\n".join(out)


def out_of_bounds(scop: Scop, at: Mapping[str, int] | None = None) -> list[str]:
    """Accesses that may fall outside their array (the C program's behaviour is then
    undefined, and so is bbmm's result): one ``file:line:col: ...`` message each.

    ``{ S0[i] -> A[a] }`` restricted to the domain, minus
    ``[n] -> { A[a] : 0 <= a < extent }``, must be empty for every parameter value of the
    scop's context, or only for the values ``at`` (PolyBench's loops to ``n`` in arrays of
    the constant size ``N`` are in bounds for the ``n`` that ``main`` passes, not for all).
    """
    from bbmm.diagnostic import format_coord

    bounds = {a.name: scop.bounds(a.name) for a in scop.arrays}
    context = scop.context if not at else scop.context.intersect(scop.params_set(at))
    out = []
    for acc in scop.accesses():
        data = acc.relation.range().intersect_params(context)
        bad = data.subtract(bounds[acc.array])
        if not bad.is_empty():
            where = format_coord(acc.coord)
            out.append(f"{where + ': ' if where else ''}{acc.text} may be out of the bounds of "
                       f"{acc.array} (e.g. {bad.sample_point()}); the C program's behaviour, "
                       f"and bbmm's result, are then undefined")
    return [c_text(m, dict(scop.c_names)) for m in out]


def no_parallel_loop(scop: Scop) -> str:
    """The warning for a kernel none of whose loops is parallel: it still runs, honestly
    but uselessly for BBMM, as a single work-item on one device."""
    from bbmm.diagnostic import format_coord

    where = format_coord(scop.loops()[0].coord)
    return (f"{where + ': ' if where else ''}no loop of {scop.function} is parallel: it runs "
            f"as a single work-item on one device (BBMM has no tiles to distribute)")


def compile_program(path: str | os.PathLike, function: str | None = None,
                    defines: Mapping[str, str] | None = None, *,
                    include_dirs: Sequence[str] = (), options: CompileOptions | None = None,
                    split_all: bool | None = None, fp64: bool | None = None,
                    schedule: str | None = None, reassociate: bool | None = None,
                    strip: int | None = None) -> Program:
    """Compile one C kernel function (see the module docstring) with ``options`` (None:
    the defaults; the environment is not read here: :meth:`CompileOptions.from_env`);
    ``split_all``, ``fp64``, ``schedule``, ``reassociate`` and ``strip``, where given,
    replace the fields of ``options`` of the same names."""
    from bbmm import __version__

    given = {k: v for k, v in (("split_all", split_all), ("fp64", fp64),
                               ("schedule", schedule), ("reassociate", reassociate),
                               ("strip", strip)) if v is not None}
    o = replace(options or CompileOptions(), **given)
    path = str(path)
    defs = dict(defines or {})
    key = (path, _preprocessed(path, defs, include_dirs), function, o)
    hit = _COMPILED.get(key)
    if hit is None:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            scop = parse_file(path, function=function, defines=defs,
                              include_dirs=include_dirs, reassociate=o.reassociate,
                              strip=o.strip)
            with in_c_names(dict(scop.c_names)):   # errors and warnings speak of the C names
                prog = _compile_scop(scop, path, o.split_all, o.fp64, __version__,
                                     o.schedule, o.reassociate)
        hit = _COMPILED[key] = (prog, list(said))
        if len(_COMPILED) > COMPILED_SIZE:
            _COMPILED.popitem(last=False)
    else:
        _COMPILED.move_to_end(key)
    prog, said = hit
    for w in said:   # what compiling it said, on every compile of it
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return prog


COMPILED_SIZE = 256
"""Programs :func:`compile_program` keeps per process (the least recently used goes): a
few hundred kilobytes each (floyd.c 0.09 MB, strides.c 0.27 MB of Python objects)."""
_COMPILED: OrderedDict[Any, tuple[Program, list]] = OrderedDict()
"""Programs compiled in this process, by what they were compiled from: the file's path
(its coordinates in messages), its text after the preprocessor (the included files and
``-D`` macros in it), the function and the options. A kernel compiled again in one
process (``bbmm.compile`` in a notebook, a run on one device then on four) is not
compiled again: the compile of tests/kernels/quasi/strides.c takes 12 s, of
tests/kernels/reductions.c 31 s. Programs are frozen; each run loads its own driver."""


def _preprocessed(path: str, defines: Mapping[str, str], include_dirs: Sequence[str]) -> str:
    """The text of ``path`` after the preprocessor (:func:`bbmm.codegen.csource.preprocessed`),
    as :func:`parse_file` reads it."""
    from bbmm.codegen.csource import preprocessed, read_text
    return preprocessed(read_text(path), path, defines, include_dirs,
                        base_dir=os.path.dirname(path) or ".")


def _shape(scop: Scop, plan: Plan) -> tuple[int, int]:
    """How badly a plan leaves its statements sequential, smaller is better: the loops
    that run inside one work-item of a kernel without a parallel band, then the deepest
    nest of serial host loops around a parallel one."""
    alone = sum(len(n.inner_loops) for n in plan.nests if not n.band)
    host = max((len(n.host_loops) for n in plan.nests if n.band), default=0)
    return alone, host


def better(scop: Scop, plan: Plan, new_scop: Scop, new_plan: Plan) -> bool:
    """isl's schedule improves on the loops as written: fewer loops run inside a single
    work-item, or as many and fewer serial host loops around the parallel ones."""
    return _shape(new_scop, new_plan) < _shape(scop, plan)


def _choose(scop: Scop, deps, plan: Plan, schedule: str
            ) -> tuple[Scop, Plan, Rescheduled | None, str]:
    """The program to compile, its plan, isl's schedule if it is taken, and why."""
    if schedule == "as-written" or not scop.loops():
        return scop, plan, None, ""
    if schedule == "auto" and _shape(scop, plan) == (0, 0):
        return scop, plan, None, "the loops as written have outer parallel loops"
    try:
        res = reschedule(scop, deps)
    except NotRescheduled as e:
        return scop, plan, None, f"isl's schedule not taken: {e}"
    new_plan = make_plan(res.scop)
    if schedule == "auto" and not better(scop, plan, res.scop, new_plan):
        return scop, plan, None, "isl's schedule is no more parallel"
    why = "requested" if schedule == "isl" else "more parallel than the loops as written"
    return res.scop, new_plan, res, why


def _compile_scop(scop: Scop, path: str, split_all: bool, fp64: bool, version: str,
                  schedule: str = "auto", reassociate: bool = False) -> Program:
    for msg in out_of_bounds(scop, dict(scop.param_defaults)):
        warnings.warn(msg, BBMMWarning, stacklevel=3)
    deps = dependences(scop)
    plan = make_plan(scop)
    scop, plan, res, note = _choose(scop, deps, plan, schedule)
    if res is not None:
        deps = dependences(scop)
    if scop.loops() and not plan.parallel:
        warnings.warn(no_parallel_loop(scop), BBMMWarning, stacklevel=3)
    lb, ub = tile_bound_names(scop)
    counts: dict[str, int] = {}
    tilings = [tile_nest(scop, n, lb, ub, loose_divs=res is not None) for n in plan.nests]
    boxes = [extract_initial_bounding_boxes(scop, t) for t in tilings]
    for nb in boxes:
        for a in nb.arrays:
            # accesses with the same box (blackscholes' S[i], read by several
            # statements) share one slot: a tile's boxes are disjoint
            counts[a] = max(counts.get(a, 1), len({(b.lo, b.hi) for b in nb.distinct(a)}))
    # room for a box split around resident copies (mvt's column block around its row
    # block: 3 pieces) without falling back to a duplicate whole box
    slots = {a.name: min(MAX_SLOTS, max(counts.get(a.name, 1), 3 if len(a.dims) > 1 else 2))
             for a in scop.arrays}
    flows = plan_flow(scop, plan, tuple(tilings), deps)
    nests = []
    kernels = []
    for n, t, nb, fl in zip(plan.nests, tilings, boxes, flows):
        ks = generate_kernel(scop, plan, n, slots, split_all=split_all, fp64=fp64,
                             share=nb.shared())
        for a, ids in zip(ks.arrays, ks.access_ids):
            # the kernel's A_sel arguments follow the order of the runtime's initial boxes,
            # one per distinct box
            want = tuple(ab.access_id for ab in nb.distinct(a))
            assert tuple(ids) == want, (a, ids, want)
        kernels.append(ks.source)
        nests.append(NestCode(n, nb, fl, ks, edge_writers(scop, n, t, deps)))
    kernel_source = "\n".join(kernels)
    taken = "isl" if res is not None else "as-written"
    host = generate_host(scop, plan, nests, kernel_source, slots, os.path.basename(path),
                         version, taken, reassociate)
    return Program(path, scop, plan, tuple(nests), slots, kernel_source, host, taken, res,
                   note, reassociate)


def write_program(prog: Program, out_dir: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``<function>.cl`` and ``<function>_host.py`` into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cl = out / f"{prog.scop.function}.cl"
    py = out / f"{prog.scop.function}_host.py"
    cl.write_text(prog.kernel_source)
    py.write_text(prog.host_source)
    return cl, py


def cache_dir() -> Path:
    """The folder of cached drivers (:func:`bbmm.cache.directory`)."""
    from bbmm.cache import directory
    return directory("drivers")


def load_driver(prog: Program) -> ModuleType:
    """Import the host driver of ``prog``.

    The driver is written once to the cache, keyed by its content (which holds the C
    file's base name, never its path), for tracebacks and to run on its own; it is
    executed from the source just generated, never from what the cache holds. An entry
    that differs from that source (truncated, edited) is rewritten with a note."""
    from bbmm.cache import note, store

    data = prog.host_source.encode()
    h = hashlib.sha256(data).hexdigest()[:16]
    p = cache_dir() / f"{prog.scop.function}_{h}.py"
    try:
        got: bytes | None = p.read_bytes()
    except OSError:
        got = None
    if got != data:
        if got is not None:
            why = "empty" if not got else "its content does not match its key"
            note(f"cache entry {p.name} is damaged ({why}); rebuilding it")
        store(p, data, hashed=False)    # a Python file: checked against the source
    else:
        try:
            os.utime(p)          # recently used: pruned last
        except OSError:
            pass
    return load_module(p, prog.host_source)


def load_module(p: str | os.PathLike, source: str | None = None) -> ModuleType:
    """Import the driver file ``p``, or run ``source`` as that module (the file then only
    names it, for tracebacks)."""
    name = f"_bbmm_driver_{Path(p).stem}"
    if source is None:
        spec = importlib.util.spec_from_file_location(name, p)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod
    mod = ModuleType(name)
    mod.__file__ = os.fspath(p)
    sys.modules[name] = mod
    exec(compile(source, os.fspath(p), "exec"), mod.__dict__)
    return mod

"""Scalar temporaries and local arrays in the front end.

A temporary assigned only where it is declared (``float d1 = ...;``) is a value: each
statement that reads it replays the assignments it needs (:meth:`Temporaries.replay`) and
models their array reads as its own, so no memory holds it; one computed from an array
written before it is read is kept in memory instead (:meth:`Temporaries.temp_writes`,
:meth:`Temporaries.version_of`), as one carried across iterations is. A temporary
carried across iterations (a reduction into a scalar) raises
:class:`bbmm.codegen.expand.NeedsExpansion` and becomes a local array, subscripted by the loops
:func:`bbmm.codegen.expand.expand_scalars` gives it copies over. Local arrays declared in the
function (durbin's ``double z[n];``) or inside loops (``float w[3];`` per point: one copy
per iteration of the parallel loops around it) are arrays no one reads in or writes back
(:meth:`Temporaries.local_arrays`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import islpy as isl
from pycparser import c_ast

from bbmm.diagnostic import UnsupportedProgramError, format_coord
from bbmm.codegen.cexpr import Ctx, Cur, Ref, map_refs
from bbmm.codegen.csource import OPENCL_RESERVED, elem_ctype, identifiers, scalar_type
from bbmm.codegen.expand import NeedsExpansion, affine_bound
from bbmm.codegen.scop import (
    Affine,
    Array,
    ArrayRef,
    Expr,
    Num,
    Temp,
)


@dataclass(eq=False)
class Temporary:
    """A scalar temporary in scope: where it was declared and its latest assignment."""

    name: str
    unique: str
    ctype: str
    coord: object
    iters: tuple[str, ...]
    guards: tuple[str, ...]
    loops: tuple[int, ...]
    version: int | None = None
    expand: tuple[int, ...] | None = None
    """Loop ids of a temporary carried across iterations: it is then the local array
    ``unique[...]`` with one element per iteration of these loops (scalar expansion)."""
    webs: dict = field(default_factory=dict)
    """Statement name -> ``(array, loop ids)`` where the temporary's webs have arrays of
    their own (:func:`bbmm.codegen.expand.expand_scalars`)."""
    outside: bool = False
    when: int = 0
    """How many run-time conditions (:attr:`bbmm.codegen.cexpr.Ctx.when`) enclose the
    declaration: an assignment under more is guarded by the others only."""
    """Declared before ``#pragma scop``: whatever value it has there is not modelled."""


@dataclass(eq=False)
class Version:
    """One assignment of a temporary; ``expr``'s array references are ``Ref``s, numbered
    -1, -2, ... in :attr:`ArrayRef.access`."""

    seq: int
    temp: Temporary
    op: str
    expr: Expr
    refs: tuple[Ref, ...]
    deps: frozenset[int]
    """Assignments (of any temporary) whose values this one reads."""
    arrays: frozenset[str]
    """Arrays the value is computed from, through ``deps`` too."""
    text: str
    coord: object = None
    clobbered: bool = False
    """An array in :attr:`arrays` has been written since."""
    readers: list = field(default_factory=list)
    """The loop ids around each statement that reads the value."""


class Temporaries:
    """Temporaries and local arrays: mixed into :class:`bbmm.codegen.builder.Builder`, whose
    walk calls them at declarations, assignments and reads."""

    def local_decl(self, d: c_ast.Decl, ctx: Ctx, outside: bool = False) -> str | None:
        """``float t = e;`` declares a scalar temporary (``int i, j;`` may also declare
        iterators of later loops). ``outside``: declared before ``#pragma scop`` (its
        initialiser, if any, is not modelled). Returns the statement that initialises an
        expanded temporary, else None."""
        if isinstance(d.type, c_ast.ArrayDecl):
            self.local_array(d, ctx)
            return None
        if isinstance(d.type, c_ast.PtrDecl):
            raise self.err(f"local pointer '{d.name}' not supported: subscript the array "
                           f"parameters instead", d)
        ctype = scalar_type(d.type)
        if ctype is None:
            raise self.err(f"local variable '{d.name}' has an unsupported type (scalar "
                           f"temporaries must be float, double or an integer type)", d)
        if any(s in ("static", "extern") for s in d.storage or ()):
            raise self.err(f"{d.storage[0]} local variable '{d.name}' not supported (its value "
                           f"would outlive one iteration)", d)
        if d.name in self.int_params or d.name in self.float_params or d.name in self.arrays \
                or d.name in ctx.iters:
            raise self.err(f"local variable '{d.name}' shadows a parameter or an enclosing "
                           f"loop's iterator", d)
        if isinstance(d.init, c_ast.InitList):
            raise self.err(f"brace initialiser of scalar '{d.name}' not supported", d.init)
        unique, k = d.name, 0
        # the name in generated kernels: not an OpenCL word ('half'), not another name
        while unique in self.temp_names or unique in OPENCL_RESERVED \
                or (k and unique in self.idents):
            k += 1
            unique = f"{d.name}_{k}"
        self.temp_names.add(unique)
        t = Temporary(d.name, unique, ctype, self.coord(d), ctx.iters, ctx.guards,
                  tuple(lp.id for lp in ctx.loops), outside=outside, when=len(ctx.when))
        if unique in self.plan:
            t.expand, t.webs = self.plan[unique]
        self.temps[d.name] = t
        if t.expand is not None and elem_ctype(t.ctype.split()) is None:
            raise self.err(f"temporary '{d.name}' of type '{t.ctype}' is carried across "
                           f"iterations: bbmm keeps such a value in an array of its own "
                           f"(scalar expansion), and arrays hold float, double, integers "
                           f"or _Bool", d)
        if (d.init is None or outside) and ctype not in ("float", "double"):
            self.seen_iters.add(d.name)          # 'int i, j;' may declare iterators
        if d.init is None or outside:
            return None
        if t.expand is not None:
            return self.statement(c_ast.Assignment("=", c_ast.ID(d.name, d.coord), d.init,
                                                   d.coord), ctx)
        self.new_version(t, "=", d.init, ctx, d)
        return None

    def local_array(self, d: c_ast.Decl, ctx: Ctx) -> None:
        """``double z[n];`` outside every loop (durbin's): a local array, one copy for the
        whole run; like an array parameter but never read in nor written back."""
        if any(s in ("static", "extern") for s in d.storage or ()) or d.init is not None:
            what = "initialised" if d.init is not None else d.storage[0]
            raise self.err(f"{what} local array '{d.name}' not supported: pass it to the "
                           f"kernel function as an array parameter", d)
        if d.name in self.int_params or d.name in self.float_params or d.name in self.arrays \
                or d.name in self.temps or d.name in self.private or d.name in ctx.iters:
            raise self.err(f"local array '{d.name}' shadows a parameter or another local", d)
        if ctx.loops:
            self.private_array(d, ctx)
            return
        self.arrays[d.name] = replace(self.array_param(d), local=d.name)

    def private_array(self, d: c_ast.Decl, ctx: Ctx) -> None:
        """``float w[3];`` inside loops: C gives every iteration of them a fresh array, so
        it becomes the local array ``w[i][j][3]``, one copy per iteration of the loops in
        :attr:`private_plan` (all that enclose it unless
        :func:`bbmm.codegen.frontend._narrow_private` narrowed them to the parallel ones:
        reusing a copy across a serial loop's iterations only adds dependences that loop
        carries anyway)."""
        name, k = d.name, 0
        while name in self.privates or name in self.arrays or name in self.temp_names \
                or (k and name in self.idents):
            k += 1
            name = f"{d.name}_{k}"
        self.temp_names.add(name)
        decl = tuple(lp.id for lp in ctx.loops)
        loops = self.private_plan.get(name, decl)
        t = d.type
        while isinstance(t, c_ast.ArrayDecl):
            its = sorted(n for n in identifiers(t.dim) if self.iterator(n, ctx.iters)) \
                if t.dim is not None else []
            if its:
                raise self.err(f"the size of local array '{d.name}' depends on the loop "
                               f"iterator '{its[0]}': bbmm sizes arrays by the integer "
                               f"parameters; declare it with a size every iteration fits "
                               f"in", t.dim)
            t = t.type
        declared = self.array_param(d)
        for lid in loops:                       # sized by affine loop ranges
            self.range_of(lid, f"local array '{d.name}' gets a copy per iteration of", d)
        self.private[d.name] = (name, loops, declared)
        self.privates[name] = (declared, loops)
        self.private_decl[name] = decl

    def temp_target(self, node: c_ast.Node) -> tuple[Temporary, str, c_ast.Node | None] | None:
        """``(temporary, op, right-hand side)`` of a statement that assigns a temporary in
        scope (``t = e;``, ``t += e;``, ``t++;``), else None."""
        parts = self.assignment(node)
        if parts is None or not isinstance(parts[1], c_ast.ID) or parts[1].name not in self.temps:
            return None
        return self.temps[parts[1].name], parts[0], parts[2]

    def new_version(self, t: Temporary, op: str, rhs: c_ast.Node | None, ctx: Ctx,
                    node: c_ast.Node) -> None:
        """Record one assignment of ``t``: its expression (array references kept as
        :class:`bbmm.codegen.cexpr.Ref` until a statement reads the value) and the assignments
        it reads."""
        if ctx.iters != t.iters or ctx.guards != t.guards:
            raise NeedsExpansion(t.unique, t.loops)     # carried: a local array (parse_source)
        refs: list[Ref] = []
        self.uses = []
        expr = Num("1", "int") if rhs is None else self.expr(rhs, ctx, (None, None, refs))
        deps = set(self.uses)
        if op != "=":
            deps.add(self.version_of(t, node))
        arrays = frozenset({r.array for r in refs}).union(
            *(self.versions[v].arrays for v in deps))
        self.versions.append(Version(len(self.versions), t, op, expr, tuple(refs),
                                      frozenset(deps), arrays, self.text(node) + ";",
                                      self.coord(node)))
        t.version = len(self.versions) - 1

    def version_of(self, t: Temporary, node: c_ast.Node) -> int:
        """The assignment of ``t`` a read at ``node`` sees; refused when it was never
        assigned. When an array its value was computed from has been written since, the
        value can no longer be recomputed here: ``t`` is kept in memory instead
        (:class:`bbmm.codegen.expand.NeedsExpansion`), as C keeps it."""
        if t.version is None:
            if t.name in self.seen_iters:
                raise self.err(f"iterator '{t.name}' used outside its loop", node)
            if t.outside:
                raise self.err(f"local variable '{t.name}' (declared at "
                               f"{format_coord(t.coord)}, before '#pragma scop') is read "
                               f"before the modelled region assigns it", node)
            raise self.err(f"temporary '{t.name}' is read before it is assigned", node)
        v = self.versions[t.version]
        if v.clobbered:
            raise NeedsExpansion(t.unique, t.loops)
        return v.seq

    def needed(self, uses: Sequence[int]) -> list[Version]:
        """The assignments a statement reading the versions ``uses`` must replay, in order."""
        todo, seen = list(uses), set()
        while todo:
            v = todo.pop()
            if v not in seen:
                seen.add(v)
                todo.extend(self.versions[v].deps)
        return [self.versions[v] for v in sorted(seen)]

    def temp_writes(self, array: str, ctx: Ctx) -> None:
        """A statement at ``ctx`` writes ``array``: values computed from it are stale from
        now on, and one read by a statement inside a loop that also holds this write (but
        not the assignment) would be recomputed from the new values on the next trip, so
        that temporary is kept in memory instead (:class:`bbmm.codegen.expand.NeedsExpansion`)."""
        here = {lp.id for lp in ctx.loops}
        for v in self.versions:
            if array not in v.arrays:
                continue
            v.clobbered = True
            for loops in v.readers:
                if (set(loops) & here) - set(v.temp.loops):
                    raise NeedsExpansion(v.temp.unique, v.temp.loops)

    def replay(self, uses: Sequence[int], ctx: Ctx, cur: Cur) -> tuple[Temp, ...]:
        """The statement ``cur``'s :class:`bbmm.codegen.scop.Temp` list: the assignments it
        needs, their array references made accesses of this statement."""
        out, declared = [], set()
        loops = tuple(lp.id for lp in ctx.loops)
        for v in self.needed(uses):
            v.readers.append(loops)
            expr = map_refs(v.expr, lambda r, refs=v.refs: self.rehome(r, refs, ctx, cur))
            out.append(Temp(v.temp.unique, v.temp.ctype, v.op, expr,
                            v.temp.unique not in declared, v.text, v.seq))
            declared.add(v.temp.unique)
        return tuple(out)

    def rehome(self, e: ArrayRef, refs: Sequence[Ref], ctx: Ctx, cur: Cur) -> ArrayRef:
        r = refs[-e.access - 1]
        if r.temp is not None:
            return self.temp_access(r.temp, r.coord, ctx, cur, "read")
        return self.new_access(r.array, r.index, r.text, r.coord, ctx, cur, "read")

    def temp_access(self, t: Temporary, coord: object, ctx: Ctx, cur: Cur, kind: str
                    ) -> ArrayRef:
        """An access of the expanded temporary ``t`` by the statement ``cur``: to the array
        of the statement's web, subscripted by the iterators of the web's loops."""
        name, _, refs = cur
        if name is None:                         # a temporary's assignment reads it
            refs.append(Ref(t.unique, (), t.name, coord, t))
            return ArrayRef(t.unique, (), -len(refs))
        arr, loops = t.webs.get(name, (t.unique, t.expand))
        self.locals.setdefault(arr, (t, loops))
        return self.new_access(arr, self.temp_index(t, loops, ctx, coord), t.name, coord,
                               ctx, cur, kind)

    def expanded(self, node: c_ast.Node) -> Temporary | None:
        """The expanded temporary ``node`` names, else None."""
        if isinstance(node, c_ast.ID) and node.name in self.temps:
            t = self.temps[node.name]
            return t if t.expand is not None else None
        return None

    def temp_index(self, t: Temporary, loops: tuple[int, ...], ctx: Ctx, coord: object
                   ) -> tuple[Affine, ...]:
        """The subscripts of the expanded temporary ``t`` at ``ctx``: per loop of its array
        the loop's iterator minus its least value (``[0]`` for no loop)."""
        out = []
        for lid in loops:
            iters, _ = self.loop_dom[lid]
            # _webs expands over loops that enclose every statement of the web
            assert iters[-1] in ctx.iters, (t.name, lid, ctx.iters)
            lo = Affine((), 0) if self.analysis else self.range_of(
                lid, f"temporary '{t.name}' is carried across iterations of", coord)[0]
            out.append(Affine.var(iters[-1]) - lo)
        return tuple(out) or (Affine((), 0),)

    def range_of(self, lid: int, what: str, coord: object) -> tuple[Affine, Affine]:
        """``(least, greatest)`` value of loop ``lid``'s iterator over all its iterations,
        each one affine expression of the integer parameters (``what``: why one is
        needed, for the refusal)."""
        if lid in self.loop_range:
            return self.loop_range[lid]
        iters, cons = self.loop_dom[lid]
        dom = isl.Set(f"{self.params_text}{{ [{', '.join(iters)}] : "
                      f"{' and '.join(cons) or 'true'} }}")
        pos = len(iters) - 1
        lo = affine_bound(dom.dim_min(pos), lower=True)
        hi = affine_bound(dom.dim_max(pos), lower=False)
        if lo is None or hi is None:
            raise UnsupportedProgramError(
                f"{what} the loop over '{iters[-1]}', whose range is not one affine interval "
                f"of the parameters; bbmm would keep a copy of it per iteration and cannot "
                f"size that array; use an array parameter instead", self.coord(coord)
                if isinstance(coord, c_ast.Node) else coord)
        self.loop_range[lid] = (lo, hi)
        return lo, hi

    def local_arrays(self) -> list[Array]:
        """The expanded temporaries as arrays, one element per iteration of their loops;
        the local arrays declared inside loops, one copy per iteration of theirs."""
        def copies(loops: Sequence[int]) -> list[Affine]:
            if self.analysis:                    # no ranges found: the size is moot
                return [Affine((), 1) for _ in loops]
            return [hi - lo + 1 for lo, hi in (self.loop_range[lid] for lid in loops)]

        def array(name: str, ctype: str, extents: Sequence[Affine], coord: object,
                  c_name: str) -> Array:
            # the driver evaluates dims as Python (run.host_arrays): floor divisions '//'
            dims = tuple(str(max(1, e.const)) if e.is_const() else f"max(1, {e.py()})"
                         for e in extents)
            sizes = tuple(isl.PwAff(f"{self.params_text}{{ [({e.isl()})] }}") for e in extents)
            return Array(name, ctype, dims, tuple(extents), sizes, coord, local=c_name)

        # a condition kept in memory is named for bbmm compile's list by its if
        out = [array(name, elem_ctype(t.ctype.split()), copies(loops) or [Affine((), 1)],
                     t.coord,
                     self.if_texts.get(t.name, t.name))
               for name, (t, loops) in self.locals.items()]
        out += [array(name, declared.ctype, copies(loops) + list(declared.extents),
                      declared.coord, declared.name)
                for name, (declared, loops) in self.privates.items()]
        return out

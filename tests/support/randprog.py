"""Random valid programs in bbmm's accepted C subset, for differential testing.

``generate(seed)`` returns a :class:`Program`: the C text of one kernel function over
1-3 arrays (float/double/int, 1-3 dimensions sized ``n``, ``n + 2``, ``m``, ``m + 1``),
an optional outer serial loop (a time loop over ``tsteps`` or a host iterator ``k`` that
subscripts arrays, floyd-like), and 1-3 loop nests (perfect or imperfect, rectangular,
triangular or min/max bounds). Every subscript is in bounds by construction: each loop
iterator carries the interval it ranges over (``lo <= it < CLASS - a``, CLASS being ``n``
or ``m``), and an access ``X[it + off]`` to a dimension of size ``CLASS + pad`` is only
drawn with ``-lo <= off <= a + pad``.

Values stay finite and comparable: float statements are convex combinations with
power-of-two coefficients (exact in binary), min/max ternaries, ``fabs``, ``sqrt`` of a
positive expression, or small ``+=`` accumulations; int statements use ``+`` and ``%``
with small constants and only read int arrays.

Scalar temporaries (``float tmp0 = 0.5f * (A[i] + B[i - 1]);``, sometimes reassigned)
open some loop bodies and stand in for reads of the statements below them, at that level
or in the loops inside. They are drawn from a second random stream, so a seed's program
is the one it was before temporaries, with some reads replaced. A temporary computed from
an array written before one of its reads is refused by the front end; the tests redraw.

``#pragma omp parallel for`` asserts a loop parallel, so it is only emitted on a nest's
outer loop when that is provably true by construction (each written array is written at
one subscript tuple that has the outer iterator alone in some dimension, and read in the
nest only at that same tuple).

A third stream adds, to some programs, a nest in mvt's shape over arrays of its own
(``X[i] += R[j][i] * Y[j]``, a row or a column of R per ``X[i]``): the shape whose inner
loop a GPU stages in local memory (``codegen/opencl.py``).

A fifth stream adds scalars carried across iterations, which the front end expands into
local arrays: a reduction over the inner loops of a nest (``float c0 = A[i]; for (j ...)
c0 += 0.125f * B[j]; C[i] = 0.5f * c0;``), declared in the loop body or, C89 style, at
the top of the function and assigned in the body (then sometimes shared by two nests, as
ludcmp's ``w``), or a running value carried across a whole nest (a prefix sum, which
serializes it; such a nest gets no parallel pragma).

A sixth stream gives some loops a step of 2 or 3 (counting up, from ``lo + k % 2``
sometimes, or down), some reads a subscript with C's ``/`` or ``%`` of an iterator, and
some statements a guard on a remainder (``if ((i + j) % 2 == 0)``); ``(i - j) % 2 == 1``
may be refused (its dividend can be negative), and the tests then redraw.

An eighth stream turns some programs' scalar temporaries and carried scalars into local
arrays of one to three elements (``float tmp0[2]; tmp0[1] = ...;``, every use
``tmp0[1]``), declared inside loops or at the top of the function: scalars again for bbmm
(codegen/scalarize.py), or, with the subscript written ``1 + 0 * n`` (no constant to
that pass), memory: a copy per iteration of the parallel loops around the declaration.
Some are initialised element by element in a loop of constant trips (``for (int q_tmp0
= 0; q_tmp0 < 2; q_tmp0++) tmp0[q_tmp0] = ...;``), which bbmm unrolls where that makes
the array scalars.

A seventh stream renames some programs' parameters, arrays and iterators to names that
isl, the generated Python driver or OpenCL C cannot take (``lambda``, ``iter``, ``min``,
``S1``, ``half``, ``np``, ``get_global_id``...) or that bbmm's generated code uses
itself (``lb``, ``slot``, ``nest0_tile``): ``bbmm`` renames them inside (codegen/names.py)
while ``--param`` keeps the C names.

A ninth stream puts some statements and some updates of carried scalars under an ``if``
on an array element (``if (B[i][j + 1] > 0.5f) { ... } else { ... }``, sometimes after
an affine test), which bbmm evaluates at run time (``X = c ? e : X``).

A tenth stream writes some arrays of two or three dimensions whose inner extents are
exactly a parameter as flat pointers or unsized arrays (``float *B``, ``B[(i + 1) * m +
(j)]``, ``C[((i) * n + (j)) * m + (k)]``), which bbmm reads as rows again
(codegen/delinearize.py).

An eleventh stream moves some assignments to array elements into helper functions of
their own (``put0(n, m, i, j, A, B);``), which bbmm inlines again (codegen/inline.py).

A twelfth stream puts a ``break`` or a ``continue`` into some innermost loop bodies, under
a test on the data or an affine one (``if (B[i][j] > 0.5f) break;``, ``if (j > i + 1) {
A[i][j] = ...; continue; }``), and sometimes ends a time loop early on the data; bbmm
turns each into a flag that the statements after it test (codegen/structure.py). A nest
whose outer loop breaks gets no parallel pragma (OpenMP forbids it). The same stream
writes some inner loops as the counting ``while`` loops they mean (``int j = 1; while (j <
n) { ...; j += 2; }``), which bbmm takes as ``for`` loops again.

A thirteenth stream makes some updates of carried scalars a max or a min (``c0 = B[i][j]
> c0 ? B[i][j] : c0;``, ``if (A[j] < c1) c1 = A[j];``), and adds to some programs a nest
folding an array of its own into a scalar by a max, a min, ``fmax``/``fmin`` or an integer
sum, which bbmm splits over the rows of the loop around them where that loop then runs in
parallel (codegen/reductions.py).

Run ``python tests/support/randprog.py SEED`` to print one program and its parameters.
"""
from __future__ import annotations

import contextlib
import os
import random
import re
import sys
from dataclasses import dataclass, field

# BBMM_RANDOM_AVOID_FMA=1: no float `a * a + 1.0f` (which OpenCL contracts into an fma
# while the reference is built with -ffp-contract=off: visible when stored into a double)
AVOID_FMA = os.environ.get("BBMM_RANDOM_AVOID_FMA", "") not in ("", "0")

PARAM_RANGE = {"n": (6, 16), "m": (5, 13), "tsteps": (1, 3)}


@dataclass
class Program:
    seed: int
    name: str
    text: str
    params: dict[str, int]
    # facts about the program, for the tests' choice of options
    arrays: list[str] = field(default_factory=list)
    plain: str = ""
    """The text before the seventh stream's renaming (``params`` keep these names)."""
    renames: dict[str, str] = field(default_factory=dict)

    def param_args(self) -> list[str]:
        out: list[str] = []
        for k, v in self.params.items():
            out += ["--param", f"{self.renames.get(k, k)}={v}"]
        return out


# names some target of bbmm cannot take, or its generated code uses (seventh stream)
AWKWARD = ["iter", "len", "lambda", "S0", "S1", "S3", "half", "local", "uint", "np", "Box",
           "run", "id", "sum", "range", "type", "kernel", "global", "floor", "mod", "exists",
           "print", "float2", "_bbmm_v", "nest0_tile", "NEST1_FRESH", "ARRAYS", "C_NAMES",
           "lb", "ub", "g0", "Infty", "rat", "constant", "private", "min", "max", "int4",
           "i_neg", "j_s", "slot", "own", "get_global_id", "barrier", "A_AT", "tile", "not",
           "rt", "spec", "tiles", "TileSpec", "b0", "ntiles"]


@dataclass
class Dim:
    cls: str   # "n" or "m"
    pad: int   # size is cls + pad

    def size(self) -> str:
        return self.cls if self.pad == 0 else f"{self.cls} + {self.pad}"


@dataclass
class Array:
    name: str
    ctype: str
    dims: list[Dim]


@dataclass
class It:
    name: str
    cls: str
    lo: int   # it >= lo
    a: int    # it < cls - a


def _sub(it: It, off: int) -> str:
    if off == 0:
        return it.name
    return f"{it.name} + {off}" if off > 0 else f"{it.name} - {-off}"


class _Gen:
    def __init__(self, seed: int):
        self.seed = seed
        self.r = random.Random(seed)
        self.rt = random.Random(seed * 7919 + 17)   # temporaries: apart from the rest
        self.rs = random.Random(seed * 104729 + 5)  # reduction nests: apart again
        self.rd = random.Random(seed * 15485863 + 11)  # loops counting down: apart again
        self.rc = random.Random(seed * 32452843 + 3)  # carried scalars: apart again
        self.rq = random.Random(seed * 49979687 + 7)  # steps, / and %: apart again
        self.rn = random.Random(seed * 67867967 + 13)  # awkward names: apart again
        self.ra = random.Random(seed * 86028121 + 19)  # temporaries as arrays: apart again
        self.rf = random.Random(seed * 95416939 + 23)  # ifs on the data: apart again
        self.rl = random.Random(seed * 122949829 + 29)  # flat arrays: apart again
        self.rh = random.Random(seed * 141650939 + 31)  # helpers: apart again
        self.rj = random.Random(seed * 160481183 + 37)  # break and continue: apart again
        self.rx = random.Random(seed * 179424673 + 41)  # max and min reductions: apart again
        self.broke_outer = False                # the nest's outer loop has a break
        self.n_temps = 0
        self.n_carried = 0
        self.top: list[tuple[str, str]] = []    # (name, C type) declared at the top
        self.serial_nest = False                # a scalar is carried across this nest

    # ---------------------------------------------------------------- accesses
    def access(self, arr: Array, scope: list[It], lhs: bool) -> str:
        r = self.r
        subs = []
        for d in arr.dims:
            cands = [it for it in scope if it.cls == d.cls]
            if not cands or r.random() < 0.04:
                subs.append(str(r.choice([0, 1])))  # sizes are >= 5
                continue
            # prefer inner iterators (they make the access vary within the nest)
            weights = [1 + 2 * i for i in range(len(cands))]
            it = r.choices(cands, weights)[0]
            lo_off, hi_off = -it.lo, it.a + d.pad
            lo_off, hi_off = max(lo_off, -3), min(hi_off, 3)
            if lhs or r.random() < 0.45:
                off = 0 if lo_off <= 0 <= hi_off else r.randint(lo_off, hi_off)
            else:
                off = r.randint(lo_off, hi_off)
            sub = _sub(it, off)
            if not lhs and self.rq.random() < 0.06:
                # C's / and % of a non-negative iterator: within [0, it] and [0, 2]
                sub = self.rq.choice([f"{it.name} / 2", f"({it.name} + 1) / 3",
                                      f"{it.name} % 2", f"({it.name} + {off + 3}) % 3"])
            subs.append(sub)
        return arr.name + "".join(f"[{s}]" for s in subs)

    # ---------------------------------------------------------------- statements
    @contextlib.contextmanager
    def drawing_from(self, stream: random.Random):
        """``self.r`` is ``stream`` inside the block: draws that must not shift the rest
        of the program's choices (temporaries, carried scalars)."""
        r, self.r = self.r, stream
        try:
            yield
        finally:
            self.r = r

    def temp(self, scope: list[It], reads: list, ind: str) -> tuple[tuple[str, str], list[str]]:
        """A scalar temporary's declaration (and maybe a reassignment) from ``self.rt``."""
        with self.drawing_from(self.rt):
            y = self.r.choice(self.arrays)
            name = f"tmp{self.n_temps}"
            self.n_temps += 1
            a, b = self.access(y, scope, False), self.access(y, scope, False)
            reads += [(y.name, a), (y.name, b)]
            if y.ctype == "int":
                lines = [f"int {name} = ({a} + {b} + 2) % 5;"]
                if self.r.random() < 0.3:
                    lines.append(f"{name} = ({name} + 1) % 7;")
            else:
                lines = [f"{y.ctype} {name} = 0.5f * ({a} + {b});"]
                if self.r.random() < 0.3:
                    lines.append(f"{name} = 0.5f * {name} + 0.25f;")
            return (name, "int" if y.ctype == "int" else "real"), [ind + x for x in lines]

    # ---------------------------------------------------------------- carried scalars
    def _carried_start(self, scope: list[It], reads: list) -> tuple[str, tuple[str, str]]:
        """``(line, (name, kind))``: the first assignment of a carried scalar, from an
        array element; with its declaration (``float c0 = ...;``), or of one declared at
        the top of the function (maybe one declared there before, of the same type)."""
        name, ctype, kind, here = self._carried_decl()
        init = self._carried_read(scope, reads, kind)
        return (f"{ctype} " if here else "") + f"{name} = {init};", (name, kind)

    def _carried_decl(self) -> tuple[str, str, str, bool]:
        """``(name, C type, kind, declared here)`` of a carried scalar: new and declared
        where it is first assigned, or declared at the top of the function."""
        r = self.rc
        y = r.choice(self.arrays)
        ctype = y.ctype
        same = [n for n, t in self.top if t == ctype]
        if same and r.random() < 0.5:
            name, here = r.choice(same), False
        else:
            name = f"c{self.n_carried}"
            self.n_carried += 1
            here = r.random() < 0.5
            if not here:
                self.top.append((name, ctype))
        kind = "int" if ctype == "int" else "real"
        return name, ctype, kind, here

    def _carried_read(self, scope: list[It], reads: list, kind: str) -> str:
        pool = [a for a in self.arrays if (a.ctype == "int") == (kind == "int")] or self.arrays
        y = self.r.choice(pool)
        a = self.access(y, scope, False)
        reads.append((y.name, a))
        return a

    def _carried_update(self, name: str, kind: str, scope: list[It], reads: list) -> str:
        a = self._carried_read(scope, reads, kind)
        if kind == "int":
            line = f"{name} = ({name} + {a}) % 7;"
        else:
            line = self.r.choice([f"{name} += 0.125f * {a};",
                                  f"{name} = {name} > {a} ? {name} : {a};",
                                  f"{name} = 0.5f * {name} + 0.25f * {a};"])
        if self.rx.random() < 0.35:
            # the thirteenth stream: a max or min in a form bbmm splits over the loop's
            # rows (codegen/reductions.py); for integers, forms taking equal values too
            forms = [f"{name} = {a} > {name} ? {a} : {name};", f"if ({a} < {name}) {name} = {a};",
                     f"{name} = {name} < {a} ? {a} : {name};", f"if ({name} > {a}) {{ {name} = {a}; }}"]
            if kind == "int":
                forms += [f"{name} = {a} >= {name} ? {a} : {name};",
                          f"{name} = {name} <= {a} ? {name} : {a};"]
            line = self.rx.choice(forms)
        return line

    def _carried_use(self, name: str, kind: str, scope: list[It], writes: list) -> str | None:
        pool = [a for a in self.arrays if (a.ctype == "int") == (kind == "int")]
        if not pool:
            return None
        x = self.r.choice(pool)
        lhs = self.access(x, scope, True)
        writes.append((x.name, lhs))
        if kind == "int":
            return f"{lhs} = ({name} + 1) % 5;"
        return f"{lhs} = 0.5f * {name} + 0.125f;"

    def statement(self, scope: list[It], reads: list, writes: list,
                  temps: list[tuple[str, str]] = ()) -> str:
        r = self.r
        x = r.choice(self.arrays)
        lhs = self.access(x, scope, True)
        writes.append((x.name, lhs))

        def rd(pool=None) -> str:
            pool = pool or self.arrays
            y = r.choice(pool)
            if r.random() < 0.25:
                y = x
            a = self.access(y, scope, False)
            reads.append((y.name, a))
            kind = "int" if pool[0].ctype == "int" and all(p.ctype == "int" for p in pool) \
                else "real"
            mine = [t for t, k in temps if k == kind]
            if mine and self.rt.random() < 0.4:
                return self.rt.choice(mine)
            return a

        if x.ctype == "int":
            ints = [a for a in self.arrays if a.ctype == "int"]
            itn = [it.name for it in scope]
            kind = r.randrange(4)
            if kind == 0:
                terms = [rd(ints) for _ in range(r.randint(1, 3))]
                if itn and r.random() < 0.6:
                    terms.append(r.choice(itn))
                return f"{lhs} = ({' + '.join(terms)} + {r.randint(1, 5)}) % {r.choice([5, 7, 11])};"
            if kind == 1:
                a, b = rd(ints), rd(ints)
                return f"{lhs} = ({a} > {b} ? {a} : {b}) % {r.choice([3, 7, 13])};"
            if kind == 2:
                return f"{lhs} += {rd(ints)} % {r.choice([2, 3])};"
            a = rd(ints)
            extra = f" + {r.choice(itn)}" if itn else ""
            return f"{lhs} = {a} % {r.choice([4, 9])}{extra};"

        f = "f"  # float literals: exact powers of two, same value in float and double
        kind = r.randrange(7)
        if kind <= 1:  # stencil: convex combination
            k = r.choice([2, 4])
            terms = [rd() for _ in range(k)]
            coef = {2: "0.5", 4: "0.25"}[k]
            tail = ""
            if r.random() < 0.3:
                tail = f" + 0.125{f}"
            if r.random() < 0.2 and scope:
                tail += f" + 0.015625{f} * {r.choice(scope).name}"
            if r.random() < 0.5:
                return f"{lhs} = {coef}{f} * ({' + '.join(terms)}){tail};"
            return f"{lhs} = " + " + ".join(f"{coef}{f} * {t}" for t in terms) + tail + ";"
        if kind == 2:  # accumulation
            return f"{lhs} += 0.125{f} * {rd()};"
        if kind == 3:  # min/max ternary
            a, b = rd(), rd()
            op = r.choice(["<", ">"])
            return f"{lhs} = {a} {op} {b} ? {a} : {b};"
        if kind == 4:
            a = rd()
            return f"{lhs} = {a} > 0.5{f} ? 0.5{f} * {a} : {rd()} + 0.25{f};"
        if kind == 5:
            return f"{lhs} = 0.5{f} * fabs({rd()} - {rd()});"
        a = rd()
        # float a * a + 1.0f may be contracted into an fma by OpenCL (see AVOID_FMA)
        one = "1.0" if AVOID_FMA else f"1.0{f}"
        return f"{lhs} = 0.5{f} * sqrt({a} * {a} + {one});"

    def data_if(self, line: str, scope: list[It], reads: list, writes: list,
                temps: list[tuple[str, str]], other: bool = True) -> str:
        """``line`` under an ``if`` on an array element (the ninth stream), sometimes
        after an affine test (``i % 2 == 0 && ...``), with an ``else`` of another
        statement, or with another statement in the same branch."""
        r = self.r
        y = r.choice(self.arrays)
        a = self.access(y, scope, False)
        reads.append((y.name, a))
        cond = f"{a} % 3 == {r.choice([0, 1, -1])}" if y.ctype == "int" \
            else f"{a} {r.choice(['<', '>', '<=', '>='])} 0.5f"
        if scope and r.random() < 0.3:
            cond = f"{r.choice(scope).name} % 2 == 0 && {cond}"
        if other and r.random() < 0.4:
            alt = self.statement(scope, reads, writes, temps)
            lhs, _, rhs = alt.partition(" = ")
            mine = line.partition(" = ")[0]
            kind = {a.name: a.ctype for a in self.arrays}
            if rhs and " = " in line and not line.startswith("if") and r.random() < 0.5 \
                    and kind.get(mine.split("[")[0]) == kind.get(lhs.split("[")[0]):
                alt = f"{mine} = {rhs}"     # both branches assign it: one select
            return f"if ({cond}) {{ {line} }} else {{ {alt} }}"
        if other and r.random() < 0.3:
            return f"if ({cond}) {{ {line} {self.statement(scope, reads, writes, temps)} }}"
        return f"if ({cond}) {{ {line} }}"

    def jump(self, scope: list[It], reads: list, writes: list,
             temps: list[tuple[str, str]]) -> tuple[str, bool]:
        """``(line, is_break)``: ``if (c) break;`` or ``continue;`` (the twelfth stream), on
        an array element or an affine test, sometimes after a statement in its branch."""
        r = self.r
        if r.random() < 0.6:
            y = r.choice(self.arrays)
            a = self.access(y, scope, False)
            reads.append((y.name, a))
            cond = f"{a} % 3 == 0" if y.ctype == "int" else \
                f"{a} {r.choice(['<', '>'])} {r.choice(['0.25f', '0.5f', '0.75f'])}"
        else:
            it = r.choice(scope)
            cond = r.choice([f"{it.name} > {it.lo + 2}", f"{it.name} % 3 == 1",
                             f"{it.name} == {it.lo + 1}"])
            if len(scope) > 1:
                cond = r.choice([cond, f"{scope[-1].name} > {scope[0].name} + 1"])
        brk = r.random() < 0.5
        word = "break;" if brk else "continue;"
        if r.random() < 0.3:
            return f"if ({cond}) {{ {self.statement(scope, reads, writes, temps)} {word} }}", brk
        return f"if ({cond}) {word}", brk

    # ---------------------------------------------------------------- loops
    def loop_header(self, name: str, scope: list[It], host: It | None) -> tuple[str, It]:
        """A loop over ``name``: one of the forms below, counting up, or with probability
        1/6 the same values counting down (a separate stream, so that the programs of
        earlier seeds keep their other choices)."""
        lo, op, hi, it = self._loop_up(name, scope, host)
        q = self.rq
        down = self.rd.random() < 1 / 6
        first = (hi if op == "<=" else f"{hi} - 1") if down else lo
        if q.random() < 0.2 and not any(w in first for w in ("min", "MIN", "max", "MAX")):
            # a step of 2 or 3 (the first value must be affine); counting up, sometimes
            # from lo + (an outer iterator) % 2: every value stays in the interval
            k = q.choice([2, 3])
            if down:
                step = q.choice([f"{name} -= {k}", f"{name} = {name} - {k}"])
                return f"for (int {name} = {first}; {name} >= {lo}; {step})", it
            if scope and q.random() < 0.4:
                first = f"{lo} + {q.choice(scope).name} % 2"
            step = q.choice([f"{name} += {k}", f"{name} = {name} + {k}", f"{name} = {k} + {name}"])
            return f"for (int {name} = {first}; {name} {op} {hi}; {step})", it
        if down:
            step = self.rd.choice([f"{name}--", f"--{name}", f"{name} -= 1"])
            return f"for (int {name} = {first}; {name} >= {lo}; {step})", it
        return f"for (int {name} = {lo}; {name} {op} {hi}; {name}++)", it

    def _loop_up(self, name: str, scope: list[It], host: It | None
                 ) -> tuple[str, str, str, It]:
        """``(first, op, bound, It)`` of a loop counting up: ``name op bound``."""
        r = self.r
        cls = r.choice(self.classes)
        same = [it for it in scope if it.cls == cls]
        if host is not None and host.cls == cls and r.random() < 0.2:
            kind = r.randrange(3)
            if kind == 0:
                return ("0", "<=", host.name,
                        It(name, cls, 0, host.a))
            if kind == 1:
                return (host.name, "<", cls,
                        It(name, cls, host.lo, 0))
            return (f"{host.name} + 1", "<", cls,
                    It(name, cls, host.lo + 1, 0))
        if same and r.random() < 0.5:
            p = r.choice(same)
            kind = r.randrange(6)
            if kind == 0:
                lo = r.choice([0, 1])
                lo = min(lo, p.lo) if False else lo
                return str(lo), "<=", p.name, It(name, cls, lo, p.a)
            if kind == 1:
                lo = r.choice([0, 1])
                return (str(lo), "<", f"{p.name} + 1",
                        It(name, cls, lo, p.a))
            a = r.choice([0, 1, 2])
            hi = cls if a == 0 else f"{cls} - {a}"
            if kind == 2:
                return (f"{p.name} + 1", "<", hi,
                        It(name, cls, p.lo + 1, a))
            if kind == 3:
                return p.name, "<", hi, It(name, cls, p.lo, a)
            if kind == 4:
                w = r.randint(1, 3)
                mn = r.choice(["min", "MIN"])
                lo = r.choice([0, 1])
                return (str(lo), "<", f"{mn}({hi}, {p.name} + {w})",
                        It(name, cls, lo, a))
            lo = r.choice([0, 1, 2])
            w = r.randint(1, 3)
            mx = r.choice(["max", "MAX"])
            return (f"{mx}({lo}, {p.name} - {w})", "<", hi,
                    It(name, cls, lo, a))
        lo, a = r.choice([0, 0, 1, 2]), r.choice([0, 0, 1, 2])
        hi = cls if a == 0 else f"{cls} - {a}"
        if r.random() < 0.2:
            hi2 = f"{cls} - {a + 1}" if a + 1 else cls
            return str(lo), "<=", hi2, It(name, cls, lo, a)
        return str(lo), "<", hi, It(name, cls, lo, a)

    def nest(self, names: list[str], scope: list[It], host: It | None, ind: str,
             reads: list, writes: list, imperfect: bool,
             temps: list[tuple[str, str]] = (), acc: tuple[str, str] | None = None
             ) -> list[str]:
        """``acc``: a carried scalar ``(name, kind)`` that the innermost body updates."""
        head, it = self.loop_header(names[0], scope, host)
        inner = scope + [it]
        body: list[str] = []
        temps = list(temps)
        if self.rt.random() < 0.3:
            t, lines = self.temp(inner, reads, ind + "  ")
            temps.append(t)
            body += lines
        mine = None                     # a scalar carried over this body's inner loops
        if len(names) > 1 and acc is None and self.rc.random() < 0.2:
            with self.drawing_from(self.rc):
                line, mine = self._carried_start(inner, reads)
            body.append(ind + "  " + line)
        if len(names) == 1:
            for _ in range(self.r.choice([1, 1, 2])):
                line = self.statement(inner, reads, writes, temps)
                if self.rq.random() < 0.12:        # a guard on a remainder
                    a, b = self.rq.choice(inner).name, self.rq.choice(inner).name
                    guard = self.rq.choice([f"({a} + {b}) % 2 == 0", f"{a} % 3 != 1",
                                            f"({a} - {b}) % 2 == 1"])
                    line = f"if ({guard}) {line}"
                if self.rf.random() < 0.15:
                    with self.drawing_from(self.rf):
                        line = self.data_if(line, inner, reads, writes, temps)
                body.append(ind + "  " + line)
            if self.rj.random() < 0.12:
                with self.drawing_from(self.rj):
                    line, brk = self.jump(inner, reads, writes, temps)
                    body.insert(self.r.randint(0, len(body)), ind + "  " + line)
                if brk and names[0] == "i":     # the nest's outer loop
                    self.broke_outer = True
            if acc is not None:
                with self.drawing_from(self.rc):
                    line = self._carried_update(*acc, inner, reads)
                if self.rf.random() < 0.15:
                    with self.drawing_from(self.rf):
                        line = self.data_if(line, inner, reads, writes, temps, other=False)
                with self.drawing_from(self.rc):
                    body.append(ind + "  " + line)
                    if self.serial_nest:         # a running value: read where it runs
                        use = self._carried_use(*acc, inner, writes)
                        if use:
                            body.append(ind + "  " + use)
        elif mine is not None:
            body += self.nest(names[1:], inner, host, ind + "  ", reads, writes, imperfect,
                              temps, mine)
            with self.drawing_from(self.rc):
                use = self._carried_use(*mine, inner, writes)
            if use:
                body.append(ind + "  " + use)
        else:
            if imperfect and self.r.random() < 0.5:
                body.append(ind + "  " + self.statement(inner, reads, writes, temps))
            body += self.nest(names[1:], inner, host, ind + "  ", reads, writes, imperfect,
                              temps, acc)
            if imperfect and (self.r.random() < 0.5 or len(body) == 1):
                body.append(ind + "  " + self.statement(inner, reads, writes, temps))
        m = re.fullmatch(r"for \(int (\w+) = (.*); (.*); (.*)\)", head)
        if m and names[0] != "i" and self.rj.random() < 0.1 and not any(
                "continue" in b for b in body):
            # the twelfth stream again: an inner loop as the counting while it means (not
            # with a continue, which would skip the step; not the nest's outer loop, which
            # a parallel pragma may precede)
            v, first, cond, step = m.groups()
            return [ind + "{", f"{ind}  int {v} = {first};", f"{ind}  while ({cond}) {{"] \
                + ["  " + b for b in body] + [f"{ind}    {step};", ind + "  }", ind + "}"]
        if len(body) == 1:
            return [ind + head] + body
        return [ind + head + " {"] + body + [ind + "}"]

    # ---------------------------------------------------------------- program
    def program(self) -> Program:
        r = self.r
        self.classes = ["n"] if r.random() < 0.6 else ["n", "m"]
        types = ["float", "float", "double", "int"]
        self.arrays = []
        for name in ["A", "B", "C"][: r.choice([1, 2, 2, 3, 3])]:
            nd = r.choices([1, 2, 3], [3, 6, 1])[0]
            dims = [Dim(r.choice(self.classes), r.choice([0, 0, 1, 2])) for _ in range(nd)]
            self.arrays.append(Array(name, r.choice(types), dims))
        params = {c: r.randint(*PARAM_RANGE[c]) for c in self.classes}
        outer = r.choice(["none", "none", "time", "host"])
        host = None
        lines: list[str] = []
        ind = "  "
        if outer == "time":
            params["tsteps"] = r.randint(*PARAM_RANGE["tsteps"])
            lines.append(f"  for (int t = 0; t < tsteps; t++) {{")
            ind = "    "
        elif outer == "host":
            hc = r.choice(self.classes)
            klo, ka = r.choice([(0, 0), (0, 0), (1, 0), (1, 1), (2, 1)])
            host = It("k", hc, klo, ka)
            khi = hc if ka == 0 else f"{hc} - {ka}"
            lines.append(f"  for (int k = {klo}; k < {khi}; k++) {{")
            ind = "    "
            # host loops make many launches: keep them short
            for c in params:
                params[c] = min(params[c], 8)
        base = [host] if host else []
        for _ in range(r.choice([1, 1, 2, 2, 3])):
            depth = r.choices([1, 2, 3], [2, 5, 2])[0]
            reads: list = []
            writes: list = []
            before, acc = [], None
            self.serial_nest = self.rc.random() < 0.08   # a running value over the nest
            if self.serial_nest:
                with self.drawing_from(self.rc):
                    line, acc = self._carried_start(base, reads)
                before = [ind + line]
            nest = self.nest(["i", "j", "l"][:depth], base, host, ind, reads, writes,
                             imperfect=r.random() < 0.35, acc=acc)
            # a scalar carried within an iteration is private to it (assigned first in
            # the body, or declared there); one carried across the nest is not
            if self._pragma_safe(nest, reads, writes, "i") and r.random() < 0.5 \
                    and not self.serial_nest and not self.broke_outer:
                nest.insert(0, "#pragma omp parallel for")
            self.serial_nest = False
            self.broke_outer = False
            lines += before + nest
        if self.rs.random() < 0.3:
            lines += self.reduction(ind)
        if self.rx.random() < 0.25:
            lines += self.extremum(ind)
        if outer == "time" and self.rj.random() < 0.15:
            with self.drawing_from(self.rj):   # stop the time loop early on the data
                y = self.r.choice(self.arrays)
                a = self.access(y, base, False)
                cond = f"{a} % 3 == 1" if y.ctype == "int" else f"{a} > 0.75f"
            lines.append(f"{ind}if ({cond}) break;")
        if outer != "none":
            lines.append("  }")
        sig = [f"int {p}" for p in params]
        if r.random() < 0.2:
            sig.append("float alpha")  # unused scalar (defaults to 1.5)
        for a in self.arrays:
            sig.append(f"{a.ctype} {a.name}" + "".join(f"[{d.size()}]" for d in a.dims))
        name = f"rk{self.seed}"
        decls = [f"  {t} {n};" for n, t in self.top]
        text = f"void {name}({', '.join(sig)}) {{\n" + "\n".join(decls + lines) + "\n}\n"
        text = self.temps_as_arrays(text)
        renames = self.awkward_names(text, list(params) + [a.name for a in self.arrays])
        final = self.with_helpers(self.flattened(_renamed(text, renames), renames))
        return Program(self.seed, name, final, params,
                       [renames.get(a.name, a.name) for a in self.arrays], text, renames)

    def flattened(self, text: str, renames: dict[str, str]) -> str:
        """Some arrays of two or three dimensions whose inner extents are exactly a
        parameter (``float B[n + 1][m]``, ``float C[n][n][m]``) as flat pointers or unsized
        arrays, every ``B[x][y]`` written ``B[(x) * m + (y)]`` and ``C[x][y][z]``
        ``C[((x) * n + (y)) * m + (z)]`` (the tenth stream; bbmm reads them as rows and
        blocks again)."""
        flat = {renames.get(a.name, a.name): [renames.get(d.cls, d.cls) for d in a.dims[1:]]
                for a in self.arrays if len(a.dims) >= 2 and all(d.pad == 0 for d in a.dims[1:])
                and self.rl.random() < 0.3}
        if not flat:
            return text
        from pycparser import c_ast, c_generator, c_parser

        from bbmm.codegen.csource import replace_children
        func = c_parser.CParser().parse(text).ext[0]

        def fix(x):
            replace_children(x, fix)             # inner references first
            subs, ref = [], x
            while isinstance(ref, c_ast.ArrayRef):
                subs.append(ref.subscript)
                ref = ref.name
            if isinstance(ref, c_ast.ID) and ref.name in flat \
                    and len(subs) == len(flat[ref.name]) + 1:
                subs.reverse()
                off = subs[0]
                for stride, sub in zip(flat[ref.name], subs[1:]):
                    off = c_ast.BinaryOp("+", c_ast.BinaryOp("*", off, c_ast.ID(stride)), sub)
                x = c_ast.ArrayRef(ref, off)
            return [x]
        replace_children(func.body, fix)
        for p in func.decl.type.args.params:
            if getattr(p, "name", None) in flat:
                elem = p.type
                while isinstance(elem, c_ast.ArrayDecl):
                    elem = elem.type
                p.type = c_ast.PtrDecl([], elem) if self.rl.random() < 0.5 else \
                    c_ast.ArrayDecl(elem, None, [])
        return c_generator.CGenerator().visit(func)

    def with_helpers(self, text: str) -> str:
        """Some assignments to an array element moved into helper functions of their own,
        called with the arrays, parameters, iterators and scalars they read (``static void
        put3(int n, float A[n][m], int i, float tmp0) { A[i][0] = tmp0; }`` and
        ``put3(n, A, i, tmp0);`` where the statement was; the eleventh stream: bbmm inlines
        them again)."""
        if self.rh.random() >= 0.3:
            return text
        import copy

        from pycparser import c_ast, c_generator, c_parser

        from bbmm.codegen.csource import replace_children, walk
        gen = c_generator.CGenerator()
        func = c_parser.CParser().parse(text).ext[0]
        decls = {p.name: p for p in func.decl.type.args.params}
        ints = [p.name for p in func.decl.type.args.params if gen.visit(p.type) == "int"]

        class Locals(c_ast.NodeVisitor):
            def visit_Decl(self, d):
                decls.setdefault(d.name, d)
                self.generic_visit(d)
        Locals().visit(func.body)
        helpers: list[str] = []

        def names(e):
            out = [e.name] if isinstance(e, c_ast.ID) else []
            for _, c in e.children():
                if not (isinstance(e, c_ast.FuncCall) and c is e.name):
                    out += [n for n in names(c) if n not in out]
            return out

        def wrap(x, iters):
            if isinstance(x, c_ast.For):
                init = x.init.decls[0].name if isinstance(x.init, c_ast.DeclList) else None
                replace_children(x, lambda c: wrap(c, iters + ([init] if init else [])))
                return [x]
            if isinstance(x, c_ast.Assignment) and isinstance(x.lvalue, c_ast.ArrayRef) \
                    and not any(isinstance(n, c_ast.UnaryOp) and n.op in ("++", "--", "p++", "p--")
                                for n in walk(x)) \
                    and not any(isinstance(n, c_ast.Assignment) for n in walk(x.rvalue)) \
                    and self.rh.random() < 0.5:
                free = names(x)
                if all(n in iters or n in decls for n in free):
                    # the sizes first (an array's type names them), then iterators,
                    # scalars and arrays
                    free = ints + [n for n in free if n in iters] + [
                        n for n in free if n not in ints and n not in iters
                        and not isinstance(decls[n].type, (c_ast.ArrayDecl, c_ast.PtrDecl))] + [
                        n for n in free if n not in ints and n not in iters
                        and isinstance(decls[n].type, (c_ast.ArrayDecl, c_ast.PtrDecl))]
                    ps = []
                    for n in free:
                        if n in iters:
                            ps.append(f"int {n}")
                        else:
                            d = copy.deepcopy(decls[n])
                            d.init = None
                            ps.append(gen.visit(d))
                    name = f"put{len(helpers)}"
                    helpers.append(f"static void {name}({', '.join(ps)})\n{{\n  "
                                   f"{gen.visit(x)};\n}}\n")
                    return [c_ast.FuncCall(c_ast.ID(name), c_ast.ExprList(
                        [c_ast.ID(n) for n in free]))]
            replace_children(x, lambda c: wrap(c, iters))
            return [x]
        replace_children(func.body, lambda c: wrap(c, []))
        if not helpers:
            return text
        # helpers take the kernel's parameters by their C types: sizes first, as C wants
        return "\n".join(helpers) + "\n" + gen.visit(func)

    def temps_as_arrays(self, text: str) -> str:
        """Some temporaries ``T x = e;`` / ``T x;`` -> ``T x[K]; x[k] = e;`` / ``T x[K];``,
        every other use of ``x`` -> ``x[k]`` (the eighth stream)."""
        r = self.ra
        if r.random() >= 0.5:
            return text
        for x in sorted(set(re.findall(r"\b(?:float|double|int) ((?:tmp|c)\d+)\b", text))):
            if r.random() < 0.4:
                continue
            size = r.choice([1, 2, 3])
            k = r.randrange(size)
            if r.random() < 0.5:
                k = f"{k} + 0 * n"
            decl = re.compile(rf"\b(float|double|int) {x}\b( = )?")
            m = decl.search(text)
            head = f"{m.group(1)} {x}[{size}]" + (f"; {x}[{k}] = " if m.group(2) else "")
            rest = re.sub(rf"\b{x}\b", f"{x}[{k}]", text[m.end():])
            if m.group(2) and size > 1 and r.random() < 0.5:
                # every element set by a loop of constant trips (bbmm unrolls it when
                # that makes the array scalars)
                head = f"{m.group(1)} {x}[{size}]; for (int q_{x} = 0; q_{x} < {size}; " \
                       f"q_{x}++) {x}[q_{x}] = "
                rest = re.sub(rf"\b{x}\b", f"{x}[{k}]", text[m.end():])
            text = text[:m.start()] + head + rest
        return text

    def awkward_names(self, text: str, names: list[str]) -> dict[str, str]:
        """Some programs' parameters, arrays and iterators -> :data:`AWKWARD` names that
        the program does not use already (nor call: ``min(``)."""
        r = self.rn
        if r.random() >= 0.3:
            return {}
        used = set(re.findall(r"[A-Za-z_]\w*", text))
        free = [w for w in AWKWARD if w not in used]
        names = names + [v for v in ("i", "j", "l", "k", "t", "alpha") if v in used]
        out = {}
        for v in names:
            if free and r.random() < 0.5:
                out[v] = free.pop(r.randrange(len(free)))
        return out

    def reduction(self, ind: str) -> list[str]:
        """A nest in mvt's shape over arrays of its own (R, X, Y): each ``X[i]`` folds a
        row or a column of R, the inner loop's bounds free of ``i`` (a GPU stages it)."""
        r = self.rs
        ci, cj = r.choice(self.classes), r.choice(self.classes)
        col = r.random() < 0.5
        ct = r.choice(["float", "double"])
        self.arrays += [Array("R", ct, [Dim(cj, 0), Dim(ci, 0)] if col else
                              [Dim(ci, 0), Dim(cj, 0)]),
                        Array("X", ct, [Dim(ci, 0)]), Array("Y", ct, [Dim(cj, 0)])]
        li, ai = r.choice([0, 1]), r.choice([0, 1])
        lj, aj = r.choice([0, 0, 2]), r.choice([0, 0, 1])
        hi = (lambda c, a: c if a == 0 else f"{c} - {a}")
        rr = "R[j][i]" if col else "R[i][j]"
        body = r.choice([[f"X[i] = X[i] + {rr} * Y[j];"], [f"X[i] += 0.5f * {rr};"],
                         [f"X[i] = X[i] > {rr} ? X[i] : {rr};"],
                         [f"X[i] = 0.5f * X[i] + {rr};", "X[i] = X[i] * 0.75f + Y[j];"]])
        out = [f"{ind}for (int i = {li}; i < {hi(ci, ai)}; i++)",
               f"{ind}  for (int j = {lj}; j < {hi(cj, aj)}; j++)" + (" {" if len(body) > 1
                                                                       else "")]
        out += [f"{ind}    {b}" for b in body]
        return out + ([f"{ind}  }}"] if len(body) > 1 else [])

    def extremum(self, ind: str) -> list[str]:
        """A max or a min over a 2-D array of its own (Q) into a scalar, stored in W[0]
        after the nest (the thirteenth stream): bbmm gives each row, or each row and strip,
        its own partial (codegen/reductions.py); the result must be the C program's."""
        r = self.rx
        ci, cj = r.choice(self.classes), r.choice(self.classes)
        ct = r.choice(["float", "double", "int"])
        self.arrays += [Array("Q", ct, [Dim(ci, 0), Dim(cj, 0)]), Array("W", ct, [Dim(ci, 0)])]
        name = f"e{self.n_carried}"
        self.n_carried += 1
        li, ai = r.choice([0, 1]), r.choice([0, 1])
        lj, aj = r.choice([0, 0, 2]), r.choice([0, 0, 1])
        hi = (lambda c, a: c if a == 0 else f"{c} - {a}")
        e = r.choice(["Q[i][j]", "Q[i][j]", "Q[i][j] * 2" if ct == "int" else "0.5f * Q[i][j]",
                      "Q[i][j] - Q[i][0]"])
        body = []
        if r.random() < 0.4:
            body.append("Q[i][j] = (Q[i][j] + 1) % 7;" if ct == "int"
                        else "Q[i][j] = 0.75f * Q[i][j] + 0.125f;")
        if r.random() < 0.4:
            body.append(f"{ct} d = {e};")
            e = "d"
        forms = [f"{name} = {e} > {name} ? {e} : {name};", f"if ({e} < {name}) {name} = {e};",
                 f"{name} = {name} < {e} ? {e} : {name};", f"if ({name} > {e}) {{ {name} = {e}; }}"]
        if ct == "int":
            forms += [f"{name} = {e} >= {name} ? {e} : {name};",
                      f"{name} = {name} <= {e} ? {name} : {e};", f"{name} += {e} % 5;"]
        else:   # (no -0 in these programs: fmax's choice between zeros is the library's)
            f = "f" if ct == "float" else ""
            forms += [f"{name} = fmax{f}({name}, {e});", f"{name} = fmin{f}({name}, {e});"]
        body.insert(r.randint(0, len(body)) if e != "d" else len(body), r.choice(forms))
        start = r.choice(["W[1]", "0" if ct == "int" else "0.5f"])
        return [f"{ind}{ct} {name} = {start};",
                f"{ind}for (int i = {li}; i < {hi(ci, ai)}; i++)",
                f"{ind}  for (int j = {lj}; j < {hi(cj, aj)}; j++) {{"] \
            + [f"{ind}    {b}" for b in body] + [f"{ind}  }}", f"{ind}W[0] = {name};"]

    @staticmethod
    def _pragma_safe(nest: list[str], reads: list, writes: list, outer: str) -> bool:
        written: dict[str, set[str]] = {}
        for arr, acc in writes:
            written.setdefault(arr, set()).add(acc)
        for arr, accs in written.items():
            if len(accs) != 1:
                return False
            acc = next(iter(accs))
            if f"[{outer}]" not in acc:
                return False
        for arr, acc in reads:
            if arr in written and acc not in written[arr]:
                return False
        return True


def _renamed(text: str, renames: dict[str, str]) -> str:
    if not renames:
        return text
    return re.sub(r"\b[A-Za-z_]\w*\b", lambda m: renames.get(m.group(0), m.group(0)), text)


def generate(seed: int) -> Program:
    return _Gen(seed).program()


if __name__ == "__main__":
    for s in sys.argv[1:] or ["0"]:
        p = generate(int(s))
        print(f"// seed {s}: " + " ".join(p.param_args()))
        print(p.text)

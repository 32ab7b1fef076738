"""Scalar expansion in the front end (bbmm.codegen.frontend._build): which local arrays a
carried scalar becomes, over which loops, and what the rest of the compiler makes of
them (no write-out, subscripts in bounds, parallel loops kept). Ground truth for the
results is the e2e tier (tests/app/e2e/test_scalar_expansion.py, against the C programs)."""
from __future__ import annotations

import re

import islpy as isl
import pytest

from bbmm.diagnostic import BBMMWarning, UnsupportedProgramError
from bbmm.codegen.compile import out_of_bounds
from bbmm.codegen.deps import parallel_loops, plan
from bbmm.codegen.flow import plan_flow
from bbmm.codegen.frontend import parse_file, parse_source
from support.paths import KERNELS

EXPAND = sorted((KERNELS / "expand").glob("*.c")) + [
    KERNELS / "pb42" / f"{k}.c" for k in ("symm", "durbin", "gramschmidt", "ludcmp", "deriche")]


def locals_of(scop):
    """``{name: (C name, dims text)}`` of the local arrays."""
    return {a.name: (a.local, a.dims) for a in scop.arrays if a.local}


@pytest.mark.parametrize("path,expect", [
    ("expand/rowsum.c", {"s": ("s", ("max(1, n)",))}),
    # privatized over (t, i, j), t contracted (serial)
    ("expand/gemm_c89.c", {"acc": ("acc", ("max(1, ni)", "max(1, nj)"))}),
    # no loop encloses its uses: one element
    ("expand/dot.c", {"s": ("s", ("1",))}),
    ("expand/prefix.c", {"run": ("run", ("1",)), "top": ("top", ("1",))}),
    # one array per nest that uses w
    ("expand/webs.c", {"w": ("w", ("max(1, n)",)), "w_1": ("w", ("max(1, m)",)),
                       "w_2": ("w", ("max(1, n)",))}),
    # s over i only: j is serial (c is carried across it)
    ("expand/offset.c", {"c": ("c", ("max(1, n)",)), "s": ("s", ("max(1, n)",))}),
    # i is serial (C[k][j] for k < i): temp2 per column
    ("pb42/symm.c", {"temp2": ("temp2", ("max(1, n)",))}),
    ("pb42/ludcmp.c", {"w": ("w", ("1",)), "w_1": ("w", ("max(1, n)",)),
                       "w_2": ("w", ("1",)), "w_3": ("w", ("1",))}),
])
def test_local_arrays(path, expect):
    assert locals_of(parse_file(KERNELS / path)) == expect


@pytest.mark.parametrize("path,expect,parallel", [
    # one row per i, none per time step (t is serial); w[0..2] are scalars
    ("private/stencil.c", {"row": ("row", ("max(1, n - 2)", "max(1, n)"))},
     ["i", "j", "i", "j", "j"]),
    # one win per row, subscripted by k < w (s, a reduction, per (i, j))
    ("private/window.c", {"win": ("win", ("max(1, n)", "8")),
                          "s": ("s", ("max(1, n)", "max(1, n)"))}, ["i", "k", "j", "i", "j"]),
    # f[c], g[.][c], scale[0]: the loops over c unrolled, every element a scalar
    ("private/flux.c", {}, ["i", "j", "i", "j", "c"]),
])
def test_local_arrays_declared_inside_loops(path, expect, parallel):
    """C gives each iteration its own array: a copy per iteration of the parallel loops
    around it, subscripts in bounds, the loops as parallel as with no array at all."""
    s = parse_file(KERNELS / path)
    assert locals_of(s) == expect
    par = parallel_loops(s)
    assert [lp.iterator for lp in s.loops() if par[lp.id]] == parallel
    assert out_of_bounds(s) == []
    for a in expect:                      # never read in nor written back: no write-out
        assert s.array(a).local


def test_local_array_inside_a_serial_loop_only_is_one_copy():
    s = parse_source("void f(int n, float A[n]) {\n"
                     "  for (int i = 1; i < n; i++) {\n"
                     "    float w[2];\n"
                     "    for (int k = 0; k < 2 && k < n; k++) w[k] = A[i - k];\n"
                     "    A[i] = w[0] + w[1];\n  }\n}\n", "s.c")
    assert locals_of(s) == {"w": ("w", ("2",))}      # i is serial (A[i - 1]): contracted
    assert not parallel_loops(s)[s.loops()[0].id]


def test_durbin_local_array_and_deriche_per_row_state():
    s = parse_file(KERNELS / "pb42" / "durbin.c")
    z = s.array("z")
    assert z.local == "z" and z.dims == ("n",)          # a C local array: one copy
    assert [a.name for a in s.param_arrays] == ["r", "y"]
    d = locals_of(parse_file(KERNELS / "pb42" / "deriche.c"))
    assert d["ym1"] == ("ym1", ("max(1, w)",)) and d["ym1_1"] == ("ym1", ("max(1, h)",))
    assert len(d) == 14                                 # 7 row states, 7 column states


@pytest.mark.parametrize("path", EXPAND, ids=lambda p: p.stem)
def test_locals_in_bounds_never_written_out_and_parallel_kept(path):
    if path.stem == "omp_clauses":  # its pragma's loop carries a reduction: said, not kept
        with pytest.warns(BBMMWarning, match="parallel pragma of this loop is not followed"):
            s = parse_file(path)
    else:
        s = parse_file(path)
    assert out_of_bounds(s) == []
    local = {a.name for a in s.arrays if a.local}
    p = plan(s)
    for nf in plan_flow(s, p):
        for a in local:
            assert nf.write_out_set.extract_set(
                isl.Set(f"{{ {a}[{', '.join(f'x{d}' for d in range(s.array(a).ndim))}] }}")
                .get_space().align_params(nf.write_out_set.get_space())).is_empty()


def test_contraction_keeps_every_parallel_loop():
    """gemm_c89 expanded over (t, i, j) and over (i, j): the same loops are parallel."""
    src = (KERNELS / "expand" / "gemm_c89.c").read_text()
    contracted = parse_source(src, "g.c")
    assert [lp.iterator for lp in contracted.loops() if parallel_loops(contracted)[lp.id]] \
        == ["i", "j"]


def test_flow_across_nests_joins_one_web():
    s = parse_source("void f(int n, float A[n], float B[n]) { float w = 0; "
                     "for (int i = 0; i < n; i++) w = w + A[i]; "
                     "for (int i = 0; i < n; i++) B[i] = w; }", "w.c")
    assert locals_of(s) == {"w": ("w", ("1",))}
    # a value live from the first nest into the second: the second stays parallel
    assert [parallel_loops(s)[lp.id] for lp in s.loops()] == [False, True]


@pytest.mark.parametrize("src,message", [
    ("void f(int n, float A[n]) { float s; for (int i = 0; i < n; i++) { s += A[i]; "
     "A[i] = s; } }", re.escape("f.c:1:68: temporary 's' (declared at f.c:1:35) may be "
                               "read here before it is assigned")),
    ("void f(int n, float A[n]) { for (int i = 0; i < n; i++) { float s; "
     "if (i > 0) s = A[i]; A[i] = s; } }", "may be read here before it is assigned"),
    ("void f(int n, int m, float A[n]) { for (int j = 0; j < MAX(n, m); j++) { "
     "float s = 0; for (int k = 0; k < n; k++) s += A[k]; A[0] = s; } }",
     None),                                  # j contracted (serial): no range needed
    ("void f(int n, int m, float A[n], float B[n][n]) { for (int i = 0; i < n; i++) "
     "for (int j = 0; j < MAX(n, m); j++) { float s = 0; "
     "for (int k = 0; k < n; k++) s += A[k]; B[i][0] = s; } }",
     None),
    ("void f(int n, float A[n]) { char c;\n#pragma scop\nfor (int i = 0; i < n; i++) "
     "c = A[i];\n#pragma endscop\n}",
     re.escape("f.c:3:29: local variable 'c' (declared at f.c:1:34, before '#pragma scop') "
               "is not modelled")),
    ("void f(int n, int m, float A[n], float B[n + m]) { "
     "for (int j = 0; j < MAX(n, m); j++) { float s = 0; "
     "for (int k = 0; k < n; k++) s += A[k]; B[j] = s; } }",
     "f.c:1:96: temporary 's' is carried across iterations of the loop over 'j', whose "
     "range is not one affine interval"),
])
def test_refusals(src, message):
    """Each way a carried scalar is refused, or accepted where a refusal would be wrong."""
    if message is None:
        parse_source(src, "f.c")
        return
    with pytest.raises(UnsupportedProgramError, match=message):
        parse_source(src, "f.c")


def test_pragma_a_carried_value_crosses_is_not_followed():
    path = KERNELS / "expand" / "omp_clauses.c"
    with pytest.warns(BBMMWarning, match=r"omp_clauses\.c:8:3: the parallel pragma of this "
                                         r"loop is not followed: the scalar 's' carries"):
        s = parse_file(path)
    par = parallel_loops(s)
    first, second = s.loops()[0], s.loops()[1]
    assert not first.parallel_pragma and not par[first.id]     # runs in order
    assert second.parallel_pragma and par[second.id]           # w is private to i
    assert locals_of(s) == {"s": ("s", ("1",)), "w": ("w", ("max(1, n)",))}

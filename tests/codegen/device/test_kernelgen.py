"""Generated kernels (bbmm.codegen.opencl) run on the OpenCL device, one nest instance per test.

No runtime: each array is placed by hand, either whole in one slot (``sel = 0``, plus
unused slots as :func:`bbmm.runtime.kernel_args` pads them) or split into 2-3 row
blocks, each in its own buffer at a non-zero offset (``sel = -1``: the split path).
Arguments are packed by ``kernel_args`` itself, so the kernels are checked against the
runtime's convention. The reference interprets the IR in Python with numpy scalars
typed as in C (``float * double`` is double, ``int / int`` truncates), independently of
the generator's own type rules. The grid of the split variants is padded by one
work-item on each side, so the kernels' early returns are exercised too.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pyopencl as cl
import pytest

from bbmm.box import Box
from bbmm.buffers import Copy
from bbmm.devices.base import Allocation
from bbmm.diagnostic import UnsupportedProgramError
from bbmm.runtime import TileBuffers, kernel_args
from bbmm.codegen.deps import plan
from bbmm.codegen.frontend import parse_file, parse_source
from bbmm.codegen.opencl import generate_kernel
from bbmm.codegen.scop import (
    AffAnd, AffMax, AffMin, AffNot, AffOr, AffSelect, Affine, ArrayRef, BinOp, Call, Cast,
    Cmp, LoopNode, Num, Ternary, UnOp, Var)
from support.paths import KERNELS

pytestmark = pytest.mark.device

SLOTS = 3
PAD = 5
"""Elements before each block in its buffer (filled with garbage), so ``base != -lo*st``."""

# {{{ a reference interpreter of the IR, with C's types

NP = {"int": np.int32, "long": np.int64, "float": np.float32, "double": np.float64}


def ctype_of(v) -> str:
    return {np.int32: "int", np.int64: "long", np.float32: "float", np.float64: "double"}[type(v)]


def common(a: str, b: str) -> str:
    for t in ("double", "float", "long"):
        if t in (a, b):
            return t
    return "int"


def conv(v, t: str):
    if t in ("int", "long"):
        return NP[t](math.trunc(float(v))) if isinstance(v, (float, np.floating)) else NP[t](v)
    return NP[t](v)


def cmp(op, a, b) -> bool:
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[op]


def ev_bound(e, env) -> int:
    if isinstance(e, Affine):
        return e.evaluate(env)
    if isinstance(e, AffMin):
        return min(ev_bound(a, env) for a in e.args)
    if isinstance(e, AffMax):
        return max(ev_bound(a, env) for a in e.args)
    if isinstance(e, AffSelect):
        return ev_bound(e.then if ev_cond(e.cond, env) else e.else_, env)
    raise TypeError(e)


def ev_cond(c, env) -> bool:
    if isinstance(c, Cmp):
        return cmp(c.op, c.lhs.evaluate(env), c.rhs.evaluate(env))
    if isinstance(c, AffNot):
        return not ev_cond(c.arg, env)
    if isinstance(c, AffAnd):
        return all(ev_cond(a, env) for a in c.args)
    if isinstance(c, AffOr):
        return any(ev_cond(a, env) for a in c.args)
    raise TypeError(c)


def arith(op, a, b, t):
    a, b = conv(a, t), conv(b, t)
    if t in ("int", "long") and op in ("/", "%"):
        q = abs(int(a)) // abs(int(b)) * (1 if (a < 0) == (b < 0) else -1)   # C truncates
        return NP[t](q if op == "/" else int(a) - int(b) * q)
    return NP[t](a + b if op == "+" else a - b if op == "-" else a * b if op == "*" else a / b)


MATH = {"sqrt": np.sqrt, "exp": np.exp, "log": np.log, "fabs": np.abs, "floor": np.floor,
        "ceil": np.ceil, "fmin": np.fmin, "fmax": np.fmax, "pow": np.power,
        "erf": lambda x: math.erf(x)}


def ev(e, env, data):
    """Value of an expression as a numpy scalar of its C type."""
    if isinstance(e, Num):
        return NP[e.ctype](float(e.value.rstrip("fF")) if e.ctype != "int" else int(e.value))
    if isinstance(e, Var):
        return NP[e.ctype](env[e.name])
    if isinstance(e, ArrayRef):
        return data[e.array][tuple(x.evaluate(env) for x in e.index)]
    if isinstance(e, Cast):
        return conv(ev(e.operand, env, data), e.ctype)
    if isinstance(e, UnOp):
        v = ev(e.operand, env, data)
        return np.int32(not v) if e.op == "!" else -v if e.op == "-" else v
    if isinstance(e, BinOp):
        a, b = ev(e.left, env, data), ev(e.right, env, data)
        t = common(ctype_of(a), ctype_of(b))
        if e.op in ("<", "<=", ">", ">=", "==", "!="):
            return np.int32(cmp(e.op, conv(a, t), conv(b, t)))
        if e.op in ("&&", "||"):
            return np.int32(bool(a) and bool(b) if e.op == "&&" else bool(a) or bool(b))
        return arith(e.op, a, b, t)
    if isinstance(e, Ternary):
        a, b = ev(e.then, env, data), ev(e.else_, env, data)
        return conv(a if ev(e.cond, env, data) else b, common(ctype_of(a), ctype_of(b)))
    if isinstance(e, Call):
        args = [ev(a, env, data) for a in e.args]
        if e.func in ("min", "max", "MIN", "MAX"):
            t = common(*map(ctype_of, args))
            return conv((min if e.func.lower() == "min" else max)(args), t)
        if e.func == "abs":
            return np.int32(abs(int(args[0])))
        t = "float" if e.func.endswith("f") and e.func[:-1] in MATH else "double"
        return conv(MATH[e.func.rstrip("f") if t == "float" else e.func](
            *(conv(a, t) for a in args)), t)
    raise TypeError(e)


def run_statement(s, env, data):
    env = dict(env)
    for tmp in s.temps:              # scalar temporaries, in source order
        v = ev(tmp.expr, env, data)
        if tmp.op != "=":
            old = NP[tmp.ctype](env[tmp.name])
            v = arith(tmp.op[0], old, v, common(tmp.ctype, ctype_of(v)))
        env[tmp.name] = conv(v, tmp.ctype)
    a = data[s.lhs.array]
    ix = tuple(x.evaluate(env) for x in s.lhs.index)
    t = ctype_of(a[ix])
    v = ev(s.rhs, env, data)
    if s.op != "=":
        v = arith(s.op[0], a[ix], v, common(t, ctype_of(v)))
    a[ix] = conv(v, t)


def run_nodes(nodes, env, data):
    for n in nodes:
        if isinstance(n, LoopNode):
            lp = n.loop
            for v in range(ev_bound(lp.lower_expr, env), ev_bound(lp.upper_expr, env) + 1):
                run_nodes(n.children, {**env, lp.iterator: v}, data)
        elif all(ev_cond_text(g, env) for g in n.guards):
            run_statement(n, env, data)


def ev_cond_text(text: str, env) -> bool:
    py = text.replace("&&", " and ").replace("||", " or ").replace("!(", " not (")
    return bool(eval(py, {}, dict(env)))            # guards are affine C conditions


def band_points(scop, nest, env, lb, ub):
    """Every band point of the tile (the loop-bound semantics of the sequential program)."""
    loops = [scop.loop(i) for i in nest.band]

    def rec(d, env):
        if d == len(loops):
            yield env
            return
        lp = loops[d]
        lo, hi = ev_bound(lp.lower_expr, env), ev_bound(lp.upper_expr, env)
        if d == 0:
            lo, hi = max(lo, lb), min(hi, ub)
        for v in range(lo, hi + 1):
            yield from rec(d + 1, {**env, lp.iterator: v})

    return list(rec(0, env))


def reference(scop, nest, env, lb, ub, data):
    if not nest.band:                   # the nest's nodes among the innermost host loop's
        parent = scop.loop_node(nest.host_loops[-1]).children if nest.host_loops else scop.tree
        ours = [n for n in parent if all(s.name in nest.statements for s in (
            n.statements() if isinstance(n, LoopNode) else [n]))]
        run_nodes(ours, env, data)
        return
    body = scop.loop_node(nest.band[-1]).children
    for point in band_points(scop, nest, env, lb, ub):
        run_nodes(body, point, data)

# }}}

# {{{ running one nest instance on the device


@pytest.fixture(scope="module")
def cl_env():
    from bbmm.devices.opencl import discover

    # the device bbmm would use (a platform listed first may not build for this processor)
    ctx = cl.Context([discover().chosen[0].cl_device])
    return ctx, cl.CommandQueue(ctx), {}


def random_arrays(scop, params, rng):
    out = {}
    for a in scop.arrays:
        shape = a.shape(params)
        if a.ctype == "int":
            out[a.name] = rng.integers(-20, 21, size=shape).astype(np.int32)
        else:
            out[a.name] = rng.uniform(0.25, 2.0, size=shape).astype(NP[a.ctype])
    return out


def place(ctx, name, arr, blocks):
    """Row blocks ``[(r0, r1), ...]`` of ``arr``, each in its own buffer after PAD garbage
    elements: the (box, copy) pieces of a TileBuffers."""
    pieces = []
    for r0, r1 in blocks:
        box = Box((r0,) + (0,) * (arr.ndim - 1), (r1,) + tuple(n - 1 for n in arr.shape[1:]))
        host = np.concatenate([np.full(PAD, 77, arr.dtype), arr[r0:r1 + 1].ravel()])
        buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
        alloc = Allocation(buf, PAD * arr.itemsize, arr[r0:r1 + 1].nbytes)
        pieces.append((box, Copy(name, box, None, alloc, arr.itemsize)))
    return pieces


def fetch(queue, pieces, like):
    out = np.empty_like(like)
    for box, c in pieces:
        host = np.empty(PAD + box.volume, like.dtype)
        cl.enqueue_copy(queue, host, c.alloc.buf)
        out[box.lo[0]:box.hi[0] + 1] = host[PAD:].reshape(box.shape)
    return out


def run_case(cl_env, scop, nest, params, host_iters, tile, *, split, split_all=False,
             floats=None, seed=0, co=1, stage=None):
    """Run one nest instance on the device and compare with the reference; ``co`` points
    per work-item where the kernel takes BBMM_CO; ``stage`` = (BBMM_SL, BBMM_SG, BBMM_SC)
    where the kernel is staged (work-groups of SL x SG, NDRange dimension 1 = SG)."""
    ctx, queue, cache = cl_env
    key = (scop.function, nest.id, split_all, co, stage)
    if key not in cache:
        ks = generate_kernel(scop, plan(scop), nest, {a.name: SLOTS for a in scop.arrays},
                             split_all=split_all)
        co0, co1 = co if isinstance(co, tuple) else (co, 1)
        opts = f"-DBBMM_CO={co0} -DBBMM_CO1={co1}"
        if stage and ks.staged:
            opts += " -DBBMM_SL={} -DBBMM_SG={} -DBBMM_SC={}".format(*stage)
        cache[key] = ks, getattr(cl.Program(ctx, ks.source).build(options=opts), ks.name)
    ks, kernel = cache[key]
    rng = np.random.default_rng(seed)
    data = random_arrays(scop, params, rng)
    floats = floats or {}
    env = {**params, **floats, **host_iters}
    args = [np.int32(params[p]) for p in scop.int_params]
    args += [NP[t](floats[p]) for p, t in scop.float_params]
    args += [np.int32(host_iters[scop.loop(i).iterator]) for i in nest.host_loops]
    global_size: tuple[int, ...] = (1,)
    if nest.band:
        lb, ub = tile
        pts = band_points(scop, nest, env, lb, ub)
        assert pts, "empty tile"
        its = ks.band_iterators
        lo = [min(p[v] for p in pts) for v in its]
        ext = [max(p[v] for p in pts) - l + 1 for v, l in zip(its, lo)]
        if split:                       # a padded grid: the kernel must skip the extra items
            lo, ext = [l - 1 for l in lo], [e + 2 for e in ext]
        args += [np.int32(lb), np.int32(ub)] + [np.int32(v) for v in lo]
        global_size = ks.global_size(ext)
        if ks.coarsen or ks.blocked:
            co0, co1 = co if isinstance(co, tuple) else (co, 1)
            global_size = tuple(-(-g // p) for g, p in
                                zip(global_size, (co0, co1) + (1,) * (len(global_size) - 2)))
    tb = TileBuffers()
    for name, ids in zip(ks.arrays, ks.access_ids):
        arr = data[name]
        n0 = arr.shape[0]
        blocks = [(0, n0 // 3), (n0 // 3 + 1, n0 // 2), (n0 // 2 + 1, n0 - 1)] if split \
            else [(0, n0 - 1)]
        tb.pieces[name] = place(ctx, name, arr, blocks)
        tb.access[name] = [0 if (split_all or not split) else -1] * len(ids)
        args += kernel_args(tb, name, SLOTS, arr.ndim)
    assert len(args) == len(ks.arg_names)
    local_size = None
    if stage and ks.staged:
        sl, sg, _ = stage
        global_size, local_size = (-(-global_size[0] // sl) * sl, sg), (sl, sg)
    kernel(queue, global_size, local_size, *args)
    queue.finish()
    want = {k: v.copy() for k, v in data.items()}
    reference(scop, nest, env, *(tile or (0, 0)), want)
    for name in ks.arrays:
        got = fetch(queue, tb.pieces[name], data[name])
        rtol = {np.float32: 1e-5, np.float64: 1e-12}.get(got.dtype.type, 0)
        np.testing.assert_allclose(got, want[name], rtol=rtol, atol=rtol,
                                   err_msg=f"{ks.name}: array {name}")
    return ks

# }}}

# {{{ kernels of tests/kernels


CASES = {
    # name: (params, floats, {nest id: (host iterators, tile)})
    "floyd": ({"n": 9}, {}, {0: ({"k": 3}, (2, 6))}),
    "jacobi2d": ({"tsteps": 2, "n": 10}, {}, {0: ({"t": 0}, (3, 7)), 1: ({"t": 1}, (1, 4))}),
    "matmul": ({"ni": 8, "nj": 9, "nk": 7}, {"alpha": 1.5}, {0: ({}, (2, 5))}),
    "triangular": ({"n": 9}, {}, {0: ({}, (1, 5))}),
    "imperfect": ({"n": 8}, {}, {0: ({}, (0, 4))}),
    "heat3d": ({"tsteps": 2, "n": 7}, {}, {0: ({"t": 1}, (2, 4)), 1: ({"t": 1}, (1, 5))}),
    "vec1d": ({"n": 12}, {"a": 2.5}, {0: ({}, (3, 9))}),
    "alpha_int": ({"n": 7, "m": 8}, {"alpha": 0.5, "beta": 0.75}, {0: ({}, (1, 5))}),
    "minmax": ({"n": 10, "w": 2}, {}, {0: ({}, (2, 8)), 1: ({}, (2, 8))}),
    "guarded": ({"n": 8}, {}, {0: ({}, (2, 6))}),
    "prefix_sum": ({"n": 9}, {}, {0: ({"i": 4}, None)}),
    "strips": ({"n": 15}, {}, {0: ({}, (3, 10))}),
    "promote": ({"n": 11}, {}, {0: ({}, (0, 6))}),
    "staged": ({"m": 13, "n": 10}, {}, {0: ({}, (1, 8)), 1: ({}, (2, 12)), 2: ({}, (0, 9)),
                                       3: ({}, (3, 9)), 4: ({}, (0, 9))}),
    "temps": ({"tsteps": 2, "n": 9}, {"alpha": 0.75},
              {0: ({"t": 1}, (2, 6)), 1: ({"t": 0}, (1, 5)), 2: ({"t": 1}, (3, 8))}),
}
_SCOPS: dict = {}


def scop_of(name):
    if name not in _SCOPS:
        _SCOPS[name] = parse_file(KERNELS / f"{name}.c")
    return _SCOPS[name]


@pytest.mark.parametrize("co", [1, (3, 2), (2, 5)], ids=["co1", "co3x2", "co2x5"])
@pytest.mark.parametrize("variant", ["whole", "split", "split_all"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_nest_matches_reference(cl_env, name, variant, co):
    scop = scop_of(name)
    params, floats, nests = CASES[name]
    p = plan(scop)
    assert sorted(nests) == [n.id for n in p.nests]
    for nest in p.nests:
        host, tile = nests[nest.id]
        run_case(cl_env, scop, nest, params, host, tile, split=variant != "whole",
                 split_all=variant == "split_all", floats=floats, seed=nest.id, co=co)


def test_coarsening_only_for_one_plain_assignment():
    """Several points per work-item need one '=' statement as the band's body (loads of
    all points, then stores); inner loops, several statements or '+=' keep one point."""
    assert gen("heat3d").coarsen and gen("vec1d").coarsen and gen("jacobi2d", 1).coarsen
    assert not gen("matmul").coarsen          # an inner loop over k
    assert not gen("floyd").coarsen           # a 1-D band over i with j inside
    assert not gen("prefix_sum").coarsen      # no band
    src = gen("heat3d").source
    assert "const int k0 = g2 + (int)(get_group_id(0) * get_local_size(0) * BBMM_CO" in src
    assert "const int j0 = g1 + (int)get_global_id(1) * BBMM_CO1;" in src
    assert src.index("v[r][u] = ") < src.index("= v[r][u];")


def test_which_nests_are_register_blocked():
    """A band body of statements around one inner loop whose bounds ignore the band and
    whose statements write only elements that stay put across it (kept in registers);
    the loop then writes no global memory."""
    assert gen("matmul").blocked and gen("imperfect").blocked
    assert not gen("matmul").coarsen
    assert not gen("floyd").blocked           # no inner loop: one plain assignment per point
    assert not gen("triangular").blocked      # the inner loop's bounds depend on i
    assert not gen("heat3d").blocked and not gen("prefix_sum").blocked
    src = gen("matmul").source
    loop = src[src.index("if (full) {"):src.index("} else {", src.index("if (full) {"))]
    assert "C_reg[r][u] += ((alpha * A_REF(" in loop
    assert "C_REF(" not in loop               # C stays in registers inside the loop
    assert src.index("C_reg[r][u] = C_REF(") < src.index("if (full) {") \
        < src.index(", i, j) = C_reg[r][u];")


def test_strips_slide_windows_only_where_rows_share_values():
    """With BBMM_CO1 rows per work-item, reads X[i + c][rest] of consecutive offsets
    share a window of registers (one load per row), reads independent of i are loaded
    once, anything else once per row; a bound that depends on i leaves no strip path."""
    src = gen("strips").source
    start = src.index("#if BBMM_CO1 > 1")
    strip = src[start:src.index("#endif", start)]
    loop = strip[strip.index("for (int r = 0;"):]
    before = strip[strip.index("const int i = i_first;"):strip.index("for (int r = 0;")]
    # the window of rows i-1 .. i+1: rows i-1 and i before the strip, row i+1 per row
    assert "A_REF(A_sel0_v, i - 1, j)" in before and "A_REF(A_sel1_v, i, j)" in before
    assert "A_REF(A_sel2_v, i + 1, j)" in loop and "A_REF(A_sel2_v" not in before
    assert "A_REF(A_sel0_v" not in loop and "A_REF(A_sel1_v" not in loop
    # row-invariant reads once, before the rows
    assert "y_REF(y_sel8_v, j)" in before and "A_REF(A_sel9_v, 1, j)" in before
    assert "y_REF" not in loop and "A_REF(A_sel9_v" not in loop
    # a gap (C's rows i-2, i+2), 2i, the diagonal, a column: loaded at each row
    for text in ("C_REF(C_sel3_v, i - 2, j)", "C_REF(C_sel4_v, i + 2, j)",
                 "C_REF(C_sel5_v, 2*i, j)", "A_REF(A_sel6_v, i, i)", "A_REF(A_sel7_v, j, i)"):
        assert text in loop and text not in before, text
    assert loop.count("slide the windows") == 1
    assert "#if BBMM_CO1 > 1" not in gen("triangular").source  # j starts at i + 1


def test_restrict_only_on_arrays_the_nest_does_not_write():
    ks = gen("heat3d")
    types = dict(zip(ks.arg_names, ks.arg_types))
    assert types["A_buf0"] == "__global const float* BBMM_RESTRICT"   # read only
    assert types["B_buf0"] == "__global float*"                        # written
    fl = dict(zip(gen("floyd").arg_names, gen("floyd").arg_types))
    assert fl["path_buf0"] == "__global float*"                        # read and written


MATHFNS = """
void mathfns(int n, float a[n], double b[n], int c[n], float out[n], double outd[n],
             int outi[n]) {
  for (int i = 0; i < n; i++) {
    out[i] = sqrtf(a[i]) + expf(a[i]) * fabsf(a[i] - 1.5f) + fminf(a[i], 0.7f) + pow(a[i], 2)
             + exp(a[i]) + 0.1 * a[i] + fmaxf(a[i], fabsf(a[i] - 0.5f)) + sqrtf(fminf(a[i], 2.0f));
    outd[i] = sqrt(c[i] + 30) + log(b[i]) + floor(b[i] * 3) + ceil(a[i]) + erf(b[i])
              + fmax(b[i], a[i]) + MAX(b[i], 1) + (b[i] > 1.0f ? 2 : b[i]);
    outi[i] = c[i] / 3 + c[i] % 4 + abs(c[i] - 5) + MIN(c[i], 3) + max(c[i], i)
              + (int)(a[i] * 10) - c[i] / -7;
    outi[i] += i * 2;
  }
}
"""


@pytest.mark.parametrize("split", [False, True])
def test_math_functions_and_c_types(cl_env, split):
    scop = parse_source(MATHFNS, "mathfns.c")
    ks = run_case(cl_env, scop, plan(scop).nests[0], {"n": 11}, {}, (0, 10), split=split)
    src = ks.source
    assert "sqrt(((float)" not in src and "sqrt(a_REF" in src      # sqrtf -> sqrt on float
    code = re.sub(r"/\*.*?\*/", "", src, flags=re.DOTALL)            # (not the comments)
    assert not re.search(r"\b(fabsf|fminf|fmaxf|sqrtf)\(", code)   # inside calls too
    assert "exp(((double)a_REF" in src                 # C's exp(float) computes in double
    assert "sqrt(((double)(c_REF" in src               # no ambiguous sqrt(int)
    assert "((int)abs(" in src                         # OpenCL abs(int) returns uint

# }}}

# {{{ the text of the kernels


def gen(name, nest=0, slots=1, **kw):
    scop = scop_of(name)
    p = plan(scop)
    return generate_kernel(scop, p, p.nests[nest], {a.name: slots for a in scop.arrays}, **kw)


def test_floyd_arguments_follow_the_runtime_convention():
    ks = gen("floyd")
    assert ks.name == "floyd_nest0" and ks.arrays == ("path",) and ks.band_ndim == 1
    assert list(ks.arg_names) == [
        "n", "k", "lb", "ub", "g0",
        "path_buf0", "path_base0", "path_st0_0", "path_lo0_0", "path_lo0_1",
        "path_hi0_0", "path_hi0_1"] + [f"path_sel{i}" for i in range(7)]
    assert ks.arg_types[5:8] == ("__global float*", "long", "int")
    assert ks.access_ids == ((0, 1, 2, 3, 4, 5, 6),)
    assert "__kernel void floyd_nest0(" in ks.source
    assert "/* S0: path[i][j] = " in ks.source and "/* loop 2: for (j = 0" in ks.source
    assert "path_REF(path_sel6_v, i, j) = " in ks.source
    assert "cl_khr_fp64" not in ks.source


def test_unsplit_path_has_no_bounds_test_and_split_all_has_no_sel():
    src = gen("jacobi2d", slots=3).source
    defs = {line.split("(")[0].split()[-1]: line for line in src.splitlines()
            if line.startswith("#define")}
    assert "_lo" not in defs["A_SEL"] and "_hi" not in defs["A_SEL"]
    assert "A_lo##s##_0" in defs["A_IN"] and "A_IN(0, x0, x1)" in defs["A_FIND"]
    assert "(k) >= 0 ? A_SEL(k, x0, x1) : A_FIND(x0, x1)" in defs["A_REF"]
    assert "#pragma OPENCL EXTENSION cl_khr_fp64 : enable" in src
    worst = gen("jacobi2d", slots=3, split_all=True)
    ref = next(line for line in worst.source.splitlines() if line.startswith("#define A_REF"))
    assert "A_SEL" not in ref and "A_FIND(x0, x1)" in ref and worst.split_all


def test_innermost_band_loop_is_opencl_dimension_0():
    ks = gen("heat3d")
    assert ks.band_ndim == 3 and ks.band_dim_of_cl_dim == (2, 1, 0)
    assert "const int k = k0 + u * (int)get_local_size(0);" in ks.source
    assert "const int i = BBMM_ROW(g0 + (int)get_global_id(2));" in ks.source
    assert ks.global_size([3, 4, 5]) == (5, 4, 3)
    assert "if (i < lb || i > ub || i < 1 || i > n - 2)" in ks.source


HOSTED = """
void hosted(int n, float A[n][n], float s[n]) {
  for (int t = 1; t < n; t++) {
    s[t] = s[t - 1] + A[t - 1][t];
    for (int i = 0; i < n; i++)
      A[t][i] = A[t - 1][i] * s[t];
  }
}
"""


@pytest.mark.parametrize("split", [False, True])
def test_empty_band_is_one_work_item(cl_env, split):
    scop = parse_source(HOSTED, "hosted.c")
    p = plan(scop)
    assert [(n.band, n.host_loops) for n in p.nests] == [((), (0,)), ((1,), (0,))]
    ks = run_case(cl_env, scop, p.nests[0], {"n": 7}, {"t": 3}, None, split=split)
    assert ks.band_ndim == 0 and ks.global_size([]) == (1,)
    assert list(ks.arg_names[:3]) == ["n", "t", "A_buf0"] and "lb" not in ks.arg_names
    assert "get_global_id" not in ks.source
    run_case(cl_env, scop, p.nests[1], {"n": 7}, {"t": 3}, (2, 5), split=split)
    seq = gen("prefix_sum")                 # an all-sequential loop runs inside the kernel
    assert seq.band_ndim == 0 and "for (int i = 1; i <= n - 1; i++) {" in seq.source


def test_guards_and_bounds_with_min_max():
    g = gen("guarded").source
    assert "if ((!((i != j) && (j < n - 1))))" in g
    m = gen("minmax").source
    assert "&& !(j < max(0, i - w) || j > min(n - 1, i + w)))" in m


def test_without_fp64_doubles_become_float():
    ks = gen("alpha_int", fp64=False)
    assert not ks.fp64 and "cl_khr_fp64" not in ks.source
    assert ks.arg_types[ks.arg_names.index("beta")] == "float"
    assert "(beta > 0.5f) ? beta : 0.0f" in ks.source and "exp(out_REF" in ks.source
    with pytest.raises(UnsupportedProgramError, match="array 'A' is double"):
        gen("jacobi2d", fp64=False)


def test_generated_names_avoid_user_names():
    scop = parse_source("void f(int lb, int g0, float A[lb]) {\n"
                        "  for (int i = 0; i < lb; i++) A[i] = A[i] * g0;\n}\n")
    p = plan(scop)
    ks = generate_kernel(scop, p, p.nests[0], {"A": 1})
    assert ks.arg_names[:5] == ("lb", "g0", "_bbmm_lb", "ub", "_bbmm_g0")

# }}}

# vim: foldmethod=marker


STAGED = ["staged", "promote", "floyd", "triangular", "matmul"]


@pytest.mark.parametrize("stage", [(4, 2, 3), (8, 3, 16), (32, 4, 128)],
                         ids=["4x2x3", "8x3x16", "32x4x128"])
@pytest.mark.parametrize("variant", ["whole", "split", "split_all"])
@pytest.mark.parametrize("name", STAGED)
def test_staged_nest_matches_reference(cl_env, name, variant, stage):
    """Staged kernels (-DBBMM_SG) against the reference: chunks of the inner loop that do
    not divide its trip count, band points of a group outside the tile, split pieces.
    Kernels that cannot be staged ignore the option (each name's nests, staged or not)."""
    scop = scop_of(name)
    params, floats, nests = CASES[name]
    for nest in plan(scop).nests:
        host, tile = nests[nest.id]
        run_case(cl_env, scop, nest, params, host, tile, split=variant != "whole",
                 split_all=variant == "split_all", floats=floats, seed=nest.id, stage=stage)


def test_which_nests_are_staged():
    """A 1-D band whose body is one inner loop with bounds free of the band iterator,
    unguarded statements and a read of a read-only array moving with both iterators."""
    def staged(name):
        scop = scop_of(name) if name != "adi" else \
            parse_file(KERNELS.parent.parent / "polybench" / "adi.c")
        p = plan(scop)
        return [generate_kernel(scop, p, n, {a.name: SLOTS for a in scop.arrays}).staged
                for n in p.nests]
    assert staged("staged") == [True, True, False, True, True]  # z[i][j] moves with j
    assert staged("adi") == [False] * 6      # X[i][j] after X[i][j-1]: global chains
    assert staged("promote") == [False]      # four loops in the band's body
    assert staged("floyd") == [False]        # a 2-D band
    assert staged("triangular") == [False]   # j's bounds depend on i
    assert staged("matmul") == [False]

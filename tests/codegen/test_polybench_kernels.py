"""The paper's programs (polybench/*.c, Table IV plus matmul): each parses, its plan has
the parallel loops the paper relies on, and the sequential C (built by bbmm.reference)
computes what a numpy version of the same program computes at a small size."""
from __future__ import annotations

import math

import numpy as np
import pytest

from bbmm import reference as ref
from bbmm.codegen.deps import plan
from bbmm.codegen.frontend import parse_file
from support.paths import POLYBENCH


CI_SIZES = {
    "floyd": {"n": 64},
    "heat2d": {"tsteps": 4, "n": 64},
    "fdtd2d": {"tmax": 4, "nx": 48, "ny": 40},
    "heat3d": {"tsteps": 3, "n": 16},
    "lu": {"n": 64},
    "adi": {"tsteps": 3, "n": 32},
    "mvt": {"m": 80, "n": 48},
    "blackscholes": {"n": 4096},
    "matmul": {"ni": 48, "nj": 40, "nk": 32},
}
"""Small sizes for CI (polybench/README.md lists the paper's sizes)."""

SCALARS = {
    "blackscholes": {"riskfree": 0.02, "volatility": 0.30},     # the SDK's values
    "matmul": {"alpha": 1.5, "beta": 1.2},
}

EXPECTED_PLAN = {
    # program: (iterators of the serial host loops, [band iterators of each nest])
    "floyd": (["k"], [["i", "j"]]),
    "heat2d": (["t"], [["i", "j"], ["i", "j"]]),
    "fdtd2d": (["t"], [["j"], ["i", "j"], ["i", "j"], ["i", "j"]]),
    "heat3d": (["t"], [["i", "j", "k"], ["i", "j", "k"]]),
    "lu": (["k"], [["j"], ["i", "j"]]),
    "adi": (["t"], [["i1"], ["i1"], ["i1"], ["i2"], ["i2"], ["i2"]]),
    "mvt": ([], [["i"], ["i"]]),
    "blackscholes": ([], [["i"]]),
    "matmul": ([], [["i", "j"]]),
}

PROGRAMS = sorted(CI_SIZES)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("polybench-ref")


def _scop(name):
    return parse_file(POLYBENCH / f"{name}.c")


def _run(name, cache):
    """(inputs, outputs) of the sequential C kernel at the CI size."""
    scop = _scop(name)
    lib = ref.build_library(POLYBENCH / f"{name}.c", cache_dir=cache)
    params = CI_SIZES[name]
    arrays, scalars = ref.init_arrays(scop, params, seed=1, lib=lib,
                                      scalars=SCALARS.get(name))
    out = ref.run_reference(POLYBENCH / f"{name}.c", scop, params, scalars, arrays,
                            cache_dir=cache)
    for a, v in out.items():
        assert np.all(np.isfinite(v)), f"{name}: {a} has non-finite values"
    return {k: v.copy() for k, v in arrays.items()}, scalars, out


def _check(name, got, expect, rtol=None):
    m = ref.compare(name, got, expect, "float", rtol)
    assert m is None, str(m)

# {{{ front end and plan


@pytest.mark.parametrize("name", PROGRAMS)
def test_parses_and_has_parallel_band(name):
    scop = _scop(name)
    assert scop.function == name
    assert set(scop.int_params) == set(CI_SIZES[name])
    p = plan(scop)
    assert any(n.band for n in p.nests), p


@pytest.mark.parametrize("name", PROGRAMS)
def test_plan_matches_readme(name):
    scop = _scop(name)
    p = plan(scop)
    it = {lp.id: lp.iterator for lp in scop.loops()}
    serial, bands = EXPECTED_PLAN[name]
    assert [it[i] for i in p.serial_loops] == serial
    assert [[it[i] for i in n.band] for n in p.nests] == bands
    assert all(n.host_loops == p.serial_loops for n in p.nests)


def test_every_program_has_a_file():
    assert {p.stem for p in POLYBENCH.glob("*.c")} == set(PROGRAMS)

# }}}

# {{{ sequential C against numpy


def test_floyd(cache):
    inp, _, out = _run("floyd", cache)
    path = inp["path"].copy()
    n = path.shape[0]
    assert np.all(np.diag(path) == 0) and np.any(path == 1e6) and np.any(path < 1e6 - 1)
    for k in range(n):
        path = np.minimum(path, path[:, k:k + 1] + path[k:k + 1, :])
    np.testing.assert_array_equal(out["path"], path)      # small integers: exact
    assert np.all(out["path"] <= inp["path"])


def _stencil2d(x):
    y = x.copy()
    c = x[1:-1, 1:-1]
    y[1:-1, 1:-1] = (np.float32(0.125) * (x[2:, 1:-1] - np.float32(2) * c + x[:-2, 1:-1])
                     + np.float32(0.125) * (x[1:-1, 2:] - np.float32(2) * c + x[1:-1, :-2])
                     + c)
    return y


def test_heat2d(cache):
    inp, _, out = _run("heat2d", cache)
    a, b = inp["A"].copy(), inp["B"].copy()
    for _ in range(CI_SIZES["heat2d"]["tsteps"]):
        b[1:-1, 1:-1] = _stencil2d(a)[1:-1, 1:-1]
        a[1:-1, 1:-1] = _stencil2d(b)[1:-1, 1:-1]
    _check("A", out["A"], a)
    _check("B", out["B"], b)


def _stencil3d(x):
    c = x[1:-1, 1:-1, 1:-1]
    h = np.float32(0.125)
    two = np.float32(2)
    return (h * (x[2:, 1:-1, 1:-1] - two * c + x[:-2, 1:-1, 1:-1])
            + h * (x[1:-1, 2:, 1:-1] - two * c + x[1:-1, :-2, 1:-1])
            + h * (x[1:-1, 1:-1, 2:] - two * c + x[1:-1, 1:-1, :-2]) + c)


def test_heat3d(cache):
    inp, _, out = _run("heat3d", cache)
    a, b = inp["A"].copy(), inp["B"].copy()
    for _ in range(CI_SIZES["heat3d"]["tsteps"]):
        b[1:-1, 1:-1, 1:-1] = _stencil3d(a)
        a[1:-1, 1:-1, 1:-1] = _stencil3d(b)
    _check("A", out["A"], a)
    _check("B", out["B"], b)


def test_fdtd2d(cache):
    inp, _, out = _run("fdtd2d", cache)
    ex, ey, hz, fict = (inp[k].copy() for k in ("ex", "ey", "hz", "_fict_"))
    half, c7 = np.float32(0.5), np.float32(0.7)
    for t in range(CI_SIZES["fdtd2d"]["tmax"]):
        ey[0, :] = fict[t]
        ey[1:, :] = ey[1:, :] - half * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] = ex[:, 1:] - half * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] = hz[:-1, :-1] - c7 * (ex[:-1, 1:] - ex[:-1, :-1]
                                            + ey[1:, :-1] - ey[:-1, :-1])
    for k, v in (("ex", ex), ("ey", ey), ("hz", hz), ("_fict_", fict)):
        _check(k, out[k], v)


def test_lu(cache):
    inp, _, out = _run("lu", cache)
    a0 = inp["A"]
    n = a0.shape[0]
    off = a0 - np.diag(np.diag(a0))
    assert np.all(np.abs(np.diag(a0)) > np.abs(off).sum(axis=1))   # diagonally dominant
    a = a0.copy()
    for k in range(n):
        a[k, k + 1:] = a[k, k + 1:] / a[k, k]
        a[k + 1:, k + 1:] = a[k + 1:, k + 1:] - np.outer(a[k + 1:, k], a[k, k + 1:])
    _check("A", out["A"], a)
    f = out["A"].astype(np.float64)
    lower, upper = np.tril(f), np.triu(f, 1) + np.eye(n)
    _check("L*U", lower @ upper, a0.astype(np.float64))


def test_adi(cache):
    inp, _, out = _run("adi", cache)
    x, a, b = (inp[k].astype(np.float32) for k in ("X", "A", "B"))
    n = x.shape[0]
    for _ in range(CI_SIZES["adi"]["tsteps"]):
        for i2 in range(1, n):                       # row sweep, all rows at once
            x[:, i2] = x[:, i2] - x[:, i2 - 1] * a[:, i2] / b[:, i2 - 1]
            b[:, i2] = b[:, i2] - a[:, i2] * a[:, i2] / b[:, i2 - 1]
        x[:, n - 1] = x[:, n - 1] / b[:, n - 1]
        for i2 in range(n - 2):
            x[:, n - i2 - 2] = (x[:, n - 2 - i2] - x[:, n - 3 - i2] * a[:, n - i2 - 3]) \
                / b[:, n - 3 - i2]
        for i1 in range(1, n):                       # column sweep, all columns at once
            x[i1, :] = x[i1, :] - x[i1 - 1, :] * a[i1, :] / b[i1 - 1, :]
            b[i1, :] = b[i1, :] - a[i1, :] * a[i1, :] / b[i1 - 1, :]
        x[n - 1, :] = x[n - 1, :] / b[n - 1, :]
        for i1 in range(n - 2):
            x[n - 2 - i1, :] = (x[n - 2 - i1, :] - x[n - i1 - 3, :] * a[n - 3 - i1, :]) \
                / b[n - 2 - i1, :]
    assert np.all(b > 1.0)                           # pivots stay away from zero
    _check("X", out["X"], x)
    _check("B", out["B"], b)
    _check("A", out["A"], a)


def test_mvt(cache):
    inp, _, out = _run("mvt", cache)
    a = inp["A"].astype(np.float64)
    _check("x1", out["x1"], inp["x1"] + a @ inp["y1"])
    _check("x2", out["x2"], inp["x2"] + a.T @ inp["y2"])
    for k in ("A", "y1", "y2"):
        np.testing.assert_array_equal(out[k], inp[k])


def test_matmul(cache):
    inp, s, out = _run("matmul", cache)
    a, b = inp["A"].astype(np.float64), inp["B"].astype(np.float64)
    _check("C", out["C"], s["beta"] * inp["C"] + s["alpha"] * a @ b)


def _cnd(d):
    f = np.float32
    k = f(1) / (f(1) + f(0.2316419) * np.abs(d))
    p = (f(0.39894228040143267793994605993438) * np.exp(f(-0.5) * d * d)
         * (k * (f(0.31938153) + k * (f(-0.356563782) + k * (f(1.781477937)
            + k * (f(-1.821255978) + k * f(1.330274429)))))))
    return np.where(d > 0, f(1) - p, p)


def test_blackscholes(cache):
    inp, sc, out = _run("blackscholes", cache)
    f = np.float32
    s, x, t = inp["stock_price"], inp["option_strike"], inp["option_years"]
    assert 5 <= s.min() and s.max() <= 30 and 1 <= x.min() and x.max() <= 100
    assert 0.25 <= t.min() and t.max() <= 10 and np.ptp(s) > 20 and np.ptp(x) > 90
    r, v = f(sc["riskfree"]), f(sc["volatility"])
    sqrt_t = np.sqrt(t)
    d1 = (np.log(s / x) + (r + f(0.5) * v * v) * t) / (v * sqrt_t)
    d2 = d1 - v * sqrt_t
    c1, c2 = _cnd(d1), _cnd(d2)
    e = np.exp(-r * t)
    call = s * c1 - x * e * c2
    put = x * e * (f(1) - c2) - s * (f(1) - c1)
    _check("call_result", out["call_result"], call)
    _check("put_result", out["put_result"], put)
    # independent: exact normal CDF (the polynomial is within 7.5e-8 of it), and parity
    phi = np.vectorize(lambda z: 0.5 * math.erfc(-z / math.sqrt(2.0)))
    s64, x64, t64 = (a.astype(np.float64) for a in (s, x, t))
    e1 = (np.log(s64 / x64) + (0.02 + 0.045) * t64) / (0.3 * np.sqrt(t64))
    e2 = e1 - 0.3 * np.sqrt(t64)
    exact = s64 * phi(e1) - x64 * np.exp(-0.02 * t64) * phi(e2)
    _check("call vs exact", out["call_result"], exact, rtol=1e-3)
    _check("put-call parity", out["call_result"] - out["put_result"],
           s64 - x64 * np.exp(-0.02 * t64), rtol=1e-3)

# }}}

# vim: foldmethod=marker

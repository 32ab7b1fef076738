"""The sequential C reference (bbmm.reference): build, call, inputs, comparison."""
from __future__ import annotations

import math
import subprocess

import numpy as np
import pytest

from bbmm import reference as ref
from bbmm.diagnostic import BBMMError, BBMMWarning, UsageError
from bbmm.codegen.frontend import parse_file
from support.paths import KERNELS



@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("refcache")


@pytest.fixture(autouse=True)
def _private_cache(cache, monkeypatch):
    monkeypatch.setenv("BBMM_CACHE", str(cache / "env"))


def kernel(name):
    path = KERNELS / f"{name}.c"
    return path, parse_file(path)


def run(name, params, cache, seed=0, **kw):
    path, scop = kernel(name)
    arrays, scalars = ref.init_arrays(scop, params, seed=seed, use_init=False)
    scalars.update(kw)
    out = ref.run_reference(path, scop, params, scalars, arrays, cache_dir=cache)
    return scop, arrays, scalars, out


def assert_close(scop, out, expect):
    for name, e in expect.items():
        m = ref.compare(name, out[name], e, scop.array(name).ctype)
        assert m is None, str(m)


# {{{ C kernels against numpy

def test_floyd_plain(cache):
    scop, a, _, out = run("floyd_plain", {"n": 12}, cache)
    p = a["path"].copy()
    for k in range(12):
        p = np.minimum(p, p[:, k:k + 1] + p[k:k + 1, :])
    np.testing.assert_array_equal(out["path"], p)          # same float ops: bit-exact
    assert not np.array_equal(out["path"], a["path"])      # it did something


def test_matmul(cache):
    scop, a, sc, out = run("matmul", {"ni": 7, "nj": 9, "nk": 11}, cache, alpha=0.75)
    assert sc["alpha"] == 0.75
    c = a["C"].astype(np.float64) + 0.75 * (a["A"].astype(np.float64) @ a["B"])
    assert_close(scop, out, {"C": c, "A": a["A"], "B": a["B"]})
    assert ref.compare("C", out["C"], a["C"], "float") is not None


def test_alpha_int(cache):
    n, m = 6, 5
    scop, a, sc, out = run("alpha_int", {"n": n, "m": m}, cache, alpha=0.5, beta=0.75)
    assert out["counts"].dtype == np.intc and out["out"].dtype == np.float32
    i, j = np.indices((n, m))
    counts = a["counts"] * 2 + i - j
    np.testing.assert_array_equal(out["counts"], counts)
    o = (np.float32(0.5) * counts.astype(np.float32)).astype(np.float64) + 0.75 \
        + np.exp(a["out"].astype(np.float64))
    assert_close(scop, out, {"out": o.astype(np.float32)})
    # beta <= 0.5 takes the other branch of the double ternary
    _, a2, _, out2 = run("alpha_int", {"n": n, "m": m}, cache, alpha=0.5, beta=0.25)
    o2 = (np.float32(0.5) * counts.astype(np.float32)).astype(np.float64) \
        + np.exp(a2["out"].astype(np.float64))
    assert ref.compare("out", out2["out"], o2.astype(np.float32), "float") is None


def test_jacobi2d(cache):
    scop, a, _, out = run("jacobi2d", {"tsteps": 3, "n": 10}, cache)
    A, B = a["A"].copy(), a["B"].copy()
    for _ in range(3):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1]
                               + A[:-2, 1:-1])
        A[1:-1, 1:-1] = B[1:-1, 1:-1]
    assert_close(scop, out, {"A": A, "B": B})


def test_prefix_sum_and_inputs_untouched(cache):
    scop, a, _, out = run("prefix_sum", {"n": 50}, cache)
    A = a["A"].copy()
    A[1:] = A[0] + np.cumsum(a["B"][1:])
    assert_close(scop, out, {"A": A, "B": a["B"]})
    assert out["A"] is not a["A"] and not np.array_equal(out["A"], a["A"])


def test_minmax_builtin_min(cache):
    n, w = 9, 2        # uses OpenCL-style min() that C lacks: the prelude provides it
    scop, a, _, out = run("minmax", {"n": n, "w": w}, cache)
    A, B = a["A"].copy(), a["B"].copy()
    for i in range(n):
        for j in range(max(0, i - w), min(n - 1, i + w) + 1):
            B[i, j] = np.float32(2) * A[i, j]
    for i in range(n):
        for j in range(i if i < n - 2 else n - 2):
            A[i, j] = B[i, j + 1]
    np.testing.assert_array_equal(out["A"], A)
    np.testing.assert_array_equal(out["B"], B)


def test_vec1d_and_mvt_math(cache):
    scop, a, sc, out = run("vec1d", {"n": 8}, cache)
    assert sc == {"a": ref.DEFAULT_SCALAR}
    y = a["y"].copy()
    y[1:] = np.float32(ref.DEFAULT_SCALAR) * a["x"] + y[1:]
    np.testing.assert_array_equal(out["y"], y)
    assert out["y"].shape == (9,)

    scop, a, _, out = run("imperfect", {"n": 6}, cache)
    s = a["A"] @ a["x"]
    assert_close(scop, out, {"s": s, "y": np.sqrt(s) + np.abs(a["x"])})

# }}}


# {{{ init_<kernel>

def test_init_function_used(cache):
    path, scop = kernel("floyd")
    assert ref.init_function(scop) == "init_floyd"
    lib = ref.build_library(path, cache_dir=cache)
    n = 10
    arrays, scalars = ref.init_arrays(scop, {"n": n}, lib=lib)
    assert scalars == {}
    i, j = np.indices((n, n))
    want = np.where(i == j, 0.0, (i * 7 + j * 13) % 17 + 1).astype(np.float32)
    np.testing.assert_array_equal(arrays["path"], want)
    # without a library it builds one itself (in $BBMM_CACHE)
    again, _ = ref.init_arrays(scop, {"n": n})
    np.testing.assert_array_equal(again["path"], want)
    # opting out gives the seeded random fill
    rnd, _ = ref.init_arrays(scop, {"n": n}, seed=3, use_init=False)
    assert rnd["path"].dtype == np.float32 and rnd["path"].min() >= 0 \
        and rnd["path"].max() < 1
    out = ref.run_reference(path, scop, {"n": n}, {}, arrays, cache_dir=cache)
    p = want.copy()
    for k in range(n):
        p = np.minimum(p, p[:, k:k + 1] + p[k:k + 1, :])
    np.testing.assert_array_equal(out["path"], p)


def test_random_fill_seeded():
    _, scop = kernel("alpha_int")
    a1, s1 = ref.init_arrays(scop, {"n": 20, "m": 30}, seed=7)
    a2, _ = ref.init_arrays(scop, {"n": 20, "m": 30}, seed=7)
    a3, _ = ref.init_arrays(scop, {"n": 20, "m": 30}, seed=8)
    assert s1 == {"alpha": 1.5, "beta": 1.5}
    assert a1["counts"].dtype == np.intc and a1["counts"].shape == (20, 30)
    assert a1["counts"].min() >= 0 and a1["counts"].max() < 100
    assert a1["out"].dtype == np.float32
    np.testing.assert_array_equal(a1["out"], a2["out"])
    assert not np.array_equal(a1["out"], a3["out"])
    _, s = ref.init_arrays(scop, {"n": 2, "m": 2}, scalars={"beta": 0.25})
    assert s == {"alpha": 1.5, "beta": 0.25}


def test_init_with_other_signature_ignored(tmp_path, cache):
    src = tmp_path / "k.c"
    src.write_text("void init_k(int n, float A[n], int extra) { }\n"
                   "void k(int n, float A[n]) { for (int i = 0; i < n; i++) A[i] = 2 * A[i]; }\n")
    scop = parse_file(src)
    with pytest.warns(BBMMWarning, match="parameter list"):
        assert ref.init_function(scop) is None
    with pytest.warns(BBMMWarning):
        arrays, _ = ref.init_arrays(scop, {"n": 5})
    assert arrays["A"].max() < 1

# }}}


# {{{ errors and cache

def test_compile_error(tmp_path, cache):
    src = tmp_path / "bad.c"
    src.write_text("void bad(int n, float A[n]) {\n  A[0] = 1.0f\n}\n")
    with pytest.raises(BBMMError) as info:
        ref.build_library(src, cache_dir=cache)
    e = info.value
    assert isinstance(e, ref.CompileError)
    assert "\n" not in e.summary and "bad.c" in e.summary and "error" in e.summary
    assert "bad.c:2" in e.summary or "bad.c:3" in e.summary
    assert e.details and str(e).startswith(e.summary)
    # an undefined function is a link error, not a crash at load time
    src.write_text("void bad(int n, float A[n]) { A[0] = nosuchfunc(1.0f); }\n")
    with pytest.raises(ref.CompileError, match="nosuchfunc"):
        ref.build_library(src, cache_dir=cache)


def test_cache_reused(tmp_path, monkeypatch):
    src = tmp_path / "k.c"
    hdr = tmp_path / "k.h"
    hdr.write_text("#define SCALE 2\n")
    src.write_text('#include "k.h"\nvoid k(int n, float A[n]) '
                   '{ for (int i = 0; i < n; i++) A[i] = SCALE * A[i]; }\n')
    lib1 = ref.build_library(src, cache_dir=tmp_path / "c")
    inode = lib1.stat().st_ino      # (a hit touches the entry's time: pruned last)

    calls = []
    real_run = subprocess.run

    def counting_run(*a, **k):
        calls.append(a)
        return real_run(*a, **k)
    monkeypatch.setattr(subprocess, "run", counting_run)
    assert ref.build_library(src, cache_dir=tmp_path / "c") == lib1
    assert lib1.stat().st_ino == inode                   # not rewritten
    assert calls == []                                   # a cache hit runs no compiler

    lib2 = ref.build_library(src, defines={"N": 4}, cache_dir=tmp_path / "c")
    hdr.write_text("#define SCALE 3\n")
    lib3 = ref.build_library(src, cache_dir=tmp_path / "c")
    assert len({lib1, lib2, lib3}) == 3 and len(calls) == 2
    scop = parse_file(src)
    a = np.ones(4, np.float32)
    ref.call_kernel(lib3, scop, {"n": 4}, {}, {"A": a})
    np.testing.assert_array_equal(a, 3)


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("BBMM_CACHE", str(tmp_path / "b"))
    assert ref.default_cache_dir() == tmp_path / "b" / "reference"
    monkeypatch.delenv("BBMM_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert ref.default_cache_dir() == tmp_path / "x" / "bbmm" / "reference"


def test_call_kernel_checks(cache):
    path, scop = kernel("matmul")
    lib = ref.build_library(path, cache_dir=cache)
    params = {"ni": 3, "nj": 4, "nk": 5}
    arrays, scalars = ref.init_arrays(scop, params)
    ref.call_kernel(lib, scop, params, scalars, arrays)            # fine
    bad = [({**arrays, "A": arrays["A"].astype(np.float64)}, scalars, "dtype"),
           ({**arrays, "A": arrays["A"].T.copy()}, scalars, "shape"),
           ({**arrays, "C": np.asfortranarray(arrays["C"])}, scalars, "contiguous"),
           ({k: v for k, v in arrays.items() if k != "B"}, scalars, "missing array B"),
           (arrays, {}, "alpha")]
    for arrs, sc, msg in bad:
        with pytest.raises(UsageError, match=msg):
            ref.call_kernel(lib, scop, params, sc, arrs)
    with pytest.raises(UsageError, match="nk"):
        ref.call_kernel(lib, scop, {"ni": 3, "nj": 4}, scalars, arrays)
    with pytest.raises(UsageError, match="not found"):
        ref.call_kernel(lib, scop, params, scalars, arrays, function="nope")

# }}}


# {{{ compare

def test_compare_planted():
    e = np.random.default_rng(1).random((8, 32), dtype=np.float32)
    assert ref.compare("path", e.copy(), e, "float") is None
    g = e.copy()
    g[3, 17] = e[3, 17] + 0.5
    g[5, 2] = e[5, 2] * (1 + 1e-6)                    # within float tolerance
    m = ref.compare("path", g, e, "float")
    assert m is not None and m.index == (3, 17) and m.count == 1 and m.total == 256
    # relative to |expected| plus the array's largest |expected|
    assert math.isclose(m.max_error, 0.5 / (float(e[3, 17]) + float(e.max())), rel_tol=1e-5)
    s = str(m)
    assert "\n" not in s
    assert s.startswith("path: 1 of 256 elements differ; first at [3, 17]: got ")
    assert f"expected {e[3, 17]}; max relative error" in s


def test_compare_format_example():
    e = np.zeros((4, 32), np.float32)
    e[3, 17] = 2.25
    g = e.copy()
    g[3, 17] = 1.5
    # |1.5 - 2.25| / (2.25 + 2.25) = 0.1667
    assert str(ref.compare("path", g, e, "float")) == (
        "path: 1 of 128 elements differ; first at [3, 17]: got 1.5, expected 2.25; "
        "max relative error 0.167 (of |expected| + 2.25; tolerance 0.0001)")


def test_compare_small_values_are_relative():
    """0 against 9e-5 once passed (|g - e| <= 1e-4 * max(1, |e|) is absolute below 1):
    in an array of values ~1e-4 it is a 100% error."""
    e = np.full(16, 9e-5, np.float32)
    g = e.copy()
    g[4] = 0.0
    m = ref.compare("s", g, e, "float")
    assert m is not None and m.index == (4,) and m.count == 1
    assert math.isclose(m.max_error, 0.5, rel_tol=1e-5)
    assert ref.compare("s", e * np.float32(1 + 1e-6), e, "float") is None
    # near 0 in an array of magnitude 1000: the floor is 1e-4 * 1000
    e = np.array([1000.0, 3.0, 0.0], np.float32)
    assert ref.compare("s", e + np.float32(0.05), e, "float") is None
    assert ref.compare("s", e + np.float32([0, 0, 0.2]), e, "float").index == (2,)


def test_compare_reports_the_worst_element():
    e = np.ones((4, 8), np.float64)
    g = e.copy()
    g[0, 1] = 1.001          # first
    g[2, 5] = 3.0            # worst
    m = ref.compare("w", g, e, "double")
    assert m.index == (0, 1) and m.worst == (2, 5) and m.count == 2
    assert "worst at [2, 5]: got 3.0, expected 1.0" in str(m)
    assert math.isclose(m.max_error, 2.0 / 2.0)


def test_compare_nan_inf_int_double():
    e = np.array([1.0, np.nan, np.inf, -np.inf, 5.0])
    assert ref.compare("x", e.copy(), e, "double") is None
    g = e.copy()
    g[1] = 1.0
    m = ref.compare("x", g, e, "double")
    assert m.index == (1,) and m.count == 1 and m.max_error == math.inf
    g = e.copy()
    g[0] = np.nan
    g[2] = -np.inf
    m = ref.compare("x", g, e, "double")
    assert m.index == (0,) and m.count == 2
    d = np.array([1e6, 1.0, 0.0])
    assert ref.compare("d", d * (1 + 1e-12), d, "double") is None
    # the floor is 1e-10 * 1e6 = 1e-4: 1e-8 on the small ones is the big one's rounding
    assert ref.compare("d", d + 1e-8, d, "double") is None
    assert ref.compare("d", d + 1.5e-4, d, "double").index == (1,)  # 1e6 + 1.5e-4: fine
    assert ref.compare("d", d + 1.5e-4, d, "double", rtol=1e-8) is None
    i = np.arange(12, dtype=np.intc).reshape(3, 4)
    assert ref.compare("c", i.copy(), i, "int") is None
    j = i.copy()
    j[2, 1] += 3
    m = ref.compare("c", j, i, "int")
    assert m.index == (2, 1) and str(m).endswith("got 12, expected 9; max absolute error 3")
    with pytest.raises(UsageError):
        ref.compare("c", i, i.T, "int")

# }}}

# vim: foldmethod=marker


# {{{ extra C sources (bbmm run FILE MORE.c, --extra-source, polybench.c found by itself)

PB = KERNELS / "polybench_style"
XS = KERNELS / "extra_sources"


def test_extra_sources_polybench_c_beside_polybench_h(tmp_path):
    util = PB / "utilities"
    # <polybench.h> in the -I folders: the polybench.c beside it
    assert ref.extra_sources(PB / "lu.c", [str(util)]) == ((util / "polybench.c").resolve(),)
    assert ref.extra_sources(PB / "lu.c", []) == ()                 # no polybench.h found
    # the user's own files first, each once, the automatic one not twice
    mine = XS / "myutil" / "myutil.c"
    assert ref.extra_sources(PB / "lu.c", [str(util)], [mine, util / "polybench.c", mine]) \
        == (mine.resolve(), (util / "polybench.c").resolve())
    assert ref.extra_sources(XS / "lu_alloc.c", [str(XS / "myutil")]) == ()
    # "polybench.h" beside the file; a polybench.h without a polybench.c adds nothing
    (tmp_path / "polybench.h").write_text("")
    (tmp_path / "k.c").write_text('#include "polybench.h"\nvoid k(int n) { }\n')
    assert ref.extra_sources(tmp_path / "k.c") == ()
    (tmp_path / "polybench.c").write_text("")
    assert ref.extra_sources(tmp_path / "k.c") == ((tmp_path / "polybench.c").resolve(),)
    # a file that includes polybench.c itself gets it once, from there
    (tmp_path / "k.c").write_text('#include "polybench.h"\n#include "polybench.c"\n')
    assert ref.extra_sources(tmp_path / "k.c") == ()
    with pytest.raises(UsageError, match=r"^extra C source .*nothere\.c: no such file$"):
        ref.extra_sources(tmp_path / "k.c", (), [tmp_path / "nothere.c"])


def test_init_calling_another_source(cache):
    """lu_alloc.c's init_array allocates with my_alloc from myutil/myutil.c: without that
    file the link fails, with a hint; with it the library runs the init and the kernel."""
    path, inc = XS / "lu_alloc.c", [str(XS / "myutil")]
    scop = parse_file(path, include_dirs=inc)
    with pytest.raises(ref.CompileError) as e:
        ref.reference_library(scop, None, inc, init="init_array", cache_dir=cache)
    assert "my_alloc" in e.value.summary and "--extra-source" in e.value.summary
    assert "\n" not in e.value.summary
    lib = ref.reference_library(scop, None, inc, init="init_array", cache_dir=cache,
                                sources=[XS / "myutil" / "myutil.c"])
    arrays, _ = ref.init_arrays(scop, {"n": 6}, lib=lib, init="init_array",
                                include_dirs=inc)
    A = arrays["A"]
    B = np.array([[((i * 7 + j * 3) % 6) / 6 + (i == j) for j in range(6)] for i in range(6)])
    np.testing.assert_allclose(A, B @ B.T, rtol=1e-12)
    out = ref.run_reference(path, scop, {"n": 6}, {}, arrays, lib=lib)
    L, U = np.tril(out["A"]), np.triu(out["A"], 1) + np.eye(6)   # row k scaled by A[k][k]
    np.testing.assert_allclose(L @ U, A, rtol=1e-10)


def test_extra_source_changes_the_cache_key(tmp_path):
    src, more = tmp_path / "k.c", tmp_path / "more.c"
    src.write_text("double f(double);\nvoid k(int n, double A[n]) "
                   "{ for (int i = 0; i < n; i++) A[i] = f(A[i]); }\n")
    more.write_text("double f(double x) { return 2 * x; }\n")
    lib1 = ref.build_library(src, cache_dir=tmp_path / "c", sources=[more])
    more.write_text("double f(double x) { return 3 * x; }\n")
    lib2 = ref.build_library(src, cache_dir=tmp_path / "c", sources=[more])
    assert lib1 != lib2

# }}}


# {{{ integer and _Bool element types: numpy dtypes of their width, compared exactly

def test_integer_dtypes_and_exact_comparison():
    assert {t: ref.dtype_of(t).itemsize for t in (
        "char", "unsigned char", "short", "unsigned short", "int", "unsigned int", "long",
        "unsigned long", "_Bool")} == {
        "char": 1, "unsigned char": 1, "short": 2, "unsigned short": 2, "int": 4,
        "unsigned int": 4, "long": 8, "unsigned long": 8, "_Bool": 1}
    assert ref.dtype_of("char").kind == "i" and ref.dtype_of("_Bool").kind == "b"
    big = np.array([2**64 - 1, 5], np.uint64)
    assert ref.compare("u", big, big.copy(), "unsigned long") is None
    m = ref.compare("u", big, np.array([2**64 - 2, 5], np.uint64), "unsigned long")
    assert m is not None and m.count == 1 and "max absolute error 1" in str(m)
    b = np.array([True, False])
    assert ref.compare("b", b, ~b, "_Bool").count == 2
    s = np.array([-3, 4], np.int16)
    assert ref.compare("s", s, s + 0, "short") is None


def test_integer_arrays_through_the_reference(tmp_path, cache):
    """The C program gets the bytes of each array as its element type (int8 to uint64,
    _Bool), and random inputs are integers (0 or 1 for _Bool)."""
    path = KERNELS / "int_types.c"
    scop = parse_file(path)
    params = {"n": 5, "m": 6}
    arrays, _ = ref.init_arrays(scop, params, seed=2)
    assert arrays["src"].dtype == np.uint16 and arrays["mask"].dtype == np.bool_
    assert arrays["delta"].dtype == np.int8 and arrays["acc"].dtype == np.int64
    out = ref.run_reference(path, scop, params, {}, arrays, cache_dir=cache)
    src = arrays["src"].astype(np.int64)
    np.testing.assert_array_equal(out["out"], (src * 700 + 3) % 65536)
    acc = arrays["acc"] + src * 10**10 - 7
    np.testing.assert_array_equal(out["acc"], acc)
    np.testing.assert_array_equal(out["tot"], acc.sum(axis=1))
    np.testing.assert_array_equal(out["mask"], (src & 6) != 0)
    np.testing.assert_array_equal(out["delta"], ((src * 700 + 3) % 256 - 100).astype(np.int8))

# }}}

"""Whole C programs in PolyBench/C's style (bbmm.codegen.csource, the front end on them, and the
reference library's entry points for static kernels and init functions)."""
from __future__ import annotations

import re
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
from pycparser import c_parser

from bbmm import reference as ref
from bbmm.diagnostic import BBMMWarning, UnsupportedProgramError, UsageError
from bbmm.codegen import csource
from bbmm.codegen.compile import compile_program, out_of_bounds
from bbmm.codegen.frontend import parse_file, parse_source
from support.paths import KERNELS

PB = KERNELS / "polybench_style"
UTIL = str(PB / "utilities")
MINI = {"MINI_DATASET": "1"}


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("BBMM_CACHE", str(tmp_path_factory.getbasetemp() / "wp-cache"))


def pb(name: str, **defines):
    return parse_file(PB / f"{name}.c", defines={**MINI, **defines}, include_dirs=[UTIL])


# {{{ preprocessing, kernel finding, sizes


@pytest.mark.parametrize("c99,scalar_lb", [(False, False), (True, False), (False, True),
                                           (True, True)])
def test_gemm_polybench_macro_modes(c99, scalar_lb):
    """POLYBENCH_USE_C99_PROTO picks the array sizes (n vs N), POLYBENCH_USE_SCALAR_LB the
    loop bounds (_PB_NI: ni vs NI), as in PolyBench/C 4.2."""
    d = {}
    if c99:
        d["POLYBENCH_USE_C99_PROTO"] = "1"
    if scalar_lb:
        d["POLYBENCH_USE_SCALAR_LB"] = "1"
    s = pb("gemm", **d)
    assert s.function == "kernel_gemm"              # not init_array, print_array, main
    assert s.int_params == ("ni", "nj", "nk")
    assert s.float_params == (("alpha", "double"), ("beta", "double"))
    assert s.args == ("ni", "nj", "nk", "alpha", "beta", "C", "A", "B")
    ext = {a.name: tuple(str(e) for e in a.extents) for a in s.arrays}
    assert ext == ({"C": ("ni", "nj"), "A": ("ni", "nk"), "B": ("nk", "nj")} if c99 else
                   {"C": ("20", "25"), "A": ("20", "30"), "B": ("30", "25")})
    i_loop = s.loops()[0]
    assert (i_loop.iterator, i_loop.upper) == ("i", "19" if scalar_lb else "ni - 1")
    assert dict(s.param_defaults) == {"ni": 20, "nj": 25, "nk": 30}   # main's int ni = NI
    assert len(s.statements) == 2


def test_dataset_macro_picks_sizes():
    assert dict(pb("gemm", SMALL_DATASET="1").param_defaults) == {"ni": 60, "nj": 70,
                                                                  "nk": 80}
    s = parse_file(PB / "gemm.c", include_dirs=[UTIL])     # LARGE by default
    assert dict(s.param_defaults) == {"ni": 1000, "nj": 1100, "nk": 1200}
    assert s.arrays[0].shape({}) == (1000, 1100)


def test_constant_sizes_need_no_parameter():
    s = pb("mvt-const")
    assert s.int_params == () and s.param_defaults == ()
    assert [a.shape({}) for a in s.arrays] == [(40,), (40,), (40,), (40,), (40, 40)]
    assert s.loops()[0].upper == "39"


def test_stencils_and_solver_models():
    j = pb("jacobi-2d")
    assert j.function == "kernel_jacobi_2d" and dict(j.param_defaults) == {"tsteps": 20,
                                                                           "n": 30}
    assert [lp.iterator for lp in j.loops()] == ["t", "i", "j", "i", "j"]
    h = pb("heat-3d")
    assert h.loops()[0].upper == "20" and h.arrays[0].shape({}) == (10, 10, 10)  # t <= TSTEPS
    t = pb("trsm")
    assert t.float_params == (("alpha", "double"),)
    assert t.loops()[2].lower == "i + 1"


def test_fake_libc_headers_are_parsed_not_dropped():
    """System headers come from pycparser-fake-libc: their macros and typedefs work."""
    src = ("#include <stdlib.h>\n#include <stdint.h>\n"
           "void f(int32_t n, int A[n]) {\n  for (int i = 0; i < n; i++)\n"
           "    A[i] = A[i] % RAND_MAX + EXIT_FAILURE;\n}\n")
    s = parse_source(src, "f.c")
    assert s.int_params == ("n",) and "32767" in s.statements[0].text
    assert csource.fake_libc_dir() is not None


def test_a_system_header_without_stand_ins_names_the_package(monkeypatch):
    """Without pycparser-fake-libc a ``<math.h>`` has nowhere to come from (no system
    header is read): the error points at the include and says what to install."""
    monkeypatch.setattr(csource, "fake_libc_dir", lambda: None)
    src = "#include <math.h>\nvoid f(int n, float A[n]) {\n  for (int i = 0; i < n; i++)\n    A[i] = 1;\n}\n"
    with pytest.raises(UnsupportedProgramError, match="install pycparser-fake-libc") as e:
        parse_source(src, "f.c")
    assert str(e.value).startswith("f.c:1:")


def test_quoted_include_resolves_beside_the_file(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "sz.h").write_text("#define W 7\n")
    (tmp_path / "sub" / "k.c").write_text(
        '#include "sz.h"\nvoid k(double A[W]) {\n  for (int i = 0; i < W; i++)\n'
        '    A[i] = 2 * A[i];\n}\n')
    monkeypatch.chdir(tmp_path)                    # the file is not in the current folder
    assert parse_file("sub/k.c").arrays[0].shape({}) == (7,)


def test_function_option_and_everything_else_ignored():
    s = parse_file(PB / "gemm.c", "kernel_gemm", MINI, [UTIL])
    assert s.function == "kernel_gemm"
    with pytest.raises(UnsupportedProgramError, match=r"^.*gemm\.c:\d+:\d+: .*'fprintf'"):
        parse_file(PB / "gemm.c", "print_array", MINI, [UTIL])   # modelled only if asked


def test_main_sizes_through_the_call_and_by_name():
    def sizes(text):
        ast = c_parser.CParser().parse(text)
        return csource.main_sizes(ast, csource.function_def(ast, "k"))
    k = "void k(int n, int m, double A[n][m]) { }\n"
    assert sizes(k + "int main() { int a = 4 * 3 - 2; int b = a / 3; k(a, b + 1, 0); }") \
        == {"n": 10, "m": 4}
    assert sizes(k + "int main() { int n = 5; int m = n * 2; }") == {"n": 5, "m": 10}
    assert sizes(k + "int main(int c) { int n = c; k(n, 3, 0); }") == {"m": 3}
    assert sizes(k) == {}


@pytest.mark.parametrize("expr,value", [("-7 / 2", -3), ("-7 % 2", -1), ("7 % -2", 1),
                                        ("(int) 9 / 4", 2), ("1 << 3", None), ("x + 1", 6)])
def test_const_int_follows_c(expr, value):
    e = c_parser.CParser().parse(f"int v = {expr};").ext[0].init
    assert csource.const_int(e, {"x": 5}) == value


def test_signature_kinds():
    f = c_parser.CParser().parse(
        "void init(int n, double *alpha, float s, double A[n][4], double (*B)[4], "
        "char *name) { }").ext[0]
    sig = csource.signature(f)
    assert [(p.name, p.kind, p.ctype, len(p.dims)) for p in sig] == [
        ("n", "int", "int", 0), ("alpha", "out", "double", 0), ("s", "float", "float", 0),
        ("A", "array", "double", 2), ("B", "array", "double", 2), ("name", "other", "char", 0)]

# }}}


def test_scalar_initialised_before_the_scop_is_modelled():
    """correlation's 'DATA_TYPE eps = SCALAR_VAL(0.1);' and 'float_n = (DATA_TYPE)n;' before
    '#pragma scop': their declarations are assignments of the model, replayed where read."""
    s = pb("correlation")
    temps = {t.name: t.text for st in s.statements for t in st.temps}
    assert temps == {"eps": "double eps = 0.1;", "float_n": "double float_n = (double) n;"}
    assert s.int_params == ("m", "n") and s.float_params == ()
    # a value the region carries across iterations: its declaration a statement of its own
    o = parse_file(PB.parent / "outer_init.c")
    assert [st.text for st in o.statements][0] == "acc = 0.5;"
    assert {t.name for st in o.statements for t in st.temps} == {"eps", "fn", "e2"}


# {{{ refusals: one line, file:line:col in the user's file


def _line_col(path: Path, needle: str) -> tuple[int, int]:
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            return n, line.index(needle) + 1
    raise AssertionError(needle)


@pytest.mark.parametrize("name,needle,message", [
    ("invalid_unknown_call", "scale(C", r"call to unknown function 'scale'"),
    ("invalid_pointer_walk", "p++ =", r"pointer dereference '\*\(p\+\+\)' not supported \(a "
                                      r"pointer walk is not an affine array access"),
    ("invalid_scalar_temp", "temp2 * 2", r"local variable 'temp2' \(declared at "
                                            r".*invalid_scalar_temp\.c:12:13, before '#pragma "
                                            r"scop'\) is read before the modelled region "
                                            r"assigns it"),
    ("invalid_scalar_assigned_before", "eps = eps", r"'eps = eps \* 2' assigns local "
                                                   r"variable 'eps' \(declared at "
                                                   r".*invalid_scalar_assigned_before\.c:11:13\) "
                                                   r"before '#pragma scop': bbmm models the "
                                                   r"value of its declaration only"),
    ("invalid_missing_header", '"not_there.h"', r"preprocessor: not_there\.h: No such file"),
])
def test_invalid_whole_program_refused_at_user_location(name, needle, message):
    path = PB / f"{name}.c"
    with pytest.raises(UnsupportedProgramError) as e:
        pb(name)
    line, col = _line_col(path, needle)
    assert re.match(rf"^{re.escape(str(path))}:{line}:{col}: {message}", str(e.value)), \
        str(e.value)
    assert "\n" not in str(e.value)


def test_two_scops_need_function_option():
    with pytest.raises(UnsupportedProgramError,
                       match=r"several functions hold '#pragma scop' \(kernel_a, kernel_b\); "
                             r"choose one with --function"):
        pb("invalid_two_scops")
    s = parse_file(PB / "invalid_two_scops.c", "kernel_b", MINI, [UTIL])
    assert s.statements[0].text.startswith("x[i] = x[i] * 2")


def test_no_parallel_loop_warns_and_still_compiles():
    """With the loops as written; isl's schedule (the default's choice here) is parallel."""
    with pytest.warns(BBMMWarning, match=r"trisolv\.c:63:3: no loop of kernel_trisolv is "
                                         r"parallel: it runs as a single work-item"):
        prog = compile_program(PB / "trisolv.c", defines=MINI, include_dirs=[UTIL],
                               schedule="as-written")
    assert [n.band for n in prog.plan.nests] == [()]
    assert prog.schedule == "as-written"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prog = compile_program(PB / "trisolv.c", defines=MINI, include_dirs=[UTIL])
    assert prog.schedule == "isl" and any(n.band for n in prog.plan.nests)


def test_bounds_checked_at_mains_sizes():
    """PolyBench's default: loops to ni in arrays of the constant size NI. In bounds for
    the ni main passes (no warning), out of bounds beyond it."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prog = compile_program(PB / "gemm.c", defines=MINI, include_dirs=[UTIL])
    scop = prog.scop
    assert out_of_bounds(scop, {"ni": 20, "nj": 25, "nk": 30}) == []
    bad = out_of_bounds(scop, {"ni": 21, "nj": 25, "nk": 30})
    assert bad and all("may be out of the bounds" in m for m in bad)
    assert "PARAM_DEFAULTS = {'ni': 20, 'nj': 25, 'nk': 30}" in prog.host_source

# }}}


# {{{ reference: static kernels and init functions through entry points


def test_static_kernel_and_init_against_numpy():
    scop = pb("gemm")
    params = dict(scop.param_defaults)
    lib = ref.reference_library(scop, MINI, [UTIL], init="init_array")
    arrays, scalars = ref.init_arrays(scop, params, lib=lib, init="init_array",
                                      defines=MINI, include_dirs=[UTIL])
    assert scalars == {"alpha": 1.5, "beta": 1.2}           # *alpha = 1.5; *beta = 1.2;
    ni, nj, nk = 20, 25, 30
    i, j = np.meshgrid(np.arange(ni), np.arange(nj), indexing="ij")
    np.testing.assert_array_equal(arrays["C"], ((i * j + 1) % ni) / ni)
    out = ref.run_reference(PB / "gemm.c", scop, params, scalars, arrays, lib=lib)
    expect = 1.5 * arrays["A"] @ arrays["B"] + 1.2 * arrays["C"]
    np.testing.assert_allclose(out["C"], expect, rtol=1e-12)
    assert not np.allclose(out["C"], arrays["C"])


def test_user_scalar_beats_init_pointer():
    scop = pb("trsm")
    _, scalars = ref.init_arrays(scop, dict(scop.param_defaults), init="init_array",
                                 scalars={"alpha": 0.25}, defines=MINI, include_dirs=[UTIL])
    assert scalars == {"alpha": 0.25}


def test_library_exports_only_entry_points(tmp_path):
    """main calls polybench_alloc_data, defined in no linked file: it is dropped."""
    from bbmm.cache import read_verified

    scop = pb("gemm")
    entry = ref.reference_library(scop, MINI, [UTIL], init="init_array")
    lib = tmp_path / "gemm.so"                # the cache entry: its hash, then the library
    lib.write_bytes(read_verified(entry))
    syms = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                          text=True).stdout
    names = {ln.split()[-1] for ln in syms.splitlines() if ln.strip()}
    assert {"_bbmm_kernel_gemm", "_bbmm_init_array"} <= names
    assert "main" not in names and "kernel_gemm" not in names


def _write(tmp_path, text):
    p = tmp_path / "k.c"
    p.write_text(text)
    return p, parse_file(p)


def test_init_parameter_mismatches_are_usage_errors(tmp_path):
    p, scop = _write(tmp_path, (
        "static void init(int n, int q, double A[n]) { }\n"
        "static void init2(int n, double A[10]) { }\n"
        "static void init3(int n, double *A) { }\n"
        "static void init4(int n, int *alpha) { }\n"
        "static void kernel(int n, double alpha, double A[n]) {\n"
        "#pragma scop\n  for (int i = 0; i < n; i++)\n    A[i] = alpha * A[i];\n"
        "#pragma endscop\n}\n"))
    cases = [("init", r"--init init: parameter 'q' \(int\) matches no int parameter of "
                      r"kernel by name"),
             ("init2", r"--init init2: parameter 'A' is double \[10\] but kernel's A is "
                       r"double \[12\] for n=12"),
             ("init3", r"parameter 'A' \(out\) matches no out parameter"),
             ("init4", r"parameter 'alpha' is a int \* but kernel's alpha is a double"),
             ("nothere", r"--init nothere: .*k\.c defines no function nothere")]
    for name, msg in cases:
        with pytest.raises(UsageError, match=msg):
            ref.init_arrays(scop, {"n": 12}, init=name)

# }}}

# vim: foldmethod=marker


def test_host_iterators_the_kernel_never_reads_are_passed_as_zero():
    """A kernel that never reads a host iterator (a stencil's time step) is given 0 for
    it, so that its launches set no argument anew; one that reads it (fdtd2d's
    ``ey[0][j] = _fict_[t]``, Floyd's row ``k``) is given the iterator. A name only in a
    comment of the kernel's text does not count as read."""
    from bbmm.codegen.opencl import _unnamed
    from support.paths import POLYBENCH

    heat = compile_program(POLYBENCH / "heat2d.c")
    assert [n.kernel.host_unused for n in heat.nests] == [frozenset({"t"})] * 2
    assert "_ints((tsteps, n, 0, lb, ub))" in heat.host_source
    assert "_ints((tsteps, n, t, lb, ub))" not in heat.host_source
    fdtd = compile_program(POLYBENCH / "fdtd2d.c")
    reads_t = [n for n in fdtd.nests if "t" not in n.kernel.host_unused]
    assert len(reads_t) == 1 and "_fict_" in reads_t[0].kernel.source
    floyd = compile_program(POLYBENCH / "floyd.c")
    assert [n.kernel.host_unused for n in floyd.nests] == [frozenset()]
    assert "_ints((n, k, lb, ub))" in floyd.host_source
    lines = ["/* host loops: t */", "#define A_AT(i) A[(i) + t0]",
             "__kernel void f(", "    int t, int t0, int u", ")", "{",
             "    // t is not read here", "    A_AT(u) = 1; /* nor t */", "}"]
    assert _unnamed(["t", "t0", "u", "v"], lines, "f") == frozenset({"t", "v"})
    # a quote inside a comment is the comment's; a comment's marker inside a string is
    # the string's, and a name in a string counts as read
    quoted = [*lines[:-1], "    /* band loop 'i' */ A_AT(u) = 3; /* 'j' */",
              '    printf("/* t */");', "}"]
    assert _unnamed(["t", "u"], quoted, "f") == frozenset()
    assert _unnamed(["t"], [*lines[:-1], "    /* it's 'i' */ A_AT(t) = 3;", "}"],
                    "f") == frozenset()

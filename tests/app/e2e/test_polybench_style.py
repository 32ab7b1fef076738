"""End-to-end on whole programs written as PolyBench/C 4.2's (tests/kernels/polybench_style):
``bbmm run FILE.c -I utilities -DMINI_DATASET --init init_array --check`` on 1-4 logical
PoCL devices, against the file's own kernel compiled by the system C compiler, and against
the program's own array dump."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from bbmm.cli import main
from support.needs import needs_cl  # skipped only without an OpenCL platform
from support.paths import KERNELS

PB = KERNELS / "polybench_style"
UTIL = PB / "utilities"

pytestmark = pytest.mark.e2e


# file, the sizes main passes the kernel, the scalars init_array returns; MINI_DATASET,
# except that the stencils' sizes are set by -D as PolyBench allows (all of them or none)
PROGRAMS = [
    ("gemm", {"ni": 20, "nj": 25, "nk": 30}, {"alpha": 1.5, "beta": 1.2}),  # BLAS, alpha/beta
    ("jacobi-2d", {"tsteps": 5, "n": 30}, {}),       # 2-D stencil with a time loop
    ("trsm", {"m": 20, "n": 30}, {"alpha": 1.5}),    # triangular solve: i serial, j parallel
    ("heat-3d", {"tsteps": 4, "n": 10}, {}),         # 3-D stencil, time loop to TSTEPS
    ("mvt-const", {}, {}),                           # compile-time constant sizes only
    ("trisolv", {"n": 40}, {}),                      # no parallel loop: one work-item
    ("correlation", {"m": 28, "n": 32}, {}),         # eps = SCALAR_VAL(0.1) before the scop
    ("lu", {"n": 40}, {}),                           # init_array calls polybench_alloc_data
    ("nussinov", {"n": 60}, {}),                     # typedef char base; base seq[N]
]
SIZES = {"jacobi-2d": ["-DTSTEPS=5", "-DN=30"], "heat-3d": ["-DTSTEPS=4", "-DN=10"]}


def run(name, *extra, json_path):
    argv = ["run", str(PB / f"{name}.c"), "-I", str(UTIL), "-DMINI_DATASET",
            *SIZES.get(name, []), "--init", "init_array", "--check", "--no-progress",
            "--json", str(json_path)]
    return main(argv + [str(e) for e in extra])


@needs_cl
@pytest.mark.parametrize("name,sizes,scalars", PROGRAMS, ids=[p[0] for p in PROGRAMS])
@pytest.mark.parametrize("ndev", [1, 2, 3, 4])
def test_run_check(name, sizes, scalars, ndev, tmp_path):
    out = tmp_path / "r.json"
    assert run(name, "--devices", ndev, json_path=out) == 0
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass" and doc["devices"] == ndev
    assert doc["params"] == sizes and doc["scalars"] == scalars   # no --param was given
    if name not in ("trisolv", "nussinov") and ndev > 1:
        assert doc["tiles"] >= ndev


@needs_cl
@pytest.mark.parametrize("modes", [["-DPOLYBENCH_USE_C99_PROTO"], ["-DPOLYBENCH_USE_SCALAR_LB"],
                                   ["-DPOLYBENCH_USE_C99_PROTO", "-DPOLYBENCH_USE_SCALAR_LB"]])
def test_gemm_macro_modes(modes, tmp_path):
    out = tmp_path / "r.json"
    assert run("gemm", "--devices", 2, *modes, json_path=out) == 0
    assert json.loads(out.read_text())["check"] == "pass"


@needs_cl
def test_smaller_param_than_main_passes(tmp_path):
    """--param still overrides main's size (loops to ni=7 inside C[20][25])."""
    out = tmp_path / "r.json"
    assert run("gemm", "--devices", 2, "--param", "ni=7", "--param", "beta=0.5",
               json_path=out) == 0
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass" and doc["params"]["ni"] == 7
    assert doc["scalars"] == {"alpha": 1.5, "beta": 0.5}


def _dump(text: str, name: str) -> np.ndarray:
    m = re.search(rf"begin dump: {name}(.*?)end   dump: {name}", text, re.S)
    assert m, text[:200]
    return np.array([float(v) for v in m.group(1).split()])


@needs_cl
@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                    reason="no C compiler")
@pytest.mark.parametrize("name,array", [("gemm", "C"), ("jacobi-2d", "A")])
def test_against_the_programs_own_dump(name, array, tmp_path):
    """The program built on its own (its main, its init_array, polybench.c) dumps its
    live-out array; bbmm's result on 3 devices matches it to the dump's 2 decimals."""
    from bbmm.devices.opencl import make_devices
    from bbmm.reference import init_arrays
    from bbmm.run import execute, host_arrays
    from bbmm.codegen.compile import compile_program, load_driver

    exe = tmp_path / name
    cc = shutil.which("cc") or shutil.which("gcc")
    subprocess.run([cc, "-std=c99", "-O2", "-I", str(UTIL), "-DMINI_DATASET",
                    "-DPOLYBENCH_DUMP_ARRAYS", str(PB / f"{name}.c"), str(UTIL / "polybench.c"),
                    "-lm", "-o", str(exe)], check=True, capture_output=True)
    dump = _dump(subprocess.run([str(exe)], capture_output=True, text=True,
                                check=True).stderr, array)

    defines = {"MINI_DATASET": "1"}
    prog = compile_program(PB / f"{name}.c", defines=defines, include_dirs=[str(UTIL)])
    params = dict(prog.scop.param_defaults)
    init, scalars = init_arrays(prog.scop, params, init="init_array", defines=defines,
                                include_dirs=[str(UTIL)])
    devices = make_devices(3)
    arrays = host_arrays(load_driver(prog), params, devices)
    for k, a in arrays.items():
        a[...] = init[k]
    res = execute(load_driver(prog), devices, params, scalars, arrays, progress=False)
    got = res.arrays[array].ravel()
    assert got.shape == dump.shape
    np.testing.assert_allclose(got, dump, atol=0.0051)
    assert not np.allclose(init[array].ravel(), dump, atol=0.0051)   # the kernel did work


@needs_cl
@pytest.mark.parametrize("name", ["mvt-const", "gemm"])
def test_compiled_driver_runs_without_param(name, tmp_path, capsys):
    from bbmm.driver import driver_main
    from bbmm.codegen.compile import load_module

    assert main(["compile", str(PB / f"{name}.c"), "-I", str(UTIL), "-DMINI_DATASET",
                 "-o", str(tmp_path)]) == 0
    (driver,) = tmp_path.glob("*_host.py")
    assert driver_main(load_module(driver), ["--devices", "2", "--no-progress"]) == 0
    assert re.search(r"2 device\(s\), tile \d+, \d+ tiles", capsys.readouterr().out)


def test_cli_errors_are_one_line(capsys):
    assert main(["compile", str(PB / "invalid_unknown_call.c"), "-I", str(UTIL)]) == 1
    err = capsys.readouterr().err
    assert re.fullmatch(r"bbmm: error: \S*invalid_unknown_call\.c:16:35: call to unknown "
                        r"function 'scale' \(only pure math functions are allowed\)\n", err)
    assert main(["run", str(PB / "gemm.c"), "-I", str(UTIL), "--init", "init_array",
                 "--no-init"]) == 2
    assert "--init and --no-init exclude each other" in capsys.readouterr().err
    assert main(["compile", str(PB / "gemm.c"), "-DMINI_DATASET"]) == 1   # no -I utilities
    err = capsys.readouterr().err
    assert re.fullmatch(r"bbmm: error: \S*gemm\.c:8:10: preprocessor: polybench\.h: No such "
                        r"file or directory\n", err)


XS = PB.parent / "extra_sources"


@needs_cl
@pytest.mark.parametrize("how", ["after-file", "after-options", "option"])
def test_init_calling_a_function_of_another_source(how, tmp_path, capsys):
    """lu_alloc.c's init_array calls my_alloc, which myutil/myutil.c defines: that file is
    named on the command line (as cc takes it) or with --extra-source."""
    out = tmp_path / "r.json"
    opts = ["-I", str(XS / "myutil"), "--param", "n=24", "--init", "init_array", "--check",
            "--no-progress", "--devices", "2", "--json", str(out)]
    more = str(XS / "myutil" / "myutil.c")
    argv = {"after-file": ["run", str(XS / "lu_alloc.c"), more, *opts],
            "after-options": ["run", str(XS / "lu_alloc.c"), *opts, more],
            "option": ["run", str(XS / "lu_alloc.c"), *opts, "--extra-source", more]}[how]
    assert main(argv) == 0
    assert json.loads(out.read_text())["check"] == "pass"


def test_init_calling_an_undefined_function_is_one_line(capsys):
    assert main(["run", str(XS / "lu_alloc.c"), "-I", str(XS / "myutil"), "--param", "n=8",
                 "--init", "init_array", "--devices", "1", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert re.fullmatch(r"bbmm: error: \S*lu_alloc\.c: C compiler \S+ failed \(exit \d+\): "
                        r".*my_alloc.* \(a function defined in another C source\? .*"
                        r"--extra-source MORE\.c\)\n", err), err
    assert main(["run", str(XS / "lu_alloc.c"), str(XS / "nothere.c"), "-I",
                 str(XS / "myutil"), "--param", "n=8", "--check", "--no-progress"]) == 2
    assert re.fullmatch(r"bbmm: error: extra C source \S*nothere\.c: no such file\n",
                        capsys.readouterr().err)

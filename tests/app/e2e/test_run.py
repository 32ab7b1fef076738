"""End-to-end: ``bbmm run --check`` (compile, run on PoCL logical devices, compare with the
sequential C program built by the system compiler), and ``bbmm compile`` refusals."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bbmm.cli import main
from bbmm.diagnostic import parse_bytes
from support.needs import needs_cl  # skipped only without an OpenCL platform
from support.paths import KERNELS, POLYBENCH, ROOT


pytestmark = pytest.mark.e2e


# (file, params, tight per-device cap that forces box-out with tile 4)
PROGRAMS = [
    (POLYBENCH / "floyd.c", ["n=24"], "1KiB"),
    (POLYBENCH / "heat2d.c", ["tsteps=2", "n=20"], "2KiB"),
    (POLYBENCH / "fdtd2d.c", ["tmax=2", "nx=16", "ny=12"], "2KiB"),
    (POLYBENCH / "heat3d.c", ["tsteps=2", "n=8"], "6KiB"),
    (POLYBENCH / "lu.c", ["n=20"], "1KiB"),
    (POLYBENCH / "adi.c", ["tsteps=2", "n=12"], "2KiB"),
    (POLYBENCH / "mvt.c", ["m=24", "n=16"], "1KiB"),
    (POLYBENCH / "blackscholes.c", ["n=400"], "1KiB"),
    (POLYBENCH / "matmul.c", ["ni=16", "nj=12", "nk=8"], "2KiB"),
    (KERNELS / "growing.c", ["n=12"], "1KiB"),
    (KERNELS / "triangular.c", ["n=14"], "1KiB"),
    (KERNELS / "imperfect.c", ["n=14"], "1KiB"),
    (KERNELS / "alpha_int.c", ["n=10", "m=7", "alpha=0.5", "beta=2.0"], "1KiB"),
    (KERNELS / "jacobi2d.c", ["tsteps=3", "n=14"], "3KiB"),
    (KERNELS / "heat3d.c", ["tsteps=2", "n=7"], "4KiB"),
    (KERNELS / "vec1d.c", ["n=30"], "1KiB"),
    (KERNELS / "minmax.c", ["n=16", "w=3"], "2KiB"),
    (KERNELS / "guarded.c", ["n=12"], "2KiB"),
    (KERNELS / "prefix_sum.c", ["n=20"], "1KiB"),
    (KERNELS / "floyd_plain.c", ["n=10"], "1KiB"),
    (KERNELS / "scratch.c", ["tsteps=3", "n=14"], "2KiB"),
    (KERNELS / "temps.c", ["tsteps=3", "n=14"], "3KiB"),
    (KERNELS / "promote.c", ["n=15"], "2KiB"),
    (KERNELS / "staged.c", ["m=21", "n=14"], "2KiB"),
    (KERNELS / "counting_down.c", ["tsteps=3", "n=14"], "1KiB"),
    (KERNELS / "negative_range.c", ["tsteps=3", "n=14"], "1KiB"),
    (KERNELS / "helpers.c", ["n=40"], "1KiB"),
    (KERNELS / "pointer_result.c", ["n=40"], "1KiB"),
    (KERNELS / "pointers.c", ["tsteps=3", "n=14", "a=0.5"], "2KiB"),
    # scalars initialised before '#pragma scop' (codegen/builder.py, Builder.build)
    (KERNELS / "outer_init.c", ["m=20", "n=30"], "2KiB"),
    # polycc (Pluto) tiled output: floord/ceild/max/min, bounds kept in lbp/ubp/lbv/ubv
    (KERNELS / "pluto" / "seidel1d_tiled.c", ["tsteps=10", "n=40"], "256B"),
    (KERNELS / "pluto" / "gemm_tiled.c", ["ni=40", "nj=35", "nk=30"], "32KiB"),
    # arrays of C's integer types and _Bool, compared exactly
    (KERNELS / "int_types.c", ["n=13", "m=17"], "2KiB"),
    # flat arrays A[i*n + j] read as rows (codegen/delinearize.py)
    (KERNELS / "flat" / "jacobi.c", ["tsteps=3", "n=14"], "3KiB"),
    (KERNELS / "flat" / "matvec.c", ["n=21", "m=14"], "4KiB"),
    (KERNELS / "flat" / "mirror.c", ["tsteps=3", "n=14"], "3KiB"),
    (KERNELS / "flat" / "heat3d.c", ["tsteps=3", "nx=9", "ny=7", "nz=6"], "6KiB"),
    # helpers taking arrays inlined at their calls (codegen/inline.py)
    (KERNELS / "inline_helpers.c", ["n=23"], "2KiB"),
    (KERNELS / "helper_pointer.c", ["n=29"], "1KiB"),
    (KERNELS / "helper_early_return.c", ["n=31"], "2KiB"),
    (KERNELS / "helper_return_loop.c", ["n=13", "m=11"], "2KiB"),
    (KERNELS / "row_pointers.c", ["n=23", "ny=5", "nz=7"], "4KiB"),
    (KERNELS / "row_tables.c", ["tsteps=3", "n=17", "m=13"], "3KiB"),
    (KERNELS / "loop_continue.c", ["n=27"], "3KiB"),
    (KERNELS / "jumps.c", ["n=23", "m=17"], "3KiB"),
    (KERNELS / "while_loops.c", ["n=19", "m=13"], "2KiB"),
    (KERNELS / "converge.c", ["n=14", "tmax=60", "tol=0.02"], "3KiB"),
    (KERNELS / "returns_value.c", ["n=23", "m=9"], "2KiB"),
    (KERNELS / "switch_cases.c", ["n=21"], "3KiB"),
    # file-scope arrays taken as parameters (codegen/globals.py)
    (KERNELS / "file_arrays.c", ["tsteps=3"], "8KiB"),
    (KERNELS / "file_scalars.c", ["tsteps=3", "n=19", "scale=0.25"], "4KiB"),
    # steps other than 1, C's / and % by constants (tests/codegen/test_quasi_affine.py)
    (KERNELS / "quasi" / "redblack.c", ["tsteps=3", "n=14"], "768B"),
    (KERNELS / "quasi" / "strides.c", ["tsteps=3", "n=14"], "1KiB"),
    (KERNELS / "quasi" / "multigrid.c", ["tsteps=3", "n=14"], "512B"),
    (KERNELS / "quasi" / "decimate.c", ["n=22"], "512B"),
    (KERNELS / "quasi" / "stepped_mod.c", ["n=13", "m=8"], "2KiB"),
    # local arrays declared inside loops: a copy per iteration of the parallel loops
    (KERNELS / "private" / "stencil.c", ["tsteps=3", "n=14"], "768B"),
    (KERNELS / "private" / "flux.c", ["nstages=3", "n=13", "m=9"], "6KiB"),
    (KERNELS / "private" / "window.c", ["tsteps=3", "n=14", "w=5"], "1KiB"),
    # ifs on the data, evaluated at run time (tests/codegen/test_data_conditions.py)
    (KERNELS / "dataif" / "clamp.c", ["tsteps=3", "n=14", "lo=0.4"], "1KiB"),
    (KERNELS / "dataif" / "argmax.c", ["n=14", "m=11", "thr=0.5"], "1KiB"),
    (KERNELS / "dataif" / "branches.c", ["tsteps=3", "n=14", "thr=0.6"], "2KiB"),
    (KERNELS / "dataif" / "upwind.c", ["tsteps=3", "n=30"], "512B"),
    # names isl, Python or OpenCL C cannot take, given by their C names (codegen/names.py)
    (KERNELS / "names" / "badnames.c", ["iter=3", "len=14", "S1=2", "lambda=0.5"], "1KiB"),
    (KERNELS / "names" / "helper_words.c", ["n=30"], "128B"),
    (KERNELS / "names" / "driver_names.c", ["rt=24", "tile=3"], "1KiB"),
]
STAGED = [p for p in PROGRAMS if p[0].stem in ("mvt", "adi", "staged")]


def run(path, params, *extra, json_path=None):
    argv = ["run", str(path), "--check", "--no-progress"]
    for p in params:
        argv += ["--param", p]
    argv += [str(e) for e in extra]
    if json_path:
        argv += ["--json", str(json_path)]
    return main(argv)


@needs_cl
@pytest.mark.parametrize("path,params,cap", PROGRAMS, ids=[p[0].stem for p in PROGRAMS])
@pytest.mark.parametrize("ndev", [1, 2, 3, 4])
def test_run_check(path, params, cap, ndev, tmp_path):
    out = tmp_path / "r.json"
    assert run(path, params, "--devices", ndev, json_path=out) == 0
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass" and doc["devices"] == ndev
    assert len(doc["per_device"]) == ndev


@needs_cl
@pytest.mark.parametrize("path,params,cap", STAGED, ids=[p[0].stem for p in STAGED])
@pytest.mark.parametrize("shape", [(2, 3), (3, 32)], ids=["2x3", "3x32"])
@pytest.mark.parametrize("ndev,tight", [(1, False), (2, True), (3, False)])
def test_run_check_staged(path, params, cap, shape, ndev, tight, tmp_path):
    """Inner loops staged in local memory (a GPU's default; $BBMM_STAGE=GxC everywhere),
    in and out of memory."""
    out = tmp_path / "r.json"
    extra = ["--tile", 4, "--device-mem", cap] if tight else []
    assert run(path, params, "--devices", ndev, *extra, "--tune",
               f"stage={shape[0]}x{shape[1]}", json_path=out) == 0
    assert json.loads(out.read_text())["check"] == "pass"


# test_run_check_tight_memory's caps where PROGRAMS' cap leaves every box resident on
# that many devices with --tile 4 (measured on PoCL: the largest of 3/4, 1/2, 3/8, 1/4...
# of PROGRAMS' cap under which the run boxes something out)
TIGHT_CAPS = {
    ("polybench/floyd.c", 3): "768B",
    # their narrow nest (one tile, where its data is) leaves the other devices room
    ("polybench/lu.c", 3): "512B",
    ("polybench/fdtd2d.c", 3): "1KiB",
    ("tests/kernels/names/driver_names.c", 3): "768B",
    ("polybench/heat3d.c", 1): "4608B",
    ("polybench/heat3d.c", 3): "2304B",
    ("polybench/adi.c", 3): "1024B",
    ("polybench/matmul.c", 1): "1536B",
    ("polybench/matmul.c", 3): "768B",
    ("tests/kernels/growing.c", 1): "512B",
    ("tests/kernels/triangular.c", 3): "768B",
    ("tests/kernels/alpha_int.c", 1): "512B",
    ("tests/kernels/jacobi2d.c", 1): "2304B",
    ("tests/kernels/jacobi2d.c", 3): "1536B",
    ("tests/kernels/heat3d.c", 1): "2048B",
    ("tests/kernels/vec1d.c", 1): "768B",
    ("tests/kernels/vec1d.c", 3): "256B",
    ("tests/kernels/minmax.c", 3): "512B",
    ("tests/kernels/guarded.c", 1): "512B",
    ("tests/kernels/scratch.c", 3): "1024B",
    ("tests/kernels/temps.c", 1): "1536B",
    ("tests/kernels/temps.c", 3): "1152B",
    ("tests/kernels/promote.c", 3): "1024B",
    ("tests/kernels/negative_range.c", 1): "768B",
    ("tests/kernels/negative_range.c", 3): "384B",
    ("tests/kernels/helpers.c", 3): "768B",
    ("tests/kernels/pointer_result.c", 1): "512B",
    ("tests/kernels/pointer_result.c", 3): "512B",
    ("tests/kernels/pointers.c", 1): "1024B",
    ("tests/kernels/pointers.c", 3): "768B",
    ("tests/kernels/flat/jacobi.c", 1): "1536B",
    ("tests/kernels/flat/jacobi.c", 3): "1152B",
    ("tests/kernels/flat/matvec.c", 3): "3072B",
    ("tests/kernels/flat/mirror.c", 1): "1536B",
    ("tests/kernels/flat/mirror.c", 3): "768B",
    ("tests/kernels/flat/heat3d.c", 1): "4608B",
    ("tests/kernels/helper_pointer.c", 1): "768B",
    ("tests/kernels/helper_pointer.c", 3): "384B",
    ("tests/kernels/helper_early_return.c", 3): "1536B",
    ("tests/kernels/row_tables.c", 3): "1536B",
    ("tests/kernels/jumps.c", 3): "1536B",
    ("tests/kernels/while_loops.c", 3): "1024B",
    ("tests/kernels/converge.c", 1): "2304B",
    ("tests/kernels/converge.c", 3): "1536B",
    ("tests/kernels/returns_value.c", 3): "1024B",
    ("tests/kernels/switch_cases.c", 3): "1536B",
    ("tests/kernels/file_scalars.c", 3): "2KiB",
    ("tests/kernels/dataif/clamp.c", 3): "512B",
}
# runs that box nothing out at any cap that fits, with why
NO_BOXOUT = {
    ("tests/kernels/prefix_sum.c", 1): "no parallel loop: one work-item holds everything",
    ("tests/kernels/prefix_sum.c", 3): "no parallel loop: one work-item holds everything",
    ("tests/kernels/floyd_plain.c", 1): "no parallel loop: one work-item holds everything",
    ("tests/kernels/floyd_plain.c", 3): "no parallel loop: one work-item holds everything",
    ("tests/kernels/quasi/stepped_mod.c", 1): "no parallel loop: one work-item",
    ("tests/kernels/quasi/stepped_mod.c", 3): "no parallel loop: one work-item",
    # on 3 devices each device's share is within one tile's own boxes: a cap below
    # what leaves them resident is below one tile's boxes
    ("tests/kernels/alpha_int.c", 3): "a device's share is one tile's boxes",
    # isl's order (--schedule auto) runs its rows in parallel: 384 B hold a device's
    # share on 3 devices, and less does not run
    ("tests/kernels/growing.c", 3): "a device's share is one tile's boxes",
    ("tests/kernels/heat3d.c", 3): "a device's share is one tile's boxes",
    ("tests/kernels/guarded.c", 3): "a device's share is one tile's boxes",
    ("tests/kernels/flat/heat3d.c", 3): "a device's share is one tile's boxes",
    ("tests/kernels/private/flux.c", 3): "a device's share is one tile's boxes",
    # its parallel loop runs over Pluto's tiles of 32 points: --tile 4 takes them all, and
    # a cap below that tile's boxes (all of A, B and C) cannot run at all
    ("tests/kernels/pluto/gemm_tiled.c", 1): "one tile's boxes are the whole arrays",
    ("tests/kernels/pluto/gemm_tiled.c", 3): "one tile's boxes are the whole arrays",
}


@needs_cl
@pytest.mark.parametrize("path,params,cap", PROGRAMS, ids=[p[0].stem for p in PROGRAMS])
@pytest.mark.parametrize("ndev", [1, 3])
def test_run_check_tight_memory(path, params, cap, ndev, tmp_path):
    """Under a cap that forces box-out (evictions asserted) the result is still right."""
    key = (path.relative_to(ROOT).as_posix(), ndev)
    cap = TIGHT_CAPS.get(key, cap)
    out = tmp_path / "r.json"
    assert run(path, params, "--devices", ndev, "--tile", 4, "--device-mem", cap,
               json_path=out) == 0
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass"
    evictions = sum(d["evictions"] for d in doc["per_device"])
    if key not in NO_BOXOUT:
        assert evictions > 0, f"{key}: --device-mem {cap} boxed nothing out"


@needs_cl
@pytest.mark.parametrize("opts", [["--mode", "convex"], ["--no-reuse"], ["--coherence", "block"]])
@pytest.mark.parametrize("name", ["floyd", "heat2d", "lu"])
def test_run_modes(name, opts, tmp_path):
    path, params, _ = next(p for p in PROGRAMS if p[0].stem == name)
    out = tmp_path / "r.json"
    assert run(path, params, "--devices", 2, "--tile", 5, *opts, json_path=out) == 0
    assert json.loads(out.read_text())["check"] == "pass"


@needs_cl
def test_a_program_whose_exact_flow_isl_cannot_find_soon_runs_exactly(tmp_path):
    """tests/kernels/slow_flow.c: isl's exact value flow ran for minutes; over-approximated
    past ``FLOW_OPERATIONS`` (codegen/deps.py) the program compiles in seconds and runs
    as the sequential C program does (serially: none of its loops is parallel)."""
    out = tmp_path / "r.json"
    assert run(KERNELS / "slow_flow.c", ["n=15"], "--devices", 2, json_path=out) == 0
    assert json.loads(out.read_text())["check"] == "pass"


@needs_cl
def test_json_report_fields(tmp_path):
    out = tmp_path / "r.json"
    assert run(POLYBENCH / "floyd.c", ["n=16"], "--devices", 2, json_path=out) == 0
    doc = json.loads(out.read_text())
    for key in ("kernel", "devices", "params", "tile", "mode", "check", "per_device",
                "flowout_bytes", "flowin_bytes", "writeout_bytes", "readin_bytes", "time_s"):
        assert key in doc, key
    for key in ("name", "peak_bytes", "allocated_bytes", "h2d_bytes", "d2h_bytes",
                "d2d_bytes", "evictions"):
        assert key in doc["per_device"][0], key
    for key in ("total", "memory_mgmt", "compute", "flowout", "flowin", "writeout"):
        assert key in doc["time_s"], key
    # floyd's flow-out is one row per serial iteration (except the last): exact, not blocks
    assert doc["flowout_bytes"] == (16 - 1) * 16 * 4


@needs_cl
@pytest.mark.parametrize("path,params,cap", [
    (POLYBENCH / "heat2d.c", ["tsteps=2", "n=60"], "4KiB"),
    (KERNELS / "floyd.c", ["n=40"], "2KiB"),
    (POLYBENCH / "matmul.c", ["ni=40", "nj=36", "nk=30"], "6KiB"),
    # its first 64 iterations need 63 rows, its last 200 (the dry run once stopped early)
    (KERNELS / "rows_below.c", ["n=400"], "512KiB"),
], ids=["heat2d", "floyd", "matmul", "rows_below"])
def test_default_tile_shrinks_to_fit_the_cap(path, params, cap, tmp_path, capsys):
    """With --device-mem below the data and no --tile, bbmm picks a tile whose boxes fit
    (the default, one tile per device, needs all of them resident) and says so."""
    out = tmp_path / "r.json"
    assert run(path, params, "--devices", 2, "--device-mem", cap, json_path=out) == 0
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass"
    assert all(d["peak_bytes"] <= parse_bytes(cap) for d in doc["per_device"])
    assert sum(d["evictions"] for d in doc["per_device"]) > 0
    note = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("bbmm: tile ")]
    assert len(note) == 1 and f"tile {doc['tile']} (not " in note[0], note


def test_missing_param_is_one_line(capsys):
    assert main(["run", str(POLYBENCH / "floyd.c")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing --param n=VALUE" in err[0]


def test_unknown_param(capsys):
    assert main(["run", str(POLYBENCH / "floyd.c"), "--param", "m=3"]) == 2
    assert "no parameter 'm'" in capsys.readouterr().err


@pytest.mark.parametrize("path", sorted(KERNELS.glob("invalid_*.c")), ids=lambda p: p.stem)
def test_compile_refusal_is_one_line_with_location(path, capsys):
    first = path.read_text().splitlines()[0]
    expect = first.split("expect:", 1)[1].strip()
    assert main(["compile", str(path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"bbmm: error: {path}:") and expect in err[0]


def test_no_traceback_from_the_command_line(tmp_path):
    bad = KERNELS / "invalid_nonaffine_subscript.c"
    r = subprocess.run([sys.executable, "-m", "bbmm", "compile", str(bad)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1


@needs_cl
def test_compile_writes_a_standalone_driver(tmp_path):
    assert main(["compile", str(POLYBENCH / "heat2d.c"), "-o", str(tmp_path)]) == 0
    driver = tmp_path / "heat2d_host.py"
    assert driver.exists() and (tmp_path / "heat2d.cl").exists()
    text = driver.read_text()
    assert "Algorithm 1" in text and "def run(" in text
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, str(driver), "--devices", "2", "--param", "tsteps=2",
                        "--param", "n=16", "--no-progress"], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0, r.stderr
    assert "heat2d: 2 device(s)" in r.stdout
    # a bad setting, read when the driver loads bbmm.hostlib: one line, as from bbmm run
    r = subprocess.run([sys.executable, str(driver), "--param", "tsteps=2", "--param", "n=16"],
                       capture_output=True, text=True, env=dict(env, BBMM_BLOCK="4by1"))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == ["bbmm: error: BBMM_BLOCK: '4by1' is not RxQ (4x1)"]


def test_awkward_c_names_are_renamed_inside_and_kept_outside(capsys):
    """``iter``, ``lambda``, ``min``, ``half``, ``S1``: bbmm compile says what it renamed,
    ``--param`` and its messages, the init function and a standalone driver keep the C
    names (the run itself is in test_run_check)."""
    path = KERNELS / "names" / "badnames.c"
    assert main(["compile", str(path)]) == 0
    out = capsys.readouterr().out
    assert "renamed: iter -> iter_ (a Python built-in), len -> len_ (a Python built-in), " \
           "S1 -> S1_ (the form of bbmm's statement names), lambda -> lambda_ (a Python " \
           "keyword), half -> half_ (a word of OpenCL C)" in out
    assert main(["run", str(path), "--param", "iter=1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["bbmm: error: missing --param len=VALUE, --param S1=VALUE (the kernel's "
                   "integer parameters: iter, len, S1)"]
    assert main(["run", str(path), "--param", "iter_=1"]) == 2
    assert "(its parameters: iter, len, S1, lambda)" in capsys.readouterr().err


@needs_cl
def test_standalone_driver_takes_the_c_names(tmp_path):
    path = KERNELS / "names" / "badnames.c"
    assert main(["compile", str(path), "-o", str(tmp_path)]) == 0
    r = subprocess.run([sys.executable, str(tmp_path / "badnames_host.py"), "--devices", "2",
                        "--param", "iter=2", "--param", "len=9", "--param", "S1=1",
                        "--param", "lambda=0.5", "--no-progress"],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0 and "badnames: 2 device(s)" in r.stdout, r.stderr


@needs_cl
def test_a_table_of_rows_takes_an_init_function_that_stays_inside(tmp_path, capsys):
    """``double **B`` sized from the kernel's subscripts: an init function writing inside
    those sizes fills it (and --check passes); one writing beyond them is refused in one
    line instead of writing past the rows."""
    path = KERNELS / "row_tables.c"
    args = ["run", str(path), "--check", "--no-progress", "--param", "tsteps=2",
            "--param", "n=13", "--param", "m=11", "--init", "init_array"]
    assert main(args) == 0
    assert "check pass" in capsys.readouterr().out
    beyond = tmp_path / "beyond.c"
    beyond.write_text(path.read_text().replace("if (i < n - 1 && j < m - 1) B[i][j]",
                                               "B[i][j]"))
    assert main([args[0], str(beyond)] + args[2:]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "parameter 'B' is a table of rows" in err[0]
    assert "holds 12 x 10 elements" in err[0] and "it reaches 13 x 11" in err[0]


def test_out_of_bounds_access_warns_with_location(capsys):
    path = KERNELS / "warn_out_of_bounds.c"
    assert main(["compile", str(path)]) == 0
    err = capsys.readouterr().err
    assert f"bbmm: warning: {path}:4:12: A[i + 1][i + 1] may be out of the bounds of A" in err


@pytest.mark.parametrize("path", sorted(POLYBENCH.glob("*.c")), ids=lambda p: p.stem)
def test_polybench_accesses_in_bounds(path, capsys):
    assert main(["compile", str(path)]) == 0
    assert "warning" not in capsys.readouterr().err


# stencils with enough time steps for replay (record, compare, fixed point, replay)
REPLAYED = [
    (POLYBENCH / "heat2d.c", ["tsteps=9", "n=20"], True),
    # fdtd2d reads _fict_[t]: repeats because the small read-only table is held whole
    (POLYBENCH / "fdtd2d.c", ["tmax=9", "nx=16", "ny=12"], True),
    (POLYBENCH / "heat3d.c", ["tsteps=8", "n=8"], True),
    (KERNELS / "jacobi2d.c", ["tsteps=9", "n=14"], True),
    (POLYBENCH / "adi.c", ["tsteps=8", "n=12"], False),
    (POLYBENCH / "floyd.c", ["n=12"], False),
]


@needs_cl
@pytest.mark.parametrize("path,params,replays", REPLAYED, ids=[p[0].stem for p in REPLAYED])
@pytest.mark.parametrize("ndev", [1, 2, 3])
def test_replay_checks_and_moves_the_same_bytes(path, params, replays, ndev, tmp_path):
    """Replayed time steps give the sequential C program's result and move exactly the
    bytes the full bookkeeping moves (every counter of --json but times), in as many copy
    commands or fewer: a replay moves two regions of one copy in a row (halo rows) as one."""
    docs = []
    for opt in ([], ["--no-replay"]):
        out = tmp_path / f"r{len(docs)}.json"
        assert run(path, params, "--devices", ndev, "--tile", 3, *opt, json_path=out) == 0
        docs.append(json.loads(out.read_text()))
    on, off = docs
    assert on["check"] == off["check"] == "pass"
    assert off["replayed_iterations"] == 0 and off["replay"] is False
    if replays:
        assert on["replayed_iterations"] > 0
    for key in ("readin_bytes", "flowout_bytes", "flowin_bytes", "writeout_bytes",
                "writeback_bytes", "refresh_bytes", "tiles"):
        assert on[key] == off[key], key
    strip = [{k: v for k, v in d.items() if k != "copies"} for d in on["per_device"]]
    assert strip == [{k: v for k, v in d.items() if k != "copies"} for d in off["per_device"]]
    for a, b in zip(on["per_device"], off["per_device"]):
        assert a["copies"] <= b["copies"]


SHIFTED = [
    (POLYBENCH / "floyd.c", ["n=128"], 1, 128),
    (POLYBENCH / "floyd.c", ["n=128"], 2, 64),
    (POLYBENCH / "lu.c", ["n=96"], 1, 96),
    (POLYBENCH / "lu.c", ["n=256"], 2, 128),
]


@needs_cl
@pytest.mark.parametrize("path,params,ndev,tile", SHIFTED,
                         ids=[f"{p[0].stem}-{p[2]}" for p in SHIFTED])
def test_steps_replayed_up_to_a_shift_check_and_move_the_same_bytes(path, params, ndev, tile,
                                                                    tmp_path):
    """Floyd's and LU's step k moves row k: steps replayed up to a shift of their boxes
    (bbmm.shifted) give the sequential C program's result and move exactly the bytes,
    in exactly the copy commands, of the full bookkeeping."""
    docs = []
    for opt in ([], ["--no-replay"]):
        out = tmp_path / f"s{len(docs)}.json"
        assert run(path, params, "--devices", ndev, "--tile", tile, *opt, json_path=out) == 0
        docs.append(json.loads(out.read_text()))
    on, off = docs
    assert on["check"] == off["check"] == "pass"
    assert on["shifted_iterations"] == on["replayed_iterations"] > 0
    assert off["shifted_iterations"] == 0
    for key in ("readin_bytes", "flowout_bytes", "flowin_bytes", "writeout_bytes",
                "writeback_bytes", "refresh_bytes", "tiles"):
        assert on[key] == off[key], key
    assert on["per_device"] == off["per_device"]


@needs_cl
def test_lu_over_processes_replays_tiles_run_in_parts(tmp_path):
    """LU over two processes: the owner of the next pivot row runs its tile in parts (the
    rows writing the flow-out first), and its steps are replayed up to a shift with the
    parts decoded. The result is the sequential C program's, and every process moves
    exactly the bytes, in exactly the copy commands, of the full bookkeeping."""
    docs = []
    for opt in ([], ["--no-replay"]):
        out = tmp_path / f"p{len(docs)}.json"
        assert run(POLYBENCH / "lu.c", ["n=256"], "--devices", 2, "--tile", 128,
                   "--procs", 2, *opt, json_path=out) == 0
        docs.append(json.loads(out.read_text()))
    on, off = docs
    assert on["check"] == off["check"] == "pass"
    ranks_on = [r["runtime"] for r in on["per_rank"]]
    ranks_off = [r["runtime"] for r in off["per_rank"]]
    parted = [r for r in ranks_on if r["edge_first_tiles"] > 0 and r["shifted_iterations"] > 0]
    assert parted, "no process replayed steps with tiles run in parts"
    for a, b in zip(ranks_on, ranks_off):
        assert b["shifted_iterations"] == 0
        for key in ("readin_bytes", "flowout_bytes", "flowin_bytes", "writeout_bytes",
                    "writeback_bytes", "refresh_bytes", "tiles", "edge_first_tiles"):
            assert a[key] == b[key], key
        assert a["per_device"] == b["per_device"]
    assert on["exchange_bytes"] == off["exchange_bytes"]


def _placed_runs(tmp_path, monkeypatch, program, params):
    """``program`` on three devices of one process with replay and without (``--json``
    of each), and how often each weighed the devices' copies to place a small phase."""
    from bbmm.runtime import Runtime
    weighed = []
    real = Runtime._best_device

    def best(self, t):
        weighed[-1] += 1
        return real(self, t)

    monkeypatch.setattr(Runtime, "_best_device", best)
    docs = []
    for opt in ([], ["--no-replay"]):
        weighed.append(0)
        out = tmp_path / f"p{len(docs)}.json"
        assert run(POLYBENCH / program, params, "--devices", 3, "--procs", 1, *opt,
                   json_path=out) == 0
        docs.append(json.loads(out.read_text()))
    on, off = docs
    assert on["check"] == off["check"] == "pass"
    for key in ("readin_bytes", "flowout_bytes", "flowin_bytes", "writeout_bytes",
                "writeback_bytes", "refresh_bytes", "tiles"):
        assert on[key] == off[key], key
    assert on["per_device"] == off["per_device"]
    return on, off, weighed


@needs_cl
def test_lu_in_one_process_replays_its_placed_phase(tmp_path, monkeypatch):
    """LU on three devices of one process: the scaling of row k is a small phase, run
    where row k is; a step replayed up to a shift places it as its template's step did,
    without weighing the devices' copies again. The result is the sequential C
    program's, and every device moves exactly the bytes, in exactly the copy commands,
    of the full bookkeeping."""
    on, off, weighed = _placed_runs(tmp_path, monkeypatch, "lu.c", ["n=512"])
    assert on["shifted_iterations"] > 200 and off["shifted_iterations"] == 0
    assert weighed[0] <= weighed[1] - on["shifted_iterations"]  # a tile or more per replay


@needs_cl
def test_fdtd2d_replays_its_placed_row_phase_without_weighing_devices(tmp_path, monkeypatch):
    """fdtd2d's ``ey[0][j] = _fict_[t]`` is a small phase placed where row 0 is, and it
    names another element of ``_fict_`` (held whole) every step: a replayed fixed point
    places it as its recorded iteration did, without weighing every device's copies
    again. The result is the sequential C program's, with the bytes and copy commands of
    the run without replay."""
    on, off, weighed = _placed_runs(tmp_path, monkeypatch, "fdtd2d.c",
                                    ["nx=64", "ny=64", "tmax=40"])
    assert on["replayed_iterations"] >= 30 and off["replayed_iterations"] == 0
    assert weighed[1] >= 39  # every step but the first, whose row phase came first
    assert weighed[0] <= weighed[1] - on["replayed_iterations"]


@needs_cl
@pytest.mark.parametrize("name,n", [("floyd", 384), ("lu", 512)])
def test_steps_moved_on_without_their_tiles_are_exact(name, n, tmp_path, monkeypatch):
    """Floyd's and LU's steps on three devices of one process: most are replayed from
    the steps before, their tiles never built (``Runtime.ahead``). The result is the
    sequential C program's, and every device moves exactly the bytes, in exactly the
    copy commands and launches, of the replay that builds every tile (``BBMM_AHEAD=0``)
    and of the full bookkeeping (``--no-replay``)."""
    docs = {}
    for mode, opt, ahead in (("ahead", [], "1"), ("built", [], "0"),
                             ("full", ["--no-replay"], "1")):
        monkeypatch.setenv("BBMM_AHEAD", ahead)
        out = tmp_path / f"{mode}.json"
        assert run(POLYBENCH / f"{name}.c", [f"n={n}"], "--devices", 3, "--procs", 1, *opt,
                   json_path=out) == 0
        docs[mode] = json.loads(out.read_text())
    ahead, built, full = docs["ahead"], docs["built"], docs["full"]
    assert ahead["check"] == built["check"] == full["check"] == "pass"
    assert ahead["ahead_iterations"] > n // 2 and built["ahead_iterations"] == 0
    assert ahead["shifted_iterations"] == built["shifted_iterations"] > n // 2
    for key in ("readin_bytes", "flowout_bytes", "flowin_bytes", "writeout_bytes",
                "writeback_bytes", "refresh_bytes", "tiles"):
        assert ahead[key] == built[key] == full[key], key
    assert ahead["per_device"] == built["per_device"] == full["per_device"]


@needs_cl
def test_small_read_only_array_held_whole(tmp_path, monkeypatch):
    """fdtd2d's _fict_ is read at [t]: held whole it is read in once per device, not one
    element per step; BBMM_WHOLE=0 turns that off (and then no step repeats)."""
    path, params = POLYBENCH / "fdtd2d.c", ["tmax=9", "nx=16", "ny=12"]
    docs = {}
    for limit in (1 << 20, 0):
        monkeypatch.setenv("BBMM_WHOLE", str(limit))
        out = tmp_path / f"w{limit}.json"
        assert run(path, params, "--devices", 2, json_path=out) == 0
        docs[limit] = json.loads(out.read_text())
    assert docs[0]["check"] == docs[1 << 20]["check"] == "pass"
    assert docs[0]["replayed_iterations"] == 0 and docs[1 << 20]["replayed_iterations"] > 0
    allocs = [sum(d["boxes_allocated"] for d in doc["per_device"]) for doc in docs.values()]
    assert allocs[0] < allocs[1]


@needs_cl
def test_pageable_host_arrays_are_reported(tmp_path, monkeypatch, capsys):
    """Host arrays the driver would not pin are named in the report and the JSON (their
    copies run at a fraction of the pinned speed); pinned ones are not."""
    import pyopencl as cl

    path, params = POLYBENCH / "mvt.c", ["m=24", "n=16"]
    out = tmp_path / "pinned.json"
    assert run(path, params, json_path=out) == 0
    assert json.loads(out.read_text())["pageable_host_arrays"] == []
    assert "pageable" not in capsys.readouterr().out

    real = cl.Buffer

    def refuse(ctx, flags, *a, **kw):
        if flags & cl.mem_flags.ALLOC_HOST_PTR:
            raise cl.MemoryError("clCreateBuffer", cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE,
                                 "refused by the test")
        return real(ctx, flags, *a, **kw)

    monkeypatch.setattr(cl, "Buffer", refuse)
    out = tmp_path / "pageable.json"
    assert run(path, params, json_path=out) == 0
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass"
    assert sorted(doc["pageable_host_arrays"]) == ["A", "x1", "x2", "y1", "y2"]
    assert "host arrays in pageable memory: A, x1, x2, y1, y2" in capsys.readouterr().out


def test_bad_fuse_is_one_line(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", str(POLYBENCH / "floyd.c"), "--param", "n=8", "--fuse", "2"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bbmm: error: ")
    assert "argument --fuse: '2' is not in [0, 1)" in err[0]


@needs_cl
@pytest.mark.parametrize("fuse", ["0", "1/64", "0.5"])
def test_fuse_keeps_the_result(fuse, tmp_path):
    out = tmp_path / "r.json"
    # n=40: a tile's hull of A is 21 x 40 points, 4 of them (0.5%) outside its boxes
    assert run(POLYBENCH / "heat2d.c", ["tsteps=3", "n=40"], "--devices", 2, "--fuse", fuse,
               json_path=out) == 0
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass" and doc["fuse"] == pytest.approx(eval(fuse))
    # heat2d's halo columns split only with the paper's exact boxes
    assert (doc["split_accesses"] > 0) == (fuse == "0")


@needs_cl
@pytest.mark.parametrize("small", [None, 0], ids=["default", "all-side"])
@pytest.mark.parametrize("ndev", [1, 2])
def test_side_readins_under_box_out(ndev, small, tmp_path, monkeypatch):
    """Slow kernels under a cap that makes every tile reuse freed memory: each tile's
    read-in runs on the side queue beside the previous tile's kernel and must wait for
    the last use of the memory it lands in (with that wait dropped, all of 3 runs fail
    the check with up to 13311 of 16384 elements wrong). ``all-side``: every read-in on
    the side queue, also the small ones behind the newest kernel
    (:meth:`~bbmm.devices.opencl.OpenCLDevice.side_for`)."""
    if small is not None:
        import bbmm.devices.cldevice as O
        monkeypatch.setattr(O, "SIDE_SMALL", small)
    out = tmp_path / "r.json"
    assert run(KERNELS / "slow_tiles.c", ["n=64", "m=256", "r=3000"], "--devices", ndev,
               "--tile", 4, "--device-mem", "24KiB", json_path=out) == 0
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass"
    assert all(d["evictions"] > 0 for d in doc["per_device"])


@needs_cl
@pytest.mark.parametrize("ndev", [1, 2])
def test_programs_that_run_once_are_pipelined_by_default(ndev, tmp_path, monkeypatch):
    """With the least data per tile lowered, blackscholes and matmul get $BBMM_PIPELINE
    tiles per device by default and still give the sequential result; mvt, whose nests
    share A, and floyd, which has a serial loop, keep one tile per device."""
    import bbmm.run
    monkeypatch.setattr(bbmm.run, "PIPELINE_BYTES", 1024)
    monkeypatch.setenv("BBMM_PIPELINE", "3")
    cases = [(POLYBENCH / "blackscholes.c", ["n=4000"], 3 * ndev),
             (POLYBENCH / "matmul.c", ["ni=48", "nj=40", "nk=32"], 3 * ndev),
             (POLYBENCH / "mvt.c", ["m=64", "n=48"], None),
             (POLYBENCH / "floyd.c", ["n=32"], None)]
    for path, params, tiles in cases:
        out = tmp_path / f"{path.stem}.json"
        assert run(path, params, "--devices", ndev, json_path=out) == 0
        doc = json.loads(out.read_text())
        assert doc["check"] == "pass", path.stem
        rows = int(params[0].split("=")[1])
        if tiles is None:     # one tile per device of the widest nest
            assert doc["tile"] == -(-rows // ndev), path.stem
        else:
            assert doc["tiles"] == tiles and doc["tile"] == -(-rows // tiles), path.stem


@needs_cl
@pytest.mark.parametrize("edge", ["1", "0"])
def test_stencils_run_their_flowout_rows_first(edge, tmp_path, monkeypatch):
    """On three devices the tiles of heat2d, fdtd2d and heat3d whose flow-out another device
    holds run the rows writing it first, then the rest of their rows (two launches of the
    generated kernels, the middle tile's two ends in one, on 1-row and partial strips):
    still the sequential result; with $BBMM_EDGE=0 every tile is launched whole."""
    monkeypatch.setenv("BBMM_EDGE", edge)
    cases = [(POLYBENCH / "heat2d.c", ["tsteps=5", "n=40"]),
             (POLYBENCH / "fdtd2d.c", ["tmax=4", "nx=37", "ny=29"]),
             (POLYBENCH / "heat3d.c", ["tsteps=3", "n=19"])]
    for path, params in cases:
        out = tmp_path / f"{path.stem}.json"
        assert run(path, params, "--devices", 3, json_path=out) == 0
        doc = json.loads(out.read_text())
        assert doc["check"] == "pass", path.stem
        assert (doc["edge_first_tiles"] > 0) == (edge == "1"), path.stem


WIDE_STENCIL = """
void wide(int n, int tsteps, float A[n][n], float B[n][n]) {
  for (int t = 0; t < tsteps; t++) {
    for (int i = 2; i < n - 1; i++)
      for (int j = 2; j < n - 1; j++)
        B[i][j] = 0.2f * (A[i][j] + A[i - 2][j] + A[i + 1][j] + A[i][j - 2] + A[i][j + 1]);
    for (int i = 2; i < n - 1; i++)
      for (int j = 2; j < n - 1; j++)
        A[i][j] = B[i][j];
  }
}
"""


@needs_cl
@pytest.mark.parametrize("strip", ["1", "3", "8"])
def test_both_ends_of_a_middle_tile_run_in_one_launch(strip, tmp_path, monkeypatch):
    """A middle tile's flow-out rows at both ends (one row read by the tile before, two by
    the tile after, of a stencil reaching i - 2 and i + 1) run in one launch on two ranges
    of rows (bbmm.hostlib.launch, a kernel built with BBMM_GAPS), whatever the rows a
    work-item runs (``coarsen1``: the first range padded to whole strips): the sequential
    result, and the middle device launches no more than the devices at the ends, which
    have one range of flow-out rows each."""
    monkeypatch.setenv("BBMM_EDGE", "1")
    monkeypatch.setenv("BBMM_COARSEN1", strip)
    src = tmp_path / "wide.c"
    src.write_text(WIDE_STENCIL)
    out = tmp_path / "wide.json"
    assert run(src, ["n=61", "tsteps=5"], "--devices", 3, json_path=out) == 0
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass"
    assert doc["edge_first_tiles"] > 0
    launches = [d["launches"] for d in doc["per_device"]]
    assert launches[1] == launches[0] == launches[2], launches


@needs_cl
def test_bad_pipeline_setting_is_one_line(capsys, monkeypatch):
    monkeypatch.setenv("BBMM_PIPELINE", "many")
    assert main(["run", str(POLYBENCH / "blackscholes.c"), "--param", "n=64",
                 "--no-progress", "--device-kind", "cpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["bbmm: error: BBMM_PIPELINE: 'many' is not an integer"]


def test_a_returned_value_is_checked_and_printed(capsys):
    """``double f(...) { ...; return total; }``: the value is compared with the C
    function's and printed; an early ``return -1.0;`` for sizes with nothing to do."""
    argv = ["run", str(KERNELS / "returns_value.c"), "--param", "n=7", "--param", "m=3",
            "--devices", "2", "--check", "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "check pass" in out          # result[0] against the C function's value
    value = float(out.split("returned ", 1)[1].split()[0])
    assert value > 0                    # a sum of squares of sums of inputs in [0, 1)


def test_parameters_that_empty_an_array_are_refused_in_one_line(capsys):
    """n=0 leaves rows[n] without an element: the model's context excludes it, so bbmm
    refuses (it used to crash in the copies)."""
    argv = ["run", str(KERNELS / "returns_value.c"), "--param", "n=0", "--param", "m=3",
            "--devices", "2", "--check", "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rows[n] would have no element" in err[0], err


@needs_cl
@pytest.mark.parametrize("path,params,extra", [
    (KERNELS / "reductions.c", ["n=37", "m=23", "tsteps=2"], ["--devices", 2]),
    (KERNELS / "reductions.c", ["n=37", "m=23", "tsteps=2"],
     ["--devices", 3, "--tile", 4, "--device-mem", "6KiB"]),
    (KERNELS / "reductions1d.c", ["n=3000", "m=7", "tsteps=2"], ["--devices", 3]),
    (KERNELS / "reductions1d.c", ["n=3000", "m=7", "tsteps=2"],
     ["--devices", 2, "--tile", 16, "--device-mem", "200KiB"]),
], ids=["reductions", "reductions-tight", "reductions1d", "reductions1d-tight"])
def test_split_reductions_give_the_c_programs_bits(path, params, extra, tmp_path):
    """Max, min, fmaxf and integer-sum reductions split over rows and strips, or over
    strips and blocks of a flat loop (codegen/reductions.py), against the C program:
    zeros of both signs and NaNs come from the data and 1/x tells -0 from +0, so partials
    combined out of order fail. (Two runs each, not PROGRAMS' six: reductions.c's eleven
    nests take PoCL some 20 s to build.)"""
    out = tmp_path / "r.json"
    assert run(path, params, *extra, json_path=out) == 0
    assert json.loads(out.read_text())["check"] == "pass"


@needs_cl
def test_a_time_loop_stops_once_its_break_is_taken(tmp_path):
    """converge.c breaks on convergence: the host looks at the break flag between
    iterations and stops the loop, so a huge tmax costs nothing (without the look, its
    400000 idle sweeps would run), and the result is still the C program's."""
    out = tmp_path / "r.json"
    assert run(KERNELS / "converge.c", ["n=14", "tmax=400000", "tol=0.02"], "--devices", 2,
               json_path=out) == 0
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass" and doc["tiles"] < 50_000


@needs_cl
@pytest.mark.parametrize("program,n,ndev", [("floyd.c", 192, 3), ("floyd.c", 192, 4),
                                            ("lu.c", 192, 3)])
def test_relaunched_without_their_tiles_passes_check(tmp_path, monkeypatch, program, n, ndev):
    """Floyd and LU with every template written out at its first replay (bbmm.shiftcode),
    their launches repeated without their tiles (Relaunch; LU's on a grid that shrinks),
    on OpenCL devices of one process: exact against the sequential C, with the bytes of
    the run without replay."""
    from bbmm import shifted, shiftcode
    monkeypatch.setattr(shifted, "WRITE_AFTER", 1)
    made = [0]
    real = shiftcode.Relaunch.go

    def go(self, rt, at, pieces):
        ok = real(self, rt, at, pieces)
        made[0] += ok
        return ok

    monkeypatch.setattr(shiftcode.Relaunch, "go", go)
    docs = []
    for opt in ([], ["--no-replay"]):
        out = tmp_path / f"f{len(docs)}.json"
        assert run(POLYBENCH / program, [f"n={n}"], "--devices", ndev, "--procs", 1, *opt,
                   json_path=out) == 0
        docs.append(json.loads(out.read_text()))
    on, off = docs
    assert on["check"] == off["check"] == "pass"
    assert made[0] >= n // 2 * (ndev - 1) // 2, made
    for key in ("readin_bytes", "flowout_bytes", "flowin_bytes", "writeout_bytes", "tiles"):
        assert on[key] == off[key], key


TIMED_STENCIL = """
void timed(int tsteps, int n, float A[n][n], float B[n][n]) {
  for (int t = 0; t < tsteps; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        B[i][j] = 0.25f * (A[i + 1][j] + A[i - 1][j] + A[i][j + 1] + A[i][j - 1])
                + 0.001f * t;
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[i][j] = 0.5f * B[i][j] + 0.5f * A[i][j];
  }
}
"""


@needs_cl
@pytest.mark.parametrize("ndev", [2, 3])
def test_replayed_steps_relaunch_with_their_own_time(tmp_path, monkeypatch, ndev):
    """A stencil whose kernels read the time step ``t``: a replayed step launches on the
    recorded buffers without the tiles' callbacks (bbmm.replay.relaunch), each kernel
    given this step's ``t``; exact against the sequential C, with the bytes of the run
    without replay."""
    from bbmm import replay
    path = tmp_path / "timed.c"
    path.write_text(TIMED_STENCIL)
    made = [0]
    real = replay.relaunch

    def relaunch(rt, t, tb, args):
        ok = real(rt, t, tb, args)
        made[0] += ok
        return ok

    monkeypatch.setattr(replay, "relaunch", relaunch)
    docs = []
    for opt in ([], ["--no-replay"]):
        out = tmp_path / f"t{len(docs)}.json"
        assert run(path, ["tsteps=40", "n=96"], "--devices", ndev, "--procs", 1, *opt,
                   json_path=out) == 0
        docs.append(json.loads(out.read_text()))
    on, off = docs
    assert on["check"] == off["check"] == "pass"
    assert made[0] >= 2 * ndev * 20, made
    for key in ("readin_bytes", "flowout_bytes", "flowin_bytes", "writeout_bytes", "tiles"):
        assert on[key] == off[key], key

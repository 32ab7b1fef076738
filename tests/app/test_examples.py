"""The example kernels shipped with bbmm: ``bbmm examples``, ``--example NAME`` on
``bbmm run`` and ``bbmm compile``, and the wheel that carries them (``bbmm/examples``,
mapped onto ``polybench/`` by pyproject.toml)."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from bbmm import example
from bbmm.cli import main
from bbmm.diagnostic import UsageError
from support.paths import ROOT

SHIPPED = sorted(p.stem for p in (ROOT / "polybench").glob("*.c"))


def test_bbmm_examples_lists_each_with_one_line(capsys):
    assert main(["examples"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out] == SHIPPED
    assert "floyd" in SHIPPED and "mvt" in SHIPPED
    floyd = next(line for line in out if line.startswith("floyd "))
    assert floyd.split(None, 1)[1] == ("Floyd-Warshall all-pairs shortest paths "
                                       "(PolyBench floyd-warshall).")
    assert all(len(line.split(None, 1)) == 2 for line in out)  # every one described
    assert main(["examples", "--folder"]) == 0
    assert Path(capsys.readouterr().out.strip()) == example.folder()


def test_example_resolves_to_the_shipped_file(capsys):
    assert example.path("floyd") == example.folder() / "floyd.c"
    assert example.path("floyd").read_text() == (ROOT / "polybench" / "floyd.c").read_text()
    assert main(["compile", "--example", "floyd"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{example.folder() / 'floyd.c'}: kernel floyd(n, path)")


def test_run_example(capsys):
    pytest.importorskip("pyopencl")
    from support.needs import no_opencl_reason
    if no_opencl_reason():
        pytest.skip(no_opencl_reason())
    assert main(["run", "--example", "mvt", "--param", "m=16", "--param", "n=8", "--check",
                 "--no-progress"]) == 0
    assert "check pass" in capsys.readouterr().out


def test_unknown_example_is_one_line_listing_the_known_ones():
    r = subprocess.run([sys.executable, "-m", "bbmm", "run", "--example", "flyod"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stdout == ""
    assert r.stderr.count("\n") == 1
    assert r.stderr.startswith("bbmm: error: --example 'flyod': no such example (known: ")
    assert ", ".join(SHIPPED) in r.stderr
    with pytest.raises(UsageError, match="no such example"):
        example.path("../polybench/floyd")


@pytest.mark.parametrize("argv,message", [
    (["run", "--example", "floyd", "polybench/mvt.c"],
     "bbmm: error: --example floyd and the file polybench/mvt.c: give one of them"),
    (["compile", "polybench/mvt.c", "--example", "floyd"],
     "bbmm: error: --example floyd and the file polybench/mvt.c: give one of them"),
    (["run"], "bbmm: error: a C file (or --example NAME: bbmm examples lists them) is needed"),
])
def test_example_and_a_file_is_refused(argv, message, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err == message + "\n" and captured.out == ""


def test_the_wheel_ships_the_examples(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(ROOT),
                        "-w", str(tmp_path)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"no wheel built here: {r.stderr.strip().splitlines()[-1:]}")
    (wheel,) = tmp_path.glob("bbmm-*.whl")
    files = set(zipfile.ZipFile(wheel).namelist())
    assert {f"bbmm/examples/{n}.c" for n in SHIPPED} <= files
    assert "bbmm/schemas/trace.schema.json" in files and "bbmm/example.py" in files
    assert "bbmm/timeline.py" in files
    # the compiler ships inside bbmm (pyproject.toml maps codegen/ onto bbmm.codegen)
    assert "bbmm/codegen/compile.py" in files and "bbmm/codegen/__init__.py" in files
    assert not [f for f in files if f.startswith("codegen/")]
    # installed from the wheel (unpacked here), bbmm finds them in bbmm/examples
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    r = subprocess.run([sys.executable, "-c", "from bbmm import example; "
                        "print(example.folder()); print(example.path('lu')); "
                        "import bbmm.codegen.compile as c, importlib.util as u; "
                        "print(c.__file__); print(u.find_spec('codegen') is None)"],
                       capture_output=True, text=True, cwd=tmp_path,
                       env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    folder, lu, compiler, no_top_level = r.stdout.split()
    assert compiler == str(tmp_path / "site" / "bbmm" / "codegen" / "compile.py")
    assert no_top_level == "True"
    assert folder == str(tmp_path / "site" / "bbmm" / "examples")
    assert lu == str(tmp_path / "site" / "bbmm" / "examples" / "lu.c")

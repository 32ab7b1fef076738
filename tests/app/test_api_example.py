"""``bbmm.compile(example=NAME)``: the shipped example kernels from Python, as
``--example NAME`` on the command line, with the same one-line error for a bad name."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import bbmm
from bbmm import example
from bbmm.cli import main
from bbmm.diagnostic import BBMMError, UsageError
from support.paths import ROOT



def test_compile_example_is_the_shipped_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)      # no polybench/ here: found through the package
    prog = bbmm.compile(example="floyd")
    assert Path(prog.path) == example.path("floyd") == example.folder() / "floyd.c"
    assert prog.function == "floyd" and list(prog.arrays) == ["path"]
    assert list(prog.parameters) == ["n"] and prog.serial == ("k",)
    # the same program as compiling the file by its path
    by_path = bbmm.compile(ROOT / "polybench" / "floyd.c")
    assert str(by_path).splitlines()[1:] == str(prog).splitlines()[1:]


def test_compile_example_takes_the_other_arguments():
    prog = bbmm.compile(example="mvt", schedule="as-written")
    assert set(prog.arrays) == {"A", "x1", "x2", "y1", "y2"}
    assert prog.function == "mvt"


def _cli_error(argv: list[str]) -> str:
    r = subprocess.run([sys.executable, "-m", "bbmm", *argv], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


@pytest.mark.parametrize("name", ["flyod", "floyd.c", "../polybench/floyd", ""])
def test_bad_name_is_the_cli_error(name):
    with pytest.raises(UsageError) as exc:
        bbmm.compile(example=name)
    msg = str(exc.value)
    assert "\n" not in msg and isinstance(exc.value, BBMMError)
    assert msg.startswith(f"example {name!r}: no such example (known: adi, ")
    assert "floyd" in msg and "bbmm examples lists them" in msg
    # the command line says the same, with its own spelling of the option
    cli = _cli_error(["compile", "--example", name])
    assert cli == f"bbmm: error: --{msg}"


def test_bad_name_type():
    with pytest.raises(UsageError, match=r"^example 3: no such example \(known: "):
        bbmm.compile(example=3)


def test_a_file_and_an_example_is_refused():
    with pytest.raises(UsageError) as exc:
        bbmm.compile(ROOT / "polybench" / "mvt.c", example="floyd")
    assert str(exc.value) == (f"example='floyd' and the file {ROOT / 'polybench' / 'mvt.c'}: "
                              f"give one of them")


def test_neither_is_refused():
    with pytest.raises(UsageError, match="needs a C file or example=NAME"):
        bbmm.compile()


def test_the_cli_still_says_example_with_dashes(capsys):
    assert main(["compile", "--example", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bbmm: error: --example 'nope': no such example (known: ")


def test_names_match_the_example_folder():
    assert example.names() == sorted(p.name[:-2] for p in os.scandir(example.folder())
                                     if p.name.endswith(".c"))
    assert "floyd" in example.names() and "heat2d" in example.names()

"""A program compiled again in one process is taken from compile_program's memo, keyed by
what it was compiled from: the file's text after the preprocessor (with the files it
includes and the -D macros), its path, the function and the options."""
from __future__ import annotations

import warnings
from collections import OrderedDict

import pytest

from bbmm.codegen import compile as compile_module
from bbmm.codegen.compile import CompileOptions, compile_program
from bbmm.diagnostic import BBMMWarning, UnsupportedProgramError

KERNEL = """#include "size.h"
void scale(int n, float A[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      A[i][j] = A[i][j] * SCALE * FACTOR;
}
"""

SERIAL = """void walk(int n, float A[n]) {
  for (int i = 1; i < n; i++)
    A[i] = A[i - 1] + A[i];
}
"""


@pytest.fixture(autouse=True)
def fresh_memo(monkeypatch):
    monkeypatch.setattr(compile_module, "_COMPILED", OrderedDict())


def test_the_same_program_is_compiled_once(tmp_path):
    c = tmp_path / "scale.c"
    c.write_text(KERNEL)
    (tmp_path / "size.h").write_text("#define N 64\n#define SCALE 2.0f\n")
    first = compile_program(c, defines={"FACTOR": "2"})
    assert compile_program(c, defines={"FACTOR": "2"}) is first
    assert compile_program(str(c), defines={"FACTOR": "2"}) is first
    # a macro the text does not use leaves the same text: the same program
    assert compile_program(c, defines={"FACTOR": "2", "UNUSED": "1"}) is first


def test_what_the_program_depends_on_compiles_it_again(tmp_path):
    c = tmp_path / "scale.c"
    c.write_text(KERNEL)
    h = tmp_path / "size.h"
    h.write_text("#define N 64\n#define SCALE 2.0f\n")
    f2 = {"FACTOR": "2"}
    first = compile_program(c, defines=f2)
    h.write_text("#define N 64\n#define SCALE 3.0f\n")       # an included file changed
    second = compile_program(c, defines=f2)
    assert second is not first and "3.0f" in second.kernel_source
    third = compile_program(c, defines={"FACTOR": "5"})                   # a -D macro
    assert third is not second and "5" in third.kernel_source
    assert compile_program(c, defines=f2, options=CompileOptions(fp64=False)) is not second
    c.write_text(KERNEL.replace("A[i][j] * SCALE", "A[i][j] + SCALE"))     # the file itself
    fourth = compile_program(c, defines=f2)
    assert fourth is not second and fourth.kernel_source != second.kernel_source


def test_warnings_are_given_again_from_the_memo(tmp_path):
    c = tmp_path / "walk.c"
    c.write_text(SERIAL)
    said = []
    for _ in range(2):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            compile_program(c)
        said.append([str(w.message) for w in got if issubclass(w.category, BBMMWarning)])
    assert said[0] and said[0] == said[1]
    assert any("no loop of walk is parallel" in m for m in said[0])


def test_a_refused_program_is_refused_every_time(tmp_path):
    c = tmp_path / "bad.c"
    c.write_text("void f(int n, float A[n]) { for (int i = 0; i < n; i++) A[i] = g(A[i]); }\n")
    for _ in range(2):
        with pytest.raises(UnsupportedProgramError):
            compile_program(c)
    assert not compile_module._COMPILED


def test_the_memo_keeps_its_size(tmp_path, monkeypatch):
    monkeypatch.setattr(compile_module, "COMPILED_SIZE", 2)
    c = tmp_path / "walk.c"
    c.write_text(SERIAL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        progs = [compile_program(c, options=CompileOptions(strip=s)) for s in (1, 2, 3)]
        assert len(compile_module._COMPILED) == 2
        assert compile_program(c, options=CompileOptions(strip=3)) is progs[2]
        assert compile_program(c, options=CompileOptions(strip=1)) is not progs[0]

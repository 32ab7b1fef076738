"""``reassociate``: floating-point sums into scalars are split over a loop's iterations
only when asked (codegen/reductions.py), and the compiled program says so."""
from __future__ import annotations

import warnings

import pytest
from pycparser import c_ast

import bbmm
from bbmm.diagnostic import BBMMWarning
from bbmm.codegen.compile import compile_program
from bbmm.codegen.csource import walk
from bbmm.codegen.reductions import _GEN, reduction_loops, split_reductions
from support.paths import KERNELS

KERNEL = KERNELS / "reassoc" / "dot_rows.c"
SUM = """
void f(int n, int m, float A[n][m], float out[2])
{
  float s = 0.5f, d = 2.0f;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++) {
      s += A[i][j];
      d -= A[i][j] * A[i][j];
    }
  out[0] = s;
  out[1] = d;
}
"""


def _func() -> c_ast.FuncDef:
    from pycparser import c_parser
    return c_parser.CParser().parse(SUM).ext[0]


def test_float_sums_stay_in_order_by_default():
    assert reduction_loops(_func()) == []


def test_reassociate_finds_both_sums():
    # the loop over the rows, and the loop over each row
    assert reduction_loops(_func(), reassociate=True) == [(0, ("d", "s")), (1, ("d", "s"))]


def test_a_difference_combines_its_partials_by_addition():
    """``d -= e`` gives partials of ``-= e`` started from 0; ``d -= partial`` would add
    the terms, so the partials are added."""
    out, _ = split_reductions(_func(), {0: (("d", "s"), False)}, reassociate=True)
    text = _GEN.visit(out)
    assert "d_part[i] -= A[i][j] * A[i][j];" in text
    assert "d += d_part[i];" in text and "s += s_part[i];" in text
    assert "d -= d_part" not in text


def quiet(**kw):
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        prog = compile_program(KERNEL, **kw)
    return prog, [str(w.message) for w in said if issubclass(w.category, BBMMWarning)]


def test_without_the_flag_the_rows_run_as_one_work_item():
    prog, said = quiet()
    assert prog.scop.reductions == ()
    assert any("no loop of dot_rows is parallel" in m for m in said)
    assert "REASSOCIATE = False" in prog.host_source
    assert "reassociate" not in prog.summary()


def test_with_the_flag_the_rows_run_in_parallel():
    prog, said = quiet(reassociate=True)
    assert not said
    (note,) = prog.scop.reductions
    assert "sum of 'drop' (reassociated, float)" in note
    assert "sum of 'total' (reassociated, double)" in note
    assert "reduction split:" in prog.summary()
    banded = [n for n in prog.plan.nests if n.band]
    assert banded and prog.scop.loop(banded[0].band[0]).iterator == "i"
    assert "REASSOCIATE = True" in prog.host_source


def test_the_flag_is_part_of_the_driver_key():
    plain, _ = quiet()
    reassoc, _ = quiet(reassociate=True)
    assert plain.host_source != reassoc.host_source


def test_api_takes_reassociate():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = bbmm.compile(KERNEL, reassociate=True)
    assert prog.compiled.reassociate and prog.compiled.scop.reductions


def test_integer_differences_stay_as_before():
    """Integer sums were split before (same bits in any order); ``-=`` into an integer is
    not taken, with or without the flag."""
    src = SUM.replace("float s = 0.5f, d = 2.0f;", "int s = 0, d = 2;").replace(
        "float A", "int A").replace("float out", "int out")
    from pycparser import c_parser
    func = c_parser.CParser().parse(src).ext[0]
    assert reduction_loops(func) == [(0, ("s",)), (1, ("s",))]
    assert reduction_loops(func, reassociate=True) == [(0, ("s",)), (1, ("s",))]
    assert any(isinstance(n, c_ast.Assignment) and n.op == "-=" for n in walk(func))


@pytest.mark.parametrize("flag", [False, True])
def test_cli_compile_takes_the_flag(flag, capsys):
    from bbmm.cli import main
    argv = ["compile", str(KERNEL)] + (["--reassociate"] if flag else [])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(argv) == 0
    out = capsys.readouterr().out
    assert ("(reassociated, double)" in out) == flag

"""``-v`` before or after the command (``bbmm -v run ...``, ``bbmm run -v ...``)."""
from __future__ import annotations

import pytest

from bbmm.cli import build_parser, main
from support.paths import POLYBENCH

FLOYD = POLYBENCH / "floyd.c"


@pytest.mark.parametrize("argv,level", [
    (["run", "f.c"], 0), (["-v", "run", "f.c"], 1), (["run", "-v", "f.c"], 1),
    (["run", "f.c", "-vv"], 2), (["-v", "run", "--verbose", "f.c"], 2),
    (["devices", "-v"], 1), (["compile", "-v", "f.c"], 1)])
def test_verbose_anywhere(argv, level):
    args = build_parser().parse_args(argv)
    assert args.verbose + args.sub_verbose == level


def test_compile_verbose_runs(capsys):
    assert main(["compile", "-v", str(FLOYD)]) == 0
    assert "kernel floyd" in capsys.readouterr().out

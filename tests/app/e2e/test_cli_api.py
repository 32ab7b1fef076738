"""``bbmm compile`` and ``bbmm run`` are a command line over the Python API: they compile
through ``bbmm.compile`` and run through ``Program.execute``, and ``bbmm run --json``
reports what ``Program.run`` reports on the same inputs."""
from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

import bbmm
import bbmm.api
from bbmm.cli import main
from bbmm.diagnostic import UsageError
from support.needs import needs_cl
from support.paths import POLYBENCH


pytestmark = pytest.mark.e2e

TIMING = {"wall_s", "loop_s", "time_s", "overhead_percent", "check", "mismatches"}
"""Fields of the report that differ between two runs of the same inputs (or that only
``--check`` sets)."""


def _spy_compile(monkeypatch) -> list:
    calls: list = []
    real = bbmm.api.compile

    def spy(*args, **kw):
        prog = real(*args, **kw)
        calls.append(prog)
        return prog
    monkeypatch.setattr(bbmm.api, "compile", spy)
    return calls


def test_compile_goes_through_the_api(monkeypatch, capsys):
    calls = _spy_compile(monkeypatch)
    assert main(["compile", str(POLYBENCH / "floyd.c"), "-D", "UNUSED=3"]) == 0
    assert len(calls) == 1 and isinstance(calls[0], bbmm.Program)
    assert calls[0].defines == {"UNUSED": "3"}
    assert "serial loops (host): k" in capsys.readouterr().out


def test_the_api_refuses_a_folder_as_the_command_line_does(tmp_path, capsys):
    with pytest.raises(UsageError, match="is a directory, not a C file"):
        bbmm.compile(tmp_path)
    assert main(["compile", str(tmp_path)]) == 2
    assert f"{tmp_path}: is a directory, not a C file" in capsys.readouterr().err


@needs_cl
def test_run_json_is_program_run_on_the_same_inputs(tmp_path, monkeypatch):
    """The command line's run is one call of ``Program.execute`` on the inputs it made;
    ``Program.run`` on copies of those inputs gives the same result and the same report,
    field for field (timings aside)."""
    compiled = _spy_compile(monkeypatch)
    runs: list = []
    real = bbmm.api.Program.execute

    def spy(self, params, scalars, inputs, **kw):
        given = {k: v.copy() for k, v in inputs.items()}
        res = real(self, params, scalars, inputs, **kw)
        runs.append((self, dict(params), given, {k: v.copy() for k, v in res.arrays.items()}))
        return res
    monkeypatch.setattr(bbmm.api.Program, "execute", spy)

    out = tmp_path / "run.json"
    with contextlib.redirect_stdout(io.StringIO()) as text:
        rc = main(["run", str(POLYBENCH / "floyd.c"), "--param", "n=40", "--devices", "2",
                   "--check", "--no-progress", "--json", str(out)])
    assert rc == 0 and "check pass" in text.getvalue()
    cli = json.loads(out.read_text())
    assert len(compiled) == 1 and len(runs) == 1
    prog, params, inputs, result = runs[0]
    assert prog is compiled[0] and params == {"n": 40}
    assert not np.array_equal(inputs["path"], result["path"])   # the run changed path

    path = inputs["path"].copy()
    stats = prog(n=40, path=path, devices=2)
    assert len(runs) == 2                                        # Program.run: the same call
    np.testing.assert_array_equal(path, result["path"])
    api = stats.as_dict()
    assert cli["check"] == "pass" and api["check"] == "skipped"
    assert set(cli) == set(api)
    assert {k: v for k, v in cli.items() if k not in TIMING} == \
        {k: v for k, v in api.items() if k not in TIMING}
    assert cli["per_device"][0]["h2d_bytes"] > 0

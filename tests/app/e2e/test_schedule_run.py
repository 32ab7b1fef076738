"""End-to-end: kernels whose loops as written have no parallel loop (an in-place
Gauss-Seidel sweep, a left-looking Cholesky factorisation, a forward substitution) run in
parallel on isl's schedule (``--schedule auto`` takes it), and ``bbmm run --check``
compares them with the sequential C program on 1 to 3 PoCL devices."""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from bbmm.cli import main
from support.needs import needs_cl  # skipped only without an OpenCL platform
from support import paths

SCHED = paths.KERNELS / "sched"

pytestmark = pytest.mark.e2e

KERNELS = [
    ("gauss_seidel", ["steps=4", "m=24"]),
    ("cholesky_like", ["m=20"]),
    ("trisolv_like", ["m=33"]),
]
WARNING = "no loop of"


def run(name: str, params: list[str], *extra: str, json_path: Path) -> tuple[int, str]:
    argv = ["run", str(SCHED / f"{name}.c"), "--check", "--no-progress",
            "--json", str(json_path)]
    for p in params:
        argv += ["--param", p]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(argv + list(extra))
    return rc, err.getvalue()


@needs_cl
@pytest.mark.parametrize("name,params", KERNELS, ids=[k[0] for k in KERNELS])
@pytest.mark.parametrize("ndev", [1, 2, 3])
def test_isl_schedule_runs_parallel_and_checks(name, params, ndev, tmp_path):
    out = tmp_path / "r.json"
    rc, err = run(name, params, "--devices", str(ndev), json_path=out)
    assert rc == 0, err
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass" and doc["devices"] == ndev
    assert WARNING not in err          # some loop is parallel
    assert doc["tiles"] > 1
    if ndev > 1:                       # the tiles are spread over the devices
        assert sum(d["launches"] > 0 for d in doc["per_device"]) >= 2


@needs_cl
def test_as_written_keeps_one_work_item(tmp_path):
    """``--schedule as-written``: the old behaviour, the warning and one tile."""
    out = tmp_path / "r.json"
    rc, err = run("gauss_seidel", ["steps=3", "m=12"], "--devices", "2",
                  "--schedule", "as-written", json_path=out)
    assert rc == 0, err
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass" and doc["tiles"] == 1
    assert WARNING in err


@needs_cl
@pytest.mark.parametrize("name,params", KERNELS[:1], ids=[KERNELS[0][0]])
def test_forced_isl_schedule(name, params, tmp_path):
    out = tmp_path / "r.json"
    rc, err = run(name, params, "--devices", "2", "--schedule", "isl", json_path=out)
    assert rc == 0, err
    assert json.loads(out.read_text())["check"] == "pass"


def test_compile_shows_the_schedule(capsys):
    assert main(["compile", str(SCHED / "gauss_seidel.c")]) == 0
    text = capsys.readouterr().out
    assert "schedule: isl (more parallel than the loops as written)" in text
    assert "S0[s, r, c] -> [" in text
    assert "(parallel)" in text and "(serial)" in text
    assert main(["compile", str(SCHED / "gauss_seidel.c"), "--schedule", "as-written"]) == 0
    text = capsys.readouterr().out
    assert "schedule: as-written" in text and "(parallel)" not in text


@needs_cl
def test_wavefront_gives_every_device_rows(tmp_path):
    """seidel-2d with fewer time steps than devices: tiles of the band's time-step loop
    left the third device without work; tiles of rows give each device some."""
    out = tmp_path / "r.json"
    argv = ["run", str(SCHED.parent / "pb42" / "seidel2d.c"), "--check", "--no-progress",
            "--param", "tsteps=2", "--param", "n=13", "--devices", "3", "--json", str(out)]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(argv) == 0, err.getvalue()
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass"
    assert all(d["launches"] > 0 for d in doc["per_device"]), doc["per_device"]

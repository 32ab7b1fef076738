"""The run report (``bbmm run --json``): its format and version, ``--json -`` on standard
output, and real reports validated against ``bbmm/schemas/run.schema.json``."""
from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

import bbmm
from bbmm.cli import main
from bbmm.run import report_schema
from support.needs import needs_cl
from support.paths import POLYBENCH, ROOT

jsonschema = pytest.importorskip("jsonschema")


pytestmark = pytest.mark.e2e


def validate(doc: dict) -> None:
    jsonschema.Draft202012Validator(report_schema()).validate(doc)


def test_schema_is_valid_and_shipped():
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["format"]["const"] == "bbmm-run"
    # every field documented
    def walk(s):
        for name, p in s.get("properties", {}).items():
            assert p.get("description"), name
            walk(p)
            if "items" in p:
                walk(p["items"])
    walk(schema)
    text = (ROOT / "pyproject.toml").read_text()
    assert 'bbmm = ["schemas/*.json"]' in text


RUNS = [
    (POLYBENCH / "floyd.c", ["n=24"], ["--devices", "2", "--check"]),
    (POLYBENCH / "mvt.c", ["m=24", "n=16"], ["--devices", "2", "--device-mem", "1KiB",
                                             "--tile", "4", "--check"]),   # boxes out
    (POLYBENCH / "heat2d.c", ["tsteps=6", "n=20"], ["--devices", "2"]),     # replayed steps
    (POLYBENCH / "matmul.c", ["ni=16", "nj=12", "nk=8", "alpha=1.5", "beta=0.5"],
     ["--devices", "1", "--mode", "convex", "--no-reuse", "--coherence", "block"]),
]


@needs_cl
@pytest.mark.parametrize("path,params,extra", RUNS, ids=[r[0].stem for r in RUNS])
def test_reports_validate(tmp_path, path, params, extra):
    out = tmp_path / "r.json"
    argv = ["run", str(path), "--no-progress", "--json", str(out), *extra]
    for p in params:
        argv += ["--param", p]
    assert main(argv) == 0
    doc = json.loads(out.read_text())
    assert list(doc)[:2] == ["format", "version"]
    assert doc["format"] == "bbmm-run" and doc["version"] == bbmm.__version__
    validate(doc)
    # the loop is the run without its final write-out
    assert 0 < doc["loop_s"] <= doc["wall_s"]


def test_schema_refuses_what_it_does_not_document():
    doc = {"format": "bbmm-run"}
    with pytest.raises(jsonschema.ValidationError):
        validate(doc)


@needs_cl
def test_schema_refuses_unknown_fields(tmp_path):
    out = tmp_path / "r.json"
    assert main(["run", str(POLYBENCH / "floyd.c"), "--param", "n=8", "--devices", "1",
                 "--no-progress", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    validate(doc)
    for bad in ({**doc, "surprise": 1}, {**doc, "format": "bbmm-profile-1"},
                {**doc, "per_device": [{**doc["per_device"][0], "extra_bytes": 3}]}):
        with pytest.raises(jsonschema.ValidationError):
            validate(bad)


@needs_cl
def test_api_stats_validate():
    prog = bbmm.compile(POLYBENCH / "floyd.c")
    a = np.zeros((16, 16), np.float32)
    validate(prog(n=16, path=a, devices=2).as_dict())


@needs_cl
def test_json_to_stdout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["run", str(POLYBENCH / "floyd.c"), "--param", "n=16", "--devices", "2",
                   "--check", "--no-progress", "--json", "-"])
    assert rc == 0
    doc = json.loads(out.getvalue())       # nothing but the report on stdout
    validate(doc)
    assert doc["check"] == "pass"
    assert "floyd: 2 device(s)" in err.getvalue()   # the text report went to stderr
    assert not (tmp_path / "-").exists()


def test_devices_json_has_format_and_version():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["devices", "--json"])
    doc = json.loads(out.getvalue())
    assert doc["format"] == "bbmm-devices" and doc["version"] == bbmm.__version__
    assert rc in (0, 1, 2) and "devices" in doc and "logical" in doc


@needs_cl
def test_report_over_processes_has_format_and_version(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["run", str(POLYBENCH / "floyd.c"), "--param", "n=16", "--devices", "2",
                   "--procs", "2", "--check", "--no-progress", "--json", "-"])
    assert rc == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    assert doc["format"] == "bbmm-run" and doc["version"] == bbmm.__version__
    assert doc["ranks"] == 2 and doc["check"] == "pass"
    assert doc["loop_s"] == max(r["runtime"]["loop_s"] for r in doc["per_rank"]) > 0
    assert not (tmp_path / "-").exists()

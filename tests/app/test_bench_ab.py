"""``scripts/bench_ab.py``: one bbmm command from two trees in alternating rounds, each
tree's runs importing that tree."""
from __future__ import annotations

import json
import os
import shutil
import statistics
import time

import pytest

import bench_ab  # scripts/ is on the import path (pyproject.toml)
from support.needs import needs_cl
from support.paths import POLYBENCH, ROOT


def copy_tree(dst):
    """A checkout's root as bench_ab.py wants one: bbmm/ and codegen/ side by side."""
    for part in ("bbmm", "codegen"):
        shutil.copytree(ROOT / part, dst / part,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def test_where_names_the_files_of_the_tree_run(tmp_path):
    """From a copy, bbmm and bbmm.codegen import the copy's files, whatever this
    process's installation is."""
    tree = copy_tree(tmp_path / "base")
    files = bench_ab.where(str(tree))
    assert len(files) == 2 and all(bench_ab._inside(f, str(tree)) for f in files)
    assert files[1].endswith("codegen/__init__.py")


def test_a_folder_without_bbmm_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="holds no bbmm/"):
        bench_ab.main(["--base", str(tmp_path), "--", "run", "x.c"])


def test_a_tree_without_its_compiler_is_refused(tmp_path):
    """bbmm/ alone: bbmm.codegen cannot import from the tree, which is said before any
    run."""
    shutil.copytree(ROOT / "bbmm", tmp_path / "bbmm",
                    ignore=shutil.ignore_patterns("__pycache__"))
    with pytest.raises(SystemExit, match="does not import|not that tree"):
        bench_ab.main(["--base", str(tmp_path), "--", "run", "x.c"])


def test_arguments_are_required_after_the_separator(tmp_path):
    with pytest.raises(SystemExit, match="after --"):
        bench_ab.main(["--base", str(tmp_path)])


@needs_cl
def test_rounds_alternate_and_the_medians_are_of_each_tree(tmp_path, capsys):
    """Two rounds of Floyd n=16 from a copy of this tree and from this tree: base, new,
    then new, base; each summary is the median of its tree's runs, and the ratio is
    theirs."""
    base = copy_tree(tmp_path / "base")
    out = tmp_path / "ab.json"
    assert bench_ab.main(["--base", str(base), "--rounds", "2", "--warmup", "0",
                          "--json", str(out), "--", "run", str(POLYBENCH / "floyd.c"),
                          "--param", "n=16", "--devices", "2", "--check"]) == 0
    doc = json.loads(out.read_text())
    assert [r["tree"] for r in doc["runs"]] == ["base", "new", "new", "base"]
    assert [r["round"] for r in doc["runs"]] == [1, 1, 2, 2]
    assert all(r["check"] == "pass" and r["serial_iterations"] == 16 for r in doc["runs"])
    for tree in ("base", "new"):
        vals = [r["ms_per_iter"] for r in doc["runs"] if r["tree"] == tree]
        assert doc[tree]["ms_per_iter"]["median"] == pytest.approx(statistics.median(vals))
        assert all(v == pytest.approx(1e3 * r["wall_s"] / 16) for v, r in zip(
            vals, (r for r in doc["runs"] if r["tree"] == tree)))
    assert doc["ratio_whole"] == pytest.approx(doc["new"]["ms_per_iter"]["median"]
                                               / doc["base"]["ms_per_iter"]["median"])
    assert os.path.abspath(doc["trees"]["base"]) == str(base)
    assert "new / base" in capsys.readouterr().out


def test_one_tree_under_two_settings(tmp_path):
    """``--base`` the same tree and ``--base-tune``: the base side's runs take the setting
    (replay off, as their reports say), the new side's do not."""
    out = tmp_path / "ab.json"
    assert bench_ab.main(["--base", str(ROOT), "--base-tune", "replay=0", "--rounds", "1",
                          "--warmup", "0", "--json", str(out), "--", "run",
                          str(POLYBENCH / "floyd.c"), "--param", "n=24", "--devices", "2",
                          "--check"]) == 0
    doc = json.loads(out.read_text())
    assert doc["tune"] == {"base": ["replay=0"], "new": []}
    assert all(r["check"] == "pass" for r in doc["runs"])
    assert {r["tree"]: r["replay"] for r in doc["runs"]} == {"base": False, "new": True}


def test_a_time_limit_ends_the_rounds_with_a_summary(tmp_path, monkeypatch, capsys):
    """``--time-limit``: no round starts that would end past the limit (a round taken to
    last as long as the longest before it), and the JSON holds the rounds run, written
    after each one."""
    out = tmp_path / "ab.json"
    calls = []

    def fake(tree, args, cache):
        calls.append(tree)
        if len(calls) == 3:  # the second round's first run: the first round is on disk
            assert json.loads(out.read_text())["rounds_run"] == 1
        time.sleep(0.2)
        return {"wall_s": 0.2, "loop_s": 0.1, "serial_iterations": 11}

    monkeypatch.setattr(bench_ab, "run_once", fake)
    assert bench_ab.main(["--base", str(ROOT), "--rounds", "10", "--warmup", "0",
                          "--time-limit", "1.0", "--json", str(out), "--", "run",
                          str(POLYBENCH / "floyd.c"), "--param", "n=11"]) == 0
    doc = json.loads(out.read_text())
    assert doc["rounds_run"] == 2 and doc["rounds"] == 10 and len(calls) == 4
    assert doc["ratio_loop"] == pytest.approx(1.0)
    printed = capsys.readouterr().out
    assert "stopped after 2 of 10 rounds" in printed and "new / base" in printed

"""The repository speaks of bbmm as it is: no lab diary in tracked files, no path outside
the checkout, and results/ holding data and READMEs only (git keeps the history)."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from support.paths import ROOT

# Built from pieces so that this file does not match its own patterns.
_S, _C, _F, _K = "sess" + "ion", "ca" + "ll", "find" + "ing", "chan" + "ge"
DIARY = re.compile(
    rf"{_S}s? [0-9]|\b{_C} [A-I]\b|\b{_K} [0-9]+|\b{_F} [0-9]+", re.IGNORECASE)
OUTSIDE = re.compile(re.escape(".." + "/" + "shared"))
SCRIPTS = (".py", ".sh", ".cl", ".c")


def _tracked() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout (or no git): the tracked files are unknown")
    files = [f for f in out.decode().split("\0") if f]
    if not files:
        pytest.skip("not a git checkout: no tracked files")
    return files


def _text(path: str) -> str | None:
    try:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            return f.read()
    except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
        return None     # binary, or deleted in the working tree


def _hits(pattern: re.Pattern[str], paths: list[str]) -> list[str]:
    hits = []
    for path in paths:
        text = _text(path)
        if text is None:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if pattern.search(line):
                hits.append(f"{path}:{n}: {line.strip()[:100]}")
    return hits


def test_no_run_history_outside_results():
    """Comments, docs and tests say what and why in the present; a default's reason is
    a figure with the command that reproduces it, never a numbered run or change."""
    files = [f for f in _tracked() if not f.startswith("results/")]
    hits = _hits(DIARY, files)
    assert not hits, "run history in tracked files:\n" + "\n".join(hits[:40])


def test_no_path_outside_the_repository():
    files = [f for f in _tracked() if not f.startswith("results/")]
    hits = _hits(OUTSIDE, files)
    assert not hits, "paths outside the repository:\n" + "\n".join(hits)


def test_results_hold_data_only():
    """results/ holds what the project's scripts wrote and READMEs, no probe scripts,
    shell scripts or generated kernels."""
    bad = [f for f in _tracked() if f.startswith("results/") and f.endswith(SCRIPTS)]
    assert not bad, "scripts or code under results/: " + ", ".join(bad)


def test_results_folders_are_machine_and_date_with_a_readme():
    files = [f for f in _tracked() if f.startswith("results/")]
    folders = {f.split("/")[1] for f in files if f.count("/") >= 2}
    for folder in folders:
        assert re.fullmatch(r"[a-z0-9-]+-\d{4}-\d{2}-\d{2}", folder), folder
        assert f"results/{folder}/README.md" in files, f"results/{folder} has no README.md"


def test_test_modules_have_one_basename_each():
    """The test folders are not packages: pytest imports each module by its basename, so
    two modules of one name in different folders stop the whole run at collection."""
    seen: dict[str, str] = {}
    clashes = []
    for path in _tracked():
        name = os.path.basename(path)
        if path.startswith("tests/") and name.startswith("test_") and name.endswith(".py"):
            if name in seen:
                clashes.append(f"{seen[name]} and {path}")
            seen[name] = path
    assert not clashes, clashes


LAYERS = ("tests/codegen/", "tests/runtime/", "tests/app/")
"""Where test modules live: one folder per layer of bbmm (docs/design.md)."""
PATH_EDIT = re.compile(r"\bsys\.path\s*(\.(insert|append|extend)\b|\[|\+=)")


def _layout_faults(paths: list[str], text) -> list[str]:
    """What breaks the tests' layout among ``paths`` (``text(path)``: a file's text): a
    test module outside the layer folders, a module at the top of tests/ other than
    conftest.py (helpers are ``tests/support``), a test or helper that edits ``sys.path``
    (pyproject.toml's ``pythonpath`` puts tests/ and scripts/ on it)."""
    faults = []
    for path in paths:
        if not path.startswith("tests/") or path.startswith("tests/kernels/") or \
                not path.endswith(".py"):
            continue
        name = os.path.basename(path)
        if name.startswith("test_") and not path.startswith(LAYERS):
            faults.append(f"{path}: a test module outside {', '.join(LAYERS)}")
        if path.count("/") == 1 and name != "conftest.py":
            faults.append(f"{path}: a helper belongs in tests/support/")
        body = text(path) or ""
        if PATH_EDIT.search(body):
            faults.append(f"{path}: edits sys.path")
    return faults


def test_tests_mirror_the_layers_and_import_helpers_from_support():
    """Each test module sits in the folder of the layer it tests, and imports its helpers
    as ``support.NAME`` with no edit of ``sys.path``."""
    faults = _layout_faults(_tracked(), _text)
    assert not faults, "\n".join(faults)


def test_the_layout_check_sees_each_fault():
    edit = "import sys\nsys" + ".path.insert(0, 'x')\n"
    files = {"tests/unit/test_a.py": "", "tests/helper.py": "", "tests/conftest.py": "",
             "tests/app/test_b.py": edit, "tests/support/c.py": "sys" + ".path[:0] = ['x']\n",
             "tests/kernels/test_d.py": edit, "scripts/e.py": edit}
    faults = _layout_faults(sorted(files), files.get)
    assert [f.split(":")[0] for f in faults] == [
        "tests/app/test_b.py", "tests/helper.py", "tests/support/c.py", "tests/unit/test_a.py"]

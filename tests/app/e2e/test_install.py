"""A non-editable install in a fresh venv runs the README's examples from another folder.

The wheel of this checkout (built with ``pip wheel`` from a copy of the working tree) is
installed into a new virtual environment with its dependencies from the package index, as
a user installs it, and the README's commands that need no GPU run from a temporary
folder outside the checkout: ``bbmm --help``, ``bbmm examples``, ``bbmm compile --example
heat2d``, ``bbmm run --example floyd ... --check`` on the CPU's OpenCL, ``bbmm timeline``,
and the README's "From Python" block as it is. Every step checks that the installed copy
runs, never the checkout's files.

Where no index is reachable, the wheel is built without build isolation and installed
without its dependencies, which then come from the test's own environment (a path file
in the new venv); the first test prints which was used (``pytest -rP``). Where neither
works, the tests skip, except in CI (``CI=true``), where they fail. About 30 s.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from support.needs import needs_cl
from support.paths import ROOT


pytestmark = [pytest.mark.e2e]


@dataclass
class Install:
    """The fresh venv with bbmm installed from the wheel, and a folder to run in."""

    venv: Path
    site: Path
    """The venv's site-packages (purelib)."""
    cwd: Path
    """A folder outside the checkout, where the commands run."""
    env: dict[str, str]
    how: str
    """How the wheel was built and installed (with dependencies from the index, or not)."""

    def run(self, *argv: str | os.PathLike, timeout: int = 300) -> subprocess.CompletedProcess:
        r = subprocess.run([os.fspath(a) for a in argv], cwd=self.cwd, env=self.env,
                           capture_output=True, text=True, timeout=timeout)
        return r

    def bbmm(self, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
        r = self.run(self.venv / "bin" / "bbmm", *args, timeout=timeout)
        assert r.returncode == 0, f"bbmm {' '.join(args)}: {r.stderr}"
        return r


def _give_up(why: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(why)
    pytest.skip(why)


def _tail(r: subprocess.CompletedProcess) -> str:
    """pip's error lines (the build's own ``error: ...`` first), else its last lines."""
    lines = [line.strip() for line in (r.stderr + r.stdout).splitlines() if line.strip()]
    errors = [line for line in lines if re.match(r"error\b|ERROR\b", line)]
    return " | ".join(errors[:3] or lines[-3:])


def _pip(python: Path | str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([os.fspath(python), "-m", "pip", *args], capture_output=True,
                          text=True, timeout=900)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Install:
    base = tmp_path_factory.mktemp("install")
    # built from a copy: setuptools' build/ of the checkout may hold files since deleted,
    # and the checkout is left as it is
    src = base / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
        ".hypothesis", "results"))
    dist = base / "dist"
    how = []
    r = _pip(sys.executable, "wheel", "-q", "--no-deps", "-w", str(dist), str(src))
    if r.returncode != 0:       # no index for the build's setuptools: the one here
        r = _pip(sys.executable, "wheel", "-q", "--no-deps", "--no-build-isolation",
                 "-w", str(dist), str(src))
        how.append("wheel built without build isolation")
    if r.returncode != 0:
        _give_up(f"no wheel of the checkout built here: {_tail(r)}")
    (wheel,) = dist.glob("bbmm-*.whl")

    venv = base / "venv"
    r = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True,
                       text=True, timeout=300)
    if r.returncode != 0:
        _give_up(f"python -m venv failed: {_tail(r)}")
    python = venv / "bin" / "python"
    site = Path(subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip())
    r = _pip(python, "install", "-q", str(wheel))
    if r.returncode == 0:
        how.append("installed with its dependencies from the index")
    else:
        # no index: the wheel alone, its dependencies from this interpreter's environment
        first = _tail(r)
        r = _pip(python, "install", "-q", "--no-deps", str(wheel))
        if r.returncode != 0:
            _give_up(f"the wheel does not install: {first}; without dependencies: {_tail(r)}")
        import site as site_mod
        dirs = [d for d in site_mod.getsitepackages() if os.path.isdir(d)]
        (site / "_bbmm_test_dependencies.pth").write_text("\n".join(dirs) + "\n")
        how.append(f"installed without dependencies (the index failed: {first}); they come "
                   f"from {', '.join(dirs)}")

    cwd = base / "elsewhere"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
               VIRTUAL_ENV=str(venv), PYTHONNOUSERSITE="1",
               BBMM_CACHE=str(base / "cache"))     # a user's first run: nothing cached
    return Install(venv, site, cwd, env, "; ".join(how))


def _inside(path: str | Path, folder: Path) -> bool:
    return Path(path).resolve().is_relative_to(folder.resolve())


def test_the_install_is_the_wheel_not_the_checkout(installed):
    print(f"bbmm {installed.how} into {installed.venv}")     # shown with pytest -rP
    assert not _inside(installed.cwd, ROOT)
    r = installed.run(installed.venv / "bin" / "python", "-c", (
        "import importlib.util, json, bbmm, bbmm.codegen.compile, bbmm.example as ex\n"
        "from importlib.metadata import distribution\n"
        "d = distribution('bbmm')\n"
        "print(json.dumps({'bbmm': bbmm.__file__, 'codegen': bbmm.codegen.__file__, "
        "'examples': str(ex.folder()), 'version': bbmm.__version__, "
        "'top_level_codegen': importlib.util.find_spec('codegen') is not None, "
        "'direct_url': json.loads(d.read_text('direct_url.json') or 'null')}))"))
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    for key in ("bbmm", "codegen", "examples"):
        assert _inside(got[key], installed.site), (key, got[key], installed.how)
        assert not _inside(got[key], ROOT), (key, got[key])
    assert Path(got["examples"]) == installed.site / "bbmm" / "examples"
    # the compiler is bbmm.codegen: no top-level "codegen" to clash with PyPI's of that name
    assert Path(got["codegen"]) == installed.site / "bbmm" / "codegen" / "__init__.py"
    assert not got["top_level_codegen"]
    assert not (installed.site / "codegen").exists()
    import bbmm
    assert got["version"] == bbmm.__version__
    # installed from the wheel file, not editable (pip records how in direct_url.json)
    url = got["direct_url"]
    assert url is not None and url["url"].endswith(".whl") and "archive_info" in url
    assert not url.get("dir_info", {}).get("editable", False)


def test_help_and_version(installed):
    r = installed.bbmm("--help")
    assert r.stdout.startswith("usage: bbmm ")
    for command in ("run", "compile", "devices", "examples", "timeline", "cache"):
        assert re.search(rf"^\s+{command}\s", r.stdout, re.M), command
    import bbmm
    r = installed.run(installed.venv / "bin" / "python", "-m", "bbmm", "--version")
    assert r.returncode == 0 and bbmm.__version__ in r.stdout + r.stderr


def test_examples_listed(installed):
    out = installed.bbmm("examples").stdout.splitlines()
    shipped = sorted(p.stem for p in (ROOT / "polybench").glob("*.c"))
    assert [line.split()[0] for line in out] == shipped
    assert all(len(line.split(None, 1)) == 2 for line in out)      # each with its line
    assert "Floyd-Warshall" in next(line for line in out if line.startswith("floyd "))
    folder = installed.bbmm("examples", "--folder").stdout.strip()
    assert Path(folder) == installed.site / "bbmm" / "examples"


def test_compile_example(installed):
    out = installed.bbmm("compile", "--example", "heat2d").stdout
    shipped = installed.site / "bbmm" / "examples" / "heat2d.c"
    assert out.startswith(f"{shipped}: kernel heat2d(tsteps, n, A, B)\n")
    assert "  arrays: float A[n][n], float B[n][n]" in out
    assert "serial loops (host): t" in out and "flow-out B:" in out


@needs_cl
def test_run_example_checked(installed):
    assert "bbmm would use" in installed.bbmm("devices").stdout
    r = installed.bbmm("run", "--example", "floyd", "--param", "n=64", "--devices", "2",
                       "--check", "--json", "report.json")
    first = r.stdout.splitlines()[0]
    assert re.match(r"floyd: 2 device\(s\), tile \d+, \d+ tiles, .*; check pass$", first), \
        r.stdout
    doc = json.loads((installed.cwd / "report.json").read_text())
    assert doc["format"] == "bbmm-run" and doc["devices"] == 2
    assert doc["params"] == {"n": 64} and len(doc["per_device"]) == 2
    assert doc["check"] == "pass" and doc["kernel"] == "floyd"
    # the README's trace and its summary, with the installed bbmm timeline
    installed.bbmm("run", "--example", "floyd", "--param", "n=32", "--devices", "2",
                   "--profile", "floyd.json.gz")
    trace = installed.cwd / "floyd.json.gz"
    assert trace.stat().st_size > 0
    out = installed.bbmm("timeline", "floyd.json.gz").stdout
    assert "cl0" in out and "cl1" in out


def _floyd(a: np.ndarray) -> np.ndarray:
    p = a.copy()
    for k in range(p.shape[0]):
        p = np.minimum(p, p[:, k:k + 1] + p[k:k + 1, :])
    return p


@needs_cl
def test_readme_python_block(installed):
    """The README's "From Python" block as it is, run by the venv's python elsewhere."""
    text = (ROOT / "README.md").read_text()
    code = re.search(r"## From Python.*?```python\n(.*?)```", text, re.S).group(1)
    script = installed.cwd / "readme_api.py"
    script.write_text(code + "\nnp.save('result.npy', path)\n"
                      "print('RAN', bbmm.__file__, type(stats).__name__)\n")
    r = installed.run(installed.venv / "bin" / "python", script, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "float path[n][n]  (float32, read and written)" in r.stdout
    ran = r.stdout.splitlines()[-1].split()
    assert ran[0] == "RAN" and ran[2] == "RunStats"
    assert _inside(ran[1], installed.site) and not _inside(ran[1], ROOT)
    result = np.load(installed.cwd / "result.npy")
    n = result.shape[0]
    init = np.random.default_rng(0).integers(1, 18, (n, n)).astype(np.float32)
    np.fill_diagonal(init, 0)
    assert result.dtype == np.float32 and n >= 64
    assert np.array_equal(result, _floyd(init))

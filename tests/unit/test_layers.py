"""The walls between bbmm's parts, read from the source with :mod:`ast`: the runtime never
touches pyopencl (it asks its devices, :meth:`bbmm.devices.base.Device.done`)."""
from __future__ import annotations

import ast
from pathlib import Path

BBMM = Path(__file__).resolve().parents[2] / "bbmm"

RUNTIME = ("box", "pool", "buffers", "coherence", "acquire", "replay", "runtime", "regions",
           "stats", "devices/base")
"""The device-neutral runtime: buffer management, coherence, the runtime itself, and the
device interface it talks to."""


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _imported(tree: ast.AST) -> set[str]:
    """The modules ``tree`` imports anywhere (inside functions too), as written."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
    return out


def test_the_runtime_never_touches_pyopencl():
    """No runtime module imports pyopencl or reads an OpenCL event's status itself."""
    for name in RUNTIME:
        path = BBMM / f"{name}.py"
        tree = _tree(path)
        assert not {m for m in _imported(tree) if m.split(".")[0] == "pyopencl"}, path
        polls = [n.lineno for n in ast.walk(tree)
                 if isinstance(n, ast.Attribute) and n.attr == "command_execution_status"]
        assert not polls, f"{path} reads OpenCL event status at lines {polls}"


def test_the_checks_see_an_import_and_a_poll():
    """The helpers above find what they look for (a check that cannot fail proves nothing)."""
    tree = ast.parse("def f(e):\n    import pyopencl as cl\n    return e.command_execution_status\n")
    assert "pyopencl" in _imported(tree)
    assert any(isinstance(n, ast.Attribute) and n.attr == "command_execution_status"
               for n in ast.walk(tree))


def _environment_reads(tree: ast.AST) -> list[int]:
    """Lines of ``tree`` that touch the process environment: ``os.environ``, ``getenv``,
    ``putenv``, ``unsetenv`` (as attributes or names imported from ``os``)."""
    names = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and n.attr in names and \
                isinstance(n.value, ast.Name) and n.value.id == "os":
            out.append(n.lineno)
        elif isinstance(n, ast.ImportFrom) and n.module == "os" and \
                any(a.name in names for a in n.names):
            out.append(n.lineno)
    return out


def test_only_settings_reads_the_environment():
    """``bbmm/settings.py`` is the one module of bbmm that reads (or sets) the environment;
    every other asks it."""
    readers = {}
    for path in sorted(BBMM.rglob("*.py")):
        lines = _environment_reads(_tree(path))
        if lines:
            readers[str(path.relative_to(BBMM))] = lines
    assert set(readers) == {"settings.py"}, readers


def test_the_environment_check_sees_each_kind_of_read():
    for src in ("import os\nx = os.environ.get('A')\n", "import os\nos.getenv('A')\n",
                "from os import environ\n", "import os\nos.environ['A'] = '1'\n"):
        assert _environment_reads(ast.parse(src)), src
    assert not _environment_reads(ast.parse("from bbmm import settings\nsettings.text('A')\n"
                                            "env = settings.environ()\n"))


def test_no_setting_is_read_when_the_modules_load(monkeypatch):
    """With a bad value in every setting, bbmm's runtime, devices, kernel support and
    command line still import (in a fresh interpreter); the value is refused only where it
    is used."""
    import subprocess
    import sys
    bad = {"BBMM_DEBUG": "2", "BBMM_REPLAY": "maybe", "BBMM_COARSEN1": "x",
           "BBMM_PREBUILD": "later", "BBMM_WHOLE": "big", "BBMM_PIPELINE": "-2",
           "BBMM_SIDE": "2", "BBMM_TOUCH": "never", "BBMM_EDGE": "-1", "BBMM_LOCAL": "0x0",
           "BBMM_STAGE": "huge", "BBMM_BLOCK": "wide", "BBMM_ALIGN": "0", "BBMM_FUSE": "much",
           "BBMM_SYNC": "2", "BBMM_PLACE": "2", "BBMM_DEFER": "2", "BBMM_CACHE_SIZE": "big"}
    for name, value in bad.items():
        monkeypatch.setenv(name, value)
    code = ("import bbmm.runtime, bbmm.hostlib, bbmm.devices.opencl, bbmm.run, bbmm.cli\n"
            "from bbmm.diagnostic import SettingError\n"
            "try:\n    bbmm.hostlib.options()\nexcept SettingError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=BBMM.parent, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("BBMM_"), r.stdout

"""The walls between bbmm's parts, read from the source with :mod:`ast`: the runtime never
touches pyopencl (it asks its devices, :meth:`bbmm.devices.base.Device.done`)."""
from __future__ import annotations

import ast
from pathlib import Path

from support.paths import ROOT

BBMM = ROOT / "bbmm"

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
           "BBMM_SIDE": "2", "BBMM_EDGE": "-1", "BBMM_LOCAL": "0x0", "BBMM_STRIP": "0",
           "BBMM_STAGE": "huge", "BBMM_BLOCK": "wide", "BBMM_ALIGN": "0", "BBMM_FUSE": "much",
           "BBMM_SYNC": "2", "BBMM_PLACE": "2", "BBMM_DEFER": "2", "BBMM_CACHE_SIZE": "big"}
    for name, value in bad.items():
        monkeypatch.setenv(name, value)
    code = ("import bbmm.runtime, bbmm.hostlib, bbmm.devices.opencl, bbmm.run, bbmm.cli\n"
            "import bbmm.api, bbmm.config, bbmm.distributed, bbmm.codegen.compile\n"
            "from bbmm.diagnostic import SettingError\n"
            "try:\n    bbmm.config.RuntimeConfig.from_env()\nexcept SettingError as e:\n"
            "    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=BBMM.parent, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("BBMM_"), r.stdout


# {{{ the import graph of bbmm/

def _modules() -> dict[str, Path]:
    out = {}
    for path in BBMM.rglob("*.py"):
        parts = path.relative_to(BBMM.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _targets(module: str, node: ast.ImportFrom | ast.Import, is_package: bool,
             known: set[str]) -> set[str]:
    """The modules of ``known`` an import statement of ``module`` loads by name (a
    ``from package import submodule`` loads the submodule, not the package's names)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in known}
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    subs = {f"{source}.{a.name}" for a in node.names if f"{source}.{a.name}" in known}
    out = set(subs)
    if source in known and len(subs) < len(node.names):
        out.add(source)
    return out


def _imports(tree: ast.Module, inside_functions: bool) -> list[ast.Import | ast.ImportFrom]:
    """The import statements of a module: those run when it loads (``if TYPE_CHECKING``
    blocks included: a type-only import is still a dependence), and with
    ``inside_functions`` those inside its functions too."""
    out = []
    stack: list[ast.AST] = list(tree.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            out.append(n)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not inside_functions:
            continue
        stack.extend(ast.iter_child_nodes(n))
    return out


def import_graph(inside_functions: bool = False) -> dict[str, set[str]]:
    """Module -> the modules of bbmm it imports."""
    mods = _modules()
    known = set(mods)
    graph = {}
    for name, path in mods.items():
        edges: set[str] = set()
        for node in _imports(_tree(path), inside_functions):
            edges |= _targets(name, node, path.name == "__init__.py", known)
        graph[name] = edges - {name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    import graphlib
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as e:
        return e.args[1]
    return None


LAZY_EDGES: set[tuple[str, str]] = set()
"""Imports inside functions that would close a cycle: none (a generated driver's program
is :mod:`bbmm.driver`, above both :mod:`bbmm.run` and the MPI launcher built on it)."""


def test_bbmm_has_no_import_cycle():
    """No cycle among the imports bbmm's modules run when they load (type-only ones
    included), and none among all their imports but :data:`LAZY_EDGES`."""
    graph = import_graph()
    assert {"bbmm.runtime", "bbmm.acquire", "bbmm.tiles"} <= set(graph)
    assert "bbmm.tiles" in graph["bbmm.acquire"]          # the graph sees relative imports
    assert _cycle(graph) is None, _cycle(graph)
    everything = import_graph(inside_functions=True)
    for a, b in LAZY_EDGES:
        assert b in everything[a], f"{a} no longer imports {b}: drop it from LAZY_EDGES"
        everything[a].discard(b)
    assert _cycle(everything) is None, _cycle(everything)


def test_the_cycle_check_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) is not None
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                     "    from .runtime import Tile\ndef f():\n    from .cli import main\n")
    assert sorted(n.module for n in _imports(tree, False)) == ["runtime", "typing"]
    assert "cli" in {n.module for n in _imports(tree, True)}


RUNTIME_PACKAGES = (*RUNTIME, "tiles", "hostlib", "settings", "config", "diagnostic",
                    "devices/__init__",
                    "devices/opencl", "devices/cldevice", "devices/discovery", "devices/logical",
                    "devices/geometry", "devices/pinned", "devices/kernelargs",
                    "devices/commandlog", "devices/clerrors")


def _compiler_imports(tree: ast.AST, module: str) -> set[str]:
    """The modules of the compiler, ``bbmm.codegen`` (or a top-level ``codegen``, the name
    it had before it was installed in bbmm), that ``tree`` imports anywhere; relative
    imports are resolved against ``module``, the dotted name of ``tree``'s package."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")[:len(module.split(".")) - (node.level - 1)]
                base = ".".join(package + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        out.update(n for n in names
                   if n.split(".")[0] == "codegen" or n == "bbmm.codegen"
                   or n.startswith("bbmm.codegen."))
    return out


def test_the_runtime_imports_nothing_of_the_compiler():
    """The runtime (and the support code of generated drivers, :mod:`bbmm.hostlib`)
    imports no module of :mod:`bbmm.codegen`, anywhere in its files."""
    for name in RUNTIME_PACKAGES:
        path = BBMM / f"{name}.py"
        assert path.exists(), path
        package = ".".join(("bbmm", *Path(name).parts[:-1]))
        compiler = _compiler_imports(_tree(path), package)
        assert not compiler, f"{path} imports {compiler}"


def test_the_compiler_check_sees_each_form_of_import():
    for src in ("import bbmm.codegen.compile\n", "from bbmm.codegen import tiling\n",
                "from bbmm import codegen\n", "from .codegen.scop import Scop\n",
                "def f():\n    from codegen.scop import Scop\n"):
        assert _compiler_imports(ast.parse(src), "bbmm"), src
    assert _compiler_imports(ast.parse("from ..codegen import scop\n"), "bbmm.devices")
    assert not _compiler_imports(ast.parse("from bbmm import codegenx, tiles\n"
                                           "from . import box\nimport codegenx\n"), "bbmm")


def test_nothing_imports_the_compiler_by_its_old_top_level_name():
    """The compiler installs as ``bbmm.codegen`` only (pyproject.toml maps ``codegen/``
    onto it): an ``import codegen`` anywhere would load a second copy of its modules
    from a checkout, or another distribution's ``codegen`` from an install."""
    root = BBMM.parent
    found = {}
    for folder in ("bbmm", "codegen", "tests", "scripts"):
        for path in sorted((root / folder).rglob("*.py")):
            old = {m for m in _compiler_imports(_tree(path), "") if m.split(".")[0] == "codegen"}
            if old:
                found[str(path.relative_to(root))] = sorted(old)
    assert not found, found


def test_the_package_list_installs_no_top_level_codegen():
    import pytest
    tomllib = pytest.importorskip("tomllib")      # Python 3.11 on
    config = tomllib.loads((BBMM.parent / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "bbmm.codegen" in config["packages"]
    assert not [p for p in config["packages"] if p.split(".")[0] == "codegen"]
    assert config["package-dir"]["bbmm.codegen"] == "codegen"

# }}}


def _private_names_across(tree: ast.AST, other: str) -> set[str]:
    """``module.name`` for each private name (one ``_``) ``tree`` imports from a module
    whose dotted name starts with ``other`` (``from bbmm.diagnostic import _x``)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module and \
                (node.module == other or node.module.startswith(other + ".")):
            out.update(f"{node.module}.{a.name}" for a in node.names
                       if a.name.startswith("_") and not a.name.startswith("__"))
    return out


def test_no_private_name_crosses_the_wall_between_compiler_and_runtime():
    """The compiler (``codegen/``) imports only public names of bbmm's other modules (the
    source locations of its messages: :func:`bbmm.diagnostic.format_coord`), and bbmm's
    modules only public names of the compiler."""
    root = BBMM.parent
    crossing = {}
    for path in sorted((root / "codegen").rglob("*.py")):
        tree = _tree(path)
        private = {n for n in _private_names_across(tree, "bbmm")
                   if not n.startswith("bbmm.codegen")}
        if private:
            crossing[str(path.relative_to(root))] = sorted(private)
    for path in sorted(BBMM.rglob("*.py")):
        private = _private_names_across(_tree(path), "bbmm.codegen")
        if private:
            crossing[str(path.relative_to(root))] = sorted(private)
    assert not crossing, crossing


def test_the_private_name_check_sees_one():
    tree = ast.parse("def f():\n    from bbmm.diagnostic import UsageError, _format_coord\n")
    assert _private_names_across(tree, "bbmm") == {"bbmm.diagnostic._format_coord"}
    assert not _private_names_across(ast.parse("from bbmm.diagnostic import format_coord\n"
                                               "from bbmm import __version__\n"), "bbmm")


COMPILER_MAY_USE = {"bbmm", "bbmm.diagnostic", "bbmm.grid", "bbmm.settings", "bbmm.version",
                    "bbmm.cache"}
"""What the compiler imports of the rest of bbmm: errors and their source locations, the
tile grid's pure functions, the settings, the version and the cache of compiled drivers;
nothing of the runtime (the code it *generates* imports the runtime, as text)."""


def _compiler_uses(tree: ast.AST) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "bbmm":
                out.update(f"bbmm.{a.name}" if a.name not in ("__version__",) else "bbmm"
                           for a in node.names)
            elif node.module.startswith("bbmm.") and not node.module.startswith("bbmm.codegen"):
                out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names
                       if a.name.startswith("bbmm") and not a.name.startswith("bbmm.codegen"))
    return out


def test_the_compiler_imports_nothing_of_the_runtime():
    used = {p.name: _compiler_uses(ast.parse(p.read_text()))
            for p in sorted((BBMM.parent / "codegen").glob("*.py"))}
    bad = {name: sorted(u - COMPILER_MAY_USE) for name, u in used.items()
           if u - COMPILER_MAY_USE}
    assert not bad, bad
    assert "bbmm.grid" in used["tiling.py"]  # the scan sees what it should
    assert _compiler_uses(ast.parse("from bbmm.hostlib import launch\n")) == {"bbmm.hostlib"}

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

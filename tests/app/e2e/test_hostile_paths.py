"""Nothing from a path reaches generated code unescaped (issue 41): folders and files
whose names would end the driver's string literals, its docstring, a C string or a
comment; ``bbmm compile`` and ``bbmm run --check`` succeed on them and run nothing."""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bbmm.codegen.literals import c_comment, c_string, py_comment, py_doc, py_str
from support.needs import needs_cl
from support.paths import ROOT

FLOYD = ROOT / "polybench" / "floyd.c"

pytestmark = pytest.mark.e2e

EVIL = 'x""";__import__("os").system("touch PWNED");r"""'
NAMES = [EVIL, "back\\x", EVIL + "\\", "q'''\"\"\"'", "tri??/graph*/end/*"]
if sys.platform.startswith("linux"):
    NAMES.append("new\nline\r\"\"\"\n#include <x>")


def bbmm(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bbmm", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("name", NAMES)
def test_hostile_folder_compile(tmp_path, name):
    d = tmp_path / name
    d.mkdir(parents=True)
    shutil.copy(FLOYD, d / "floyd.c")
    shutil.copy(FLOYD, d / (name.replace("/", "_") + ".c"))
    for f in (d / "floyd.c", d / (name.replace("/", "_") + ".c")):
        out = tmp_path / "out"
        r = bbmm("compile", str(f), "-o", str(out), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr
        host = (out / "floyd_host.py").read_text()
        ast.parse(host)     # valid Python, whatever the path
        shutil.rmtree(out)
    assert not (tmp_path / "PWNED").exists()


@needs_cl
@pytest.mark.parametrize("name", [EVIL, "back\\x"] + NAMES[-1:])
def test_hostile_folder_run_check(tmp_path, name):
    d = tmp_path / name
    d.mkdir(parents=True)
    shutil.copy(FLOYD, d / "floyd.c")
    for _ in range(2):          # the second run finds the cached driver
        r = bbmm("run", str(d / "floyd.c"), "--param", "n=12", "--check", "--no-progress",
                 cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert "check pass" in r.stdout
        assert "Traceback" not in r.stderr
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("text", NAMES + ["", "a\\", "\\", '"', "\x00\x7f\udcff", "é😀"])
def test_literals_round_trip(text):
    assert ast.literal_eval(py_str(text)) == text
    assert ast.literal_eval(py_str("/* " + text + " */\nkernel")) == "/* " + text + " */\nkernel"
    doc = ast.parse('"""head ' + py_doc(text) + '"""\nx = 1\n')
    assert len(doc.body) == 2 and isinstance(doc.body[0].value.value, str)
    line = "x = 1  # " + py_comment(text)
    assert len(ast.parse(line).body) == 1 and "\n" not in line
    com = c_comment(text)
    assert com.count("*/") == 1 and com.endswith("*/") and "\n" not in com
    assert '"""' not in com and "\\" not in com
    s = c_string(text)
    assert s.isascii() and s.isprintable() and s.startswith('"') and s.endswith('"')
    # no unescaped quote inside: every backslash escapes the next character
    body, i = s[1:-1], 0
    while i < len(body):
        assert body[i] != '"'
        i += 2 if body[i] == "\\" else 1


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
@pytest.mark.parametrize("text", ["back\\x", EVIL, "new\nline", "é", "??/", "\x01\x7f"])
def test_c_string_compiles_to_text(tmp_path, text):
    src = tmp_path / "s.c"
    src.write_text('#include <stdio.h>\nint main(void) { fputs(' + c_string(text) +
                   ', stdout); return 0; }\n')
    subprocess.run(["cc", "-o", str(tmp_path / "s"), str(src)], check=True)
    out = subprocess.run([str(tmp_path / "s")], capture_output=True).stdout
    assert out == text.encode("utf-8")

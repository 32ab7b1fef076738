"""Bad input gives one line ``bbmm: error: ...`` (exit 2), never a traceback, and is
found before anything runs (issue 41); each case runs ``python -m bbmm`` as a user
would."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.needs import needs_cl
from support.paths import ROOT

FLOYD = ROOT / "polybench" / "floyd.c"
HEAT2D = ROOT / "polybench" / "heat2d.c"

pytestmark = pytest.mark.e2e


def bbmm(*args: str, cwd: Path | None = None, env: dict | None = None,
         timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bbmm", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def one_error(r: subprocess.CompletedProcess, *words: str, status: int = 2) -> str:
    """The single stderr line of a failed run, which must hold ``words``."""
    lines = r.stderr.splitlines()
    assert "Traceback" not in r.stderr, r.stderr
    assert len(lines) == 1 and lines[0].startswith("bbmm: error: "), r.stderr
    assert r.returncode == status, (r.returncode, r.stderr)
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def test_directory_as_c_file(tmp_path):
    one_error(bbmm("compile", tmp_path), "is a directory")
    one_error(bbmm("run", tmp_path, "--param", "n=4"), "is a directory")


def test_binary_file(tmp_path):
    f = tmp_path / "bin.c"
    f.write_bytes(bytes(range(256)) * 8)
    one_error(bbmm("compile", f), "not a C source file")
    f.write_bytes(b"\xff\xfe garbage \x80\x81 { ] ;;")     # no NUL: a syntax error
    one_error(bbmm("compile", f), "bin.c", status=1)


def test_latin1_comment(tmp_path):
    f = tmp_path / "floyd.c"
    f.write_bytes("/* caf\xe9, na\xefve: Latin-1 */\n".encode("latin-1") + FLOYD.read_bytes())
    r = bbmm("compile", f)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "kernel floyd" in r.stdout


@pytest.mark.parametrize("value, words", [
    ("1000000", ("n=1000000", "TiB", "memory the host has available")),
    ("1000000000000", ("n=1000000000000", "range of its C type int")),
    ("-5", ("n=-5", "no element")),
])
def test_sizes_checked_before_allocating(value, words):
    t0 = time.monotonic()
    r = bbmm("run", FLOYD, "--param", f"n={value}", "--check")
    one_error(r, *words)
    assert r.stdout == ""
    assert time.monotonic() - t0 < 120


def test_host_memory_figure():
    """The message gives the arrays' bytes: floyd's n x n floats at n=100000 are
    37.25 GiB (100000**2 * 4 bytes), two copies 74.51 GiB, three with --check."""
    from types import SimpleNamespace

    from bbmm.diagnostic import UsageError
    from bbmm.run import check_sizes

    module = SimpleNamespace(ARRAYS={"path": ("float", ("n", "n"))})
    with pytest.raises(UsageError, match=r"37\.25 GiB .*3 copies on the host 111\.76 GiB"):
        check_sizes(module, {"n": 100000}, copies=3, available=64 << 30)
    assert check_sizes(module, {"n": 1000}, copies=3, available=64 << 30) == \
        {"path": (1000, 1000)}
    module = SimpleNamespace(ARRAYS={"A": ("double", ("m", "n"))})
    with pytest.raises(UsageError, match="32-bit"):
        check_sizes(module, {"m": 2, "n": 1 << 31}, available=1 << 60)


def test_int_param_beyond_its_type():
    one_error(bbmm("run", HEAT2D, "--param", "tsteps=4294967297", "--param", "n=10"),
              "tsteps=4294967297", "int")


def test_int_ranges():
    from bbmm.diagnostic import UsageError
    from bbmm.run import check_int_param, int_range

    assert int_range("int") == (-2**31, 2**31 - 1)
    assert int_range("unsigned short") == (0, 65535)
    assert int_range("long long") == (-2**63, 2**63 - 1)
    check_int_param("n", 2**31 - 1)
    for v, t in ((2**31, "int"), (-1, "unsigned"), (2**31, "long"), (70000, "short")):
        with pytest.raises(UsageError):
            check_int_param("n", v, t)


def test_json_path_checked_before_the_run(tmp_path):
    r = bbmm("run", FLOYD, "--param", "n=8", "--json", "/nonexistent/x.json")
    one_error(r, "/nonexistent/x.json", "no such folder")
    assert r.stdout == ""            # nothing ran (whose results would be lost)
    one_error(bbmm("run", FLOYD, "--param", "n=8", "--json", tmp_path), "is a directory")


def test_negative_seed():
    one_error(bbmm("run", FLOYD, "--param", "n=8", "--seed", "-1"), "--seed", "negative")
    one_error(bbmm("run", FLOYD, "--param", "n=8", "--seed", "x"), "--seed")


def test_compile_output_is_a_file(tmp_path):
    f = tmp_path / "existing"
    f.write_text("keep me")
    one_error(bbmm("compile", FLOYD, "-o", f), "-o", "not a folder")
    assert f.read_text() == "keep me"


def test_param_given_twice():
    one_error(bbmm("run", FLOYD, "--param", "n=8", "--param", "n=9"), "twice", "n=8", "n=9")


def test_argparse_errors_are_one_line():
    one_error(bbmm("run", FLOYD, "--tile", "x"), "--tile")
    one_error(bbmm("run"), "file")
    one_error(bbmm("frobnicate"), "frobnicate")


def test_self_recursion_is_recursion(tmp_path):
    f = tmp_path / "rec.c"
    f.write_text("void k(int n, float A[n]) {\n  for (int i = 0; i < n; i++)\n"
                 "    A[i] = A[i] + 1;\n  k(n, A);\n}\n")
    line = one_error(bbmm("compile", f), "recursion", "rec.c:4:3", status=1)
    assert "unknown function" not in line


@needs_cl
def test_unwritable_cache_falls_back(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = bbmm("run", FLOYD, "--param", "n=8", "--check", "--no-progress",
             env={"BBMM_CACHE": str(blocker / "cache")})
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("bbmm: warning: cache ")
    assert "temporary cache" in lines[0] and "check pass" in r.stdout


@needs_cl
def test_device_memory_and_devices_beyond_the_machine():
    one_error(bbmm("run", FLOYD, "--param", "n=8", "--device-mem", "1000TiB"),
              "--device-mem 1000.00 TiB", "is more than the")
    one_error(bbmm("run", FLOYD, "--param", "n=8", "--devices", "10000"),
              "--devices 10000", "at most 64")
    one_error(bbmm("devices", "--devices", "10000"), "at most 64")


@needs_cl
def test_no_compiler_chatter_on_stderr(tmp_path):
    """A kernel the OpenCL compiler warns about: no "1 warning generated." and no
    pyopencl CompilerWarning (a fresh source: PoCL caches builds)."""
    code = ("import time\nfrom bbmm.devices.opencl import make_devices\n"
            "(d,) = make_devices(1)\n"
            "src = 'int f(int x) { if (x) return %d; }\\n"
            "__kernel void k(__global int *a) { int unused; a[0] = f(a[1]); }'"
            " % time.time_ns()\n"
            "d.build(src)\nprint('built')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "built"
    assert r.stderr == ""


@needs_cl
@pytest.mark.skipif(not hasattr(signal, "SIGINT") or sys.platform == "win32",
                    reason="POSIX signals")
@pytest.mark.parametrize("delay", [1.0, 3.0])
def test_ctrl_c_ends_within_a_second(tmp_path, delay):
    p = subprocess.Popen([sys.executable, "-m", "bbmm", "run", str(FLOYD), "--param",
                          "n=2000", "--devices", "2", "--check", "--no-progress"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    if p.poll() is not None:
        pytest.skip("the run ended before the interrupt")
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=10)
    finally:
        p.kill()
    took = time.monotonic() - t0
    assert p.returncode == 130
    assert err.strip().splitlines()[-1] == "bbmm: interrupted"
    assert "Traceback" not in err
    assert took < 1.0, took

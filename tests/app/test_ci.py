"""``.ci/require_opencl`` (issue 41): in CI a missing OpenCL device fails the run instead of
letting every OpenCL test skip; elsewhere it warns."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from support.paths import ROOT

SCRIPT = ROOT / ".ci" / "require_opencl"


def run(tmp_path: Path, found: bool, ci: str | None) -> subprocess.CompletedProcess:
    """The script with a stand-in ``python`` that finds a device or not."""
    bin_ = tmp_path / "bin"
    bin_.mkdir(exist_ok=True)
    fake = bin_ / "python"
    fake.write_text(f"#!/bin/sh\nexit {0 if found else 1}\n")
    fake.chmod(0o755)
    env = {"PATH": f"{bin_}:/usr/bin:/bin", "BBMM_CI_NO_INSTALL": "1"}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.skipif(not os.path.exists("/bin/bash"), reason="bash")
def test_ci_fails_without_a_device(tmp_path):
    r = run(tmp_path, found=False, ci="true")
    assert r.returncode == 1 and "ci: error: no OpenCL device" in r.stderr


@pytest.mark.skipif(not os.path.exists("/bin/bash"), reason="bash")
def test_outside_ci_a_missing_device_warns(tmp_path):
    r = run(tmp_path, found=False, ci=None)
    assert r.returncode == 0 and "ci: warning" in r.stderr


@pytest.mark.skipif(not os.path.exists("/bin/bash"), reason="bash")
def test_a_device_passes(tmp_path):
    r = run(tmp_path, found=True, ci="true")
    assert r.returncode == 0 and r.stderr == ""


def test_run_uses_the_gate():
    text = (ROOT / ".ci" / "run").read_text()
    assert ".ci/require_opencl" in text
    assert text.index(".ci/require_opencl") < text.index("python -m pytest")

"""Tuning without environment variables: ``bbmm run --tune NAME=VALUE`` and the API's
``tune=`` give the ``$BBMM_*`` settings for one run, over the environment, with errors
that name the option the user gave."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from bbmm import hostlib, settings
from bbmm.diagnostic import SettingError, UsageError
from needs import needs_cl


def test_parse_tune_names_values_and_refusals():
    assert settings.parse_tune(["coarsen=2", "stage=off", "Block=8x1"]) == {
        "BBMM_COARSEN": "2", "BBMM_STAGE": "off", "BBMM_BLOCK": "8x1"}
    assert settings.parse_tune({"coarsen1": 4}) == {"BBMM_COARSEN1": "4"}
    assert settings.parse_tune(None) == {} and settings.parse_tune([]) == {}
    with pytest.raises(UsageError, match="no setting 'nosuch'.*names: coarsen"):
        settings.parse_tune(["nosuch=1"])
    with pytest.raises(UsageError, match="'coarsen' is not NAME=VALUE"):
        settings.parse_tune(["coarsen"])
    with pytest.raises(UsageError, match="no setting 'cache'"):  # not a run's setting
        settings.parse_tune({"cache": "/tmp"})


def test_tune_overrides_the_environment_and_is_undone(monkeypatch):
    monkeypatch.setenv("BBMM_COARSEN", "3")
    hostlib.untune({})
    assert hostlib.options().coarsen == 3
    before = hostlib.tune(settings.parse_tune(["coarsen=2", "block=8x1"]))
    try:
        assert hostlib.options().coarsen == 2 and hostlib.options().block == (1, 8)
    finally:
        hostlib.untune(before)
    assert hostlib.options().coarsen == 3


def test_a_bad_tuned_value_names_the_option_and_changes_nothing(monkeypatch):
    monkeypatch.delenv("BBMM_STAGE", raising=False)
    hostlib.untune({})
    want = hostlib.options()
    with pytest.raises(SettingError, match=r"--tune stage: 'sideways'"):
        hostlib.tune(settings.parse_tune(["stage=sideways"]))
    assert hostlib.options() == want
    with pytest.raises(SettingError, match=r"--tune coarsen: 0 is not in 1..64"):
        hostlib.tune(settings.parse_tune(["coarsen=0"]))
    monkeypatch.setenv("BBMM_COARSEN", "0")  # the environment's own name stays in its errors
    hostlib.untune({})
    with pytest.raises(SettingError, match=r"^BBMM_COARSEN: 0"):
        hostlib.options()
    monkeypatch.delenv("BBMM_COARSEN")
    hostlib.untune({})


@needs_cl
def test_run_tune_on_the_command_line(tmp_path):
    ok = subprocess.run([sys.executable, "-m", "bbmm", "run", "--example", "floyd", "--param",
                         "n=32", "--devices", "2", "--tune", "coarsen=2", "--tune",
                         "coarsen1=1", "--check", "--no-progress"],
                        capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert ok.returncode == 0 and "check pass" in ok.stdout, ok.stderr
    bad = subprocess.run([sys.executable, "-m", "bbmm", "run", "--example", "floyd",
                          "--param", "n=32", "--tune", "align=0", "--no-progress"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    lines = bad.stderr.strip().splitlines()
    assert bad.returncode == 2 and len(lines) == 1, bad.stderr
    assert lines[0].startswith("bbmm: error: --tune align: 0"), lines


@needs_cl
def test_api_tune_holds_for_one_run():
    import bbmm

    hostlib.untune({})
    default = hostlib.options()
    prog = bbmm.compile(example="floyd")
    n = 24
    path = np.random.default_rng(1).integers(1, 9, (n, n)).astype(np.float32)
    np.fill_diagonal(path, 0)
    want = path.copy()
    for k in range(n):
        want = np.minimum(want, want[:, k:k + 1] + want[k:k + 1, :])
    seen = []
    real = hostlib.options

    def spy():
        o = real()
        seen.append(o.coarsen1)
        return o
    hostlib.options, saved = spy, hostlib.options
    try:
        prog(n=n, path=path, devices=1, tune={"coarsen1": 2})
    finally:
        hostlib.options = saved
    np.testing.assert_array_equal(path, want)
    assert seen and set(seen) == {2}
    assert hostlib.options() == default
    with pytest.raises(UsageError, match="no setting"):
        prog(n=n, path=path, devices=1, tune={"colour": 1})

"""Tuning without environment variables: ``bbmm run --tune NAME=VALUE`` and the API's
``tune=`` give the ``$BBMM_*`` settings for one run, over the environment, with errors
that name the option the user gave; the run's configuration (:class:`bbmm.config.
RuntimeConfig`, :class:`bbmm.codegen.compile.CompileOptions`) is read once and frozen."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from dataclasses import FrozenInstanceError

from bbmm import hostlib, settings
from bbmm.codegen.compile import CompileOptions
from bbmm.config import KernelOptions, RuntimeConfig
from bbmm.diagnostic import SettingError, UsageError
from support.needs import needs_cl
from support.paths import ROOT


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


def test_tune_overrides_the_environment(monkeypatch):
    monkeypatch.setenv("BBMM_COARSEN", "3")
    assert RuntimeConfig.from_env().kernels.coarsen == 3
    tuned = RuntimeConfig.from_env(tune=["coarsen=2", "block=8x1", "sync=on", "strip=8"])
    assert tuned.kernels.coarsen == 2 and tuned.kernels.block == (1, 8) and tuned.sync
    assert RuntimeConfig.from_env(tune={"pipeline": 4, "edge": "off"}) == RuntimeConfig(
        pipeline=4, edge=0, kernels=KernelOptions(coarsen=3))
    assert RuntimeConfig.from_env().kernels.coarsen == 3     # nothing stays tuned
    assert RuntimeConfig.from_env(tune={"stage": "off"}).kernels.stage is None   # docs/api.md
    assert CompileOptions.from_env(tune=["strip=8", "coarsen=2"]).strip == 8
    monkeypatch.setenv("BBMM_STRIP", "16")
    assert CompileOptions.from_env().strip == 16
    assert CompileOptions.from_env(tune={"strip": 2}).strip == 2


def test_a_bad_tuned_value_names_the_option(monkeypatch):
    monkeypatch.delenv("BBMM_STAGE", raising=False)
    with pytest.raises(SettingError, match=r"--tune stage: 'sideways'"):
        RuntimeConfig.from_env(tune=["stage=sideways"])
    with pytest.raises(SettingError, match=r"--tune coarsen: 0 is not in 1..64"):
        RuntimeConfig.from_env(tune=["coarsen=0"])
    with pytest.raises(SettingError, match=r"--tune fuse: '2' is not in \[0, 1\)"):
        RuntimeConfig.from_env(tune={"fuse": 2})
    with pytest.raises(SettingError, match=r"--tune strip: 0 is less than 1"):
        CompileOptions.from_env(tune=["strip=0"])
    with pytest.raises(UsageError, match="no setting 'touch'"):   # deleted: settled
        RuntimeConfig.from_env(tune=["touch=wait"])
    monkeypatch.setenv("BBMM_COARSEN", "0")  # the environment's own name stays in its errors
    with pytest.raises(SettingError, match=r"^BBMM_COARSEN: 0"):
        RuntimeConfig.from_env()
    assert RuntimeConfig.from_env(tune=["coarsen=2"]).kernels.coarsen == 2  # given: over it


def test_configs_are_frozen_and_read_the_environment_once(monkeypatch):
    """A configuration is read when it is built and never again: changing the environment
    afterwards changes nothing of it, nor of the runtime it was given to (which then
    reads no setting of its own)."""
    from bbmm.devices import NullDevice
    from bbmm.runtime import Runtime

    for name, value in (("BBMM_COARSEN", "3"), ("BBMM_SYNC", "1"), ("BBMM_PLACE", "0"),
                        ("BBMM_STRIP", "8")):
        monkeypatch.setenv(name, value)
    config, options = RuntimeConfig.from_env(), CompileOptions.from_env()
    for obj, name in ((config, "sync"), (config.kernels, "coarsen"), (options, "strip")):
        with pytest.raises(FrozenInstanceError):
            setattr(obj, name, getattr(obj, name))
    for name in ("BBMM_COARSEN", "BBMM_SYNC", "BBMM_PLACE", "BBMM_REPLAY", "BBMM_STRIP"):
        monkeypatch.setenv(name, "garbage")        # a runtime given its config reads none
    rt = Runtime([NullDevice(0), NullDevice(1)], {"A": np.zeros(4)}, config=config)
    assert rt.config is config and rt.sync and not rt.place and rt.replay is False
    assert hostlib.kernel_options(rt).coarsen == 3 and options.strip == 8
    assert (config.sync, config.place, config.kernels.coarsen) == (True, False, 3)
    with pytest.raises(SettingError, match="BBMM_SYNC: 'garbage'"):   # a new one reads anew
        RuntimeConfig.from_env()
    assert hostlib.kernel_options(object()) == KernelOptions()   # no config: the defaults


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
def test_api_tune_holds_for_one_run(monkeypatch):
    """``tune=`` reaches the run's configuration, which the runtime hands to the driver's
    launches; the next call without it has the environment's."""
    import bbmm
    from bbmm import run as run_module

    monkeypatch.delenv("BBMM_COARSEN1", raising=False)
    prog = bbmm.compile(example="floyd")
    n = 24
    path = np.random.default_rng(1).integers(1, 9, (n, n)).astype(np.float32)
    np.fill_diagonal(path, 0)
    want = path.copy()
    for k in range(n):
        want = np.minimum(want, want[:, k:k + 1] + want[k:k + 1, :])
    seen = []
    real = run_module.execute

    def spy(*args, **kw):
        res = real(*args, **kw)
        seen.append(hostlib.kernel_options(res.runtime).coarsen1)
        return res
    monkeypatch.setattr(run_module, "execute", spy)
    prog(n=n, path=path, devices=1, tune={"coarsen1": 2})
    np.testing.assert_array_equal(path, want)
    prog(n=n, path=path.copy(), devices=1)
    assert seen == [2, KernelOptions().coarsen1]
    with pytest.raises(UsageError, match="no setting"):
        prog(n=n, path=path, devices=1, tune={"colour": 1})


@pytest.mark.parametrize("name", settings.TUNABLE)
def test_every_tunable_name_is_read_by_one_configuration_and_documented(name):
    """Each name ``--tune`` takes is read, and checked, by the runtime's configuration or
    the compiler's (a bad value is refused, naming the option as given), and has its row
    in docs/cli.md's table of variables."""

    refused = []
    for build in (RuntimeConfig.from_env, CompileOptions.from_env):
        try:
            build(tune={name: "bad value"})
        except SettingError as e:
            refused.append(str(e))
    assert len(refused) == 1 and refused[0].startswith(f"--tune {name}: "), refused
    table = (ROOT / "docs" / "cli.md").read_text()
    assert f"| `BBMM_{name.upper()}" in table

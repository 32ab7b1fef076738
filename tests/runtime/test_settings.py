"""$BBMM_* settings (bbmm/settings.py): every kind read and refused in one line; a switch
set to off is off (through the command line: tests/app/e2e/test_settings_cli.py)."""
import pytest

from bbmm import settings
from bbmm.diagnostic import SettingError


@pytest.mark.parametrize("text,value", [("1", True), ("on", True), ("YES", True), (" true ", True),
                                        ("0", False), ("off", False), ("No", False),
                                        ("false", False), ("", None), ("  ", None)])
def test_switch(monkeypatch, text, value):
    monkeypatch.setenv("BBMM_X", text)
    for default in (True, False):
        assert settings.switch("BBMM_X", default) is (default if value is None else value)


def test_unset_settings_give_their_defaults(monkeypatch):
    monkeypatch.delenv("BBMM_X", raising=False)
    assert settings.switch("BBMM_X", True) is True
    assert settings.integer("BBMM_X", 7, 1, 9) == 7
    assert settings.number("BBMM_X", 0.5) == 0.5
    assert settings.size("BBMM_X", 1 << 20) == 1 << 20
    assert settings.word("BBMM_X", "a", ("a", "b")) == "a"


def test_values_of_each_kind(monkeypatch):
    monkeypatch.setenv("BBMM_X", "12")
    assert settings.integer("BBMM_X", 1, 1, 64) == 12
    assert settings.number("BBMM_X", 1.0, 0.0) == 12.0
    assert settings.size("BBMM_X", 0) == 12
    monkeypatch.setenv("BBMM_X", "256KiB")
    assert settings.size("BBMM_X", 0) == 256 << 10
    monkeypatch.setenv("BBMM_X", "Wait")
    assert settings.word("BBMM_X", "async", ("async", "wait")) == "wait"


@pytest.mark.parametrize("call,text,message", [
    (lambda: settings.switch("BBMM_X", True), "maybe",
     "BBMM_X: 'maybe' is neither on nor off (1/0, on/off, yes/no, true/false)"),
    (lambda: settings.integer("BBMM_X", 1), "1.5", "BBMM_X: '1.5' is not an integer"),
    (lambda: settings.integer("BBMM_X", 1, 1, 64), "65", "BBMM_X: 65 is not in 1..64"),
    (lambda: settings.integer("BBMM_X", 1, 1), "0", "BBMM_X: 0 is less than 1"),
    (lambda: settings.number("BBMM_X", 1.0, 0.0), "-1e-3", "BBMM_X: -0.001 is less than 0.0"),
    (lambda: settings.number("BBMM_X", 1.0), "nan", "BBMM_X: 'nan' is not a finite number"),
    (lambda: settings.number("BBMM_X", 1.0), "fast", "BBMM_X: 'fast' is not a number"),
    (lambda: settings.size("BBMM_X", 1), "1 lot",
     "BBMM_X: '1 lot' is not a size such as 1048576 or 256KiB"),
    (lambda: settings.word("BBMM_X", "a", ("a", "b")), "c", "BBMM_X: 'c' is not one of a, b"),
])
def test_bad_values_are_one_line_setting_errors(monkeypatch, call, text, message):
    monkeypatch.setenv("BBMM_X", text)
    with pytest.raises(SettingError) as e:
        call()
    assert str(e.value) == message


def test_runtime_switches_read_off_as_off(monkeypatch):
    """`off` and `no` once read as on (anything but "0" was on)."""
    from bbmm.devices.base import NullDevice
    from bbmm.runtime import Runtime
    import numpy as np
    for text in ("off", "no", "false"):
        for name in ("BBMM_REPLAY", "BBMM_PLACE", "BBMM_DEFER"):
            monkeypatch.setenv(name, text)
        monkeypatch.setenv("BBMM_SYNC", "on")
        monkeypatch.setenv("BBMM_DEBUG", "yes")
        rt = Runtime([NullDevice(0), NullDevice(1)], {"A": np.zeros(4)})
        assert (rt.replay, rt.place, rt.directory.defer) == (False, False, False)
        assert rt.sync and rt.verify

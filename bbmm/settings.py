"""The environment, read here and nowhere else in bbmm: ``$BBMM_*`` settings, each read
and checked by one of these functions, and the few other variables bbmm consults
(``$CC``, ``$XDG_CACHE_HOME``, the MPI launchers' sizes).

Nothing is read when a module loads: a setting is read where it is used, when it is used
(the runtime's when a runtime is made, a device's when it is made, the kernel options of
:func:`bbmm.hostlib.options` at the first launch or prebuild); an unset or blank variable
gives the default, and a value that is not of the setting's kind raises
:class:`~bbmm.diagnostic.SettingError`, which the command line and the generated drivers
print as one line (exit status 2). Switches accept ``1``/``0``, ``on``/``off``,
``yes``/``no``, ``true``/``false`` in any case: ``off`` must never read as on.
"""
from __future__ import annotations

import os

from .diagnostic import SettingError, UsageError, parse_bytes

ON = ("1", "on", "yes", "true")
OFF = ("0", "off", "no", "false")

TUNABLE = ("coarsen", "coarsen1", "block", "local", "align", "stage", "unroll", "restrict",
           "specialize", "prebuild", "strip", "fuse", "whole", "side", "edge", "place",
           "defer", "pipeline", "touch", "replay", "sync", "debug")
"""The settings a run takes as ``--tune NAME=VALUE`` (``bbmm run``, a driver's command
line) or ``tune={NAME: VALUE}`` (:meth:`bbmm.api.Program.run`): ``$BBMM_<NAME>``'s value,
which they override (``docs/cli.md`` lists what each does and its default)."""

_GIVEN: dict[str, str] = {}
"""Values given on the command line or through the API, by variable name: read before
the environment."""


def parse_tune(items: "list[str] | dict[str, object] | None") -> dict[str, str]:
    """``["coarsen=2", "stage=off"]`` or ``{"coarsen": 2}`` as ``{"BBMM_COARSEN": "2",
    ...}``; an unknown name or an item without ``=`` is a :class:`UsageError` that lists
    the names."""
    out: dict[str, str] = {}
    if not items:
        return out
    pairs = items.items() if isinstance(items, dict) else [
        tuple(i.split("=", 1)) if "=" in i else (i, None) for i in items]
    for name, value in pairs:
        key = str(name).strip().lower().replace("-", "_")
        if value is None or key not in TUNABLE:
            what = (f"{name!r} is not NAME=VALUE" if value is None
                    else f"no setting {name!r}")
            raise UsageError(f"--tune: {what} (names: {', '.join(TUNABLE)}; docs/cli.md "
                             f"says what each does)")
        out["BBMM_" + key.upper()] = str(value)
    return out


def give(values: dict[str, str]) -> dict[str, str]:
    """Take ``values`` (:func:`parse_tune`) before the environment from now on; returns
    what was given before, for :func:`give` to restore."""
    global _GIVEN
    before = _GIVEN
    _GIVEN = {**_GIVEN, **values} if values else dict(_GIVEN)
    return before


def restore(before: dict[str, str]) -> None:
    """Undo :func:`give`."""
    global _GIVEN
    _GIVEN = before


def label(name: str) -> str:
    """How a setting is named in an error: as the user gave it."""
    if name in _GIVEN:
        return f"--tune {name[5:].lower()}"
    return name


def _raw(name: str) -> str | None:
    text = _GIVEN.get(name)
    if text is None:
        text = os.environ.get(name)
    return text if text is not None and text.strip() else None


def text(name: str) -> str | None:
    """A variable's text as set (None: unset or blank), for settings parsed by the module
    that uses them (``$BBMM_STAGE``, ``$BBMM_LOCAL`` ...)."""
    return _raw(name)


def environ() -> dict[str, str]:
    """A copy of this process's environment: what a child process is given (with
    changes of the caller's own) and what a launcher's variables are looked up in."""
    return dict(os.environ)


def export(name: str, value: str) -> None:
    """Set ``name`` for this process and the processes it starts (the OpenCL ICD
    loader's ``OCL_ICD_VENDORS``)."""
    os.environ[name] = value


def switch(name: str, default: bool) -> bool:
    """A setting that is on or off."""
    text = _raw(name)
    if text is None:
        return default
    t = text.strip().lower()
    if t in ON:
        return True
    if t in OFF:
        return False
    raise SettingError(f"{label(name)}: {text!r} is neither on nor off (1/0, on/off, yes/no, "
                       "true/false)")


def integer(name: str, default: int, lo: int | None = None, hi: int | None = None) -> int:
    """An integer setting in ``[lo, hi]`` (either bound may be absent)."""
    text = _raw(name)
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise SettingError(f"{label(name)}: {text!r} is not an integer") from None
    _check_range(name, value, lo, hi)
    return value


def number(name: str, default: float, lo: float | None = None) -> float:
    """A real-valued setting of at least ``lo``."""
    text = _raw(name)
    if text is None:
        return default
    try:
        value = float(text.strip())
    except ValueError:
        raise SettingError(f"{label(name)}: {text!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise SettingError(f"{label(name)}: {text!r} is not a finite number")
    _check_range(name, value, lo, None)
    return value


def size(name: str, default: int) -> int:
    """A number of bytes (``1048576``, ``256KiB``, ``1MiB``)."""
    text = _raw(name)
    if text is None:
        return default
    try:
        return parse_bytes(text.strip())
    except (UsageError, ValueError):
        raise SettingError(f"{label(name)}: {text!r} is not a size such as 1048576 or "
                           "256KiB") from None


def word(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (compared in lower case)."""
    text = _raw(name)
    if text is None:
        return default
    t = text.strip().lower()
    if t not in choices:
        raise SettingError(f"{label(name)}: {text!r} is not one of {', '.join(choices)}")
    return t


def _check_range(name: str, value: float, lo: float | None, hi: float | None) -> None:
    if lo is not None and hi is not None and not lo <= value <= hi:
        raise SettingError(f"{label(name)}: {value} is not in {lo}..{hi}")
    if lo is not None and value < lo:
        raise SettingError(f"{label(name)}: {value} is less than {lo}")
    if hi is not None and value > hi:
        raise SettingError(f"{label(name)}: {value} is more than {hi}")

"""The environment, read here and nowhere else in bbmm: ``$BBMM_*`` settings, each read
and checked by one of these functions, and the few other variables bbmm consults
(``$CC``, ``$XDG_CACHE_HOME``, the MPI launchers' sizes).

Nothing is read when a module loads. The settings of a run are read once, when the run
is set up, into one frozen configuration per layer: :class:`bbmm.config.RuntimeConfig`
(the runtime, its devices and the kernel launches) and
:class:`bbmm.codegen.compile.CompileOptions` (the compiler), which are passed down; only
the cache's location and size, ``$BBMM_PROFILE`` and the launchers' variables are read
where they are used. An unset or blank variable gives the default, and a value that is
not of the setting's kind raises :class:`~bbmm.diagnostic.SettingError`, which the
command line and the generated drivers print as one line (exit status 2). Switches
accept ``1``/``0``, ``on``/``off``, ``yes``/``no``, ``true``/``false`` in any case:
``off`` must never read as on.
"""
from __future__ import annotations

import os
from typing import Mapping

from .diagnostic import SettingError, UsageError, parse_bytes

ON = ("1", "on", "yes", "true")
OFF = ("0", "off", "no", "false")

TUNABLE = ("coarsen", "coarsen1", "block", "local", "align", "stage", "unroll", "restrict",
           "specialize", "prebuild", "strip", "fuse", "whole", "side", "beside", "edge",
           "gate", "place", "defer", "pipeline", "replay", "ahead", "sync", "debug", "direct",
           "lend")
"""The settings a run takes as ``--tune NAME=VALUE`` (``bbmm run``, a driver's command
line) or ``tune={NAME: VALUE}`` (:meth:`bbmm.api.Program.run`): ``$BBMM_<NAME>``'s value,
which they override (``docs/cli.md`` lists what each does and its default); ``strip``
is the compiler's (:class:`bbmm.codegen.compile.CompileOptions`), the others the
runtime's (:class:`bbmm.config.RuntimeConfig`)."""


def parse_tune(items: "list[str] | Mapping[str, object] | None") -> dict[str, str]:
    """``["coarsen=2", "stage=off"]`` or ``{"coarsen": 2}`` as ``{"BBMM_COARSEN": "2",
    ...}``; an unknown name or an item without ``=`` is a :class:`UsageError` that lists
    the names."""
    out: dict[str, str] = {}
    if not items:
        return out
    pairs = items.items() if isinstance(items, Mapping) else [
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


class Reader:
    """The checked parsers over the environment with ``given`` values before it (a run's
    ``--tune``, :func:`parse_tune`): what a configuration is built from, once. An error
    names a setting as the user gave it (``--tune coarsen`` or ``BBMM_COARSEN``)."""

    def __init__(self, given: Mapping[str, str] | None = None):
        self.given = dict(given or {})

    def label(self, name: str) -> str:
        """How a setting is named in an error: as the user gave it."""
        if name in self.given:
            return f"--tune {name[5:].lower()}"
        return name

    def text(self, name: str) -> str | None:
        """A variable's text as set (None: unset or blank), for settings parsed by the
        module that uses them (``$BBMM_STAGE``, ``$BBMM_LOCAL`` ...)."""
        text = self.given.get(name)
        if text is None:
            text = os.environ.get(name)
        return text if text is not None and text.strip() else None

    def switch(self, name: str, default: bool) -> bool:
        """A setting that is on or off."""
        text = self.text(name)
        if text is None:
            return default
        t = text.strip().lower()
        if t in ON:
            return True
        if t in OFF:
            return False
        raise SettingError(f"{self.label(name)}: {text!r} is neither on nor off (1/0, on/off, "
                           "yes/no, true/false)")

    def integer(self, name: str, default: int, lo: int | None = None,
                hi: int | None = None) -> int:
        """An integer setting in ``[lo, hi]`` (either bound may be absent)."""
        text = self.text(name)
        if text is None:
            return default
        try:
            value = int(text.strip())
        except ValueError:
            raise SettingError(f"{self.label(name)}: {text!r} is not an integer") from None
        self._check_range(name, value, lo, hi)
        return value

    def number(self, name: str, default: float, lo: float | None = None) -> float:
        """A real-valued setting of at least ``lo``."""
        text = self.text(name)
        if text is None:
            return default
        try:
            value = float(text.strip())
        except ValueError:
            raise SettingError(f"{self.label(name)}: {text!r} is not a number") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise SettingError(f"{self.label(name)}: {text!r} is not a finite number")
        self._check_range(name, value, lo, None)
        return value

    def size(self, name: str, default: int) -> int:
        """A number of bytes (``1048576``, ``256KiB``, ``1MiB``)."""
        text = self.text(name)
        if text is None:
            return default
        try:
            return parse_bytes(text.strip())
        except (UsageError, ValueError):
            raise SettingError(f"{self.label(name)}: {text!r} is not a size such as 1048576 "
                               "or 256KiB") from None

    def word(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        """One of ``choices`` (compared in lower case)."""
        text = self.text(name)
        if text is None:
            return default
        t = text.strip().lower()
        if t not in choices:
            raise SettingError(f"{self.label(name)}: {text!r} is not one of "
                               f"{', '.join(choices)}")
        return t

    def _check_range(self, name: str, value: float, lo: float | None,
                     hi: float | None) -> None:
        label = self.label(name)
        if lo is not None and hi is not None and not lo <= value <= hi:
            raise SettingError(f"{label}: {value} is not in {lo}..{hi}")
        if lo is not None and value < lo:
            raise SettingError(f"{label}: {value} is less than {lo}")
        if hi is not None and value > hi:
            raise SettingError(f"{label}: {value} is more than {hi}")


def environ() -> dict[str, str]:
    """A copy of this process's environment: what a child process is given (with
    changes of the caller's own) and what a launcher's variables are looked up in."""
    return dict(os.environ)


def export(name: str, value: str) -> None:
    """Set ``name`` for this process and the processes it starts (the OpenCL ICD
    loader's ``OCL_ICD_VENDORS``)."""
    os.environ[name] = value


# The variables read where they are used (the cache, the profile, $CC), and the checks'
# tests: the environment alone, nothing given.

def text(name: str) -> str | None:
    """:meth:`Reader.text` of the environment alone."""
    return Reader().text(name)


def switch(name: str, default: bool) -> bool:
    """:meth:`Reader.switch` of the environment alone."""
    return Reader().switch(name, default)


def integer(name: str, default: int, lo: int | None = None, hi: int | None = None) -> int:
    """:meth:`Reader.integer` of the environment alone."""
    return Reader().integer(name, default, lo, hi)


def number(name: str, default: float, lo: float | None = None) -> float:
    """:meth:`Reader.number` of the environment alone."""
    return Reader().number(name, default, lo)


def size(name: str, default: int) -> int:
    """:meth:`Reader.size` of the environment alone."""
    return Reader().size(name, default)


def word(name: str, default: str, choices: tuple[str, ...]) -> str:
    """:meth:`Reader.word` of the environment alone."""
    return Reader().word(name, default, choices)

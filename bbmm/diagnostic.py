"""Errors and warnings of bbmm: one root, narrow subclasses.

Front-end errors carry a C source location (``floyd.c:14:9: non-affine subscript
A[i*j]``); runtime errors are quantitative (device, bytes asked, bytes held, box).
The CLI prints ``str(error)`` on one line for every :class:`BBMMError` and exits
non-zero; anything else is a bug and keeps its traceback.
"""
from __future__ import annotations


class BBMMError(RuntimeError):
    """Root of every error bbmm raises on purpose."""


class UsageError(BBMMError):
    """A command-line or API argument is wrong (unknown size unit, missing --param...)."""


class SettingError(UsageError, ValueError):
    """A bad ``$BBMM_*`` environment setting (read where and when it is used: :mod:`bbmm.settings`)."""


class UnsupportedProgramError(BBMMError):
    """The C input is outside the accepted subset; the message starts with file:line:col."""

    def __init__(self, message: str, coord: object | None = None):
        self.coord, self.message = coord, message
        loc = format_coord(coord)
        super().__init__(f"{loc}: {message}" if loc else message)


class DeviceError(BBMMError):
    """An OpenCL device could not be found or used."""


class DeviceMemoryError(DeviceError):
    """An allocation would exceed a device's memory cap (or the driver's memory)."""

    def __init__(self, device: str, asked: int, held: int, cap: int, what: str = ""):
        self.device, self.asked, self.held, self.cap = device, asked, held, cap
        extra = f" for {what}" if what else ""
        super().__init__(
            f"{device}: cannot allocate {format_bytes(asked)}{extra}: "
            f"{format_bytes(held)} of {format_bytes(cap)} held")


class TileTooLargeError(DeviceMemoryError):
    """One tile's own boxes cannot fit in the device even with everything else evicted."""


class CheckError(BBMMError):
    """``--check`` found a result that differs from the sequential program."""


class BBMMWarning(UserWarning):
    """Root of bbmm's warnings."""


def format_coord(coord: object | None) -> str:
    """A source location as ``file:line[:column]`` (``<input>`` for text with no file):
    ``coord`` is a pycparser ``Coord`` or anything with ``file``, ``line`` and ``column``;
    one without a line is given as ``str(coord)``, and None as ``""``. The compiler's
    messages and :class:`BBMMError`'s ``coord`` share this form."""
    if coord is None:
        return ""
    file = getattr(coord, "file", None)
    line = getattr(coord, "line", None)
    col = getattr(coord, "column", None)
    if line is None:
        return str(coord)
    parts = [file or "<input>", str(line)]
    if col:
        parts.append(str(col))
    return ":".join(parts)


_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1000, "kib": 1024, "m": 1024**2, "mb": 1000**2,
          "mib": 1024**2, "g": 1024**3, "gb": 1000**3, "gib": 1024**3, "t": 1024**4,
          "tb": 1000**4, "tib": 1024**4}


def parse_bytes(text: str | int) -> int:
    """Parse ``256MiB``, ``1.5GiB``, ``4096``, ``64k`` into bytes (KiB/MiB/GiB are powers of 2)."""
    if isinstance(text, int):
        if text < 0:
            raise UsageError(f"negative size {text}")
        return text
    s = str(text).strip().lower().replace(" ", "")
    num = s.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = s[len(num):]
    if unit not in _UNITS or not num:
        raise UsageError(f"cannot read size {text!r}: expected a number with an optional unit "
                         f"KiB, MiB, GiB (e.g. 256MiB)")
    try:
        value = float(num)
    except ValueError:
        raise UsageError(f"cannot read size {text!r}: {num!r} is not a number") from None
    if value < 0:
        raise UsageError(f"negative size {text!r}")
    return int(value * _UNITS[unit])


def format_bytes(n: int | float) -> str:
    """Human-readable bytes with binary units (``1.50 GiB``)."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} TiB"

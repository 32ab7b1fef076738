"""Comparing bbmm's results with the sequential program's (:func:`compare`, within
:data:`~bbmm.reference.common.TOLERANCES`), and the whole check (:func:`run_reference`)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
import ctypes
import os

import numpy as np

from bbmm.diagnostic import UsageError
from .calls import call_kernel
from .common import TOLERANCES, exact
from .compiler import build_library
from .trampolines import _kernel_trampoline


@dataclass(frozen=True)
class Mismatch:
    """The arrays ``got`` and ``expected`` differ; ``str()`` is one line."""

    name: str
    count: int
    """Number of differing elements."""
    total: int
    index: tuple[int, ...]
    """First differing element (C order)."""
    got: object
    expected: object
    max_error: float
    """Largest ``|got - expected| / (|expected| + scale)`` (float/double; ``scale`` the
    array's largest finite ``|expected|``; inf when a NaN or an infinity is involved), the
    figure compared with the tolerance, or largest ``|got - expected|`` (int)."""
    ctype: str
    tolerance: float = 0.0
    worst: tuple[int, ...] = ()
    """The element of ``max_error`` (C order)."""
    worst_got: object = None
    worst_expected: object = None
    scale: float = 0.0
    """The array's largest finite ``|expected|`` (the absolute floor's scale)."""

    def __str__(self) -> str:
        idx = ", ".join(str(i) for i in self.index)
        kind = "absolute" if exact(self.ctype) else "relative"
        err = str(int(self.max_error)) if exact(self.ctype) else f"{self.max_error:.3g}"
        out = (f"{self.name}: {self.count} of {self.total} elements differ; first at [{idx}]:"
               f" got {self.got}, expected {self.expected}")
        if self.worst and self.worst != self.index:
            w = ", ".join(str(i) for i in self.worst)
            out += f"; worst at [{w}]: got {self.worst_got}, expected {self.worst_expected}"
        out += f"; max {kind} error {err}"
        if not exact(self.ctype):
            out += f" (of |expected| + {self.scale:.3g}; tolerance {self.tolerance:.3g})"
        return out


def compare(name: str, got: np.ndarray, expect: np.ndarray, ctype: str,
            rtol: float | None = None) -> Mismatch | None:
    """None if ``got`` matches ``expect``, else a :class:`Mismatch` naming the first and
    the worst differing elements.

    Integers and _Bool (:func:`exact`): exact. float/double: element i is equal when
    ``|got - expect| <= rtol * (|expect| + scale)``, ``scale`` the array's largest finite
    ``|expect|``: relative to the element, with an absolute floor ``rtol * scale`` at the
    array's magnitude (a value near 0 that results from values of the array's size
    carries their rounding, not its own; an array of small values is held to its own
    size, not to 1); ``rtol`` from :data:`TOLERANCES` (1e-4 float, 1e-10 double). Both the
    same infinity, or both NaN, are equal; a NaN or infinity on one side only differs.
    Different shapes raise :class:`UsageError`.
    """
    got, expect = np.asarray(got), np.asarray(expect)
    if got.shape != expect.shape:
        raise UsageError(f"{name}: cannot compare shape {got.shape} with {expect.shape}")
    total = int(expect.size)
    scale = 0.0
    if exact(ctype):
        # exact; through Python integers' width where unsigned long would wrap in int64
        wide = np.int64 if np.dtype(expect.dtype).kind != "u" or expect.itemsize < 8 \
            else object
        diff = np.abs(got.astype(wide) - expect.astype(wide))
        bad = diff != 0
        tol = 0.0
    elif ctype in TOLERANCES:
        tol = TOLERANCES[ctype] if rtol is None else float(rtol)
        g, e = got.astype(np.float64), expect.astype(np.float64)
        finite = np.abs(e[np.isfinite(e)])
        scale = float(finite.max()) if finite.size else 0.0
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            same = (g == e) | (np.isnan(g) & np.isnan(e))
            diff = np.abs(g - e) / (np.abs(e) + scale)
        diff = np.where(same, 0.0, np.where(np.isnan(diff), np.inf, diff))
        bad = diff > tol
    else:
        raise UsageError(f"{name}: unsupported element type {ctype!r}")
    count = int(np.count_nonzero(bad))
    if count == 0:
        return None
    flat = int(np.flatnonzero(bad.ravel())[0])
    index = tuple(int(i) for i in np.unravel_index(flat, expect.shape))
    worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), expect.shape))
    return Mismatch(name, count, total, index, got[index], expect[index],
                    float(diff.max()), ctype, tol, worst, got[worst], expect[worst], scale)



def run_reference(c_path: str | os.PathLike, scop, params: Mapping[str, int],
                  scalars: Mapping[str, float], arrays: Mapping[str, np.ndarray], *,
                  defines: Mapping[str, object] | None = None,
                  cache_dir: str | os.PathLike | None = None,
                  include_dirs: tuple[str, ...] | list[str] = (),
                  lib: str | os.PathLike | ctypes.CDLL | None = None,
                  sources: Sequence[str | os.PathLike] = ()) -> dict[str, np.ndarray]:
    """Run the sequential C kernel on copies of ``arrays``; return the copies afterwards
    (every array of the scop). The inputs are not modified. ``lib``: a library from
    :func:`reference_library` (default: built from ``c_path`` and ``sources``)."""
    if lib is None:
        lib = build_library(c_path, defines, cache_dir, include_dirs=include_dirs,
                            entry_points=(_kernel_trampoline(scop),), sources=sources)
    work = {}
    for arr in scop.param_arrays:
        if arr.name not in arrays:
            raise UsageError(f"missing array {arr.name}")
        a = arrays[arr.name]
        work[arr.name] = np.array(a, copy=True, order="C") if isinstance(a, np.ndarray) else a
    call_kernel(lib, scop, params, scalars, work)
    return work

# vim: foldmethod=marker

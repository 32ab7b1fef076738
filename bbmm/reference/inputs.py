"""The inputs of a checked run: the file's initialisation function found
(:func:`init_function`) and the arrays and scalars it fills, else seeded random data
(:func:`init_arrays`)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
import ctypes
import os
import re
import warnings

import numpy as np

from bbmm.diagnostic import BBMMWarning, UsageError
from .calls import _fmt_params, _init_reach, call_init, dtype_of
from .common import DEFAULT_SCALAR, _strip_comments, exact
from .trampolines import init_signature, reference_library


def _signature(text: str, fname: str) -> list[str] | None:
    """Tokens of the parameter list of the *definition* of ``fname`` in C text, or None."""
    for m in re.finditer(rf"\b{re.escape(fname)}\s*\(", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        if depth:
            return None
        rest = text[i:].lstrip()
        if rest.startswith("{"):
            return re.findall(r"\w+|[^\s\w]", text[m.end():i - 1])
    return None



def init_function(scop, source: str | None = None) -> str | None:
    """``init_<kernel>`` if the C file defines it with the kernel's parameter list
    (token by token), else None; a definition with another list warns and is ignored."""
    if source is None:
        try:
            source = Path(scop.filename).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    text = _strip_comments(source)
    name = f"init_{scop.function}"
    init_sig = _signature(text, name)
    if init_sig is None:
        return None
    if init_sig != _signature(text, scop.function):
        warnings.warn(f"{scop.filename}: {name} does not have the parameter list of "
                      f"{scop.function}; filling the arrays with random values instead",
                      BBMMWarning, stacklevel=3)
        return None
    return name


def init_arrays(scop, params: Mapping[str, int], seed: int = 0,
                lib: str | os.PathLike | ctypes.CDLL | None = None, *,
                scalars: Mapping[str, float] | None = None,
                defines: Mapping[str, object] | None = None,
                use_init: bool = True, init: str | None = None,
                include_dirs: tuple[str, ...] | list[str] = (),
                sources: Sequence[str | os.PathLike] = ()
                ) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Host inputs for the kernel: ``(arrays, scalars)``.

    Every array (in declaration order) is first filled from ``numpy.random.default_rng
    (seed)``: uniform [0, 1) for float/double, uniform integers in [0, 100) for int. Then,
    if ``use_init`` and the C file defines ``init_<kernel>`` with the same parameter list,
    it is called on those arrays (from ``lib``, or from a library built from
    ``scop.filename`` with ``defines`` when ``lib`` is None), so its writes replace the
    random values. ``init`` names another initialisation function (``--init``: PolyBench's
    ``init_array``), called through :func:`call_init`, so that scalars it returns through
    pointers replace the defaults. Scalars are ``scalars`` where given, else the init
    function's, else :data:`DEFAULT_SCALAR` (1.5) for every float/double parameter.
    """
    for p in scop.int_params:
        if p not in params:
            raise UsageError(f"missing value for integer parameter {p}")
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    for arr in scop.param_arrays:
        shape = arr.shape(params)
        if any(s < 0 for s in shape):
            raise UsageError(f"array {arr.name} has negative extent {shape} for "
                             f"{_fmt_params(params)}")
        dt = dtype_of(arr.ctype)
        if arr.ctype == "int":
            arrays[arr.name] = rng.integers(0, 100, size=shape, dtype=dt)
        elif exact(arr.ctype):          # other integers: the same range; _Bool: 0 or 1
            arrays[arr.name] = rng.integers(0, 2 if arr.ctype == "_Bool" else 100,
                                            size=shape).astype(dt)
        else:
            arrays[arr.name] = rng.random(size=shape, dtype=dt)
    given = {k: float(v) for k, v in (scalars or {}).items()}
    out_scalars = {name: given.get(name, DEFAULT_SCALAR) for name, _ in scop.float_params}
    if init is None and use_init:
        init = init_function(scop)
    if init is not None:
        if lib is None:
            lib = reference_library(scop, defines, include_dirs, init=init, sources=sources)
        sig = init_signature(scop, init, defines, include_dirs)
        reach = _init_reach(scop, init, params, defines, include_dirs) \
            if any(p.kind == "table" for p in sig) else None
        out_scalars = call_init(lib, scop, init, sig, params, out_scalars, arrays, reach)
        out_scalars.update({k: v for k, v in given.items() if k in out_scalars})
    return arrays, out_scalars

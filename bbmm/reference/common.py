"""What the parts of the reference check share: the C element types as numpy dtypes and
ctypes, the compiler flags, the tolerances of the comparison and :class:`CompileError`."""
from __future__ import annotations

import ctypes
import re

import numpy as np

from bbmm.diagnostic import BBMMError



DEFAULT_SCALAR = 1.5
"""Value of a float/double scalar parameter (``alpha``) that the user did not give."""

TOLERANCES = {"float": 1e-4, "double": 1e-10}
"""Largest accepted ``|got - expected| / (|expected| + scale)`` per element type, ``scale``
the array's largest finite ``|expected|`` (:func:`compare`).

float: 1e-4 is about 800 ulp (float eps 1.19e-7): room for OpenCL's 3-4 ulp ``exp``/
``sqrt``/divide and for a sum of a few hundred terms done in another order, yet far below
any real bug on values of magnitude ~1. double: 1e-10 is about 450000 ulp (eps 2.2e-16),
the same room for sums of ~1e5-1e6 terms. int: exact. ``compare(..., rtol=)`` overrides.
"""

CFLAGS = ("-O2", "-fPIC", "-shared", "-std=c99", "-fno-fast-math", "-ffp-contract=off",
          "-fsigned-char")
_LINUX_LDFLAGS = ("-Wl,-Bsymbolic", "-Wl,-z,defs")   # bind locally; undefined symbol = error
_ENTRY_FLAGS = ("-fvisibility=hidden", "-ffunction-sections", "-fdata-sections")
_LINUX_ENTRY_LDFLAGS = ("-Wl,--gc-sections",)  # main & co. go, with their undefined symbols
_COMPILER_CANDIDATES = ("cc", "gcc", "clang")
_COMPILE_TIMEOUT_S = 300

_DTYPES = {"float": np.dtype(np.float32), "double": np.dtype(np.float64),
           "int": np.dtype(np.intc), "char": np.dtype(np.int8),
           "unsigned char": np.dtype(np.uint8), "short": np.dtype(np.int16),
           "unsigned short": np.dtype(np.uint16), "unsigned int": np.dtype(np.uint32),
           "long": np.dtype(np.int64), "unsigned long": np.dtype(np.uint64),
           "_Bool": np.dtype(np.bool_)}
"""numpy dtype per array element type (:data:`bbmm.codegen.csource.ELEM_CTYPES`): the width
of the C type on LP64 and of the OpenCL type bbmm's kernels use (``char`` signed: the
reference is built with ``-fsigned-char``, as OpenCL's is; ``_Bool`` one byte, 0 or 1)."""


def exact(ctype: str) -> bool:
    """Whether arrays of element type ``ctype`` compare exactly (integers and _Bool)."""
    return ctype in _DTYPES and _DTYPES[ctype].kind in "iub"
_CTYPES_ELEM = {"float": ctypes.c_float, "double": ctypes.c_double}


class CompileError(BBMMError):
    """The reference C compiler rejected the user's file.

    ``str()`` is a one-line summary (with the compiler's first error) followed by the
    first lines of the compiler's output, indented; :attr:`summary` and :attr:`details`
    hold the two parts.
    """

    def __init__(self, summary: str, details: str = "", command: tuple[str, ...] = (),
                 returncode: int | None = None):
        self.summary, self.details = summary, details
        self.command, self.returncode = command, returncode
        text = summary
        if details:
            text += "\n" + "\n".join("    " + ln for ln in details.splitlines())
        super().__init__(text)

def _strip_comments(text: str) -> str:
    return re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)

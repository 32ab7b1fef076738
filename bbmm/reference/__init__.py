"""The sequential reference: the user's C file compiled by the system C compiler.

``bbmm --check`` runs the kernel once on the devices and once as plain C on the host, on
the same inputs, and compares every array.

.. autofunction:: build_library
.. autofunction:: reference_library
.. autofunction:: call_kernel
.. autofunction:: call_init
.. autofunction:: init_arrays
.. autofunction:: compare
.. autofunction:: run_reference

The C file is compiled as is (its ``main`` does no harm in a shared library) with
``-O2 -fPIC -shared -std=c99 -fno-fast-math -ffp-contract=off -lm``: no fused multiply-add
and no reassociation, so results follow the source order like OpenCL without
``-cl-mad-enable``. A small prelude is force-included: ``<math.h>``, ``<float.h>``,
``<stdlib.h>`` (so ``exp``, ``sqrt``, ``M_PI``, ``FLT_MAX`` need no ``#include``) and the
OpenCL built-ins the front end accepts but C lacks (``min``, ``max``, ``MIN``, ``MAX``,
``rsqrt``, ``rsqrtf``), each left out when the file defines that name itself.

A kernel or initialisation function may be ``static`` (PolyBench's are): the library is
then built from a small translation unit that includes the user's file and adds one
exported trampoline ``_bbmm_<function>`` per function bbmm calls; everything else is
hidden and unreferenced code is dropped (``-fvisibility=hidden``, ``--gc-sections``), so a
``main`` that calls a function no source defines does no harm. The same flags compile
the user's code either way.

Functions the file calls but does not define (an ``init_array`` that allocates with
PolyBench's ``POLYBENCH_2D_ARRAY_DECL``, hence ``polybench_alloc_data``) come from more C
sources, compiled each on its own with the same flags, defines and ``-I`` folders and
linked in (``bbmm run k.c more.c``, ``--extra-source``; :func:`extra_sources`): as a
PolyBench program is built, the ``polybench.c`` beside the ``polybench.h`` that the file
includes is one without being named.

Libraries are cached by content hash (the file, the extra sources and the local headers
they include, the ``-D`` defines, the compiler and its version, the flags; not the
files' paths) in ``<cache>/reference/`` (:mod:`bbmm.cache`: ``$BBMM_CACHE``, else the
platform's user cache folder), each entry holding its SHA-256 before the library's
bytes, checked before every load (from a private copy of the bytes checked).
The compiler is ``$CC`` if set, else the first of ``cc``, ``gcc``, ``clang`` found.

Each role is a module of this package: :mod:`.compiler` (the C compiler and the cache),
:mod:`.trampolines` (the library's entry points), :mod:`.calls` (ctypes calls),
:mod:`.inputs` (the initialisation function and the inputs), :mod:`.comparison` (the
check), :mod:`.common` (the types, flags and tolerances they share).
"""
from __future__ import annotations

from .common import DEFAULT_SCALAR, TOLERANCES, CompileError
from .compiler import build_library, default_cache_dir, extra_sources, find_compiler
from .trampolines import init_signature, reference_library, trampoline
from .calls import call_init, call_kernel, dtype_of, load_library
from .inputs import init_arrays, init_function
from .comparison import Mismatch, compare, run_reference

__all__ = [
    "CompileError", "DEFAULT_SCALAR", "Mismatch", "TOLERANCES", "build_library",
    "call_init", "call_kernel", "compare", "default_cache_dir", "dtype_of", "extra_sources",
    "find_compiler", "init_arrays", "init_function", "init_signature", "load_library",
    "reference_library", "run_reference", "trampoline",
]

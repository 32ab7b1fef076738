"""The kernel-argument cache: what each ``cl.Kernel`` was last given, so that a launch
sets only the arguments that changed (:func:`set_changed`), scalars packed in one call."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pyopencl as cl

__all__ = ["set_changed", "KERNEL_ARGS", "forget", "forget_context"]


_PACK = {np.int32: b"i", np.uint32: b"I", np.int64: b"l", np.uint64: b"L",
         np.float32: b"f", np.float64: b"d", np.int16: b"h", np.uint16: b"H",
         np.int8: b"b", np.uint8: b"B"}
"""Scalar kernel argument types and their pack characters for pyopencl's
``Kernel._set_arg_buf_pack_multi`` (what pyopencl's own generated invokers call: 0.1 us
for several arguments, where ``set_arg`` of one numpy scalar takes about 7 us). Scalars
are compared by value when deciding whether to set an argument again, buffers by
identity."""

KERNEL_ARGS: dict[int, tuple[Any, list[Any]]] = {}
"""id(kernel) -> (kernel, the arguments it holds): what each ``cl.Kernel`` was last given,
so that a launch sets only what changed. Kept per kernel object, not per device, since the
arguments are the kernel object's state; the kernel is held so that its id stays its own
(pyopencl kernels take no weak references). A device's :meth:`~bbmm.devices.opencl.OpenCLDevice.close` drops
its context's kernels; a kernel not found here is given every argument."""

_KERNEL_ARGS_MAX = 4096

_UNSET = object()  # what a kernel not in KERNEL_ARGS holds: matches no argument


def set_changed(kernel: Any, args: Sequence[Any]) -> None:
    """Give ``kernel`` the arguments of ``args`` that differ from what it holds: scalars
    packed in one call, buffers (and None, a null buffer) in another."""
    held = KERNEL_ARGS.get(id(kernel))
    if held is None or len(held[1]) != len(args):
        if len(args) != kernel.num_args:
            raise TypeError(f"{kernel.function_name} takes {kernel.num_args} arguments, "
                            f"{len(args)} given")
        last: Sequence[Any] = ()
    else:
        last = held[1]
    packs: list[Any] = []
    bufs: list[Any] = []
    for i, a in enumerate(args):
        b = last[i] if last else _UNSET
        if a is b:
            continue
        t = type(a)
        c = _PACK.get(t)
        if c is not None:
            if type(b) is t and a == b:
                continue
            packs += (i, c, a)
        elif a is None or isinstance(a, cl.MemoryObjectHolder):
            bufs += (i, a)
        else:
            raise TypeError(f"argument {i} of {kernel.function_name}: a numpy scalar or "
                            f"a buffer is needed, not {t.__name__}")
    if packs:
        kernel._set_arg_buf_pack_multi(tuple(packs))
    if bufs:
        kernel._set_arg_multi(tuple(bufs))
    if held is None and len(KERNEL_ARGS) >= _KERNEL_ARGS_MAX:
        KERNEL_ARGS.clear()  # kernels of devices never closed: forgetting costs a full set
    KERNEL_ARGS[id(kernel)] = (kernel, list(args))


def forget(kernel: Any) -> None:
    """Forget what ``kernel`` holds (a failed launch leaves it unknown): its next launch
    sets every argument."""
    KERNEL_ARGS.pop(id(kernel), None)


def forget_context(context_ptr: int) -> None:
    """Forget the kernels of the context whose ``int_ptr`` is ``context_ptr`` (a device
    closing): they are no longer held."""
    for key, (k, _) in list(KERNEL_ARGS.items()):
        if k.context.int_ptr == context_ptr:
            del KERNEL_ARGS[key]

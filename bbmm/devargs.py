"""The devices the command line asks for: the options ``--devices``, ``--device-mem``,
``--platform``, ``--device-kind`` (:func:`add_device_options`) and the logical devices
they make (:func:`make_devices_from_args`), profiling with ``--profile``."""
from __future__ import annotations

import argparse
from typing import Any

from .diagnostic import UsageError, parse_bytes
from .profile import target

__all__ = ["add_device_options", "device_mem", "platform_arg", "make_devices_from_args",
           "profile_path"]


def add_device_options(p: argparse.ArgumentParser) -> None:
    """``--devices N``, ``--device-mem SIZE``, ``--platform P``, ``--device-kind K``."""
    g = p.add_argument_group("devices")
    g.add_argument("--devices", type=int, metavar="N", default=None,
                   help="number of logical devices (default: every GPU, or 1 CPU device); "
                        "more than the physical devices share them round-robin, each with "
                        "its own queue and memory")
    g.add_argument("--device-mem", metavar="SIZE", default=None,
                   help="memory cap per logical device, e.g. 256MiB or 2GiB (default: 90%% "
                        "of the physical device's memory, shared among its logical devices)")
    g.add_argument("--platform", metavar="P", default=None,
                   help="OpenCL platform: its index or part of its name (e.g. nvidia, pocl)")
    g.add_argument("--device-kind", choices=("auto", "gpu", "cpu"), default="auto",
                   help="which devices to use (default: GPUs, else the CPU)")


def device_mem(args: argparse.Namespace) -> int | None:
    """``--device-mem`` in bytes (None when not given)."""
    if args.device_mem is None:
        return None
    cap = parse_bytes(args.device_mem)
    if cap <= 0:
        raise UsageError(f"--device-mem must be positive, got {args.device_mem!r}")
    return cap


def platform_arg(args: argparse.Namespace) -> str | int | None:
    p = args.platform
    return int(p) if p is not None and p.isdigit() else p


def make_devices_from_args(args: argparse.Namespace, side: bool = True) -> list[Any]:
    """The logical devices of ``--devices``, ``--device-mem``, ``--platform``,
    ``--device-kind``; recording their commands with ``--profile`` (or $BBMM_PROFILE);
    ``side``: the run's :attr:`~bbmm.config.RuntimeConfig.side`."""
    from .devices.opencl import make_devices  # pyopencl: loaded when devices are made

    if args.devices is not None and args.devices < 1:
        raise UsageError(f"--devices must be at least 1, got {args.devices}")
    return make_devices(args.devices, cap=device_mem(args), platform=platform_arg(args),
                        kind=args.device_kind, node=getattr(args, "node", None),
                        profile=profile_path(args) is not None, side=side)


def profile_path(args: argparse.Namespace) -> str | None:
    """``--profile FILE``, else ``$BBMM_PROFILE``, else None; checked writable before the
    run (a one-line UsageError)."""
    return target(getattr(args, "profile", None))

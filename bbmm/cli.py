"""bbmm's command line: ``python -m bbmm <command>`` or ``bbmm <command>``.

Commands are registered in :data:`COMMANDS` as ``(name, help, add_arguments,
run)``; ``run(args) -> int`` returns the exit status. :func:`main` turns every
:class:`~bbmm.diagnostic.BBMMError` into one line ``bbmm: error: <message>`` on
stderr (exit 2 for usage errors, 1 otherwise); anything else is a bug and keeps
its traceback.

.. autofunction:: main
.. autofunction:: add_device_options
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any, Callable, Sequence

from .diagnostic import BBMMError, UsageError, format_bytes, parse_bytes

Command = tuple[str, str, Callable[[argparse.ArgumentParser], None],
                Callable[[argparse.Namespace], int]]


# {{{ shared option groups

def add_device_options(p: argparse.ArgumentParser) -> None:
    """``--devices N``, ``--device-mem SIZE``, ``--platform P``, ``--device-kind K``."""
    g = p.add_argument_group("devices")
    g.add_argument("--devices", type=int, metavar="N", default=None,
                   help="number of logical devices (default: every GPU, or 1 CPU device); "
                        "more than the physical devices share them round-robin, each with "
                        "its own context and memory")
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

# }}}


# {{{ bbmm devices

def _add_devices(p: argparse.ArgumentParser) -> None:
    add_device_options(p)
    p.add_argument("--json", action="store_true", help="print the listing as JSON")


def _run_devices(args: argparse.Namespace) -> int:
    from .devices.opencl import CAP_FRACTION, discover, plan_logical

    if args.devices is not None and args.devices < 1:
        raise UsageError(f"--devices must be at least 1, got {args.devices}")
    cap = device_mem(args)
    disc = discover(platform_arg(args), args.device_kind)
    chosen = {id(d) for d in disc.chosen}
    logical: list[dict[str, Any]] = []
    error: BBMMError | None = None
    try:
        for i, p, sharers in plan_logical(args.devices, disc):
            c = cap if cap is not None else int(CAP_FRACTION * p.global_mem) // sharers
            logical.append({"name": f"cl{i}", "index": i, "platform_index": p.platform_index,
                            "device_index": p.index, "device": p.name, "cap": c,
                            "shares_physical_with": sharers - 1})
    except BBMMError as e:
        error = e
    if args.json:
        doc = {"devices": [{**d.as_dict(), "used": id(d) in chosen} for d in disc.devices],
               "logical": logical, "hint": disc.hint, "problems": list(disc.problems)}
        print(json.dumps(doc, indent=2))
    else:
        _print_devices(disc, chosen, logical)
    if error is not None:
        raise error
    return 0


def _print_devices(disc: Any, chosen: set[int], logical: list[dict[str, Any]]) -> None:
    if not disc.devices:
        print("no OpenCL platform or device found")
    platform = None
    for d in disc.devices:
        if d.platform_index != platform:
            platform = d.platform_index
            print(f"platform {platform}: {d.platform} ({d.platform_version})")
            print(f"  {'use':3}  {'id':5}  {'type':4}  {'global mem':>11}  {'max alloc':>11}  name")
        mark = "*" if id(d) in chosen else ""
        print(f"  {mark:3}  {d.platform_index}:{d.index:<3}  {d.type:4}  "
              f"{format_bytes(d.global_mem):>11}  {format_bytes(d.max_alloc):>11}  {d.name}")
    for p in disc.problems:
        print(f"warning: {p}")
    if logical:
        print(f"bbmm would use {len(logical)} logical device(s), each with its own context "
              f"and memory:")
        for lg in logical:
            shared = (f", shares its device with {lg['shares_physical_with']} other(s)"
                      if lg["shares_physical_with"] else "")
            print(f"  {lg['name']}  on {lg['platform_index']}:{lg['device_index']} "
                  f"{lg['device']}, cap {format_bytes(lg['cap'])}{shared}")
    if disc.hint:
        print(f"hint: {disc.hint}")

# }}}


COMMANDS: list[Command] = [
    ("devices", "list OpenCL devices and the logical devices bbmm would make",
     _add_devices, _run_devices),
]


def _version() -> str:
    try:
        from . import __version__
    except ImportError:  # bbmm imported as a namespace package (a stale editable install)
        from importlib.metadata import version
        return version("bbmm")
    return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bbmm",
        description="Bounding-box-based memory manager for affine loop nests on several "
                    "GPUs (Ramashekar & Bondhugula, TACO 2013).")
    parser.add_argument("--version", action="version", version=f"bbmm {_version()}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="log more (-v: info, -vv: debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, help_, add, run in COMMANDS:
        p = sub.add_parser(name, help=help_, description=help_)
        add(p)
        p.set_defaults(run=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (0 ok, 1 error, 2 usage error)."""
    parser = build_parser()
    args = parser.parse_args(argv)  # exits 2 with argparse's message on bad usage
    level = {0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
    logging.basicConfig(level=level, format="bbmm: %(name)s: %(message)s")
    try:
        return args.run(args)
    except UsageError as e:
        print(f"bbmm: error: {e}", file=sys.stderr)
        return 2
    except BBMMError as e:
        print(f"bbmm: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bbmm: interrupted", file=sys.stderr)
        return 130

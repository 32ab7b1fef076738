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

from .console import (OneLineParser, exit_interrupted, one_line, one_line_warnings,
                      run_with_errors, watch_interrupts)
from .devargs import add_device_options, device_mem, make_devices_from_args, platform_arg
from .diagnostic import BBMMError, CheckError, UsageError, format_bytes
from .program import check_init_flags, compile_args, prepare_run
from .run import (add_run_options, check_against_reference, check_output, host_profile,
                  host_profile_folder, profile_path, report, report_header, report_stream,
                  write_json)
from .version import __version__

__all__ = ["main", "build_parser", "run_json", "COMMANDS", "add_device_options",
           "make_devices_from_args", "platform_arg", "device_mem", "prepare_run",
           "check_init_flags", "run_with_errors", "OneLineParser"]

Command = tuple[str, str, Callable[[argparse.ArgumentParser], None],
                Callable[[argparse.Namespace], int]]


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
        for i, p, sharers in plan_logical(args.devices, disc, cap=cap):
            c = cap if cap is not None else int(CAP_FRACTION * p.global_mem) // sharers
            logical.append({"name": f"cl{i}", "index": i, "platform_index": p.platform_index,
                            "device_index": p.index, "device": p.name, "cap": c,
                            "shares_physical_with": sharers - 1})
    except BBMMError as e:
        error = e
    if args.json:
        doc = {**report_header("bbmm-devices"),
               "devices": [{**d.as_dict(), "used": id(d) in chosen} for d in disc.devices],
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
        print(f"bbmm would use {len(logical)} logical device(s), one context over their "
              f"devices, each with its own queue and memory cap:")
        for lg in logical:
            shared = (f", shares its device with {lg['shares_physical_with']} other(s)"
                      if lg["shares_physical_with"] else "")
            print(f"  {lg['name']}  on {lg['platform_index']}:{lg['device_index']} "
                  f"{lg['device']}, cap {format_bytes(lg['cap'])}{shared}")
    if disc.hint:
        print(f"hint: {disc.hint}")

# }}}


# {{{ bbmm compile / bbmm run

def _add_source(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="?", default=None,
                   help="C file holding the kernel function (or --example NAME)")
    p.add_argument("--example", metavar="NAME", default=None,
                   help="one of the example kernels shipped with bbmm instead of FILE "
                        "(bbmm examples lists them: floyd, heat2d, mvt...)")
    p.add_argument("--function", metavar="NAME", default=None,
                   help="the kernel function (default: the one holding '#pragma scop', else "
                        "the file's only loop-nest function other than main and init_*)")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                   help="define a preprocessor macro (repeatable)")
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="add DIR to the include search path (repeatable)")
    p.add_argument("sources", nargs="*", metavar="MORE.c", default=[],
                   help="more C sources that the sequential C build (--init, --check) "
                        "compiles and links with FILE, as cc takes them (the definitions of "
                        "functions that --init calls); when FILE includes polybench.h, the "
                        "polybench.c beside it is taken without being named")
    p.add_argument("--extra-source", dest="extra_sources", action="append", default=[],
                   metavar="FILE", help="the same as MORE.c (repeatable)")
    p.add_argument("--schedule", choices=("as-written", "isl", "auto"), default="auto",
                   help="the loop order: the loops as written, isl's scheduler (a legal order "
                        "with outer parallel loops: a wavefront, an interchange), or auto "
                        "(default): isl's where the loops as written leave statements "
                        "without an outer parallel loop and isl's order has more")
    p.add_argument("--reassociate", action="store_true",
                   help="let floating-point sums into a scalar ('s += A[i][j] * x[j]') run "
                        "as partial sums over a loop's iterations, which then run in "
                        "parallel: the additions in another order, as -ffast-math allows "
                        "(the result's rounding differs from the C program's; --check's "
                        "tolerance: docs/cli.md)")


def resolve_example(args: argparse.Namespace) -> None:
    """``--example NAME`` becomes ``args.file``, the shipped C file (:mod:`bbmm.example`);
    a file given as well, or neither, is a UsageError."""
    if not hasattr(args, "example"):
        return
    if args.example is not None:
        if args.file is not None:
            raise UsageError(f"--example {args.example} and the file {args.file}: give "
                             f"one of them")
        from .example import path
        args.file = str(path(args.example))
    elif args.file is None:
        raise UsageError("a C file (or --example NAME: bbmm examples lists them) is needed")


def _add_compile(p: argparse.ArgumentParser) -> None:
    _add_source(p)
    p.add_argument("-o", "--output", metavar="DIR", default=None,
                   help="write <kernel>.cl and the host driver <kernel>_host.py into DIR")
    p.add_argument("--split-all", action="store_true",
                   help="treat every access as split over boxes (worst case, Figure 10(c))")
    g = p.add_argument_group("debugging")
    g.add_argument("--dump-scop", action="store_true", help="print domains and accesses")
    g.add_argument("--dump-deps", action="store_true", help="print the dependences")
    g.add_argument("--dump-kernels", action="store_true", help="print the OpenCL source")
    g.add_argument("--dump-host", action="store_true", help="print the host driver")
    g.add_argument("--explain", action="store_true", help="print everything above")


def _run_compile(args: argparse.Namespace) -> int:
    import os

    if args.output and os.path.exists(args.output) and not os.path.isdir(args.output):
        raise UsageError(f"-o {args.output}: exists and is not a folder (-o names the folder "
                         f"to write <kernel>.cl and <kernel>_host.py into)")
    prog = compile_args(args)        # bbmm.compile: the API's compilation and cache
    compiled = prog.compiled
    print(compiled.summary())
    if args.dump_scop or args.explain:
        for st in compiled.scop.statements:
            print(f"{st.name}: {st.domain}")
            for a in st.accesses:
                print(f"  {a.kind:5} {a.text}: {a.relation}")
    if args.dump_deps or args.explain:
        from bbmm.codegen.deps import dependences
        d = dependences(compiled.scop)
        print(f"flow: {d.flow}")
        print(f"all:  {d.all}")
    if args.dump_kernels or args.explain:
        print(compiled.kernel_source)
    if args.dump_host or args.explain:
        print(compiled.host_source)
    if args.output:
        from bbmm.codegen.compile import write_program
        try:
            cl, py = write_program(compiled, args.output)
        except OSError as e:
            raise UsageError(f"-o {args.output}: cannot write: {e.strerror or e}") from None
        print(f"wrote {cl} and {py}")
    return 0


def _add_run(p: argparse.ArgumentParser) -> None:
    _add_source(p)
    add_device_options(p)
    add_run_options(p)
    p.add_argument("--check", action="store_true",
                   help="compare every array with the sequential C program (system compiler)")
    p.add_argument("--no-init", action="store_true",
                   help="ignore init_<kernel> and fill arrays with seeded random data")
    p.add_argument("--init", metavar="FUNC", default=None,
                   help="fill the arrays by calling the file's function FUNC (e.g. "
                        "PolyBench's init_array), its parameters matched to the kernel's by "
                        "name; scalars it returns through pointers become the kernel's")


def _run_run(args: argparse.Namespace) -> int:
    from bbmm.codegen.compile import CompileOptions

    from .config import RuntimeConfig
    from .procs import resolve_procs, run_procs
    # this process's run, read once (over processes or ranks: each reads its own)
    config = RuntimeConfig.from_env(tune=args.tune)
    options = CompileOptions.from_env(tune=args.tune)
    procs = resolve_procs(args)  # refuses --procs P > 1 with --mpi
    if args.mpi:  # every rank of mpiexec -n R runs this (bbmm/mpirun.py)
        from .mpirun import run_cli
        return run_cli(args)
    if procs > 1:  # one process per share of the devices (bbmm/procs.py)
        return run_procs(args, procs)

    check_init_flags(args)
    profile = profile_path(args)  # a bad path fails now, not after the run
    check_output(args.json, "--json")
    pyprof = host_profile_folder(args)
    prog = compile_args(args, options)  # bbmm.compile (bbmm.api)
    scop = prog.compiled.scop
    run = prepare_run(args, prog, config)  # --param, the devices, the inputs, the reference
    with host_profile(pyprof):
        res = prog.execute(run.params, run.scalars, run.init, devices=run.devices,
                           tile=args.tile, mode=args.mode, reuse=not args.no_reuse,
                           coherence=args.coherence,
                           progress=False if args.no_progress else None,
                           replay=False if args.no_replay else None, fuse=args.fuse,
                           profile=profile, config=config)
    if args.check:
        check_against_reference(res, prog.path, scop, run.init, prog.defines, lib=run.lib,
                                include_dirs=list(prog.include_dirs))
    out = report_stream(args.json)
    print(report(res, scop.function, scop.returns), file=out)
    for m in res.mismatches:
        print(f"  mismatch: {m}", file=out)
    if args.json:
        write_json(args.json, prog.stats(res).as_dict())
    if res.check == "fail":
        raise CheckError(f"{scop.function}: result differs from the sequential program "
                         f"({res.mismatches[0]})")
    return 0

# }}}


# {{{ bbmm examples

def _add_examples(p: argparse.ArgumentParser) -> None:
    p.add_argument("--folder", action="store_true",
                   help="print only the folder that holds them (to copy one and edit it)")


def _run_examples(args: argparse.Namespace) -> int:
    from . import example

    if args.folder:
        print(example.folder())
        return 0
    known = example.names()
    width = max(len(n) for n in known)
    for name in known:
        print(f"{name:{width}}  {example.describe(name)}")
    return 0

# }}}


# {{{ bbmm timeline

def _add_timeline(p: argparse.ArgumentParser) -> None:
    from .timeline import add_arguments
    add_arguments(p)


def _run_timeline(args: argparse.Namespace) -> int:
    from .timeline import run
    return run(args)

# }}}


# {{{ bbmm cache

def _add_cache(p: argparse.ArgumentParser) -> None:
    p.add_argument("--clear", action="store_true",
                   help="remove every cached driver and reference library")


def _run_cache(args: argparse.Namespace) -> int:
    from . import cache

    base = cache.root()
    use = cache.usage(base)
    if args.clear:
        freed = cache.clear(base)
        print(f"cleared {base} ({format_bytes(freed)})")
        return 0
    total = sum(b for _, b in use.values())
    print(f"{base}: {format_bytes(total)} ("
          + ", ".join(f"{n} {sub}" for sub, (n, _) in use.items())
          + f"; kept under {format_bytes(cache.max_bytes())} and {cache.MAX_ENTRIES} entries "
            f"per folder; BBMM_CACHE moves it, bbmm cache --clear empties it)")
    return 0

# }}}


COMMANDS: list[Command] = [
    ("devices", "list OpenCL devices and the logical devices bbmm would make",
     _add_devices, _run_devices),
    ("compile", "compile a C kernel: print its boxes, write kernels and a host driver",
     _add_compile, _run_compile),
    ("run", "compile (cached) and run a C kernel on the devices, optionally --check it",
     _add_run, _run_run),
    ("examples", "list the example kernels shipped with bbmm (bbmm run --example NAME runs "
                 "one)", _add_examples, _run_examples),
    ("timeline", "summarize a trace written by bbmm run --profile FILE (idle gaps, the "
                 "busiest kernels and copies, per tile, the host's steps and pauses)",
     _add_timeline, _run_timeline),
    ("cache", "print where the cache of drivers and reference libraries is and its size; "
              "--clear empties it", _add_cache, _run_cache),
]


def _version() -> str:
    return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
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
        # -v after the command too (bbmm run -v ...), added to the one before it
        p.add_argument("-v", "--verbose", dest="sub_verbose", action="count", default=0,
                       help="log more (-v: info, -vv: debug)")
        add(p)
        p.set_defaults(run=run)
    return parser


def run_json(argv: Sequence[str]) -> dict[str, Any]:
    """``bbmm run ...`` in this process, its console captured: the run's ``--json``
    statistics (for scripts that time runs side by side); RuntimeError with the console
    when it fails."""
    import contextlib
    import io
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bbmm.json")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = main(list(argv) + ["--json", path])
        if rc != 0 or not os.path.exists(path):
            raise RuntimeError(f"bbmm {' '.join(argv)} failed (exit {rc}):\n{out.getvalue()}")
        with open(path) as f:
            return json.load(f)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (0 ok, 1 error, 2 usage error). Called as
    the program (``argv`` None), a Ctrl-C ends the process within a second (status 130)."""
    program = argv is None
    if program:
        watch_interrupts()
    try:
        parser = build_parser()
    except UsageError as e:
        print(f"bbmm: error: {one_line(e)}", file=sys.stderr)
        return 2
    # exits 2 with one line on bad usage; C sources after the options (bbmm run k.c
    # --check more.c) are more of FILE's, which argparse alone would not take there
    args, rest = parser.parse_known_args(argv)
    if rest and hasattr(args, "sources") and not any(r.startswith("-") for r in rest):
        args.sources = list(args.sources) + rest
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    one_line_warnings()
    args.verbose += getattr(args, "sub_verbose", 0)
    level = {0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
    logging.basicConfig(level=level, format="bbmm: %(name)s: %(message)s")
    def go() -> int:
        resolve_example(args)
        return args.run(args)
    try:
        return run_with_errors(go)
    except MemoryError:
        print("bbmm: error: out of host memory (smaller --param sizes, or fewer copies: "
              "without --check)", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if program:
            exit_interrupted()
        print("bbmm: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into head & co.
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141

"""The loops as written against ``--schedule auto``, kernel by kernel: which order ``auto``
takes, which loops run in parallel under each, and (``--run``) the time per run of each
order on one device side by side.

Kernels: the PolyBench/C 4.2 ports of ``tests/kernels/pb42`` and the example programs of
``polybench/``. For each, the script compiles with ``--schedule as-written`` and with
``auto`` (``bbmm.codegen.compile.compile_program``; the same information ``bbmm compile``
prints) and records:

* ``auto_schedule``: the order ``auto`` took (``as-written`` or ``isl``) and why;
* ``written_parallel`` / ``auto_parallel``: the loops found parallel under each order
  (iterators; isl's order names its loops ``c0``, ``c1``...), and ``..._bands``: each
  kernel nest's parallel band (``-``: the nest runs as one work-item);
* ``written_one_item`` / ``auto_one_item``: nests that run as one work-item;
* with ``--run``: ``written_s`` and ``auto_s``, the median wall time of a run (the
  driver's ``run``: kernels, transfers and host steps, compile excluded) over
  ``--repeat`` runs after ``--warmup``, and ``speedup = written_s / auto_s`` (> 1: the
  order auto takes is faster). Where ``auto`` keeps the loops as written the two
  programs are the same: one measurement fills both columns. ``--check`` compares the
  first run of each order with the sequential C program (``written_check``,
  ``auto_check``).

Sizes: ``--sizes tiny`` (the e2e tests' sizes) or ``small`` (a few seconds on a 2-core
CPU with PoCL); GPU sizes by ``--param [KERNEL:]NAME=VALUE`` (``--param n=4000`` sets
every kernel's ``n``). ``--devices`` is one device count (default 1).

CPU (PoCL)::

    python scripts/exp_schedule.py --run --sizes small --markdown

GPU (one device; sizes by --param)::

    python scripts/exp_schedule.py --run --param n=4000 --param m=4000 --markdown

Writes ``<out>/schedule.csv`` and ``.json``; ``--markdown`` prints the table in Markdown
too (and writes ``schedule.md``).
"""
from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any, Mapping, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import expcommon as ec  # noqa: E402

EXP = "schedule"
PB42 = ec.ROOT / "tests" / "kernels" / "pb42"

# kernel -> size preset -> parameters (integers, and the float scalars some kernels take)
PB42_SIZES: dict[str, dict[str, dict[str, float]]] = {
    "2mm": {"tiny": {"ni": 19, "nj": 21, "nk": 15, "nl": 17},
            "small": {"ni": 180, "nj": 190, "nk": 210, "nl": 220}},
    "3mm": {"tiny": {"ni": 19, "nj": 21, "nk": 15, "nl": 17, "nm": 13},
            "small": {"ni": 160, "nj": 180, "nk": 200, "nl": 220, "nm": 240}},
    "atax": {"tiny": {"m": 19, "n": 23}, "small": {"m": 390, "n": 410}},
    "bicg": {"tiny": {"m": 19, "n": 23}, "small": {"m": 390, "n": 410}},
    "cholesky": {"tiny": {"n": 21}, "small": {"n": 200}},
    "correlation": {"tiny": {"m": 15, "n": 17, "float_n": 17},
                    "small": {"m": 120, "n": 140, "float_n": 140}},
    "covariance": {"tiny": {"m": 15, "n": 17, "float_n": 17},
                   "small": {"m": 120, "n": 140, "float_n": 140}},
    "deriche": {"tiny": {"w": 23, "h": 19, "alpha": 0.25},
                "small": {"w": 320, "h": 240, "alpha": 0.25}},
    "doitgen": {"tiny": {"nr": 5, "nq": 7, "np": 9}, "small": {"nr": 25, "nq": 20, "np": 30}},
    "durbin": {"tiny": {"n": 23}, "small": {"n": 200}},
    "gemver": {"tiny": {"n": 21}, "small": {"n": 400}},
    "gesummv": {"tiny": {"n": 21}, "small": {"n": 250}},
    "gramschmidt": {"tiny": {"m": 21, "n": 15}, "small": {"m": 120, "n": 100}},
    "jacobi1d": {"tiny": {"tsteps": 5, "n": 37}, "small": {"tsteps": 40, "n": 2000}},
    "ludcmp": {"tiny": {"n": 21}, "small": {"n": 120}},
    "nussinov": {"tiny": {"n": 23}, "small": {"n": 120}},
    "seidel2d": {"tiny": {"tsteps": 3, "n": 13}, "small": {"tsteps": 10, "n": 120}},
    "symm": {"tiny": {"m": 15, "n": 17}, "small": {"m": 120, "n": 140}},
    "syr2k": {"tiny": {"n": 17, "m": 15}, "small": {"n": 140, "m": 120}},
    "syrk": {"tiny": {"n": 17, "m": 15}, "small": {"n": 140, "m": 120}},
    "trmm": {"tiny": {"m": 15, "n": 17}, "small": {"m": 120, "n": 140}},
}


def kernel_paths() -> dict[str, Path]:
    """Every kernel the table covers: the pb42 ports, then the example programs."""
    out = {p.stem: p for p in sorted(PB42.glob("*.c"))}
    for name, info in ec.PROGRAMS.items():
        out.setdefault(name, info.path)
    return out


def kernel_list(args: Any, known: Mapping[str, Path]) -> list[str]:
    if args.programs in ("all", ""):
        return list(known)
    names = [x.strip() for x in args.programs.split(",") if x.strip()]
    bad = [n for n in names if n not in known]
    if bad:
        raise SystemExit(f"--programs: unknown {', '.join(bad)} (known: {', '.join(known)})")
    return names


def base_sizes(name: str, sizes: str) -> dict[str, float]:
    """The preset of ``name`` (``paper``: the example programs' Table IV sizes; the pb42
    ports have none, their GPU sizes come from --param)."""
    if name in PB42_SIZES:
        preset = PB42_SIZES[name]
        return dict(preset.get(sizes, preset["small"]))
    info = ec.PROGRAMS[name]
    return {**info.sizes[sizes], **info.scalars}


def sized(args: Any, name: str) -> dict[str, float]:
    """The preset with the ``--param [KERNEL:]NAME=VALUE`` overrides (a name the kernel
    does not have is skipped unless the override names the kernel)."""
    return ec.override_params(base_sizes(name, args.sizes), args.param, name, "KERNEL")


def compile_both(path: Path) -> tuple[Any, Any]:
    """``(as-written, auto)`` programs of one kernel (warnings, such as "runs as a single
    work-item", are the table's to show, not stderr's)."""
    from bbmm.codegen.compile import compile_program

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (compile_program(path, schedule="as-written"),
                compile_program(path, schedule="auto"))


def loops_of(prog: Any) -> dict[str, Any]:
    """Which loops run in parallel in a compiled program, from its plan (what ``bbmm
    compile`` prints as ``parallel band [...]``)."""
    s, plan = prog.scop, prog.plan
    par = [s.loop(i).iterator for i in plan.parallel]
    bands = ["[" + ",".join(s.loop(b).iterator for b in n.band) + "]" if n.band else "-"
             for n in plan.nests]
    return {"parallel": ",".join(dict.fromkeys(par)) or "none",
            "bands": " ".join(bands),
            "one_item": sum(1 for n in plan.nests if not n.band)}


def time_run(name: str, prog: Any, params: Mapping[str, float], devs: Sequence[Any],
             args: Any) -> dict[str, Any]:
    """Median wall time of the driver's run (:func:`expcommon.measure`)."""
    from bbmm.reference import init_arrays
    from bbmm.codegen.compile import load_driver

    c = dict(prog.scop.c_names)       # model name -> C name (doitgen's np is np_)
    ints = {p: int(params[c.get(p, p)]) for p in prog.scop.int_params}
    scal = {p: float(params[c.get(p, p)]) for p, _ in prog.scop.float_params
            if c.get(p, p) in params}
    arrays, scalars = init_arrays(prog.scop, ints, seed=0, scalars=scal)
    bench = ec.Bench(name, prog, load_driver(prog), ints, scalars, arrays)
    m = ec.measure(bench, devs, tile=args.tile, repeat=args.repeat, warmup=args.warmup,
                   check=args.check)
    return {"s": m.fig.get("wall_s"), "tiles": m.fig.get("tiles"), "error": m.error,
            "check": m.fig.get("check")}


def markdown(rows: Sequence[Mapping[str, Any]], timed: bool) -> str:
    head = ["kernel", "auto takes", "parallel as written", "parallel under auto"]
    if timed:
        head += ["size", "as written (s)", "auto (s)", "speedup"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def f(v: Any, spec: str = ".4f") -> str:
        return "-" if v is None or v == "" else format(v, spec)

    for r in rows:
        cells = [r["kernel"], r["auto_schedule"],
                 f"{r['written_parallel']} {r['written_bands']}",
                 f"{r['auto_parallel']} {r['auto_bands']}"]
        if timed:
            cells += [r.get("params", ""), f(r.get("written_s")), f(r.get("auto_s")),
                      f(r.get("speedup"), ".2f")]
        out.append("| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    known = kernel_paths()
    p = ec.make_parser(EXP, __doc__, programs=list(known), devices="1", sizes="small",
                       repeat=3)
    p.add_argument("--run", action="store_true",
                   help="also time a run of each order on the devices (default: compile "
                        "only)")
    p.add_argument("--markdown", action="store_true",
                   help="print the table in Markdown too and write schedule.md")
    args = p.parse_args(argv)
    names = kernel_list(args, known)
    ndevs = ec.device_counts(args)
    if len(ndevs) != 1:
        raise SystemExit(f"--devices: one device count, got {args.devices!r}")
    outdir = ec.out_dir(args)
    rows: list[dict[str, Any]] = []
    note = "compile only"
    ds = ec.DeviceSet(ec.device_mem(args), args.platform) if args.run else None
    bar = ec.Progress(len(names), EXP, False if args.no_progress else None)
    try:
        for name in names:
            bar.show(name)
            written, auto = compile_both(known[name])
            lw, la = loops_of(written), loops_of(auto)
            row: dict[str, Any] = {
                "kernel": name, "source": str(known[name].relative_to(ec.ROOT)),
                "auto_schedule": auto.schedule, "auto_note": auto.schedule_note,
                "written_parallel": lw["parallel"], "written_bands": lw["bands"],
                "written_one_item": lw["one_item"],
                "auto_parallel": la["parallel"], "auto_bands": la["bands"],
                "auto_one_item": la["one_item"]}
            if ds is not None:
                devs = ds.get(ndevs[0])
                note = ec.device_note(devs)
                params = sized(args, name)
                row["params"] = " ".join(f"{k}={v}" for k, v in params.items())
                tw = time_run(name, written, params, devs, args)
                ta = tw if auto.schedule == "as-written" else \
                    time_run(name, auto, params, devs, args)
                row.update({"ndev": ndevs[0], "written_s": tw["s"], "auto_s": ta["s"],
                            "written_tiles": tw["tiles"], "auto_tiles": ta["tiles"],
                            "written_check": tw["check"], "auto_check": ta["check"],
                            "error": tw["error"] or ta["error"]})
                if tw["s"] and ta["s"]:
                    row["speedup"] = tw["s"] / ta["s"]
            rows.append(row)
            bar.step(what=name)
    finally:
        bar.close()
        if ds is not None:
            ds.close()
    cols = [("kernel", "kernel", ""), ("auto_schedule", "auto", ""),
            ("written_bands", "bands as written", ""), ("auto_bands", "bands under auto", "")]
    if args.run:
        cols += [("written_s", "as written s", ".4f"), ("auto_s", "auto s", ".4f"),
                 ("speedup", "speedup", ".2f")]
    text = f"Schedules: the loops as written against --schedule auto ({note})\n" + \
        ec.table(rows, cols)
    paths = ec.finish(EXP, args, outdir, rows, text, None, note=note)
    if args.markdown:
        md = markdown(rows, args.run)
        (outdir / f"{EXP}.md").write_text(md + "\n")
        print("\n" + md)
        print(f"\nwrote {outdir / f'{EXP}.md'}")
    return 0 if paths else 1


if __name__ == "__main__":
    sys.exit(main())

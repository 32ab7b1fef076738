"""bbmm against the hand-written OpenCL baselines, side by side (paper Section 11.2.7,
Figure 10(f): relative performance of BBMM's code against manually written OpenCL).

For each program and device count, on the same devices and sizes:

* **bbmm**: ``bbmm.cli.main(["run", "polybench/<prog>.c", "--param", ..., "--devices",
  N, "--json", PATH, "--no-progress"])`` (in this process); its time is the JSON's
  ``wall_s`` (the driver's run: allocation, read-in, the loop, write-back);
* **baseline**: ``scripts/baselines/<prog>.py``'s ``run`` on a team of N logical
  devices made once (one context on GPUs); its ``time_s`` covers the same steps.

Each side runs once to warm up (kernel caches, page-locked allocations), then
``--repeat`` times; the medians are compared per serial iteration (floyd: n
iterations of k, heat2d: tsteps, blackscholes: one). The table prints
``baseline/bbmm``, the paper's relative performance of BBMM (1.0: as fast as the
hand-written code; the paper reports at least 0.88), plus each side's largest
per-device allocation and its flow-out volume (device -> host coherence bytes).

Usage::

    python3 scripts/baselines/compare.py --preset cpu --devices 1,2,3
    python3 scripts/baselines/compare.py --preset paper --devices 1,2 --repeat 3 \\
        --out $OUT/compare.json        # also writes compare.csv beside it
    python3 scripts/baselines/compare.py --programs floyd --param floyd:n=8192 --devices 2

On a GPU machine (two H200s; set-up in docs/gpu.md), from the project root::

    python3 scripts/baselines/compare.py --preset gpu \
        --devices 1,2 --repeat 2 --out $OUT/gpu.json

Two bbmm figures: *fresh* (``bbmm run`` as above: each run makes new contexts and
pools, creates its arenas and builds its kernels from the driver's cache inside the
clock) and *kept* (``bbmm.run.execute`` on devices made once per device count, like the
baseline's team: kernels already built and pool arenas already made by the warm-up, as
in an application that calls the kernel more than once; host arrays pinned once and
refilled outside the clock). The baselines build their kernels before the clock starts
and create their buffers inside it. ``ratio`` is baseline / fresh, ``ratio_kept``
baseline / kept.

``--param prog:name=value`` overrides a preset size; ``--check`` also checks both
sides (bbmm against the C program, the baseline against numpy) where small enough.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
import time
from typing import Any

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
if __package__:  # imported as scripts.baselines.compare
    from . import blackscholes, floyd, heat2d
    from .common import Team, compare_arrays
else:  # run as a script
    sys.path.insert(0, _HERE)
    import blackscholes  # noqa: E402
    import floyd  # noqa: E402
    import heat2d  # noqa: E402
    from common import Team, compare_arrays  # noqa: E402

PROGRAMS = ("floyd", "heat2d", "blackscholes")

PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    # seconds on a small CPU
    "ci": {"floyd": {"n": 64}, "heat2d": {"tsteps": 4, "n": 64},
           "blackscholes": {"n": 4096}},
    "cpu": {"floyd": {"n": 512}, "heat2d": {"tsteps": 10, "n": 1024},
            "blackscholes": {"n": 1 << 20}},
    # GPUs, well under the paper's sizes (a minute or two for everything)
    "gpu": {"floyd": {"n": 8192}, "heat2d": {"tsteps": 50, "n": 8192},
            "blackscholes": {"n": 1 << 24}},
    # Table IV's array sizes (float); heat2d's time steps are ours
    "paper": {"floyd": {"n": 16384}, "heat2d": {"tsteps": 100, "n": 12288},
              "blackscholes": {"n": 67108864}},
}
SCALARS = {"blackscholes": {"riskfree": 0.02, "volatility": 0.30}}
INT_PARAMS = {"floyd": ("n",), "heat2d": ("tsteps", "n"), "blackscholes": ("n",)}


def iterations_of(prog: str, params: dict[str, Any]) -> int:
    if prog == "floyd":
        return int(params["n"])
    if prog == "heat2d":
        return int(params["tsteps"])
    return 1


# {{{ the two sides

def bbmm_once(prog: str, params: dict[str, Any], devices: int, args: argparse.Namespace,
              check: bool = False) -> dict[str, Any]:
    from bbmm.cli import run_json

    argv = ["run", os.path.join(_ROOT, "polybench", f"{prog}.c")]
    for k, v in {**params, **SCALARS.get(prog, {})}.items():
        argv += ["--param", f"{k}={v}"]
    argv += ["--devices", str(devices), "--no-progress"]
    if args.platform is not None:
        argv += ["--platform", args.platform]
    if args.device_kind != "auto":
        argv += ["--device-kind", args.device_kind]
    if getattr(args, "procs", None) is not None:
        argv += ["--procs", str(args.procs)]
    for item in getattr(args, "tune", None) or ():
        argv += ["--tune", item]
    if check:
        argv.append("--check")
    return run_json(argv)


_DRIVERS: dict[str, Any] = {}


def _driver(prog: str) -> Any:
    """The compiled driver module of ``polybench/<prog>.c`` (once per process)."""
    if prog not in _DRIVERS:
        from bbmm.codegen.compile import compile_program, load_driver
        _DRIVERS[prog] = load_driver(compile_program(
            os.path.join(_ROOT, "polybench", f"{prog}.c")))
    return _DRIVERS[prog]


def bbmm_kept_once(prog: str, params: dict[str, Any], devs: list[Any],
                   arrays: dict[str, np.ndarray], init: dict[str, np.ndarray]
                   ) -> dict[str, Any]:
    """One bbmm run on devices kept from run to run (see the module docstring)."""
    from bbmm.run import execute

    for k, v in init.items():
        arrays[k][...] = v
    res = execute(_driver(prog), devs, {k: int(v) for k, v in params.items()},
                  dict(SCALARS.get(prog, {})), arrays, progress=False)
    res.runtime.release_all()          # boxes back to the pools, which keep their arenas
    return res.as_json(prog)


MODULES = {"floyd": floyd, "heat2d": heat2d, "blackscholes": blackscholes}


def baseline_arrays(prog: str, params: dict[str, Any], team: Team, seed: int = 0
                    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(initial arrays, pinned working arrays) with bbmm's inputs for ``prog``."""
    if prog == "floyd":
        init = {"path": floyd.init_floyd(params["n"])}
    elif prog == "heat2d":
        init = heat2d.init_heat2d(params["n"], seed)
    else:
        init = blackscholes.init_blackscholes(params["n"])
    work = {k: team.pinned(v.shape, v.dtype) for k, v in init.items()}
    return init, work


def baseline_check(prog: str, params: dict[str, Any], init: dict[str, np.ndarray],
                   got: dict[str, np.ndarray]) -> str:
    ref = {k: v.copy() for k, v in init.items()}
    n = params["n"]
    if prog == "floyd":
        if n ** 3 > 4e9:
            return "skipped"
        floyd.reference(ref["path"])
        tol = 0.0
    elif prog == "heat2d":
        if params["tsteps"] * n * n > 2e9:
            return "skipped"
        heat2d.reference(ref["A"], ref["B"], params["tsteps"])
        tol = 1e-5
    else:
        blackscholes.reference(ref, **SCALARS["blackscholes"])
        tol = 1e-4
    bad = [m for m in (compare_arrays(k, got[k], ref[k], tol) for k in ref) if m]
    return "pass" if not bad else "FAIL: " + "; ".join(bad)

# }}}


def compare_one(prog: str, params: dict[str, Any], devices: int, team: Team,
                args: argparse.Namespace, kept: list[Any] | None = None) -> dict[str, Any]:
    iters = iterations_of(prog, params)
    mod = MODULES[prog]
    init, work = baseline_arrays(prog, params, team)
    bparams = {**params, **SCALARS.get(prog, {})}

    def base_once() -> dict[str, Any]:
        for k, v in init.items():
            work[k][...] = v
        return mod.run(team, bparams, work)

    small = args.check
    # warm-up (a checked run where asked), then the timed repeats
    bb_runs, base_runs, kept_runs = [], [], []
    bb_warm = bbmm_once(prog, params, devices, args, check=small)
    base_warm = base_once()
    base_check = baseline_check(prog, params, init, work) if small else "skipped"
    if kept is not None:
        from bbmm.run import host_arrays
        kept_arrays = host_arrays(_driver(prog), params, kept)    # pinned once
        bbmm_kept_once(prog, params, kept, kept_arrays, init)     # its warm-up
    for _ in range(args.repeat):
        bb_runs.append(bbmm_once(prog, params, devices, args))
        base_runs.append(base_once())
        if kept is not None:
            kept_runs.append(bbmm_kept_once(prog, params, kept, kept_arrays, init))
    bb_s = statistics.median(r["wall_s"] for r in bb_runs)
    base_s = statistics.median(r["time_s"] for r in base_runs)
    base_loop = statistics.median(r["loop_s"] for r in base_runs)
    kept_check = "skipped"
    if kept_runs and small:   # the last kept run, on pools and kernels the others left
        kept_check = baseline_check(prog, params, init, kept_arrays).replace("FAIL", "fail")
    last_bb, last_base = bb_runs[-1], base_runs[-1]
    kept_s = statistics.median(r["wall_s"] for r in kept_runs) if kept_runs else float("nan")
    return {
        "program": prog, "params": params, "devices": devices, "iterations": iters,
        "device_names": last_base["device_names"], "shared_context": last_base["shared_context"],
        "repeat": args.repeat,
        "bbmm_s_per_iter": bb_s / iters, "baseline_s_per_iter": base_s / iters,
        "ratio": (base_s / bb_s) if bb_s > 0 else float("nan"),
        "bbmm_kept_s_per_iter": kept_s / iters,
        "ratio_kept": base_s / kept_s if kept_s > 0 else float("nan"),
        "bbmm_kept_wall_s": [r["wall_s"] for r in kept_runs],
        "baseline_loop_s_per_iter": base_loop / iters,
        "bbmm_wall_s": [r["wall_s"] for r in bb_runs],
        "baseline_time_s": [r["time_s"] for r in base_runs],
        "bbmm_compute_s": statistics.median(r["time_s"]["compute"] for r in bb_runs),
        "bbmm_overhead_percent": statistics.median(r["overhead_percent"] for r in bb_runs),
        "bbmm_peak_bytes": [d["peak_bytes"] for d in last_bb["per_device"]],
        "baseline_alloc_bytes": last_base["alloc_bytes"],
        "bbmm_flowout_bytes": last_bb["flowout_bytes"],
        "baseline_flowout_bytes": last_base["flowout_bytes"],
        "baseline_coherence_bytes": last_base["coherence_bytes"],
        "baseline_host_waits_in_loop": last_base["host_waits_in_loop"],
        "bbmm_check": bb_warm.get("check", "skipped"), "baseline_check": base_check,
        "bbmm_kept_check": kept_check,
        "warmup": {"bbmm_wall_s": bb_warm["wall_s"], "baseline_time_s": base_warm["time_s"]},
    }


def fmt_params(p: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in p.items())


def print_table(rows: list[dict[str, Any]]) -> None:
    hdr = (f"{'program':13} {'params':18} {'dev':>3}  {'bbmm s/iter':>12} {'baseline s/iter':>15}"
           f" {'base/bbmm':>9} {'kept s/iter':>11} {'base/kept':>9}  "
           f"{'alloc/dev MiB bbmm|base':>23}  {'flow-out MiB bbmm|base':>22}")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        mib = 2 ** 20
        alloc = f"{max(r['bbmm_peak_bytes']) / mib:.2f}|{max(r['baseline_alloc_bytes']) / mib:.2f}"
        flow = f"{r['bbmm_flowout_bytes'] / 2**20:.2f}|{r['baseline_flowout_bytes'] / 2**20:.2f}"
        chk = ""
        if r["bbmm_check"] != "skipped" or r["baseline_check"] != "skipped":
            chk = (f"  check bbmm {r['bbmm_check']}, kept {r.get('bbmm_kept_check')}, "
                   f"baseline {r['baseline_check']}")
        print(f"{r['program']:13} {fmt_params(r['params']):18} {r['devices']:>3}  "
              f"{r['bbmm_s_per_iter']:>12.4g} {r['baseline_s_per_iter']:>15.4g} "
              f"{r['ratio']:>9.3f} {r['bbmm_kept_s_per_iter']:>11.4g} {r['ratio_kept']:>9.3f}  "
              f"{alloc:>23}  {flow:>22}{chk}")


def write_out(rows: list[dict[str, Any]], path: str, meta: dict[str, Any]) -> None:
    root, ext = os.path.splitext(path)
    json_path = path if ext == ".json" else root + ".json"
    csv_path = root + ".csv"
    with open(json_path, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    cols = ["program", "params", "devices", "iterations", "bbmm_s_per_iter",
            "baseline_s_per_iter", "ratio", "bbmm_kept_s_per_iter", "ratio_kept",
            "baseline_loop_s_per_iter", "bbmm_overhead_percent",
            "bbmm_peak_bytes_max", "baseline_alloc_bytes_max", "bbmm_flowout_bytes",
            "baseline_flowout_bytes", "bbmm_check", "baseline_check", "device"]
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow([r["program"], fmt_params(r["params"]), r["devices"], r["iterations"],
                        r["bbmm_s_per_iter"], r["baseline_s_per_iter"], r["ratio"],
                        r["bbmm_kept_s_per_iter"], r["ratio_kept"],
                        r["baseline_loop_s_per_iter"], r["bbmm_overhead_percent"],
                        max(r["bbmm_peak_bytes"]), max(r["baseline_alloc_bytes"]),
                        r["bbmm_flowout_bytes"], r["baseline_flowout_bytes"], r["bbmm_check"],
                        r["baseline_check"], "; ".join(sorted(set(r["device_names"])))])
    print(f"wrote {json_path} and {csv_path}")


def parse_overrides(items: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        prog, sep, rest = item.partition(":")
        name, eq, value = rest.partition("=")
        if not sep or not eq or prog not in PROGRAMS or name not in INT_PARAMS[prog]:
            raise SystemExit(f"--param {item!r}: expected PROG:NAME=VALUE with PROG one of "
                             f"{', '.join(PROGRAMS)} and NAME one of its sizes")
        out.setdefault(prog, {})[name] = int(value, 0)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--programs", default=",".join(PROGRAMS),
                   help="comma-separated subset of " + ", ".join(PROGRAMS))
    p.add_argument("--devices", default="1,2", help="comma-separated device counts")
    p.add_argument("--preset", choices=sorted(PRESETS), default="cpu")
    p.add_argument("--param", action="append", default=[], metavar="PROG:NAME=VALUE",
                   help="size override, e.g. floyd:n=4096 (repeatable)")
    p.add_argument("--repeat", type=int, default=3, help="timed runs per side after a warm-up")
    p.add_argument("--check", action="store_true",
                   help="check both sides' results in the warm-up run (small sizes)")
    p.add_argument("--platform", default=None)
    p.add_argument("--device-kind", choices=("auto", "gpu", "cpu"), default="auto")
    p.add_argument("--contexts", choices=("auto", "shared", "separate"), default="auto",
                   help="the baseline's contexts (auto: one shared context on GPUs)")
    p.add_argument("--no-kept", action="store_true",
                   help="time bbmm only as 'bbmm run' does (fresh devices per run)")
    p.add_argument("--out", default=None, metavar="PATH",
                   help="write the rows as JSON (PATH) and CSV (PATH with .csv)")
    args = p.parse_args(argv)
    progs = [s.strip() for s in args.programs.split(",") if s.strip()]
    for prog in progs:
        if prog not in PROGRAMS:
            raise SystemExit(f"unknown program {prog!r} (known: {', '.join(PROGRAMS)})")
    counts = [int(c) for c in args.devices.split(",")]
    sizes = {prog: dict(PRESETS[args.preset][prog]) for prog in PROGRAMS}
    for prog, over in parse_overrides(args.param).items():
        sizes[prog].update(over)
    platform = int(args.platform) if args.platform and args.platform.isdigit() else args.platform

    rows = []
    failed: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for dev in counts:
        team = Team.create(dev, kind=args.device_kind, platform=platform, contexts=args.contexts)
        kept = None
        if not args.no_kept:
            from bbmm.devices.opencl import make_devices
            kept = make_devices(dev, platform=platform, kind=args.device_kind)
        for prog in progs:
            t1 = time.perf_counter()
            try:
                row = compare_one(prog, sizes[prog], dev, team, args, kept)
            except Exception as e:  # noqa: BLE001 - one program's failure keeps the others'
                failed.append({"program": prog, "devices": dev, "error": str(e)})
                print(f"# {prog} {fmt_params(sizes[prog])} on {dev} device(s): failed: {e}",
                      file=sys.stderr, flush=True)
                continue
            rows.append(row)
            print(f"# {prog} {fmt_params(sizes[prog])} on {dev} device(s): bbmm "
                  f"{row['bbmm_s_per_iter']:.4g} s/iter, baseline {row['baseline_s_per_iter']:.4g}"
                  f" s/iter ({time.perf_counter() - t1:.1f} s)", flush=True)
        team.close()
        del team
        for d in kept or ():
            d.close()
    meta = {"preset": args.preset, "repeat": args.repeat, "total_s": time.perf_counter() - t0,
            "argv": sys.argv[1:] if argv is None else list(argv), "failed": failed}
    print()
    print_table(rows)
    if args.out:
        write_out(rows, args.out, meta)
    bad = [r for r in rows if str(r["bbmm_check"]).startswith("fail")
           or str(r.get("bbmm_kept_check")).startswith("fail")
           or str(r["baseline_check"]).startswith("FAIL")]
    return 1 if bad or failed else 0


if __name__ == "__main__":
    sys.exit(main())

# vim: foldmethod=marker

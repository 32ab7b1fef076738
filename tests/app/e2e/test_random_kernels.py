"""Randomized differential testing of the whole pipeline.

For each seed, ``tests/support/randprog.py`` draws a random valid program in the accepted subset;
``bbmm run --check`` then runs it on 1-4 logical devices with random options (4-7 time
steps half the time, so that steps repeat and are replayed; points per work-item
2x1, 1x3 or 3x4, so strips of rows slide register windows; inner loops staged in local
memory in three shapes half the time; tile,
a tight ``--device-mem`` forcing box-out, ``--mode convex``, ``--no-reuse``,
``--coherence block``) and compares every array with the sequential C program.

A handful of seeds also run with ``--schedule isl`` (:func:`test_random_kernel_isl_schedule`):
the loops isl's scheduler computes, where they are legal and can be written, against the
same sequential C program.

``BBMM_RANDOM_KERNELS=150`` raises the number of seeds (default 20);
``BBMM_RANDOM_SEED0=1000`` shifts them. A failure message carries the program text and
a command line that reproduces it.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shlex
import traceback
from pathlib import Path

import pytest

from bbmm.cli import main
from support import footprint
from support.needs import needs_cl  # skipped only without an OpenCL platform
from support.randprog import generate

pytestmark = pytest.mark.e2e

N_SEEDS = int(os.environ.get("BBMM_RANDOM_KERNELS", "20"))
SEED0 = int(os.environ.get("BBMM_RANDOM_SEED0", "0"))
MAX_REDRAWS = 20


_SIZEOF = {"float": 4, "double": 8, "int": 4}


def _call(argv: list[str]) -> tuple[int | None, str, str | None]:
    """Run the CLI in-process: (exit status, stderr, traceback of a non-bbmm exception)."""
    err, out = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            rc = main(argv)
    except SystemExit as e:  # argparse
        return int(e.code or 0), err.getvalue(), None
    except Exception:
        return None, err.getvalue(), traceback.format_exc()
    return rc, err.getvalue(), None


def _array_bytes(prog, params: dict[str, int]) -> int:
    """Total bytes of the program's arrays (from the signature's sizes)."""
    total = 0
    sig = prog.plain.split("(", 1)[1].split(")", 1)[0]   # the names of params
    for decl in sig.split(", "):
        if "[" not in decl:
            continue
        ctype = decl.split()[0]
        n = 1
        for d in decl.split("[")[1:]:
            n *= eval(d.rstrip("]"), {"__builtins__": {}}, dict(params))
        total += n * _SIZEOF[ctype]
    return total


def _options(prog, rng: random.Random) -> tuple[list[str], bool]:
    """Random run options; the flag says whether --device-mem is tight."""
    opts = ["--devices", str(rng.randint(1, 4))]
    tight = rng.random() < 0.3
    if tight or rng.random() < 0.6:
        opts += ["--tile", str(rng.randint(1, 4) if tight else rng.randint(1, 6))]
    if tight:
        total = _array_bytes(prog, prog.params)
        cap = max(256, int(total * rng.choice([0.15, 0.25, 0.4])))
        opts += ["--device-mem", str(cap)]
    r = rng.random()
    if r < 0.15:
        opts += ["--mode", "convex"]
    elif r < 0.3:
        opts += ["--no-reuse"]
    elif r < 0.45:
        opts += ["--coherence", "block"]
    if rng.random() < 0.2:
        opts += ["--seed", str(rng.randint(1, 99))]
    f = rng.random()
    if f < 0.25:  # boxes fused into hulls that waste up to half their points, or never
        opts += ["--fuse", rng.choice(["0", "0.5"])]
    return opts, tight


def _report(prog, path: Path, argv: list[str], what: str) -> str:
    cmd = "bbmm " + " ".join(shlex.quote(a) for a in argv)
    return (f"seed {prog.seed}: {what}\n--- command ---\n{cmd}\n"
            f"(write the program below to {path.name})\n--- program ---\n{prog.text}")


def accepted_program(seed: int, tmp_path: Path):
    """``(program, its file, the seed drawn)``: the program of ``seed``, redrawn while the
    front end refuses it cleanly (a traceback, or a refusal of every redraw, fails)."""
    for redraw in range(MAX_REDRAWS):
        s = seed + 100_000 * redraw
        prog = generate(s)
        path = tmp_path / f"rk{s}.c"
        path.write_text(prog.text)
        rc, err, tb = _call(["compile", str(path)])
        assert tb is None, _report(prog, path, ["compile", str(path)], f"traceback:\n{tb}")
        if rc == 0:
            break
        assert rc == 1 and len(err.strip().splitlines()) == 1, _report(
            prog, path, ["compile", str(path)], f"compile rc={rc}, stderr:\n{err}")
    else:
        # the generator only writes programs in the accepted subset: a refusal of every
        # redraw is a front-end or generator bug, not a reason to skip
        pytest.fail(_report(prog, path, ["compile", str(path)],
                            f"{MAX_REDRAWS} generated programs refused by the front end; "
                            f"last: {err.strip()}"))
    return prog, path, s


def check_seed(seed: int, tmp_path: Path, extra: tuple[str, ...] = ()) -> None:
    """Draw a program (redrawing ones the front end refuses cleanly), run it with the
    options ``extra`` and random ones, assert pass."""
    prog, path, s = accepted_program(seed, tmp_path)
    rng = random.Random(f"opts-{s}")
    opts, tight = _options(prog, rng)
    opts += list(extra)
    if "tsteps" in prog.params and rng.random() < 0.5:
        # enough time steps for steps to repeat and be replayed (bbmm/replay.py)
        prog.params["tsteps"] = rng.randint(4, 7)
    out = tmp_path / "r.json"
    argv = ["run", str(path), *prog.param_args(), *opts, "--check", "--no-progress",
            "--json", str(out)]
    # points per work-item: the default (1 x 8 rows) or other shapes (--tune coarsen...)
    co = rng.choice([(1, 8), (1, 8), (2, 1), (1, 3), (3, 4)])
    # kernels whose inner loop can be staged: half the time staged, as on a GPU
    stage = rng.choice([None, (2, 3), (1, 1), (4, 16)])
    # rows writing the flow-out first (bbmm.runtime.Runtime._edges): half the runs split
    # every tile they can, the others keep the default (these tiles are far below it);
    # drawn apart, so that the options above stay what they were for every seed
    edge = random.Random(f"edge-{s}").choice(["1", ""])
    tune = [f"coarsen={co[0]}", f"coarsen1={co[1]}",
            f"stage={stage[0]}x{stage[1]}" if stage else "stage=0"] + (["edge=1"] if edge else [])
    argv += [a for t in tune for a in ("--tune", t)]
    rc, err, tb = _call(argv)
    assert tb is None, _report(prog, path, argv, f"traceback:\n{tb}")
    if rc != 0 and tight and "cannot allocate" in err and "raise --device-mem" in err:
        # the random cap is below one tile's boxes: check under a cap that fits (one
        # tile's footprint, from a dry run of the driver) instead of passing unchecked
        tile = int(opts[opts.index("--tile") + 1]) if "--tile" in opts else 1
        ndev = int(opts[opts.index("--devices") + 1])
        fp = footprint.tile_footprint(path, prog.param_args()[1::2], tile, ndev)

        def again(args: list[str]) -> tuple[int, str]:
            out.unlink(missing_ok=True)
            rc2, err2, tb2 = _call(args)
            assert tb2 is None, _report(prog, path, args, f"traceback:\n{tb2}")
            return rc2, err2
        argv, rc, err = footprint.with_fitting_cap(argv, again, fp)
    detail = err.strip()
    if out.exists():
        doc = json.loads(out.read_text())
        if doc.get("check") != "pass":
            detail += f"\ncheck: {doc.get('check')}; mismatches: {doc.get('mismatches')}"
    assert rc == 0, _report(prog, path, argv, f"rc={rc}\n{detail}")
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass", _report(prog, path, argv, detail)


@needs_cl
@pytest.mark.parametrize("seed", range(SEED0, SEED0 + N_SEEDS))
def test_random_kernel(seed, tmp_path):
    check_seed(seed, tmp_path)


# seeds whose programs isl reschedules (codegen/schedule.py takes its order for them)
ISL_SEEDS = [0, 2, 3, 5, 9, 16]


@needs_cl
@pytest.mark.parametrize("seed", ISL_SEEDS)
def test_random_kernel_isl_schedule(seed, tmp_path):
    import warnings

    from bbmm.codegen.compile import compile_program
    prog, path, _ = accepted_program(seed, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert compile_program(path, schedule="isl").schedule == "isl", \
            _report(prog, path, ["compile", str(path), "--schedule", "isl"],
                    "isl's schedule not taken")
    check_seed(seed, tmp_path, ("--schedule", "isl"))

"""Randomized differential test of stencil kernels with strips of rows.

Random programs (``stencil(seed)``) are what the strip path of the kernel generator is
for: a time loop whose two nests sweep a 2-D (or 3-D) band, each point reading random
neighbours ``X[i+di][j+dj]`` of the other array (some rows with gaps, row-invariant reads
of a fixed row, the row number itself). Each runs with ``--check`` against the sequential
C program on 1-3 devices with random tiles, memory caps and points per work-item
(``BBMM_COARSEN`` x ``BBMM_COARSEN1`` up to 3 x 6, so most work-items of a tile take the
strip path with its register windows, the rest the tested path).

``BBMM_RANDOM_STENCILS=N`` sets the number of seeds (default 12).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shlex

import pytest

from bbmm.cli import main
from support import footprint
from support.needs import needs_cl  # skipped only without an OpenCL platform

pytestmark = pytest.mark.e2e

N_SEEDS = int(os.environ.get("BBMM_RANDOM_STENCILS", "12"))
HALO = 2  # neighbours up to 2 away; arrays are padded by HALO on each side


def stencil(seed: int) -> tuple[str, dict[str, int]]:
    """A random stencil program and its parameters."""
    rng = random.Random(seed)
    three = rng.random() < 0.25
    dims = ["i", "j", "l"] if three else ["i", "j"]
    size = "".join("[n + 4]" for _ in dims)

    def term(src: str) -> str:
        kind = rng.random()
        offs = [rng.randint(-HALO, HALO) for _ in dims]
        if kind < 0.12:
            offs[0] = None  # a fixed row: read by every row of the strip
        idx = "".join(f"[{HALO + 1}]" if o is None else
                      f"[{d} + {o}]" if o > 0 else f"[{d} - {-o}]" if o < 0 else f"[{d}]"
                      for d, o in zip(dims, offs))
        coef = rng.choice(["0.5f", "0.25f", "0.125f", "-0.25f", "0.375f"])
        return f"{coef} * {src}{idx}"

    def body(dst: str, src: str) -> str:
        terms = [term(src) for _ in range(rng.randint(1, 6))]
        if rng.random() < 0.2:
            terms.append(f"0.0625f * {dims[0]}")
        if rng.random() < 0.2:
            terms.append(f"fmaxf({src}{''.join(f'[{d}]' for d in dims)}, 0.5f)")
        lhs = dst + "".join(f"[{d}]" for d in dims)
        return f"{lhs} = {' + '.join(terms)};"

    def nest(dst: str, src: str) -> str:
        lines, ind = [], "    "
        for d in dims:
            lo = rng.randint(HALO, HALO + 1)
            hi = rng.randint(0, 1)
            lines.append(f"{ind}for (int {d} = {lo}; {d} < n + {HALO - hi}; {d}++)")
            ind += "  "
        lines.append(ind + body(dst, src))
        return "\n".join(lines)

    text = (f"#include <math.h>\n\nvoid st{seed}(int tsteps, int n, float A{size}, "
            f"float B{size}) {{\n  for (int t = 0; t < tsteps; t++) {{\n"
            f"{nest('B', 'A')}\n{nest('A', 'B')}\n  }}\n}}\n")
    n = rng.randint(5, 8) if three else rng.randint(9, 24)
    return text, {"tsteps": rng.randint(1, 5), "n": n}


@needs_cl
@pytest.mark.parametrize("seed", range(N_SEEDS))
def test_random_stencil(seed, tmp_path):
    text, params = stencil(seed)
    path = tmp_path / f"st{seed}.c"
    path.write_text(text)
    rng = random.Random(f"stencil-opts-{seed}")
    argv = ["run", str(path), "--check", "--no-progress", "--json", str(tmp_path / "r.json"),
            "--devices", str(rng.randint(1, 3))]
    for k, v in params.items():
        argv += ["--param", f"{k}={v}"]
    if rng.random() < 0.5:
        argv += ["--tile", str(rng.randint(2, 9))]
    if rng.random() < 0.25:
        side = params["n"] + 4
        nbytes = 2 * 4 * side ** (3 if "[l]" in text else 2)
        argv += ["--device-mem", str(int(nbytes * rng.choice([0.4, 0.6])))]
    co = (rng.randint(1, 3), rng.randint(2, 6))
    # rows writing the flow-out first (bbmm.runtime.Runtime._edges): these tiles are far
    # below the default's size, so half the runs split every tile they can
    edge = rng.choice(["1", ""])
    argv += ["--tune", f"coarsen={co[0]}", "--tune", f"coarsen1={co[1]}"]
    argv += ["--tune", "edge=1"] if edge else []

    def run(args: list[str]) -> tuple[int, str]:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = main(args)
        return rc, err.getvalue()

    rc, err = run(argv)
    if rc != 0 and "cannot allocate" in err and "--device-mem" in argv:
        # the random cap is below one tile's boxes: check under a cap that fits (one
        # tile's footprint, from a dry run of the driver) instead of passing unchecked
        tile = int(argv[argv.index("--tile") + 1]) if "--tile" in argv else 1
        ndev = int(argv[argv.index("--devices") + 1])
        argv, rc, err = footprint.with_fitting_cap(
            argv, run, footprint.tile_footprint(path, params, tile, ndev))
    cmd = "bbmm " + " ".join(shlex.quote(a) for a in argv)
    assert rc == 0, f"{cmd}\n{err}\n{text}"
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["check"] == "pass", f"{cmd}\n{doc['mismatches']}\n{text}"

"""Randomized differential test of serial iterations moved on without their tiles.

Random programs (``shifted(seed)``) have a serial loop over ``k`` whose nests read row
and column ``k`` and write what lies below and right of them, as LU and Floyd-Warshall
do: every box moves with ``k``, and the generated driver's ``nest<N>_sig`` decides when
the runtime may replay a step from the steps before without building its tiles
(``Runtime.ahead``, ``DistributedRuntime.ahead``). Each runs with ``--check`` against the
sequential C program on 1-4 devices in one to three processes with random tiles or
memory caps, and
again with ``--tune ahead=off``: every device then moves exactly the same bytes in
exactly the same commands, and every process sends the same messages.

``BBMM_RANDOM_SHIFTS=N`` sets the number of seeds (default 12).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shlex

import pytest

from bbmm import shm
from bbmm.cli import main
from support import footprint
from support.needs import needs_cl  # skipped only without an OpenCL platform

pytestmark = pytest.mark.e2e

N_SEEDS = int(os.environ.get("BBMM_RANDOM_SHIFTS", "12"))
COEF = ("0.5f", "0.25f", "0.125f", "-0.25f", "0.375f")


def shifted(seed: int) -> tuple[str, dict[str, int]]:
    """A random program of that shape and its parameters."""
    rng = random.Random(seed)
    first = rng.choice([0, 0, 1])
    stop = rng.choice(["n - 1", "n - 2", "n"])
    c = lambda: rng.choice(COEF)  # noqa: E731
    par = "#pragma omp parallel for collapse(2)\n"  # as polybench/floyd.c asserts
    nests = []
    if rng.random() < 0.5:
        # a narrow nest: row k scaled, as LU's division by the pivot
        lo = rng.choice(["k + 1", "k + 2"])
        nests.append(f"    for (int j = {lo}; j < n; j++)\n"
                     f"      A[k][j] = {c()} * A[k][j] + {c()} * A[k][k];")
    kind = rng.choice(["update", "update", "floyd", "other"])
    if kind == "update":
        # below and right of row and column k, reading them (LU's update)
        ilo, jlo = rng.choice(["k + 1", "k + 2"]), rng.choice(["k + 1", "k + 2", "k + 1"])
        terms = [f"{c()} * A[i][j]", f"{c()} * A[i][k]", f"{c()} * A[k][j]"]
        if rng.random() < 0.4:
            terms.append(f"{c()} * B[i][j]")
        nests.append(f"{par}    for (int i = {ilo}; i < n; i++)\n"
                     f"      for (int j = {jlo}; j < n; j++)\n"
                     f"        A[i][j] = {' + '.join(terms)};")
    elif kind == "floyd":
        nests.append(f"{par}    for (int i = 0; i < n; i++)\n"
                     "      for (int j = 0; j < n; j++)\n"
                     "        B[i][j] = B[i][j] < B[i][k] + B[k][j] ? B[i][j] : "
                     "B[i][k] + B[k][j];")
    else:
        # another array written from row and column k of one the loop also updates
        nests.append(f"{par}    for (int i = 0; i < n; i++)\n"
                     "      for (int j = 0; j < n; j++)\n"
                     f"        B[i][j] = {c()} * B[i][j] + {c()} * A[i][k] + {c()} * A[k][j];")
        if rng.random() < 0.5:
            nests.append(f"{par}    for (int i = k + 1; i < n; i++)\n"
                         "      for (int j = k + 1; j < n; j++)\n"
                         f"        A[i][j] = {c()} * A[i][j] + {c()} * A[i][k];")
    body = "\n".join(nests)
    text = (f"void sh{seed}(int n, float A[n][n], float B[n][n]) {{\n"
            f"  for (int k = {first}; k < {stop}; k++) {{\n{body}\n  }}\n}}\n")
    return text, {"n": rng.randint(256, 384)}


def _run(args: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(args)
    return rc, err.getvalue()


@needs_cl
@pytest.mark.parametrize("seed", range(N_SEEDS))
def test_random_shifted_steps(seed, tmp_path):
    text, params = shifted(seed)
    path = tmp_path / f"sh{seed}.c"
    path.write_text(text)
    rng = random.Random(f"shifts-opts-{seed}")
    devices = rng.randint(1, 4)
    procs = rng.choice([p for p in (1, 2, 3) if devices % p == 0]) if shm.supported() else 1
    base = ["run", str(path), "--check", "--no-progress", "--devices", str(devices),
            "--procs", str(procs), "--param", f"n={params['n']}"]
    if rng.random() < 0.5:
        base += ["--tile", str(rng.randint(params["n"] // 8, params["n"]))]
    elif rng.random() < 0.5:
        # a cap below each device's share of the data: the tile shrinks to fit it, and
        # boxes are evicted and read in again
        share = 2 * 4 * params["n"] ** 2 // devices
        base += ["--device-mem", str(int(share * rng.choice([0.4, 0.7])))]
    docs = {}
    for ahead in ("on", "off"):
        out = tmp_path / f"{ahead}.json"
        argv = [*base, "--tune", f"ahead={ahead}", "--json", str(out)]
        rc, err = _run(argv)
        if rc != 0 and "cannot allocate" in err and "--device-mem" in base:
            # a schedule whose tiles read a whole array is below the random cap at any
            # tile: both sides run under a cap that fits one tile instead
            argv, rc, err = footprint.with_fitting_cap(
                argv, _run, footprint.tile_footprint(path, {"n": params["n"]}, 1, devices))
            base = argv[:argv.index("--tune")]
        cmd = "bbmm " + " ".join(shlex.quote(a) for a in argv)
        assert rc == 0, f"{cmd}\n{err}\n{text}"
        docs[ahead] = json.loads(out.read_text())
        assert docs[ahead]["check"] == "pass", f"{cmd}\n{docs[ahead]['mismatches']}\n{text}"
    on, off = docs["on"], docs["off"]
    ranks_on = on.get("per_rank", [{"runtime": on}])
    ranks_off = off.get("per_rank", [{"runtime": off}])
    for ron, roff in zip(ranks_on, ranks_off):
        assert roff["runtime"]["ahead_iterations"] == 0
        assert ron["runtime"]["per_device"] == roff["runtime"]["per_device"], text
        for key in ("sent_bytes", "received_bytes", "messages_sent"):
            assert ron.get(key) == roff.get(key), (key, text)


def test_the_programs_move_steps_on():
    """The generator is for this: most of its programs' drivers hand their steps to
    ``Runtime.ahead``."""
    from bbmm.codegen.compile import compile_program
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as d:
        got = 0
        for seed in range(N_SEEDS):
            text, _ = shifted(seed)
            p = Path(d) / f"sh{seed}.c"
            p.write_text(text)
            got += "rt.ahead(" in compile_program(p).host_source
        assert got >= N_SEEDS * 3 // 4

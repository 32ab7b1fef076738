"""End-to-end over MPI: ``mpiexec -n R bbmm run kernel.c --mpi --check`` on every PolyBench
kernel with 2 and 4 ranks (1 or 2 logical PoCL devices each), and the inter-rank volume of
Floyd-Warshall. mpiexec is the one of the ``mpich`` wheel (the ``test`` extra installs it)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import paths
from support.paths import POLYBENCH, ROOT

BATCH = Path(__file__).with_name("mpi_batch.py")

pytestmark = pytest.mark.e2e


def mpiexec() -> str:
    """The mpiexec beside this Python (the venv's, from the mpich wheel), else on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    found = str(here) if here.exists() else shutil.which("mpiexec")
    assert found, "no mpiexec: pip install -e '.[test]' installs mpi4py and mpich"
    return found


def ci_params(path: Path) -> list[str]:
    """The CI sizes a PolyBench file's header states (``CI n = 64.``, ``CI tsteps = 4, n = 64.``)."""
    head = path.read_text().split("*/", 1)[0]
    one = r"\w+ = \d+(?:,\d{3})*"
    m = re.search(rf"\bCI ({one}(?:, {one})*)", " ".join(head.split()).replace(" * ", " "))
    assert m, f"{path.name}: no 'CI name = value' sizes in the header comment"
    return [f"{k}={v.replace(',', '')}" for k, v in re.findall(r"(\w+) = ([\d,]+)", m.group(1))]


KERNELS = sorted(POLYBENCH.glob("*.c"))


def launch(ranks: list[int], runs: list[list[str]], timeout: float = 300,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``mpiexec`` with one rank per entry of ``ranks`` (its ``--devices``), every rank
    running the ``bbmm`` command lines ``runs`` one after the other (``env``: extra
    environment variables)."""
    cmd = [mpiexec()]
    for i, ndev in enumerate(ranks):
        per = [argv + ["--devices", str(ndev)] for argv in runs]
        cmd += ([":"] if i else []) + ["-n", "1", sys.executable, str(BATCH), json.dumps(per)]
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


def test_every_polybench_file_states_ci_sizes():
    assert len(KERNELS) >= 9
    for k in KERNELS:
        assert ci_params(k)


def floyd_sent_to(n: int, ranks: list[int]) -> list[dict[str, int]]:
    """Exchange bytes each rank sends each other rank on Floyd-Warshall (float, default tile:
    one tile per device, the driver's static block distribution): at iteration k >= 1
    every rank reads row k, which the owner of row k wrote at iteration k - 1 and sends
    to each other rank; nothing else (the rows a rank updates are its own)."""
    ndev = sum(ranks)
    tile = -(-n // ndev)
    ntiles = -(-n // tile)
    rank_of = [r for r, c in enumerate(ranks) for _ in range(c)]
    out: list[dict[str, int]] = [{} for _ in ranks]
    for k in range(1, n):
        owner = rank_of[min(ndev - 1, (k // tile) * ndev // ntiles)]
        for r in range(len(ranks)):
            if r != owner:
                out[owner][str(r)] = out[owner].get(str(r), 0) + n * 4
    return out


def test_floyd_sent_to_formula():
    # n = 24 on 2 ranks of 2 devices: rank 0 owns rows 0-11 and sends rows 1-11, rank 1
    # sends rows 12-23, 96 bytes each
    assert floyd_sent_to(24, [2, 2]) == [{"1": 11 * 96}, {"0": 12 * 96}]


@pytest.mark.parametrize("ranks", [[2, 2], [2, 1, 1, 2]], ids=["2ranks", "4ranks"])
def test_polybench_check_over_ranks(ranks, tmp_path):
    runs = [["run", str(POLYBENCH / "floyd.c"), "--param", "n=24", "--mpi", "--check",
             "--no-progress", "--json", str(tmp_path / "floyd24.json")]]
    for k in KERNELS:
        argv = ["run", str(k), "--mpi", "--check", "--no-progress", "--json",
                str(tmp_path / f"{k.stem}.json")]
        for p in ci_params(k):
            argv += ["--param", p]
        runs.append(argv)
    r = launch(ranks, runs)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for k in KERNELS:
        doc = json.loads((tmp_path / f"{k.stem}.json").read_text())
        assert doc["check"] == "pass", (k.stem, doc["mismatches"])
        assert doc["ranks"] == len(ranks) and doc["devices_per_rank"] == ranks
        assert len(doc["per_rank"]) == len(ranks)
        # every rank ran tiles of its own: the tiles are spread over all ranks
        assert all(p["tiles"] > 0 for p in doc["per_rank"]), (k.stem, doc["per_rank"])
        sent = sum(p["sent_bytes"] for p in doc["per_rank"])
        assert sent == sum(p["received_bytes"] for p in doc["per_rank"])

    # Floyd-Warshall: one row per serial iteration to each other rank, never blocks; the
    # gather brings rank 0 the rows of the others once
    for name, n in [("floyd24", 24), ("floyd", int(ci_params(POLYBENCH / "floyd.c")[0][2:]))]:
        doc = json.loads((tmp_path / f"{name}.json").read_text())
        assert doc["check"] == "pass"
        want = floyd_sent_to(n, ranks)
        for p, w in zip(doc["per_rank"], want):
            assert p["sent_to"] == w, (name, p["rank"])
            assert p["exchange_sent_bytes"] == sum(w.values())
            assert p["messages_sent"] == sum(v // (n * 4) for v in w.values()) + (p["rank"] > 0)
        tile = -(-n // sum(ranks))
        assert doc["gather_bytes"] == (n - doc["per_rank"][0]["devices"] * tile) * n * 4


def test_weakscaling_script(tmp_path):
    """scripts/exp_weakscaling.py at its tiniest: floyd on 1 and 2 ranks, checked."""
    import exp_weakscaling

    assert exp_weakscaling.main(["--programs", "floyd", "--ranks", "2", "--sizes", "tiny",
                                 "--param", "n=16", "--repeat", "1", "--warmup", "0",
                                 "--check", "--no-progress", "--out", str(tmp_path)]) == 0
    for ext in ("csv", "json", "png"):
        assert (tmp_path / f"weakscaling.{ext}").stat().st_size > 0
    rows = json.loads((tmp_path / "weakscaling.json").read_text())["rows"]
    assert [(r["ranks"], r["params"], r["check"]) for r in rows] == [(1, "n=16", "pass"),
                                                                     (2, "n=23", "pass")]
    one, two = rows
    assert one["efficiency"] == 1.0 and one["exchange_bytes"] == 0
    # data per device constant: 16x16 floats on 1 device, 23x23 on 2
    assert one["bytes_per_device"] == 16 * 16 * 4 and two["bytes_per_device"] == 23 * 23 * 4 / 2
    assert two["exchange_bytes"] == sum(sum(w.values()) for w in floyd_sent_to(23, [1, 1]))
    assert two["serial_iters"] == 23 and two["efficiency"] > 0


def test_generated_driver_over_ranks(tmp_path):
    """``bbmm compile -o DIR`` then ``mpiexec -n 2 python DIR/floyd_host.py --mpi``: the
    standalone driver runs over ranks too (random inputs; its statistics in --json)."""
    from bbmm.cli import main

    assert main(["compile", str(POLYBENCH / "floyd.c"), "-o", str(tmp_path)]) == 0
    out = tmp_path / "r.json"
    cmd = [mpiexec(), "-n", "2", sys.executable, str(tmp_path / "floyd_host.py"), "--mpi",
           "--devices", "1", "--param", "n=20", "--no-progress", "--json", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "floyd: 2 rank(s)" in r.stdout and "rank 1" in r.stdout
    doc = json.loads(out.read_text())
    assert [p["sent_to"] for p in doc["per_rank"]] == floyd_sent_to(20, [1, 1])
    assert doc["gather_bytes"] == 10 * 20 * 4


def test_errors_before_the_run_are_printed_once():
    r = launch([1, 1], [["run", str(POLYBENCH / "floyd.c"), "--mpi", "--param", "m=3"]],
               timeout=120)
    assert r.returncode == 2
    assert r.stderr.count("bbmm: error:") == 1, r.stderr
    assert "--param m" in r.stderr


def test_foreign_launcher_is_refused():
    """A launcher of another MPI (here Open MPI's variable, read by no MPICH) starts
    singletons that would each compute everything: bbmm says so instead."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMPI_COMM_WORLD_SIZE="2")
    r = subprocess.run([sys.executable, "-m", "bbmm", "run", str(POLYBENCH / "floyd.c"),
                        "--param", "n=8", "--mpi"], capture_output=True, text=True,
                       timeout=120, env=env, cwd=ROOT)
    assert r.returncode == 2, r.stderr
    assert "started 2 processes but MPI sees one rank" in r.stderr
    assert "Traceback" not in r.stderr


def test_launched_size():
    from bbmm.mpirun import launched_size
    assert launched_size({}) is None
    assert launched_size({"PMI_SIZE": "4"}) == 4
    assert launched_size({"OMPI_COMM_WORLD_SIZE": "3", "PMI_SIZE": "x"}) == 3


def test_waits_pause_only_with_more_ranks_than_cores():
    """MPIComm polls without pausing once node_slot found a core per rank (here one rank)."""
    code = ("from bbmm.messages import MPIComm; c = MPIComm(); a = c.max_sleep; "
            "print(a, c.node_slot(), c.max_sleep)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0.001", "(0,", "1)", "0.0"]


def test_repeating_steps_and_read_only_tables_over_ranks(tmp_path):
    """Time steps that repeat are replayed over MPI, each phase's exchange where the
    replay reaches the phase (replaying the steps alone, the exchanges left where they
    were, failed --check): heat2d with 10 steps checks and replays on every rank. fdtd2d's _fict_
    (read at [t], never written) is held whole on the devices of every rank as without
    MPI: fewer boxes allocated than with BBMM_WHOLE=0, the same bytes between ranks."""
    heat = tmp_path / "heat2d.json"
    heat_argv = ["run", str(POLYBENCH / "heat2d.c"), "--param", "tsteps=10", "--param",
                 "n=30", "--mpi", "--check", "--no-progress", "--json", str(heat)]
    docs = {}
    for limit in ("1048576", "0"):
        out = tmp_path / f"w{limit}.json"
        argv = ["run", str(POLYBENCH / "fdtd2d.c"), "--param", "tmax=6", "--param", "nx=14",
                "--param", "ny=11", "--mpi", "--check", "--no-progress", "--json", str(out)]
        runs = [argv, heat_argv] if limit != "0" else [argv]
        r = launch([1, 1], runs, env={"BBMM_WHOLE": limit})
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        docs[limit] = json.loads(out.read_text())
    h = json.loads(heat.read_text())
    assert h["check"] == "pass"
    assert all(p["runtime"]["replayed_iterations"] >= 5 for p in h["per_rank"])
    assert docs["0"]["check"] == docs["1048576"]["check"] == "pass"
    assert docs["0"]["exchange_bytes"] == docs["1048576"]["exchange_bytes"]

    def allocated(doc):
        return sum(d["boxes_allocated"] for p in doc["per_rank"]
                   for d in p["runtime"]["per_device"])

    assert allocated(docs["1048576"]) < allocated(docs["0"])


def test_program_that_cannot_be_pickled_is_compiled_on_every_rank(tmp_path):
    """Rank 0 compiles and broadcasts the program: tests/kernels/host_iterator_bound.c,
    whose tile sets islpy could not pickle, runs and checks on 2 ranks (it used to print a
    traceback on rank 0 and hang rank 1); the program now pickles."""
    import pickle
    import warnings

    from bbmm.codegen.compile import compile_program
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pickle.dumps(compile_program(paths.KERNELS / "host_iterator_bound.c"))
    out = tmp_path / "h.json"
    argv = ["run", str(paths.KERNELS / "host_iterator_bound.c"), "--param",
            "n=7", "--mpi", "--check", "--no-progress", "--json", str(out)]
    r = launch([1, 2], [argv], timeout=120)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert json.loads(out.read_text())["check"] == "pass"


N_RANDOM = int(os.environ.get("BBMM_RANDOM_MPI", "8"))


def test_random_programs_over_ranks(tmp_path):
    """Randomized differential test over MPI: random programs (tests/support/randprog.py, time
    loops of 4-7 steps so that steps repeat) run with --check on 2 ranks of 1 and 2
    devices, with random tiles and modes, in one mpiexec. ``BBMM_RANDOM_MPI=N`` sets how
    many (default 8, seeds 14-21: seed 21 caught replay over ranks; 24 take three
    minutes), ``BBMM_RANDOM_SEED0`` where they start (default 14)."""
    import random

    from test_random_kernels import accepted_program  # the same programs, redrawn alike

    seed0 = int(os.environ.get("BBMM_RANDOM_SEED0", "14"))
    runs, progs = [], {}
    for seed in range(seed0, seed0 + N_RANDOM):
        prog, path, s = accepted_program(seed, tmp_path)
        rng = random.Random(f"mpi-{s}")
        params = dict(prog.params)
        if "tsteps" in params:
            params["tsteps"] = rng.randint(4, 7)
        argv = ["run", str(path)] + [x for k, v in params.items()   # by their C names
                                     for x in ("--param", f"{prog.renames.get(k, k)}={v}")]
        if rng.random() < 0.5:
            argv += ["--tile", str(rng.randint(1, 5))]
        r = rng.random()
        argv += ["--mode", "convex"] if r < 0.2 else ["--coherence", "block"] if r < 0.4 else []
        argv += ["--mpi", "--check", "--no-progress", "--json", str(tmp_path / f"rk{s}.json")]
        runs.append(argv)
        progs[str(path)] = prog
    r = launch([1, 2], runs, timeout=600)
    for argv in runs:
        out = Path(argv[argv.index("--json") + 1])
        prog = progs[argv[1]]
        cmd = "mpiexec -n 2 bbmm " + " ".join(argv[:argv.index("--json")]) + " --devices 1"
        assert out.exists(), (f"seed {prog.seed}: no result (exit {r.returncode})\n{cmd}\n"
                              f"{prog.text}\n{r.stderr[-2000:]}")
        doc = json.loads(out.read_text())
        assert doc["check"] == "pass", (f"seed {prog.seed}: {doc['mismatches'][:2]}\n{cmd}\n"
                                        f"{prog.text}")
    assert r.returncode == 0, r.stderr[-3000:]

"""End-to-end over processes of one machine: ``bbmm run kernel.c --procs P --check`` on
every PolyBench kernel and on random programs, the inter-process volume of
Floyd-Warshall, the run report's fields, and the refusals of ``--procs``."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from support.needs import needs_cl, needs_shm
from support.tracecheck import check_trace
from test_mpi import KERNELS, POLYBENCH, ROOT, ci_params, floyd_sent_to

from bbmm import shm

pytestmark = [pytest.mark.e2e, needs_cl,
              pytest.mark.skipif(not shm.supported(), reason="--procs needs x86-64")]


def bbmm(*argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "bbmm", *argv], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=ROOT)


# the runtime over processes is the one over MPI ranks, which test_mpi.py checks on
# every kernel: here one of each kind (row k moving, a stencil, a shrinking corner,
# several nests per step, a matrix-vector product)
OVER_PROCESSES = [k for k in KERNELS if k.stem in ("floyd", "heat2d", "lu", "fdtd2d", "mvt")]


def checked(kernel, tmp_path, procs: int, *extra: str) -> tuple[dict, str]:
    """``bbmm run KERNEL --procs P --devices P --check`` at the CI sizes: its JSON report
    (the check passed) and its stderr."""
    out = tmp_path / "r.json"
    argv = ["run", str(kernel), "--procs", str(procs), "--devices", str(procs), "--check",
            "--no-progress", "--json", str(out), *extra]
    for p in ci_params(kernel):
        argv += ["--param", p]
    r = bbmm(*argv)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass", doc["mismatches"]
    return doc, r.stderr


@pytest.mark.parametrize("kernel", OVER_PROCESSES, ids=[k.stem for k in OVER_PROCESSES])
def test_polybench_check_over_processes(kernel, tmp_path):
    doc, stderr = checked(kernel, tmp_path, 2)
    assert doc["ranks"] == 2 and doc["devices_per_rank"] == [1, 1]
    assert all(p["tiles"] > 0 for p in doc["per_rank"])
    assert sum(p["sent_bytes"] for p in doc["per_rank"]) == \
        sum(p["received_bytes"] for p in doc["per_rank"])
    eq = doc["enqueues"]
    assert eq["launches"] >= doc["tiles"] > 0 and eq["copies"] > 0
    assert stderr == "", stderr


@pytest.mark.parametrize("name,params", [
    ("heat2d", ["n=64", "tsteps=30"]), ("fdtd2d", ["nx=48", "ny=40", "tmax=30"]),
    ("floyd", ["n=128"]), ("lu", ["n=128"])])
def test_nests_queued_behind_a_gate_over_processes_are_exact(name, params, tmp_path):
    """With ``--tune gate=on`` each process queues a replayed nest's halo copy in and
    launch before the exchange that brings the halos, behind an OpenCL user event the
    exchange sets (bbmm.replay._ahead): over three processes the result is the
    sequential C program's, and the receivers of halos or of row ``k`` queued launches
    so (no enqueue blocked: the run ends)."""
    out = tmp_path / "r.json"
    argv = ["run", str(POLYBENCH / f"{name}.c"), "--procs", "3", "--devices", "3",
            "--check", "--no-progress", "--tune", "gate=on", "--json", str(out)]
    for p in params:
        argv += ["--param", p]
    r = bbmm(*argv)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass", doc["mismatches"]
    gated = [p["runtime"]["gated_launches"] for p in doc["per_rank"]]
    assert sum(gated) > 0, gated
    assert r.stderr == "", r.stderr


@pytest.mark.parametrize("name,n", [("floyd", 384), ("lu", 512)])
def test_steps_moved_on_over_processes_are_exact(name, n, tmp_path):
    """Over three processes, each moves most of Floyd's and LU's steps on from the steps
    before (``DistributedRuntime.ahead``: the plans' records and messages too), its
    tiles never built. The result is the sequential C program's, and every process
    sends, receives and copies exactly what it does when every tile is built
    (``--tune ahead=off``)."""
    docs = {}
    for ahead in ("on", "off"):
        out = tmp_path / f"{ahead}.json"
        r = bbmm("run", str(POLYBENCH / f"{name}.c"), "--param", f"n={n}", "--procs", "3",
                 "--devices", "3", "--check", "--no-progress", "--tune", f"ahead={ahead}",
                 "--json", str(out))
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        docs[ahead] = json.loads(out.read_text())
    on, off = docs["on"], docs["off"]
    assert on["check"] == off["check"] == "pass"
    for ron, roff in zip(on["per_rank"], off["per_rank"]):
        assert ron["runtime"]["ahead_iterations"] > n // 4
        assert roff["runtime"]["ahead_iterations"] == 0
        assert ron["runtime"]["per_device"] == roff["runtime"]["per_device"]
        for key in ("sent_bytes", "received_bytes", "messages_sent", "tiles"):
            assert ron[key] == roff[key], key


def test_a_cap_below_the_data_shrinks_the_tile_over_processes(tmp_path):
    """``--device-mem`` below each device's share of the data, with no ``--tile``: as in
    one process, every process takes the tile that fits (one note, from the first) and
    the run is exact, where the default tile could not be allocated."""
    n = 128
    out = tmp_path / "c.json"
    cap = 2 * 4 * n * n // 4 // 2  # half of each device's share of LU's one array, twice
    r = bbmm("run", str(POLYBENCH / "lu.c"), "--param", f"n={n}", "--procs", "2",
             "--devices", "4", "--device-mem", str(cap), "--check", "--no-progress",
             "--json", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass" and doc["tile"] < n // 4
    assert r.stderr.count("bbmm: tile ") == 1, r.stderr


DIRECT = [k for k in KERNELS if k.stem in ("heat3d", "lu", "fdtd2d", "floyd")]


@pytest.mark.parametrize("kernel", DIRECT, ids=[k.stem for k in DIRECT])
@pytest.mark.parametrize("direct", ["0", "off", "copy"])
@needs_shm
def test_messages_taken_from_the_senders_arrays(kernel, direct, tmp_path):
    """With ``BBMM_DIRECT=0`` every message of the exchange and the gather stays in its
    sender's host arrays in shared memory, where the receivers' devices load it from
    (``BBMM_LEND``, the default): the result stays exact; ``copy`` (``lend=off``) has
    the receivers' processors copy it out of there instead; ``off`` keeps every message
    in the mailboxes."""
    tune = ["--tune", "direct=0", "--tune", "lend=off"] if direct == "copy" else [
        "--tune", f"direct={direct}"]
    doc, _ = checked(kernel, tmp_path, 3, *tune)
    lent = sum(p["lent_loads"] for p in doc["per_rank"])
    if direct == "0":
        assert lent > 0
        # the devices that loaded a message from its sender's arrays copied it into
        # their own process's (a write-back), and no processor copied it at once
        assert doc["writeback_bytes"] > 0
    else:
        assert lent == 0
    if direct == "copy":
        direct = "0"
    direct_msgs = sum(p["direct_messages"] for p in doc["per_rank"])
    for p in doc["per_rank"]:  # off keeps the arrays private, else all are shared
        assert p["shared_arrays"] == (0 if direct == "off" else p["host_arrays"])
        assert p["host_arrays"] > 0
    if direct == "off":
        assert direct_msgs == 0
    else:
        # the gather's two messages and some of the exchange's (the others found their
        # mailbox full, or were sent once the sender's tiles were enqueued)
        received = sum(p["messages_received"] for p in doc["per_rank"])
        assert received >= direct_msgs > 2


@needs_shm
def test_loans_under_a_memory_cap(tmp_path):
    """heat3d over three processes with every message left in its sender's arrays and
    loaded from there, under a device memory cap that boxes copies out: loans, their
    devices' copies back and the write-backs of evicted boxes stay exact together."""
    out = tmp_path / "r.json"
    r = bbmm("run", str(POLYBENCH / "heat3d.c"), "--param", "n=24", "--param", "tsteps=6",
             "--procs", "3", "--devices", "3", "--tile", "4", "--device-mem", "64KiB",
             "--tune", "direct=0", "--check", "--no-progress", "--json", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass", doc["mismatches"]
    assert sum(p["lent_loads"] for p in doc["per_rank"]) > 0
    assert sum(d["evictions"] for p in doc["per_rank"]
               for d in p["runtime"]["per_device"]) > 0


def test_ranks_with_private_arrays_are_named():
    from bbmm.mpirun import private_ranks
    per_rank = [{"rank": 0, "direct_min": 1, "shared_arrays": 2, "host_arrays": 2},
                {"rank": 1, "direct_min": 1, "shared_arrays": 0, "host_arrays": 2},
                {"rank": 2, "direct_min": None, "shared_arrays": 0, "host_arrays": 2}]
    assert private_ranks(per_rank) == [1]  # rank 2: MPI, or BBMM_DIRECT=off


@pytest.mark.parametrize("procs,devices", [(2, 4), (3, 3)])
def test_floyd_rows_between_processes(procs, devices, tmp_path):
    """Floyd-Warshall over processes sends what MPI ranks send: row k from its owner to
    every other process, once per k."""
    n = 24
    out = tmp_path / "f.json"
    r = bbmm("run", str(POLYBENCH / "floyd.c"), "--param", f"n={n}", "--procs", str(procs),
             "--devices", str(devices), "--check", "--no-progress", "--json", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass"
    want = floyd_sent_to(n, [devices // procs] * procs)
    assert [p["sent_to"] for p in doc["per_rank"]] == want
    assert doc["serial_iterations"] == n
    # per serial iteration each process launches its tiles and moves row k once
    assert doc["enqueues"]["launches"] == n * devices


@pytest.mark.parametrize("argv,message", [
    (["--procs", "3", "--devices", "2"], "--devices 2 does not split evenly over --procs 3"),
    (["--procs", "0"], "--procs must be at least 1"),
    (["--procs", "two"], "a number of processes or 'auto'"),
    (["--procs", "2", "--mpi"], "--procs and --mpi exclude each other"),
])
def test_procs_refusals_are_one_line(argv, message):
    r = bbmm("run", str(POLYBENCH / "floyd.c"), "--param", "n=16", *argv)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bbmm: error:") and message in lines[0], \
        r.stderr


def test_profile_over_processes_is_one_trace(tmp_path):
    """--profile with --procs: rank 0 writes one trace with every process's devices and
    host steps (their exchanges among them) on one time axis."""
    out = tmp_path / "t.json"
    r = bbmm("run", str(POLYBENCH / "floyd.c"), "--param", "n=32", "--procs", "2",
             "--devices", "2", "--check", "--no-progress", "--profile", str(out))
    assert r.returncode == 0, r.stderr
    assert "rank 0: cl0" in r.stderr and "rank 1: cl0" in r.stderr
    trace = json.loads(out.read_text())
    check_trace(trace)
    ev = trace["traceEvents"]
    threads = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"
               and e["pid"] == 0}
    assert threads == {"rank 0", "rank 1"}
    procs = {e["args"]["name"].split(" (")[0] for e in ev
             if e["ph"] == "M" and e["name"] == "process_name" and e["pid"] > 0}
    assert procs == {"rank 0: cl0", "rank 1: cl0"}
    steps = [e for e in ev if e["ph"] == "X" and e["pid"] == 0]
    for rank in (0, 1):
        names = {e["name"] for e in steps if e["tid"] == rank}
        assert {"run", "plan", "acquire"} <= names
        assert names & {"exchange", "send"}, names
        if "exchange" in names:  # its parts, each inside the exchange it is part of
            parts = {"settle", "transfer"}
            assert parts <= names
            outer = [(e["ts"], e["ts"] + e["dur"]) for e in steps
                     if e["tid"] == rank and e["name"] not in parts]
            for e in steps:
                if e["tid"] == rank and e["name"] == "transfer":
                    assert any(a <= e["ts"] and e["ts"] + e["dur"] <= b + 1 for a, b in outer)
    kernels = [e for e in ev if e["ph"] == "X" and e["cat"] == "kernel"]
    assert {e["pid"] for e in kernels} == {1, 2} and len(kernels) == 2 * 32
    runs = [e for e in steps if e["name"] == "run"]  # the ranks start together
    assert abs(runs[0]["ts"] - runs[1]["ts"]) < 0.5 * max(e["dur"] for e in runs)


def test_an_error_in_the_run_is_said_once():
    """Every process fails to allocate its tile, even the smallest: the user reads one
    error (after the one note of the tile tried), not one per process, and the run ends
    with status 1."""
    r = bbmm("run", str(POLYBENCH / "floyd.c"), "--param", "n=256", "--procs", "2",
             "--devices", "2", "--device-mem", "1KiB", "--no-progress")
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("bbmm: tile 1 (not 128)"), r.stderr
    assert "cannot allocate" in lines[1], r.stderr


N_RANDOM = int(os.environ.get("BBMM_RANDOM_PROCS", "6"))


def test_random_programs_over_processes(tmp_path):
    """Randomized differential test over processes: random programs (tests/support/randprog.py)
    with --check on 2 or 3 processes of 1 or 2 devices, random tiles and modes, half of
    them with every message left in the sender's host arrays (``direct=0``), half of
    those loaded from there by the receiver's devices (the default) and half copied out
    by its processor (``lend=off``), and half with every tile that can be split running
    its flow-out rows first (``edge=1``; by default only over two processes), a quarter
    of the split ones copying the flow-out out between the two launches instead of
    beside the second (``beside=0``).
    ``BBMM_RANDOM_PROCS=N`` sets how many; ``BBMM_RANDOM_SEED0`` shifts the seeds."""
    from test_random_kernels import accepted_program

    seed0 = int(os.environ.get("BBMM_RANDOM_SEED0", "0"))
    for seed in range(seed0, seed0 + N_RANDOM):
        prog, path, s = accepted_program(seed, tmp_path)
        rng = random.Random(f"procs-{s}")
        params = dict(prog.params)
        if "tsteps" in params:
            params["tsteps"] = rng.randint(4, 7)
        argv = ["run", str(path)] + [x for k, v in params.items()
                                     for x in ("--param", f"{prog.renames.get(k, k)}={v}")]
        if rng.random() < 0.5:
            argv += ["--tile", str(rng.randint(1, 5))]
        r = rng.random()
        argv += ["--mode", "convex"] if r < 0.2 else ["--coherence", "block"] if r < 0.4 else []
        if rng.random() < 0.5:
            argv += ["--tune", "direct=0"] + (["--tune", "lend=off"] if rng.random() < 0.5 else [])
        if rng.random() < 0.5:
            argv += ["--tune", "edge=1"] + (["--tune", "beside=0"] if rng.random() < 0.25
                                            else [])
        procs = rng.choice([2, 3])
        out = tmp_path / f"p{s}.json"
        argv += ["--procs", str(procs), "--devices", str(procs * rng.choice([1, 2])),
                 "--check", "--no-progress", "--json", str(out)]
        res = bbmm(*argv)
        cmd = "bbmm " + " ".join(argv[:argv.index("--json")])
        assert res.returncode == 0 and out.exists(), \
            f"seed {prog.seed}: exit {res.returncode}\n{cmd}\n{prog.text}\n{res.stderr[-2000:]}"
        doc = json.loads(out.read_text())
        assert doc["check"] == "pass", f"seed {prog.seed}: {doc['mismatches'][:2]}\n{cmd}"


@pytest.mark.parametrize("program,params", [
    ("heat2d", ["n=40", "tsteps=9"]),
    ("fdtd2d", ["tmax=7", "nx=30", "ny=22"]),
])
def test_replay_over_processes_moves_the_same_bytes(program, params, tmp_path):
    """Repeating steps replayed across processes: the result checks and every byte count
    (between processes and between host and devices) is that of the run without replay."""
    docs = {}
    for replay in (True, False):
        out = tmp_path / f"{replay}.json"
        argv = ["run", str(POLYBENCH / f"{program}.c"), "--procs", "2", "--devices", "2",
                "--check", "--no-progress", "--json", str(out)]
        for p in params:
            argv += ["--param", p]
        r = bbmm(*argv, *([] if replay else ["--no-replay"]))
        assert r.returncode == 0, r.stderr
        docs[replay] = json.loads(out.read_text())
        assert docs[replay]["check"] == "pass"
    replayed = [p["runtime"]["replayed_iterations"] for p in docs[True]["per_rank"]]
    assert all(n > 0 for n in replayed), replayed
    assert all(p["runtime"]["replayed_iterations"] == 0 for p in docs[False]["per_rank"])
    for key in ("exchange_bytes", "gather_bytes", "readin_bytes", "flowout_bytes",
                "flowin_bytes", "writeout_bytes"):
        assert docs[True][key] == docs[False][key], key

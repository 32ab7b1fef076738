"""The shared-memory communicator of ``bbmm run --procs`` (bbmm/shm.py), between real
processes: point-to-point exchanges of every size (empty, one chunk, many chunks, both
ways at once), the collectives, and a stop that reaches every process."""
from __future__ import annotations

import multiprocessing as mp
import os

import numpy as np
import pytest

from bbmm import shm

pytestmark = pytest.mark.skipif(not shm.supported(), reason="shared-memory ranks need x86-64")

CHUNK = 64  # tiny chunks: every message of more than 64 bytes goes in pieces


def payload(src: int, dst: int, rnd: int) -> np.ndarray:
    """The bytes ``src`` sends ``dst`` in round ``rnd``: sizes 0, < 1 chunk, many chunks."""
    n = [0, 5, CHUNK, 3 * CHUNK + 7, 1000][(src + 2 * dst + rnd) % 5]
    return (np.arange(n, dtype=np.int64) * 31 + 7 * src + 3 * dst + rnd).astype(np.uint8)


def worker(path: str, rank: int, size: int, out: mp.Queue) -> None:
    comm = shm.ShmComm(path, rank, size, chunk=CHUNK)
    try:
        bad = []
        for rnd in range(6):
            others = [r for r in range(size) if r != rank]
            sends = {d: payload(rank, d, rnd) for d in others}
            recvs = {s: payload(s, rank, rnd).size for s in others}
            got = comm.exchange(sends, recvs)
            for s in others:
                if not np.array_equal(got[s], payload(s, rank, rnd)):
                    bad.append((rnd, s))
            comm.barrier()
        every = comm.allgather({"rank": rank, "blob": bytes(300 * rank)})
        root = comm.gather(rank * 10, root=1)
        word = comm.bcast("hello" * 50 if rank == 2 else None, root=2)
        out.put((rank, bad, [e["rank"] for e in every], [len(e["blob"]) for e in every],
                 root, word))
    finally:
        comm.close()


def test_exchanges_and_collectives_between_processes():
    size = 3
    path = shm.create(size, chunk=CHUNK)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(path, r, size, out)) for r in range(size)]
    try:
        for p in procs:
            p.start()
        results = sorted(out.get(timeout=120) for _ in procs)
        for p in procs:
            p.join(timeout=30)
            assert p.exitcode == 0
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
        os.unlink(path)
    for rank, bad, ranks, blobs, root, word in results:
        assert bad == [], f"rank {rank} received wrong bytes: {bad}"
        assert ranks == [0, 1, 2] and blobs == [0, 300, 600]
        assert root == ([0, 10, 20] if rank == 1 else None)
        assert word == "hello" * 50


def stopper(path: str, rank: int, out: mp.Queue) -> None:
    comm = shm.ShmComm(path, rank, 2, chunk=CHUNK)
    if rank == 1:
        comm.abort(3)  # ends this process with status 3
    try:
        comm.exchange({}, {1: 10})  # rank 1 never sends
        out.put("received")
    except shm.PeerLost as e:
        out.put(("stopped", comm.stopped_by_peer(), str(e)))


def test_a_stop_reaches_the_waiting_process():
    path = shm.create(2, chunk=CHUNK)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=stopper, args=(path, r, out)) for r in range(2)]
    try:
        for p in procs:
            p.start()
        got = out.get(timeout=60)
        for p in procs:
            p.join(timeout=30)
    finally:
        os.unlink(path)
    assert got[0] == "stopped" and got[1] is True and "status 3" in got[2]
    assert procs[1].exitcode == 3


def test_a_dead_process_is_noticed():
    """A process that dies without a word (a crash) is found by the liveness check."""
    path = shm.create(2, chunk=CHUNK)
    try:
        comm = shm.ShmComm(path, 0, 2, chunk=CHUNK, alive=lambda: False)
        with pytest.raises(shm.PeerLost, match="died"):
            comm.exchange({}, {1: 4})
        comm.close()
    finally:
        os.unlink(path)


def test_segment_size_grows_with_pairs():
    assert shm.segment_size(1) == 8 * (8 + 1)
    two = shm.segment_size(2, chunk=100)
    assert two == 8 * 10 + 2 * (32 + 100)
    assert shm.segment_size(4, chunk=100) == 8 * 12 + 12 * (32 + 100)

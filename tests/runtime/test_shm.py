"""The shared-memory communicator of ``bbmm run --procs`` (bbmm/shm.py), between real
processes: point-to-point exchanges of every size (empty, one chunk, a grown room, many
chunks, both ways at once), the collectives, and a stop that reaches every process."""
from __future__ import annotations

import glob
import multiprocessing as mp
import os
import queue
import random
import time

import numpy as np
import pytest

from bbmm import shm
from support.needs import needs_shm

pytestmark = pytest.mark.skipif(not shm.supported(), reason="shared-memory ranks need x86-64")

CHUNK = 64  # tiny first rooms: a message of more than 64 bytes grows its room
ROOM = 512  # ... up to 512 bytes; a longer one goes in pieces


def payload(src: int, dst: int, rnd: int, n: int | None = None) -> np.ndarray:
    """The bytes ``src`` sends ``dst`` in round ``rnd``: ``n`` of them, or by default sizes
    0, < 1 chunk, one grown room, many chunks."""
    if n is None:
        n = [0, 5, CHUNK, 3 * CHUNK + 7, 1000][(src + 2 * dst + rnd) % 5]
    return (np.arange(n, dtype=np.int64) * 31 + 7 * src + 3 * dst + rnd).astype(np.uint8)


def worker(path: str, rank: int, size: int, out: mp.Queue, full: bool = False,
           threads: int = 0) -> None:
    """Exchanges and collectives; with ``full``, shared memory refuses every new room;
    ``threads``: the copier's threads, on for any message over 64 bytes."""
    if full:
        def refuse(*args):
            raise OSError(28, "No space left on device")
        os.posix_fallocate = refuse
    comm = shm.ShmComm(path, rank, size, chunk=CHUNK, room_max=ROOM, copy_threads=threads,
                       copy_min=64 if threads else None)
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
        rooms = sorted(len(r[1]) for r in comm._rooms.values())
        out.put((rank, bad, [e["rank"] for e in every], [len(e["blob"]) for e in every],
                 root, word, rooms))
    finally:
        comm.close()


def on_processes(target, size: int, *extra) -> list:
    """Run ``target(path, rank, size, queue, *extra)`` in ``size`` spawned processes
    sharing one segment; returns what each put on the queue, sorted, once all exited
    with 0, and checks that no room of a mailbox is left behind."""
    path = shm.create(size, chunk=CHUNK)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=target, args=(path, r, size, out, *extra))
             for r in range(size)]
    try:
        for p in procs:
            p.start()
        got = []
        deadline = time.monotonic() + 120
        while len(got) < len(procs):  # a process that fails is reported at once
            try:
                got.append(out.get(timeout=0.5))
            except queue.Empty:
                dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                assert not dead, f"a process failed (exit status {dead[0]}): see its stderr"
                assert time.monotonic() < deadline, "the processes did not finish"
        results = sorted(got, key=lambda r: r[0])
        for p in procs:
            p.join(timeout=30)
            assert p.exitcode == 0
        assert glob.glob(glob.escape(path) + ".*") == []  # each room's receiver removed it
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
        shm.remove(path)
    return results


@pytest.mark.parametrize("full,threads", [(False, 0), (True, 0), (False, 2)],
                         ids=["rooms-grow", "shm-full", "copy-threads"])
def test_exchanges_and_collectives_between_processes(full, threads):
    results = on_processes(worker, 3, full, threads)
    for rank, bad, ranks, blobs, root, word, rooms in results:
        assert bad == [], f"rank {rank} received wrong bytes: {bad}"
        assert ranks == [0, 1, 2] and blobs == [0, 300, 600]
        assert root == ([0, 10, 20] if rank == 1 else None)
        assert word == "hello" * 50
        # rooms grew to a power of two (199 bytes: 256) or to the most (1000: 512), on
        # both sides of each mailbox; none where shared memory is full
        assert rooms == [] if full else (rooms and set(rooms) <= {256, 512})


SIZES = [0, 1, 8, CHUNK - 1, CHUNK, CHUNK + 1, 200, 300, ROOM - 1, ROOM, ROOM + 1, 1100]
"""Message lengths around a first room's and a grown room's ends."""


def random_worker(path: str, rank: int, size: int, out: mp.Queue, seed: int) -> None:
    """Sixty rounds of exchanges of random lengths (the same on every rank) and
    allgathers, each rank pausing at random: every byte as sent."""
    comm = shm.ShmComm(path, rank, size, chunk=CHUNK, room_max=ROOM)
    plan = random.Random(seed)
    pause = random.Random(seed * 10 + rank)
    bad = []
    try:
        for rnd in range(60):
            n = {(s, d): plan.choice(SIZES) for s in range(size) for d in range(size)}
            others = [r for r in range(size) if r != rank]
            if pause.random() < 0.3:
                time.sleep(pause.random() * 1e-3)
            if plan.random() < 0.2:
                every = comm.allgather({"rank": rank, "blob": bytes(n[(rank, rank)])})
                if [(e["rank"], len(e["blob"])) for e in every] != \
                        [(r, n[(r, r)]) for r in range(size)]:
                    bad.append(("allgather", rnd))
                continue
            got = comm.exchange({d: payload(rank, d, rnd, n[(rank, d)]) for d in others},
                                {s: n[(s, rank)] for s in others})
            bad += [(rnd, s) for s in others
                    if not np.array_equal(got[s], payload(s, rank, rnd, n[(s, rank)]))]
        out.put((rank, bad))
    finally:
        comm.close()


@pytest.mark.parametrize("seed", range(3))
def test_random_lengths_between_processes(seed):
    """Messages of random lengths around the rooms' ends, collectives between them, and
    ranks that fall behind at random: nothing arrives but what was sent (a message once
    went into a room its receiver no longer read: one run in forty of this test found
    it)."""
    for rank, bad in on_processes(random_worker, 3, seed):
        assert bad == [], f"rank {rank} received wrong bytes: {bad}"


class _Racing:
    """A mailbox header as the sender sees it while its receiver works: right after the
    sender's first look at the read count, the receiver takes what waits (``take``);
    that look still sees the count from before."""

    def __init__(self, real, take):
        self.real, self.take, self.looked = real, take, False

    def __getitem__(self, i):
        v = self.real[i]
        if i == 1 and not self.looked:
            self.looked = True
            self.take()
        return v

    def __setitem__(self, i, v):
        self.real[i] = v


def test_a_message_goes_into_the_room_its_receiver_reads():
    """A message that fits the mailbox's first room, sent after one that grew the room
    while the receiver takes that one between the sender's looks, goes into the grown
    room, which the receiver reads from then on (it once went into the first: the
    receiver read the old message's bytes instead)."""
    path = shm.create(2, chunk=CHUNK)
    a = shm.ShmComm(path, 0, 2, chunk=CHUNK, room_max=ROOM)
    b = shm.ShmComm(path, 1, 2, chunk=CHUNK, room_max=ROOM)
    try:
        big, small = payload(0, 1, 1), payload(0, 1, 4)  # 199 bytes, then 5
        assert big.size > CHUNK >= small.size
        a.exchange({1: big}, {})  # the room grows to 256 bytes; not read yet
        got = {}
        hdr, data = a._boxes[(0, 1)]
        a._boxes[(0, 1)] = (_Racing(hdr, lambda: got.update(big=b.exchange({}, {0: big.size})[0])),
                            data)
        a.exchange({1: small}, {})
        np.testing.assert_array_equal(got["big"], big)
        np.testing.assert_array_equal(b.exchange({}, {0: small.size})[0], small)
    finally:
        a.close()
        b.close()
        shm.remove(path)


def test_remove_takes_rooms_left_behind():
    path = shm.create(2, chunk=CHUNK)
    comm = shm.ShmComm(path, 0, 2, chunk=CHUNK, room_max=ROOM)
    try:
        room = comm._grow(1, 300)  # sent, never received: its name stays
        assert room.size == 512 and os.path.exists(path + ".0-1.1")
    finally:
        comm.close()
        shm.remove(path)
    assert not os.path.exists(path) and glob.glob(glob.escape(path) + "*") == []


class Host:
    """The host arrays of a rank, as :func:`bbmm.messages.swap` reads them."""

    def __init__(self, **arrays):
        self.arrays = arrays

    def array(self, name):
        return self.arrays[name]


def swapper(path: str, rank: int, size: int, out: mp.Queue) -> None:
    """Two ranks swap boxes in place, each round sending the rows it then receives over:
    a message of one chunk (packed into the mailbox), of many (staged), and two sends in
    a row while the first may still sit unread in the mailbox; the copies of any message
    over 16 bytes split over two threads."""
    from bbmm.box import Box
    from bbmm.messages import Boxes, swap
    comm = shm.ShmComm(path, rank, 2, chunk=CHUNK, copy_threads=2, copy_min=16)
    other = 1 - rank
    try:
        a = np.arange(10 * 7, dtype=np.float32).reshape(10, 7) + 1000 * rank
        host = Host(a=a)
        before = a.copy()
        small = [("a", Box((2, 1), (3, 3)))]          # 2 x 3 floats: 24 bytes, one chunk
        large = [("a", Box((0, 0), (9, 6))), ("a", Box((4, 2), (4, 2)))]  # 284 bytes
        got = []
        for items in (small, large):
            msg = Boxes(host, items)
            sent, recv = swap(comm, [(other, msg)], [(other, msg)])
            assert sent == recv == {other: sum(4 * b.volume for _, b in items)}
            got.append(a.copy())
        # rank 0 sends twice before rank 1 receives: the second finds the mailbox full
        if rank == 0:
            a[:] = 7
            msg = Boxes(host, small)  # kept, as a run keeps its messages
            swap(comm, [(1, msg)], ())
            a[:] = 8
            swap(comm, [(1, msg)], ())
        else:
            time.sleep(0.2)
            msg = Boxes(host, small)
            swap(comm, (), [(0, msg)])
            first = a[2:4, 1:4].copy()
            swap(comm, (), [(0, msg)])
            got.append((first, a[2:4, 1:4].copy()))
        comm.barrier()
        out.put((rank, before, got))
    finally:
        comm.close()


def test_swap_packs_in_place_and_sends_what_was_there_before():
    results = {r: (b, g) for r, b, g in on_processes(swapper, 2)}
    for rank in (0, 1):
        mine, theirs = results[rank][0], results[1 - rank][0]
        after_small, after_large = results[rank][1][:2]
        want = mine.copy()
        want[2:4, 1:4] = theirs[2:4, 1:4]  # what the other rank held before the swap
        assert np.array_equal(after_small, want)
        # the whole array then comes from the other rank as it was after its first swap,
        # and the single element again as the other rank had it before this swap
        other_small = theirs.copy()
        other_small[2:4, 1:4] = mine[2:4, 1:4]
        want = other_small.copy()
        want[4, 2] = other_small[4, 2]
        assert np.array_equal(after_large, want)
    first, second = results[1][1][2]
    assert (first == 7).all() and (second == 8).all()


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
    assert two == 8 * 10 + 2 * (40 + 100)
    assert shm.segment_size(4, chunk=100) == 8 * 12 + 12 * (40 + 100)


def direct_swapper(path: str, rank: int, size: int, out: mp.Queue) -> None:
    """Two ranks with their host arrays in shared memory: messages of at least 100 bytes
    are taken straight from the sender's array, smaller ones and those sent with
    ``direct=False`` go through the mailbox; a sender of a direct message returns once
    its receiver took it."""
    from bbmm.box import Box
    from bbmm.messages import Boxes, swap
    comm = shm.ShmComm(path, rank, 2, chunk=CHUNK)
    comm.direct_min = 100
    other = 1 - rank
    try:
        a = comm.share_array("a", (10, 7), np.float32)
        assert a is not None
        a[...] = np.arange(70, dtype=np.float32).reshape(10, 7) + 1000 * rank
        comm.open_peers()
        comm.barrier()  # each process removes its own arrays' names once all mapped them
        assert not glob.glob(glob.escape(path) + ".a*")
        host = Host(a=a)
        # rank 0 sends rows 0-4 and receives rows 5-9, rank 1 the other way round (a
        # plan's exchange never sends and receives one region): 140 bytes, direct; a
        # 16-byte piece of row 9 and of row 4 by the mailbox; then 140 bytes again with
        # direct=False
        big = [[("a", Box((0, 0), (4, 6)))], [("a", Box((5, 0), (9, 6)))]]
        small = [[("a", Box((4, 0), (4, 3)))], [("a", Box((9, 0), (9, 3)))]]
        log = []
        for pair, direct in ((big, True), (small, True), (big, False)):
            comm.barrier()  # every mailbox empty: a direct send never finds one full
            before = comm.direct_received
            out_items, in_items = pair[rank], pair[other]
            mine = a[out_items[0][1].slices()].copy()
            swap(comm, [(other, Boxes(host, out_items))], [(other, Boxes(host, in_items))],
                 direct)
            log.append((comm.direct_received - before, mine, a[in_items[0][1].slices()].copy()))
        big = big[0]
        # rank 0 sends alone, directly; rank 1 takes it 0.3 s later
        msg = Boxes(host, big)
        comm.barrier()
        t0 = time.perf_counter()
        if rank == 0:
            a[0:5] = -1
            swap(comm, [(1, msg)], ())
        else:
            time.sleep(0.3)
            swap(comm, (), [(0, msg)])
        waited = time.perf_counter() - t0
        comm.barrier()
        out.put((rank, log, waited, a[0:5].copy(), comm.direct_sent))
    finally:
        comm.close()


@needs_shm
def test_direct_messages_are_taken_from_the_senders_arrays():
    results = {r[0]: r[1:] for r in on_processes(direct_swapper, 2)}
    for rank in (0, 1):
        log, waited, head, sent = results[rank]
        theirs = results[1 - rank][0]
        assert [d for d, _, _ in log] == [1, 0, 0]  # big direct, small and direct=False not
        for (_, _, got), (_, their_before, _) in zip(log, theirs):
            assert np.array_equal(got, their_before)  # each swap moved the other's values
        assert sent == (2 if rank == 0 else 1)
    assert results[0][1] >= 0.25  # the sender waited for its receiver to take it
    assert (results[1][2] == -1).all()  # what rank 0 held when it sent


def direct_pair(path: str, rank: int, fill: float, lend: bool = True
                ) -> tuple[shm.ShmComm, np.ndarray, list]:
    """Rank ``rank`` of two sharing a 10 x 7 array ``a`` (all ``fill``) whose messages of
    100 bytes or more stay in their sender's arrays, and the sender goes on; with
    ``lend``, rank 1 lends, its waits for the loads from a region noted in the list
    returned (no device: never pending)."""
    comm = shm.ShmComm(path, rank, 2, chunk=CHUNK)
    comm.direct_min = 100
    comm.defer_takes = True
    waited: list = []
    if lend and rank == 1:
        comm.lend = True
        comm.wait_loads = lambda a, b: waited.append((a, b))
        comm.loads_done = lambda a, b: True
    a = comm.share_array("a", (10, 7), np.float32)
    assert a is not None
    a[...] = fill
    comm.open_peers()
    comm.barrier()
    return comm, a, waited


def deferred_sender(path: str, rank: int, size: int, out: mp.Queue) -> None:
    """Rank 0 leaves a message in its array and goes on (``defer_takes``); rank 1 takes it
    0.3 s later. Rank 0 knows which regions are still to be taken, waits for its
    receiver only where asked, and a swap that receives into such a region waits before
    it starts."""
    from bbmm.box import Box
    from bbmm.messages import Boxes, swap
    comm, a, _ = direct_pair(path, rank, 1000 * rank, lend=False)
    try:
        host = Host(a=a)
        sent = [("a", Box((0, 0), (4, 6)))]
        row = [("a", Box((0, 0), (0, 6)))]
        facts: dict = {}
        for round_ in range(2):
            comm.barrier()
            t0 = time.perf_counter()
            if rank == 0:
                a[0:5] = -1 - round_
                swap(comm, [(1, Boxes(host, sent))], ())
                facts[f"returned{round_}"] = time.perf_counter() - t0
                facts[f"pending{round_}"] = (comm.untaken("a", Box((2, 0), (3, 6))),
                                             comm.untaken("a", Box((5, 0), (9, 6))),
                                             comm.untaken("b", Box((2, 0), (3, 6))))
                if round_ == 0:
                    comm.settle_sends()  # before it writes the region again
                else:
                    # a swap that receives into the region waits first
                    swap(comm, (), [(1, Boxes(host, row))])
                    facts["row"] = a[0].copy()
                facts[f"settled{round_}"] = time.perf_counter() - t0
                facts[f"after{round_}"] = comm.untaken("a", Box((2, 0), (3, 6)))
                a[1:5] = 7  # the receiver has its copy: this must not reach it
            else:
                time.sleep(0.3)
                swap(comm, (), [(0, Boxes(host, sent))])
                facts[f"got{round_}"] = a[0:5].copy()
                if round_ == 1:
                    a[0] = 5
                    swap(comm, [(0, Boxes(host, row))], ())  # 28 bytes: the mailbox
        comm.barrier()
        out.put((rank, facts, comm.direct_sent, comm.direct_received))
    finally:
        comm.close()


@needs_shm
def test_a_sender_that_defers_takes_goes_on_and_waits_where_asked():
    (_, sender, sent, _), (_, receiver, _, taken) = on_processes(deferred_sender, 2)
    assert sent == taken == 2
    for r in range(2):
        assert sender[f"returned{r}"] < 0.2  # it did not wait for the receiver
        assert sender[f"pending{r}"] == (True, False, False)  # its region, not others
        assert sender[f"settled{r}"] >= 0.25  # settle_sends and the next swap waited
        assert sender[f"after{r}"] is False
        assert (receiver[f"got{r}"] == -1 - r).all()  # the values as sent, never the 7s
    assert (sender["row"] == 5).all()  # the receive landed after the take


def lending_receiver(path: str, rank: int, size: int, out: mp.Queue) -> None:
    """Rank 1 lends (``lend``): a message left in rank 0's array is loaded from there
    (:meth:`ShmComm.loaned`) and copied into rank 1's own array only when repaid: by a
    load that the loan covers only in part, or by the end of the next swap. Rank 0 waits
    for the repayment before it writes the region."""
    from bbmm.box import Box
    from bbmm.messages import Boxes, swap
    comm, a, waited = direct_pair(path, rank, 1 + rank)
    try:
        host = Host(a=a)
        sent = [("a", Box((0, 0), (4, 6)))]
        row = [("a", Box((9, 0), (9, 6)))]
        facts: dict = {}
        for round_ in range(2):
            comm.barrier()
            if rank == 0:
                swap(comm, [(1, Boxes(host, sent))], ())
                t0 = time.perf_counter()
                comm.settle_sends()  # until rank 1 repaid it
                facts[f"waited{round_}"] = time.perf_counter() - t0
                a[0:5] = 10 + round_
                if round_ == 1:
                    a[9] = 3
                    swap(comm, [(1, Boxes(host, row))], ())
                continue
            swap(comm, (), [(0, Boxes(host, sent))])
            src = comm.loaned("a", Box((1, 0), (2, 6)))
            # the slices of rank 0's array the box spans, and where they start
            facts[f"lent{round_}"] = (src is not None and src[1] == (1, 0)
                                      and not np.shares_memory(src[0], a)
                                      and bool((src[0] == 1 + 9 * round_).all()))
            facts[f"own{round_}"] = a[0:5].copy()  # before it is repaid
            time.sleep(0.3)
            if round_ == 0:
                # a load the loan covers in part: repaid first, then from its own array
                facts["part"] = comm.loaned("a", Box((4, 0), (6, 6)))
            else:
                # the next swap repays it while it waits for its message
                swap(comm, (), [(0, Boxes(host, row))])
            facts[f"repaid{round_}"] = a[0:5].copy()
            facts[f"loans{round_}"] = len(comm._loans)
        facts["row"] = a[9].copy()
        comm.barrier()
        out.put((rank, facts, comm.lent_loads, len(waited)))
    finally:
        comm.close()


@needs_shm
def test_a_lending_receiver_loads_from_the_sender_and_repays_later():
    (_, sender, _, _), (_, receiver, lent, waited) = on_processes(lending_receiver, 2)
    for r, before, value in ((0, 2, 1), (1, 1, 10)):
        assert receiver[f"lent{r}"] is True  # loaded from rank 0's array
        assert (receiver[f"own{r}"] == before).all()  # not copied in the swap
        assert (receiver[f"repaid{r}"] == value).all()  # copied when repaid
        assert receiver[f"loans{r}"] == 0
        assert sender[f"waited{r}"] >= 0.25  # rank 0 waited for the repayment
    assert receiver["part"] is None
    assert (receiver["row"] == 3).all()
    assert lent == 2 and waited >= 2  # each repayment waited for the loads first


def lending_chain(path: str, rank: int, size: int, out: mp.Queue) -> None:
    """Rank 0 sends a message a swap, each left in its arrays; rank 1 lends, so it repays
    each only by the end of its next swap. Before rank 0 writes the region of one message
    it waits for that one alone: the newer one is repaid only after its next message."""
    from bbmm.box import Box
    from bbmm.messages import Boxes, swap
    comm = shm.ShmComm(path, rank, 2, chunk=CHUNK)
    comm.direct_min = 100
    comm.defer_takes = True
    if rank == 1:
        comm.lend = True
        comm.wait_loads = lambda a, b: None
        comm.loads_done = lambda a, b: True
    try:
        arrays = {n: comm.share_array(n, (10, 7), np.float32) for n in ("a", "b")}
        for i, x in enumerate(arrays.values()):
            x[...] = 10 * i + rank
        comm.open_peers()
        comm.barrier()
        host = Host(**arrays)
        msgs = [[(n, Box((0, 0), (4, 6)))] for n in ("a", "b", "a", "b")]
        got = []
        for i, items in enumerate(msgs):
            comm.barrier()  # rank 1 took the message before: its mailbox is free
            if rank == 0:
                swap(comm, [(1, Boxes(host, items))], ())
                if i:  # the region of the message before this one is written again
                    name = msgs[i - 1][0][0]
                    comm.settle_sends(name, Box((0, 0), (4, 6)))
                    arrays[name][0:5] += 100
            else:
                swap(comm, (), [(0, Boxes(host, items))])
                got.append(arrays[items[0][0]][0:5].copy())
        comm.barrier()
        comm.repay()
        swap(comm, {}, {})  # a swap forgets the messages their receivers are done with
        out.put((rank, got, [x.copy() for x in arrays.values()], len(comm._untaken)))
    finally:
        comm.close()


@needs_shm
def test_a_sender_waits_only_for_the_message_it_overwrites():
    (_, _, sent, kept), (_, got, held, _) = on_processes(lending_chain, 2)
    assert kept <= 1  # rank 0 forgets what rank 1 is done with
    # what rank 1 held after each swap: its own array until the loan of the swap before
    # was repaid at the end of this one
    assert [float(g[0, 0]) for g in got] == [1.0, 11.0, 0.0, 10.0]
    assert float(held[0][0, 0]) == 100.0 and float(held[1][0, 0]) == 110.0  # the last sent
    assert float(sent[0][0, 0]) == 200.0


def test_share_array_falls_back_where_shared_memory_is_full(monkeypatch):
    path = shm.create(2, chunk=CHUNK)
    comm = shm.ShmComm(path, 0, 2, chunk=CHUNK)
    try:
        def refuse(*args):
            raise OSError(28, "No space left on device")
        monkeypatch.setattr(os, "posix_fallocate", refuse)
        assert comm.share_array("a", (1000,), np.float64) is None
        assert glob.glob(glob.escape(path) + ".*") == []
        comm.direct_min = None  # off: nothing shared
        monkeypatch.undo()
        assert comm.share_array("a", (1000,), np.float64) is None
    finally:
        comm.close()
        shm.remove(path)


def test_arrays_are_shared_only_in_memory(tmp_path):
    """A segment outside /dev/shm (a machine without it) lies on a disk, where arrays
    would be written back as the run goes: they stay private."""
    path = str(tmp_path / "seg.shm")
    with open(path, "wb") as f:
        f.truncate(shm.segment_size(2, CHUNK))
    comm = shm.ShmComm(path, 0, 2, chunk=CHUNK)
    try:
        assert not shm.in_memory(path) and shm.in_memory("/dev/shm/bbmm-x.shm")
        assert comm.share_array("a", (1000,), np.float64) is None
    finally:
        comm.close()


def test_regions_sent_and_received_apart():
    from bbmm.box import Box
    from bbmm.messages import apart
    a0, a1 = Box((0, 0), (4, 6)), Box((5, 0), (9, 6))
    assert apart([(1, [("a", a0)])], [(1, [("a", a1)])])
    assert apart([(1, [("a", a0)])], [(1, [("b", a0)])])  # other arrays
    assert apart([(1, [("a", a0)])], [])
    assert not apart([(1, [("a", a0)]), (2, [("a", a1)])], [(2, [("a", Box((4, 6), (5, 6)))])])


def written_back_loan(path: str, rank: int, size: int, out: mp.Queue) -> None:
    """Rank 1 lends, and a device of it copies the loan's one item into its own array
    (:meth:`ShmComm.written_back`): the repayment copies nothing, waits for the load from
    the loan alone, and tells rank 0, which then writes the region."""
    from bbmm.box import Box
    from bbmm.messages import Boxes, swap
    comm, a, waited = direct_pair(path, rank, 1 + rank)
    try:
        sent = [("a", Box((0, 0), (4, 6)))]
        facts: dict = {}
        if rank == 0:
            swap(comm, [(1, Boxes(Host(a=a), sent))], ())
            comm.settle_sends()  # until rank 1 is done with it
            a[0:5] = 10
        else:
            swap(comm, (), [(0, Boxes(Host(a=a), sent))])
            facts["lent"] = comm.loaned("a", Box((0, 0), (4, 6))) is not None

            class Device:  # the device that loaded it, as the directory tells
                def done(self, event):
                    return False

                def wait(self, event):
                    loads.append(event)

            loads: list = []
            comm.lent_load("a", Box((0, 0), (4, 6)), "the load", Device())
            comm.written_back("a", Box((0, 0), (4, 6)))
            facts["kept"] = len(comm._loans)  # still lent
            comm.repay()
            facts["waited for"] = loads
            facts["own"] = a[0:5].copy()  # as it was: the device's copy writes it
            facts["loans"] = len(comm._loans)
        comm.barrier()
        out.put((rank, facts, len(waited)))
    finally:
        comm.close()


@needs_shm
def test_a_loan_a_device_copies_back_is_repaid_without_a_copy():
    (_, _, _), (_, receiver, waited) = on_processes(written_back_loan, 2)
    assert receiver["lent"] is True and receiver["loans"] == 0 and receiver["kept"] == 1
    assert (receiver["own"] == 2).all()  # no processor copy of rank 0's 1s
    # the repayment waited for the load itself, not for every copy touching the region
    # (the device's copy back among them, queued behind its launches)
    assert receiver["waited for"] == ["the load"] and waited == 0


def test_a_rank_lets_go_of_the_slices_no_loan_holds():
    """The slices of another rank's array page-locked for loads (one per moving row, in
    a program whose large messages move) stay at most :data:`bbmm.shm.LENT_PAGES`: those
    no loan holds go first, one a loan holds stays."""
    from bbmm.box import Box
    path = shm.create(2, chunk=CHUNK)
    comm = shm.ShmComm(path, 1, 2, chunk=CHUNK)
    try:
        peer = np.zeros((300, 4), np.float32)
        comm._peer[0] = comm._peer_rw[0] = {"a": peer}
        locked: list = []
        comm.pin = lambda a: locked.append(a.nbytes) or a

        class Message:
            items = [("a", Box((250, 0), (250, 3)))]

        comm._loans.append(shm._Loan(0, Message, 0))
        view, origin = comm._lent_array(0, "a", Box((250, 0), (250, 3)))
        assert origin == (250, 0) and np.shares_memory(view, peer) and view.shape == (1, 4)
        for k in range(200):
            comm._lent_array(0, "a", Box((k, 0), (k, 3)))
            assert len(comm._lent[0]) <= shm.LENT_PAGES
        assert ("a", 250, 250) in comm._lent[0]  # its loan is still out
        assert len(locked) == 201  # each slice locked once, when first loaded
    finally:
        comm._loans.clear()
        comm.close()
        shm.remove(path)


def idle_worker(path: str, rank: int, size: int, out: mp.Queue) -> None:
    """Rank 1 waits for a message rank 0 sends late: meanwhile its swap does the work it
    was given (:attr:`ShmComm.idle_work`) at once, as long as that says there was some,
    then asks again at each look."""
    comm = shm.ShmComm(path, rank, 2, chunk=CHUNK)
    calls: list = []
    if rank == 1:
        comm.idle_work = lambda: calls.append(time.perf_counter()) or len(calls) < 3
    try:
        comm.barrier()
        if rank == 0:
            time.sleep(0.2)
            comm.exchange({1: np.arange(8, dtype=np.uint8)}, {})
            out.put((rank, None, None))
        else:
            t0 = time.perf_counter()
            got = comm.exchange({}, {0: 8})
            out.put((rank, [c - t0 for c in calls], got[0].tolist()))
    finally:
        comm.close()


@needs_shm
def test_a_swap_works_while_it_waits():
    (_, _, _), (_, calls, got) = on_processes(idle_worker, 2)
    assert got == list(range(8))
    # the first three calls one after the other (two found work), more while it waited
    assert len(calls) > 3 and calls[2] < 0.1 < calls[-1]


def copied_back_first(path: str, rank: int, size: int, out: mp.Queue) -> None:
    """Rank 1 lends a message and, at its next swap (whose message is already waiting),
    is given the device's copy back as work (:attr:`ShmComm.idle_work`): the swap gives
    it before it repays the loan at its end, so the processor copies nothing."""
    from bbmm.box import Box
    from bbmm.messages import Boxes, swap
    comm, a, _ = direct_pair(path, rank, 1 + rank)
    try:
        host = Host(a=a)
        sent = [("a", Box((0, 0), (4, 6)))]
        row = [("a", Box((9, 0), (9, 6)))]
        if rank == 0:
            swap(comm, [(1, Boxes(host, sent))], ())
            swap(comm, [(1, Boxes(host, row))], ())
            comm.barrier()
            comm.settle_sends()
            out.put((rank, None))
            return
        given: list = []

        def work():
            if given or not comm._loans:
                return False
            given.append(True)
            comm.written_back("a", Box((0, 0), (4, 6)))  # the device's copy back
            return True

        comm.idle_work = work
        swap(comm, (), [(0, Boxes(host, sent))])
        assert comm.loaned("a", Box((0, 0), (4, 6))) is not None
        comm.barrier()  # the row is waiting: the next swap never waits, and at its end
        swap(comm, (), [(0, Boxes(host, row))])  # repays the loan of the swap before
        out.put((rank, (len(comm._loans), a[0:5].copy(), a[9].copy(), len(given))))
    finally:
        comm.close()


@needs_shm
def test_a_swap_gives_the_copies_back_before_it_repays():
    (_, _), (_, (loans, own, row, given)) = on_processes(copied_back_first, 2)
    assert loans == 0 and given == 1
    assert (own == 2).all()  # not copied by the processor: the device copies it back
    assert (row == 1).all()  # the row came through the mailbox

"""The runtime over ranks (bbmm/distributed.py) without MPI: the bookkeeping against a
per-element model, the readers and message sizes it plans, and whole programs on null
devices with every rank in a thread of this process (a queue-based communicator)."""
from __future__ import annotations

import os
import queue
import threading

import numpy as np
import pytest

from bbmm.box import Box
from bbmm.devices import NullDevice
from bbmm.coherence import HostCopy
from bbmm.config import RuntimeConfig
from bbmm.distributed import DistributedRuntime
from bbmm.messages import pack, unpack
from bbmm.ownership import Ownership, plan_exchange, plan_gather, stages
from bbmm.runtime import Runtime, Tile

from support.drivers import (floyd_reference, gather, jacobi_reference, run_floyd, run_jacobi,
                     scatter, tiles_of)
from test_random_programs import MOD, make_program, random_box, reference


# {{{ an in-process communicator: one thread per rank

class Group:
    def __init__(self, size: int):
        self.size = size
        self.barrier = threading.Barrier(size, timeout=60)
        self.slots: list = [None] * size
        self.queues = {(s, d): queue.Queue() for s in range(size) for d in range(size)}


class ThreadComm:
    """The :class:`bbmm.messages.Comm` interface between threads (copies every buffer)."""

    def __init__(self, group: Group, rank: int):
        self.g, self.rank, self.size = group, rank, group.size

    def allgather(self, obj):
        self.g.slots[self.rank] = obj
        self.g.barrier.wait()
        out = list(self.g.slots)
        self.g.barrier.wait()
        return out

    def exchange(self, sends, recvs):
        for dst, buf in sends.items():
            assert dst != self.rank and buf.dtype == np.uint8
            self.g.queues[(self.rank, dst)].put(buf.copy())
        out = {}
        for src, n in recvs.items():
            out[src] = self.g.queues[(src, self.rank)].get(timeout=60)
            assert out[src].nbytes == n, "sender and receiver planned different sizes"
        return out


def on_ranks(nranks: int, fn):
    """Run ``fn(comm)`` on ``nranks`` threads; returns the results in rank order."""
    g = Group(nranks)
    out: list = [None] * nranks
    errors: list = []

    def body(r):
        try:
            out[r] = fn(ThreadComm(g, r))
        except BaseException as e:  # surfaced below
            errors.append(e)
            g.barrier.abort()

    ts = [threading.Thread(target=body, args=(r,)) for r in range(nranks)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]
    return out

# }}}


# {{{ Ownership against a per-element model

def test_ownership_matches_per_element_model():
    rng = np.random.default_rng(7)
    shape, nranks = (9, 7), 4
    for _ in range(40):
        own = Ownership(["x"])
        own.LIMIT = 1 << 30  # exact holders: no compaction (tested below against versions)
        owner = np.full(shape, -1)                      # -1: the initial value
        holds = np.ones(shape + (nranks,), dtype=bool)  # every rank holds the inputs
        for _ in range(25):
            b = random_box(rng, shape)
            r = int(rng.integers(0, nranks))
            if rng.integers(0, 2):
                own.wrote("x", b, r)
                owner[b.slices()] = r
                holds[b.slices()] = False
                holds[b.slices() + (r,)] = True
            else:
                own.received("x", b, r)
                holds[b.slices() + (r,)] = True
            got_owner = np.full(shape, -1)
            got_holds = np.ones(shape + (nranks,), dtype=bool)
            seen = np.zeros(shape, dtype=int)
            for rb, o, hs in own.records["x"]:
                seen[rb.slices()] += 1
                got_owner[rb.slices()] = o
                got_holds[rb.slices()] = False
                for h in hs:
                    got_holds[rb.slices() + (h,)] = True
                assert o in hs
            assert seen.max() <= 1, "records overlap"
            np.testing.assert_array_equal(got_owner, owner)
            np.testing.assert_array_equal(got_holds, holds)
            q = int(rng.integers(0, nranks))
            region = [random_box(rng, shape)]
            miss = np.zeros(shape, dtype=int)
            for o, mb in own.missing("x", q, region):
                assert (owner[mb.slices()] == o).all()
                miss[mb.slices()] += 1
            want = np.zeros(shape, dtype=int)
            want[region[0].slices()] = ~holds[region[0].slices() + (q,)]
            np.testing.assert_array_equal(miss, want)
            held = np.zeros(shape, dtype=int)
            for hb in own.held("x", q, Box.from_shape(shape)):
                held[hb.slices()] += 1
            np.testing.assert_array_equal(held, holds[..., q].astype(int))

# }}}


def test_host_newer_drops_older_dirty_values_and_stales_copies():
    """A rank's device holds x dirty (written, not flowed out); another rank's newer
    values arrive in the host copy: a later read takes them, and the flush at the end
    must not write the older device values over them."""
    n = 8
    rt_x = np.zeros(n, dtype=np.int64)
    dev = NullDevice(0, cap=1 << 16, arena_size=1 << 12, align=8)
    rt = Runtime([dev], {"x": rt_x}, verify=True)
    whole = Box((0,), (n - 1,))

    def add(d, tb):
        scatter(d, tb, "x", whole, gather(d, tb, "x", whole, np.int64) + 1)
    rt.run_phase([Tile(0, {"x": [whole]}, add, writes={"x": [whole]})])
    assert rt.directory.dirty["x"] and rt_x.sum() == 0
    part = Box((2,), (5,))
    rt_x[2:6] = 100  # what another rank sent
    rt.directory.host_newer("x", part)
    assert not any(r[0].overlaps(part) for r in rt.directory.dirty["x"])
    rt.run_phase([Tile(0, {"x": [whole]}, add, writes={"x": [whole]})])
    rt.finish()
    np.testing.assert_array_equal(rt_x, [2, 2, 101, 101, 101, 101, 2, 2])


# {{{ planning: readers, message sizes, stages

def _noop(dev, tb):
    return None


def floyd_tiles(n, k, ndev, tile):
    """Floyd's tiles at iteration ``k`` as the generated driver describes them (no kernel)."""
    out = []
    ntiles = -(-n // tile)
    for t in range(ntiles):
        lb, ub = t * tile, min(n - 1, t * tile + tile - 1)
        rows = Box((lb, 0), (ub, n - 1))
        out.append(Tile(min(ndev - 1, t * ndev // ntiles),
                        {"path": [rows, Box((lb, k), (ub, k)), Box((k, 0), (k, n - 1)), rows]},
                        _noop, writes={"path": [rows]}))
    return out


@pytest.mark.parametrize("nranks,per_rank", [(2, 1), (2, 2), (3, 1), (4, 2)])
def test_floyd_plan_sends_row_k_to_each_other_rank(nranks, per_rank):
    n = 24
    ndev = nranks * per_rank
    rank_of = [d // per_rank for d in range(ndev)]
    own = Ownership(["path"])
    row_owner = {}
    for k in range(n):
        tiles = floyd_tiles(n, k, ndev, -(-n // ndev))
        msgs = plan_exchange(own, tiles, rank_of)
        if k == 0:
            assert msgs == {}  # every rank holds the inputs
        else:
            o = row_owner[k]
            assert set(msgs) == {(o, r) for r in range(nranks) if r != o}
            for items in msgs.values():
                assert items == [("path", Box((k, 0), (k, n - 1)))]
        for t in tiles:
            for w in t.writes["path"]:
                own.wrote("path", w, rank_of[t.device])
                for i in range(w.lo[0], w.hi[0] + 1):
                    row_owner[i] = rank_of[t.device]


def test_fresh_arrays_need_no_data():
    own = Ownership(["a"])
    own.wrote("a", Box((0,), (9,)), 1)
    t = Tile(0, {"a": [Box((0,), (4,))]}, _noop, writes={"a": [Box((0,), (4,))]},
             fresh=frozenset({"a"}))
    assert plan_exchange(own, [t], [0, 1]) == {}
    t2 = Tile(0, {"a": [Box((0,), (4,))]}, _noop, writes={"a": [Box((0,), (4,))]})
    assert plan_exchange(own, [t2], [0, 1]) == {(1, 0): [("a", Box((0,), (4,)))]}


def test_overlapping_writes_of_two_ranks_run_in_stages():
    a, b, c = Box((0,), (5,)), Box((4,), (9,)), Box((10,), (12,))
    tiles = [Tile(d, {"x": [w]}, _noop, writes={"x": [w]}) for d, w in [(0, a), (1, b), (1, c)]]
    assert [len(s) for s in stages(tiles, [0, 1])] == [1, 2]
    assert [len(s) for s in stages(tiles, [0, 0])] == [3]  # one rank: its rounds order them
    disjoint_tiles = [tiles[0], tiles[2]]
    assert [len(s) for s in stages(disjoint_tiles, [0, 1])] == [2]


def test_gather_takes_each_region_from_its_owner_only():
    own = Ownership(["x"])
    own.wrote("x", Box((0,), (3,)), 0)
    own.wrote("x", Box((4,), (7,)), 1)
    own.wrote("x", Box((8,), (9,)), 2)
    own.received("x", Box((8,), (9,)), 0)  # rank 0 holds it already
    assert plan_gather(own, 0) == {(1, 0): [("x", Box((4,), (7,)))]}
    assert plan_gather(own, 0) == {}


def test_pack_unpack_round_trip_mixed_dtypes():
    rng = np.random.default_rng(0)
    src = HostCopy({"a": rng.random((5, 6)), "b": rng.integers(0, 9, (7,)).astype(np.int32)})
    dst = HostCopy({"a": np.zeros((5, 6)), "b": np.zeros(7, np.int32)})
    items = [("a", Box((1, 2), (3, 4))), ("b", Box((2,), (5,))), ("a", Box((4, 0), (4, 5)))]
    buf = pack(src, items)
    assert buf.nbytes == 9 * 8 + 4 * 4 + 6 * 8
    unpack(dst, items, buf)
    for name, b in items:
        np.testing.assert_array_equal(dst.array(name)[b.slices()], src.array(name)[b.slices()])
    assert dst.array("a")[0].sum() == 0


@pytest.mark.parametrize("box,view", [(Box((2, 0), (3, 5)), True),   # whole rows
                                      (Box((4, 1), (4, 3)), True),   # part of one row
                                      (Box((1, 1), (2, 3)), False)])  # a block: packed
def test_one_contiguous_box_is_sent_from_the_array_itself(box, view):
    src = HostCopy({"a": np.arange(30.0).reshape(5, 6)})
    dst = HostCopy({"a": np.zeros((5, 6))})
    buf = pack(src, [("a", box)])
    assert buf.dtype == np.uint8 and buf.nbytes == box.volume * 8
    assert np.shares_memory(buf, src.array("a")) == view
    unpack(dst, [("a", box)], buf)
    np.testing.assert_array_equal(dst.array("a")[box.slices()], src.array("a")[box.slices()])

# }}}


# {{{ whole programs over ranks (threads) on null devices

def floyd_input(n, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.integers(1, 100, size=(n, n)).astype(np.float32)
    np.fill_diagonal(p, 0)
    return p


def make(ndev, cap=1 << 24):
    return [NullDevice(i, cap=cap, arena_size=min(1 << 16, cap)) for i in range(ndev)]


@pytest.mark.parametrize("nranks,per_rank,tile,flowout,coherence", [
    (1, 2, 4, True, "exact"), (2, 1, 8, True, "exact"), (2, 2, 3, True, "exact"),
    (3, 1, 4, False, "exact"), (4, 1, 4, True, "block"), (2, 3, 2, False, "block")])
def test_floyd_over_ranks(nranks, per_rank, tile, flowout, coherence):
    n = 16
    path = floyd_input(n)

    def rank(comm):
        rt = DistributedRuntime(make(per_rank), {"path": path.copy()}, comm,
                                coherence=coherence, verify=True)
        run_floyd(rt, n, tile, flowout=flowout)
        return rt.host.array("path").copy(), rt.rank_stats

    out = on_ranks(nranks, rank)
    np.testing.assert_array_equal(out[0][0], floyd_reference(path))
    sent = sum(s.sent_bytes["exchange"] for _, s in out)
    assert sent == sum(s.received_bytes["exchange"] for _, s in out)
    # row k (k >= 1) from its owner to every other rank that runs tiles, nothing else
    active = {dev // per_rank for _, _, dev in tiles_of(n, tile, nranks * per_rank)}
    assert sent == (n - 1) * (len(active) - 1) * n * 4


class _Late(NullDevice):
    """A null device whose copies to the host report themselves unfinished until waited
    for (a GPU still busy with the tile before)."""

    waited = 0

    class Event:
        def __init__(self, dev):
            self.dev = dev

        def wait(self):
            self.dev.waited += 1

    def read_rect(self, *args, **kw):
        super().read_rect(*args, **kw)
        return self.Event(self)

    def done(self, event):
        return False

    def wait(self, event):
        event.wait()


@pytest.mark.parametrize("late", [False, True])
def test_owner_of_row_k_sends_before_its_tiles_when_the_row_is_home(late):
    """Floyd's owner of row k sends it before enqueuing its own tile when the copy that
    brought it home is done, else after its tile; the result is exact either way."""
    n, tile, nranks = 16, 4, 4
    path = floyd_input(n, 2)

    def rank(comm):
        dev = (_Late if late else NullDevice)(0, cap=1 << 24, arena_size=1 << 16)
        rt = DistributedRuntime([dev], {"path": path.copy()}, comm, verify=True)
        run_floyd(rt, n, tile)
        return rt.host.array("path").copy(), rt.rank_stats, getattr(dev, "waited", 0)

    out = on_ranks(nranks, rank)
    np.testing.assert_array_equal(out[0][0], floyd_reference(path))
    early = [s.sent_early for _, s, _ in out]
    if late:
        assert early == [0] * nranks and all(w > 0 for _, _, w in out)
    else:
        # every k but the first (row 0 was never computed on a device) sent early
        assert sum(early) >= n - 1 - nranks and all(e > 0 for e in early)


def test_tight_cap_forces_boxout_over_ranks():
    n, tile = 16, 4
    path = floyd_input(n, 1)
    cap = 4 * 16 * 4 + 16 * 4 + 32

    def rank(comm):
        rt = DistributedRuntime(make(1, cap), {"path": path.copy()}, comm, verify=True)
        run_floyd(rt, n, tile)
        return rt.host.array("path").copy(), sum(d.evictions for d in rt.stats.devices)

    out = on_ranks(2, rank)
    np.testing.assert_array_equal(out[0][0], floyd_reference(path))
    assert sum(e for _, e in out) > 0


@pytest.mark.parametrize("nranks,per_rank", [(2, 1), (3, 2)])
def test_jacobi_halo_rows_only(nranks, per_rank):
    n, steps = 14, 3
    rng = np.random.default_rng(3)
    A, B = rng.random((n, n)), np.zeros((n, n))

    def rank(comm):
        rt = DistributedRuntime(make(per_rank), {"A": A.copy(), "B": B.copy()}, comm,
                                verify=True)
        run_jacobi(rt, n, steps, tile=3)
        return rt.host.array("A").copy(), rt.host.array("B").copy(), rt.rank_stats

    out = on_ranks(nranks, rank)
    ra, rb = jacobi_reference(A, B, steps)
    np.testing.assert_array_equal(out[0][0], ra)
    np.testing.assert_array_equal(out[0][1], rb)
    # only halo rows of A move between steps: never more than 2 rows per neighbour pair
    for *_, st in out:
        for peer, nb in st.sent_to.items():
            assert nb <= (steps - 1) * 2 * (n - 2) * 8


@pytest.mark.parametrize("nranks", [2, 3])
@pytest.mark.parametrize("gate", [True, False])
def test_a_replayed_nest_is_queued_behind_a_gate_its_exchange_opens(nranks, gate):
    """Over ranks a replayed nest's halo copy in and launch are enqueued before its
    exchange, the copy behind a closed gate that the exchange opens once the halos are in
    the host's array (bbmm.replay._ahead, and in a replay up to a shift). The null device
    holds the commands behind the gate and runs them when it opens, and refuses what would
    block an OpenCL host (a copy behind a closed gate, a wait for a command behind one):
    the result is the sequential one either way. Without the gate's hold (the kernels run
    by the tiles' callbacks, at once) this run's result differs."""
    n, steps = 6 * nranks + 2, 12
    rng = np.random.default_rng(11)
    A, B = rng.random((n, n)), np.zeros((n, n))

    def rank(comm):
        rt = DistributedRuntime([NullDevice(0, gates=True)], {"A": A.copy(), "B": B.copy()},
                                comm, verify=True,
                                config=RuntimeConfig.from_env({"gate": "on" if gate else "off",
                                                              "edge": "0"}))
        run_jacobi(rt, n, steps, tile=(n - 2 + nranks - 1) // nranks, queued=True)
        st = rt.local.stats
        return rt.host.array("A").copy(), rt.host.array("B").copy(), st.gated, st.replayed

    out = on_ranks(nranks, rank)
    ra, rb = jacobi_reference(A, B, steps)
    np.testing.assert_array_equal(out[0][0], ra)
    np.testing.assert_array_equal(out[0][1], rb)
    for r, (*_, gated, replayed) in enumerate(out):
        assert replayed >= steps // 2
        if not gate:
            assert gated == 0
        elif r in (0, nranks - 1):
            # the sweep reading A's halo in each replayed step (a middle rank's two halos
            # are two copies in a replay up to a shift: a second copy behind a closed gate
            # would block, so its nests run in order)
            assert gated >= replayed, (r, gated, replayed)


@pytest.mark.parametrize("lend,least,gate", [(False, 8, True), (True, 8, False),
                                              (True, 1 << 20, True), (True, None, True)])
def test_an_exchange_gates_its_nest_only_where_its_halos_come_to_its_own_arrays(
        lend, least, gate):
    """A receiver that lends (its devices load a large message from its sender's arrays)
    learns where the halos are only in the exchange: its nest cannot be queued before it.
    A message under the communicator's ``direct_min`` (or none sent direct) lands in the
    receiver's own arrays."""
    A = np.zeros((8, 8))

    def rank(comm):
        comm.lend, comm.direct_min = lend, least
        rt = DistributedRuntime(make(1), {"A": A.copy()}, comm)
        msgs = {(1 - comm.rank, comm.rank): [("A", Box((0, 0), (0, 7)))],
                (comm.rank, 1 - comm.rank): [("A", Box((7, 0), (7, 7)))]}
        *_, exchange = rt._stage_messages(msgs)
        return exchange.gate

    assert on_ranks(2, rank) == [gate, gate]


def test_a_phase_reading_a_table_at_t_is_planned_once():
    """A small phase not named by a spec is looked up by its tiles without the boxes of
    arrays no record holds and the phase does not write (every rank has their values):
    a phase writing row 0 from ``T[t]`` (fdtd2d's ``_fict_[t]``) meets one plan and one
    placement every step, and the result is exact. Once ``T`` is written (records hold
    it), its boxes count again."""
    n, steps = 80, 6  # a row is small next to the phase writing the other rows
    A = np.arange(n * n, dtype=np.float64).reshape(n, n)
    T = np.arange(steps, dtype=np.float64) + 100.0
    row = Box((0, 0), (0, n - 1))
    halves = [Box((1, 0), (n // 2, n - 1)), Box((n // 2 + 1, 0), (n - 1, n - 1))]

    def set_row(t):
        def k(d, tb):
            scatter(d, tb, "A", row, np.full((1, n), gather(d, tb, "T", Box((t,), (t,)),
                                                             np.float64)[0]))
        return k

    def rank(comm):
        rt = DistributedRuntime(make(1), {"A": A.copy(), "T": T.copy()}, comm, verify=True)
        keys, plans = [], []
        for t in range(steps):
            rt.run_phase([Tile(d, {"A": [h]}, _noop, writes={"A": [h]})
                          for d, h in enumerate(halves)], serial=(t,))
            tile = Tile(1, {"A": [row], "T": [Box((t,), (t,))]}, set_row(t),
                        writes={"A": [row]}, fresh=frozenset({"A"}))
            keys.append(rt._bare_key([tile]))
            misses = rt.memo.misses + rt.memo.checked
            rt.run_phase([tile], serial=(t,))
            plans.append(rt.memo.misses + rt.memo.checked - misses)
            rt.end_serial((t,))
        # the plan of the steps after the first, kept by the tiles' key (the key is
        # used once it is met again)
        kept = len(rt.memo.by_spec), len(rt._placements)
        written = Tile(0, {"T": [Box((0,), (0,))]}, _noop, writes={"T": [Box((0,), (0,))]})
        rt.run_phase([written], serial=(steps,))
        late = [rt._bare_key([Tile(1, {"A": [row], "T": [Box((t,), (t,))]}, _noop,
                                   writes={"A": [row]})]) for t in (1, 2)]
        rt.finish()
        return rt.host.array("A").copy(), keys, plans, late, kept

    out = on_ranks(2, rank)
    for got, keys, plans, late, kept in out:
        assert len(set(keys)) == 1 and kept == (1, 1)
        assert sum(plans[2:]) == 0, plans   # planned afresh in the first steps only
        assert late[0] != late[1]
    want = A.copy()
    want[0, :] = T[steps - 1]
    np.testing.assert_array_equal(out[0][0], want)


@pytest.mark.parametrize("ranks,edge,split", [(2, "default", True), (2, "0", False),
                                               (3, "default", False), (3, "1", True)])
def test_ranks_run_halo_rows_first(ranks, edge, split, monkeypatch):
    """Over ranks a tile's flow-out goes to other processes: over two, by default, the rows
    writing it run first and the rest after it is stored (as BBMM_EDGE does between
    devices of one process); over more a tile runs whole by default (a middle rank's tile
    writes rows for two neighbours: two launches more per phase, which cost the host more
    than the hop they hide). BBMM_EDGE says otherwise either way, and the result is the
    same."""
    if edge != "default":
        monkeypatch.setenv("BBMM_EDGE", edge)
    n, steps = 8 * ranks, 3
    rng = np.random.default_rng(5)
    A, B = rng.random((n, n)), np.zeros((n, n))

    def rank(comm):
        rt = DistributedRuntime(make(1), {"A": A.copy(), "B": B.copy()}, comm, verify=True,
                                replay=False)
        run_jacobi(rt, n, steps, tile=(n - 2 + ranks - 1) // ranks, rows=True)
        return rt.host.array("A").copy(), rt.host.array("B").copy(), rt.local.stats.edge_first

    out = on_ranks(ranks, rank)
    ra, rb = jacobi_reference(A, B, steps)
    np.testing.assert_array_equal(out[0][0], ra)
    np.testing.assert_array_equal(out[0][1], rb)
    done = [e for *_, e in out]
    if split:
        assert all(e > 0 for e in done), done
    else:
        assert done == [0] * ranks


def test_distributed_result_stays_on_owners():
    n = 12
    path = floyd_input(n, 2)

    def rank(comm):
        rt = DistributedRuntime(make(1), {"path": path.copy()}, comm, gather=False)
        run_floyd(rt, n, 6)
        held = rt.held("path")
        return rt.host.array("path").copy(), held, rt.rank_stats

    out = on_ranks(2, rank)
    want = floyd_reference(path)
    cover = np.zeros((n, n), dtype=int)
    for arr, held, st in out:
        assert st.sent_bytes["gather"] == 0 and st.received_bytes["gather"] == 0
        for b in held:
            np.testing.assert_array_equal(arr[b.slices()], want[b.slices()])
            cover[b.slices()] += 1
    assert cover.min() >= 1
    # rank 0 does not hold rank 1's rows at the end: they were not gathered
    assert not np.array_equal(out[0][0], want)


@pytest.mark.parametrize("seed", range(int(os.environ.get("BBMM_RANDOM_SEEDS", "40"))))
def test_random_program_over_ranks(seed):
    """tests/runtime/test_random_programs.py's programs, over 1-3 ranks of 1-3 devices, with
    random flow-out sets, and write boxes that may over-approximate into another tile's
    rows (the phase then runs in stages); on half of them the devices' copies home report
    themselves unfinished until waited for, so that a stage that only sends waits for
    them after its tiles (:meth:`bbmm.distributed.DistributedRuntime._send_after`)."""
    rng = np.random.default_rng(1000 + seed)
    shape = (int(rng.integers(4, 14)), int(rng.integers(3, 10)))
    program = make_program(rng, shape)
    x = rng.integers(0, 1000, size=shape).astype(np.int64)
    nranks, per_rank = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    ndev = nranks * per_rank
    reuse = bool(rng.integers(0, 2))
    coh = ["exact", "block"][int(rng.integers(0, 2))]
    specs = []  # drawn once: every rank builds the same tiles
    for phases in program:
        for tiles in phases:
            row = []
            for i, (w, reads) in enumerate(tiles):
                claim = w
                if len(tiles) > 1 and rng.integers(0, 3) == 0:
                    claim = w.hull(tiles[int(rng.integers(0, len(tiles)))][0])
                choice = int(rng.integers(0, 3))
                fo = [] if choice == 0 else [w] if choice == 1 else [random_box(rng, shape)]
                row.append((i * ndev // len(tiles), claim, fo, bool(rng.integers(0, 2))))
            specs.append(row)
    late = bool(rng.integers(0, 2))

    def rank(comm):
        kind = _Late if late else NullDevice
        devs = [kind(i, cap=1 << 20, arena_size=1 << 16, align=8) for i in range(per_rank)]
        rt = DistributedRuntime(devs, {"x": x.copy()}, comm, reuse=reuse, coherence=coh,
                                verify=True)
        it = iter(specs)
        for s, phases in enumerate(program):
            for tiles in phases:
                spec = next(it)
                out = []
                for (w, reads), (dev, claim, fo, wo) in zip(tiles, spec):
                    def k(d, tb, w=w, reads=reads, s=s):
                        add = sum(int(gather(d, tb, "x", r, np.int64).sum()) for r in reads[1:])
                        scatter(d, tb, "x", w,
                                (gather(d, tb, "x", w, np.int64) * 3 + add + s) % MOD)
                    boxes = reads + ([claim] if claim != w else [])
                    out.append(Tile(dev, {"x": boxes}, k, writes={"x": [claim]},
                                    flowout={"x": [b for b in fo if b.intersect(claim)]},
                                    writeout={"x": [claim] if wo else []}))
                rt.run_phase(out, serial=s)
            rt.end_serial(s)
        rt.finish()
        return rt.host.array("x").copy()

    got = on_ranks(nranks, rank)[0]
    np.testing.assert_array_equal(
        got, reference(x, program),
        err_msg=f"ranks={nranks}x{per_rank} reuse={reuse} coh={coh} late={late}")


def _lu_like(comm, n, x, place):
    """LU's two nests per k with integers: row k scaled along j (a small phase whose
    tiles the driver spreads over every device), then the rows below it updated (tiled
    by rows). Returns the result on rank 0, this rank's messages and tiles moved by
    placement, and the longest list of ownership records."""
    import dataclasses
    from bbmm.config import RuntimeConfig

    cfg = dataclasses.replace(RuntimeConfig.from_env(), place=place)
    rt = DistributedRuntime([NullDevice(0, cap=1 << 22, arena_size=1 << 14, align=8)],
                            {"A": x.copy()}, comm, config=cfg)
    ndev = comm.size
    longest = 0
    for k in range(n - 1):
        scale = []
        for lb, ub, dev in tiles_of(n - k - 1, -(-(n - k - 1) // ndev), ndev):
            row = Box((k, k + 1 + lb), (k, k + 1 + ub))
            piv = Box((k, k), (k, k))

            def kern(d, tb, row=row, piv=piv):
                p = gather(d, tb, "A", piv, np.int64)[0, 0]
                scatter(d, tb, "A", row, (gather(d, tb, "A", row, np.int64) * 3 + p) % MOD)
            scale.append(Tile(dev, {"A": [row, piv]}, kern, writes={"A": [row]},
                              flowout={"A": [row]}))
        rt.run_phase(scale, serial=(k,))
        update = []
        for lb, ub, dev in tiles_of(n, -(-n // ndev), ndev):
            lo = max(lb, k + 1)
            if lo > ub:
                continue
            mine, col = Box((lo, k + 1), (ub, n - 1)), Box((lo, k), (ub, k))
            rowk = Box((k, k + 1), (k, n - 1))

            def kern(d, tb, mine=mine, col=col, rowk=rowk):
                a = gather(d, tb, "A", mine, np.int64)
                c = gather(d, tb, "A", col, np.int64)
                r = gather(d, tb, "A", rowk, np.int64)
                scatter(d, tb, "A", mine, (a + c * r) % MOD)
            update.append(Tile(dev, {"A": [mine, col, rowk]}, kern, writes={"A": [mine]},
                               flowout={"A": [Box((k + 1, k + 1), (k + 1, n - 1))]
                                        if lo <= k + 1 <= ub else []}))
        rt.run_phase(update, serial=(k,))
        rt.end_serial((k,))
        longest = max(longest, len(rt.own.records["A"]))
    rt.finish()
    return rt.host.array("A").copy(), rt.rank_stats.messages_sent, rt.placed, longest


def test_small_phase_runs_on_the_rank_holding_its_data():
    """LU's scaling of row k (tiled along j over every rank) runs on the rank that owns
    row k: one exchange per k (row k to the others) instead of two, the same result.
    The owner's writes then extend its own records, which stay compacted."""
    n, ranks = 136, 4  # the scaling phase small beside the update (bbmm.runtime.SMALL_PHASE)
    x = np.random.default_rng(5).integers(0, 1000, size=(n, n)).astype(np.int64)
    want = x.copy()
    for k in range(n - 1):
        want[k, k + 1:] = (want[k, k + 1:] * 3 + want[k, k]) % MOD
        want[k + 1:, k + 1:] = (want[k + 1:, k + 1:]
                                + want[k + 1:, k:k + 1] * want[k, k + 1:]) % MOD
    runs = {}
    for place in (True, False):
        out = on_ranks(ranks, lambda comm: _lu_like(comm, n, x, place))
        np.testing.assert_array_equal(out[0][0], want, err_msg=f"place={place}")
        runs[place] = (sum(o[1] for o in out), sum(o[2] for o in out))
        if place:
            assert max(o[3] for o in out) <= 2 * Ownership.LIMIT
    (msgs, placed), (msgs_static, placed_static) = runs[True], runs[False]
    assert placed_static == 0 and placed > 0
    # at most row k to each other rank per k, and the result gathered on rank 0
    assert msgs <= (ranks - 1) * (n - 1) + ranks - 1
    assert msgs_static > 2 * msgs


def test_ranks_of_one_machine_split_its_gpus():
    """node_share: a block of GPUs per rank when there are enough, else one each round-robin;
    CPU devices are shared by every rank."""
    from types import SimpleNamespace as NS

    from bbmm.devices.opencl import node_share
    gpus = [NS(type="GPU", name=f"g{i}") for i in range(4)]
    names = lambda ds: [d.name for d in ds]  # noqa: E731
    assert names(node_share(gpus, None)) == ["g0", "g1", "g2", "g3"]
    assert names(node_share(gpus, (1, 2))) == ["g2", "g3"]
    assert [names(node_share(gpus, (r, 3))) for r in range(3)] == [["g0"], ["g1"], ["g2", "g3"]]
    assert [names(node_share(gpus[:2], (r, 4))) for r in range(4)] == [["g0"], ["g1"], ["g0"], ["g1"]]
    cpu = [NS(type="CPU", name="c")]
    assert names(node_share(cpu, (1, 2))) == ["c"]


# }}}

# vim: foldmethod=marker


def test_on_root_sends_a_picklable_result_and_rebuilds_an_unpicklable_one():
    """bbmm.mpirun.on_root: rank 0 computes, the others receive its result; a result that
    cannot be pickled (islpy cannot pickle every set) is computed again by the others
    after rank 0, instead of failing on rank 0 while they wait."""
    from bbmm.mpirun import on_root

    class Bcast(ThreadComm):
        def bcast(self, obj, root=0):
            return self.allgather(obj if self.rank == root else None)[root]

    for make in (lambda: ["plain", 1], lambda: threading.Lock()):
        calls: list[int] = []

        def body(comm, make=make, calls=calls):
            def fn():
                calls.append(comm.rank)
                return make()
            return on_root(Bcast(comm.g, comm.rank), fn)

        out = on_ranks(3, body)
        if isinstance(out[0], list):
            assert calls == [0] and out == [["plain", 1]] * 3
        else:
            assert sorted(calls) == [0, 1, 2] and len({id(x) for x in out}) == 3


# {{{ Ownership kept short (merges, all-holder drops, compaction) stays safe

from hypothesis import given, settings, strategies as st  # noqa: E402

_N = 12


def _box(draw_box: tuple[int, int, int, int]) -> Box:
    r0, r1, c0, c1 = draw_box
    return Box((min(r0, r1), min(c0, c1)), (max(r0, r1), max(c0, c1)))


_boxes = st.tuples(*[st.integers(0, _N - 1)] * 4).map(_box)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["write", "read"]), st.integers(0, 2), _boxes),
                min_size=1, max_size=60), st.integers(1, 8))
def test_ownership_short_records_keep_every_rank_exact(ops, limit):
    """Against a brute-force model of which value each rank holds: whatever the merges,
    drops and compactions, a rank that asks for a region gets it from owners that hold
    its newest value, and then holds the newest value of all of it."""
    ranks = 3
    own = Ownership(["a"], ranks)
    own.LIMIT = limit  # compaction early and often
    version = np.zeros((_N, _N), int)
    holds = np.zeros((ranks, _N, _N), int)
    for op, r, b in ops:
        s = b.slices()
        if op == "write":
            version[s] += 1
            holds[r][s] = version[s]
            own.wrote("a", b, r)
        else:
            for owner, piece in own.missing("a", r, [b]):
                p = piece.slices()
                assert (holds[owner][p] == version[p]).all(), "sender lacks the newest value"
                holds[r][p] = version[p]
                own.received("a", piece, r)
            assert (holds[r][s] == version[s]).all(), "a rank still lacks part of its region"
        recs = own.records["a"]
        for i, (b1, _, _) in enumerate(recs):  # records stay disjoint
            assert not any(b1.overlaps(b2) for b2, _, _ in recs[i + 1:])
    for (owner, _), items in plan_gather(own, 0).items():  # the result, gathered on rank 0
        for _, piece in items:
            p = piece.slices()
            assert (holds[owner][p] == version[p]).all()
            holds[0][p] = version[p]
    assert (holds[0] == version).all()


def test_ownership_drops_what_every_rank_received_and_merges_own_strips():
    own = Ownership(["a"], 2)
    own.wrote("a", Box((0, 0), (0, 9)), 0)
    own.wrote("a", Box((1, 0), (1, 9)), 0)  # merges with row 0: one record
    assert own.records["a"] == [(Box((0, 0), (1, 9)), 0, frozenset({0}))]
    own.received("a", Box((0, 0), (0, 9)), 1)  # both ranks hold row 0: no record
    assert own.records["a"] == [(Box((1, 0), (1, 9)), 0, frozenset({0}))]


def test_ownership_compaction_keeps_other_owners_apart():
    own = Ownership(["a"], 3)
    for i in range(10):  # a staircase of rank 0's strips beside rank 1's column
        own.wrote("a", Box((i, 0), (i, i)), 0)
        own.wrote("a", Box((i, 11), (i, 11)), 1)
    own.compact("a")
    recs = own.records["a"]
    assert len(recs) <= 4
    for b, owner, _ in recs:
        if owner == 0:
            assert b.hi[1] < 11
    assert sum(b.volume for b, o, _ in recs if o == 1) == 10

# }}}



def test_a_store_into_a_region_left_for_a_receiver_waits_for_it():
    """A rank that leaves messages in its host arrays and goes on
    (:attr:`bbmm.shm.ShmComm.defer_takes`) waits for the receiver before a device copy
    into such a region is enqueued: every store of a run announces its region first."""
    from bbmm.box import Box as B
    from bbmm.distributed import _SharedHost
    from support.drivers import run_jacobi

    class Comm:
        lend = False

        def __init__(self):
            self.pending = [("A", B((0, 0), (0, 9)))]
            self.settled = 0

        def untaken(self, name, box):
            return any(a == name and b.overlaps(box) for a, b in self.pending)

        def settle_sends(self, name=None, box=None):
            self.settled += 1
            self.pending = [(a, b) for a, b in self.pending
                            if name is not None and not (a == name and b.overlaps(box))]

    comm = Comm()
    host = _SharedHost({"A": np.zeros((10, 10), np.float32),
                         "B": np.zeros((10, 10), np.float32)}, comm)
    assert isinstance(host, HostCopy)
    host.storing("B", B((0, 0), (0, 9)))
    host.storing("A", B((1, 0), (1, 9)))
    assert comm.settled == 0  # neither meets the region left for a receiver
    host.storing("A", B((0, 3), (2, 3)))
    assert comm.settled == 1 and comm.pending == []

    order: list = []

    class Announcing(HostCopy):
        def storing(self, name, box):
            order.append(("storing", name, box))

    class Logged(NullDevice):
        def read_rect(self, src, src_box, region, host, *a, **k):
            order.append(("store", region))
            return super().read_rect(src, src_box, region, host, *a, **k)

        def read_rects(self, src, src_box, regions, host, *a, **k):
            order.extend(("store", r) for r in regions)
            return super().read_rects(src, src_box, regions, host, *a, **k)

    n = 12
    arrays = Announcing({"A": np.random.default_rng(0).random((n, n), np.float32),
                         "B": np.zeros((n, n), np.float32)})
    rt = Runtime([Logged(i, cap=1 << 24, arena_size=1 << 16) for i in range(2)], arrays)
    run_jacobi(rt, n, 3, 5)
    rt.finish()
    stores = [i for i, e in enumerate(order) if e[0] == "store"]
    assert len(stores) >= 3 * 2  # flow-out rows every step, the write-outs at the end
    for i in stores:
        # announced before it was enqueued (a pair of regions announces both first)
        assert any(e[0] == "storing" and e[2] == order[i][1] for e in order[:i])


# {{{ steps moved on by some processes and planned for real by others

@pytest.mark.parametrize("name,n", [("lu", 480), ("floyd", 384)])
def test_processes_that_do_not_move_a_step_on_plan_it_as_those_that_do(name, n):
    """Over three ranks of the generated driver on dry devices, rank 1's own devices never
    move a step on (its local runtime builds every tile) while the others move most of
    them on. Rank 1 then places and plans its tiles by the plans the others moved on
    (kept by ``DistributedRuntime.ahead``), so every rank sends and receives
    exactly what it does when all build every tile, and the records end alike."""
    from bbmm.codegen.compile import compile_program, load_driver
    from bbmm.devices import DryDevice
    from bbmm.run import host_arrays, runtime_options
    from support.paths import POLYBENCH
    module = load_driver(compile_program(POLYBENCH / f"{name}.c"))
    params = {"n": n}
    arrays = host_arrays(module, params, [])

    def rank(comm, local_off):
        mine = {a: x.copy() for a, x in arrays.items()}
        rt = DistributedRuntime([DryDevice(0)], mine, comm,
                                **runtime_options(module, mine))
        rt.local.ahead_on = comm.rank not in local_off
        module.run(rt, params, {}, module.default_tile(params, comm.size), False)
        st = rt.rank_stats
        return (dict(st.sent_bytes), dict(st.received_bytes), st.messages_sent,
                rt.local.stats.ahead, {a: list(r) for a, r in rt.own.records.items()})

    every = on_ranks(3, lambda c: rank(c, {0, 1, 2}))
    mixed = on_ranks(3, lambda c: rank(c, {1}))
    for r, (a, b) in enumerate(zip(every, mixed)):
        assert a[:3] == b[:3], r
        assert a[4] == b[4], r
        assert a[3] == 0
    assert mixed[1][3] == 0 and mixed[0][3] > n // 2 and mixed[2][3] > n // 2

# }}}


def test_regions_sent_alike_to_several_ranks_are_settled_once():
    """Floyd's row ``k`` goes to every other process: its stores are refreshed and waited
    for once, not once per receiver; lists that differ each count."""
    from bbmm.distributed import _distinct
    row = [("A", Box((3, 0), (3, 9)))]
    col = [("A", Box((0, 3), (9, 3)))]
    assert _distinct([(0, row), (2, row), (3, list(row))]) == [row]
    assert _distinct([(0, row), (1, col), (2, row)]) == [row, col, row]
    assert _distinct([]) == []

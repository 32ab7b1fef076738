"""Replay up to a shift (bbmm/shifted.py) and the order keys it rests on
(bbmm/ordertype.py), on null devices.

As in test_replay.py every run is differential: the same driver with replay off gives
the arrays and every counter, including each device's log of copies and launches in
issue order; Floyd's numpy reference gives the arrays too.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bbmm import shifted
from bbmm.box import Box
from bbmm.devices import NullDevice
from bbmm.diagnostic import DeviceMemoryError
from bbmm.ordertype import Far, box_of, encode, order, volume_of
from bbmm.runtime import Runtime, Tile

from support.drivers import floyd_reference, gather, run_floyd, scatter, tiles_of
from test_replay import both, counters, make


def floyd_input(n, seed=5):
    return np.random.default_rng(seed).integers(1, 50, (n, n)).astype(np.float32)


@pytest.mark.parametrize("ndev,tile,flowout", [
    (1, 192, True), (2, 96, True), (3, 64, True), (4, 48, True), (2, 96, False)])
def test_floyd_steps_replay_up_to_a_shift(ndev, tile, flowout):
    """Floyd's step k moves row k: the steps of a block of rows that lie farther than
    GAP from its ends replay the template of an earlier step, moved with k (all but a
    few past GAP: recording pauses after misses near the ends, and a template is made,
    verified and followed before steps move on), and issue exactly the copies and
    launches (each region, in order) that the full bookkeeping issues."""
    n = 192
    path = floyd_input(n)
    on, off = both(lambda rt: run_floyd(rt, n, tile, flowout), ndev, {"path": path})
    np.testing.assert_array_equal(on.host.array("path"), floyd_reference(path))
    np.testing.assert_array_equal(on.host.array("path"), off.host.array("path"))
    assert counters(on) == counters(off)
    least = ndev * (tile - 2 * shifted.GAP - 10)
    assert on.stats.shifted == on.stats.replayed and on.stats.shifted >= least
    assert off.stats.shifted == 0
    assert on.shift_memo.verified >= 1 and on.shift_memo.rejected == 0


def test_floyd_under_a_tight_cap_replays_the_same_operations():
    """Row k's box on a device that does not own it takes what the cap leaves; the
    replayed steps allocate and free it from the pool as the bookkeeping does."""
    n, tile = 128, 64
    path = floyd_input(n, 7)
    cap = n * tile * 4 + 2 * n * 4 + 1024
    on, off = both(lambda rt: run_floyd(rt, n, tile), 2, {"path": path}, cap=cap, arena=4096)
    np.testing.assert_array_equal(on.host.array("path"), floyd_reference(path))
    assert counters(on) == counters(off)
    assert on.stats.shifted > 0


def test_a_replayed_launch_whose_pieces_did_not_move_takes_its_buffers_again():
    """The tile of the device holding row k has the same pieces every step of a block:
    its replays hand its kernel the buffers of the replay before (the launch prepared
    for them), the tile reading row k from a transient box new ones; either way the
    pieces are those the step's bookkeeping gives, and the result is exact."""
    n, tile = 192, 96
    path = floyd_input(n, 3)
    seen = []

    class Watch(Runtime):
        def _launch(self, t, tb, rows=None, args=None, at=None):
            seen.append((tb, [(a, [(b, id(c)) for b, c in ps]) for a, ps in tb.pieces.items()]))
            return super()._launch(t, tb, rows, args, at)

    rt = Watch(make(2), {"path": path.copy()}, replay=True)
    run_floyd(rt, n, tile)
    np.testing.assert_array_equal(rt.host.array("path"), floyd_reference(path))
    last = {}
    again = 0
    for tb, pieces in seen:
        before = last.get(id(tb))
        if before is not None:
            again += 1
            assert before[0] is tb and before[1] == pieces
        last[id(tb)] = (tb, pieces)
    assert rt.stats.shifted > n // 2 and again >= rt.stats.shifted // 2
    assert len(last) > n // 2  # the transient row's tile: new buffers every step


def test_a_transient_box_that_does_not_fit_runs_the_step_for_real(monkeypatch):
    """When the pool refuses a replayed step's transient box, nothing of the step has been
    issued: it runs with the full bookkeeping instead (which may box out), and the run
    stays exact."""
    n, tile = 192, 96
    path = floyd_input(n, 9)
    refuse = {"on": False, "left": 0, "refused": 0}
    real_alloc = NullDevice.alloc

    def alloc(self, nbytes):
        if refuse["on"] and refuse["left"] == 0:
            refuse["refused"] += 1
            raise DeviceMemoryError(self.name, nbytes, 0, self.cap, "refused by the test")
        refuse["left"] = max(0, refuse["left"] - 1)
        return real_alloc(self, nbytes)

    real_replay = shifted.replay_shifted
    calls = {"n": 0}

    def replay_shifted(rt, tpl, bases, phases):
        calls["n"] += 1
        refuse["on"] = calls["n"] % 3 == 0  # every third replay: the first alloc fails
        try:
            return real_replay(rt, tpl, bases, phases)
        finally:
            refuse["on"] = False

    monkeypatch.setattr(NullDevice, "alloc", alloc)
    monkeypatch.setattr("bbmm.runtime.replay_shifted", replay_shifted)
    on, off = both(lambda rt: run_floyd(rt, n, tile), 2, {"path": path})
    np.testing.assert_array_equal(on.host.array("path"), floyd_reference(path))
    assert counters(on) == counters(off)
    assert refuse["refused"] > 0
    assert 0 < on.stats.shifted < calls["n"]


def test_a_contradicted_template_is_dropped(monkeypatch):
    """A later iteration of the same key that encodes to another template (a decision a
    volume took differently) drops the key for good; one that encodes the same verifies
    it, and only a verified template is handed back for replay."""
    def tpl(ops):
        return shifted.Template("k", (), (1,), (), ops, (), (), (), (), 1, 0, ())

    made = iter([tpl(("a",)), tpl(("a",)), tpl(("b",)), tpl(("b",)), tpl(("a",))])
    monkeypatch.setattr(shifted, "encode_iteration", lambda rt, tape: next(made))
    memo = shifted.ShiftMemo()
    assert memo.close(None, None) is None and memo.made == 1   # kept, not verified
    got = memo.close(None, None)                               # the same: verified
    assert got is not None and got.verified and memo.verified == 1
    memo.templates.clear()
    assert memo.close(None, None) is None                      # kept ("b")
    assert memo.close(None, None).ops == ("b",)                # "b" again: verified...
    assert memo.close(None, None) is None and memo.rejected == 1  # ..."a": contradicted
    assert memo.templates["k"] is None


def _floyd_in_parts(ndev, tile, n, path, replay):
    from bbmm.config import RuntimeConfig
    # as a process of several, whose flow-out other processes read
    rt = Runtime(make(ndev), {"path": path.copy()}, verify=True, replay=replay,
                 shared_flowout=True, config=RuntimeConfig(edge=1))
    run_floyd(rt, n, tile, parts=True)
    return rt


@pytest.mark.parametrize("ndev,tile,least", [(1, 192, 96), (2, 96, 48), (3, 64, 12),
                                             (4, 48, 8)])
def test_tiles_run_in_parts_replay_up_to_a_shift(ndev, tile, least):
    """The owner of row k + 1 runs that row first, stores it, then the rest of its tile:
    replayed steps decode the rows of each part with k and issue exactly the launches
    (each part's rows) and copies of the full bookkeeping."""
    n = 192
    path = floyd_input(n, 11)
    on, off = (_floyd_in_parts(ndev, tile, n, path, r) for r in (True, False))
    np.testing.assert_array_equal(on.host.array("path"), floyd_reference(path))
    np.testing.assert_array_equal(on.host.array("path"), off.host.array("path"))
    assert counters(on) == counters(off)
    assert on.stats.edge_first == off.stats.edge_first > n // 2
    assert on.stats.shifted >= least
    assert any(t and t.parted for t in on.shift_memo.templates.values())


def test_parts_that_differ_at_replay_run_the_step_for_real(monkeypatch):
    """A replay computes each part-run tile's parts afresh before it issues anything;
    where they are other than the template's, the step runs for real, and the run
    stays exact."""
    n, tile = 192, 96
    path = floyd_input(n, 13)
    real_edges = Runtime._edges
    state = {"in_replay": False, "calls": 0, "moved": 0}

    def edges(self, t, flows):
        parts = real_edges(self, t, flows)
        if state["in_replay"] and parts is not None:
            state["calls"] += 1
            if state["calls"] % 2 == 0:  # every other check: the first part one row longer
                state["moved"] += 1
                (r0, r1), = parts[0]
                return [(r0, r1 + 1)], [(r1 + 2, parts[1][-1][1])]
        return parts

    real_replay = shifted.replay_shifted
    done = {"ok": 0, "refused": 0}

    def replay_shifted(rt, tpl, bases, phases):
        state["in_replay"] = True
        try:
            ok = real_replay(rt, tpl, bases, phases)
        finally:
            state["in_replay"] = False
        done["ok" if ok else "refused"] += 1
        return ok

    monkeypatch.setattr(Runtime, "_edges", edges)
    monkeypatch.setattr("bbmm.runtime.replay_shifted", replay_shifted)
    on = _floyd_in_parts(2, tile, n, path, True)
    monkeypatch.undo()
    off = _floyd_in_parts(2, tile, n, path, False)
    np.testing.assert_array_equal(on.host.array("path"), floyd_reference(path))
    assert counters(on) == counters(off)
    assert state["moved"] > 0 and done["refused"] >= state["moved"] and done["ok"] > 0


def test_stencil_steps_stay_exact_fixed_points():
    """An iteration that repeats exactly is replayed by bbmm.replay, not up to a shift."""
    from test_replay import jacobi_input, run_jacobi
    A, B = jacobi_input(16)
    on, off = both(lambda rt: run_jacobi(rt, 16, 12, 7), 2, {"A": A, "B": B})
    assert counters(on) == counters(off)
    assert on.stats.replayed > 0 and on.stats.shifted == 0


def test_no_replay_keeps_no_templates():
    n = 64
    rt = Runtime(make(2), {"path": floyd_input(n)}, replay=False)
    run_floyd(rt, n, 32)
    assert rt.stats.replayed == 0 and not rt.shift_memo.templates


# ---- bbmm.ordertype ----------------------------------------------------------------

GAP, SHIFT = shifted.GAP, shifted.SHIFT

coords = st.lists(st.integers(-500, 500), min_size=2, max_size=12)


def _flat(boxes):
    f = []
    for b in boxes:
        f += b.lo
        f += b.hi
    return f


def _sign(v):
    return (v > 0) - (v < 0)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-60, 60), min_size=2, max_size=8, unique=True), st.data())
def test_a_key_decides_every_comparison_within_shift_of_its_coordinates(vals, data):
    """Two lists of coordinates with one key (the same order, the same gaps below GAP,
    any gaps from GAP up) compare alike once each coordinate is moved by at most SHIFT:
    every decision a template replays for the second was made so for the first. This is
    what GAP = 2 * SHIFT + 1 rests on."""
    ds = sorted(vals)
    other = [ds[0]]
    for x, y in zip(ds, ds[1:]):
        g = y - x if y - x < GAP else data.draw(st.integers(GAP, GAP + 200))
        other.append(other[-1] + g)
    perm = data.draw(st.permutations(range(len(ds))))
    a, b = [ds[i] for i in perm], [other[i] for i in perm]
    assert order({"x": a}, {"x": 1}, GAP)[0] == order({"x": b}, {"x": 1}, GAP)[0]
    for i in range(len(a)):
        for j in range(len(a)):
            for p in range(-SHIFT, SHIFT + 1):
                for q in range(-SHIFT, SHIFT + 1):
                    assert _sign(a[i] + p - a[j] - q) == _sign(b[i] + p - b[j] - q)


def test_a_smaller_cap_would_let_a_key_hide_a_decision():
    """With gaps capped one unit below GAP, two lists of one key compare differently
    within SHIFT of their coordinates: GAP is the least cap that keeps them alike."""
    near, far = [0, 2 * SHIFT], [0, 2 * SHIFT + 50]
    assert order({"x": near}, {"x": 1}, GAP - 1)[0] == order({"x": far}, {"x": 1}, GAP - 1)[0]
    assert near[0] + SHIFT == near[1] - SHIFT and far[0] + SHIFT < far[1] - SHIFT
    assert order({"x": near}, {"x": 1}, GAP)[0] != order({"x": far}, {"x": 1}, GAP)[0]


@settings(max_examples=200, deadline=None)
@given(coords, st.data())
def test_encode_then_decode_is_the_box(vals, data):
    """A box whose every bound lies within SHIFT of an input coordinate of its dimension
    encodes, and decodes to itself; one farther than SHIFT from all of them is Far."""
    inputs = [Box((min(a, b), 0), (max(a, b), 5)) for a, b in zip(vals, reversed(vals))]
    _, bases = order({"x": _flat(inputs)}, {"x": 2}, GAP)
    lo = data.draw(st.sampled_from(vals)) + data.draw(st.integers(-SHIFT, SHIFT))
    hi = data.draw(st.sampled_from(vals)) + data.draw(st.integers(-SHIFT, SHIFT))
    b = Box((lo, 0), (hi, 5))
    assert box_of(encode(b, bases["x"], SHIFT), bases["x"]) == b
    # a deferred write-out's count, taken without the box: empty boxes (lo > hi) too
    assert volume_of(encode(b, bases["x"], SHIFT), bases["x"]) == b.volume
    far = max(vals) + SHIFT + 1
    with pytest.raises(Far):
        encode(Box((far, 0), (far, 5)), bases["x"], SHIFT)


@settings(max_examples=200, deadline=None)
@given(coords, st.integers(1, 300), st.data())
def test_a_shift_that_keeps_the_order_moves_decoded_boxes_along(vals, by, data):
    """Moving every coordinate from some far gap upward by ``by`` keeps the key; a box
    encoded before decodes afterwards to the box moved the same way (what a replay
    relies on: the template's boxes move with the coordinates they came from)."""
    ds = sorted(set(vals))
    gaps = [i for i in range(1, len(ds)) if ds[i] - ds[i - 1] >= GAP + 2 * SHIFT]
    if not gaps:
        return
    cut = ds[data.draw(st.sampled_from(gaps))]

    def move(v):
        return v + by if v >= cut - SHIFT else v

    inputs = [Box((min(a, b),), (max(a, b),)) for a, b in zip(vals, reversed(vals))]
    moved = [Box((move(b.lo[0]),), (move(b.hi[0]),)) for b in inputs]
    key, bases = order({"x": _flat(inputs)}, {"x": 1}, GAP)
    key2, bases2 = order({"x": _flat(moved)}, {"x": 1}, GAP)
    assert key == key2
    lo = data.draw(st.sampled_from(vals)) + data.draw(st.integers(-SHIFT, SHIFT))
    hi = data.draw(st.sampled_from(vals)) + data.draw(st.integers(-SHIFT, SHIFT))
    enc = encode(Box((lo,), (hi,)), bases["x"], SHIFT)
    assert box_of(enc, bases2["x"]) == Box((move(lo),), (move(hi),))
    assert volume_of(enc, bases2["x"]) == Box((move(lo),), (move(hi),)).volume


@pytest.mark.parametrize("written", [False, True])
@pytest.mark.parametrize("nranks,per_rank,tile", [(2, 1, 96), (3, 1, 64), (2, 2, 48)])
def test_floyd_over_ranks_replays_up_to_a_shift(nranks, per_rank, tile, written, monkeypatch):
    """Over ranks (threads), a stage's exchange runs where the template marks it, with
    this step's regions: every rank's arrays, device operations and exchanged bytes are
    those of the run without replay; with the templates' replays walked, or written out
    from their first (``written``)."""
    from bbmm.distributed import DistributedRuntime
    if written:
        monkeypatch.setattr(shifted, "WRITE_AFTER", 1)
    from test_distributed import on_ranks
    n = 192
    path = floyd_input(n, 3)
    runs = {}
    for replay in (True, False):
        def rank(comm, replay=replay):
            rt = DistributedRuntime(make(per_rank), {"path": path.copy()}, comm,
                                    verify=True, replay=replay)
            run_floyd(rt, n, tile)
            return (rt.host.array("path").copy(), counters(rt.local),
                    dict(rt.rank_stats.sent_bytes), rt.local.stats.shifted)
        runs[replay] = on_ranks(nranks, rank)
    np.testing.assert_array_equal(runs[True][0][0], floyd_reference(path))
    for on, off in zip(runs[True], runs[False]):
        np.testing.assert_array_equal(on[0], off[0])
        assert on[1:3] == off[1:3]
    assert all(r[3] > 0 for r in runs[True]) and all(r[3] == 0 for r in runs[False])


@pytest.mark.parametrize("nranks,tile", [(2, 96), (3, 64)])
def test_floyd_over_ranks_queues_row_k_behind_a_gate(nranks, tile):
    """A receiver of row ``k`` enqueues its copy in and its launch before the exchange
    that brings the row, behind a gate the exchange opens (a replay up to a shift): the
    null devices hold them until then, and the result is the sequential one."""
    from bbmm.config import RuntimeConfig
    from bbmm.distributed import DistributedRuntime
    from test_distributed import on_ranks
    n = 192
    path = floyd_input(n, 3)

    def rank(comm):
        rt = DistributedRuntime([NullDevice(0, cap=1 << 24, arena_size=1 << 16, gates=True)],
                                {"path": path.copy()}, comm, verify=True,
                                config=RuntimeConfig.from_env({"gate": "on"}))
        run_floyd(rt, n, tile, queued=True)
        return rt.host.array("path").copy(), rt.local.stats.gated

    out = on_ranks(nranks, rank)
    np.testing.assert_array_equal(out[0][0], floyd_reference(path))
    assert all(g > n // 8 for _, g in out), [g for _, g in out]


# ---- random programs whose boxes move with the serial loop ---------------------------

def _moving_program(rng):
    """A Floyd-like program with random motion: at step k every tile reads its rows, a
    strip of ``w`` columns of them starting at column c(k) and one whole row r(k), and
    rewrites its rows but row r(k); r and c move by a random step (0, 1, 2 or -1),
    wrapping around at the array's end (where no template may carry over)."""
    n = int(rng.integers(80, 145))
    ndev = int(rng.integers(1, 5))
    return {
        "n": n, "ndev": ndev, "steps": int(rng.integers(n // 2, 2 * n)),
        "rs": int(rng.choice([0, 1, 2, -1])), "ro": int(rng.integers(0, n)),
        "cs": int(rng.choice([0, 1, -1])), "co": int(rng.integers(0, n)),
        "w": int(rng.integers(1, 4)), "per_dev": int(rng.integers(1, 3)) if ndev < 3 else 1,
        "flowout": bool(rng.integers(0, 2)), "tight": bool(rng.integers(0, 2)),
    }


def _positions(p, k):
    n = p["n"]
    return (p["ro"] + p["rs"] * k) % n, min((p["co"] + p["cs"] * k) % n, n - p["w"])


def _moving_step(A, p, k, lb, ub):
    """What the tile of rows lb..ub does at step k, on ``A`` as the tile sees it."""
    r, c = _positions(p, k)
    block = A[lb:ub + 1]
    new = np.minimum(block, block[:, c:c + p["w"]].min(axis=1)[:, None] + A[r][None, :])
    if lb <= r <= ub:
        new[r - lb] = block[r - lb]
    return new


def run_moving(rt, p):
    n, w = p["n"], p["w"]
    ntiles = p["ndev"] * p["per_dev"]
    tile = -(-n // ntiles)
    dt = rt.host.array("A").dtype
    for k in range(p["steps"]):
        r, c = _positions(p, k)
        nr, _ = _positions(p, k + 1)
        tiles = []
        for lb, ub, dev in tiles_of(n, tile, p["ndev"]):
            rows = Box((lb, 0), (ub, n - 1))
            strip, row = Box((lb, c), (ub, c + w - 1)), Box((r, 0), (r, n - 1))

            def kernel(d, tb, lb=lb, ub=ub, rows=rows, strip=strip, row=row, k=k):
                A = np.zeros((n, n), dt)
                A[lb:ub + 1] = gather(d, tb, "A", rows, dt)
                A[row.lo[0]] = gather(d, tb, "A", row, dt)[0]
                scatter(d, tb, "A", rows, _moving_step(A, p, k, lb, ub))

            fo = [Box((nr, 0), (nr, n - 1))] if p["flowout"] and lb <= nr <= ub else []
            tiles.append(Tile(dev, {"A": [rows, strip, row]}, kernel, writes={"A": [rows]},
                              flowout={"A": fo},
                              writeout={"A": [rows]} if k == p["steps"] - 1 else {},
                              cleanup={"A": [False, False, True]}, name=f"k{k}:{lb}"))
        rt.run_phase(tiles, serial=k)
        rt.end_serial(k)
    rt.finish()


def moving_reference(A, p):
    A = A.copy()
    n = p["n"]
    tile = -(-n // (p["ndev"] * p["per_dev"]))
    for k in range(p["steps"]):
        before = A.copy()
        for lb, ub, _ in tiles_of(n, tile, p["ndev"]):
            A[lb:ub + 1] = _moving_step(before, p, k, lb, ub)
    return A


def test_iterations_cycling_through_templates_replay_by_their_own():
    """Row r(k) = (1 + 6k) mod 30 comes back every five steps, each step at another
    distance from the tile boundaries than the one before: no step matches the template
    of the step before it, but each matches the template verified five or ten steps
    earlier, which the replay looks up by the step's key. The run stays exact, transfer
    for transfer."""
    p = {"n": 30, "ndev": 2, "steps": 80, "rs": 6, "ro": 1, "cs": 0, "co": 2, "w": 2,
         "per_dev": 1, "flowout": True, "tight": False}
    rng = np.random.default_rng(4)
    A = rng.integers(0, 100, (30, 30)).astype(np.float64)
    on, off = both(lambda rt: run_moving(rt, p), 2, {"A": A})
    np.testing.assert_array_equal(on.host.array("A"), moving_reference(A, p))
    np.testing.assert_array_equal(on.host.array("A"), off.host.array("A"))
    assert counters(on) == counters(off)
    assert on.shift_memo.found >= p["steps"] // 2
    assert on.stats.shifted >= on.shift_memo.found


def _random_moving(seed):
    """Random moving program ``seed``, its input, and its cap (generous or tight)."""
    rng = np.random.default_rng(1000 + seed)
    p = _moving_program(rng)
    n = p["n"]
    A = rng.integers(0, 100, (n, n)).astype(np.float64)
    tile = -(-n // (p["ndev"] * p["per_dev"]))
    cap = (p["per_dev"] * tile + 3) * n * 8 + 4096 if p["tight"] else 1 << 24
    return p, A, cap


@pytest.mark.parametrize("seed", range(40))
def test_random_moving_programs_replay_exactly(seed, monkeypatch):
    """Random programs whose boxes move with k (and wrap around), on 1-4 devices, with and
    without flow-out sets, under a generous or a tight cap: the arrays equal numpy's, and
    every transfer in order and every counter equal the run without replay (odd seeds
    with every template's replay written out from its first)."""
    if seed % 2:
        monkeypatch.setattr(shifted, "WRITE_AFTER", 1)
    p, A, cap = _random_moving(seed)
    on, off = both(lambda rt: run_moving(rt, p), p["ndev"], {"A": A}, cap=cap,
                   arena=min(cap, 1 << 16))
    np.testing.assert_array_equal(on.host.array("A"), moving_reference(A, p))
    np.testing.assert_array_equal(on.host.array("A"), off.host.array("A"))
    assert counters(on) == counters(off)


def test_random_moving_programs_do_replay_up_to_a_shift():
    """The random programs above are not vacuous: most of them replay steps up to a
    shift (blocks of rows longer than twice GAP have steps that repeat so)."""
    shifted_runs = 0
    for seed in range(40):
        rng = np.random.default_rng(1000 + seed)
        p = _moving_program(rng)
        A = rng.integers(0, 100, (p["n"], p["n"])).astype(np.float64)
        rt = Runtime(make(p["ndev"]), {"A": A}, replay=True)
        run_moving(rt, p)
        shifted_runs += rt.stats.shifted > 0
    assert shifted_runs >= 20


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-40, 40), min_size=3, max_size=15),
       st.lists(st.integers(-3, 3), min_size=15, max_size=15), st.integers(1, 3))
def test_bases_moved_on_are_those_of_the_coordinates_moved_on(values, moves, ndim):
    """``moved_on`` (the chain's bases, moved on and checked on the distinct coordinates
    alone) against ordering the moved coordinates afresh (``bases_like`` of every
    position): the same bases where the key still holds, None where it does not; an
    array none of whose coordinates move keeps its bases."""
    from bbmm.ordertype import bases_like, delta, moved_on, shape
    flat = {"A": values[: len(values) // ndim * ndim], "B": values[:2]}
    ndims = {"A": ndim, "B": 1}
    orders, bases = order(flat, ndims, shifted.GAP)
    key = shape(orders, flat, ndims)
    # each distinct coordinate of each dimension moves by its own amount
    by = {"A": [[moves[(i + 5 * d) % len(moves)] for i in range(len(ds))]
                for d, ds in enumerate(bases["A"][:-1])],
          "B": [[0] * len(bases["B"][0])]}
    moved = {"A": [v + by["A"][p % ndim][bases["A"][p % ndim].index(v)]
                   for p, v in enumerate(flat["A"])], "B": flat["B"]}
    want = bases_like(key, moved, shifted.GAP)
    got = moved_on(key, bases, by, shifted.GAP)
    assert got == want
    if got is not None:
        assert delta(got, bases) == by
        assert got["B"] is bases["B"]


_LAUNCH = st.tuples(
    st.lists(st.one_of(st.integers(-99, 99), st.integers(-99, 99).map(np.int32)),
             min_size=0, max_size=4),
    st.lists(st.tuples(st.integers(-50, 50), st.integers(-50, 50)), min_size=0, max_size=3))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.tuples(_LAUNCH, _LAUNCH), min_size=1, max_size=4), min_size=1,
                max_size=3))
def test_launches_moved_on_by_written_out_steps_are_those_of_the_walk(rows):
    """A chain's launches moved on by straight-line code (``_ats_mover``) are the walk's
    (``_ats_moved``): the same scalars, as int32 where they move, the same grids, and a
    launch's scalars a list of its own where they move, whatever moves and stays."""
    ats0, ats1 = [], []
    for row in rows:
        r0, r1 = [], []
        for (s0, g0), (s1, g1) in row:
            n, m = min(len(s0), len(s1)), min(len(g0), len(g1))
            r0.append((list(s0[:n]), tuple(g0[:m])))
            r1.append((list(s1[:n]), tuple(g1[:m])))
        ats0.append(r0)
        ats1.append(r1)
    dats = [[shifted._at_delta(a, b) for a, b in zip(r0, r1)] for r0, r1 in zip(ats0, ats1)]
    steps = shifted._at_steps(dats)
    want = shifted._ats_moved(ats1, steps)
    got = shifted._ats_mover(steps)(ats1)
    assert got == want
    for rg, rw, r1 in zip(got, want, ats1):
        for (sg, gg), (sw, gw), (s1, _) in zip(rg, rw, r1):
            assert [type(x) for x in sg] == [type(x) for x in sw]
            assert (sg is s1) == (sw is s1)


@pytest.mark.parametrize("seed", range(0, 40, 2))
def test_the_written_out_replay_is_the_walked_one(seed, monkeypatch):
    """A template's replay written out as straight-line code (bbmm/shiftcode.py) issues
    what the walk over its operations issues, transfer for transfer, and leaves the same
    records: random moving programs, with and without a tight cap, run both ways."""
    from bbmm import runtime as runtime_mod
    p, A, cap = _random_moving(seed)
    monkeypatch.setattr(shifted, "WRITE_AFTER", 1)
    runs, states = [], []
    for replay_fn in (shifted.replay_shifted, shifted.replay_walked):
        monkeypatch.setattr(runtime_mod, "replay_shifted", replay_fn)
        rt = Runtime(make(p["ndev"], cap=cap, arena=min(cap, 1 << 16)), {"A": A.copy()},
                     verify=True, replay=True)
        seen = []
        end = rt.end_serial

        def end_serial(serial=None, rt=rt, end=end, seen=seen):
            end(serial)
            d = rt.directory
            seen.append(([(b, h.device.index, h.box) for b, h in d.dirty["A"]],
                         [(c.device.index, c.box, list(c.stale)) for c in d.copies["A"]]))
        rt.end_serial = end_serial
        run_moving(rt, p)
        runs.append(rt)
        states.append(seen)
    written, walked = runs
    np.testing.assert_array_equal(written.host.array("A"), walked.host.array("A"))
    assert counters(written) == counters(walked)
    assert (written.stats.shifted, written.stats.ahead) == (walked.stats.shifted,
                                                            walked.stats.ahead)
    assert states[0] == states[1]  # the records and stale parts after every step


def test_a_template_is_written_out_after_its_first_replays(monkeypatch):
    """A template's replay is walked for its first WRITE_AFTER - 1 replays and written
    out at the next (writing costs milliseconds; a short regime never pays it); the
    written-out replay reads like the template: one allocation of row k's box, its load,
    the launch, in that order."""
    n, tile = 192, 96
    rt = Runtime(make(2), {"path": floyd_input(n)}, replay=True)
    run_floyd(rt, n, tile, True)
    tpls = [t for t in rt.shift_memo.templates.values() if t is not None and t.replays]
    assert rt.stats.shifted > 0 and tpls
    assert all(t.code is None and t.replays < shifted.WRITE_AFTER for t in tpls)
    most = max(t.replays for t in tpls)
    monkeypatch.setattr(shifted, "WRITE_AFTER", most)
    rt = Runtime(make(2), {"path": floyd_input(n)}, replay=True)
    run_floyd(rt, n, tile, True)
    tpls = [t for t in rt.shift_memo.templates.values() if t is not None and t.replays]
    written = [t for t in tpls if t.code is not None]
    # written at the replay after its WRITE_AFTER - 1 walked ones; the others stay walked
    assert written and all(t.replays == most - 1 for t in written)
    assert all(t.code is None for t in tpls if t.replays < most - 1)
    codes = [t.code for t in written]
    src = codes[0].source
    assert src.index(".alloc(") < src.index("d.replay_h2d(") < src.index("rt._launch(")
    assert "for " not in src.split("d.flush_writebacks()")[0]  # no loop over operations


def test_written_out_replay_takes_names_as_literals():
    """An array name, a timer and a transfer's category reach the written-out replay as
    string literals, whatever characters they hold, and the source compiles."""
    from types import SimpleNamespace
    from bbmm.shiftcode import replay_code
    name = "a'\"\n]; import os  # \\"
    enc = (1, ((0, 0), (1, 0)))
    tpl = SimpleNamespace(
        transients=((name, 0, enc, 8),), parted=(), deferred=(), groups=(),
        ops=(("t'\n", "h2d", (("t", 0), None, "w\"\n", False)),),
        dirty=(((enc, 0),),), stale=((),), tiles=1, split_accesses=0, boxes_present=(),
        buffers={})
    fn = replay_code(tpl, (name,), shifted.parted_rows, shifted.deferred_counts)
    literals = [line for line in fn.source.splitlines() if "import os" in line]
    assert literals and all(repr(name) in line for line in literals)
    assert repr("t'\n") in fn.source and repr("w\"\n") in fn.source

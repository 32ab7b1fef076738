"""Replay of repeating serial iterations (bbmm/replay.py) on null devices.

Every test is differential: the same driver with replay off is the ground truth for
the arrays *and* for every byte counter (a replayed iteration must move exactly what
the bookkeeping would have moved), plus the numpy reference where there is one.
"""
from __future__ import annotations

import numpy as np
import pytest

from bbmm.box import Box
from bbmm.devices import NullDevice
from bbmm.devices.base import pairable
from bbmm.replay import Tape, signature, tile_key
from bbmm import runtime as rtm
from bbmm.runtime import Runtime, Tile

from support.drivers import (floyd_reference, gather, jacobi_reference, run_floyd, run_jacobi, scatter,
                     tiles_of)


def make(ndev, cap=1 << 24, arena=1 << 16, kind=NullDevice):
    return [kind(i, cap=cap, arena_size=min(arena, cap)) for i in range(ndev)]


def counters(rt):
    """Everything a run counts, except times."""
    per = [(d.h2d_bytes, d.d2h_bytes, d.d2d_bytes, d.evictions, d.boxes_allocated,
            d.boxes_present, d.peak_bytes, d.allocated_bytes) for d in rt.stats.devices]
    logs = [[(k, r, n) for k, r, n in dev.log] for dev in rt.devices]
    return rt.stats.bytes, per, rt.stats.tiles, rt.stats.split_accesses, logs


def jacobi_input(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, n)), np.zeros((n, n))


def both(run, ndev, arrays, **kw):
    """Run ``run(rt)`` with replay on and off; returns both runtimes."""
    out = []
    for replay in (True, False):
        rt = Runtime(make(ndev, **kw), {k: v.copy() for k, v in arrays.items()},
                     verify=True, replay=replay)
        run(rt)
        out.append(rt)
    return out


@pytest.mark.parametrize("ndev,tile", [(1, 14), (2, 7), (3, 5), (4, 4), (2, 3)])
def test_jacobi_replays_and_matches(ndev, tile):
    n, steps = 16, 12
    A, B = jacobi_input(n)
    on, off = both(lambda rt: run_jacobi(rt, n, steps, tile), ndev, {"A": A, "B": B})
    ra, rb = jacobi_reference(A, B, steps)
    np.testing.assert_allclose(on.host.array("A"), ra, rtol=1e-12)
    np.testing.assert_array_equal(on.host.array("A"), off.host.array("A"))
    np.testing.assert_array_equal(on.host.array("B"), off.host.array("B"))
    assert counters(on) == counters(off)
    # record (t=0), signature (t=1), fixed point (t=2); the last step writes out: differs
    assert on.stats.replayed == steps - 4
    assert off.stats.replayed == 0


class _Pairing(NullDevice):
    """A device that keeps data (as NullDevice does) and moves two pairable regions as
    one command, as an OpenCL device does: one entry in its log."""

    def paired(self, a, a_box, regions, host):
        return len(regions) == 2 and pairable(*regions)

    def write_rects(self, dst, dst_box, regions, host, **kw):
        e = super().write_rects(dst, dst_box, regions, host, **kw)
        self._merge(regions)
        return e

    def read_rects(self, src, src_box, regions, host, **kw):
        e = super().read_rects(src, src_box, regions, host, **kw)
        self._merge(regions)
        return e

    def _merge(self, regions):
        if self.paired(None, None, regions, None):
            (k, a, x), (_, b, y) = self.log[-2:]
            self.log[-2:] = [(k, a.hull(b), x + y)]


def test_a_middle_device_loads_both_halos_in_one_copy(monkeypatch):
    """On three devices the middle one's two halos (one copy, rows apart) replay as one
    rect copy (``Directory.replay_pair``): arrays, bytes and logs stay those of the run
    without replay, and the copies counted are the commands made: fewer by one per pair
    on a device that moves a pair as one command, as many on one that does not."""
    import bbmm.replay as rp
    seen = []
    real = rp.compile_tape
    monkeypatch.setattr(rp, "compile_tape", lambda rt, tape: seen.append(real(rt, tape))
                        or seen[-1])
    n, steps = 16, 12
    A, B = jacobi_input(n)
    on, off = both(lambda rt: run_jacobi(rt, n, steps, 5), 3, {"A": A, "B": B})
    assert counters(on) == counters(off)
    pairs = [args for segments in seen for _, ops in segments for code, fn, args in ops
             if code == 0 and fn.__name__ == "replay_pair"]
    assert pairs
    for c, regions, *_ in pairs:
        assert len(regions) == 2 and regions[0].hi[0] < regions[1].lo[0]
    # the copies counted are the commands each device made: one per region on these
    # devices (they move no pair as one), one per pair on those that do
    for rt in (on, off):
        assert [d.copies for d in rt.stats.devices] == [
            sum(k != "launch" for k, _, _ in dev.log) for dev in rt.devices]
    seen.clear()
    on, off = both(lambda rt: run_jacobi(rt, n, steps, 5), 3, {"A": A, "B": B}, kind=_Pairing)
    assert counters(on)[:4] == counters(off)[:4]
    assert seen and any(code == 0 and fn.__name__ == "replay_pair" for segments in seen
                        for _, ops in segments for code, fn, _ in ops)
    for rt in (on, off):
        assert [d.copies for d in rt.stats.devices] == [
            sum(k != "launch" for k, _, _ in dev.log) for dev in rt.devices]
    assert sum(d.copies for d in on.stats.devices) < sum(d.copies for d in off.stats.devices)


@pytest.mark.parametrize("ndev", [3, 4, 6])
def test_a_middle_devices_halos_pair_across_its_neighbours_flow_ins(monkeypatch, ndev):
    """With one process driving several devices, a middle device's two halos arrive
    between other devices' flow-ins; the replay still moves them as one copy (the later
    one joins the earlier past transfers that touch neither its copy nor its rows), and
    the result, bytes and counts are those of the run without replay."""
    import bbmm.replay as rp
    seen = []
    real = rp.compile_tape
    monkeypatch.setattr(rp, "compile_tape", lambda rt, tape: seen.append(real(rt, tape))
                        or seen[-1])
    n, steps = 24, 10
    tile = -(-n // ndev)
    A, B = jacobi_input(n, seed=ndev)
    on, off = both(lambda rt: run_jacobi(rt, n, steps, tile), ndev, {"A": A, "B": B},
                   kind=_Pairing)
    ra, rb = jacobi_reference(A, B, steps)
    for rt in (on, off):
        np.testing.assert_array_equal(rt.host.array("A"), ra)
        np.testing.assert_array_equal(rt.host.array("B"), rb)
    assert counters(on)[:4] == counters(off)[:4] and on.stats.replayed > 0
    loads = [args[0] for segments in seen for _, ops in segments for code, fn, args in ops
             if code == 0 and fn.__name__ == "replay_pair" and not args[4]]
    # every middle device loads its two halos of A (the array that flows between
    # devices in this driver) as one copy
    middle = {(c.device.index, c.array) for c in loads}
    assert middle >= {(d, "A") for d in range(1, ndev - 1)}
    singles = [args[0] for segments in seen for _, ops in segments for code, fn, args in ops
               if code == 0 and fn.__name__ == "replay_h2d"]
    assert all(c.device.index in (0, ndev - 1) for c in singles)


def test_floyd_never_replays():
    """Row k moves with the serial loop: no two iterations have the same boxes."""
    n = 12
    path = np.random.default_rng(1).integers(1, 50, (n, n)).astype(np.float32)
    on, off = both(lambda rt: run_floyd(rt, n, 4), 3, {"path": path})
    np.testing.assert_array_equal(on.host.array("path"), floyd_reference(path))
    assert on.stats.replayed == 0
    assert counters(on) == counters(off)


def perturbed_jacobi(rt, n, steps, tile, odd):
    """Jacobi whose iterations in ``odd`` differ: a step with a different tile size in
    its second nest, a step that skips the second nest (a phase fewer), a step with an
    extra phase, a step whose first nest has no flow-out (a first-phase mismatch)."""
    dt = rt.host.array("A").dtype
    ndev = len(rt.devices)

    def nest(t, src, dst, size, fo=True):
        tiles = []
        for lb0, ub0, dev in tiles_of(n - 2, size, ndev):
            lb, ub = lb0 + 1, ub0 + 1
            c = Box((lb, 1), (ub, n - 2))
            reads = [c, c.shift((-1, 0)), c.shift((1, 0)), c.shift((0, -1)), c.shift((0, 1))]

            def k(d, tb, c=c, src=src, dst=dst, t=t):
                s = sum(gather(d, tb, src, c.shift(o), dt) for o in
                        [(0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)])
                scatter(d, tb, dst, c, (0.2 * s + 1e-3 * t).astype(dt))

            flow = [Box((lb, 1), (lb, n - 2)), Box((ub, 1), (ub, n - 2))]
            tiles.append(Tile(dev, {src: reads, dst: [c]}, k, writes={dst: [c]},
                              flowout={dst: flow} if fo else {}, name=f"{t}:{src}{lb}"))
        return tiles

    for t in range(steps):
        kind = odd.get(t)
        rt.run_phase(nest(t, "A", "B", tile, fo=kind != "noflow"), serial=t)
        if kind != "skip":
            rt.run_phase(nest(t, "B", "A", tile + 1 if kind == "retile" else tile), serial=t)
        if kind == "extra":
            rt.run_phase(nest(t, "A", "B", tile), serial=t)
        rt.end_serial(t)
    rt.finish()


@pytest.mark.parametrize("odd", [
    {6: "retile"}, {6: "skip"}, {6: "extra"}, {6: "noflow"},
    {5: "retile", 6: "skip", 11: "extra"}, {4: "noflow", 9: "retile", 10: "retile"},
])
@pytest.mark.parametrize("ndev", [1, 2, 3])
def test_leaving_replay_midway_is_exact(odd, ndev):
    """A held-back phase that is followed by one that does not match runs for real,
    from the state replay left (the fixed point's): results and bytes as without replay."""
    n, steps, tile = 14, 16, 4
    A, B = jacobi_input(n, 2)
    on, off = both(lambda rt: perturbed_jacobi(rt, n, steps, tile, odd), ndev, {"A": A, "B": B})
    np.testing.assert_array_equal(on.host.array("A"), off.host.array("A"))
    np.testing.assert_array_equal(on.host.array("B"), off.host.array("B"))
    assert counters(on) == counters(off)
    assert on.stats.replayed > 0


def test_recording_pauses_where_iterations_never_repeat_and_resumes():
    """Iterations that are no fixed point REPLAY_MISSES times in a row pause recording
    (Floyd pays for it at every k otherwise); recording resumes after the pause, so a
    program whose steps start repeating late (here after 30 alternating steps) still
    replays, and every result and byte is as without replay."""
    n, steps, tile = 14, 80, 4
    warm = 30
    odd = {t: "retile" for t in range(0, warm, 2)}
    A, B = jacobi_input(n, 4)
    recorded = []

    class Watch(Runtime):
        def end_serial(self, serial=None):
            recorded.append(self._tape is not None or self._fixed is not None)
            super().end_serial(serial)

    out = []
    for replay in (True, False):
        rt = Watch(make(2), {"A": A.copy(), "B": B.copy()}, verify=True, replay=replay)
        perturbed_jacobi(rt, n, steps, tile, odd)
        out.append(rt)
    on, off = out
    np.testing.assert_array_equal(on.host.array("A"), off.host.array("A"))
    np.testing.assert_array_equal(on.host.array("B"), off.host.array("B"))
    assert counters(on) == counters(off)
    seen = recorded[:steps]
    first_pause = rtm.REPLAY_MISSES
    # recorded first, then paused for REPLAY_PAUSE[0] steps, then recorded again
    assert all(seen[:first_pause])
    assert not any(seen[first_pause:first_pause + rtm.REPLAY_PAUSE[0]])
    assert seen[first_pause + rtm.REPLAY_PAUSE[0]]
    # found the fixed point once the steps repeat: all but a few late steps replayed
    assert on.stats.replayed >= steps - warm - rtm.REPLAY_MISSES - 2 * rtm.REPLAY_PAUSE[0] - 4


def test_floyd_records_only_a_few_iterations():
    """Row k moves every k: no step repeats another exactly. Near a block's ends (where
    row k is within GAP rows of a tile boundary) no step repeats another even up to a
    shift, and recording pauses after the first misses; in between, steps replay up to a
    shift (bbmm.shifted). Few of the 200 steps are recorded."""
    n = 200
    path = np.random.default_rng(5).integers(1, 50, (n, n)).astype(np.float32)
    steps = []

    class Watch(Runtime):
        def end_serial(self, serial=None):
            recorded = self.directory.tape is not None
            replayed = self.stats.replayed
            super().end_serial(serial)
            steps.append("shifted" if self.stats.replayed > replayed
                         else "recorded" if recorded else "paused")

    rt = Watch(make(2), {"path": path.copy()}, replay=True)
    run_floyd(rt, n, 100)
    np.testing.assert_array_equal(rt.host.array("path"), floyd_reference(path))
    assert len(steps) == n
    assert rt.stats.shifted == rt.stats.replayed == steps.count("shifted") >= n // 3
    assert steps.count("recorded") <= n // 4
    m = rtm.REPLAY_MISSES
    assert steps[:m] == ["recorded"] * m and steps[m] == "paused"


def test_scalars_of_the_replayed_iteration_reach_the_kernel():
    """The kernel adds 1e-3 * t: a replay that launched the recorded tile's kernel would
    repeat the recorded t and differ from the run without replay."""
    n, steps = 10, 9
    A, B = jacobi_input(n, 3)
    on, off = both(lambda rt: perturbed_jacobi(rt, n, steps, 4, {}), 2, {"A": A, "B": B})
    assert on.stats.replayed >= 4
    np.testing.assert_array_equal(on.host.array("A"), off.host.array("A"))


def test_boxout_every_step_is_not_a_fixed_point():
    """Under a cap that boxes out every step, iterations allocate and free: never
    replayed, and still exact."""
    n, steps, tile = 16, 8, 4
    A, B = jacobi_input(n, 4)
    cap = 1536  # one tile (A with its halo: 6x16, B: 4x14 doubles) and a little more
    on, off = both(lambda rt: run_jacobi(rt, n, steps, tile), 1, {"A": A, "B": B},
                   cap=cap, arena=cap)
    assert sum(d.evictions for d in on.stats.devices) > 0
    assert on.stats.replayed == 0
    np.testing.assert_array_equal(on.host.array("A"), off.host.array("A"))
    assert counters(on) == counters(off)


def test_signature_sees_stale_parts_dirty_records_and_lru_order():
    dev = NullDevice(0)
    x = np.arange(16.0)
    rt = Runtime([dev], {"x": x})
    c1 = rt.managers[0].alloc("x", Box((0,), (7,)), 8)
    c2 = rt.managers[0].alloc("x", Box((8,), (15,)), 8)
    rt.managers[0].readin(c1)
    rt.managers[0].readin(c2)
    for c in (c1, c2):
        rt.managers[0].acquire(c)
        rt.managers[0].release(c)
    s0 = signature(rt)
    assert signature(rt) == s0
    c1.stale = [Box((0,), (1,))]
    assert signature(rt) != s0
    c1.stale = []
    rt.directory.wrote(c2, Box((8,), (9,)))
    s1 = signature(rt)
    assert s1 != s0
    rt.managers[0].acquire(c1)
    rt.managers[0].release(c1)          # c1 moves to the end of the LRU list
    assert signature(rt) != s1


def test_tile_key_ignores_the_kernel_but_not_the_boxes():
    b = Box((0, 0), (3, 3))
    t1 = Tile(0, {"A": [b]}, lambda d, tb: 1, writes={"A": [b]})
    t2 = Tile(0, {"A": [b]}, lambda d, tb: 2, writes={"A": [b]})
    t3 = Tile(0, {"A": [b.shift((1, 0))]}, lambda d, tb: 1, writes={"A": [b]})
    t4 = Tile(1, {"A": [b]}, lambda d, tb: 1, writes={"A": [b]})
    assert tile_key(t1) == tile_key(t2)
    assert tile_key(t1) != tile_key(t3) and tile_key(t1) != tile_key(t4)


def test_no_replay_where_host_copies_block_or_kernels_are_timed(monkeypatch):
    monkeypatch.setenv("BBMM_SYNC", "1")
    assert not Runtime(make(1), {"x": np.zeros(4)}).replay
    monkeypatch.delenv("BBMM_SYNC")
    monkeypatch.setenv("BBMM_REPLAY", "0")
    assert not Runtime(make(1), {"x": np.zeros(4)}).replay
    monkeypatch.delenv("BBMM_REPLAY")
    assert Runtime(make(1), {"x": np.zeros(4)}).replay
    assert isinstance(Runtime(make(1), {"x": np.zeros(4)}).directory.tape, Tape)


def table_driver(rt, n, steps, tile):
    """x[i] += tab[t] * x[i] for t in steps: a read-only table read one element per step
    (fdtd2d's _fict_[t])."""
    ndev = len(rt.devices)
    for t in range(steps):
        tiles = []
        for lb, ub, dev in tiles_of(n, tile, ndev):
            c, e = Box((lb,), (ub,)), Box((t,), (t,))

            def k(d, tb, c=c, e=e):
                x = gather(d, tb, "x", c, np.float64)
                scatter(d, tb, "x", c, x + gather(d, tb, "tab", e, np.float64)[0] * x)

            tiles.append(Tile(dev, {"x": [c, c], "tab": [e]}, k, writes={"x": [c]},
                              writeout={"x": [c]} if t == steps - 1 else {},
                              cleanup={"x": [False, False], "tab": [True]}, name=f"{t}:{lb}"))
        rt.run_phase(tiles, serial=t)
        rt.end_serial(t)
    rt.finish()


@pytest.mark.parametrize("ndev", [1, 2, 3])
def test_read_only_array_held_whole_makes_steps_repeat(ndev):
    n, steps = 12, 10
    rng = np.random.default_rng(5)
    x, tab = rng.random(n), rng.random(steps)
    want = x.copy()
    for t in range(steps):
        want = want + tab[t] * want
    runs = {}
    for whole in ((), ("tab",)):
        rt = Runtime(make(ndev), {"x": x.copy(), "tab": tab.copy()}, verify=True, whole=whole)
        table_driver(rt, n, steps, 4)
        np.testing.assert_allclose(rt.host.array("x"), want, rtol=1e-12)
        runs[bool(whole)] = rt
    # one element per step and device without (its steps repeat only up to a shift: the
    # element moves), the whole table once per device with (they repeat exactly)
    assert runs[False].stats.replayed == runs[False].stats.shifted
    assert runs[True].stats.replayed == steps - 4 and runs[True].stats.shifted == 0
    assert runs[True].stats.bytes["readin"] < runs[False].stats.bytes["readin"] + ndev * 8 * steps
    # one box of x per tile (3 tiles) and one whole table per device, whatever the steps
    assert sum(d.boxes_allocated for d in runs[True].stats.devices) == 3 + ndev
    assert sum(d.boxes_allocated for d in runs[False].stats.devices) == 3 + ndev * steps


def test_an_array_held_whole_must_not_be_written():
    from bbmm.diagnostic import UsageError
    rt = Runtime(make(1), {"x": np.zeros(4)}, whole=("x",))
    b = Box((0,), (3,))
    with pytest.raises(UsageError, match="held whole as read-only"):
        rt.run_phase([Tile(0, {"x": [b]}, lambda d, tb: None, writes={"x": [b]})])


def test_array_held_whole_that_does_not_fit_falls_back_to_its_boxes():
    """A cap that holds a tile's boxes but not the whole table beside them: the tile gets
    its own boxes of the table (the table is small against no cap here: forced whole)."""
    n, steps = 12, 6
    rng = np.random.default_rng(6)
    x, tab = rng.random(n), rng.random(64)
    want = x.copy()
    for t in range(steps):
        want = want + tab[t] * want
    # a tile: 4 + 4 doubles of x (two accesses, one box) and one of tab; tab whole is 512 B
    cap = 256
    rt = Runtime(make(1, cap=cap, arena=cap), {"x": x.copy(), "tab": tab.copy()}, verify=True)
    rt.whole["tab"] = Box((0,), (63,))           # as if it were small enough
    table_driver(rt, n, steps, 4)
    np.testing.assert_allclose(rt.host.array("x"), want, rtol=1e-12)
    assert Runtime(make(1, cap=cap, arena=cap), {"x": x, "tab": tab}, whole=("tab",)).whole == {}


def spec_jacobi(rt, n, steps, tile, retile=(), cached=True):
    """Jacobi as the generated driver runs a nest whose tiles depend on ``t`` only
    through regimes (``t == steps - 1`` writes out; steps in ``retile`` use another tile
    size): with ``cached``, each tile list is built once per regime and handed over with
    its ``spec`` and this step's ``args``, the kernels reading ``t`` from ``args``;
    without, the lists are built afresh at every step with ``t`` in the kernels."""
    dt = rt.host.array("A").dtype
    ndev = len(rt.devices)
    lists = {}
    run = object()

    def nest(t, src, dst, size, last):
        tiles = []
        for lb0, ub0, dev in tiles_of(n - 2, size, ndev):
            lb, ub = lb0 + 1, ub0 + 1
            c = Box((lb, 1), (ub, n - 2))
            reads = [c, c.shift((-1, 0)), c.shift((1, 0)), c.shift((0, -1)), c.shift((0, 1))]

            def k(d, tb, rows=None, args=None, c=c, src=src, dst=dst, t=t):
                step = t if args is None else args[0]
                s = sum(gather(d, tb, src, c.shift(o), dt) for o in
                        [(0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)])
                scatter(d, tb, dst, c, (0.2 * s + 1e-3 * step).astype(dt))

            flow = [Box((lb, 1), (lb, n - 2)), Box((ub, 1), (ub, n - 2))]
            tiles.append(Tile(dev, {src: reads, dst: [c]}, k, writes={dst: [c]},
                              flowout={dst: flow}, writeout={dst: [c]} if last else {}))
        return tiles

    for t in range(steps):
        last = t == steps - 1
        for i, (src, dst) in enumerate((("A", "B"), ("B", "A"))):
            size = tile + 1 if t in retile and i == 1 else tile
            if not cached:
                rt.run_phase(nest(t, src, dst, size, last), serial=t)
                continue
            key = (i, last, size)
            tiles = lists.get(key)
            if tiles is None:
                tiles = lists[key] = nest(t, src, dst, size, last)
            rt.run_phase(tiles, serial=t, spec=(run, key), args=(t,))
        rt.end_serial(t)
    rt.finish()


@pytest.mark.parametrize("retile", [(), (6,), (5, 6, 11)])
@pytest.mark.parametrize("ndev", [1, 2, 3])
def test_phases_named_by_spec_replay_with_the_new_arguments(ndev, retile):
    """Tile lists built once and named by a ``spec`` replay like lists built afresh: the
    same arrays and bytes as without replay and without the cache, with each step's
    ``t`` reaching the kernels through ``args`` (a kernel given the recorded step's would
    differ), and regime changes (another tile size, the last step's write-out) leaving
    replay exactly."""
    n, steps, tile = 14, 16, 4
    A, B = jacobi_input(n, 4)
    arrays = {"A": A, "B": B}
    runs = []
    for cached, replay in ((True, True), (False, False), (False, True)):
        rt = Runtime(make(ndev), {k: v.copy() for k, v in arrays.items()}, verify=True,
                     replay=replay)
        spec_jacobi(rt, n, steps, tile, retile, cached)
        runs.append(rt)
    spec, fresh, keyed = runs
    for other in (fresh, keyed):
        np.testing.assert_array_equal(spec.host.array("A"), other.host.array("A"))
        np.testing.assert_array_equal(spec.host.array("B"), other.host.array("B"))
        assert counters(spec) == counters(other)
    # exact replays alike (a list named by a spec is never replayed up to a shift)
    assert spec.stats.shifted == 0
    assert spec.stats.replayed == keyed.stats.replayed - keyed.stats.shifted > 0

"""The hazards docs/coherence.md names, one test each (null devices, real data)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bbmm.box import Box
from bbmm.coherence import HostCopy
from bbmm.config import RuntimeConfig
from bbmm.devices import NullDevice
from bbmm.runtime import Runtime, Tile

from support.drivers import gather, scatter
from support.events import Dev, Event


def add_one(box):
    def k(d, tb):
        scatter(d, tb, "x", box, gather(d, tb, "x", box, np.int64) + 1)
    return k


@pytest.mark.parametrize("ndev", [1, 2, 3])
@pytest.mark.parametrize("cap", [1 << 20, 3 * 8 * 24])
def test_growing_box_never_reads_a_stale_copy(ndev, cap):
    """Case 1: box 0..k at iteration k, through a new copy each time. Older copies go
    stale; read-in must take the newest (the last box), never an older one. With the
    small cap old copies are boxed out (case 2: their write-back must not clobber)."""
    n = 24
    x = np.arange(n, dtype=np.int64) * 100
    devs = [NullDevice(i, cap=cap, arena_size=min(cap, 1 << 12), align=8) for i in range(ndev)]
    rt = Runtime(devs, {"x": x.copy()}, verify=True)
    for k in range(n):
        b = Box((0,), (k,))
        rt.run_phase([Tile(k % ndev, {"x": [b]}, add_one(b), writes={"x": [b]})], serial=k)
        rt.end_serial(k)
    rt.finish()
    expect = x + (n - np.arange(n))
    np.testing.assert_array_equal(rt.host.array("x"), expect)


@pytest.mark.parametrize("ndev", [2, 3])
def test_boxout_of_stale_duplicate_keeps_newer_host_data(ndev):
    """Case 2: device 0 holds an old copy of a region that device 1 has since written and
    flowed out to the host. Boxing out device 0's copy must not write its stale values."""
    n = 16
    x = np.zeros(n, dtype=np.int64)
    region = Box((0,), (n - 1,))
    cap = n * 8  # one box at a time
    devs = [NullDevice(i, cap=cap, arena_size=cap, align=8) for i in range(ndev)]
    rt = Runtime(devs, {"x": x.copy(), "y": np.zeros(n, dtype=np.int64)}, verify=True)

    def add_y(d, tb):
        scatter(d, tb, "y", region, gather(d, tb, "y", region, np.int64) + 1)
    for it in range(4):
        # device 0 writes the whole array (its copy becomes dirty) ...
        rt.run_phase([Tile(0, {"x": [region]}, add_one(region), writes={"x": [region]},
                           flowout={"x": [region]})], serial=it)
        # ... device 1 writes it again and flows it out: device 0's copy is now stale
        rt.run_phase([Tile(1, {"x": [region]}, add_one(region), writes={"x": [region]},
                           flowout={"x": [region]})], serial=it)
        # device 0 needs room for a box of y: its stale copy of x is boxed out
        rt.run_phase([Tile(0, {"y": [region]}, add_y, writes={"y": [region]})], serial=it)
        rt.end_serial(it)
    rt.finish()
    np.testing.assert_array_equal(rt.host.array("x"), np.full(n, 8))
    np.testing.assert_array_equal(rt.host.array("y"), np.full(n, 4))
    assert rt.stats.devices[0].evictions > 0


@pytest.mark.parametrize("ndev", [1, 2, 4])
def test_halo_exchange_same_device(ndev):
    """Case 3: many tiles per device swap halo rows of a 1-D three-point stencil."""
    n, steps, tile = 40, 6, 5
    rng = np.random.default_rng(0)
    a, b = rng.random(n), np.zeros(n)
    ref_a, ref_b = a.copy(), b.copy()
    for _ in range(steps):
        ref_b[1:-1] = (ref_a[:-2] + ref_a[1:-1] + ref_a[2:]) / 3
        ref_a[1:-1] = ref_b[1:-1]
    devs = [NullDevice(i) for i in range(ndev)]
    rt = Runtime(devs, {"a": a.copy(), "b": b.copy()}, verify=True)
    ntiles = -(-(n - 2) // tile)
    for s in range(steps):
        p1, p2 = [], []
        for t in range(ntiles):
            lb, ub = 1 + t * tile, min(n - 2, (t + 1) * tile)
            dev = t * ndev // ntiles
            c = Box((lb,), (ub,))

            def k1(d, tb, c=c):
                v = sum(gather(d, tb, "a", c.shift((o,)), np.float64) for o in (-1, 0, 1)) / 3
                scatter(d, tb, "b", c, v)

            def k2(d, tb, c=c):
                scatter(d, tb, "a", c, gather(d, tb, "b", c, np.float64))
            p1.append(Tile(dev, {"a": [c.shift((-1,)), c, c.shift((1,))], "b": [c]}, k1,
                           writes={"b": [c]}))
            p2.append(Tile(dev, {"a": [c], "b": [c]}, k2, writes={"a": [c]},
                           flowout={"a": [Box((lb,), (lb,)), Box((ub,), (ub,))]}))
        rt.run_phase(p1, serial=s)
        rt.run_phase(p2, serial=s)
    rt.finish()
    np.testing.assert_allclose(rt.host.array("a"), ref_a)
    # halos only: flow-out is two elements per tile per step, never whole tiles (a tile
    # no larger than twice its halos may store them as one copy of their hull:
    # bbmm.runtime._merged; the others' five elements would pass that bound)
    assert rt.stats.bytes["flowout"] <= steps * ntiles * 2 * 8 * 2
    assert rt.stats.bytes["flowout"] < steps * (n - 2) * 8       # every tile whole
    assert rt.stats.bytes["refresh"] == 0


@pytest.mark.parametrize("ndev", [2, 3])
def test_flowout_set_not_a_box(ndev):
    """Case 4: a 2-D tile whose flow-out set is an L (its last row and last column):
    the bounding box is the whole tile; the result is exact and each other device's
    copy is updated only where it was stale."""
    n, steps = 12, 4
    x = np.arange(n * n, dtype=np.int64).reshape(n, n)
    ref = x.copy()
    blocks = [(Box((0, 0), (5, 5)), 0), (Box((6, 6), (11, 11)), 1 % ndev)]
    for _ in range(steps):
        for b, _d in blocks:  # each block adds its L-shaped neighbour values
            r = ref[b.slices()]
            r[-1, :] += 1
            r[:, -1] += 1
        ref[6, 0:6] += ref[5, 0:6]
    devs = [NullDevice(i) for i in range(ndev)]
    rt = Runtime(devs, {"x": x.copy()}, verify=True)
    for s in range(steps):
        tiles = []
        for b, d in blocks:
            def k(dv, tb, b=b):
                v = gather(dv, tb, "x", b, np.int64)
                v[-1, :] += 1
                v[:, -1] += 1
                scatter(dv, tb, "x", b, v)
            lrow = Box((b.hi[0], b.lo[1]), b.hi)
            lcol = Box((b.lo[0], b.hi[1]), b.hi)
            tiles.append(Tile(d, {"x": [b]}, k, writes={"x": [b]},
                              flowout={"x": [lrow.hull(lcol)]}))
        rt.run_phase(tiles, serial=s)
        # a tile on the last device reads the first block's last row into row 6
        src, dst = Box((5, 0), (5, 5)), Box((6, 0), (6, 5))

        def k2(dv, tb, src=src, dst=dst):
            scatter(dv, tb, "x", dst, gather(dv, tb, "x", dst, np.int64) +
                    gather(dv, tb, "x", src, np.int64))
        rt.run_phase([Tile(ndev - 1, {"x": [src, dst]}, k2, writes={"x": [dst]},
                           flowout={"x": [dst]})], serial=s)
    rt.finish()
    np.testing.assert_array_equal(rt.host.array("x"), ref)


@pytest.mark.parametrize("ndev", [1, 2, 3])
def test_fresh_output_needs_no_readin(ndev):
    """An array a tile only writes, through exact boxes, is not read in; its boxes become
    newest where written even when they were stale (another device wrote before)."""
    n, steps = 12, 4
    x = np.arange(n, dtype=np.int64)
    devs = [NullDevice(i) for i in range(ndev)]
    rt = Runtime(devs, {"x": x.copy(), "y": np.full(n, -1, dtype=np.int64)}, verify=True)
    for s in range(steps):
        tiles = []
        for t in range(3):
            b = Box((4 * t,), (4 * t + 3,))

            def k(d, tb, b=b, s=s):
                scatter(d, tb, "y", b, gather(d, tb, "x", b, np.int64) * 10 + s)
            # rotate the devices so each y box is stale on its next owner
            tiles.append(Tile((t + s) % ndev, {"x": [b], "y": [b]}, k, writes={"y": [b]},
                              fresh=frozenset({"y"})))
        rt.run_phase(tiles, serial=s)
        rt.end_serial(s)
    rt.finish()
    np.testing.assert_array_equal(rt.host.array("y"), x * 10 + steps - 1)
    # y never went host -> device: only x did
    assert sum(d.h2d_bytes for d in rt.stats.devices) <= steps * x.nbytes


# {{{ ordering of asynchronous copies through the host (HostOrder)

def test_host_order_waits_only_where_regions_overlap_across_devices():
    from bbmm.hostorder import HostOrder
    ctx = object()
    d0, d1, d2 = Dev(ctx), Dev(ctx), Dev(object())
    o = HostOrder()
    rows = Box((0, 0), (9, 99))
    row5 = Box((5, 0), (5, 99))
    other = Box((20, 0), (29, 99))
    s0 = Event("store0")
    assert o.before("A", rows, d0, True) == []
    o.after("A", rows, d0, True, s0)
    # loads of a stored region wait for the store on another device, not on its own queue
    assert o.before("A", row5, d1, False) == [s0]
    assert o.before("A", row5, d0, False) == []
    assert o.before("A", other, d1, False) == []
    assert o.before("B", row5, d1, False) == []
    l1 = Event("load1")
    o.after("A", row5, d1, False, l1)
    # a store over a pending load of another device waits for it (write after read)
    assert o.before("A", row5, d0, True) == [s0, l1][1:]
    # two loads never wait for each other
    assert o.before("A", row5, d0, False) == []
    # another context: the host waits instead
    assert o.before("A", row5, d2, False) == []
    assert s0.waited == 1
    # a store covering earlier records stands for them
    s1 = Event("store1")
    o.after("A", Box((0, 0), (19, 99)), d1, True, s1)
    assert o.pending["A"] == [(Box((0, 0), (19, 99)), s1, d1, True, 0)]
    # completed records are pruned once the list grows
    for i in range(HostOrder.PRUNE_AT + 1):
        e = Event(f"l{i}")
        e.command_execution_status = 0
        o.after("A", Box((100 + i, 0), (100 + i, 9)), d0, False, e)
    recs = list(o.pending["A"])
    assert len(recs) <= 2 and recs[0][1] is s1  # the pending store stays


def _scanning():
    """A HostOrder answering by a plain scan of every record, as its documentation reads:
    no span of rows consulted, no rows compared before the boxes (its pruning is
    HostOrder's own)."""
    from bbmm.hostorder import HostOrder, _touches, _unfinished

    class Scanning(HostOrder):
        def before(self, array, region, device, stores, lane=0):
            out = []
            for b, e, d, kind, _ in self.pending.get(array, ()):
                if (d is device and not lane) or not (kind or stores) or not b.overlaps(region):
                    continue
                if device.domain is not None and d.domain is device.domain:
                    out.append(e)
                else:
                    d.wait(e)
            return out

        def after(self, array, region, device, stores, event, lane=0):
            if event is None:
                return
            recs = self.pending.setdefault(array, [])
            if stores:
                recs[:] = [r for r in recs if not r[0].issubset(region)]
            recs.append((region, event, device, stores, lane))
            count = self._count[array] = self._count.get(array, 0) + 1
            if len(recs) > self.PRUNE_AT and count >= self._prune_at.get(array, 0):
                recs[:] = _unfinished(recs)
                self._prune_at[array] = count + self.PRUNE_AT

        def settle(self, array, region, loads):
            recs = self.pending.get(array, [])
            for r in recs:
                if _touches(r, region, loads) and not r[2].done(r[1]):
                    r[2].wait(r[1])
            recs[:] = [r for r in recs if not _touches(r, region, loads)]

        def touching(self, array, region, loads):
            return [(r[1], r[2]) for r in self.pending.get(array, ())
                    if _touches(r, region, loads)]
    return Scanning()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(("after", "before", "settle", "touching", "done")),
                          st.integers(0, 16), st.sampled_from((1, 1, 2, 4, 5, 9)),
                          st.booleans(), st.integers(0, 2), st.integers(0, 12)),
                max_size=60))
def test_host_order_answers_as_a_plain_scan(ops):
    """Answering a region past the rows of an array's records without a scan, and passing
    over a record by its rows before comparing boxes, give the same events, waits and
    records as a plain scan of them all, over any sequence of copies recorded, asked for,
    settled and completed (pruning included), regions meeting in rows but not columns
    among them."""
    from bbmm.hostorder import HostOrder

    ctx = object()
    devs = [Dev(ctx), Dev(ctx), Dev(object())]
    orders = (HostOrder(), _scanning())
    events: list[list[Event]] = [[], []]
    for n, (op, row, height, flag, d, col) in enumerate(ops):
        # (no copy of an empty region)
        region = Box((row, col), (row + height - 1, col + 3 + height))
        answers = []
        for o, evs in zip(orders, events):
            if op == "after":
                e = Event(f"e{n}")
                evs.append(e)
                o.after("A", region, devs[d], flag, e, lane=int(flag and d == 0))
            elif op == "before":
                answers.append([e.name for e in o.before("A", region, devs[d], flag)])
            elif op == "settle":
                o.settle("A", region, loads=flag)
            elif op == "touching":
                answers.append([e.name for e, _ in o.touching("A", region, flag)])
            elif evs:
                evs[row % len(evs)].command_execution_status = 0
            answers.append(([(r[0], r[1].name, r[3]) for r in o.pending.get("A", ())],
                            [e.waited for e in evs]))
        assert answers[: len(answers) // 2] == answers[len(answers) // 2:]


def test_host_order_rows_span_grows_with_each_record():
    """The range of rows an array's records span grows with every record (a row just
    past it, or just before it, included) and is found afresh once pruning drops some:
    a copy that meets only the newest record still waits for it."""
    from bbmm.hostorder import SPAN_FROM, HostOrder
    ctx = object()
    d0, d1 = Dev(ctx), Dev(ctx)
    o = HostOrder()
    for i in range(SPAN_FROM):  # enough records for the span to be asked
        o.after("A", Box((10 + i, 0), (10 + i, 9)), d0, True, Event(f"s{i}"))
    top = 10 + SPAN_FROM
    after, before = Event("after"), Event("before")
    o.after("A", Box((top, 0), (top, 9)), d0, True, after)
    o.after("A", Box((9, 0), (9, 9)), d0, True, before)
    assert o.before("A", Box((top, 0), (top, 9)), d1, False) == [after]
    assert o.before("A", Box((9, 0), (9, 9)), d1, False) == [before]
    assert o.before("A", Box((top + 1, 0), (top + 5, 9)), d1, False) == []
    for i in range(HostOrder.PRUNE_AT):  # complete loads of far rows: pruned, span found anew
        e = Event(f"l{i}")
        e.command_execution_status = 0
        o.after("A", Box((100 + i, 0), (100 + i, 9)), d1, False, e)
    late = Event("late")
    o.after("A", Box((50, 0), (50, 9)), d0, True, late)
    assert o.before("A", Box((50, 0), (50, 9)), d1, False) == [late]
    assert o.before("A", Box((top, 0), (top, 9)), d1, False) == [after]


def test_host_order_settle_waits_only_for_unfinished_copies_and_drops_them():
    """Settling a region waits on the host for the overlapping stores (and, asked, loads)
    still running, never for a complete one (a wait on a complete event still costs a
    driver call), and drops every record it met; the rest stay."""
    from bbmm.hostorder import HostOrder
    ctx = object()
    d0, d1 = Dev(ctx), Dev(ctx)
    o = HostOrder()
    halo = Box((0, 0), (0, 99))
    store, load, done_load, far = (Event(n) for n in ("store", "load", "done", "far"))
    done_load.command_execution_status = 0
    o.after("A", halo, d0, True, store)
    o.after("A", halo, d1, False, load)
    o.after("A", halo, d1, False, done_load)
    o.after("A", Box((50, 0), (50, 99)), d0, True, far)
    o.settle("A", halo, loads=False)  # the store only
    assert (store.waited, load.waited, done_load.waited) == (1, 0, 0)
    assert [r[1] for r in o.pending["A"]] == [load, done_load, far]
    o.settle("A", halo, loads=True)  # the loads: the complete one is not waited for
    assert (load.waited, done_load.waited, far.waited) == (1, 0, 0)
    assert [r[1] for r in o.pending["A"]] == [far]
    o.settle("B", halo, loads=True)  # nothing pending there
    assert o.before("A", halo, d1, False) == []


class _CountedEvent:
    """An event whose status reads are counted (each is a driver call)."""
    queries = 0

    def __init__(self, done):
        self.done = done

    @property
    def command_execution_status(self):
        _CountedEvent.queries += 1
        return 0 if self.done else 1


def test_host_order_side_loads_wait_for_their_own_device():
    """A load on a device's side queue is not ordered after that device's queue: it
    waits for the device's own pending stores too, and its records are pruned apart
    from the device's queue's (one complete side load says nothing of the queue)."""
    from bbmm.hostorder import HostOrder
    ctx = object()
    d0, d1 = Dev(ctx), Dev(ctx)
    o = HostOrder()
    rows = Box((0, 0), (9, 99))
    s0 = Event("store0")
    s0.command_execution_status = 1
    o.after("A", rows, d0, True, s0)
    assert o.before("A", rows, d0, False) == []           # its queue is in order
    assert o.before("A", rows, d0, False, lane=1) == [s0]  # its side queue is not
    assert o.before("A", Box((20, 0), (29, 99)), d0, False, lane=1) == []
    # the device's queue waits for its side loads: its later copies need no event
    side = Event("side")
    o.after("A", rows, d0, False, side, lane=1)
    assert o.before("A", rows, d0, True) == []
    assert o.before("A", rows, d1, True) == [s0, side]
    # many complete side loads: pruned, while the pending store of the queue stays
    for i in range(HostOrder.PRUNE_AT + 1):
        e = Event(f"s{i}")
        e.command_execution_status = 0
        o.after("A", Box((100 + i, 0), (100 + i, 9)), d0, False, e, lane=1)
    left = [r[1] for r in o.pending["A"]]
    assert left[0] is s0 and side not in left and len(left) <= 3


def test_host_order_prunes_complete_prefixes_by_bisection_and_amortized():
    """Pruning drops, per device queue, every record up to its newest complete one (an
    in-order queue completes in order), found by bisection: a device still busy keeps
    only its running copies; the next pruning waits for PRUNE_AT more records."""
    from bbmm.hostorder import HostOrder
    ctx = object()
    busy, idle = Dev(ctx), Dev(ctx)
    o = HostOrder()
    _CountedEvent.queries = 0
    n = HostOrder.PRUNE_AT + 1
    for i in range(n):  # alternate: the busy device's last copy is still running
        dev = busy if i % 2 else idle
        done = dev is idle or i < n - 2
        o.after("A", Box((i,), (i,)), dev, False, _CountedEvent(done))
    per_queue = (n + 1) // 2
    assert _CountedEvent.queries <= 2 * per_queue.bit_length()  # bisection per queue
    left = o.pending["A"]
    assert [r[0] for r in left] == [Box((n - 2,), (n - 2,))]  # the running copy only
    queries = _CountedEvent.queries
    for i in range(n, n + HostOrder.PRUNE_AT - 1):  # fewer than PRUNE_AT more: not yet
        o.after("A", Box((i,), (i,)), busy, False, _CountedEvent(False))
    assert _CountedEvent.queries == queries
    o.after("A", Box((99,), (99,)), busy, False, _CountedEvent(False))
    assert _CountedEvent.queries > queries


class _LagEvent:
    """The ``i``-th command of a device that completes ``lag`` commands behind the host."""
    enqueued = 0
    lag = 0

    def __init__(self):
        self.i = _LagEvent.enqueued
        _LagEvent.enqueued += 1

    @property
    def command_execution_status(self):
        return 0 if self.i < _LagEvent.enqueued - _LagEvent.lag else 1


@pytest.mark.parametrize("lag", [1, 5, 40])
def test_host_order_stays_short_while_the_devices_trail_the_host(lag):
    """Devices always a few commands behind the host (busy GPUs fed just in time): the
    pending records stay about as many as the copies in flight, so the scan of each new
    copy does not grow with the serial iterations (looking only at each queue's newest
    record, Floyd's lists would grow by two records per k)."""
    from bbmm.hostorder import HostOrder
    ctx = object()
    d0, d1 = Dev(ctx), Dev(ctx)
    o = HostOrder()
    _LagEvent.enqueued, _LagEvent.lag = 0, lag
    longest = 0
    for k in range(2000):  # Floyd: row k flows out of its owner and into the other
        row = Box((k % 64, 0), (k % 64, 99))
        owner, other = (d0, d1) if k % 2 else (d1, d0)
        o.after("path", row, owner, True, _LagEvent())
        assert o.before("path", row, other, False)  # the load waits for the store
        o.after("path", row, other, False, _LagEvent())
        longest = max(longest, len(o.pending["path"]))
    assert longest <= 2 * (lag + HostOrder.PRUNE_AT) + 2, longest
    # the devices catch up: the list shrinks to what is in flight within PRUNE_AT copies
    _LagEvent.lag = 0
    for k in range(HostOrder.PRUNE_AT):
        o.after("path", Box((k % 64, 0), (k % 64, 99)), d0, True, _LagEvent())
    assert len(o.pending["path"]) <= HostOrder.PRUNE_AT + 1


def test_host_order_shrinks_once_devices_far_behind_catch_up():
    """Devices 400 commands behind for a while, then caught up: the pending records go
    back to a few within PRUNE_AT more copies (a bound that doubled with the list kept
    hundreds of complete records, scanned by every copy, until the list doubled again)."""
    from bbmm.hostorder import HostOrder
    ctx = object()
    d0, d1 = Dev(ctx), Dev(ctx)
    o = HostOrder()
    _LagEvent.enqueued, _LagEvent.lag = 0, 400
    for k in range(600):
        row = Box((k % 64, 0), (k % 64, 99))
        o.after("path", row, d0 if k % 2 else d1, False, _LagEvent())
    assert len(o.pending["path"]) >= 400
    _LagEvent.lag = 0
    for k in range(HostOrder.PRUNE_AT + 1):
        o.after("path", Box((k, 0), (k, 99)), d0, False, _LagEvent())
    assert len(o.pending["path"]) <= HostOrder.PRUNE_AT + 1

# }}}


def test_deferred_writeout_is_read_from_its_holder_and_never_clobbers():
    """A small write-out is deferred (its elements stay dirty in the writer's copy).
    A tile on another device that reads them must get them from that copy; once another
    device has written part of them again and that part has gone home, storing the
    deferred group at the end must not write the older values over the newer ones."""
    n = 8
    x = np.arange(n, dtype=np.int64)
    devs = [NullDevice(i) for i in range(3)]
    rt = Runtime(devs, {"x": x.copy(), "y": np.zeros(n, dtype=np.int64)}, verify=True)
    whole, half = Box((0,), (n - 1,)), Box((0,), (n // 2 - 1,))
    rt.run_phase([Tile(0, {"x": [whole]}, add_one(whole), writes={"x": [whole]},
                       writeout={"x": [whole]})], serial=0)
    assert rt.directory._groups and not any(k == "d2h" for k, *_ in devs[0].log)

    def x_to_y(box):
        def k(d, tb):
            scatter(d, tb, "y", box, gather(d, tb, "x", box, np.int64) * 10)
        return k
    rt.run_phase([Tile(1, {"x": [whole], "y": [whole]}, x_to_y(whole),
                       writes={"y": [whole]})], serial=1)
    # device 1 writes half of x again (dirty there, device 0 stale on it) ...
    rt.run_phase([Tile(1, {"x": [half]}, add_one(half), writes={"x": [half]})], serial=2)
    # ... and device 2 reads it: device 1's values go home, device 0 stays stale
    rt.run_phase([Tile(2, {"x": [half], "y": [half]}, x_to_y(half),
                       writes={"y": [half]})], serial=3)
    assert rt.directory.copies["x"][0].stale == [half]
    rt.finish()
    expect_x = x + 1 + (np.arange(n) < n // 2)
    np.testing.assert_array_equal(rt.host.array("x"), expect_x)
    np.testing.assert_array_equal(rt.host.array("y"), np.where(np.arange(n) < n // 2,
                                                                expect_x, x + 1) * 10)


def _staircase(rt, n, intruder=None):
    """LU's pattern on device 0: step k adds one to rows k..n-1, sends row k's right part
    home (flow-out) and writes row k's left part out for the last time (deferred), which
    leaves a staircase of row pieces dirty. ``intruder``: at that step device 1 adds one to
    element (1, 3), a piece of row 1 that went home, inside the deferred group's hull
    (device 0 becomes stale there)."""
    ref = rt.host.array("x").copy()
    longest = 0
    for k in range(n):
        box = Box((k, 0), (n - 1, n - 1))
        rt.run_phase([Tile(0, {"x": [box]}, add_one(box), writes={"x": [box]},
                           flowout={"x": [Box((k, k), (k, n - 1))]},
                           writeout={"x": [Box((k, 0), (k, k - 1))] if k else []})], serial=k)
        ref[k:] += 1
        if k == intruder:
            e = Box((1, 3), (1, 3))
            rt.run_phase([Tile(1, {"x": [e]}, add_one(e), writes={"x": [e]})], serial=k)
            ref[1, 3] += 1
        rt.end_serial(k)
        longest = max(longest, len(rt.directory.dirty["x"]))
    rt.finish()
    return ref, longest


def _merge_runs(monkeypatch, steps, n):
    """``steps(rt)`` (:func:`_staircase`'s kind) on two null devices with deferred
    records merged and without: per run, the most records the array had and the bytes
    moved; both results checked against the reference."""
    x = np.arange(n * n, dtype=np.int64).reshape(n, n)
    runs = {}
    for merge in (True, False):
        if not merge:
            monkeypatch.setattr("bbmm.coherence.Directory._merge_dirty",
                                lambda self, holder, hull: None)
        rt = Runtime([NullDevice(i) for i in range(2)], {"x": x.copy()}, verify=True,
                     replay=False, config=RuntimeConfig(place=False))
        ref, longest = steps(rt)
        np.testing.assert_array_equal(rt.host.array("x"), ref)
        runs[merge] = (longest, rt.stats.bytes)
    return runs


@pytest.mark.parametrize("intruder", [None, 5])
def test_deferred_staircase_merges_into_its_hull_only_where_the_holder_is_newest(
        monkeypatch, intruder):
    """The holder's dirty records inside a deferred group's hull become the hull, where
    the holder holds the newest value of all of it (the parts between the records went
    home and are equal there): the directory keeps two records instead of one per step,
    and the run moves the same bytes with the same result. Once another device has
    written in the hull, the records stay apart, and its value is the one that lasts."""
    n = 12
    runs = _merge_runs(monkeypatch, lambda rt: _staircase(rt, n, intruder), n)
    assert runs[False][0] >= n - 1          # a record per step without merging
    if intruder is None:
        assert runs[True][0] == 2
        assert runs[True][1] == runs[False][1]
    else:
        # merged up to the intruder's step; apart from then on
        assert n - intruder <= runs[True][0] < runs[False][0]


def _lu_staircase(rt, n):
    """LU's trailing update on device 0: step k adds one to the corner from (k, k), sends
    row k's right part home (flow-out) and writes column k below it out for the last
    time (deferred). The group's hull, the final columns, cuts into the record of the
    rows still updated, and row k's final left part stays behind each step."""
    ref = rt.host.array("x").copy()
    longest = 0
    for k in range(n):
        box = Box((k, k), (n - 1, n - 1))
        col = [Box((k + 1, k), (n - 1, k))] if k + 1 < n else []
        rt.run_phase([Tile(0, {"x": [box]}, add_one(box), writes={"x": [box]},
                           flowout={"x": [Box((k, k), (k, n - 1))]},
                           writeout={"x": col})], serial=k)
        ref[k:, k:] += 1
        rt.end_serial(k)
        longest = max(longest, len(rt.directory.dirty["x"]))
    rt.finish()
    return ref, longest


def test_deferred_columns_merge_with_the_record_they_cut_into(monkeypatch):
    """Where a deferred group's hull cuts into the holder's record of the rows still
    updated, the records that meet the hull become the hull and that record's parts
    outside it: two records every step instead of a staircase of one per step, the same
    bytes moved and the same result."""
    n = 12
    runs = _merge_runs(monkeypatch, lambda rt: _lu_staircase(rt, n), n)
    assert runs[False][0] >= n - 2
    assert runs[True][0] <= 2
    assert runs[True][1] == runs[False][1]


def test_a_region_loaded_from_another_array_is_copied_back_by_its_device():
    """A region whose newest values lie in another array (another process's, lent:
    :meth:`bbmm.coherence.HostCopy.source`) is loaded from there, and the device that
    loaded it, not the processor, copies it into the host's own array: after the
    launches that followed the load (before the next exchange, when a copy is freed, at
    the end), and the host copy hears of it (``written_back``)."""
    n = 12
    other = np.arange(n, dtype=np.int64) * 7  # the sender's newest values
    own = np.full(n, -1, np.int64)  # this process's, not copied at the swap

    class Lending(HostCopy):
        def __init__(self, arrays):
            super().__init__(arrays)
            self.back: list = []

        def source(self, name, box):
            # the sender's elements from the box's first on, and where they start
            return (other[box.lo[0]:], (box.lo[0],)) if name == "x" else None

        def written_back(self, name, box):
            self.back.append((name, box))

    host = Lending({"x": own, "y": np.zeros(n, np.int64)})
    dev = NullDevice(0, cap=1 << 20, arena_size=1 << 12, align=8)
    rt = Runtime([dev], host)
    whole = Box((0,), (n - 1,))

    def plus_one(d, tb):
        scatter(d, tb, "y", whole, gather(d, tb, "x", whole, np.int64) + 1)

    rt.run_phase([Tile(0, {"x": [whole], "y": [whole]}, plus_one, writes={"y": [whole]})],
                 serial=0)
    d = rt.directory
    assert [(c.array, r) for c, r in d.writebacks] == [("x", whole)]
    assert (own == -1).all() and host.back == []  # not yet: behind the launch
    assert not any(k == "d2h" for k, _, _ in dev.log)
    rt.end_serial(0)
    rt.finish()
    np.testing.assert_array_equal(host.array("y"), other + 1)  # computed from the loan
    np.testing.assert_array_equal(own, other)  # copied back by the device
    assert host.back == [("x", whole)] and d.writebacks == []
    assert rt.stats.bytes["writeback"] >= n * 8


def test_copies_back_that_meet_an_exchange_go_first():
    """Before an exchange only the copies back of lent regions that meet what it sends or
    receives are enqueued (their stores must be waited for); the others wait for the
    exchange's idle time, and a call with nothing to do says so."""
    n = 8
    x = np.zeros((n, 4), np.int64)
    host = HostCopy({"x": x})
    dev = NullDevice(0, cap=1 << 20, arena_size=1 << 12, align=8)
    rt = Runtime([dev], host)
    d = rt.directory
    whole = Box((0, 0), (n - 1, 3))
    from bbmm.tiles import Copy
    c = Copy("x", whole, dev, dev.alloc(whole.volume * 8), 8)
    d.add(c)
    dev.view(c.alloc, whole, np.int64)[...] = 5
    top, bottom = Box((0, 0), (0, 3)), Box((n - 1, 0), (n - 1, 3))
    d.writebacks = [(c, top), (c, bottom)]
    assert d.flush_writebacks([("x", Box((n - 2, 0), (n - 1, 3)))]) is True
    assert d.writebacks == [(c, top)] and (x[n - 1] == 5).all() and (x[0] == 0).all()
    assert d.flush_writebacks([("y", top)]) is False  # another array: nothing met
    assert d.flush_writebacks() is True and (x[0] == 5).all() and d.writebacks == []
    assert d.flush_writebacks() is False


def test_a_store_into_a_lent_region_lands_after_its_copy_back():
    """A device's store into a region another device of the process loaded from a loan
    is enqueued after that device's copy back of it (so the newer values land last),
    even where no exchange came in between."""
    n = 6
    host = HostCopy({"x": np.zeros(n, np.int64)})
    devs = [NullDevice(i, cap=1 << 20, arena_size=1 << 12, align=8) for i in range(2)]
    rt = Runtime(devs, host)
    d = rt.directory
    whole = Box((0,), (n - 1,))
    from bbmm.tiles import Copy
    c0, c1 = (Copy("x", whole, dv, dv.alloc(whole.volume * 8), 8) for dv in devs)
    d.add(c0)
    d.add(c1)
    devs[0].view(c0.alloc, whole, np.int64)[...] = 1  # the lent values, loaded
    devs[1].view(c1.alloc, whole, np.int64)[...] = 2  # newer ones, written later
    d.writebacks = [(c0, whole)]
    d.replay_d2h(c1, Box((2,), (3,)), host.array("x"), "flowout")
    np.testing.assert_array_equal(host.array("x"), [1, 1, 2, 2, 1, 1])
    assert d.writebacks == []


def test_a_host_copy_that_answers_lent_itself_lends():
    """A replayed pair of loads asks :meth:`HostCopy.lent` per region only of a host
    copy that lends: one whose class answers ``lent`` itself does, unless it says."""
    class Lending(HostCopy):
        def lent(self, name, box):
            return True

    class Saying(HostCopy):
        lends = False

        def lent(self, name, box):
            return False

    assert not HostCopy.lends and Lending.lends and not Saying.lends

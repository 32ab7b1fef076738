"""HostOrder's calls played from a program (bbmm.hostorder.OrderProgram) answer as the
scans they stand for: the same events, the same waits, the same records left."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bbmm.box import Box
from bbmm.devices import NullDevice
from bbmm.hostorder import HostOrder
from bbmm.runtime import Runtime

from support.drivers import jacobi_reference, run_jacobi
from support.events import Dev, Event


# a small pool of regions: rows that meet, rows apart, a region of several rows
_REGIONS = [((0, 0), (0, 9)), ((1, 0), (1, 9)), ((0, 0), (3, 9)), ((5, 0), (5, 9)),
            ((5, 2), (5, 4))]

_CALL = st.tuples(st.sampled_from(("load", "store", "none", "before", "settle", "touching")),
                  st.integers(0, len(_REGIONS) - 1), st.integers(0, 2), st.booleans(),
                  st.integers(0, 1))


def _run(order, regions, devs, call, name, events):
    """One call on ``order``; its answer (event names), new events kept in ``events``."""
    kind, ri, d, flag, lane = call
    region = regions[ri]
    if kind in ("load", "store", "none"):
        e = None
        if kind != "none":
            e = Event(name)
            events.append(e)
        order.after("A", region, devs[d], kind == "store", e, lane if kind == "load" else 0)
        return None
    if kind == "before":
        return [e.name for e in order.before("A", region, devs[d], flag, lane)]
    if kind == "settle":
        order.settle("A", region, loads=flag)
        return None
    return [e.name for e, _ in order.touching("A", region, flag)]


@settings(max_examples=300, deadline=None)
@given(cycle=st.lists(_CALL, min_size=1, max_size=10), reps=st.integers(2, 7),
       odd=st.sets(st.tuples(st.integers(0, 6), st.integers(0, 9)), max_size=2),
       finish=st.lists(st.integers(0, 40), max_size=6),
       between=st.lists(_CALL, max_size=3), at=st.integers(1, 6))
def test_played_calls_answer_as_the_scans(cycle, reps, odd, finish, between, at):
    """A cycle of calls made again and again, as a replayed iteration makes them: one
    HostOrder records the cycle and plays it once the records it leaves repeat, another
    scans every time; every answer, wait and record left is the same, copies completing
    between the cycles, a call the program does not foresee (an equal region of another
    object) ending a play midway (the player's later calls then answered by the order),
    other calls between two cycles (an iteration run for real) leaving records a play may
    not start from."""
    ctx = object()
    devs = [Dev(ctx), Dev(ctx), Dev(object())]
    plain, played = HostOrder(), HostOrder()
    for o in (plain, played):
        o.PRUNE_AT = 10 ** 9  # (pruning drops complete records, as a play does not)
    events: tuple[list, list] = ([], [])
    prog = None
    plays = 0
    for rep in range(reps):
        if rep == at:
            for j, call in enumerate(between):
                for o, evs in zip((plain, played), events):
                    _run(o, _FIXED, devs, call, f"between.{j}", evs)
        player = None if prog is None else played.play(prog)
        playing = player is not None
        recording = not playing and played.record()
        plays += playing
        # odd cycles call the player, as a replay does, the others the order it plays
        target = player if playing and rep % 2 else played
        for j, call in enumerate(cycle):
            regions = [Box(*r) for r in _REGIONS] if (rep, j) in odd else _FIXED
            answers = [_run(o, regions, devs, call, f"{rep}.{j}", evs)
                       for o, evs in zip((plain, target), events)]
            assert answers[0] == answers[1]
            assert [e.waited for e in events[0]] == [e.waited for e in events[1]]
        if playing:
            if not played.played():
                prog = None
        elif recording:
            prog = played.recorded()
        assert ([(r[0], r[1].name, r[2], r[3], r[4]) for r in plain.pending.get("A", ())]
                == [(r[0], r[1].name, r[2], r[3], r[4]) for r in played.pending.get("A", ())])
        for i in finish:  # some copies complete before the next cycle
            for evs in events:
                if evs:
                    evs[i % len(evs)].command_execution_status = 0


_FIXED = [Box(*r) for r in _REGIONS]


def _cycles(order, plain, step, n=5):
    """``step(o, rep)`` (a replayed iteration's calls on order ``o``, returning their
    answers) made ``n`` times on ``order``, recorded and played where it can be, and on
    ``plain``, which scans: the same answers and records left each time. The modes of
    ``order``'s cycles ("record", "play", "scan")."""
    got = []
    prog = None
    for rep in range(n):
        playing = prog is not None and order.play(prog) is not None
        recording = not playing and order.record()
        got.append("play" if playing else "record" if recording else "scan")
        assert step(order, rep) == step(plain, rep)
        if playing:
            assert order.played()
        else:
            prog = order.recorded()
        assert ([(r[0], r[1].name) for r in order.pending["A"]]
                == [(r[0], r[1].name) for r in plain.pending["A"]])
    return got


def test_a_stencil_step_is_played_from_its_second_cycle():
    """A halo exchange's calls (two halos loaded, two flow-out rows stored and settled
    before they are sent) leave the records in the shape they found from the second
    cycle on: its calls are recorded there and played from the third, the records left
    as scans leave them, and a copy meeting two of them waits for both."""
    ctx = object()
    d0, d1, d2 = Dev(ctx), Dev(ctx), Dev(ctx)
    halo, out, both = Box((0, 0), (0, 9)), Box((1, 0), (1, 9)), Box((0, 0), (1, 9))

    def step(o, rep):
        o.settle("A", halo, loads=True)
        o.before("A", halo, d1, False)
        o.after("A", halo, d1, False, Event(f"load{rep}"))
        o.before("A", out, d0, True)
        o.after("A", out, d0, True, Event(f"store{rep}"))
        o.settle("A", out, loads=False)
        o.after("A", out, d0, True, Event(f"again{rep}"))
        got = [e.name for e in o.before("A", both, d2, True)]
        assert got == [f"load{rep}", f"again{rep}"]
        return got

    assert _cycles(HostOrder(), HostOrder(), step) == ["record", "record", "play", "play",
                                                      "play"]


def test_a_step_leaving_more_records_than_prune_at_is_recorded_and_played():
    """A step that leaves as many records as it found, more than ``PRUNE_AT`` (heat2d's
    on eight devices leaves 28 per array): no pruning comes between its recorded calls,
    so it is recorded and played as a shorter one is, answering as a pruning scan does
    while no copy completes."""
    ctx = object()
    devs = [Dev(ctx) for _ in range(4)]
    rows = [Box((r, 0), (r, 9)) for r in range(8)]
    order, plain = HostOrder(), HostOrder()
    for o in (order, plain):
        o.PRUNE_AT = 3

    def step(o, rep):
        answers = []
        for i, d in enumerate(devs):  # each device stores its two edge rows...
            for r in (rows[2 * i], rows[2 * i + 1]):
                answers.append([e.name for e in o.before("A", r, d, True)])
                o.after("A", r, d, True, Event(f"store{rep}.{r.lo[0]}"))
        for i, d in enumerate(devs):  # ...and loads its neighbours' as halos
            for r in (rows[2 * i - 1], rows[(2 * i + 2) % 8]):
                answers.append([e.name for e in o.before("A", r, d, False)])
                o.after("A", r, d, False, Event(f"load{rep}.{r.lo[0]}.{i}"))
        return answers

    assert _cycles(order, plain, step) == ["record", "record", "play", "play", "play"]
    assert len(order.pending["A"]) == 16 > order.PRUNE_AT


class _Trailing(NullDevice):
    """A null device whose copies, done at once, give events that stay pending until
    ``LAG`` more copies of the device (or a wait for them), as a GPU's trail the host;
    it keeps the events every copy was given to wait for, and the waits on the host."""

    LAG = 6

    def __init__(self, index, domain, **kw):
        super().__init__(index, **kw)
        self.domain = domain
        self.n = self.done_to = self.waited = 0
        self.waits: list[tuple] = []

    def _run(self, fn, wait_for, copy):
        ours = [e for e in wait_for if isinstance(e, _Pending)]
        held = super()._run(fn, [e for e in wait_for if not isinstance(e, _Pending)], copy)
        if copy not in ("a copy in", "a copy out"):
            return held
        self.waits.append(tuple(sorted((e.dev, e.n) for e in ours)))
        self.n += 1
        self.done_to = max(self.done_to, self.n - self.LAG)
        return _Pending(self.index, self.n)

    def done(self, event):
        if isinstance(event, _Pending):
            return event.n <= self.done_to
        return super().done(event)

    def wait(self, event):
        if isinstance(event, _Pending):
            self.waited += 1
            self.done_to = max(self.done_to, event.n)
        else:
            super().wait(event)


class _Pending:
    def __init__(self, dev, n):
        self.dev, self.n = dev, n


@pytest.mark.parametrize("one_context", [True, False])
def test_played_replays_wait_as_scanned_ones(monkeypatch, one_context):
    """Jacobi's sweeps over four devices whose copies trail the host: with the replays'
    calls played from their program, every copy is given the same events to wait for,
    the host waits as often, and the results are those of the replays that scan."""
    import bbmm.hostorder as ho
    import bbmm.replay as rp

    monkeypatch.setattr(ho, "PLAY_FROM", 0)  # (every program played, however short)
    n, steps, tile = 18, 14, 4
    rng = np.random.default_rng(0)
    A, B = rng.random((n, n)), np.zeros((n, n))
    runs = []
    for tries in (rp.ORDER_TRIES, 0):
        monkeypatch.setattr(rp, "ORDER_TRIES", tries)
        plays = []
        played = ho.HostOrder.played

        def counted(self, played=played, plays=plays):
            whole = played(self)
            plays.append(whole)
            return whole
        monkeypatch.setattr(ho.HostOrder, "played", counted)
        domain = object() if one_context else None
        devs = [_Trailing(i, domain, arena_size=1 << 16) for i in range(4)]
        rt = Runtime(devs, {"A": A.copy(), "B": B.copy()}, verify=True)
        run_jacobi(rt, n, steps, tile)
        runs.append((rt, plays))
    (on, plays_on), (off, plays_off) = runs
    assert plays_on and all(plays_on) and not plays_off
    assert [d.waits for d in on.devices] == [d.waits for d in off.devices]
    assert [d.waited for d in on.devices] == [d.waited for d in off.devices]
    # (copies did wait for other devices': by their events in one context, else on the host)
    assert (any(w for d in on.devices for w in d.waits) if one_context
            else any(d.waited for d in on.devices))
    ra, _ = jacobi_reference(A, B, steps)
    np.testing.assert_allclose(on.host.array("A"), ra, rtol=1e-12)
    np.testing.assert_array_equal(on.host.array("A"), off.host.array("A"))


def test_a_player_once_ended_answers_nothing_from_its_program():
    """After a call the program does not foresee, the player's calls are the order's,
    even one that the program's next step would have matched: the records have moved on
    from what the program assumed there."""
    ctx = object()
    d0, d1 = Dev(ctx), Dev(ctx)
    row = Box((0, 0), (0, 9))
    order, plain = HostOrder(), HostOrder()
    prog = None
    for rep in range(3):  # recorded, recorded again (now a cycle), then kept
        recording = order.record()
        for o in (order, plain):
            o.after("A", row, d0, True, Event(f"store{rep}"))
            o.before("A", row, d1, False)
        prog = order.recorded() if recording else prog
    assert prog is not None
    player = order.play(prog)
    assert player is not None
    other = Box((0, 0), (0, 9))  # an equal region of another object: not foreseen
    late = Event("late")
    for o in (player, plain):
        o.after("A", other, d1, True, late)  # a store of d1 now covers d0's
    # the program's first step (d0's store of ``row``) met again, then its second
    for o in (player, plain):
        o.after("A", row, d0, True, Event("store3"))
    assert ([e.name for e in player.before("A", row, d1, False)]
            == [e.name for e in plain.before("A", row, d1, False)] == ["store3"])
    order.played()
    assert ([(r[1].name, r[2]) for r in order.pending["A"]]
            == [(r[1].name, r[2]) for r in plain.pending["A"]])

"""HostOrder's calls played from a program (bbmm.hostorder.OrderProgram) answer as the
scans they stand for: the same events, the same waits, the same records left."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bbmm.box import Box
from bbmm.hostorder import HostOrder


class _Event:
    def __init__(self, name):
        self.name, self.waited, self.command_execution_status = name, 0, 1

    def wait(self):
        self.waited += 1


class _Dev:
    def __init__(self, domain):
        self.domain = domain

    @staticmethod
    def done(e):
        return e.command_execution_status == 0

    @staticmethod
    def wait(e):
        e.wait()


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
            e = _Event(name)
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
    object) ending a play midway, other calls between two cycles (an iteration run for
    real) leaving records a play may not start from."""
    ctx = object()
    devs = [_Dev(ctx), _Dev(ctx), _Dev(object())]
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
        playing = prog is not None and played.play(prog)
        recording = not playing and played.record()
        plays += playing
        for j, call in enumerate(cycle):
            regions = [Box(*r) for r in _REGIONS] if (rep, j) in odd else _FIXED
            answers = [_run(o, regions, devs, call, f"{rep}.{j}", evs)
                       for o, evs in zip((plain, played), events)]
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


def test_a_stencil_step_is_played_from_its_second_cycle():
    """A halo exchange's calls (two halos loaded, two flow-out rows stored and settled
    before they are sent) leave the records in the shape they found from the second
    cycle on: its calls are recorded there and played from the third, the records left
    as scans leave them, and a copy meeting two of them waits for both."""
    ctx = object()
    d0, d1, d2 = _Dev(ctx), _Dev(ctx), _Dev(ctx)
    halo, out, both = Box((0, 0), (0, 9)), Box((1, 0), (1, 9)), Box((0, 0), (1, 9))
    order, plain = HostOrder(), HostOrder()
    got = []
    prog = None
    for rep in range(5):
        playing = prog is not None and order.play(prog)
        recording = not playing and order.record()
        got.append("play" if playing else "record" if recording else "scan")
        answers = []
        for o in (order, plain):
            o.settle("A", halo, loads=True)
            o.before("A", halo, d1, False)
            o.after("A", halo, d1, False, _Event(f"load{rep}"))
            o.before("A", out, d0, True)
            o.after("A", out, d0, True, _Event(f"store{rep}"))
            o.settle("A", out, loads=False)
            o.after("A", out, d0, True, _Event(f"again{rep}"))
            answers.append([e.name for e in o.before("A", both, d2, True)])
        assert answers[0] == answers[1] == [f"load{rep}", f"again{rep}"]
        if playing:
            assert order.played()
        else:
            prog = order.recorded()
        assert ([(r[0], r[1].name) for r in order.pending["A"]]
                == [(r[0], r[1].name) for r in plain.pending["A"]])
    assert got == ["record", "record", "play", "play", "play"]

"""PlanMemo (bbmm/ownership.py): a plan looked up by the order of its coordinates is the
plan made afresh, element for element, on every phase of random programs whose boxes
move with a serial iterator, on Floyd-Warshall's row k and on a stencil's halos."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from bbmm.box import Box
from bbmm.ownership import Ownership, PlanMemo, plan_phase
from bbmm.runtime import Tile


def _noop(*_a, **_k) -> None:
    return None


def _cover(shape: tuple[int, ...], boxes) -> np.ndarray:
    out = np.zeros(shape, int)
    for b in boxes:
        out[b.slices()] += 1
    return out


def _state(own: Ownership, array: str, shape: tuple[int, ...], ranks: int) -> np.ndarray:
    """Per element: its owner (-1: the initial value) and which ranks hold it."""
    out = np.full(shape + (ranks + 1,), -1)
    out[..., 1:] = 1
    for b, o, hs in own.records[array]:
        s = b.slices()
        out[s + (0,)] = o
        for r in range(ranks):
            out[s + (r + 1,)] = int(r in hs)
    return out


def _same_plan(shape, ranks, got, want, tiles) -> None:
    """The two plans run the same tiles in the same stages and send, per pair of ranks
    and stage, exactly the same elements."""
    assert [[id(t) for t in s] for s, _ in got] == [[id(t) for t in s] for s, _ in want]
    for (_, m1), (_, m2) in zip(got, want):
        assert set(m1) == set(m2)
        for pair in m1:
            a1 = {a for a, _ in m1[pair]} | {a for a, _ in m2[pair]}
            for a in a1:
                c1 = _cover(shape, [b for x, b in m1[pair] if x == a])
                c2 = _cover(shape, [b for x, b in m2[pair] if x == a])
                assert c1.max() <= 1, "a message sends an element twice"
                np.testing.assert_array_equal(c1, c2)


def _check_sequence(phases, shape, ranks, ndev, specs=None) -> PlanMemo:
    """Every phase planned through a PlanMemo (with ``specs``: named by them) and afresh
    on a twin bookkeeping: the same plan and the same bookkeeping after each."""
    rank_of = [d * ranks // ndev for d in range(ndev)]
    memo = PlanMemo()
    own, twin = Ownership(["a"], ranks), Ownership(["a"], ranks)
    for i, tiles in enumerate(phases):
        got = memo.plan(own, tiles, rank_of, None if specs is None else specs[i])
        want = plan_phase(twin, tiles, rank_of)
        _same_plan(shape, ranks, got, want, tiles)
        np.testing.assert_array_equal(_state(own, "a", shape, ranks),
                                      _state(twin, "a", shape, ranks))
        recs = own.records["a"]
        for i, (b1, _, _) in enumerate(recs):
            assert not any(b1.overlaps(b2) for b2, _, _ in recs[i + 1:])
    return memo


# {{{ random phases whose boxes move with k

_N = 96
_coord = st.tuples(st.integers(0, _N - 1), st.sampled_from([0, 1, 1, -1]))
_box_form = st.tuples(_coord, _coord, _coord, _coord)


def _at(form, k: int) -> Box:
    (r0, s0), (r1, s1), (c0, t0), (c1, t1) = form
    v = [min(_N - 1, max(0, c + s * k)) for c, s in ((r0, s0), (r1, s1), (c0, t0), (c1, t1))]
    return Box((min(v[0], v[1]), min(v[2], v[3])), (max(v[0], v[1]), max(v[2], v[3])))


_tile_form = st.tuples(st.integers(0, 3), st.lists(_box_form, min_size=1, max_size=3),
                       st.lists(_box_form, min_size=0, max_size=2))


@settings(max_examples=60, deadline=None)
@given(st.lists(_tile_form, min_size=1, max_size=5), st.integers(0, _N - 1),
       st.integers(8, 60))
def test_memo_plans_as_planning_afresh_on_moving_boxes(forms, k0, steps):
    phases = []
    for k in range(k0, k0 + steps):
        phases.append([Tile(d, {"a": [_at(f, k) for f in reads]}, _noop,
                            writes={"a": [_at(f, k) for f in writes]})
                       for d, reads, writes in forms])
    _check_sequence(phases, (_N, _N), 3, 4)

# }}}


def _floyd(n: int, k: int, ndev: int) -> list[Tile]:
    out = []
    rows_per = -(-n // ndev)
    for d in range(ndev):
        lo, hi = d * rows_per, min(n, (d + 1) * rows_per) - 1
        rows = Box((lo, 0), (hi, n - 1))
        out.append(Tile(d, {"a": [rows, Box((lo, k), (hi, k)), Box((k, 0), (k, n - 1)), rows]},
                        _noop, writes={"a": [rows]}))
    return out


def test_floyd_rows_k_are_looked_up_inside_blocks():
    """Floyd-Warshall's phase k on four ranks is the same phase for every k farther than
    GAP from a block's ends: looked up, and the same plan as planning afresh."""
    n, ndev = 256, 4
    memo = _check_sequence([_floyd(n, k, ndev) for k in range(n)], (n, n), 4, ndev)
    assert memo.rejected == 0
    assert memo.hits >= n - ndev * 2 * (PlanMemo.GAP + 2), (memo.hits, memo.misses)


def _jacobi(n: int, ndev: int, nest: int) -> list[Tile]:
    out = []
    rows_per = -(-n // ndev)
    for d in range(ndev):
        lo, hi = max(1, d * rows_per), min(n - 2, (d + 1) * rows_per - 1)
        halo = Box((lo - 1, 0), (hi + 1, n - 1))
        mine = Box((lo, 1), (hi, n - 2))
        out.append(Tile(d, {"a": [halo] if nest == 0 else [mine]}, _noop,
                        writes={"a": [mine] if nest == 1 else []}))
    return out


def test_stencil_steps_are_looked_up():
    n, ndev = 64, 3
    phases = [_jacobi(n, ndev, s % 2) for s in range(40)]
    memo = _check_sequence(phases, (n, n), 3, ndev)
    assert memo.misses <= 4 and memo.hits >= 36


def test_phases_named_by_a_spec_are_looked_up_by_it_and_the_records():
    """The driver's tile lists built once per regime: the second step of each nest on is
    found by its spec alone, and plans as planning afresh; a phase whose spec repeats
    while the records differ (the first steps) is planned."""
    n, ndev = 64, 3
    phases, specs = [], []
    for s in range(40):
        phases.append(_jacobi(n, ndev, s % 2))
        specs.append(("jacobi", s % 2))
    memo = _check_sequence(phases, (n, n), 3, ndev, specs)
    assert len(memo.by_spec) <= 4 and memo.hits >= 36


def test_a_repeating_step_finds_its_plans_by_the_records_key_it_left(monkeypatch):
    """A plan looked up by its spec restores the records with the key it kept, so the
    next phase is found by that key's identity without computing or hashing the records'
    key again; the plans stay those of planning afresh."""
    import bbmm.ownership as ow
    n, ndev = 64, 3
    phases, specs = [], []
    for s in range(40):
        phases.append(_jacobi(n, ndev, s % 2))
        specs.append(("jacobi", s % 2))
    keys = []
    real = ow._records_key
    monkeypatch.setattr(ow, "_records_key", lambda own: keys.append(1) or real(own))
    memo = _check_sequence(phases, (n, n), 3, ndev, specs)
    assert len(memo._known) >= 2  # one per nest
    assert len(keys) <= 16  # the first steps only (and each plan kept): not one a step


def test_a_template_that_differs_is_never_used(monkeypatch):
    """The first use of a template is checked against planning afresh; one that differs
    (here: every template, made wrong on purpose) is dropped and planning goes on afresh."""
    import bbmm.ownership as ownership
    real = ownership._template

    def wrong(plan, parts, own, bases, shift):
        t = real(plan, parts, own, bases, shift)
        if t is None:
            return None
        msgs_t, recs_t = t
        return [{} for _ in msgs_t], recs_t  # no messages: a wrong plan

    monkeypatch.setattr(ownership, "_template", wrong)
    n, ndev = 128, 2
    memo = _check_sequence([_floyd(n, k, ndev) for k in range(n)], (n, n), 2, ndev)
    assert memo.rejected > 0 and memo.hits == 0


def test_records_key_follows_every_change_of_the_records():
    """The key is kept between changes and computed again after each (a stale key would
    look a spec'd phase up under records it did not meet)."""
    from bbmm.ownership import _records_key

    def fresh(own):
        own.key = None
        return _records_key(own)

    own = Ownership(["a"], 3)
    steps = [lambda: own.wrote("a", Box((0, 0), (3, 9)), 0),
             lambda: own.received("a", Box((1, 0), (1, 9)), 1),
             lambda: own.wrote("a", Box((2, 0), (2, 4)), 2),
             lambda: own.compact("a")]
    before = _records_key(own)
    for step in steps:
        step()
        now = _records_key(own)
        assert now is _records_key(own)  # kept until the next change
        assert now == fresh(own)
        if step is not steps[-1]:  # compacting may leave the records as they were
            assert now != before
        before = now

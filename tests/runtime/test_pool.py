"""The best-fit coalescing pool (:mod:`bbmm.pool`) against a brute-force byte-map model.

The model tests run with the exact-size cache off (``cache=False``): they pin the
best-fit layer's contract. The cache is tested at the end, differentially: a pool
with it serves every request the same pool without it serves, with blocks that never
overlap, and reaches the same coalesced state once unparked.

The model keeps, per arena, one owner id per byte (0: free). Every step checks
that the pool's answer is the one the model predicts exactly: the block best fit
must choose (smallest maximal free run that is large enough, then oldest arena,
then lowest offset), the arena growth and its size, when trimming happens, and
when :class:`DeviceMemoryError` is due. After each step the pool's free blocks
must be exactly the model's maximal free runs (full coalescing) and the
bookkeeping (``in_use``, ``reserved``, stats) exact.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from bbmm.diagnostic import DeviceMemoryError, format_bytes
from bbmm.pool import PAIR_SLACK, Pool


class FakeArena:
    """A driver buffer stand-in; identity is what the pool keys on."""

    def __init__(self, size: int):
        self.size = size
        self.released = False

    def __repr__(self) -> str:
        return f"<arena {self.size} B at {id(self):x}>"


def runs(owner: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs of free (0) bytes as ``(offset, length)``."""
    free = np.concatenate(([False], owner == 0, [False])).astype(np.int8)
    d = np.diff(free)
    starts = np.flatnonzero(d == 1)
    ends = np.flatnonzero(d == -1)
    return [(int(s), int(e - s)) for s, e in zip(starts, ends)]


class Model:
    """The pool's contract, byte by byte."""

    def __init__(self, cap: int, arena_size: int, max_arena: int | None, align: int,
                 release_threshold: int | None):
        self.cap = cap
        self.arena_size = min(arena_size, cap)
        self.max_arena = max_arena or cap
        self.align = align
        self.release_threshold = cap if release_threshold is None else release_threshold
        self.arenas: list[tuple[FakeArena, np.ndarray]] = []  # creation order
        self.blocks: dict[int, tuple[FakeArena, int, int]] = {}  # id -> arena, offset, size
        self.next_id = 1
        self.created: list[FakeArena] = []
        self.released: list[FakeArena] = []

    # callbacks handed to the pool
    def new_arena(self, n: int) -> FakeArena:
        a = FakeArena(n)
        self.created.append(a)
        return a

    def free_arena(self, a: FakeArena) -> None:
        assert not a.released, "arena released twice"
        a.released = True
        self.released.append(a)

    @property
    def reserved(self) -> int:
        return sum(a.size for a, _ in self.arenas)

    @property
    def in_use(self) -> int:
        return sum(s for _, _, s in self.blocks.values())

    def rounded(self, nbytes: int) -> int:
        return -(-nbytes // self.align) * self.align

    def best_fit(self, size: int) -> tuple[FakeArena, int] | None:
        best = None
        for no, (a, owner) in enumerate(self.arenas):
            for off, length in runs(owner):
                if length >= size and (best is None or (length, no, off) < best[0]):
                    best = ((length, no, off), a)
        return None if best is None else (best[1], best[0][2])

    def empty_arenas(self) -> list[FakeArena]:
        return [a for a, owner in self.arenas if not owner.any()]

    def drop_empty(self) -> int:
        empty = self.empty_arenas()
        self.arenas = [(a, o) for a, o in self.arenas if a not in empty]
        return sum(a.size for a in empty)

    def predict_alloc(self, nbytes: int):
        """('fit', arena, off) | ('grow', want, trimmed) | ('error', trimmed)."""
        size = self.rounded(nbytes)
        hit = self.best_fit(size)
        if hit is not None:
            return ("fit", *hit)
        want = min(max(self.arena_size, size), self.max_arena)
        if want < PAIR_SLACK * size and self.reserved + PAIR_SLACK * size <= self.cap:
            want = min(PAIR_SLACK * size, self.max_arena)  # room for a pair's bound
        if size > self.max_arena or size > self.cap:
            return ("error", False)
        if self.reserved + want > self.cap:
            reserved = self.reserved - sum(a.size for a in self.empty_arenas())
            want = min(want, self.cap - reserved)
            if want < size:
                return ("error", True)
            return ("grow", want, True)
        return ("grow", want, False)

    def can_fit(self, nbytes: int) -> bool:
        return self.predict_alloc(nbytes)[0] != "error"

    def take(self, arena: FakeArena, off: int, size: int) -> int:
        owner = next(o for a, o in self.arenas if a is arena)
        assert off + size <= len(owner), "block runs past its arena"
        assert not owner[off:off + size].any(), "block overlaps a live block"
        bid = self.next_id
        self.next_id += 1
        owner[off:off + size] = bid
        self.blocks[bid] = (arena, off, size)
        return bid

    def give_back(self, bid: int) -> None:
        arena, off, size = self.blocks.pop(bid)
        owner = next(o for a, o in self.arenas if a is arena)
        assert (owner[off:off + size] == bid).all()
        owner[off:off + size] = 0
        if not owner.any() and self.reserved > self.release_threshold:
            self.arenas = [(a, o) for a, o in self.arenas if a is not arena]


def check_pool_matches(pool: Pool, m: Model) -> None:
    """Exact agreement of bookkeeping, free blocks and stats."""
    assert [a.buf for a in pool._arenas] == [a for a, _ in m.arenas]
    assert pool.reserved == m.reserved <= m.cap
    assert pool.in_use == m.in_use
    st_ = pool.stats()
    assert st_.cap == m.cap and st_.arenas == len(m.arenas)
    assert st_.free == m.reserved - m.in_use
    all_runs = []
    for (a, owner), pa in zip(m.arenas, pool._arenas):
        r = runs(owner)
        all_runs += [length for _, length in r]
        # fully coalesced: the pool's free blocks are exactly the maximal free runs
        assert sorted(pa.free_by_addr.items()) == r
        assert pa.free_by_end == {off + n: off for off, n in r}
        assert sorted(pa.used.items()) == sorted((off, s) for b, off, s in m.blocks.values()
                                                 if b is a)
    assert st_.largest_free == max(all_runs, default=0)
    assert len(pool._free_sorted) == len(all_runs)
    assert pool._free_sorted == sorted(pool._free_sorted)
    frag = 0.0 if st_.free == 0 else 1 - st_.largest_free / st_.free
    assert st_.fragmentation == pytest.approx(frag)
    # every released arena was handed to free_arena exactly once, live ones never
    live = {id(a) for a, _ in m.arenas}
    assert all(id(a) not in live for a in m.released)
    assert all(a.released == (id(a) not in live) for a in m.created)


# {{{ state machine

class PoolMachine(RuleBasedStateMachine):
    @initialize(align=st.sampled_from([1, 8, 64, 256]),
                arena_size=st.integers(64, 4096),
                cap_extra=st.integers(0, 12288),
                max_arena=st.one_of(st.none(), st.integers(256, 8192)),
                release=st.sampled_from([None, 0, 2048]))
    def setup(self, align, arena_size, cap_extra, max_arena, release):
        cap = arena_size + cap_extra
        self.m = Model(cap, arena_size, max_arena, align, release)
        self.pool = Pool(cap, self.m.new_arena, self.m.free_arena, arena_size=arena_size,
                         max_arena=max_arena, align=align, release_threshold=release,
                         name="fake0", cache=False)
        self.handles: dict[int, tuple[FakeArena, int]] = {}

    @rule(data=st.data())
    def alloc(self, data):
        m = self.m
        nbytes = data.draw(st.one_of(st.integers(1, 512), st.integers(1, m.cap + 512)))
        pred = m.predict_alloc(nbytes)
        assert self.pool.can_fit(nbytes) == (pred[0] != "error")
        created = len(m.created)
        if pred[0] == "error":
            with pytest.raises(DeviceMemoryError) as ei:
                self.pool.alloc(nbytes)
            e = ei.value
            assert (e.asked, e.held, e.cap) == (nbytes, m.in_use, m.cap)
            assert format_bytes(nbytes) in str(e) and format_bytes(m.cap) in str(e)
            assert "fake0" in str(e)
            if pred[1]:
                m.drop_empty()
            assert len(m.created) == created
            return
        buf, off = self.pool.alloc(nbytes)
        size = m.rounded(nbytes)
        if pred[0] == "fit":
            assert (buf, off) == (pred[1], pred[2]), "best fit chose another block"
            assert len(m.created) == created
        else:
            _, want, trimmed = pred
            if trimmed:
                m.drop_empty()
            assert len(m.created) == created + 1 and buf is m.created[-1]
            assert buf.size == want and off == 0
            m.arenas.append((buf, np.zeros(want, dtype=np.int32)))
        bid = m.take(buf, off, size)
        self.handles[bid] = (buf, off)

    @precondition(lambda self: self.handles)
    @rule(data=st.data())
    def free(self, data):
        bid = data.draw(st.sampled_from(sorted(self.handles)))
        buf, off = self.handles.pop(bid)
        self.pool.free(buf, off)
        self.m.give_back(bid)

    @precondition(lambda self: self.handles)
    @rule(data=st.data())
    def double_free(self, data):
        bid = data.draw(st.sampled_from(sorted(self.handles)))
        buf, off = self.handles[bid]
        with pytest.raises(ValueError):
            self.pool.free(buf, buf.size)  # no block starts at the arena's end
        with pytest.raises(ValueError):
            self.pool.free(FakeArena(1), off)

    @rule()
    def trim(self):
        expect = self.m.drop_empty()
        assert self.pool.trim() == expect

    @invariant()
    def consistent(self):
        if hasattr(self, "m"):
            check_pool_matches(self.pool, self.m)

    def teardown(self):
        if hasattr(self, "pool"):
            self.pool.close()
            assert self.pool.reserved == 0 and self.pool.in_use == 0
            assert all(a.released for a in self.m.created)


PoolMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=50,
                                         deadline=None,
                                         suppress_health_check=[HealthCheck.too_slow])
TestPoolMachine = PoolMachine.TestCase

# }}}


# {{{ seeded random sequences at realistic sizes

@pytest.mark.parametrize("seed", range(3))
def test_random_sequence_against_model(seed):
    rng = np.random.default_rng(seed)
    m = Model(cap=1 << 20, arena_size=256 << 10, max_arena=None, align=256,
              release_threshold=None)
    pool = Pool(m.cap, m.new_arena, m.free_arena, arena_size=256 << 10, align=256,
                cache=False)
    live: dict[int, tuple[FakeArena, int]] = {}
    for step in range(600):
        if live and (rng.random() < 0.45 or m.in_use > 0.8 * m.cap):
            bid = int(rng.choice(sorted(live)))
            pool.free(*live.pop(bid))
            m.give_back(bid)
        else:
            nbytes = int(np.exp(rng.uniform(np.log(16), np.log(200_000))))
            pred = m.predict_alloc(nbytes)
            if pred[0] == "error":
                with pytest.raises(DeviceMemoryError):
                    pool.alloc(nbytes)
                if pred[1]:
                    m.drop_empty()
            else:
                buf, off = pool.alloc(nbytes)
                if pred[0] == "fit":
                    assert (buf, off) == pred[1:]
                else:
                    if pred[2]:
                        m.drop_empty()
                    m.arenas.append((buf, np.zeros(buf.size, dtype=np.int32)))
                live[m.take(buf, off, m.rounded(nbytes))] = (buf, off)
        if step % 20 == 0:
            check_pool_matches(pool, m)
    for bid in list(live):
        pool.free(*live.pop(bid))
        m.give_back(bid)
    check_pool_matches(pool, m)
    st_ = pool.stats()
    assert st_.in_use == 0 and st_.arenas == len(m.arenas)
    assert all(len(a.free_by_addr) == 1 for a in pool._arenas)  # one free block per arena

# }}}


# {{{ targeted cases

def make(cap=1 << 16, arena_size=1 << 14, **kw):
    m = Model(cap, arena_size, kw.get("max_arena"), kw.get("align", 256),
              kw.get("release_threshold"))
    kw.setdefault("cache", False)  # the best-fit layer's exact contract
    return Pool(cap, m.new_arena, m.free_arena, arena_size=arena_size, **kw), m


def test_best_fit_picks_smallest_fitting_block():
    pool, m = make(align=1)
    a = [pool.alloc(n) for n in (100, 10, 300, 10, 200, 10, 50, 10)]
    for i in (0, 2, 4, 6):  # free blocks of 100, 300, 200, 50 separated by live 10s
        pool.free(*a[i])
    # 150 fits 300 and 200 (and the tail): 200 is the smallest
    assert pool.alloc(150) == a[4]
    assert pool.alloc(60) == a[0]  # 100 is the smallest block >= 60 (50 is too small)
    # two exact fits of 50 now: the tail of the split 200-block (570) and a[6] (630);
    # the lower address wins
    assert a[6][1] == 630 and pool.alloc(50) == (a[6][0], 570)
    assert pool.alloc(50) == a[6]
    st_ = pool.stats()
    assert st_.arenas == 1 and st_.allocs == 12


def test_best_fit_ties_go_to_lowest_address():
    pool, _ = make(align=1)
    a = [pool.alloc(64) for _ in range(5)]
    pool.free(*a[3])
    pool.free(*a[1])
    assert pool.alloc(64) == a[1]


def test_coalescing_and_fragmentation_stats():
    pool, _ = make(cap=1 << 16, arena_size=1 << 14, align=256)
    blocks = [pool.alloc(1024) for _ in range(16)]  # fills one 16 KiB arena exactly
    assert pool.stats().arenas == 1 and pool.stats().free == 0
    for b in blocks[::2]:
        pool.free(*b)
    s = pool.stats()
    assert s.free == 8 * 1024 and s.largest_free == 1024
    assert s.fragmentation == pytest.approx(1 - 1 / 8)
    assert not pool.can_fit(2048 + (1 << 16)) and pool.can_fit(2048)
    for b in blocks[1::2]:
        pool.free(*b)
    s = pool.stats()
    assert s.in_use == 0 and s.free == s.reserved == 1 << 14
    assert s.largest_free == 1 << 14 and s.fragmentation == 0.0
    assert [len(a.free_by_addr) for a in pool._arenas] == [1]


def test_cap_and_error_quantities():
    pool, _ = make(cap=10_000, arena_size=4096, align=256)
    pool.alloc(4096)
    pool.alloc(4096)
    with pytest.raises(DeviceMemoryError) as ei:
        pool.alloc(3000)  # 2 x 4096 reserved, room for 1808 only
    e = ei.value
    assert (e.device, e.asked, e.held, e.cap) == ("device", 3000, 8192, 10_000)
    assert str(e) == "device: cannot allocate 2.93 KiB: 8.00 KiB of 9.77 KiB held"
    assert pool.reserved <= pool.cap
    with pytest.raises(DeviceMemoryError, match="larger than the device allows"):
        pool.alloc(20_000)


def test_max_arena_bounds_blocks_and_arenas():
    pool, m = make(cap=1 << 20, arena_size=1 << 16, max_arena=1 << 15)
    buf, off = pool.alloc(1000)
    assert buf.size == 1 << 15  # arena_size clamped to the largest buffer allowed
    with pytest.raises(DeviceMemoryError, match="larger than the device allows"):
        pool.alloc((1 << 15) + 1)


def test_trim_releases_empty_arenas_only():
    pool, m = make(cap=1 << 16, arena_size=1 << 12, max_arena=1 << 12)  # a box per arena
    a = pool.alloc(1 << 12)
    b = pool.alloc(1 << 12)
    c = pool.alloc(100)
    pool.free(*a)
    pool.free(*b)
    assert pool.stats().arenas == 3
    assert pool.trim() == 2 << 12
    assert pool.stats().arenas == 1 and pool.reserved == 1 << 12
    assert len(m.released) == 2 and c[0] not in m.released
    assert pool.trim() == 0


def test_growth_trims_empty_arenas_of_the_wrong_size():
    pool, m = make(cap=3 << 12, arena_size=1 << 12)
    blocks = [pool.alloc(1 << 11) for _ in range(6)]  # two per arena
    for b in blocks:
        pool.free(*b)
    assert pool.reserved == 3 << 12 and pool.in_use == 0
    buf, off = pool.alloc(2 << 12)  # needs an arena twice the size: the empty ones go
    assert buf.size == 2 << 12 and len(m.released) == 3


def test_release_threshold_zero_gives_arenas_back_at_once():
    pool, m = make(release_threshold=0)
    a = pool.alloc(100)
    pool.free(*a)
    assert pool.reserved == 0 and len(m.released) == 1


def test_free_of_foreign_block_raises():
    pool, _ = make()
    buf, off = pool.alloc(100)
    with pytest.raises(ValueError, match="not allocated here"):
        pool.free(buf, off + 256)
    pool.free(buf, off)
    with pytest.raises(ValueError, match="not allocated here"):
        pool.free(buf, off)
    with pytest.raises(ValueError):
        pool.alloc(0)


def test_close_releases_everything():
    pool, m = make()
    pool.alloc(100)
    pool.alloc(1 << 15)
    pool.close()
    assert pool.reserved == 0 and pool.in_use == 0 and all(a.released for a in m.created)

# }}}


# {{{ the exact-size cache in front of best fit

def test_cache_hands_back_the_freed_block_of_the_same_size():
    pool, m = make(align=256, cache=True)
    a = pool.alloc(1000)
    b = pool.alloc(3000)
    pool.free(*a)
    assert pool.in_use == 3072 and pool.stats().in_use == 3072
    a2 = pool.alloc(900)  # rounds to 1024: the parked block of that size
    assert a2 == a
    with pytest.raises(ValueError, match="not allocated here"):
        pool.free(*b), pool.free(*b)  # double free of a parked block is caught
    pool.free(*a2)
    s = pool.stats()  # unparks: one coalesced free block per arena
    assert s.in_use == 0 and [len(x.free_by_addr) for x in pool._arenas] == [1]


def test_cache_miss_unparks_so_nothing_fails_for_it():
    pool, m = make(cap=1 << 14, arena_size=1 << 14, align=256, cache=True)
    blocks = [pool.alloc(1024) for _ in range(16)]  # the whole cap
    for b in blocks:
        pool.free(*b)
    # every byte is parked in 1 KiB pieces; 16 KiB must still be found, in one piece
    buf, off = pool.alloc(1 << 14)
    assert off == 0 and pool.reserved == 1 << 14 and pool._parked_bytes == 0


def test_cache_releases_arenas_when_over_the_threshold():
    pool, m = make(release_threshold=0, cache=True)
    a = pool.alloc(100)
    pool.free(*a)
    assert pool.reserved == 0 and len(m.released) == 1


@pytest.mark.parametrize("seed", range(4))
def test_cache_random_sequence_invariants(seed):
    """Random alloc/free at box-like sizes with the cache on: blocks never overlap,
    ``in_use`` is the live bytes, a request fails only once nothing is parked and the
    best-fit layer has no room, and freeing everything leaves one block per arena."""
    rng = np.random.default_rng(100 + seed)
    cap = 1 << 18
    m = Model(cap, 1 << 16, None, 256, None)
    pool = Pool(cap, m.new_arena, m.free_arena, arena_size=1 << 16, cache=True)
    live: list[tuple[object, int, int]] = []
    sizes = [256, 1024, 4096, 3000, 20_000, 70_000]
    hits = fails = 0
    for step in range(800):
        if live and rng.random() < 0.5:
            buf, off, _ = live.pop(int(rng.integers(len(live))))
            pool.free(buf, off)
        else:
            n = int(rng.choice(sizes))
            parked = bool(pool._parked.get(-(-n // 256) * 256))
            try:
                buf, off = pool.alloc(n)
            except DeviceMemoryError:
                fails += 1
                assert pool._parked_bytes == 0 and not pool.can_fit(n), f"step {step}"
                continue
            hits += parked
            live.append((buf, off, -(-n // 256) * 256))
        spans = sorted((id(b), o, o + sz) for b, o, sz in live)
        for (b1, _, e1), (b2, o2, _) in zip(spans, spans[1:]):
            assert b1 != b2 or e1 <= o2, f"step {step}: overlapping blocks"
        assert pool.in_use == sum(sz for _, _, sz in live)
        assert pool.in_use + pool._parked_bytes <= pool.reserved <= cap
    assert hits > 50 and fails > 0  # the sequence exercised both paths
    for buf, off, _ in live:
        pool.free(buf, off)
    st_ = pool.stats()
    assert st_.in_use == 0 and all(len(x.free_by_addr) == 1 for x in pool._arenas)

# }}}


def test_an_arena_for_a_large_box_is_twice_it_where_the_cap_has_room():
    """A box past ``arena_size`` gets an arena of twice its size, so that two of its rows
    at the far ends can move as one rect copy within the buffer (PAIR_SLACK); the rest
    of that arena serves other boxes. Near the cap, or past the driver's largest buffer,
    the arena is only as large as there is room for."""
    pool, m = make(cap=1 << 20, arena_size=1 << 12)
    arena, off = pool.alloc(10_000)
    assert off == 0 and arena.size == PAIR_SLACK * 10_240
    again, off2 = pool.alloc(9_000)  # the second half holds the next box
    assert again is arena and off2 == 10_240
    assert pool.stats().arenas == 1
    tight, _ = make(cap=15_000, arena_size=1 << 12)
    arena, _ = tight.alloc(10_000)
    assert arena.size == 10_240  # twice would pass the cap: the box's own size
    capped, _ = make(cap=1 << 20, arena_size=1 << 12, max_arena=12_000)
    arena, _ = capped.alloc(10_000)
    assert arena.size == 12_000

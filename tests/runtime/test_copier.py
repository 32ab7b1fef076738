"""Copies split over threads (bbmm/copier.py): every byte lands once, in any split; the
threads' errors reach the caller; small lists stay on the calling thread."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from bbmm.copier import Copier, split

shapes = st.lists(st.integers(1, 7), min_size=1, max_size=3).map(tuple)


@settings(max_examples=200, deadline=None)
@given(st.lists(shapes, min_size=1, max_size=4), st.integers(1, 6))
@example([(3,), (1,), (1,), (2,)], 2)  # single elements past a full list's share
def test_split_covers_every_element_once_in_order(shps, parts):
    srcs = [np.arange(int(np.prod(s)), dtype=np.int32).reshape(s) + 1000 * i
            for i, s in enumerate(shps)]
    dsts = [np.zeros_like(s) for s in srcs]
    pieces = split(list(zip(dsts, srcs)), parts)
    assert 1 <= len(pieces) <= parts
    for piece in pieces:
        for d, s in piece:
            assert d.shape == s.shape and d.size > 0
            assert not d.any()  # no element in two pieces
            d[...] = s
    for d, s in zip(dsts, srcs):
        assert np.array_equal(d, s)
    total = sum(s.nbytes for s in srcs)
    if len(pieces) > 1:  # pieces are about equal: none past its share by a slice's bytes
        biggest_slice = max(s.nbytes // next((n for n in s.shape if n > 1), 1) for s in srcs)
        share = -(-total // parts)
        assert all(sum(d.nbytes for d, _ in p) <= share + biggest_slice for p in pieces[:-1])


def test_copier_copies_strided_views_on_threads():
    seen = set()
    src = np.random.default_rng(0).random((64, 80, 96), dtype=np.float32)
    dst = np.zeros((70, 90, 100), np.float32)
    c = Copier(3, min_bytes=1024, piece=1024)
    real = Copier.copy.__globals__["_run"]

    def spy(copies):
        seen.add(threading.get_ident())
        real(copies)
    Copier.copy.__globals__["_run"] = spy
    try:
        c.copy([(dst[3:67, 5:85, 2:98], src), (dst[0, 0:4, 0:4], src[0, 0:4, 0:4] + 1)])
    finally:
        Copier.copy.__globals__["_run"] = real
        c.close()
    assert np.array_equal(dst[3:67, 5:85, 2:98], src)
    assert np.array_equal(dst[0, 0:4, 0:4], src[0, 0:4, 0:4] + 1)
    assert dst[67:].sum() == 0 and dst[:3, 4:].sum() == 0
    assert len(seen) == 4  # the caller and three threads


def test_small_lists_stay_on_the_calling_thread():
    c = Copier(3)  # default: lists under 512 KiB are copied here
    a, b = np.ones(1000), np.zeros(1000)
    c.copy([(b, a)])
    assert b.sum() == 1000 and c._workers == []


def test_a_thread_error_reaches_the_caller():
    c = Copier(2, min_bytes=16, piece=16)
    good = np.zeros((8, 8))
    try:
        with pytest.raises(ValueError):
            # a read-only destination fails on whichever thread copies it
            ro = np.zeros((8, 8))
            ro.flags.writeable = False
            c.copy([(good, np.ones((8, 8))), (ro, np.ones((8, 8)))])
        c.copy([(good, np.full((8, 8), 2.0))])  # the threads still work
        assert (good == 2).all()
    finally:
        c.close()

"""Randomized differential test of the runtime: random tiled programs on null devices.

Each program has serial iterations of phases; a phase splits a random row range
among tiles (a parallel loop), each tile reads random boxes that no other tile of
the phase writes and writes its rows. The reference runs the tiles one after the
other on a numpy array. Flow-out and write-out boxes are drawn at random (exact,
empty or whole), since correctness must not depend on them; devices, modes,
reuse, coherence and caps vary.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from bbmm.box import Box, disjoint, hull_all
from bbmm.devices import NullDevice
from bbmm.runtime import Runtime, Tile

from support.drivers import gather, scatter

MOD = 1_000_003


def random_box(rng, shape):
    lo = [int(rng.integers(0, s)) for s in shape]
    hi = [int(rng.integers(l, min(s, l + 1 + s // 2))) for l, s in zip(lo, shape)]
    return Box(tuple(lo), tuple(hi))


def make_program(rng, shape):
    rows = shape[0]
    program = []
    for s in range(int(rng.integers(2, 5))):
        phases = []
        for _ in range(int(rng.integers(1, 3))):
            lo = int(rng.integers(0, rows - 1))
            hi = int(rng.integers(lo, rows))
            ntiles = int(rng.integers(1, 5))
            cuts = sorted(set([lo] + [int(c) for c in rng.integers(lo, hi + 1, ntiles - 1)]))
            parts = [(a, (cuts[i + 1] - 1) if i + 1 < len(cuts) else hi) for i, a in enumerate(cuts)]
            c0 = int(rng.integers(0, shape[1]))
            c1 = int(rng.integers(c0, shape[1]))
            writes = [Box((a, c0), (b, c1)) for a, b in parts if a <= b]
            tiles = []
            for w in writes:
                others = [o for o in writes if o is not w]
                reads = [w]
                for _ in range(int(rng.integers(0, 4))):
                    r = random_box(rng, shape)
                    pieces = [r]
                    for o in others:
                        pieces = [q for p in pieces for q in p.subtract(o)]
                    if pieces:
                        reads.append(pieces[int(rng.integers(0, len(pieces)))])
                tiles.append((w, reads))
            phases.append(tiles)
        program.append(phases)
    return program


def reference(x, program):
    x = x.copy()
    for s, phases in enumerate(program):
        for tiles in phases:
            for w, reads in tiles:
                add = sum(int(x[r.slices()].sum()) for r in reads[1:])
                x[w.slices()] = (x[w.slices()] * 3 + add + s) % MOD
    return x


def footprint(tiles, mode):
    need = 0
    for w, reads in tiles:
        boxes = [hull_all(reads)] if mode == "convex" else disjoint(reads)
        need = max(need, sum(b.volume for b in boxes) * 8 + 8 * len(boxes))
    return need


def _row_of(rng, w):
    """One random row of box ``w`` (its columns all)."""
    r = int(rng.integers(w.lo[0], w.hi[0] + 1))
    return Box((r, w.lo[1]), (r, w.hi[1]))


def run_random(seed, pieces=False):
    """Run random program ``seed`` and compare with the reference. With ``pieces`` the
    programs are longer and each tile flows out and writes out single rows of its box
    (LU-like: deferred write-outs that flow-outs and later writes carve up, which the
    directory merges where their holder is newest)."""
    rng = np.random.default_rng(seed)
    shape = (int(rng.integers(4, 14)), int(rng.integers(3, 10)))
    program = make_program(rng, shape)
    if pieces:
        program += make_program(rng, shape) + make_program(rng, shape)
    x = rng.integers(0, 1000, size=shape).astype(np.int64)
    ndev = int(rng.integers(1, 5))
    mode = ["disjoint", "convex"][int(rng.integers(0, 2))]
    reuse = bool(rng.integers(0, 2))
    coh = ["exact", "block"][int(rng.integers(0, 2))]
    need = max(footprint(t, mode) for ph in program for t in ph)
    cap = [1 << 20, 2 * need + 64, 3 * need][int(rng.integers(0, 3))]
    devs = [NullDevice(i, cap=cap, arena_size=cap, align=8) for i in range(ndev)]
    rt = Runtime(devs, {"x": x.copy()}, mode=mode, reuse=reuse, coherence=coh, verify=True)
    for s, phases in enumerate(program):
        for tiles in phases:
            specs = []
            for i, (w, reads) in enumerate(tiles):
                def k(d, tb, w=w, reads=reads, s=s):
                    add = sum(int(gather(d, tb, "x", r, np.int64).sum()) for r in reads[1:])
                    scatter(d, tb, "x", w, (gather(d, tb, "x", w, np.int64) * 3 + add + s) % MOD)
                if pieces:
                    fo = [_row_of(rng, w)] if rng.integers(0, 2) else []
                    wo = [_row_of(rng, w) for _ in range(int(rng.integers(0, 3)))]
                else:
                    choice = int(rng.integers(0, 3))
                    fo = [] if choice == 0 else [w] if choice == 1 else [random_box(rng, shape)]
                    wo = [w] if rng.integers(0, 2) else []
                specs.append(Tile(i * ndev // len(tiles), {"x": reads}, k, writes={"x": [w]},
                                  flowout={"x": [b for b in fo if b.intersect(w)]},
                                  writeout={"x": wo}, cleanup={"x": [bool(rng.integers(0, 2)) for _ in reads]}))
            rt.run_phase(specs, serial=s)
        rt.end_serial(s)
    rt.finish()
    np.testing.assert_array_equal(rt.host.array("x"), reference(x, program),
                                  err_msg=f"ndev={ndev} mode={mode} reuse={reuse} coh={coh} cap={cap}")
    return rt


@pytest.mark.parametrize("seed", range(int(os.environ.get("BBMM_RANDOM_SEEDS", "60"))))
def test_random_program(seed):
    run_random(seed)


@pytest.mark.parametrize("seed", range(int(os.environ.get("BBMM_RANDOM_SEEDS", "60"))))
def test_random_program_with_deferred_rows(seed):
    """Write-outs and flow-outs of single rows (deferred, carved up and merged) give the
    reference's result on any devices, modes and caps."""
    run_random(seed, pieces=True)


def test_deferred_rows_are_merged_in_the_random_programs(monkeypatch):
    """The programs above are not vacuous: their directories merge deferred records."""
    from bbmm.coherence import Directory
    real = Directory._merge_dirty
    merged = []

    def merge(self, holder, hull):
        before = len(self.dirty[holder.array])
        real(self, holder, hull)
        merged.append(len(self.dirty[holder.array]) < before)

    monkeypatch.setattr(Directory, "_merge_dirty", merge)
    for seed in range(30):
        run_random(seed, pieces=True)
    assert sum(merged) >= 10

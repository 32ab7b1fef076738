"""The default tile size (bbmm.run.default_tile): one tile per device, or several for a
program whose nests run once and share no array, each with enough data to hide its
per-tile costs; and the dry run that shrinks it to fit a cap (bbmm.run.fitting_tile)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bbmm.config import RuntimeConfig
from bbmm.diagnostic import UsageError
from bbmm.hostlib import serial_range
from bbmm.run import FIT_SAMPLES, PIPELINE_BYTES, _Footprint, _spread, default_tile
from bbmm.codegen.compile import compile_program, load_driver
from support.paths import POLYBENCH



def driver(name: str):
    return load_driver(compile_program(str(POLYBENCH / f"{name}.c")))


def _bytes(n: int) -> np.ndarray:
    """An array of ``n`` bytes that takes no memory (default_tile reads only nbytes)."""
    return np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), (n,), (0,))


def test_the_driver_says_which_programs_run_once_and_what_nests_share():
    assert (driver("blackscholes").RUNS_ONCE, driver("blackscholes").SHARED) == (True, frozenset())
    assert (driver("matmul").RUNS_ONCE, driver("matmul").SHARED) == (True, frozenset())
    assert (driver("mvt").RUNS_ONCE, driver("mvt").SHARED) == (True, frozenset({"A"}))
    assert driver("floyd").RUNS_ONCE is False and driver("heat2d").RUNS_ONCE is False


# Worked examples, by hand: blackscholes has five float arrays, 20 n bytes; a device gets
# total // (devices x 64 MiB) tiles (at least 1, at most 16), each ceil(n / tiles) rows.
#   n = 2^12:  80 KiB, one tile per device: 4096, 2048, ceil(4096 / 3) = 1366
#   n = 2^22:  80 MiB: 80 // 64 = 1 on one device; 80 // 128 = 0 -> 1; 80 // 192 = 0 -> 1
#   n = 2^24: 320 MiB: 320 // 64 = 5 tiles -> ceil(2^24 / 5) = 3355444; 320 // 128 = 2
#              per device -> 4 tiles of 2^22; 320 // 192 = 1 -> 3 tiles of 5592406
#   n = 2^26: 1280 MiB: 1280 // 64 = 20 -> 16 tiles of 2^22; 1280 // 128 = 10 per device
#              -> 20 tiles of ceil(2^26 / 20) = 3355444; 1280 // 192 = 6 -> 18 tiles of
#              ceil(2^26 / 18) = 3728271
RUNS_ONCE_TILES = {
    (1 << 12, 1): 4096, (1 << 12, 2): 2048, (1 << 12, 3): 1366,
    (1 << 22, 1): 4194304, (1 << 22, 2): 2097152, (1 << 22, 3): 1398102,
    (1 << 24, 1): 3355444, (1 << 24, 2): 4194304, (1 << 24, 3): 5592406,
    (1 << 26, 1): 4194304, (1 << 26, 2): 3355444, (1 << 26, 3): 3728271,
}


@pytest.mark.parametrize("n,ndev", sorted(RUNS_ONCE_TILES))
def test_a_program_that_runs_once_is_cut_into_tiles_of_enough_data(n, ndev):
    assert PIPELINE_BYTES == 64 << 20          # the examples above assume it
    bs = driver("blackscholes")
    arrays = {"all": _bytes(5 * 4 * n)}        # five float arrays; only their bytes count
    assert default_tile(bs, {"n": n}, arrays, ndev, split=16) == RUNS_ONCE_TILES[n, ndev]
    # one tile per device when the split is 1: ceil(n / ndev)
    assert default_tile(bs, {"n": n}, arrays, ndev, split=1) == \
        {1: n, 2: n // 2, 3: (n + 2) // 3}[ndev]


# one tile per device of the widest nest's range, 0 included: mvt's widest loop runs over
# m = 16384 rows, floyd's over n = 8192, heat2d's interior 1 .. n - 2 (grid 0 .. 8190:
# 8191 rows, ceil(8191 / 2) = 4096 on two devices)
@pytest.mark.parametrize("name,params,tiles", [
    ("mvt", {"m": 1 << 14, "n": 1 << 13}, (16384, 8192)),
    ("floyd", {"n": 1 << 13}, (8192, 4096)),
    ("heat2d", {"tsteps": 2, "n": 1 << 13}, (8191, 4096))])
def test_serial_loops_or_shared_arrays_keep_one_tile_per_device(name, params, tiles):
    mod = driver(name)
    big = {"all": _bytes(64 * PIPELINE_BYTES)}
    for ndev, want in zip((1, 2), tiles):
        assert default_tile(mod, params, big, ndev, split=16) == want


def test_pipeline_setting(monkeypatch):
    monkeypatch.delenv("BBMM_PIPELINE", raising=False)
    assert RuntimeConfig.from_env().pipeline == 16 == RuntimeConfig.pipeline
    monkeypatch.setenv("BBMM_PIPELINE", "3")
    assert RuntimeConfig.from_env().pipeline == 3
    for bad, msg in (("x", "BBMM_PIPELINE: 'x' is not an integer"),
                     ("0", "BBMM_PIPELINE: 0 is less than 1")):
        monkeypatch.setenv("BBMM_PIPELINE", bad)
        with pytest.raises(UsageError, match=msg):
            RuntimeConfig.from_env()


@given(st.integers(-50, 50), st.integers(0, 400), st.integers(2, 20))
def test_a_dry_run_samples_both_ends_of_a_serial_loop_and_evenly_between(first, n, count):
    got = list(_spread(first, first + n, count))
    if n <= count:
        assert got == list(range(first, first + n))
        return
    assert got[0] == first and got[-1] == first + n - 1
    assert got == sorted(set(got)) and len(got) <= count
    step = -(-(n - 1) // (count - 1))
    assert max(b - a for a, b in zip(got, got[1:])) <= step


def test_only_a_sampling_runtime_skips_serial_iterations():
    class Real:
        pass

    assert serial_range(Real(), 3, 9) == range(3, 9)
    probe = _Footprint(2, {})
    assert list(serial_range(probe, 0, 1000)) == list(_spread(0, 1000))


def test_the_dry_run_sees_the_last_serial_iteration():
    """Floyd's dry run visits k = 0 and k = n - 1 (and few between), so a footprint
    largest at the end is seen."""
    fl = driver("floyd")
    seen = []

    class Probe(_Footprint):
        def run_phase(self, tiles, serial=()):
            seen.append(serial)
            super().run_phase(tiles, serial)

    n = 5000
    fl.run(Probe(2, {"path": np.zeros(1, np.float32)}), {"n": n}, {}, n // 2, False)
    ks = [s[0] for s in seen]
    assert ks[0] == 0 and ks[-1] == n - 1 and len(ks) <= FIT_SAMPLES

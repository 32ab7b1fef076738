"""The default tile size (bbmm.run.default_tile): one tile per device, or several for a
program whose nests run once and share no array, each with enough data to hide its
per-tile costs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bbmm.diagnostic import UsageError
from bbmm.run import PIPELINE_BYTES, default_tile, pipeline_split
from codegen.compile import compile_program, load_driver

POLYBENCH = Path(__file__).resolve().parents[2] / "polybench"


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


@pytest.mark.parametrize("ndev", [1, 2, 3])
@pytest.mark.parametrize("n", [1 << 12, 1 << 22, 1 << 24, 1 << 26])
def test_a_program_that_runs_once_is_cut_into_tiles_of_enough_data(n, ndev):
    bs = driver("blackscholes")
    params = {"n": n}
    total = 5 * 4 * n                       # five float arrays; only their bytes count
    arrays = {"all": _bytes(total)}
    tile = default_tile(bs, params, arrays, ndev, split=16)
    per_device = -(-n // tile) / ndev
    want = max(1, min(16, total // (ndev * PIPELINE_BYTES)))
    assert tile == -(-n // (ndev * want))
    # never more than asked, never a tile with less than PIPELINE_BYTES unless one per device
    assert per_device <= 16
    assert want == 1 or total / (ndev * want) >= PIPELINE_BYTES
    assert default_tile(bs, params, arrays, ndev, split=1) == -(-n // ndev)


@pytest.mark.parametrize("name,params", [("mvt", {"m": 1 << 14, "n": 1 << 13}),
                                         ("floyd", {"n": 1 << 13}),
                                         ("heat2d", {"tsteps": 2, "n": 1 << 13})])
def test_serial_loops_or_shared_arrays_keep_one_tile_per_device(name, params):
    mod = driver(name)
    big = {"all": _bytes(64 * PIPELINE_BYTES)}
    for ndev in (1, 2):
        assert default_tile(mod, params, big, ndev, split=16) == mod.default_tile(params, ndev)


def test_pipeline_setting(monkeypatch):
    monkeypatch.delenv("BBMM_PIPELINE", raising=False)
    assert pipeline_split() == 16
    monkeypatch.setenv("BBMM_PIPELINE", "3")
    assert pipeline_split() == 3
    for bad, msg in (("x", "BBMM_PIPELINE: 'x' is not an integer"),
                     ("0", "BBMM_PIPELINE: 0 is less than 1")):
        monkeypatch.setenv("BBMM_PIPELINE", bad)
        with pytest.raises(UsageError, match=msg):
            pipeline_split()

"""Launches repeated without their tiles' callbacks (a written-out template's,
bbmm.shiftcode.Relaunch; a fixed point's replay, bbmm.replay.relaunch) give every kernel
the arguments its callback gives it: the generated drivers of Floyd, LU and the stencils
on dry devices, each launch recorded, with the relaunch and without it."""
from __future__ import annotations

import numpy as np
import pytest

from bbmm import replay, shifted, shiftcode
from bbmm.devices.base import DryDevice

REAL_LAUNCH = DryDevice.launch
REAL_GO = shiftcode.Relaunch.go
REAL_RELAUNCH = replay.relaunch


def _normal(args: list, names: dict) -> tuple:
    """A launch's arguments, comparable between two runs: each buffer by the order in
    which the run first passed it, each scalar with its type."""
    out = []
    for a in args:
        if isinstance(a, (int, float, np.generic)):
            out.append((type(a).__name__, a.item() if isinstance(a, np.generic) else a))
        else:
            out.append(("buffer", names.setdefault(id(a), len(names))))
    return tuple(out)


def _launches(monkeypatch, program, params, ndev, rank=None, direct=True):
    """Every launch of ``program`` on dry devices (``rank``: that process of ``ndev``),
    with the templates written out at their first replay; and how many the relaunch
    made."""
    import bench_host
    monkeypatch.setattr(shifted, "WRITE_AFTER", 1)
    seen: list = []
    names: dict = {}

    def launch(self, kernel, gsize, lsize, args):
        seen.append((self.index, kernel, tuple(gsize), lsize, _normal(args, names)))
        return REAL_LAUNCH(self, kernel, gsize, lsize, args)

    made = [0]

    def counted(real):
        """``real`` counted where it launches; never tried without ``direct``."""
        def wrapper(*a):
            ok = direct and real(*a)
            made[0] += ok
            return ok
        return wrapper

    monkeypatch.setattr(DryDevice, "launch", launch)
    monkeypatch.setattr(shiftcode.Relaunch, "go", counted(REAL_GO))
    monkeypatch.setattr(replay, "relaunch", counted(REAL_RELAUNCH))
    if rank is None:
        bench_host.measure(program, params, ndev, 1, None, 8)
    else:
        bench_host.measure_ranks(program, params, ndev, ndev, 1, only=rank, lag=8)
    return seen, made[0]


@pytest.mark.parametrize("program,params,ndev,rank", [
    ("floyd", {"n": 256}, 4, None),
    ("floyd", {"n": 192}, 3, None),
    ("floyd", {"n": 256}, 4, 1),
    ("lu", {"n": 256}, 4, None),
    ("lu", {"n": 256}, 4, 2),
    ("heat2d", {"n": 256, "tsteps": 40}, 4, None),
    ("heat2d", {"n": 256, "tsteps": 40}, 3, 1),
    ("fdtd2d", {"nx": 128, "ny": 128, "tmax": 40}, 4, None),
    ("heat3d", {"n": 40, "tsteps": 30}, 2, None),
])
def test_relaunch_gives_the_callbacks_arguments(monkeypatch, program, params, ndev, rank):
    on, made = _launches(monkeypatch, program, params, ndev, rank)
    off, none = _launches(monkeypatch, program, params, ndev, rank, direct=False)
    assert none == 0
    assert len(on) == len(off)
    for i, (a, b) in enumerate(zip(on, off)):
        assert a == b, f"launch {i} of {len(on)}"
    # the steps moved on by a written-out template, away from the blocks' ends (LU's
    # grid shrinks every k: its NDRange and origins are worked out again), and the
    # stencils' steps replayed
    assert made >= len(on) // 3, (made, len(on))

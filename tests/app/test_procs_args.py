"""``--procs``: how many processes a run takes, and how ``--devices`` splits over them
(no OpenCL: the discovery is a stand-in)."""
from __future__ import annotations

import argparse
from types import SimpleNamespace

import pytest

from bbmm import procs, shm
from bbmm.diagnostic import UsageError


def args(**kw):
    base = dict(procs="auto", devices=None, mpi=False, profile=None, platform=None,
                device_kind="auto")
    return argparse.Namespace(**{**base, **kw})


@pytest.fixture
def machine(monkeypatch):
    """``machine(["GPU"] * 4)``: the devices discovery finds and chooses."""
    import bbmm.devices.opencl as ocl

    def set_(types):
        devs = tuple(SimpleNamespace(type=t) for t in types)
        monkeypatch.setattr(ocl, "discover", lambda *a, **k: SimpleNamespace(chosen=devs))
    monkeypatch.delenv("BBMM_PROFILE", raising=False)
    monkeypatch.setattr(shm, "supported", lambda: True)
    return set_


@pytest.mark.parametrize("types,devices,want", [
    (["GPU"] * 4, None, 4),   # four GPUs: a process each
    (["GPU"] * 8, None, 8),
    (["GPU"] * 8, 4, 4),      # four of eight GPUs
    (["GPU"] * 4, 2, 1),      # two GPUs: one process reaches Floyd's floor there
    (["GPU"] * 2, None, 1),
    (["GPU"] * 4, 8, 1),      # more logical devices than GPUs: they share GPUs
    (["CPU"], None, 1),       # the CPU device: one process
])
def test_auto_takes_a_process_per_gpu_from_four_gpus(machine, types, devices, want):
    machine(types)
    a = args(devices=devices)
    assert procs.resolve_procs(a) == want
    if want > 1 and devices is not None:
        assert a.devices == devices // want


def test_auto_is_one_process_under_mpi_and_profiles_over_processes(machine):
    machine(["GPU"] * 4)
    assert procs.resolve_procs(args(mpi=True)) == 1
    # a profile of a run over processes is one trace of them all (test_procs.py)
    assert procs.resolve_procs(args(profile="t.json")) == 4


def test_explicit_counts_split_the_devices():
    a = args(procs="2", devices=6)
    assert procs.resolve_procs(a) == 2 and a.devices == 3
    assert procs.resolve_procs(args(procs="1", devices=5)) == 1
    with pytest.raises(UsageError, match="does not split evenly"):
        procs.resolve_procs(args(procs="4", devices=6))
    with pytest.raises(UsageError, match="at least 1"):
        procs.resolve_procs(args(procs="-2"))

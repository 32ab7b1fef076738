"""End-to-end: scalars carried across iterations, expanded into local arrays by the front
end (tests/kernels/expand), through ``bbmm run --check`` against the sequential C program
on 1-4 PoCL logical devices, then under a memory cap tight enough to box data out. What
each kernel exercises is said in its header comment; the shapes of the local arrays are
checked in tests/codegen/test_expansion.py."""
from __future__ import annotations

import json

import pytest
from support.needs import needs_cl  # skipped only without an OpenCL platform

from bbmm.cli import main
from bbmm.diagnostic import parse_bytes
from support import paths

EXPAND = paths.KERNELS / "expand"

pytestmark = pytest.mark.e2e

# kernel: (parameters, per-device cap 256-512 B above the least that runs at tile 2, or
# None where one work-item needs every box at once: prefix has no parallel loop)
KERNELS = {
    "rowsum": (["n=13", "m=11"], "1024B"),
    "gemm_c89": (["tsteps=3", "ni=9", "nj=10", "nk=7"], "1024B"),
    "dot": (["n=37"], "1280B"),
    "prefix": (["n=29"], None),
    "webs": (["n=13", "m=11"], "1024B"),
    "offset": (["n=12"], "1024B"),
    "omp_clauses": (["n=13", "m=11"], "768B"),
    "stale": (["n=13", "m=11"], "1024B"),
}


def run(name, *extra, json_path):
    argv = ["run", str(EXPAND / f"{name}.c"), "--check", "--no-progress", "--json",
            str(json_path)]
    for p in KERNELS[name][0]:
        argv += ["--param", p]
    return main(argv + [str(e) for e in extra])


def test_every_kernel_file_is_listed():
    assert sorted(p.stem for p in EXPAND.glob("*.c")) == sorted(KERNELS)


@needs_cl
@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("ndev", [1, 2, 3, 4])
def test_matches_the_c_program(name, ndev, tmp_path):
    out = tmp_path / "r.json"
    assert run(name, "--devices", ndev, json_path=out) == 0
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass" and doc["devices"] == ndev


@needs_cl
@pytest.mark.parametrize("name", sorted(k for k, v in KERNELS.items() if v[1]))
def test_matches_under_a_memory_cap(name, tmp_path):
    cap = KERNELS[name][1]
    out = tmp_path / "r.json"
    assert run(name, "--devices", 2, "--tile", 2, "--device-mem", cap, json_path=out) == 0
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass"
    assert all(d["peak_bytes"] <= parse_bytes(cap) for d in doc["per_device"])
    assert sum(d["evictions"] for d in doc["per_device"]) > 0, doc["per_device"]

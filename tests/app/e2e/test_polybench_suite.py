"""End-to-end: the rest of PolyBench/C 4.2 (tests/kernels/pb42) through ``bbmm run
--check`` on PoCL logical devices, against the sequential C program; then under a memory
cap small enough to box data in and out. Sizes are odd and unequal so that tiles, boxes
and flow-out sets have ragged edges."""
from __future__ import annotations

import json

import pytest

from bbmm.cli import main
from bbmm.diagnostic import parse_bytes
from support.needs import needs_cl  # skipped only without an OpenCL platform
from support import paths

PB = paths.KERNELS / "pb42"

pytestmark = pytest.mark.e2e

# kernel: (parameters, tile and per-device cap that force box-out, or None where a tile's
# boxes of the whole problem leave no room for a cap below the data: one work-item).
# atax, symm and trmm run in isl's order under the default --schedule auto: their caps
# are those of that order (a column block of A per tile for atax)
KERNELS = {
    "2mm": (["ni=19", "nj=21", "nk=15", "nl=17"], ("2", "4096B")),
    "3mm": (["ni=19", "nj=21", "nk=15", "nl=17", "nm=13"], ("2", "4096B")),
    "atax": (["m=19", "n=23"], ("4", "1024B")),
    "bicg": (["m=19", "n=23"], None),
    "cholesky": (["n=21"], None),
    "correlation": (["m=15", "n=17", "float_n=17"], ("4", "3584B")),
    "covariance": (["m=15", "n=17", "float_n=17"], ("4", "3584B")),
    "deriche": (["w=23", "h=19", "alpha=0.25"], ("4", "1536B")),
    "doitgen": (["nr=5", "nq=7", "np=9"], ("2", "512B")),
    "durbin": (["n=23"], ("4", "512B")),
    "gemver": (["n=21"], ("4", "2048B")),
    "gesummv": (["n=21"], ("4", "2560B")),
    "gramschmidt": (["m=21", "n=15"], ("4", "1536B")),
    "jacobi1d": (["tsteps=5", "n=37"], ("4", "512B")),
    "ludcmp": (["n=21"], ("4", "4608B")),
    "nussinov": (["n=23"], None),
    "seidel2d": (["tsteps=3", "n=13"], None),
    "symm": (["m=15", "n=17"], ("4", "3072B")),
    "syr2k": (["n=17", "m=15"], ("4", "5120B")),
    "syrk": (["n=17", "m=15"], ("4", "3072B")),
    "trmm": (["m=15", "n=17"], ("4", "2560B")),
}


def run(name, *extra, json_path):
    params, _ = KERNELS[name]
    argv = ["run", str(PB / f"{name}.c"), "--check", "--no-progress", "--json", str(json_path)]
    for p in params:
        argv += ["--param", p]
    return main(argv + [str(e) for e in extra])


def test_every_kernel_file_is_listed():
    assert sorted(p.stem for p in PB.glob("*.c")) == sorted(KERNELS)


@needs_cl
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_matches_the_c_program(name, tmp_path):
    out = tmp_path / "r.json"
    assert run(name, "--devices", 3, json_path=out) == 0
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass" and doc["devices"] == 3


@needs_cl
@pytest.mark.parametrize("name", sorted(k for k, v in KERNELS.items() if v[1]))
def test_matches_under_a_memory_cap(name, tmp_path):
    tile, cap = KERNELS[name][1]
    out = tmp_path / "r.json"
    assert run(name, "--devices", 2, "--tile", tile, "--device-mem", cap, json_path=out) == 0
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass"
    # the cap held, and it was tight: boxes were boxed out (caps about 512 B above the
    # least that runs at this tile, 2026-11; 512 B where the boxes of a serial iteration
    # are tiny)
    assert all(d["peak_bytes"] <= parse_bytes(cap) for d in doc["per_device"])
    assert sum(d["evictions"] for d in doc["per_device"]) > 0, doc["per_device"]

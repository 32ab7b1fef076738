"""End-to-end: ``--reassociate`` runs floating-point sums into scalars as partial sums over
the rows, in parallel, within ``--check``'s tolerance on 1 to 3 PoCL devices; without it
the sums are the sequential C program's, bit for bit."""
from __future__ import annotations

import contextlib
import io
import json
import warnings

import numpy as np
import pytest

import bbmm
from bbmm.cli import main
from bbmm.reference import compare, run_reference
from support.needs import needs_cl  # skipped only without an OpenCL platform
from support.paths import KERNELS

KERNEL = KERNELS / "reassoc" / "dot_rows.c"
N, M = 37, 53

pytestmark = pytest.mark.e2e


def data(seed: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    L = rng.random((N, N)) / N
    np.fill_diagonal(L, 3.0)
    return {"A": rng.random((N, M)) - 0.5, "w": rng.random(M), "L": L,
            "b": rng.random(N), "out": np.zeros(1), "shrink": np.zeros(1, np.float32),
            "x": np.zeros(N)}


def run_api(reassociate: bool, devices: int) -> tuple[dict, dict]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = bbmm.compile(KERNEL, reassociate=reassociate)
    arrays = data()
    expect = run_reference(str(KERNEL), prog.compiled.scop, {"n": N, "m": M}, {}, arrays)
    prog(n=N, m=M, devices=devices, **arrays)
    return arrays, expect


@needs_cl
@pytest.mark.parametrize("ndev", [1, 2, 3])
def test_reassociated_sums_pass_the_check(ndev, tmp_path):
    out = tmp_path / "r.json"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(["run", str(KERNEL), "--param", f"n={N}", "--param", f"m={M}", "--check",
                   "--no-progress", "--reassociate", "--devices", str(ndev),
                   "--json", str(out)])
    assert rc == 0, err.getvalue()
    doc = json.loads(out.read_text())
    assert doc["check"] == "pass" and doc["devices"] == ndev
    assert "no loop of" not in err.getvalue()     # the rows ran in parallel
    assert doc["tiles"] > 1


@needs_cl
def test_without_the_flag_the_sums_are_the_c_programs_bits():
    got, expect = run_api(False, 2)
    for name in ("out", "shrink", "x"):
        assert np.array_equal(got[name], expect[name]), name


@needs_cl
def test_with_the_flag_the_sums_are_within_the_tolerance():
    got, expect = run_api(True, 3)
    for name, ctype in (("out", "double"), ("shrink", "float"), ("x", "double")):
        assert compare(name, got[name], expect[name], ctype) is None, name
    # the forward substitution's dot products (bounds j < i) stay in order
    assert np.array_equal(got["x"], expect["x"])

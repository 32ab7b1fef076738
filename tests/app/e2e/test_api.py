"""The Python API (bbmm.compile, Program.__call__, bbmm.devices) on PoCL: the README's
example against numpy, devices reused across calls, one clear error per bad argument."""
from __future__ import annotations

import re

import numpy as np
import pytest

import bbmm
from bbmm.diagnostic import BBMMError, UsageError
from support.needs import needs_cl
from support.paths import KERNELS, POLYBENCH, ROOT


pytestmark = [pytest.mark.e2e]


def graph(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 18, (n, n)).astype(np.float32)
    a[rng.random((n, n)) < 0.25] = 1e6
    np.fill_diagonal(a, 0)
    return a


def floyd_numpy(a: np.ndarray) -> np.ndarray:
    p = a.copy()
    for k in range(p.shape[0]):
        p = np.minimum(p, p[:, k:k + 1] + p[k:k + 1, :])
    return p


@pytest.fixture(scope="module")
def floyd():
    return bbmm.compile(POLYBENCH / "floyd.c", function=None, defines={}, include_dirs=[])


def test_describe(floyd):
    text = str(floyd)
    assert "int n" in text
    assert "float path[n][n]" in text and "float32" in text
    assert re.search(r"parallel loops i, j", text)
    assert "serial loops (host): k" in text
    assert set(floyd.arrays) == {"path"} and floyd.arrays["path"].written
    assert list(floyd.parameters) == ["n"]


@needs_cl
@pytest.mark.parametrize("ndev", [1, 2])
def test_floyd_in_place(floyd, ndev):
    a = graph(64)
    want = floyd_numpy(a)
    stats = floyd(n=64, path=a, devices=ndev, device_mem="256MiB", tile=None)
    assert np.array_equal(a, want)
    assert len(stats.per_device) == ndev
    assert stats.time_s["total"] > 0 and stats.wall_s > 0
    doc = stats.as_dict()
    assert doc["format"] == "bbmm-run" and doc["version"] == bbmm.__version__
    assert doc["devices"] == ndev and doc["params"] == {"n": 64}
    assert stats["tiles"] == doc["tiles"] and dict(stats) == doc


@needs_cl
def test_devices_reused(floyd):
    devs = bbmm.devices(2)
    assert len(devs) == 2
    for seed in (1, 2):
        a = graph(48, seed)
        want = floyd_numpy(a)
        floyd(n=48, path=a, devices=devs)
        assert np.array_equal(a, want)
    a = graph(40, 3)                # another size on the same devices
    want = floyd_numpy(a)
    stats = floyd(n=40, path=a, devices=devs, tile=7)
    assert np.array_equal(a, want) and stats.tile == 7


@needs_cl
def test_float_scalars_matmul():
    prog = bbmm.compile(POLYBENCH / "matmul.c")
    rng = np.random.default_rng(5)
    ni, nj, nk = 24, 20, 16
    c = rng.random((ni, nj), dtype=np.float32)
    a = rng.random((ni, nk), dtype=np.float32)
    b = rng.random((nk, nj), dtype=np.float32)
    want = 0.5 * c + 1.5 * (a.astype(np.float64) @ b)
    a0, b0 = a.copy(), b.copy()
    prog(ni=ni, nj=nj, nk=nk, alpha=1.5, beta=0.5, C=c, A=a, B=b, devices=2)
    np.testing.assert_allclose(c, want, rtol=1e-5)
    assert np.array_equal(a, a0) and np.array_equal(b, b0)   # read-only: untouched
    c2 = rng.random((ni, nj), dtype=np.float32)
    want = 2 * c2 + 1 * (a.astype(np.float64) @ b)             # ints taken for floats
    prog(ni=ni, nj=nj, nk=nk, alpha=1, beta=np.float32(2), C=c2, A=a, B=b, devices=1)
    np.testing.assert_allclose(c2, want, rtol=1e-5)


@needs_cl
def test_mixed_types_against_reference():
    """alpha_int.c (int and float arrays, a float and a double scalar) against the
    sequential C program (bbmm.reference)."""
    from bbmm.reference import run_reference

    prog = bbmm.compile(KERNELS / "alpha_int.c")
    n, m = 10, 7
    rng = np.random.default_rng(2)
    counts = rng.integers(0, 50, (n, m)).astype(np.int32)
    out = rng.random((n, m)).astype(np.float32)
    scop = prog.compiled.scop
    expect = run_reference(str(KERNELS / "alpha_int.c"), scop, {"n": n, "m": m},
                           {"alpha": 0.5, "beta": 2.0}, {"counts": counts, "out": out})
    prog(n=n, m=m, alpha=0.5, beta=2.0, counts=counts, out=out, devices=2)
    assert np.array_equal(counts, expect["counts"])
    np.testing.assert_allclose(out, expect["out"], rtol=1e-5)


@needs_cl
def test_returned_value():
    prog = bbmm.compile(KERNELS / "returns_value.c")
    n, m = 6, 5
    a = np.arange(n * m, dtype=np.float64)          # a pointer: its elements, flat
    rows = np.zeros(n)
    stats = prog(n=n, m=m, A=a, rows=rows, devices=1)
    sums = a.reshape(n, m).sum(axis=1)
    np.testing.assert_allclose(rows, sums)
    assert stats.returned == pytest.approx(float((sums ** 2).sum()))


# {{{ bad arguments: one clear error each, before anything runs

def _err(prog, **kw) -> str:
    with pytest.raises(UsageError) as e:
        prog(**kw)
    assert isinstance(e.value, BBMMError)
    return str(e.value)


def test_wrong_dtype(floyd):
    msg = _err(floyd, n=8, path=np.zeros((8, 8)))
    assert "path" in msg and "float32" in msg and "float64" in msg


def test_wrong_shape(floyd):
    msg = _err(floyd, n=4096, path=np.zeros(10, np.float32))
    assert "path" in msg and "(4096, 4096)" in msg and "(10,)" in msg and "n=4096" in msg


def test_not_contiguous(floyd):
    a = np.zeros((8, 16), np.float32)[:, ::2]
    assert "C-contiguous" in _err(floyd, n=8, path=a)
    assert "C-contiguous" in _err(floyd, n=8, path=np.asfortranarray(np.ones((8, 8),
                                                                            np.float32)))


def test_read_only(floyd):
    a = np.zeros((8, 8), np.float32)
    a.flags.writeable = False
    msg = _err(floyd, n=8, path=a)
    assert "path" in msg and "read-only" in msg


def test_read_only_input_is_fine_when_only_read():
    prog = bbmm.compile(POLYBENCH / "matmul.c")
    a = np.zeros((4, 4), np.float32)
    a.flags.writeable = False
    # no device needed to pass the checks: a missing C fails after A and B passed
    msg = _err(prog, ni=4, nj=4, nk=4, alpha=1.0, beta=1.0, A=a, B=a)
    assert "missing C" in msg


def test_missing_and_unknown(floyd):
    assert "missing n" in _err(floyd, path=np.zeros((8, 8), np.float32))
    assert "missing path (array)" in _err(floyd, n=8)
    msg = _err(floyd, n=8, path=np.zeros((8, 8), np.float32), paht=1)
    assert "'paht'" in msg and "path" in msg
    assert "must be a numpy array" in _err(floyd, n=2, path=[[0.0, 1.0], [1.0, 0.0]])


def test_bad_parameters(floyd):
    a = np.zeros((8, 8), np.float32)
    assert "must be an int" in _err(floyd, n=True, path=a)
    assert "must be an int" in _err(floyd, n=8.0, path=a)
    assert "must be an int" in _err(floyd, n="8", path=a)
    assert "would have no element" in _err(floyd, n=0, path=np.zeros((0, 0), np.float32))
    prog = bbmm.compile(POLYBENCH / "matmul.c")
    z = np.zeros((2, 2), np.float32)
    assert "alpha" in _err(prog, ni=2, nj=2, nk=2, alpha="x", beta=1.0, A=z, B=z, C=z)
    assert "alpha" in _err(prog, ni=2, nj=2, nk=2, alpha=False, beta=1.0, A=z, B=z, C=z)


def test_bad_options(floyd):
    a = np.zeros((8, 8), np.float32)
    assert "tile" in _err(floyd, n=8, path=a, tile=0)
    assert "mode" in _err(floyd, n=8, path=a, mode="hull-ish")
    assert "devices" in _err(floyd, n=8, path=a, devices="two")


@needs_cl
def test_device_mem_with_devices_refused(floyd):
    devs = bbmm.devices(1)
    msg = _err(floyd, n=8, path=np.zeros((8, 8), np.float32), devices=devs,
               device_mem="1MiB")
    assert "device_mem" in msg


@needs_cl
def test_pyopencl_array(floyd):
    import pyopencl.array as cla

    dev = bbmm.devices(1)[0]
    a = cla.to_device(dev.queue, np.zeros((8, 8), np.float32))
    msg = _err(floyd, n=8, path=a)
    assert "path.get()" in msg and "path.set(" in msg

# }}}


@needs_cl
def test_readme_example(monkeypatch, capsys):
    """The README's "From Python" block, as it is, from the repository's root."""
    text = (ROOT / "README.md").read_text()
    code = re.search(r"## From Python.*?```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(ROOT)
    env: dict = {}
    exec(compile(code, "README.md", "exec"), env)   # noqa: S102 - our own README
    assert "float path[n][n]" in capsys.readouterr().out
    path = env["path"]
    assert path.dtype == np.float32 and path.shape == (512, 512)
    init = np.random.default_rng(0).integers(1, 18, (512, 512)).astype(np.float32)
    np.fill_diagonal(init, 0)
    assert np.array_equal(path, floyd_numpy(init))

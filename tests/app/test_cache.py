"""The cache of drivers and reference libraries checks itself (issue 41): a damaged
entry is rebuilt with one note, a changed one never runs, keys hold no path, the size is
bounded, an unusable folder falls back to a temporary one."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bbmm import cache
from bbmm import reference as ref
from bbmm.codegen.compile import compile_program, load_driver
from support.paths import ROOT

FLOYD = ROOT / "polybench" / "floyd.c"
needs_cc = pytest.mark.skipif(not any(shutil.which(c) for c in ("cc", "gcc", "clang")),
                              reason="no C compiler")


@pytest.fixture
def home(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("BBMM_CACHE", str(d))
    monkeypatch.setattr(cache, "_fallback", None)
    return d


def test_suite_has_its_own_cache():
    import platformdirs
    assert os.environ["BBMM_CACHE"] != platformdirs.user_cache_dir("bbmm")


def test_default_root_is_platformdirs(monkeypatch):
    import platformdirs
    monkeypatch.delenv("BBMM_CACHE")
    assert cache.root() == Path(platformdirs.user_cache_dir("bbmm", appauthor=False))


def _driver_files(home: Path) -> list[Path]:
    return sorted((home / "drivers").glob("*.py"))


@pytest.mark.parametrize("damage", ["truncate", "empty", "payload"])
def test_damaged_driver_is_rebuilt_not_run(home, tmp_path, capsys, damage):
    prog = compile_program(FLOYD)
    load_driver(prog)
    capsys.readouterr()
    (p,) = _driver_files(home)
    good = p.read_bytes()
    marker = tmp_path / "PWNED"
    if damage == "truncate":
        p.write_bytes(good[:len(good) // 2])
    elif damage == "empty":
        p.write_bytes(b"")
    else:   # someone who can write the cache puts code there
        p.write_bytes(good + f"\nopen({str(marker)!r}, 'w').close()\n".encode())
    mod = load_driver(prog)
    assert mod.FUNCTION == "floyd"
    assert not marker.exists()
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "damaged" in err[0] and p.name in err[0]
    assert p.read_bytes() == good
    load_driver(prog)
    assert capsys.readouterr().err == ""


def test_driver_key_holds_no_path(home, tmp_path):
    for d in ("a", "b/c"):
        (tmp_path / d).mkdir(parents=True)
        shutil.copy(FLOYD, tmp_path / d / "floyd.c")
        load_driver(compile_program(tmp_path / d / "floyd.c"))
    assert len(_driver_files(home)) == 1
    assert str(tmp_path) not in _driver_files(home)[0].read_text()


@needs_cc
@pytest.mark.parametrize("damage", ["truncate", "empty", "other"])
def test_damaged_library_is_rebuilt(home, tmp_path, capsys, damage):
    lib = ref.build_library(FLOYD)
    good = lib.read_bytes()
    capsys.readouterr()
    if damage == "truncate":
        lib.write_bytes(good[:len(good) // 3])
    elif damage == "empty":
        lib.write_bytes(b"")
    else:
        lib.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
    again = ref.build_library(FLOYD)
    assert again == lib and lib.read_bytes() == good
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "damaged" in err[0]


@needs_cc
def test_library_swapped_after_check_is_not_loaded(home):
    lib = ref.build_library(FLOYD)
    good = lib.read_bytes()
    lib.write_bytes(good[:100])       # after build_library checked it
    from bbmm.diagnostic import BBMMError
    from bbmm.reference.calls import _load
    with pytest.raises(BBMMError, match="changed"):
        _load(str(lib.resolve()))
    lib.write_bytes(good)
    assert ref.load_library(lib) is not None


@needs_cc
def test_library_key_holds_no_path(home, tmp_path):
    libs = set()
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        shutil.copy(FLOYD, tmp_path / d / "floyd.c")
        libs.add(ref.build_library(tmp_path / d / "floyd.c",
                                   entry_points=("void _bbmm_x(void) {}",)))
    assert len(libs) == 1


@needs_cc
def test_concurrent_builders_agree(home):
    """Entries are single files renamed into place: builders racing on one key never
    leave an entry and a hash that disagree (each reads back a whole entry)."""
    from concurrent.futures import ThreadPoolExecutor

    def build(i):
        return ref.build_library(FLOYD, entry_points=("void _bbmm_x(void) {}",))
    with ThreadPoolExecutor(4) as ex:
        libs = set(ex.map(build, range(8)))
    assert len(libs) == 1
    assert cache.read_verified(libs.pop()) is not None


def test_prune_keeps_newest(tmp_path):
    d = tmp_path / "drivers"
    d.mkdir()
    for i in range(10):
        p = d / f"k{i}.py"
        cache.store(p, b"x" * 100)
        os.utime(p, (1000 + i, 1000 + i))
    assert cache.prune(d, entries=4) == 6
    assert sorted(p.name for p in d.glob("*.py")) == ["k6.py", "k7.py", "k8.py", "k9.py"]
    assert cache.prune(d, nbytes=400) == 2        # 100 bytes behind a 78-byte hash line
    assert sorted(p.name for p in d.glob("*.py")) == ["k8.py", "k9.py"]
    assert all(cache.read_verified(p) == b"x" * 100 for p in d.glob("*.py"))


def test_store_prunes_to_the_size_bound(tmp_path, monkeypatch):
    monkeypatch.setenv("BBMM_CACHE_SIZE", "1KiB")
    d = tmp_path / "reference"
    d.mkdir()
    for i in range(30):
        cache.store(d / f"e{i}.so", b"y" * 200)
    assert sum(p.stat().st_size for p in d.iterdir()) <= 1024 + 400
    assert (d / "e29.so").exists()


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root writes anywhere")
def test_unwritable_cache_falls_back(home, tmp_path, capsys):
    home.mkdir()
    home.chmod(0o500)
    try:
        load_driver(compile_program(FLOYD))
        load_driver(compile_program(FLOYD))
    finally:
        home.chmod(0o700)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "temporary cache" in err[0]


def test_cache_that_is_a_file_falls_back(home, capsys):
    home.write_text("not a folder")
    load_driver(compile_program(FLOYD))
    load_driver(compile_program(FLOYD))
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("bbmm: warning:") and "temporary" in err[0]


def test_cache_command(home):
    load_driver(compile_program(FLOYD))
    env = {**os.environ, "BBMM_CACHE": str(home)}
    r = subprocess.run([sys.executable, "-m", "bbmm", "cache"], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0 and str(home) in r.stdout and "1 drivers" in r.stdout
    r = subprocess.run([sys.executable, "-m", "bbmm", "cache", "--clear"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0 and "cleared" in r.stdout
    assert not _driver_files(home)

"""A bad $BBMM_* setting of each part of a run's configuration, through the command line:
one line and exit status 2, never a traceback (each run in a fresh interpreter: the
settings are read once, when the run is set up: bbmm/config.py, CompileOptions)."""
import subprocess
import sys

import pytest
from support.needs import needs_cl  # skipped only without an OpenCL platform
from support.paths import ROOT


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One cache of compiled drivers for these runs: floyd is compiled once."""
    return tmp_path_factory.mktemp("cache")


# each part of the configuration, one bad value each: the command line's answer
BAD = [("BBMM_DEBUG", "2", "BBMM_DEBUG: '2' is neither on nor off"),
       ("BBMM_REPLAY", "maybe", "BBMM_REPLAY: 'maybe' is neither on nor off"),
       ("BBMM_COARSEN1", "x", "BBMM_COARSEN1: 'x' is not an integer"),
       ("BBMM_PREBUILD", "later", "BBMM_PREBUILD: 'later' is neither on nor off"),
       ("BBMM_WHOLE", "big", "BBMM_WHOLE: 'big' is not a size such as 1048576 or 256KiB"),
       ("BBMM_PIPELINE", "-2", "BBMM_PIPELINE: -2 is less than 1"),
       ("BBMM_SIDE", "2", "BBMM_SIDE: '2' is neither on nor off"),
       ("BBMM_STRIP", "0", "BBMM_STRIP: 0 is less than 1"),
       ("BBMM_EDGE", "-1", "BBMM_EDGE: -1 is negative")]


@needs_cl
@pytest.mark.parametrize("name,text,message", BAD, ids=[b[0] for b in BAD])
def test_bad_setting_through_the_command_line_is_one_line(tmp_path, cache, name, text,
                                                          message):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "BBMM_CACHE": str(cache),
           "PYTHONPATH": str(ROOT), name: text}
    r = subprocess.run([sys.executable, "-m", "bbmm", "run", str(ROOT / "polybench" / "floyd.c"),
                        "--param", "n=16", "--devices", "2", "--no-progress",
                        "--device-kind", "cpu"], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"bbmm: error: {message}"), r.stderr

"""Session 21: `bbmm run --check` in one process for every program of tests/e2e/test_run.py
under its tight cap (tile 4, box-out everywhere) on 1 and 2 logical devices, then the slow
tiles under box-out and mvt under a 5x cap at a checkable size; one line per run."""
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
sys.path.insert(0, str(ROOT / "tests"))
from bbmm.cli import main  # noqa: E402
from test_run import PROGRAMS, KERNELS  # noqa: E402

runs = [(p, params, ["--tile", "4", "--device-mem", cap]) for p, params, cap in PROGRAMS]
runs.append((KERNELS / "slow_tiles.c", ["n=512", "m=4096", "r=400"],
             ["--tile", "16", "--device-mem", "1MiB"]))
runs.append((ROOT / "polybench" / "mvt.c", ["m=16384", "n=8192"],
             ["--tile", "512", "--device-mem", "100MiB"]))
fails = 0
for ndev in (1, 2):
    for path, params, extra in runs:
        argv = ["run", str(path), "--check", "--no-progress", "--devices", str(ndev)] + extra
        for p in params:
            argv += ["--param", p]
        t0 = time.perf_counter()
        rc = main(argv)
        fails += rc != 0
        print(f"{path.stem} devices={ndev} rc={rc} {time.perf_counter() - t0:.2f}s", flush=True)
print(f"checks: {fails} failed")

"""Session 33: results/h200x1/s21/checks.py on two real GPUs with each failure's reason
(``bbmm run --check`` of every program of tests/e2e/test_run.py under its tight cap, tile 4),
devices given as arguments (default 2), only the programs named by $ONLY if set, from the
$FROM-th (0-based) on."""
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
sys.path.insert(0, str(ROOT / "tests"))
from bbmm.cli import main  # noqa: E402
from test_run import PROGRAMS  # noqa: E402

only = set(filter(None, os.environ.get("ONLY", "").split(",")))
fails = 0
for ndev in [int(a) for a in sys.argv[1:]] or [2]:
    for path, params, cap in PROGRAMS[int(os.environ.get("FROM", "0")):]:
        if only and Path(path).stem not in only:
            continue
        argv = ["run", str(path), "--check", "--no-progress", "--devices", str(ndev),
                "--tile", "4", "--device-mem", cap]
        for p in params:
            argv += ["--param", p]
        t0 = time.perf_counter()
        rc = main(argv)
        fails += rc != 0
        print(f"{Path(path).stem} devices={ndev} cap={cap} rc={rc} {time.perf_counter() - t0:.2f}s",
              flush=True)
print(f"checks: {fails} failed")

"""Run several ``bbmm`` command lines in one process per MPI rank (launched by
``tests/app/e2e/test_mpi.py`` under ``mpiexec``): MPI and Python start once per rank, not
once per kernel. ``python mpi_batch.py '<json list of argv lists>'``; the exit status is
the worst of the runs'."""
from __future__ import annotations

import json
import sys

from bbmm.cli import main

if __name__ == "__main__":
    worst = 0
    for argv in json.loads(sys.argv[1]):
        worst = max(worst, main(argv))
    sys.exit(worst)

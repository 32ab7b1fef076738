"""``python -m bbmm``: the command line of :mod:`bbmm.cli`."""
from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())

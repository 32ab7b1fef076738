"""``bbmm timeline FILE`` from a checkout (the summary lives in ``bbmm/timeline.py``).

Usage::

    python scripts/timeline.py mvt.json --gaps 20 --tiles 5 [--plot mvt.png]
"""
from __future__ import annotations

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, _ROOT)

from bbmm.timeline import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())

import atexit
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))  # shared test helpers (drivers.py)

# The suite's own cache of drivers and reference libraries (subprocesses inherit it),
# never the user's: $BBMM_TEST_CACHE names a folder to keep between runs, else a fresh
# temporary one is removed at the end.
if os.environ.get("BBMM_TEST_CACHE"):
    os.environ["BBMM_CACHE"] = os.environ["BBMM_TEST_CACHE"]
else:
    _cache = tempfile.mkdtemp(prefix="bbmm-test-cache-")
    os.environ["BBMM_CACHE"] = _cache
    atexit.register(shutil.rmtree, _cache, True)

"""The suite's setup: its own driver cache, and the device tier's marker, skip and
fixture (:mod:`support.devicetier`). ``tests/`` is on the import path through
pyproject.toml (``pythonpath``), so helpers are ``support.NAME``."""
import atexit
import os
import shutil
import tempfile

pytest_plugins = ["support.devicetier"]

# The suite's own cache of drivers and reference libraries (subprocesses inherit it),
# never the user's: $BBMM_TEST_CACHE names a folder to keep between runs, else a fresh
# temporary one is removed at the end.
if os.environ.get("BBMM_TEST_CACHE"):
    os.environ["BBMM_CACHE"] = os.environ["BBMM_TEST_CACHE"]
else:
    _cache = tempfile.mkdtemp(prefix="bbmm-test-cache-")
    os.environ["BBMM_CACHE"] = _cache
    atexit.register(shutil.rmtree, _cache, True)

"""Helpers shared by the test layers (``tests/codegen``, ``tests/runtime``, ``tests/app``),
imported as ``support.NAME``: pyproject.toml's ``[tool.pytest.ini_options] pythonpath``
puts ``tests/`` on the import path."""

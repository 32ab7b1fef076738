"""bbmm's version, in a module of its own: the reports, traces and the command line name it
without importing the package's API."""

__version__ = "0.1.0"

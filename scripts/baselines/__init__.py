"""Hand-written multi-device OpenCL baselines of the paper's Section 11.2.7 (floyd, heat2d,
blackscholes) and ``compare.py``, which runs them beside bbmm. See ``common.py``."""

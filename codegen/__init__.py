"""bbmm's compiler: C affine loop nests -> polyhedral model -> multi-device OpenCL.

Front end and model (this package so far):

* :func:`parse_file` / :func:`parse_source` (:mod:`bbmm.codegen.frontend`): one kernel function
  of a C file -> :class:`Scop` (:mod:`bbmm.codegen.scop`);
* :func:`dependences`, :func:`parallel_loops`, :func:`plan` (:mod:`bbmm.codegen.deps`): flow and
  memory dependences, parallel loops, and the host-loop / kernel-nest plan.
"""
from __future__ import annotations

from bbmm.codegen.deps import Dependences, Nest, Plan, carried, dependences, parallel_loops, plan
from bbmm.codegen.frontend import parse_file, parse_source
from bbmm.codegen.scop import (
    Access, Affine, Array, ArrayRef, BinOp, Call, Cast, Loop, LoopNode, Num, Scop, Statement,
    Ternary, UnOp, Var, array_refs, to_c)

__all__ = [
    "Access", "Affine", "Array", "ArrayRef", "BinOp", "Call", "Cast", "Dependences", "Loop",
    "LoopNode", "Nest", "Num", "Plan", "Scop", "Statement", "Ternary", "UnOp", "Var",
    "array_refs", "carried", "dependences", "parallel_loops", "parse_file", "parse_source",
    "plan", "to_c",
]

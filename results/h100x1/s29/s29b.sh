#!/bin/bash
# session 29, device call B: helper functions of the C file (tests/kernels/helpers.c) and
# OpenMP clauses over carried scalars (tests/kernels/expand/omp_clauses.c: the reduction's
# pragma not followed) checked against the C program on NVIDIA's OpenCL, 1 and 2 logical
# devices; then call A's deriche and webs again at larger sizes.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
run() {  # file, params...
  f=$1; shift
  p=""; for x in "$@"; do p="$p --param $x"; done
  for d in 1 2; do
    r=$(timeout 200 python3 -m bbmm run $f $p --devices $d --check --no-progress 2>&1 | grep -v Warn | grep -v 'lambda: self' | grep -m1 'check\|error:')
    echo "$(basename $f .c) d=$d: $r"
  done
}
run tests/kernels/helpers.c n=1000003
run tests/kernels/expand/omp_clauses.c n=20011 m=4001
run tests/kernels/pb42/deriche.c w=4096 h=2160 alpha=0.25
run tests/kernels/expand/webs.c n=8001 m=6003

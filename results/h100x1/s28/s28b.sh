#!/bin/bash
# session 28, device call B: the runs of call A whose first line was a warning (no
# parallel loop; counting_down's B[1][j], out of bounds at n = 1, since changed to B[0][j])
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
run() {
  f=$1; shift
  for d in 1 2; do
    p=""; for x in "$@"; do p="$p --param $x"; done
    r=$(timeout 120 python3 -m bbmm run $f $p --devices $d --check --no-progress 2>&1 | grep -v Warn | grep -v 'lambda: self' | grep -m1 'check\|error:')
    echo "$(basename $f .c) d=$d: $r"
  done
}
K=tests/kernels/pb42
run $K/cholesky.c n=203
run $K/nussinov.c n=181
run $K/seidel2d.c tsteps=3 n=101
run tests/kernels/counting_down.c tsteps=5 n=1001

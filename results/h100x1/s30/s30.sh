#!/bin/bash
# session 30, one device call (one H100, the kind lent): loops with steps and C's / and %
# (tests/kernels/quasi) on NVIDIA's OpenCL, checked against the C program on 1 and 2
# logical devices, each run twice (the first builds the kernels); beside red-black
# Gauss-Seidel with steps of 2, the same sweeps over every j with a parity guard.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
run() {  # label, file, params...
  l=$1; f=$2; shift 2
  p=""; for x in "$@"; do p="$p --param $x"; done
  for d in 1 2; do
    for rep in 1 2; do
      r=$(timeout 100 python3 -m bbmm run $f $p --devices $d --check --no-progress 2>&1 | grep -v Warn | grep -v 'lambda: self' | grep -m1 'check\|error:')
      echo "$l d=$d run $rep: $r"
    done
  done
}
Q=tests/kernels/quasi
S=results/h100x1/s30
if [ "$1" != "b" ]; then
date +%T
run redblack $Q/redblack.c tsteps=4 n=4097
date +%T
run redblack $Q/redblack.c tsteps=20 n=4097
run redblack-guard $S/redblack_guard.c tsteps=20 n=4097
date +%T
run strides $Q/strides.c tsteps=3 n=3001
run multigrid $Q/multigrid.c tsteps=20 n=2000001
fi
# part b (second call): decimate's first nest is quadratic (n/3 sums of n/2 terms); random
# programs with steps and remainders (seeds with both), 2 logical devices
run decimate $Q/decimate.c n=20003
for s in 0 1 7 8 10 12 18 21 24 29 30 32 33 41 43; do
  python3 tests/randprog.py $s > /tmp/rk$s.c 2>/dev/null
  p=$(head -1 /tmp/rk$s.c | sed 's/.*: //')
  r=$(timeout 60 python3 -m bbmm run /tmp/rk$s.c $p --devices 2 --check --no-progress 2>&1 | grep -v Warn | grep -v 'lambda: self' | grep -m1 'check\|error:')
  echo "random seed $s: $r"
done

#!/bin/bash
# session 34, call F: statements whose scalar temporaries depend on no row (a break flag's
# test) take the strip path again, with the old value of 'X = c ? e : X' loaded only where
# c is false (codegen/opencl.py). heat_break against heat_plain as in calls B-E; deriche
# (its kernels changed too) at PolyBench's large size, this code against the code before
# (.wt/pre34, f4e9dce, carried), alternating; checks.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
S=results/h100x1/s34
ROOT=$PWD
date +%T
for d in 1 2; do
  for rep in 1 2 3; do
    for f in heat_break heat_plain; do
      r=$(python3 -m bbmm run $S/$f.c --param tsteps=100 --param n=8192 --devices $d --no-progress 2>&1 | grep -m1 'heat:')
      echo "$f d=$d rep $rep: $r"
    done
  done
done
python3 -m bbmm run $S/heat_break.c --param tsteps=5 --param n=1000 --devices 2 --check --no-progress 2>&1 | grep -v Warn | grep -m1 'check'
python3 -m bbmm run tests/kernels/converge.c --param n=256 --param tmax=1000 --param tol=0.05 --devices 2 --check --no-progress 2>&1 | grep -v Warn | grep -m1 'check'
python3 -m bbmm run tests/kernels/pb42/deriche.c --param w=4096 --param h=2160 --devices 2 --check --no-progress 2>&1 | grep -v Warn | grep -m1 'check\|error'
for rep in 1 2 3; do
  for tree in . .wt/pre34; do
    r=$(cd $tree && PYTHONPATH=/tmp/site:$PWD python3 -m bbmm run $ROOT/tests/kernels/pb42/deriche.c --param w=8192 --param h=4320 --devices 1 --no-progress 2>&1 | grep -m1 'kernel_deriche:')
    echo "deriche $tree rep $rep: $r"
  done
done
date +%T

#!/bin/bash
# session 34, one device call on the one-GPU kind (no two-GPU machine lent): this
# session's new front-end work on NVIDIA's OpenCL, checked against the C program on 1 and
# 2 logical devices (break/continue flags, returns in loops, file-scope scalars, tables of
# row pointers, counting while loops, random programs of the twelfth stream), then two
# timings: a time loop that breaks on convergence (the idle sweeps after the break) and
# the row-pointer stencil beside the same program with C99 arrays.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
S=results/h100x1/s34
check() {  # file, params...
  f=$1; shift; p=""; for x in "$@"; do p="$p --param $x"; done
  for d in 1 2; do
    r=$(timeout 120 python3 -m bbmm run $f $p --devices $d --check --no-progress 2>&1 | grep -v Warn | grep -m1 'check\|error:')
    echo "$(basename $f) d=$d: $r"
  done
}
date +%T
check tests/kernels/jumps.c n=3000 m=2000
check tests/kernels/converge.c n=600 tmax=400 tol=0.001
check tests/kernels/helper_return_loop.c n=1500 m=900
check tests/kernels/file_scalars.c tsteps=5 n=3000 scale=0.25
check tests/kernels/row_tables.c tsteps=5 n=2000 m=1500
check tests/kernels/while_loops.c n=2000 m=1500
python3 -m bbmm run tests/kernels/row_tables.c --param tsteps=3 --param n=500 --param m=400 --devices 2 --check --no-progress --init init_array 2>&1 | grep -v Warn | grep -m1 'check\|error:'
python3 -m bbmm run tests/kernels/helper_return_loop.c --param n=1500 --param m=900 --devices 2 --check --no-progress 2>&1 | grep -m1 returned
for s in 0 2 7 11 12 15 19 20 24 25 29 30 35 36 41 46 48 54 56 59 63 65 66 69 70 71 72 80 81 83 93 95; do
  python3 tests/randprog.py $s > /tmp/rk$s.c 2>/dev/null
  p=$(head -1 /tmp/rk$s.c | sed 's/.*: //')
  r=$(timeout 60 python3 -m bbmm run /tmp/rk$s.c $p --devices 2 --check --no-progress 2>&1 | grep -v Warn | grep -m1 'check\|error:')
  echo "random seed $s: $r"
done
date +%T
# converge.c on 1024^2 (its reduction runs as one work-item): tol=0 never breaks (every sweep real); tol=0.05 breaks early, the
# rest of tmax idle (selects that change nothing); each twice, the second counts
for tm in 100 200; do
  for tol in 0 0.05; do
    for rep in 1 2; do
      r=$(python3 -m bbmm run tests/kernels/converge.c --param n=1024 --param tmax=$tm --param tol=$tol --devices 1 --no-progress --json /tmp/c.json 2>&1 | grep -m1 'converge:')
      echo "converge tmax=$tm tol=$tol rep $rep: $r"
    done
  done
done
for rep in 1 2 3; do
  for f in tests/kernels/row_tables.c $S/smooth_c99.c; do
    r=$(python3 -m bbmm run $f --param tsteps=20 --param n=8192 --param m=8192 --devices 1 --no-progress 2>&1 | grep -m1 'smooth:')
    echo "$(basename $f) rep $rep: $r"
  done
done
date +%T

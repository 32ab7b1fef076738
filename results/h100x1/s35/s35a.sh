#!/bin/bash
# session 35, call A: max/min reductions split over rows (codegen/reductions.py) against
# the code before (.wt/pre35 = f6f67ca, carried): converge.c's time per sweep (tol 0:
# every sweep runs), n = 1024 and 4096, one device, alternating; checks on 1 and 2
# logical devices (converge.c, reductions.c, whose zeros of both signs and NaNs must come
# out bit for bit).
. .whl/activate.sh || exit 1
NEW=$PWD
S=results/h100x1/s35
date +%T
nvidia-smi --query-gpu=name --format=csv,noheader
for n in 1024 4096; do
  for tm in 10 40; do
    for rep in 1 2; do
      for side in old new; do
        if [ $side = old ]; then P=$NEW/.wt/pre35; else P=$NEW; fi
        r=$(PYTHONPATH=/tmp/site:$P python3 -m bbmm run tests/kernels/converge.c --param n=$n --param tmax=$tm --param tol=0 --devices 1 --no-progress 2>&1 | grep -m1 'converge:')
        echo "$side n=$n tmax=$tm rep $rep: $r"
      done
    done
  done
done
export PYTHONPATH=/tmp/site:$NEW
for d in 1 2; do
  python3 -m bbmm run tests/kernels/converge.c --param n=300 --param tmax=500 --param tol=0.001 --devices $d --check --no-progress 2>&1 | grep -v Warn | grep -m1 'check'
  for seed in 0 1; do
    python3 -m bbmm run tests/kernels/reductions.c --param n=1000 --param m=700 --param tsteps=3 --seed $seed --devices $d --check --no-progress 2>&1 | grep -v Warn | grep -m2 -E 'check|mismatch'
  done
done
date +%T

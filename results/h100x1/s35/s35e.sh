#!/bin/bash
# session 35, call E: converge.c's kernels per sweep by strip width (BBMM_STRIP=1: a
# partial per row; 2-32: per row and strip), n = 4096 and 8192, 20 sweeps, one device,
# from the queue's profiling events (scripts/timeline.py), and the whole time per sweep.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
for n in 4096 8192; do
  for s in 1 2 4 8 16 32; do
    BBMM_STRIP=$s python3 -m bbmm run tests/kernels/converge.c --param n=$n --param tmax=20 --param tol=0 --devices 1 --no-progress --profile /tmp/c.json > /dev/null 2>&1
    echo "== n=$n BBMM_STRIP=$s"
    python3 scripts/timeline.py /tmp/c.json --labels 8 --gaps 0 2>&1 | grep -E "kernel converge_nest[345]  " 
    for tm in 10 40; do
      BBMM_STRIP=$s python3 -m bbmm run tests/kernels/converge.c --param n=$n --param tmax=$tm --param tol=0 --devices 1 --no-progress 2>&1 | grep -m1 'converge:'
    done
  done
done

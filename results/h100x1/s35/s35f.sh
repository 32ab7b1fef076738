#!/bin/bash
# session 35, call F: the final code on NVIDIA's OpenCL: reductions.c (max, min, fmaxf
# from a NaN, integer sums; zeros of both signs and NaNs) and converge.c checked against
# the C program on 1 and 2 logical devices and under tight caps, random programs whose
# max/min/sum nests bbmm splits (randprog's thirteenth stream) on 2 devices, and
# converge.c's time per sweep with strips of 4 (the default) and with the split off
# (BBMM_STRIP=1 keeps partials per row).
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
date +%T
if [ "$1" != g ]; then
for d in 1 2; do
  for seed in 0 1; do
    python3 -m bbmm run tests/kernels/reductions.c --param n=1500 --param m=1100 --param tsteps=3 --seed $seed --devices $d --check --no-progress 2>&1 | grep -v Warn | grep -m2 -E 'check|mismatch|error:'
  done
  python3 -m bbmm run tests/kernels/reductions.c --param n=300 --param m=200 --param tsteps=2 --devices $d --device-mem 400KiB --check --no-progress 2>&1 | grep -v Warn | grep -m2 -E 'check|mismatch|error:'
  python3 -m bbmm run tests/kernels/converge.c --param n=700 --param tmax=400 --param tol=0.001 --devices $d --check --no-progress 2>&1 | grep -v Warn | grep -m1 -E 'check|error:'
done
fi
# call G (s35f.sh g): the seeds call F had no time for, 180 s each (kernel builds)
SEEDS="6 31 32 35 36 38 44 50 51 60 67 70 72 81 87 92 94 98"; T=60
[ "$1" = g ] && { SEEDS="67 87 92 94 98"; T=180; }
for s in $SEEDS; do
  python3 tests/randprog.py $s > /tmp/rk$s.c 2>/dev/null
  p=$(head -1 /tmp/rk$s.c | sed 's/.*: //')
  r=$(timeout $T python3 -m bbmm run /tmp/rk$s.c $p --devices 2 --check --no-progress 2>&1 | grep -v Warn | grep -m1 'check\|error:')
  echo "random seed $s: $r"
done
date +%T
for n in 4096 8192; do
  for st in 4 1; do
    BBMM_STRIP=$st python3 -m bbmm run tests/kernels/converge.c --param n=$n --param tmax=2 --param tol=0 --devices 1 --no-progress > /dev/null 2>&1
    t=""
    for tm in 10 40 10 40; do
      t="$t $(BBMM_STRIP=$st python3 -m bbmm run tests/kernels/converge.c --param n=$n --param tmax=$tm --param tol=0 --devices 1 --no-progress 2>&1 | grep -m1 'converge:' | sed 's/.*tiles, \([0-9.]*\) s.*/\1/')"
    done
    echo "converge n=$n BBMM_STRIP=$st: 10/40/10/40 sweeps:$t s"
  done
done
date +%T

#!/bin/bash
# session 20, device call C (final code): the sequential C's result on the H200 (--check)
# for the programs today's changes touch, on 1 and 2 logical devices; then target 2 on one
# GPU (compare.py --preset paper --devices 1)
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
T="timeout 150"
chk() { $T python3 -m bbmm run polybench/$1.c --check --no-progress "${@:2}" 2>&1 | grep -v Warn | grep -E "^[a-z0-9]+:|check|differ|rror" | head -3; }
for nd in 1 2; do
  chk fdtd2d --devices $nd --param tmax=20 --param nx=2048 --param ny=2048
  chk adi --devices $nd --param tsteps=4 --param n=1024
  chk floyd --devices $nd --param n=1024
  chk mvt --devices $nd --param m=8192 --param n=4096
  chk mvt --devices $nd --param m=8192 --param n=4096 --tile 1024
  chk lu --devices $nd --param n=1024
  chk heat2d --devices $nd --param tsteps=10 --param n=2048
done
$T python3 scripts/baselines/compare.py --preset paper --devices 1 --repeat 1 \
  --out $OUT/compare_paper.json 2>&1 | grep -v Warn | tail -12

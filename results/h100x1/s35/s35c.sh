#!/bin/bash
# session 35, call C: as call B with this code strip-mining the split loop's inner loop
# (a partial per row and strip of 8, as converge_strip.c by hand); then checks on
# NVIDIA: converge.c and reductions.c (zeros of both signs, NaNs) on 1 and 2 logical
# devices, under a tight cap too.
. .whl/activate.sh || exit 1
NEW=$PWD
S=results/h100x1/s35
date +%T
one() {  # side file n tmax
  if [ $1 = old ]; then cd $NEW/.wt/pre35; else cd $NEW; fi
  PYTHONPATH=/tmp/site:$PWD timeout 300 python3 -m bbmm run $NEW/$2 --param n=$3 --param tmax=$4 --param tol=0 --devices 1 --no-progress 2>&1 | grep -m1 -E 'converge:|rror' | sed 's/.*tiles, \([0-9.]*\) s.*/\1/'
  cd $NEW
}
for n in 1024 4096 8192; do
  for side in new strip nored; do
    f=tests/kernels/converge.c; s=$side
    [ $side = strip ] && { f=$S/converge_strip.c; s=new; }
    [ $side = nored ] && { f=$S/converge_nored.c; s=new; }
    [ $side = old ] && [ $n = 8192 ] && continue
    one $s $f $n 2 > /dev/null   # build
    a=$(one $s $f $n 10); b=$(one $s $f $n 40); c=$(one $s $f $n 10); d=$(one $s $f $n 40)
    echo "$side n=$n: 10 sweeps $a $c s, 40 sweeps $b $d s; per sweep $(python3 -c "print('%.3f ms' % (1000*(min($b,$d)-min($a,$c))/30))")"
  done
done
cd $NEW; export PYTHONPATH=/tmp/site:$NEW
for d in 1 2; do
  python3 -m bbmm run tests/kernels/converge.c --param n=300 --param tmax=500 --param tol=0.001 --devices $d --check --no-progress 2>&1 | grep -v Warn | grep -m1 'check'
  python3 -m bbmm run tests/kernels/converge.c --param n=300 --param tmax=50 --param tol=0.001 --devices $d --device-mem 200KiB --check --no-progress 2>&1 | grep -v Warn | grep -m1 'check'
  for seed in 0 1; do
    python3 -m bbmm run tests/kernels/reductions.c --param n=1000 --param m=700 --param tsteps=3 --seed $seed --devices $d --check --no-progress 2>&1 | grep -v Warn | grep -m2 -E 'check|mismatch'
  done
  python3 -m bbmm run tests/kernels/reductions.c --param n=300 --param m=200 --param tsteps=2 --devices $d --device-mem 300KiB --check --no-progress 2>&1 | grep -v Warn | grep -m2 -E 'check|mismatch'
done
date +%T

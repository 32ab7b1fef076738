#!/bin/bash
# session 35, call H: a vector's max norm per step (maxnorm.c, a flat loop), n = 2^24 and
# 2^26 floats, one device: the code before (.wt/pre35: one work-item), this code (strips
# of 8, blocks of 64), and the step without the max (maxnorm_nored.c); time per step =
# (time of a long run - time of a short one) / the steps between, each the shorter of
# two. Then --check on 1 and 2 logical devices.
. .whl/activate.sh || exit 1
NEW=$PWD
S=results/h100x1/s35
date +%T
one() {  # side file n tmax
  if [ $1 = old ]; then cd $NEW/.wt/pre35; else cd $NEW; fi
  PYTHONPATH=/tmp/site:$PWD timeout 250 python3 -m bbmm run $NEW/$2 --param n=$3 --param tmax=$4 --devices 1 --no-progress 2>&1 | grep -m1 -E 'maxnorm:|rror' | sed 's/.*tiles, \([0-9.]*\) s.*/\1/'
  cd $NEW
}
for n in 16777216 67108864; do
  for side in old new nored; do
    f=$S/maxnorm.c; s=$side; a=10; b=40
    [ $side = nored ] && { f=$S/maxnorm_nored.c; s=new; }
    [ $side = old ] && { a=2; b=4; [ $n = 67108864 ] && continue; }
    one $s $f $n 2 > /dev/null   # build
    r1=$(one $s $f $n $a); r2=$(one $s $f $n $b); r3=$(one $s $f $n $a); r4=$(one $s $f $n $b)
    echo "$side n=$n: $a steps $r1 $r3 s, $b steps $r2 $r4 s; per step $(python3 -c "print('%.3f ms' % (1000*(min($r2,$r4)-min($r1,$r3))/($b-$a)))")"
  done
done
export PYTHONPATH=/tmp/site:$NEW
for d in 1 2; do
  python3 -m bbmm run $S/maxnorm.c --param n=1000000 --param tmax=3 --devices $d --check --no-progress 2>&1 | grep -v Warn | grep -m1 -E 'check|error:'
  python3 -m bbmm run tests/kernels/reductions1d.c --param n=300000 --param m=50 --param tsteps=2 --devices $d --check --no-progress 2>&1 | grep -v Warn | grep -m2 -E 'check|mismatch|error:'
done
date +%T

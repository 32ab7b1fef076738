#!/bin/bash
# session 35, call B: converge.c's time per sweep (tol 0: every sweep runs; the
# difference between 40 and 10 sweeps over 30), one device: the code before
# (.wt/pre35 = f6f67ca: the max over the grid on one work-item), this code (a partial
# per row), a hand-written prototype with a partial per row and strip of 8
# (converge_strip.c), and the sweeps without the reduction (converge_nored.c).
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
  for side in old new strip nored; do
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
python3 -m bbmm run $S/converge_strip.c --param n=1000 --param tmax=200 --param tol=0.0005 --devices 2 --check --no-progress 2>&1 | grep -v Warn | grep -m1 'check'
date +%T

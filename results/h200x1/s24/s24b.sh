#!/bin/bash
# session 24, device call B: this tree (deferred write-outs, one piece for boxes inside a
# valid copy) against session 23's final code (ad9fc15, carried as .wt/s23), alternating,
# two rounds: LU n=8192 on 1 and 2 logical devices, LU n=16384 on one; Floyd n=8192 on
# 2 logical devices against session 22's code (3e6da33, .wt/old), four rounds
# alternating; bench_host new / s23 on the host (dry devices); s21/checks.py.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
T="timeout 120"
mkdir -p $OUT/r
first() { grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z0-9]*:'; }
tree() { case $1 in new) echo .;; s23) echo .wt/s23;; s22) echo .wt/old;; esac; }
for r in 1 2; do
  for v in new s23; do
    d=$(tree $v)
    for nd in 1 2; do
      echo -n "== lu n=8192 $v devices=$nd round $r: "
      (cd $d && PYTHONPATH=/tmp/site:$PWD $T python3 -m bbmm run polybench/lu.c --devices $nd --param n=8192 --no-progress --json $OUT/r/lu_${v}_${nd}_$r.json 2>&1 | first)
    done
    echo -n "== lu n=16384 $v devices=1 round $r: "
    (cd $d && PYTHONPATH=/tmp/site:$PWD $T python3 -m bbmm run polybench/lu.c --devices 1 --param n=16384 --no-progress --json $OUT/r/lu16k_${v}_$r.json 2>&1 | first)
  done
done
for r in 1 2 3 4; do
  for v in new s22; do
    d=$(tree $v)
    echo -n "== floyd n=8192 $v devices=2 round $r: "
    (cd $d && PYTHONPATH=/tmp/site:$PWD $T python3 -m bbmm run polybench/floyd.c --devices 2 --param n=8192 --no-progress --json $OUT/r/floyd_${v}_2_$r.json 2>&1 | first)
  done
done
for r in 1 2; do
  for v in new s23; do
    d=$(tree $v)
    echo "== bench_host $v round $r"
    (cd $d && PYTHONPATH=/tmp/site:$PWD $T python3 scripts/bench_host.py --programs floyd,lu --devices 1,2 --sizes paper --repeat 1 2>&1 | grep -v Warn | tail -4)
  done
done
echo "== checks"
timeout 200 python3 results/h200x1/s21/checks.py 2>&1 | grep -v Warn | grep -E "rc=|checks:|differ|rror" > $OUT/r/checks.txt
grep -v "rc=0" $OUT/r/checks.txt; grep -c "rc=0" $OUT/r/checks.txt
cd $OUT && tar czf r.tgz r && rm -rf r

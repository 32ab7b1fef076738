#!/bin/bash
# session 24, device call A: deferred, merged write-outs (BBMM_DEFER=1 / 0) for LU
# n=8192 on 1 and 2 logical devices of the one H200, alternating, two rounds, and LU
# n=16384 on one device; LU's device timeline with deferral; Floyd n=8192 on 1 and 2
# logical devices, this tree against session 22's (3e6da33, carried as .wt/old),
# alternating, three rounds (session 23's open question); s21/checks.py.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
T="timeout 120"
mkdir -p $OUT/r
first() { grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z0-9]*:'; }
for r in 1 2; do
  for v in 1 0; do
    for nd in 1 2; do
      echo -n "== lu n=8192 DEFER=$v devices=$nd round $r: "
      BBMM_DEFER=$v $T python3 -m bbmm run polybench/lu.c --devices $nd --param n=8192 --no-progress --json $OUT/r/lu_d${v}_${nd}_$r.json 2>&1 | first
    done
  done
done
for v in 1 0; do
  echo -n "== lu n=16384 DEFER=$v devices=1: "
  BBMM_DEFER=$v $T python3 -m bbmm run polybench/lu.c --devices 1 --param n=16384 --no-progress --json $OUT/r/lu16k_d${v}.json 2>&1 | first
done
echo -n "== lu n=8192 DEFER=1 devices=1 --profile: "
$T python3 -m bbmm run polybench/lu.c --devices 1 --param n=8192 --no-progress --profile $OUT/r/lu_tl1.json 2>&1 | first
for r in 1 2 3; do
  for v in new old; do
    d=.; [ $v = old ] && d=.wt/old
    for nd in 2 1; do
      echo -n "== floyd n=8192 $v devices=$nd round $r: "
      (cd $d && PYTHONPATH=/tmp/site:$PWD $T python3 -m bbmm run polybench/floyd.c --devices $nd --param n=8192 --no-progress --json $OUT/r/floyd_${v}_${nd}_$r.json 2>&1 | first)
    done
  done
done
echo "== checks"
timeout 200 python3 results/h200x1/s21/checks.py 2>&1 | grep -v Warn | grep -E "rc=|checks:|differ|rror" > $OUT/r/checks.txt
grep -v "rc=0" $OUT/r/checks.txt; grep -c "rc=0" $OUT/r/checks.txt
cd $OUT && tar czf r.tgz r && rm -rf r

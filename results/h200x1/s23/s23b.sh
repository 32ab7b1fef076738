#!/bin/bash
# session 23, device call B: small phases placed by their data (BBMM_PLACE=0 / 1) on two
# logical devices of the one H200: LU n=8192 and fdtd2d 10240^2 whole runs, two rounds;
# bench_host (dry devices) LU and Floyd at paper size, this tree and session 22's
# (3e6da33, carried as .wt/old); compare.py --preset paper --devices 1 (the first touch
# not waited for); bench_pool; s21/checks.py (--check under tight caps).
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
T="timeout 120"
mkdir -p $OUT/r
first() { grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z0-9]*:'; }
for r in 1 2; do
  for pl in 0 1; do
    echo -n "== lu n=8192 devices=2 PLACE=$pl round $r: "
    BBMM_PLACE=$pl $T python3 -m bbmm run polybench/lu.c --devices 2 --param n=8192 --no-progress --json $OUT/r/lu_p${pl}_$r.json 2>&1 | first
    echo -n "== fdtd2d 10240 tmax=50 devices=2 PLACE=$pl round $r: "
    BBMM_PLACE=$pl $T python3 -m bbmm run polybench/fdtd2d.c --devices 2 --param nx=10240 --param ny=10240 --param tmax=50 --no-progress --json $OUT/r/fdtd_p${pl}_$r.json 2>&1 | first
  done
done
echo -n "== lu n=8192 devices=1: "
$T python3 -m bbmm run polybench/lu.c --devices 1 --param n=8192 --no-progress 2>&1 | first
for v in new old; do
  d=.; [ $v = old ] && d=.wt/old
  echo "== bench_host $v"
  (cd $d && PYTHONPATH=/tmp/site:$PWD $T python3 scripts/bench_host.py --programs floyd,lu --devices 1,2 --sizes paper --repeat 1 2>&1 | grep -v Warn | tail -4)
done
echo "== compare paper"
timeout 240 python3 scripts/baselines/compare.py --preset paper --devices 1 --repeat 1 --out $OUT/r/compare_paper.json 2>&1 | grep -v Warn | tail -5
echo "== bench_pool"
$T python3 scripts/bench_pool.py 2>&1 | grep -v Warn | tail -10
echo "== checks"
timeout 200 python3 results/h200x1/s21/checks.py 2>&1 | grep -v Warn | grep -E "rc=|checks:|differ|rror" > $OUT/r/checks.txt
grep -v "rc=0" $OUT/r/checks.txt; grep -c "rc=0" $OUT/r/checks.txt
cd $OUT && tar czf r.tgz r && rm -rf r

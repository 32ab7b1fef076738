#!/bin/bash
# session 23, device call D: the final code against session 22's (3e6da33, carried as
# .wt/old), alternating, two rounds: LU n=8192 and Floyd n=8192 whole runs on 1 and 2
# logical devices; bench_host (dry devices) Floyd and LU at paper size; then
# compare.py --preset paper --devices 1 and s21/checks.py (--check under tight caps).
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
T="timeout 100"
mkdir -p $OUT/r
first() { grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z0-9]*:'; }
for r in 1 2; do
  for v in new old; do
    d=.; [ $v = old ] && d=.wt/old
    for p in lu floyd; do
      for nd in 1 2; do
        echo -n "== $p n=8192 $v devices=$nd round $r: "
        (cd $d && PYTHONPATH=/tmp/site:$PWD $T python3 -m bbmm run polybench/$p.c --devices $nd --param n=8192 --no-progress --json $OUT/r/${p}_${v}_${nd}_$r.json 2>&1 | first)
      done
    done
  done
done
for r in 1 2; do
  for v in new old; do
    d=.; [ $v = old ] && d=.wt/old
    echo "== bench_host $v round $r"
    (cd $d && PYTHONPATH=/tmp/site:$PWD $T python3 scripts/bench_host.py --programs floyd,lu --devices 1,2 --sizes paper --repeat 1 2>&1 | grep -v Warn | tail -4)
  done
done
echo "== compare paper"
timeout 200 python3 scripts/baselines/compare.py --preset paper --devices 1 --repeat 1 --out $OUT/r/compare_paper.json 2>&1 | grep -v Warn | tail -5
echo "== checks"
timeout 150 python3 results/h200x1/s21/checks.py 2>&1 | grep -v Warn | grep -E "rc=|checks:|differ|rror" > $OUT/r/checks.txt
grep -v "rc=0" $OUT/r/checks.txt; grep -c "rc=0" $OUT/r/checks.txt
cd $OUT && tar czf r.tgz r && rm -rf r

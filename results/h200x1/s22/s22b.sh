#!/bin/bash
# session 22, device call B: this session's host changes, new (this tree) and old (e15eb3c,
# carried as .wt/old) side by side: bench_host on dry devices (Floyd and LU, paper size,
# 1 and 2 devices) and Floyd whole runs on 1 and 2 logical devices of the one GPU; the
# kernel prebuild on and off (blackscholes fresh, in compare.py and in a process of its
# own); compare.py --preset paper --devices 1; the --check runs of s21/checks.py.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
T="timeout 150"
mkdir -p $OUT/r
first() { grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z]*:'; }
for v in new old; do
  d=.; [ $v = old ] && d=.wt/old
  echo "== bench_host $v"
  (cd $d && PYTHONPATH=/tmp/site:$PWD $T python3 scripts/bench_host.py --programs floyd,lu --devices 1,2 --sizes paper --repeat 1 --json $OUT/r/host_$v.json 2>&1 | grep -v Warn | tail -4)
done
for r in 1 2; do
  for v in new old; do
    d=.; [ $v = old ] && d=.wt/old
    for nd in 1 2; do
      echo -n "== floyd n=8192 $v devices=$nd round $r: "
      (cd $d && PYTHONPATH=/tmp/site:$PWD $T python3 -m bbmm run polybench/floyd.c --devices $nd --param n=8192 --no-progress --json $OUT/r/floyd_${v}_${nd}_$r.json 2>&1 | first)
    done
  done
done
for r in 1 2; do
  for pb in 0 1; do
    echo -n "== blackscholes fresh process BBMM_PREBUILD=$pb round $r: "
    BBMM_PREBUILD=$pb $T python3 -m bbmm run polybench/blackscholes.c --param n=67108864 --devices 1 --no-progress 2>&1 | first
  done
done
for pb in 0 1; do
  echo "== compare blackscholes BBMM_PREBUILD=$pb"
  BBMM_PREBUILD=$pb $T python3 scripts/baselines/compare.py --preset paper --programs blackscholes --devices 1 --repeat 3 --out $OUT/r/cmp_bs_pb$pb.json 2>&1 | grep -v Warn | tail -3
done
echo "== compare paper"
timeout 240 python3 scripts/baselines/compare.py --preset paper --devices 1 --repeat 1 --out $OUT/r/compare_paper.json 2>&1 | grep -v Warn | tail -6
echo "== checks"
timeout 200 python3 results/h200x1/s21/checks.py 2>&1 | grep -v Warn | grep -E "rc=|checks:|differ|rror" > $OUT/r/checks.txt
grep -v "rc=0" $OUT/r/checks.txt; grep -c "rc=0" $OUT/r/checks.txt
tar -czf $OUT/s22b.tgz -C $OUT r

#!/bin/bash
# session 23, device call C: where LU's time goes on the H200 (n=8192, 1 and 2 logical
# devices): device timelines (--profile) and host profiles (cProfile); Floyd's and LU's
# host work (bench_host, dry devices) of this tree and session 22's (.wt/old), alternating,
# two rounds; bench_pool with its warm-up.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
T="timeout 120"
mkdir -p $OUT/r
first() { grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z0-9]*:'; }
for nd in 1 2; do
  echo -n "== lu n=8192 devices=$nd (warm-up): "
  $T python3 -m bbmm run polybench/lu.c --devices $nd --param n=8192 --no-progress 2>&1 | first
  echo -n "== lu n=8192 devices=$nd --profile: "
  $T python3 -m bbmm run polybench/lu.c --devices $nd --param n=8192 --no-progress --profile $OUT/r/lu_tl$nd.json --json $OUT/r/lu_prof$nd.json 2>&1 | first
  echo -n "== lu n=8192 devices=$nd cProfile: "
  $T python3 -m cProfile -o $OUT/r/lu_host$nd.prof -m bbmm run polybench/lu.c --devices $nd --param n=8192 --no-progress --json $OUT/r/lu_cprof$nd.json 2>&1 | first
done
for r in 1 2; do
  for v in new old; do
    d=.; [ $v = old ] && d=.wt/old
    echo "== bench_host $v round $r"
    (cd $d && PYTHONPATH=/tmp/site:$PWD $T python3 scripts/bench_host.py --programs floyd,lu --devices 1,2 --sizes paper --repeat 1 2>&1 | grep -v Warn | tail -4)
  done
done
echo "== bench_pool"
$T python3 scripts/bench_pool.py --json $OUT/r/pool.json 2>&1 | grep -v Warn | tail -10
cd $OUT && tar czf r.tgz r && rm -rf r

#!/bin/bash
# session 23, device call A: a new arena's first touch (touch_probe.py: cost of 5 arenas
# with and without the touch, eager or lazy allocation), blackscholes fresh in compare.py
# with BBMM_TOUCH=wait (as before) / async / 0, alternating; the pool bench of this tree
# and of session 22's (3e6da33, carried as .wt/old) side by side.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
T="timeout 150"
mkdir -p $OUT/r
echo "== touch probe"
$T python3 results/h200x1/s23/touch_probe.py 2>&1 | grep -v Warn
for r in 1 2; do
  for t in wait async 0; do
    echo "== compare blackscholes BBMM_TOUCH=$t round $r"
    BBMM_TOUCH=$t $T python3 scripts/baselines/compare.py --preset paper --programs blackscholes --devices 1 --repeat 3 --out $OUT/r/cmp_bs_${t}_$r.json 2>&1 | grep -v Warn | tail -2
  done
done
for r in 1 2; do
  for v in new old; do
    d=.; [ $v = old ] && d=.wt/old
    echo "== bench_pool $v round $r"
    (cd $d && PYTHONPATH=/tmp/site:$PWD $T python3 scripts/bench_pool.py --json $OUT/r/pool_${v}_$r.json 2>&1 | grep -v Warn | tail -10)
  done
done

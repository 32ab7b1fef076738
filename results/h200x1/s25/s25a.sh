#!/bin/bash
# session 25, device call A: several tiles per device for programs that run once
# ($BBMM_PIPELINE). bench_pipeline.py at paper sizes (splits 1-16, alternating, 3 rounds),
# checked at small sizes; compare.py for blackscholes at splits 1, 4 and 8 (each beside the
# hand-written code); blackscholes' timeline at splits 1 and 4.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p $OUT/r
first() { grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z0-9]*:'; }
echo "== pipeline, small, checked"
timeout 100 python3 scripts/bench_pipeline.py --sizes small --splits 1,4,16 --repeat 1 --check 2>&1 | grep -v Warn | grep -v 'lambda: self'
echo "== pipeline, paper"
timeout 240 python3 scripts/bench_pipeline.py --sizes paper --splits 1,2,4,8,16 --repeat 3 --json $OUT/r/pipeline.json 2>&1 | grep -v Warn | grep -v 'lambda: self'
for s in 1 4 8; do
  echo "== compare blackscholes, BBMM_PIPELINE=$s"
  BBMM_PIPELINE=$s timeout 100 python3 scripts/baselines/compare.py --preset paper --programs blackscholes --devices 1 --repeat 3 --out $OUT/r/compare_bs_p$s.json 2>&1 | grep -v Warn | grep -v 'lambda: self' | tail -3
done
for s in 1 4; do
  echo -n "== blackscholes timeline split $s: "
  BBMM_PIPELINE=$s timeout 60 python3 -m bbmm run polybench/blackscholes.c --devices 1 --param n=67108864 --param riskfree=0.02 --param volatility=0.3 --no-progress --profile $OUT/r/bs_tl_p$s.json 2>&1 | first
  python3 scripts/timeline.py $OUT/r/bs_tl_p$s.json 2>&1 | head -30
done
cd $OUT && tar czf r.tgz r && rm -rf r

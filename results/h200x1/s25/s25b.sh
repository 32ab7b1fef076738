#!/bin/bash
# session 25, device call B: matmul kernel shapes that keep bbmm's order of operations
# (mm_probe.py at n=8192 and 4096); blackscholes beside the hand-written code with the
# default $BBMM_PIPELINE (16), fresh and kept, three repeats.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p $OUT/r
echo "== mm_probe 8192"
timeout 200 python3 results/h200x1/s25/mm_probe.py 8192 2>&1 | grep -v Warn | grep -v 'lambda: self'
echo "== compare blackscholes, default pipeline"
timeout 100 python3 scripts/baselines/compare.py --preset paper --programs blackscholes --devices 1 --repeat 3 --out $OUT/r/compare_bs.json 2>&1 | grep -v Warn | grep -v 'lambda: self' | tail -3
cd $OUT && tar czf r.tgz r && rm -rf r

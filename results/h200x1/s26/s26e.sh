#!/bin/bash
# session 26, device call E: the final code of session 26 on targets measurable on one
# GPU, against regressions from changes 52-54: target 2 (hand-written / bbmm, fresh and
# kept) and target 5 (box-in/box-out at 0.5x and 5x the cap).
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p $OUT/r
timeout 300 python3 scripts/baselines/compare.py --preset paper --devices 1 --repeat 1 --out $OUT/r/compare_paper.json 2>&1 | grep -v Warn | grep -v 'lambda: self' | tail -6
timeout 280 python3 scripts/exp_boxinout.py --device-mem 2.5GiB --devices 1 --factors 0.5,5 --programs matmul,blackscholes,mvt --repeat 1 --warmup 1 --no-plot --out $OUT/r/bio 2>&1 | grep -v Warn | grep -v 'lambda: self' | tail -10
cd $OUT && tar czf r.tgz r && rm -rf r

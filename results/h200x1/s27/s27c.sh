#!/bin/bash
# session 27, device call C: the final code of session 27 on targets measurable on one
# GPU, against regressions from change 55 and the settings readers: target 2 (hand-written / bbmm, fresh and
# kept) and target 5 (box-in/box-out at 0.5x and 5x the cap).
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p $OUT/r
timeout 300 python3 scripts/baselines/compare.py --preset paper --devices 1 --repeat 1 --out $OUT/r/compare_paper.json 2>&1 | grep -v Warn | grep -v 'lambda: self' | tail -6
timeout 280 python3 scripts/exp_boxinout.py --device-mem 2.5GiB --devices 1 --factors 0.5,5 --programs matmul,blackscholes,mvt --repeat 1 --warmup 1 --no-plot --out $OUT/r/bio 2>&1 | grep -v Warn | grep -v 'lambda: self' | tail -10
echo "== a bad setting, then off read as off"
BBMM_REPLAY=sometimes python3 -m bbmm run polybench/heat2d.c --param tsteps=4 --param n=64 --devices 2 --no-progress 2>&1 | grep -v Warn | grep -v 'lambda: self' | tail -2; echo "rc=${PIPESTATUS[0]}"
BBMM_REPLAY=off python3 -m bbmm run polybench/heat2d.c --param tsteps=40 --param n=4096 --devices 2 --no-progress --check --json $OUT/r/heat2d_noreplay.json 2>&1 | grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z0-9]*:'
python3 -c "import json; d=json.load(open('$OUT/r/heat2d_noreplay.json')); print('replayed iterations with BBMM_REPLAY=off:', d.get('replayed'))"
cd $OUT && tar czf r.tgz r && rm -rf r

#!/bin/bash
# session 27, device call E: the final code on one GPU: target 1's floor and bbmm's steady
# time per iteration for floyd and heat2d beside the hand-written code (bench_floor.py,
# one device), and target 5 (box-in/box-out at 0.5x and 5x the cap), after change 57.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p $OUT/r
timeout 330 python3 scripts/bench_floor.py --devices 1 --repeat 2 --json $OUT/r/floor.json 2>&1 | grep -v Warn | grep -v 'lambda: self' | tail -12
timeout 250 python3 scripts/exp_boxinout.py --device-mem 2.5GiB --devices 1 --factors 0.5,5 --programs matmul,blackscholes,mvt --repeat 1 --warmup 1 --no-plot --out $OUT/r/bio 2>&1 | grep -v Warn | grep -v 'lambda: self' | tail -10
cd $OUT && tar czf r.tgz r && rm -rf r

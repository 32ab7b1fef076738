#!/bin/bash
# session 19, device call E: final code (6af02c4): target 2 on one GPU and target 5 for
# matmul and blackscholes (changes 32-33 must not cost them)
. .whl/activate.sh || exit 1
mkdir -p $OUT/r
echo "== target 5: matmul, blackscholes"
timeout 170 python3 scripts/exp_boxinout.py --device-mem 2.5GiB --devices 1 --factors 0.5,5 --programs matmul,blackscholes --repeat 1 --warmup 1 --no-plot --no-progress --out $OUT/r/bio 2>&1 | grep -v Warn | tail -5
echo "== target 2, one GPU"
timeout 170 python3 scripts/baselines/compare.py --preset paper --devices 1 --repeat 1 --out $OUT/r/compare_paper.json 2>&1 | grep -v Warn | tail -8
tar -czf $OUT/s19e.tgz -C $OUT r

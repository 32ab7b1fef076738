#!/bin/bash
# session 21, device call B: rectangular host-device copies of mvt's column boxes
# (rect_probe.py), the two programs whose test caps are below 4 GPU blocks checked at 2 KiB,
# then target 2 on one GPU with the side queue (compare.py --preset paper --devices 1)
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
echo "== rect probe"
timeout 120 python3 results/h200x1/s21/rect_probe.py 81920 40960 2048 2>&1 | grep -v Warn
echo "== checks at 2 KiB"
for d in 1 2; do
  timeout 60 python3 -m bbmm run polybench/blackscholes.c --check --no-progress --param n=400 --tile 4 --device-mem 2KiB --devices $d 2>&1 | grep -v Warn | head -1
  timeout 60 python3 -m bbmm run tests/kernels/imperfect.c --check --no-progress --param n=14 --tile 4 --device-mem 2KiB --devices $d 2>&1 | grep -v Warn | head -1
done
echo "== target 2, one GPU"
timeout 330 python3 scripts/baselines/compare.py --preset paper --devices 1 --repeat 1 \
  --out $OUT/compare_paper.json 2>&1 | grep -v Warn | tail -12

#!/bin/bash
# session 21, device call C: rect_probe.py with single copies timed by their events into
# fresh and filled boxes and after a linear copy; the 1-device checks cut from call B
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
timeout 200 python3 results/h200x1/s21/rect_probe.py 81920 40960 2048 2>&1 | grep -v Warn
for d in 1 2; do
  timeout 60 python3 -m bbmm run polybench/blackscholes.c --check --no-progress --param n=400 --tile 4 --device-mem 2KiB --devices $d 2>&1 | grep -m1 '^[a-z]*:'
  timeout 60 python3 -m bbmm run tests/kernels/imperfect.c --check --no-progress --param n=14 --tile 4 --device-mem 2KiB --devices $d 2>&1 | grep -m1 '^[a-z]*:'
done

#!/bin/bash
# session 19, device call A: mvt's column product, kernel shapes (bench_kernels --parts column)
. .whl/activate.sh || exit 1
python3 scripts/bench_kernels.py --parts column --col-rows 81920 --col-widths 2048,4096,16384 \
  --repeat 12 --json $OUT/column.json 2>&1 | grep -v Warn

#!/bin/bash
# session 19, device call B: why mvt's nest-1 kernel takes 30 ms in a run and 8 ms alone
. .whl/activate.sh || exit 1
mkdir -p $OUT/r
[ -n "$SKIPBENCH" ] || python3 scripts/bench_kernels.py --parts column --col-rows 81920 --col-widths 2048 \
  --repeat 12 --json $OUT/r/column2.json 2>&1 | grep -v Warn | grep 'bbmm\|32x4\|W '
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw --format=csv -lms 20 > $OUT/r/clocks.csv &
SMI=$!
M="--devices 1 --device-mem 2.5GiB --no-progress --param m=81920 --param n=40960 --tile 2048"
PYTHONPATH=/tmp/site:$PWD python3 results/h200x1/s19/buildlog.py run polybench/mvt.c $M --profile $OUT/r/tl_mvt5.json 2>&1 | grep -v Warn | cut -c1-900 | tail -12
kill $SMI
python3 scripts/timeline.py $OUT/r/tl_mvt5.json --tiles 1 2>&1 | sed -n '/per tile/,$p'
awk -F, 'NR>1{print $2}' $OUT/r/clocks.csv | sort | uniq -c | sort -rn | head -8
tar -czf $OUT/s19b.tgz -C $OUT r

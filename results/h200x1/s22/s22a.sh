#!/bin/bash
# session 22, device call A: where mvt's column copies lose their speed. dst_probe.py (the
# destination's offset folded into x or y, and what wrote it before), then mvt at 5x the cap
# with the offset folded into x (as bbmm does) and into y, alternating, two rounds, and a
# timeline of each.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p $OUT/r
timeout 240 python3 results/h200x1/s22/dst_probe.py 81920 40960 2048 2>&1 | grep -v Warn | tee $OUT/r/dst_probe.txt
M5="run polybench/mvt.c --devices 1 --device-mem 2.5GiB --no-progress --param m=81920 --param n=40960 --tile 2048"
for i in 1 2; do
  for f in x y; do
    echo "== mvt 5x round $i FOLD=$f"
    FOLD=$f timeout 60 python3 results/h200x1/s22/run_fold.py $M5 --json $OUT/r/mvt5_$f$i.json --profile $OUT/r/tl_$f$i.json 2>&1 | grep -v Warn | grep -m1 '^[a-z]*:'
  done
done
for f in x y; do
  timeout 60 python3 scripts/timeline.py $OUT/r/tl_${f}2.json --tiles 0 2>&1 | grep -v Warn | head -14
done
tar -czf $OUT/s22a.tgz -C $OUT r

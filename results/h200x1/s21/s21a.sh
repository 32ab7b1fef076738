#!/bin/bash
# session 21, device call A: read-ins of new boxes on a side queue (change 39).
# mvt at 5x the cap, BBMM_SIDE=0 and 1 alternating (same code), two rounds, then a timeline
# with the side queue; target 5 both ways; then --check of every test_run.py program under
# its tight cap, slow tiles and mvt under a 5x cap, on 1 and 2 logical devices.
. .whl/activate.sh || exit 1
mkdir -p $OUT/r
M5="--devices 1 --device-mem 2.5GiB --no-progress --param m=81920 --param n=40960 --tile 2048 --json"
first() { grep -v Warn | grep -m1 '^[a-z]*:'; }
for i in 1 2; do
  for s in 0 1; do
    echo "== mvt 5x round $i BBMM_SIDE=$s"
    BBMM_SIDE=$s timeout 60 python3 -m bbmm run polybench/mvt.c $M5 $OUT/r/mvt5_side${s}_$i.json 2>&1 | first
  done
done
BBMM_SIDE=1 timeout 60 python3 -m bbmm run polybench/mvt.c $M5 $OUT/r/mvt5_prof.json --profile $OUT/r/tl_mvt5.json 2>&1 | first
timeout 60 python3 scripts/timeline.py $OUT/r/tl_mvt5.json --tiles 1 2>&1 | head -12
for s in 1 0; do
  echo "== target 5, BBMM_SIDE=$s"
  BBMM_SIDE=$s timeout 170 python3 scripts/exp_boxinout.py --device-mem 2.5GiB --devices 1 --factors 0.5,5 --programs matmul,blackscholes,mvt --repeat 1 --warmup 1 --no-plot --no-progress --out $OUT/r/bio_side$s 2>&1 | grep -v Warn | tail -8
done
echo "== checks"
timeout 200 python3 results/h200x1/s21/checks.py 2>&1 | grep -v Warn | grep -E "rc=|checks:|differ|rror" > $OUT/r/checks.txt
grep -v "rc=0" $OUT/r/checks.txt; grep -c "rc=0" $OUT/r/checks.txt
tar -czf $OUT/s21a.tgz -C $OUT r

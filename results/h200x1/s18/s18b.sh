#!/bin/bash
# session 18, device call B: unroll on/off (mvt at 5x the cap, matmul), target 5 table
. .whl/activate.sh || exit 1
mkdir -p $OUT/r
M="--devices 1 --device-mem 2.5GiB --no-progress --param m=81920 --param n=40960 --tile 2048 --json"
for i in 1 2; do
  python3 -m bbmm run polybench/mvt.c $M $OUT/r/mvt5_unroll$i.json 2>&1 | head -1
  BBMM_UNROLL=0 python3 -m bbmm run polybench/mvt.c $M $OUT/r/mvt5_nounroll$i.json 2>&1 | head -1
done
python3 -m bbmm run polybench/mvt.c $M $OUT/r/mvt5_prof.json --profile $OUT/r/tl_mvt5_unroll.json 2>&1 | tail -2
python3 scripts/timeline.py $OUT/r/tl_mvt5_unroll.json --gaps 3 --tiles 2 2>&1 | head -30
for u in 1 0; do
  echo "== matmul BBMM_UNROLL=$u"
  BBMM_UNROLL=$u python3 scripts/exp_boxinout.py --device-mem 2.5GiB --devices 1 --factors 0.5 --programs matmul --repeat 2 --warmup 1 --no-plot --no-progress --out $OUT/r/mm_u$u 2>&1 | tail -3
done
echo "== target 5"
python3 scripts/exp_boxinout.py --device-mem 2.5GiB --devices 1 --factors 0.5,5 --programs matmul,blackscholes,mvt --repeat 1 --warmup 1 --no-plot --no-progress --out $OUT/r/bio 2>&1 | tail -12
tar -czf $OUT/s18b.tgz -C $OUT r

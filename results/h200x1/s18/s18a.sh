#!/bin/bash
# session 18, device call A: target 2 (1 GPU), mvt under the cap old/new, timelines
set -x
. .whl/activate.sh || exit 1
R=$PWD
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
python3 scripts/baselines/compare.py --preset paper --devices 1 --repeat 2 --out $OUT/compare_paper.json 2>&1 | tail -8
M="--devices 1 --device-mem 2.5GiB --no-progress --json"
for i in 1 2; do
  python3 -m bbmm run polybench/mvt.c --param m=81920 --param n=40960 --tile 2048 $M $OUT/mvt5_new$i.json 2>&1 | head -1
  (cd old && PYTHONPATH=/tmp/site:$PWD python3 -m bbmm run polybench/mvt.c --param m=81920 --param n=40960 --tile 2048 $M $OUT/mvt5_old$i.json 2>&1 | head -1)
done
python3 -m bbmm run polybench/mvt.c --param m=81920 --param n=40960 --tile 2048 $M $OUT/mvt5_prof.json --profile $OUT/tl_mvt5.json 2>&1 | tail -3
BBMM_LOCAL=256 python3 -m bbmm run polybench/mvt.c --param m=81920 --param n=40960 --tile 2048 $M $OUT/mvt5_l256.json --profile $OUT/tl_mvt5_l256.json 2>&1 | tail -3
python3 -m bbmm run polybench/mvt.c --param m=25904 --param n=12952 --tile 6476 $M $OUT/mvt05.json --profile $OUT/tl_mvt05.json 2>&1 | tail -3
B="--devices 1 --no-progress --param n=67108864 --json"
for i in 1 2 3; do
  python3 -m bbmm run polybench/blackscholes.c $B $OUT/bs_new$i.json 2>&1 | head -1
  (cd old && PYTHONPATH=/tmp/site:$PWD python3 -m bbmm run polybench/blackscholes.c $B $OUT/bs_old$i.json 2>&1 | head -1)
done
python3 -m bbmm run polybench/blackscholes.c $B $OUT/bs_prof.json --profile $OUT/tl_bs.json 2>&1 | tail -3
for f in $OUT/tl_*.json; do echo "== $f"; python3 scripts/timeline.py $f --gaps 6 --tiles 4 2>&1 | head -40; done

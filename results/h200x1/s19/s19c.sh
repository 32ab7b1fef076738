#!/bin/bash
# session 19, device call C: no split column boxes + staged inner loops (new) against
# 0219431 (old/), mvt at 5x the cap and in memory, adi in memory, target 5
. .whl/activate.sh || exit 1
mkdir -p $OUT/r
M5="--devices 1 --device-mem 2.5GiB --no-progress --param m=81920 --param n=40960 --tile 2048 --json"
MP="--devices 1 --no-progress --param m=20480 --param n=10240 --json"
AP="--devices 1 --no-progress --param tsteps=10 --param n=8192 --json"
old() { (cd old && PYTHONPATH=/tmp/site:$PWD python3 "$@"); }
echo "== checked against the sequential C (staged kernels run on GPUs only)"
python3 -m bbmm run polybench/mvt.c $M5 $OUT/r/mvt5_check.json --check 2>&1 | head -1
python3 -m bbmm run polybench/mvt.c $MP $OUT/r/mvtp_check.json --check 2>&1 | head -1
python3 -m bbmm run polybench/adi.c $AP $OUT/r/adi_check.json --check 2>&1 | head -1
for i in 1 2; do
  echo "== mvt 5x ($i): new, old, new without staging"
  python3 -m bbmm run polybench/mvt.c $M5 $OUT/r/mvt5_new$i.json 2>&1 | head -1
  old -m bbmm run polybench/mvt.c $M5 $OUT/r/mvt5_old$i.json 2>&1 | head -1
  BBMM_STAGE=0 python3 -m bbmm run polybench/mvt.c $M5 $OUT/r/mvt5_nostage$i.json 2>&1 | head -1
  echo "== mvt paper size in memory ($i): new, old, new without staging"
  python3 -m bbmm run polybench/mvt.c $MP $OUT/r/mvtp_new$i.json 2>&1 | head -1
  old -m bbmm run polybench/mvt.c $MP $OUT/r/mvtp_old$i.json 2>&1 | head -1
  BBMM_STAGE=0 python3 -m bbmm run polybench/mvt.c $MP $OUT/r/mvtp_nostage$i.json 2>&1 | head -1
  echo "== adi paper size ($i): new, old, new without staging"
  python3 -m bbmm run polybench/adi.c $AP $OUT/r/adi_new$i.json 2>&1 | head -1
  old -m bbmm run polybench/adi.c $AP $OUT/r/adi_old$i.json 2>&1 | head -1
  BBMM_STAGE=0 python3 -m bbmm run polybench/adi.c $AP $OUT/r/adi_nostage$i.json 2>&1 | head -1
done
python3 -m bbmm run polybench/mvt.c $M5 $OUT/r/mvt5_prof.json --profile $OUT/r/tl_mvt5.json 2>&1 | tail -1
python3 scripts/timeline.py $OUT/r/tl_mvt5.json --tiles 1 2>&1 | sed -n '/per tile/,$p'
python3 -m bbmm run polybench/adi.c $AP $OUT/r/adi_prof.json --profile $OUT/r/tl_adi.json 2>&1 | tail -1
python3 scripts/timeline.py $OUT/r/tl_adi.json 2>&1 | sed -n '/busiest/,/per tile/p'
echo "== target 5 (new)"
python3 scripts/exp_boxinout.py --device-mem 2.5GiB --devices 1 --factors 0.5,5 --programs matmul,blackscholes,mvt --repeat 1 --warmup 1 --no-plot --no-progress --out $OUT/r/bio 2>&1 | tail -9
echo "== target 5 mvt (old)"
old scripts/exp_boxinout.py --device-mem 2.5GiB --devices 1 --factors 0.5,5 --programs mvt --repeat 1 --warmup 1 --no-plot --no-progress --out $OUT/r/bio_old 2>&1 | tail -5
tar -czf $OUT/s19c.tgz -C $OUT r

#!/bin/bash
# session 19, device call D (after call C timed out in its last step): staged kernels
# only where no global access moves with both iterators, staging loads unrolled;
# against 0219431 (old/): mvt at 5x the cap, adi, mvt checked, target 5 for mvt
. .whl/activate.sh || exit 1
mkdir -p $OUT/r
M5="--devices 1 --device-mem 2.5GiB --no-progress --param m=81920 --param n=40960 --tile 2048 --json"
MP="--devices 1 --no-progress --param m=20480 --param n=10240 --json"
AP="--devices 1 --no-progress --param tsteps=10 --param n=8192 --json"
old() { (cd old && PYTHONPATH=/tmp/site:$PWD python3 "$@"); }
first() { grep -v Warn | grep -m1 '^[a-z]*:'; }
echo "== mvt paper size, checked against the sequential C"
python3 -m bbmm run polybench/mvt.c $MP $OUT/r/mvtp_check.json --check 2>&1 | first
for i in 1 2; do
  echo "== mvt 5x ($i): new, old, new without staging"
  python3 -m bbmm run polybench/mvt.c $M5 $OUT/r/mvt5_new$i.json 2>&1 | first
  old -m bbmm run polybench/mvt.c $M5 $OUT/r/mvt5_old$i.json 2>&1 | first
  BBMM_STAGE=0 python3 -m bbmm run polybench/mvt.c $M5 $OUT/r/mvt5_nostage$i.json 2>&1 | first
done
echo "== adi paper size: new, old"
python3 -m bbmm run polybench/adi.c $AP $OUT/r/adi_new.json 2>&1 | first
old -m bbmm run polybench/adi.c $AP $OUT/r/adi_old.json 2>&1 | first
python3 -m bbmm run polybench/mvt.c $M5 $OUT/r/mvt5_prof.json --profile $OUT/r/tl_mvt5.json 2>&1 | grep -v Warn | tail -1
python3 scripts/timeline.py $OUT/r/tl_mvt5.json --tiles 1 2>&1 | sed -n '/per tile/,$p'
echo "== target 5 for mvt (new)"
timeout 150 python3 scripts/exp_boxinout.py --device-mem 2.5GiB --devices 1 --factors 0.5,5 --programs mvt --repeat 1 --warmup 1 --no-plot --no-progress --out $OUT/r/bio 2>&1 | grep -v Warn | tail -4
tar -czf $OUT/s19d.tgz -C $OUT r

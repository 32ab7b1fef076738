#!/bin/bash
# session 18, device call C: register promotion (new) against unroll only (old = b96d40b)
. .whl/activate.sh || exit 1
mkdir -p $OUT/r
M="--devices 1 --device-mem 2.5GiB --no-progress --param m=81920 --param n=40960 --tile 2048 --json"
for i in 1 2; do
  python3 -m bbmm run polybench/mvt.c $M $OUT/r/mvt5_new$i.json 2>&1 | head -1
  (cd old && PYTHONPATH=/tmp/site:$PWD python3 -m bbmm run polybench/mvt.c $M $OUT/r/mvt5_old$i.json 2>&1 | head -1)
done
python3 -m bbmm run polybench/mvt.c $M $OUT/r/mvt5_prof.json --profile $OUT/r/tl_mvt5_promote.json 2>&1 | tail -1
python3 scripts/timeline.py $OUT/r/tl_mvt5_promote.json --gaps 2 --tiles 1 2>&1 | sed -n 1,20p
for side in new old; do
  echo "== $side"
  if [ $side = new ]; then D=.; else D=old; fi
  (cd $D && PYTHONPATH=/tmp/site:$PWD python3 scripts/exp_boxinout.py --device-mem 2.5GiB --devices 1 --factors 0.5 --programs matmul,mvt --repeat 2 --warmup 1 --no-plot --no-progress --out $OUT/r/bio05_$side 2>&1 | tail -4)
done
echo "== target 5 (new)"
python3 scripts/exp_boxinout.py --device-mem 2.5GiB --devices 1 --factors 0.5,5 --programs matmul,blackscholes,mvt --repeat 1 --warmup 1 --no-plot --no-progress --out $OUT/r/bio 2>&1 | tail -9
tar -czf $OUT/s18c.tgz -C $OUT r

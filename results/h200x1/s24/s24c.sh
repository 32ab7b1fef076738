#!/bin/bash
# session 24, device call C: the final code. LU's device timelines on one H200 at n=8192
# and n=16384 (changes 48-49); compare.py --preset paper --devices 1 (target 2);
# exp_boxinout.py at 0.5x and 5x the cap for matmul, blackscholes and mvt (target 5).
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
T="timeout 120"
mkdir -p $OUT/r
first() { grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z0-9]*:'; }
for n in 8192 16384; do
  echo -n "== lu n=$n devices=1 --profile: "
  $T python3 -m bbmm run polybench/lu.c --devices 1 --param n=$n --no-progress --profile $OUT/r/lu_tl_$n.json --json $OUT/r/lu_$n.json 2>&1 | first
done
echo "== compare paper"
timeout 260 python3 scripts/baselines/compare.py --preset paper --devices 1 --repeat 1 --out $OUT/r/compare_paper.json 2>&1 | grep -v Warn | tail -5
echo "== boxinout"
timeout 200 python3 scripts/exp_boxinout.py --device-mem 2.5GiB --devices 1 --factors 0.5,5 --programs matmul,blackscholes,mvt --repeat 1 --warmup 1 --no-plot --out $OUT/r/bio 2>&1 | grep -v Warn | tail -12
cd $OUT && tar czf r.tgz r && rm -rf r

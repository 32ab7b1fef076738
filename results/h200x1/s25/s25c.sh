#!/bin/bash
# session 25, device call C: register-blocked kernels (matmul): whole runs at n=8192 for
# several $BBMM_BLOCK shapes, alternating, two rounds; matmul checked against the C program
# at n=1024 and at odd sizes; s21/checks.py (tight caps, box-out); target 5 for matmul.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
T="timeout 100"
mkdir -p $OUT/r
first() { grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z0-9]*:'; }
MM="polybench/matmul.c --devices 1 --no-progress --param ni=8192 --param nj=8192 --param nk=8192 --param alpha=1.5 --param beta=1.2"
for round in 1 2; do
  for b in 1x1 8x1 8x2 8x4 4x2 16x2 4x4; do
    echo -n "== round $round block $b: "; BBMM_BLOCK=$b $T python3 -m bbmm run $MM 2>&1 | first
  done
done
echo -n "== old kernels (BBMM_BLOCK=1x1 is blocked 1x1; session 24's tree): "
(cd .wt/s24 && $T python3 -m bbmm run $MM 2>&1 | first)
(cd .wt/s24 && $T python3 -m bbmm run $MM 2>&1 | first)
for p in "ni=1024 nj=1024 nk=1024" "ni=1000 nj=777 nk=333" "ni=77 nj=4099 nk=5"; do
  for d in 1 2; do
    echo -n "== check $p devices=$d: "; $T python3 -m bbmm run polybench/matmul.c --check --devices $d --no-progress $(for a in $p; do echo --param $a; done) 2>&1 | first
  done
done
echo "== checks.py"
timeout 200 python3 results/h200x1/s21/checks.py 2>&1 | grep -v Warn | grep -E "rc=|checks:|differ|rror" > $OUT/r/checks.txt; tail -1 $OUT/r/checks.txt; grep -v "rc=0" $OUT/r/checks.txt | head
echo "== boxinout matmul"
timeout 150 python3 scripts/exp_boxinout.py --device-mem 2.5GiB --devices 1 --factors 0.5,5 --programs matmul --repeat 1 --warmup 1 --no-plot --out $OUT/r/bio 2>&1 | grep -v Warn | tail -6
cd $OUT && tar czf r.tgz r && rm -rf r

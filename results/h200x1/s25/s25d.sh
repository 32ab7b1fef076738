#!/bin/bash
# session 25, device call D: why bbmm's 8x2 matmul run is not twice faster: the probe's
# kernels in bbmm's form and work-group shapes; bbmm runs with --profile (kernel time).
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p $OUT/r
echo "== mm_probe 8192 x"
timeout 150 python3 results/h200x1/s25/mm_probe.py 8192 x 2>&1 | grep -v Warn | grep -v 'lambda: self'
MM="polybench/matmul.c --devices 1 --no-progress --param ni=8192 --param nj=8192 --param nk=8192 --param alpha=1.5 --param beta=1.2"
for b in 8x1 8x2; do
  echo "== profile block $b"
  BBMM_BLOCK=$b timeout 60 python3 -m bbmm run $MM --profile $OUT/r/mm_$b.json 2>&1 | grep -v Warn | grep -E "^cl0|kernel|^matmul" | head -8
done
echo "== kernel source"
python3 -m bbmm compile polybench/matmul.c -o $OUT/r/mm >/dev/null 2>&1; ls $OUT/r/mm
cd $OUT && tar czf r.tgz r && rm -rf r

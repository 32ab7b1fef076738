#!/bin/bash
# session 25, device call E: which feature of bbmm's blocked kernel costs (mm_probe.py
# features: long base, two paths, strides from arguments); bbmm runs with work-groups of 64.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
echo "== mm_probe 8192 features"
timeout 150 python3 results/h200x1/s25/mm_probe.py 8192 features 2>&1 | grep -v Warn | grep -v 'lambda: self'
MM="polybench/matmul.c --devices 1 --no-progress --param ni=8192 --param nj=8192 --param nk=8192 --param alpha=1.5 --param beta=1.2"
for cfg in "8x2 256x1" "8x4 64x1" "8x2 128x1"; do
  set -- $cfg
  echo "== profile block $1 local $2"
  BBMM_BLOCK=$1 BBMM_LOCAL=$2 timeout 60 python3 -m bbmm run $MM --profile /tmp/p.json 2>&1 | grep -v Warn | grep -E "^  cl0|^matmul" | head -3
done

#!/bin/bash
# session 25, device call F: bbmm's matmul n=8192 at register blocks 4x1..16x1 and 8x2,
# inner loop unrolled or not ($BBMM_UNROLL), kernel time from the profile; two rounds.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
MM="polybench/matmul.c --devices 1 --no-progress --param ni=8192 --param nj=8192 --param nk=8192 --param alpha=1.5 --param beta=1.2"
for round in 1 2; do
for b in 1x1 4x1 8x1 16x1 8x2; do for u in 1 0; do
  echo -n "round $round block $b unroll $u: "
  BBMM_BLOCK=$b BBMM_UNROLL=$u timeout 60 python3 -m bbmm run $MM --profile /tmp/p.json 2>&1 | grep -v Warn | grep -E "^  cl0" | head -1 | grep -o "kernel [0-9.]* ms"
done; done; done

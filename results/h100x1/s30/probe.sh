#!/bin/bash
# session 30, probe: small sizes first, each run under 60 s, output as it comes
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
for n in 1025 4097; do
  echo "== redblack n=$n"; date +%T
  timeout 60 python3 -m bbmm run tests/kernels/quasi/redblack.c --param n=$n --param tsteps=2 --devices 1 --check --no-progress 2>&1 | grep -v Warn | grep -v 'lambda: self' | tail -5
  date +%T
done

#!/bin/bash
# session 31, one device call (one H100, the kind lent): on NVIDIA's OpenCL, checked
# against the C program on 1 and 2 logical devices, each run twice (the first builds the
# kernels): C names bbmm renames inside (tests/kernels/names), local arrays declared
# inside loops (tests/kernels/private) beside the same stencil with scalars, and random
# programs of randprog's seventh (awkward names) and eighth (temporaries as arrays)
# streams.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
run() {  # label, file, params...
  l=$1; f=$2; shift 2
  p=""; for x in "$@"; do p="$p --param $x"; done
  for d in 1 2; do
    for rep in 1 2; do
      r=$(timeout 100 python3 -m bbmm run $f $p --devices $d --check --no-progress 2>&1 | grep -v Warn | grep -v 'lambda: self' | grep -m1 'check\|error:')
      echo "$l d=$d run $rep: $r"
    done
  done
}
seeds() {  # randprog seeds: each program checked on 2 logical devices
  for s in "$@"; do
    python3 tests/randprog.py $s > /tmp/rk$s.c 2>/dev/null
    p=$(head -1 /tmp/rk$s.c | sed 's/.*: //')
    r=$(timeout 60 python3 -m bbmm run /tmp/rk$s.c $p --devices 2 --check --no-progress 2>&1 | grep -v Warn | grep -v 'lambda: self' | grep -m1 'check\|error:')
    echo "random seed $s: $r"
  done
}
P=tests/kernels/private
S=results/h100x1/s31
if [ "$1" = "c" ]; then
# part c (third call, after loops of a few constant trips over such arrays are unrolled):
# flux's f[c] and g[.][c] are scalars now; window's win[k] (k < w) stays memory
date +%T
run flux $P/flux.c nstages=10 n=2049 m=2049
run window $P/window.c tsteps=10 n=4096 w=5
run private-stencil $P/stencil.c tsteps=20 n=8193
date +%T
exit 0
fi
if [ "$1" = "b" ]; then
# part b (second call, after codegen/scalarize.py): w[3] is three scalars now; random
# programs whose temporaries are local arrays kept in memory (subscripts '1 + 0 * n')
date +%T
run private-stencil $P/stencil.c tsteps=20 n=8193
run scalar-stencil $S/stencil_scalars.c tsteps=20 n=8193
run flux $P/flux.c nstages=10 n=2049 m=2049
seeds 8 16 24 26 28 38 57 67 80
date +%T
exit 0
fi
date +%T
run badnames tests/kernels/names/badnames.c iter=10 len=4001 S1=2 lambda=0.5
date +%T
run private-stencil $P/stencil.c tsteps=20 n=8193
run scalar-stencil $S/stencil_scalars.c tsteps=20 n=8193
date +%T
run flux $P/flux.c nstages=10 n=2049 m=2049
date +%T
seeds 0 6 10 20 22 25 29 31 2 8 11 16 21 24 26
date +%T

#!/bin/bash
# session 32, one device call (one H100, the kind lent): on NVIDIA's OpenCL, checked
# against the C program on 1 and 2 logical devices, each run twice (the first builds the
# kernels): ifs on the data (tests/kernels/dataif), temporaries kept in memory
# (tests/kernels/expand/stale.c), argmax with its condition in memory or a value
# (argmax_value.c), the tile dry run's sampling under a cap (tests/kernels/rows_below.c),
# and random programs of randprog's ninth stream (ifs on the data).
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
run() {  # label, file, params... ($EXTRA: more options)
  l=$1; f=$2; shift 2
  p=""; for x in "$@"; do p="$p --param $x"; done
  for d in 1 2; do
    for rep in 1 2; do
      r=$(timeout 120 python3 -m bbmm run $f $p --devices $d --check --no-progress $EXTRA 2>&1 | grep -v Warn | grep -v 'lambda: self' | grep -m2 'check\|error:\|bbmm: tile' | tr '\n' ' ')
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
D=tests/kernels/dataif
S=results/h100x1/s32
if [ "$1" = "e" ]; then
# part e: the flat jacobi's gap (call d): the flat one, the C99 one, the C99 one with B
# one row short as bbmm infers it for the flat one; three runs each, then timelines
date +%T
for rep in 1 2 3; do
  for f in tests/kernels/flat/jacobi.c $S/jacobi_rect.c $S/jacobi_short.c; do
    r=$(python3 -m bbmm run $f --param tsteps=20 --param n=8192 --devices 1 --no-progress 2>&1 | grep -m1 'jacobi:')
    echo "$(basename $f) rep $rep: $r"
  done
done
for f in tests/kernels/flat/jacobi.c $S/jacobi_rect.c; do
  python3 -m bbmm run $f --param tsteps=20 --param n=8192 --devices 1 --no-progress --profile /tmp/p.json 2>&1 | grep -v Warn | grep -v 'lambda: self' | tail -3
  python3 scripts/timeline.py /tmp/p.json --gaps 3 2>&1 | head -25
done
date +%T
exit 0
fi
if [ "$1" = "d" ]; then
# part d (fourth call, after pointers and flat arrays): the flat stencil beside the same
# program with C99 arrays, the flat matrix-vector products, pointers, and random programs
# of the tenth stream (flat arrays)
date +%T
run jacobi-flat tests/kernels/flat/jacobi.c tsteps=20 n=8192
run jacobi-rect $S/jacobi_rect.c tsteps=20 n=8192
run matvec-flat tests/kernels/flat/matvec.c n=16384 m=8192
run pointers tests/kernels/pointers.c tsteps=5 n=4096 a=0.5
run pointer_result tests/kernels/pointer_result.c n=1000000
seeds 16 32 43 45 47 48 50 53 60
date +%T
exit 0
fi
if [ "$1" = "c" ]; then
# part c (third call, after if/else pairs became selects and the code moved into modules
# of one role each): upwind (tests/kernels/dataif/upwind.c), branches again, random
# programs whose ninth stream drew if/else pairs assigning one element
date +%T
run upwind $D/upwind.c tsteps=20 n=16777216
run branches $D/branches.c tsteps=5 n=4096 thr=0.6
run stepped_mod tests/kernels/quasi/stepped_mod.c n=301 m=40
seeds 12 56 59 61 63 133 115 2 4 6
date +%T
exit 0
fi
if [ "$1" = "b" ]; then
date +%T
EXTRA="--device-mem 8MiB" run rows_below tests/kernels/rows_below.c n=2048
date +%T
seeds 2 4 6 10 12 13 17 19 20 21 23 24 29 30 33 34 35 37 39
date +%T
exit 0
fi
date +%T
run clamp $D/clamp.c tsteps=20 n=8192 lo=0.4
run argmax $D/argmax.c n=16384 m=4096 thr=0.5
run argmax-value $S/argmax_value.c n=16384 m=4096 thr=0.5
run branches $D/branches.c tsteps=5 n=4096 thr=0.6
run stale tests/kernels/expand/stale.c n=8192 m=4096

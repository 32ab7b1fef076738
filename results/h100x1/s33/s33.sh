#!/bin/bash
# session 33, one device call on the one-GPU kind lent after the two-GPU machine went
# back: this session's new programs on NVIDIA's OpenCL, checked against the C program on
# 1 and 2 logical devices (flat rows read backwards, 3-D flat arrays, helpers inlined,
# random programs of the tenth and eleventh streams), and the 3-D flat stencil timed
# beside the same program with C99 arrays (the same kernels, byte for byte).
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
S=results/h100x1/s33
check() {  # file, params...
  f=$1; shift; p=""; for x in "$@"; do p="$p --param $x"; done
  for d in 1 2; do
    r=$(timeout 120 python3 -m bbmm run $f $p --devices $d --check --no-progress 2>&1 | grep -v Warn | grep -m1 'check\|error:')
    echo "$(basename $f) d=$d: $r"
  done
}
if [ "$1" = "b" ]; then
# part b (second call): the programs added after the first call
date +%T
check tests/kernels/row_pointers.c n=700 ny=50 nz=60
check tests/kernels/loop_continue.c n=900
check tests/kernels/switch_cases.c n=900
check tests/kernels/helper_early_return.c n=1200
check tests/kernels/returns_value.c n=2000 m=300
check tests/kernels/file_arrays.c tsteps=4
python3 -m bbmm run tests/kernels/returns_value.c --param n=2000 --param m=300 --devices 2 --check --no-progress 2>&1 | grep -m1 returned
date +%T
exit 0
fi
date +%T
check tests/kernels/flat/mirror.c tsteps=5 n=1000
check tests/kernels/flat/heat3d.c tsteps=5 nx=70 ny=61 nz=53
check tests/kernels/inline_helpers.c n=1500
check tests/kernels/helper_pointer.c n=100000
for s in 0 11 13 20 24 32 43 60 73 100 102 107 146; do
  python3 tests/randprog.py $s > /tmp/rk$s.c 2>/dev/null
  p=$(head -1 /tmp/rk$s.c | sed 's/.*: //')
  r=$(timeout 60 python3 -m bbmm run /tmp/rk$s.c $p --devices 2 --check --no-progress 2>&1 | grep -v Warn | grep -m1 'check\|error:')
  echo "random seed $s: $r"
done
for rep in 1 2 3; do
  for f in tests/kernels/flat/heat3d.c $S/heat3d_rect.c; do
    r=$(python3 -m bbmm run $f --param tsteps=20 --param nx=512 --param ny=512 --param nz=512 --devices 1 --no-progress 2>&1 | grep -m1 'heat3d:')
    echo "$f rep $rep: $r"
  done
done
date +%T

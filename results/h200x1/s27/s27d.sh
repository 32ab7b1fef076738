#!/bin/bash
# session 27, device call D: change 57, OpenCL dimension 0 starting on a multiple of 32
# indices ($BBMM_ALIGN=32, the new default) against the loop's lower bound ($BBMM_ALIGN=1,
# as before). Kernels alone (bench_kernels: bbmm's heat2d kernel from column 1 and from 0,
# the copy kernels in groups of 64 and 256); steady time per step of heat2d, fdtd2d, heat3d
# on one device ((t(long) - t(short)) / extra steps), both ways alternating, two rounds; LU
# n=8192 whole runs; target 2 (compare.py, one GPU); checks against the C program.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
T="timeout 100"
mkdir -p $OUT/r
first() { grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z0-9]*:'; }
echo "== kernels"
timeout 120 python3 scripts/bench_kernels.py --parts stencil --generated 1x4,1x8 --strips 8 --repeat 20 2>&1 | grep -v Warn | grep -v 'lambda: self' | tail -14
run() {  # align program params...
  local a=$1 p=$2; shift 2
  BBMM_ALIGN=$a $T python3 -m bbmm run polybench/$p.c --devices 1 --no-progress "$@" 2>&1 | first
}
for p in "heat2d tsteps n=12288 20 220" "fdtd2d tmax nx=10240 20 220" "heat3d tsteps n=512 10 110"; do
  set -- $p
  prog=$1 steps=$2 size=$3 short=$4 long=$5
  extra=""; [ $prog = fdtd2d ] && extra="--param ny=10240"
  run 32 $prog --param $size $extra --param $steps=2 > /dev/null   # build the kernels
  run 1 $prog --param $size $extra --param $steps=2 > /dev/null
  for round in 1 2; do
    for a in 1 32; do
      echo "== $prog align=$a round $round"
      run $a $prog --param $size $extra --param $steps=$short
      run $a $prog --param $size $extra --param $steps=$long
    done
  done
done
for round in 1 2; do
  for a in 1 32; do
    echo -n "== lu 8192 align=$a round $round: "; run $a lu --param n=8192
  done
done
echo "== target 2, one GPU (aligned)"
timeout 200 python3 scripts/baselines/compare.py --preset paper --devices 1 --repeat 1 --out $OUT/r/compare_paper.json 2>&1 | grep -v Warn | grep -v 'lambda: self' | tail -5
for p in "heat2d --param tsteps=7 --param n=1000" "fdtd2d --param tmax=6 --param nx=999 --param ny=777" "heat3d --param tsteps=5 --param n=101" "lu --param n=333" "floyd --param n=299" "mvt --param m=1001 --param n=999" "adi --param tsteps=3 --param n=301" "matmul --param ni=300 --param nj=301 --param nk=302"; do
  set -- $p
  for d in 1 2; do
    echo -n "== check $p devices=$d: "; $T python3 -m bbmm run polybench/$1.c --check --devices $d --no-progress "${@:2}" 2>&1 | first
  done
done
cd $OUT && tar czf r.tgz r && rm -rf r

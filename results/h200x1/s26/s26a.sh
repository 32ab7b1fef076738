#!/bin/bash
# session 26, device call A: rows writing the flow-out first (change 52, $BBMM_EDGE) on one
# H200 split into two logical devices (two queues and pools, data between them through the
# host as between two GPUs; no two-GPU machine was lent). Steady time per step of heat2d,
# fdtd2d, heat3d = (t(long) - t(short)) / extra steps, BBMM_EDGE=0 and 1 alternating, two
# rounds; 1 device for reference; device timelines of heat2d both ways; checks.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
T="timeout 100"
mkdir -p $OUT/r
first() { grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z0-9]*:'; }
run() {  # edge devices program params...
  local e=$1 d=$2 p=$3; shift 3
  BBMM_EDGE=$e $T python3 -m bbmm run polybench/$p.c --devices $d --no-progress "$@" 2>&1 | first
}
for p in "heat2d tsteps n=12288 20 220" "fdtd2d tmax nx=10240 20 220" "heat3d tsteps n=512 10 110"; do
  set -- $p
  prog=$1 steps=$2 size=$3 short=$4 long=$5
  extra=""; [ $prog = fdtd2d ] && extra="--param ny=10240"
  run 1 1 $prog --param $size $extra --param $steps=2 > /dev/null   # build the kernels
  for round in 1 2; do
    for d in 1 2; do
      for e in 0 1; do
        [ $d = 1 ] && [ $e = 0 ] && continue
        echo "== $prog devices=$d edge=$e round $round"
        run $e $d $prog --param $size $extra --param $steps=$short
        run $e $d $prog --param $size $extra --param $steps=$long
      done
    done
  done
done
for e in 0 1; do
  echo "== heat2d timeline edge=$e"
  BBMM_EDGE=$e $T python3 -m bbmm run polybench/heat2d.c --devices 2 --no-progress --param n=12288 --param tsteps=40 --profile $OUT/r/heat2d_e$e.json --json $OUT/r/heat2d_e$e.run.json 2>&1 | first
done
for p in "heat2d --param tsteps=7 --param n=1000" "fdtd2d --param tmax=6 --param nx=999 --param ny=777" "heat3d --param tsteps=5 --param n=101"; do
  set -- $p
  for d in 2 3; do
    echo -n "== check $p devices=$d: "; $T python3 -m bbmm run polybench/$1.c --check --devices $d --no-progress --json $OUT/r/chk.json "${@:2}" 2>&1 | first
    python3 -c "import json; d=json.load(open('$OUT/r/chk.json')); print('   edge-first tiles', d['edge_first_tiles'], 'check', d['check'])"
  done
done
cd $OUT && tar czf r.tgz r && rm -rf r

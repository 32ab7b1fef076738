#!/bin/bash
# session 20, device call B: fdtd2d and adi at paper sizes on one H200, new (dd628ca) and
# old (a04d3f8) side by side: steady time per step = (t(long) - t(short)) / extra steps
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
T="timeout 120"
run() {  # version program devices params...
  local v=$1 p=$2 nd=$3; shift 3
  local d=.; [ $v = old ] && d=old
  (cd $d && PYTHONPATH=/tmp/site:$PWD $T python3 -m bbmm run polybench/$p.c --devices $nd "$@" --no-progress 2>&1 | grep -v Warn | head -4)
}
for v in new old; do run $v fdtd2d 1 --param tmax=5 --param nx=2048 --param ny=2048 | head -1; done
for r in 1 2; do
  for v in new old; do
    for tm in 50 250; do
      echo "== $v fdtd2d tmax=$tm round $r"; run $v fdtd2d 1 --param tmax=$tm --param nx=10240 --param ny=10240
    done
    for ts in 10 40; do
      echo "== $v adi tsteps=$ts round $r"; run $v adi 1 --param tsteps=$ts --param n=8192
    done
  done
done

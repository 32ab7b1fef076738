#!/bin/bash
# session 26, device call C: host copies without enqueue_copy's dispatch and small
# read-ins on the queue (this tree) against the code before them (.wt/pre, commit
# a7a346c), alternating: Floyd n=4096 on two logical devices (host-bound), Floyd n=16384
# on two logical devices, LU n=8192 on one device; heat2d steady per step; checks.
. .whl/activate.sh || exit 1
T="timeout 150"
first() { grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z0-9]*:'; }
run() {  # tree args...
  local d=$1; shift
  (cd $d && PYTHONPATH=/tmp/site:$PWD $T python3 -m bbmm run "$@" --no-progress 2>&1 | first)
}
for r in 1 2 3; do
  for v in pre new; do
    d=.; [ $v = pre ] && d=.wt/pre
    echo -n "== floyd 4096 x2 $v round $r: "; run $d polybench/floyd.c --param n=4096 --devices 2
    echo -n "== lu 8192 x1 $v round $r: "; run $d polybench/lu.c --param n=8192 --devices 1
  done
done
for r in 1 2; do
  for v in pre new; do
    d=.; [ $v = pre ] && d=.wt/pre
    echo -n "== floyd 16384 x2 $v round $r: "; run $d polybench/floyd.c --param n=16384 --devices 2
    for ts in 20 220; do
      echo -n "== heat2d tsteps=$ts x2 $v round $r: "; run $d polybench/heat2d.c --param n=12288 --param tsteps=$ts --devices 2
    done
  done
done
for p in "floyd --param n=1000" "lu --param n=777" "heat2d --param tsteps=5 --param n=999" "mvt --param m=3000 --param n=2000"; do
  set -- $p
  for dv in 1 2; do
    echo -n "== check $p devices=$dv: "; $T env PYTHONPATH=/tmp/site:$PWD python3 -m bbmm run polybench/$1.c "${@:2}" --devices $dv --check --no-progress 2>&1 | first
  done
done
echo -n "== check mvt under a cap: "; $T env PYTHONPATH=/tmp/site:$PWD python3 -m bbmm run polybench/mvt.c --param m=3000 --param n=2000 --devices 2 --device-mem 8MiB --check --no-progress 2>&1 | first

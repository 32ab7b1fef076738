#!/bin/bash
# session 26, device call D: which of call C's two changes moved Floyd: this tree and
# .wt/pre (a7a346c), each with read-ins on the side queue as by default and with
# BBMM_SIDE=0 (every read-in on the device's queue), alternating.
. .whl/activate.sh || exit 1
T="timeout 150"
first() { grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z0-9]*:'; }
run() {  # tree side args...
  local d=$1 s=$2; shift 2
  (cd $d && BBMM_SIDE=$s PYTHONPATH=/tmp/site:$PWD $T python3 -m bbmm run "$@" --no-progress 2>&1 | first)
}
for n in 4096 16384; do
  rounds="1 2 3"; [ $n = 16384 ] && rounds="1 2"
  for r in $rounds; do
    for v in pre new; do
      d=.; [ $v = pre ] && d=.wt/pre
      for s in 1 0; do
        echo -n "== floyd $n x2 $v side=$s round $r: "; run $d $s polybench/floyd.c --param n=$n --devices 2
      done
    done
  done
done

#!/bin/bash
# session 27, device call A: where Floyd's host time goes with real OpenCL calls on two
# logical devices (finding 53): pyopencl call costs alone (call_probe.py), whole runs with
# and without the side queue, cProfile with C calls listed, dry host work.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
T="timeout 150"
first() { grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z0-9]*:'; }
FL="polybench/floyd.c --param n=4096 --devices 2 --no-progress"
echo "== call costs"; $T python3 results/h200x1/s27/call_probe.py 2>&1 | grep -v Warn
for r in 1 2; do
  echo -n "== floyd round $r: "; $T python3 -m bbmm run $FL 2>&1 | first
  echo -n "== floyd BBMM_SIDE=0 round $r: "; BBMM_SIDE=0 $T python3 -m bbmm run $FL 2>&1 | first
done
echo "== floyd profile"
$T python3 -m cProfile -s tottime -m bbmm run $FL 2>&1 | grep -v Warn | grep -v 'lambda: self' | head -75
echo "== dry"
$T python3 scripts/bench_host.py --programs floyd --devices 1,2 --sizes paper --param floyd:n=4096 --repeat 3 2>&1 | grep -v Warn | tail -3

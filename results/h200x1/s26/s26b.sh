#!/bin/bash
# session 26, device call B: where the host's time goes with real OpenCL calls. LU n=8192 on
# one device (host-bound: GPU busy ~28% in session 24) and Floyd n=4096 on two logical
# devices (GPU work ~35 us per k, so the run time per k is the host's): whole runs, then
# the same under cProfile (top functions by own time), then the dry host work (bench_host).
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
T="timeout 150"
first() { grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z0-9]*:'; }
LU="polybench/lu.c --param n=8192 --devices 1 --no-progress"
FL="polybench/floyd.c --param n=4096 --devices 2 --no-progress"
for r in 1 2; do
  echo -n "== lu round $r: "; $T python3 -m bbmm run $LU 2>&1 | first
  echo -n "== floyd round $r: "; $T python3 -m bbmm run $FL 2>&1 | first
done
echo "== lu profile"
$T python3 -m cProfile -s tottime -m bbmm run $LU 2>&1 | grep -v Warn | grep -v 'lambda: self' | head -45
echo "== floyd profile"
$T python3 -m cProfile -s tottime -m bbmm run $FL 2>&1 | grep -v Warn | grep -v 'lambda: self' | head -45
echo "== dry"
$T python3 scripts/bench_host.py --programs lu,floyd --devices 1,2 --sizes paper --param lu:n=8192 --param floyd:n=4096 --repeat 2 2>&1 | grep -v Warn | tail -5

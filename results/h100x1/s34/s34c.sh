#!/bin/bash
# session 34, calls C and D: as call B, after constant boxes are no longer freed per iteration
# (boxes.py: the break flag's box, so heat_break replays) and the host asks for the flag
# without waiting (Runtime.stopped; call D: waited for 4 iterations later). Call B: a time loop that breaks on convergence stops on the host
# (Runtime.stopped); converge.c at tmax 100 / 1000 with a tol it reaches early, and the
# cost of a break that never happens (heat_break.c against heat_plain.c, 8192^2, 100
# steps, 1 and 2 logical devices, alternating, three rounds).
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
S=results/h100x1/s34
date +%T
for tm in 100 1000; do
  for rep in 1 2; do
    r=$(python3 -m bbmm run tests/kernels/converge.c --param n=256 --param tmax=$tm --param tol=0.05 --devices 1 --no-progress 2>&1 | grep -m1 'converge:')
    echo "converge n=256 tmax=$tm tol=0.05 rep $rep: $r"
  done
done
python3 -m bbmm run tests/kernels/converge.c --param n=256 --param tmax=1000 --param tol=0.05 --devices 2 --check --no-progress 2>&1 | grep -v Warn | grep -m1 'check'
for d in 1 2; do
  for rep in 1 2 3; do
    for f in heat_break heat_plain; do
      r=$(python3 -m bbmm run $S/$f.c --param tsteps=100 --param n=8192 --devices $d --no-progress 2>&1 | grep -m1 'heat:')
      echo "$f d=$d rep $rep: $r"
    done
  done
done
python3 -m bbmm run $S/heat_break.c --param tsteps=5 --param n=1000 --devices 2 --check --no-progress 2>&1 | grep -v Warn | grep -m1 'check'
date +%T

#!/bin/bash
# session 38, two H100s (nvidia-h100-x2). One part per device call:
#   a: change 60 (host-work cuts of session 37) beside the code before it (.wt/pre37,
#      7011bcb, carried): Floyd n=16384 and LU n=8192 on two GPUs as standalone runs,
#      alternating; the in-process slowdown of compare.py diagnosed (inproc.py);
#      target 1 on two GPUs (bench_floor.py, Floyd only)
#   b: Floyd n=16384 on two GPUs with every command profiled (the timeline comes back:
#      scripts/timeline.py floyd2.json), then under cProfile; the rest of the --check
#      programs on two GPUs (checks2.py from program 33 on)
#   d: where Floyd's host time per k goes on this host: bench_host.py (dry devices: the
#      runtime's Python alone) and whole runs at n=4096 (GPU work negligible: the wall is
#      the host's), this code against .wt/pre37 alternating; the cost of each pyopencl
#      call (results/h200x1/s27/call_probe.py)
#   e: host copies' events held until done (change 61, this tree) against the code before
#      (.wt/head, 4168a82, carried), alternating: Floyd n=16384 and LU n=8192 on two GPUs,
#      Floyd profiled once more; then target 1 on two GPUs (bench_floor.py, both programs).
#      Ran twice: with change 61 alone, then with change 62 (pending-copy records pruned
#      by bisection) too, which also ran callcost.py at n=16384
#   f: changes 61-62 (this tree, status queries by bisection) against .wt/head (4168a82),
#      alternating: Floyd n=16384 and LU n=8192 on two GPUs; target 2 on two GPUs
#      (compare.py --preset paper)
#   c: target 5 on one GPU (box-in/box-out under a 2.5 GiB cap)
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
part=${1:-a}
echo "# part $part, $(date +%F' '%T), $(git rev-parse --short HEAD 2>/dev/null)"
nvidia-smi --query-gpu=index,name,memory.used --format=csv,noheader
quiet() { grep -v Warn | grep -v 'lambda: self'; }
# alternate OTHER TIMEOUT: Floyd n=16384 and LU n=8192 on two GPUs as whole runs, this tree
# and the tree OTHER one after the other, twice
alternate() {
  for rep in 1 2; do
    for tree in . $1; do
      for prog in floyd:16384 lu:8192; do
        (cd $tree && PYTHONPATH=/tmp/site:$PWD timeout $2 python3 -m bbmm run polybench/${prog%%:*}.c --param n=${prog#*:} --devices 2 --no-progress 2>&1 | quiet | grep -a -m1 "${prog%%:*}:" | sed "s|^|$tree rep $rep: |")
      done
    done
  done
}
if [ "$part" = "a" ]; then
  alternate .wt/pre37 60
  echo "## in-process slowdown"
  timeout 150 python3 results/h100x2/s38/inproc.py 16384 2 2>&1 | quiet
  echo "## target 1, floyd, 2 GPUs"
  timeout 120 python3 scripts/bench_floor.py --heat2d 0 --devices 2 --repeat 2 --json $OUT/floor2.json 2>&1 | quiet | tail -4
fi
if [ "$part" = "b" ]; then
  echo "## floyd n=16384, 2 GPUs, profiled"
  timeout 60 python3 -m bbmm run polybench/floyd.c --param n=16384 --devices 2 --no-progress --profile $OUT/floyd2.json 2>&1 | quiet | tail -12
  gzip $OUT/floyd2.json
  echo "## floyd n=16384, 2 GPUs, cProfile"
  timeout 60 python3 -m cProfile -s tottime -m bbmm run polybench/floyd.c --param n=16384 --devices 2 --no-progress 2>&1 | quiet | head -45
  echo "## checks on 2 GPUs, from program 33"
  FROM=32 timeout 200 python3 results/h200x2/s33/checks2.py 2 2>&1 | grep 'rc=\|error\|check fail\|checks:'
fi
if [ "$part" = "d" ]; then
  for rep in 1 2; do
    for tree in . .wt/pre37; do
      (cd $tree && export PYTHONPATH=/tmp/site:$PWD
       timeout 60 python3 scripts/bench_host.py --programs floyd,lu --devices 1,2 --param floyd:n=4096 --param lu:n=2048 --repeat 3 2>&1 | quiet | tail -4 | sed "s|^|$tree rep $rep dry: |"
       for d in 1 2; do timeout 60 python3 -m bbmm run polybench/floyd.c --param n=4096 --devices $d --no-progress 2>&1 | quiet | grep -a -m1 "floyd:" | sed "s|^|$tree rep $rep: |"; done)
    done
  done
  echo "## call costs"
  timeout 60 python3 results/h200x1/s27/call_probe.py 2>&1 | quiet | head -14
fi
if [ "$part" = "e" ]; then
  alternate .wt/head 60
  echo "## floyd n=16384, 2 GPUs, profiled"
  timeout 60 python3 -m bbmm run polybench/floyd.c --param n=16384 --devices 2 --no-progress --profile $OUT/floyd2.json 2>&1 | quiet | head -3
  gzip $OUT/floyd2.json
  echo "## host time per k"
  timeout 60 python3 results/h100x2/s38/callcost.py 16384 2 2>&1 | quiet | head -4
  echo "## target 1, 2 GPUs"
  timeout 200 python3 scripts/bench_floor.py --devices 2 --repeat 2 --json $OUT/floor2.json 2>&1 | quiet | tail -4
fi
if [ "$part" = "f" ]; then
  alternate .wt/head 40
  echo "## target 2, 2 GPUs"
  timeout 180 python3 scripts/baselines/compare.py --preset paper --devices 2 --repeat 1 --out $OUT/compare2.json 2>&1 | quiet | tail -6
fi
if [ "$part" = "c" ]; then
  echo "## target 5, one GPU"
  timeout 420 python3 scripts/exp_boxinout.py --device-mem 2.5GiB --devices 1 --factors 0.5,5 --programs matmul,blackscholes,mvt --repeat 1 --warmup 1 --no-plot --out $OUT/bio 2>&1 | quiet | tail -9
fi
echo "# done $(date +%T)"

#!/bin/bash
# session 33, two H200s (nvidia-h200-x2), final code of session 32 (d74e98c) and, for
# change 55, the code before it (54fc5f6, carried as .wt/pre). One part per device call:
#   a: target 1 (steady time per iteration against the floor), change 52 (BBMM_EDGE=0/1),
#      change 55 (Floyd and LU, code before and now)
#   b: target 4 (data scaling, stencils steady, mvt, blackscholes), target 3 (Table IV),
#      target 2 (hand-written comparison)
#   c: checks on two real GPUs (tests/e2e/test_run.py programs under tight caps),
#      data scaling of every program at paper sizes
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
part=${1:-a}
echo "# part $part, $(date +%F' '%T), $(git rev-parse --short HEAD 2>/dev/null)"
nvidia-smi --query-gpu=index,name,memory.used --format=csv,noheader
if [ "$part" = "a" ]; then
  timeout 200 python3 scripts/bench_floor.py --devices 2 --repeat 2 --json $OUT/floor2.json
  for e in 0 1; do
    echo "## BBMM_EDGE=$e"
    BBMM_EDGE=$e timeout 90 python3 scripts/bench_floor.py --floyd 0 --devices 2 --repeat 2
  done
  for side in pre now; do
    echo "## change 55: Floyd n=16384, code $side"
    if [ $side = pre ]; then d=.wt/pre; else d=.; fi
    (cd $d && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 scripts/bench_floor.py --heat2d 0 --devices 2 --repeat 2 | tail -2)
    for rep in 1 2; do
      (cd $d && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 -m bbmm run polybench/lu.c --param n=8192 --devices 2 --no-progress 2>&1 | grep -m1 'lu:' | sed "s/^/$side LU n=8192 rep $rep: /")
    done
  done
fi
if [ "$part" = "b" ]; then
  timeout 240 python3 scripts/exp_datascaling.py --sizes paper --programs heat2d,fdtd2d,heat3d,mvt,blackscholes --param heat2d:tsteps=200 --param fdtd2d:tmax=200 --param heat3d:tsteps=200 --devices 1,2 --repeat 1 --warmup 1 --no-plot --out $OUT/ds
  timeout 150 python3 scripts/exp_table4.py --sizes paper --devices 2 --repeat 1 --warmup 0 --no-plot
  timeout 150 python3 scripts/baselines/compare.py --preset paper --devices 2 --repeat 1 --out $OUT/compare_paper2.json
  for rep in 1 2; do for e in 1 0; do
    echo "## BBMM_EDGE=$e rep $rep"
    BBMM_EDGE=$e timeout 60 python3 scripts/bench_floor.py --floyd 0 --devices 2 --repeat 3 | tail -1
  done; done
fi
if [ "$part" = "c" ]; then
  timeout 300 python3 results/h200x1/s21/checks.py 2>&1 | grep -v Warn | grep -v 'lambda: self' | grep 'rc=\|checks:'
  timeout 270 python3 scripts/exp_datascaling.py --sizes paper --devices 1,2 --repeat 1 --warmup 0 --no-plot --out $OUT/dsall
fi
if [ "$part" = "d" ]; then
  # heat2d on two GPUs: session 25's code (5b5b3a1, .wt/s25) beside this code, with and
  # without change 52's split, alternating; then a timeline of each
  for rep in 1 2; do
    for v in s25 now now0; do
      d=.; e=""; [ $v = s25 ] && d=.wt/s25; [ $v = now0 ] && e=0
      echo "## $v rep $rep"
      (cd $d && PYTHONPATH=/tmp/site:$PWD BBMM_EDGE=$e timeout 60 python3 scripts/bench_floor.py --floyd 0 --devices 2 --repeat 3 | tail -1)
    done
  done
  for v in s25 now now0; do
    d=.; e=""; [ $v = s25 ] && d=.wt/s25; [ $v = now0 ] && e=0
    (cd $d && PYTHONPATH=/tmp/site:$PWD BBMM_EDGE=$e timeout 60 python3 -m bbmm run polybench/heat2d.c --param tsteps=100 --param n=12288 --devices 2 --no-progress --profile $OUT/h2_$v.json 2>&1 | grep -m1 heat2d: | sed "s/^/$v: /")
  done
fi
if [ "$part" = "e" ]; then
  # the final code (BBMM_EDGE off by default): two-GPU host bandwidth, target 1, target 4
  # (stencils steady), checks on two real GPUs
  timeout 60 python3 results/h200x2/s33/host_bw.py
  timeout 150 python3 scripts/bench_floor.py --devices 2 --repeat 3 --json $OUT/floor2e.json | tail -3
  timeout 200 python3 scripts/exp_datascaling.py --sizes paper --programs heat2d,fdtd2d,heat3d,mvt,blackscholes --param heat2d:tsteps=200 --param fdtd2d:tmax=200 --param heat3d:tsteps=200 --devices 1,2 --repeat 1 --warmup 1 --no-plot --out $OUT/ds
  timeout 150 python3 results/h200x1/s21/checks.py 2>&1 | grep -v Warn | grep -v 'lambda: self' | grep 'rc=\|checks:'
fi
if [ "$part" = "f" ]; then
  # call E's refusals on one GPU with their reasons, then every check on two GPUs
  ONLY=blackscholes,imperfect,pointer_result,redblack,decimate,argmax,upwind,helper_words timeout 60 python3 results/h200x2/s33/checks2.py 1 2>&1 | grep 'rc=\|error\|check \|checks:'
  timeout 240 python3 results/h200x2/s33/checks2.py 2 2>&1 | grep 'rc=\|error\|check fail\|checks:'
fi
if [ "$part" = "g" ]; then
  # target 4 steady: per-step time without the first read-in and last write-out (runs 300
  # steps apart), stencils at paper sizes; Floyd's steady k once more
  timeout 200 python3 scripts/exp_datascaling.py --sizes paper --programs heat2d,fdtd2d,heat3d --param heat2d:tsteps=20 --param fdtd2d:tmax=20 --param heat3d:tsteps=20 --steady 300 --devices 1,2 --repeat 2 --warmup 1 --no-plot --out $OUT/dss
  timeout 100 python3 scripts/bench_floor.py --heat2d 0 --devices 2 --repeat 3 | tail -2
fi
echo "# done $(date +%T)"

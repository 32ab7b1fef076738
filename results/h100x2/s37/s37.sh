#!/bin/bash
# session 37, two H100s (nvidia-h100-x2). One part per device call:
#   a: the code as session 35 left it (7011bcb): host link of both GPUs, target 1 (floor,
#      1 and 2 GPUs), target 2 (hand-written comparison, 1 and 2 GPUs), target 4 steady
#      (stencils, runs 300 steps apart) and whole runs, target 3 (Table IV, 2 GPUs),
#      Floyd n=16384 on 2 GPUs under cProfile (where the host's time per k goes); the
#      two-GPU parts of targets 1 and 2 were cut by their timeouts (1 GPU took them)
#   b: the same code: target 1 and 2 on two GPUs alone, target 3 (Table IV, 2 GPUs)
#   c: target 4 steady with rows writing the flow-out first (BBMM_EDGE=1) against without
#      (heat3d's halo is a 645^2 plane), target 5 (one GPU), target 6, blackscholes on two
#      GPUs beside the hand-written code three times, every --check program on two GPUs
#   d: a process per GPU: Floyd n=16384 and LU n=8192 as one process over two GPUs against
#      two MPI ranks of one GPU each (mpiexec -n 2 ... --mpi --devices 1; the mpi4py and
#      mpich wheels carried in .whl, libmpi unpacked from the wheel's data), alternating
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
part=${1:-a}
echo "# part $part, $(date +%F' '%T), $(git rev-parse --short HEAD 2>/dev/null)"
nvidia-smi --query-gpu=index,name,memory.used --format=csv,noheader
quiet() { grep -v Warn | grep -v 'lambda: self'; }
if [ "$part" = "a" ]; then
  nvidia-smi topo -m | head -4
  timeout 40 python3 results/h200x2/s33/host_bw.py
  echo "## target 1"
  timeout 150 python3 scripts/bench_floor.py --devices 1,2 --repeat 2 --json $OUT/floor.json 2>&1 | quiet | tail -6
  echo "## target 2"
  timeout 150 python3 scripts/baselines/compare.py --preset paper --devices 1,2 --repeat 1 --out $OUT/compare.json 2>&1 | quiet | tail -12
  echo "## target 4 steady"
  timeout 120 python3 scripts/exp_datascaling.py --sizes paper --programs heat2d,fdtd2d,heat3d --param heat2d:tsteps=20 --param fdtd2d:tmax=20 --param heat3d:tsteps=20 --steady 300 --devices 1,2 --repeat 2 --warmup 1 --no-plot --out $OUT/dss 2>&1 | quiet | tail -12
  echo "## floyd n=16384, 2 GPUs, cProfile"
  timeout 60 python3 -m cProfile -s tottime -m bbmm run polybench/floyd.c --param n=16384 --devices 2 --no-progress 2>&1 | quiet | head -40
fi
if [ "$part" = "b" ]; then
  echo "## target 1, 2 GPUs"
  timeout 170 python3 scripts/bench_floor.py --devices 2 --repeat 2 --json $OUT/floor2.json 2>&1 | quiet | tail -4
  echo "## target 2, 2 GPUs"
  timeout 170 python3 scripts/baselines/compare.py --preset paper --devices 2 --repeat 1 --out $OUT/compare2.json 2>&1 | quiet | tail -8
  echo "## target 3, Table IV on 2 GPUs"
  timeout 200 python3 scripts/exp_table4.py --sizes paper --devices 2 --repeat 1 --warmup 0 --no-plot 2>&1 | quiet | tail -16
fi
if [ "$part" = "c" ]; then
  for e in 1 0; do
    echo "## target 4 steady, BBMM_EDGE=$e"
    BBMM_EDGE=$e timeout 110 python3 scripts/exp_datascaling.py --sizes paper --programs heat2d,fdtd2d,heat3d --param heat2d:tsteps=20 --param fdtd2d:tmax=20 --param heat3d:tsteps=20 --steady 300 --devices 1,2 --repeat 2 --warmup 1 --no-plot --out $OUT/dss$e 2>&1 | quiet | tail -9 | head -7
  done
  echo "## target 5, one GPU"
  timeout 130 python3 scripts/exp_boxinout.py --device-mem 2.5GiB --devices 1 --factors 0.5,5 --programs matmul,blackscholes,mvt --repeat 1 --warmup 1 --no-plot --out $OUT/bio 2>&1 | quiet | tail -9
  echo "## target 6"
  timeout 40 python3 scripts/bench_pool.py --json $OUT/pool.json 2>&1 | quiet | tail -12
  echo "## blackscholes, 2 GPUs, repeat 3"
  timeout 60 python3 scripts/baselines/compare.py --preset paper --programs blackscholes --devices 2 --repeat 3 2>&1 | quiet | tail -3
  echo "## checks on 2 GPUs"
  timeout 120 python3 results/h200x2/s33/checks2.py 2 2>&1 | grep 'rc=\|error\|check fail\|checks:'
fi
if [ "$part" = "d" ]; then
  mkdir -p /tmp/site/lib
  python3 - <<'PY'
import glob, os, zipfile
z = zipfile.ZipFile(glob.glob('.whl/mpich-*.whl')[0])
for n in z.namelist():  # the wheel's libraries (pip --target leaves its data/lib out)
    if '/data/lib/' in n and not n.endswith('/') and z.getinfo(n).file_size > 4096:
        out = '/tmp/site/lib/' + n.split('/data/lib/', 1)[1]
        os.makedirs(os.path.dirname(out), exist_ok=True)
        open(out, 'wb').write(z.read(n))
PY
  ls -R /tmp/site/lib | head -5
  export LD_LIBRARY_PATH=/tmp/site/lib MPI4PY_LIBMPI=/tmp/site/lib/libmpi.so.12  # the machine has an Open MPI of its own
  chmod +x /tmp/site/bin/* 2>/dev/null
  for rep in 1 2; do
    echo "## rep $rep"
    timeout 45 python3 -m bbmm run polybench/floyd.c --param n=16384 --devices 2 --no-progress 2>&1 | quiet | grep -a -m1 'floyd:' | sed 's/^/one process: /'
    timeout 60 /tmp/site/bin/mpiexec -n 2 python3 -m bbmm run polybench/floyd.c --param n=16384 --devices 1 --mpi --no-progress 2>&1 | quiet | head -4 | sed 's/^/two ranks: /'
  done
  timeout 30 python3 -m bbmm run polybench/lu.c --param n=8192 --devices 2 --no-progress 2>&1 | quiet | grep -a -m1 'lu:' | sed 's/^/one process: /'
  timeout 45 /tmp/site/bin/mpiexec -n 2 python3 -m bbmm run polybench/lu.c --param n=8192 --devices 1 --mpi --no-progress 2>&1 | quiet | head -4 | sed 's/^/two ranks: /'
fi
echo "# done $(date +%T)"

#!/bin/bash
# session 20, device call D (final code): the host's own work per serial iteration on the
# H200 machine's host, dry devices (bench_host.py), 1 and 2 devices, paper sizes
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
timeout 500 python3 scripts/bench_host.py --programs floyd,heat2d,fdtd2d,heat3d,lu,adi,mvt \
  --devices 1,2 --sizes paper --param heat2d:tsteps=100 --param fdtd2d:tmax=100 \
  --param heat3d:tsteps=100 --param adi:tsteps=50 --repeat 1 --json $OUT/host_paper.json 2>&1 | grep -v Warn

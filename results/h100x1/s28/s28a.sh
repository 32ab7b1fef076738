#!/bin/bash
# session 28, device call A (ran on an H100, the kind lent): the rest of PolyBench/C 4.2 (tests/kernels/pb42) and the
# kernels of loops counting down / below 0 checked against the C program on NVIDIA's
# OpenCL, on 1 and 2 logical devices of one GPU, at odd sizes a few hundred to a few
# thousand wide (each run's line: tiles, wall time, check).
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
run() {  # file, params...
  f=$1; shift
  for d in 1 2; do
    p=""; for x in "$@"; do p="$p --param $x"; done
    r=$(timeout 120 python3 -m bbmm run $f $p --devices $d --check --no-progress 2>&1 | grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z0-9_]*:\|error')
    echo "$(basename $f .c) d=$d: $r"
  done
}
K=tests/kernels/pb42
run $K/2mm.c ni=801 nj=899 nk=1003 nl=1101
run $K/3mm.c ni=801 nj=899 nk=1003 nl=1101 nm=1203
run $K/atax.c m=1901 n=2103
run $K/bicg.c m=1901 n=2103
run $K/cholesky.c n=203
run $K/correlation.c m=1201 n=1401 float_n=1401
run $K/covariance.c m=1201 n=1401 float_n=1401
run $K/doitgen.c nr=51 nq=61 np=127   # nps in session 28 (np was refused then)
run $K/durbin.c n=501
run $K/gemver.c n=2003
run $K/gesummv.c n=2003
run $K/gramschmidt.c m=301 n=251
run $K/jacobi1d.c tsteps=101 n=20003
run $K/ludcmp.c n=301
run $K/nussinov.c n=181
run $K/seidel2d.c tsteps=3 n=101
run $K/symm.c m=401 n=503
run $K/syr2k.c n=701 m=603
run $K/syrk.c n=701 m=603
run $K/trmm.c m=401 n=503
run tests/kernels/counting_down.c tsteps=5 n=1001
run tests/kernels/negative_range.c tsteps=5 n=2001

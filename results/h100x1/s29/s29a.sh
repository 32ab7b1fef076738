#!/bin/bash
# session 29, device call A (one H100, the kind lent): scalar expansion on NVIDIA's OpenCL.
# The kernels with carried scalars (tests/kernels/expand, pb42's symm, durbin, gramschmidt,
# ludcmp as PolyBench writes them, deriche) checked against the C program on 1 and 2
# logical devices, each run twice (the first builds the kernels); beside them the same
# programs with the running values kept in array elements (pb42 before this session,
# .wt/old, and .wt/cmp: rowsum and gemm with an array T), same sizes, same call.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
run() {  # label, file, params...
  l=$1; f=$2; shift 2
  p=""; for x in "$@"; do p="$p --param $x"; done
  for d in 1 2; do
    for rep in 1 2; do
      r=$(timeout 200 python3 -m bbmm run $f $p --devices $d --check --no-progress 2>&1 | grep -v Warn | grep -v 'lambda: self' | grep -m1 'check\|error:')
      echo "$l d=$d run $rep: $r"
    done
  done
}
K=tests/kernels/pb42
O=.wt/old/pb42
E=tests/kernels/expand
run symm $K/symm.c m=401 n=503
run symm-arrays $O/symm.c m=401 n=503
run durbin $K/durbin.c n=501
run durbin-arrays $O/durbin.c n=501
run gramschmidt $K/gramschmidt.c m=301 n=251
run gramschmidt-arrays $O/gramschmidt.c m=301 n=251
run ludcmp $K/ludcmp.c n=301
run ludcmp-arrays $O/ludcmp.c n=301
run deriche $K/deriche.c w=2001 h=1503 alpha=0.25
run rowsum $E/rowsum.c n=20011 m=8003
run rowsum-arrays .wt/cmp/rowsum_arr.c n=20011 m=8003
run gemm_c89 $E/gemm_c89.c tsteps=2 ni=1501 nj=1303 nk=1107
run gemm-arrays .wt/cmp/gemm_arr.c tsteps=2 ni=1501 nj=1303 nk=1107
run dot $E/dot.c n=10000003
run prefix $E/prefix.c n=100003
run webs $E/webs.c n=4001 m=3003
run offset $E/offset.c n=801

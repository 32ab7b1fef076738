#!/bin/bash
# measurement batch (not committed)
. .whl/activate.sh
export PYTHONUNBUFFERED=1
R="python3 -m bbmm run --no-progress"
o=$OUT
python3 -m bbmm devices > $o/devices.txt 2>&1
t() { local name=$1; shift; local s=$(date +%s%N); timeout ${TO:-150} "$@" > $o/$name.log 2>&1; local rc=$?; echo "$name rc=$rc $(( ($(date +%s%N) - s) / 1000000 )) ms" | tee -a $o/summary.txt; }
t floyd_d1 $R polybench/floyd.c --param n=16384 --devices 1 --json $o/floyd_n16384_d1.json
t floyd_d2p1 $R polybench/floyd.c --param n=16384 --devices 2 --procs 1 --json $o/floyd_n16384_d2_procs1.json
t floyd_d2p2 $R polybench/floyd.c --param n=16384 --devices 2 --procs 2 --json $o/floyd_n16384_d2_procs2.json
for T in 20 220; do
 t heat_d1_$T $R polybench/heat2d.c --param n=12288 --param tsteps=$T --devices 1 --json $o/heat2d_n12288_t${T}_d1.json
 t heat_d2p1_$T $R polybench/heat2d.c --param n=12288 --param tsteps=$T --devices 2 --procs 1 --json $o/heat2d_n12288_t${T}_d2_procs1.json
 t heat_d2p2_$T $R polybench/heat2d.c --param n=12288 --param tsteps=$T --devices 2 --procs 2 --json $o/heat2d_n12288_t${T}_d2_procs2.json
done
t prof_floyd $R polybench/floyd.c --param n=8192 --devices 2 --procs 2 --profile $o/floyd_n8192_d2_procs2.trace.json.gz --json $o/floyd_n8192_d2_procs2.json
t prof_floyd1 $R polybench/floyd.c --param n=8192 --devices 2 --procs 1 --profile $o/floyd_n8192_d2_procs1.trace.json.gz --json $o/floyd_n8192_d2_procs1.json
for P in 1 2; do
 t lu_d2p$P $R polybench/lu.c --param n=8192 --devices 2 --procs $P --json $o/lu_n8192_d2_procs$P.json
done
t lu_d1 $R polybench/lu.c --param n=8192 --devices 1 --json $o/lu_n8192_d1.json
TO=240 t datascaling python3 scripts/exp_datascaling.py --sizes paper --programs heat2d,fdtd2d,heat3d --param heat2d:tsteps=20 --param fdtd2d:tmax=20 --param heat3d:tsteps=20 --steady 300 --devices 1,2 --repeat 1 --warmup 1 --no-plot --out $o/dss
python3 - <<'PY' >> $o/summary.txt
import json, glob, os
for f in sorted(glob.glob(os.environ["OUT"] + "/*.json")):
    try: d = json.load(open(f))
    except Exception as e: print(f, e); continue
    if "wall_s" in d:
        it = d.get("serial_iterations") or 1
        pr = d.get("per_rank") or []
        extra = " ".join(f"r{p['rank']}:plan={p['time_s']['plan']:.2f},exch={p['time_s']['exchange']:.2f}" for p in pr if 'time_s' in p)
        print(f"{os.path.basename(f):40} wall {d['wall_s']:.3f} s, {1e3*d['wall_s']/it:.4f} ms/iter ({it} iters) {extra}")
PY
cat $o/summary.txt

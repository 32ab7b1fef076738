#!/bin/bash
# session 20, device call A: Floyd's host work on two devices, new (e3a6b1f) and old (a04d3f8)
# side by side: bench_host (DryDevices: the host's own work) and whole runs on 1 and 2
# logical devices of the one GPU (two queues, one context: what the host must hide)
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
T="timeout 100"
$T python3 -m bbmm run polybench/floyd.c --devices 2 --param n=2048 --no-progress 2>&1 | grep -v Warn | head -1
(cd old && PYTHONPATH=/tmp/site:$PWD $T python3 -m bbmm run polybench/floyd.c --devices 2 --param n=2048 --no-progress 2>&1 | grep -v Warn | head -1)
for v in new old; do
  d=.; [ $v = old ] && d=old
  echo "== bench_host $v"
  (cd $d && PYTHONPATH=/tmp/site:$PWD $T python3 scripts/bench_host.py --programs floyd --devices 1,2 --sizes paper --repeat 1 --json $OUT/host_$v.json 2>&1 | grep -v Warn)
done
for n in 8192 16384; do
  for r in 1 2; do
    for v in new old; do
      d=.; [ $v = old ] && d=old
      for nd in 1 2; do
        echo "== run $v n=$n devices=$nd round $r"
        (cd $d && PYTHONPATH=/tmp/site:$PWD $T python3 -m bbmm run polybench/floyd.c --devices $nd --param n=$n --no-progress --json $OUT/run_${v}_${n}_${nd}_$r.json 2>&1 | grep -v Warn | head -4)
      done
    done
  done
done
cd $OUT && tar czf calla.tgz *.json && rm -f *.json

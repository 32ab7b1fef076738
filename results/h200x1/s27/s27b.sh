#!/bin/bash
# session 27, device call B: change 55 (a small read-in behind the device's newest kernel
# on the device's own queue) against the code before it (.wt/pre = 54fc5f6, carried) and
# against BBMM_SIDE=0 (no side queue at all): Floyd on two logical devices (whole runs at
# n=4096 and 2048: per k = difference / 2048), LU n=8192 on one device, timelines of
# Floyd, box-out (target 5) of mvt and blackscholes at 5x, checks.
. .whl/activate.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD
T="timeout 120"
first() { grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z0-9]*:'; }
new() { $T python3 -m bbmm run "$@" 2>&1 | first; }
pre() { (cd .wt/pre && PYTHONPATH=/tmp/site:$PWD $T python3 -m bbmm run "$@" 2>&1 | first); }
mkdir -p $OUT/r
cp polybench/*.c .wt/pre/polybench/ 2>/dev/null
for r in 1 2 3; do
  for n in 4096 2048; do
    FL="polybench/floyd.c --param n=$n --devices 2 --no-progress"
    echo -n "== floyd $n new r$r: "; new $FL
    echo -n "== floyd $n pre r$r: "; pre $FL
    echo -n "== floyd $n side0 r$r: "; BBMM_SIDE=0 new $FL
  done
done
for r in 1 2; do
  LU="polybench/lu.c --param n=8192 --devices 1 --no-progress"
  echo -n "== lu 8192 new r$r: "; new $LU
  echo -n "== lu 8192 pre r$r: "; pre $LU
done
echo "== timelines (floyd n=4096, 2 logical devices)"
new polybench/floyd.c --param n=4096 --devices 2 --no-progress --profile $OUT/r/floyd_new.json
pre polybench/floyd.c --param n=4096 --devices 2 --no-progress --profile $OUT/r/floyd_pre.json
for s in new pre; do echo "-- $s"; python3 scripts/timeline.py $OUT/r/floyd_$s.json --gaps 4 --labels 6 2>&1 | head -40; done
echo "== box-out at 5x: new, then pre"
BIO="--device-mem 2.5GiB --devices 1 --factors 5 --programs mvt,blackscholes --repeat 1 --warmup 1 --no-plot"
$T python3 scripts/exp_boxinout.py $BIO --out $OUT/r/bio_new 2>&1 | grep -v Warn | grep -v 'lambda: self' | tail -4
(cd .wt/pre && PYTHONPATH=/tmp/site:$PWD $T python3 scripts/exp_boxinout.py $BIO --out $OUT/r/bio_pre 2>&1 | grep -v Warn | grep -v 'lambda: self' | tail -4)
echo "== checks"
for spec in "floyd.c --param n=300 --devices 2" "floyd.c --param n=301 --devices 3" "lu.c --param n=300 --devices 2" "lu.c --param n=257 --devices 1"; do
  echo -n "$spec: "; $T python3 -m bbmm run polybench/$spec --check --no-progress 2>&1 | first
done
cd $OUT && tar czf r.tgz r && rm -rf r

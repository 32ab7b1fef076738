#!/bin/bash
# session 26, device call G: change 54 as kept (small read-ins on the queue only for boxes
# of the serial iteration itself) against .wt/pre (a7a346c), alternating: Floyd n=4096 on
# two logical devices (host-bound), three rounds; mvt at 0.5x and 5x the cap, two rounds;
# LU n=8192, two rounds.
. .whl/activate.sh || exit 1
first() { grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z0-9]*:'; }
for r in 1 2 3; do
  for v in pre new; do
    d=.; [ $v = pre ] && d=.wt/pre
    echo -n "== floyd 4096 x2 $v round $r: "
    (cd $d && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 -m bbmm run polybench/floyd.c --param n=4096 --devices 2 --no-progress 2>&1 | first)
    if [ $r != 3 ]; then
      echo -n "== lu 8192 x1 $v round $r: "
      (cd $d && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 -m bbmm run polybench/lu.c --param n=8192 --devices 1 --no-progress 2>&1 | first)
      echo "== mvt boxinout $v round $r"
      (cd $d && PYTHONPATH=/tmp/site:$PWD timeout 140 python3 scripts/exp_boxinout.py --device-mem 2.5GiB --devices 1 --factors 0.5,5 --programs mvt --repeat 1 --warmup 1 --no-plot --out /tmp/bio_$v$r 2>&1 | grep -E '^ +mvt')
    fi
  done
done

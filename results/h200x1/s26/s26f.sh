#!/bin/bash
# session 26, device call F: mvt at 5x the cap, this tree against .wt/pre (a7a346c, before
# change 54 put read-ins under 1 MiB on the device's queue), alternating, two rounds.
. .whl/activate.sh || exit 1
for r in 1 2; do
  for v in pre new; do
    d=.; [ $v = pre ] && d=.wt/pre
    echo "== mvt boxinout $v round $r"
    (cd $d && PYTHONPATH=/tmp/site:$PWD timeout 140 python3 scripts/exp_boxinout.py --device-mem 2.5GiB --devices 1 --factors 0.5,5 --programs mvt --repeat 1 --warmup 1 --no-plot --out /tmp/bio_$v$r 2>&1 | grep -E '^ +mvt')
  done
done

#!/bin/bash
# session 26, device call H: Floyd n=4096 on two logical devices (host-bound), change 54 as
# kept against .wt/pre (a7a346c), alternating, six rounds (call G's host was noisy).
. .whl/activate.sh || exit 1
first() { grep -v Warn | grep -v 'lambda: self' | grep -m1 '^[a-z0-9]*:'; }
for r in 1 2 3 4 5 6; do
  for v in pre new; do
    d=.; [ $v = pre ] && d=.wt/pre
    echo -n "== floyd 4096 x2 $v round $r: "
    (cd $d && PYTHONPATH=/tmp/site:$PWD timeout 100 python3 -m bbmm run polybench/floyd.c --param n=4096 --devices 2 --no-progress 2>&1 | first)
  done
done

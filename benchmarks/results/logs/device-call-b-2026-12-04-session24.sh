#!/bin/bash
# session 24 device call 2: skinny_probe on the build before and after prefetch.tensormap, then the matmul benchmark on the new build
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
i=0; for v in sk24 sk24p sk24 sk24p; do i=$((i+1))
  echo "== $v"; TILEC_CACHE_DIR=$PWD/.carry/$v/cache python3 benchmarks/probe/skinny_probe.py run --json $OUT/skinny-$i-$v.json 2>&1 | grep -v "^$"
done > $OUT/skinny-ab.log
cat $OUT/skinny-ab.log
TILEC_CACHE_DIR=$PWD/.carry/mm24/cache python3 benchmarks/h200_matmul.py run --json $OUT/h200-matmul-session24-a.json > $OUT/h200-matmul-session24-a.log 2>&1
tail -22 $OUT/h200-matmul-session24-a.log

#!/bin/bash
# session 24 device call 3: skinny_probe timing modes (memset / read / small memset / back to back) on the prefetch build
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for i in 1 2; do
TILEC_CACHE_DIR=$PWD/.carry/sk24p/cache python3 benchmarks/probe/skinny_probe.py run --rows 1 --modes flush,read,small,b2b --json $OUT/skinny-modes-$i.json 2>&1 | grep -v "^$"
done | tee $OUT/skinny-modes.log

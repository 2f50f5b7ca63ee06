#!/bin/bash
# session 20 device call 10: main d13866c again (second sample of the same build): the full matmul benchmark
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p $OUT/logs
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mm20/cache timeout 200 python3 benchmarks/h200_matmul.py run --json $OUT/h200-matmul.json 2>&1 | grep -v Warning > $OUT/logs/h200-matmul.log; echo "matmul $(( $(date +%s) - S )) s"; grep -v "OutOfResources" $OUT/logs/h200-matmul.log

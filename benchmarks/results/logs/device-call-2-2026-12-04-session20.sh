#!/bin/bash
# session 20 device call 2: the lagged refill (LAG_MIN_STAGES = 4) - tensor-core checks of every config, the tutorial probe per config, then the full matmul benchmark
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p $OUT/logs
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mma20 timeout 150 python3 scripts/gpu_mma_check.py run --no-timing > $OUT/logs/mma-check.log 2>&1; echo "mma check rc $? $(( $(date +%s) - S )) s: $(tail -n 1 $OUT/logs/mma-check.log)"; grep -i "fail\|wrong" $OUT/logs/mma-check.log | head -5
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/refill/new timeout 150 python3 benchmarks/probe/tutorial_refill.py run --label lag4 --json $OUT/refill-lag4.json 2>&1 | grep -v Warning > $OUT/logs/refill-lag4.log; echo "probe $(( $(date +%s) - S )) s"; cat $OUT/logs/refill-lag4.log
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mm20/cache timeout 330 python3 benchmarks/h200_matmul.py run --json $OUT/h200-matmul.json 2>&1 | grep -v Warning > $OUT/logs/h200-matmul.log; echo "matmul $(( $(date +%s) - S )) s"; cat $OUT/logs/h200-matmul.log

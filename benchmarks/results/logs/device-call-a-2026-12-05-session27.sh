#!/bin/bash
# session 26, device call 6 (carry .carry/mm26e .carry/call26e.sh): the matmul benchmark on the
# compiler with B's TMA copies under an L2 evict-first policy in per-tile K loops (tile-pipeline
# _b_evict_first), run twice.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for r in a b; do
TILEC_CACHE_DIR=$PWD/.carry/mm26e/cache timeout 280 python3 benchmarks/h200_matmul.py run --json $OUT/h200-matmul-$r.json > $OUT/h200-matmul-$r.log 2>&1
echo "matmul $r rc $?"; tail -17 $OUT/h200-matmul-$r.log
done

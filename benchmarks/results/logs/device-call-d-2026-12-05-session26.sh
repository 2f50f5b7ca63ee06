#!/bin/bash
# session 26, device call 5 (carry .carry/mm26-b_first .carry/call26d.sh): the matmul benchmark with
# every tutorial-03 kernel's B TMA loads under an L2 evict_first policy (PTX edits of mm26:
# benchmarks/probe/l2_hints.py .carry/mm26/cache .carry/mm26-b_first/cache b_first mm_tutorial);
# the persistent and fp8 rows are the unedited kernels (a control).
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
TILEC_CACHE_DIR=$PWD/.carry/mm26-b_first/cache timeout 400 python3 benchmarks/h200_matmul.py run --json $OUT/h200-matmul-b_first.json > $OUT/h200-matmul-b_first.log 2>&1
echo "matmul rc $?"; tail -18 $OUT/h200-matmul-b_first.log

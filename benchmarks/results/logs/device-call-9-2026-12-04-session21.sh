#!/bin/bash
# session 21 device call 9 (main 4107cdb + --peer-first): the matmul benchmark with each tutorial-03 row's sweep timing Triton's configs before tilec's, to test whether the sweep's order explains bf16 4096^3 reading under 1.0 in every call
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
L=$OUT/run.log
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mm21/cache timeout 240 python3 benchmarks/h200_matmul.py run --peer-first --json $OUT/h200-matmul.json 2>&1 | grep -v Warning > $OUT/h200-matmul.log; echo "matmul $(( $(date +%s) - S )) s" >> $L
grep -v "OutOfResources" $OUT/h200-matmul.log | tail -40 >> $L

#!/bin/bash
# session 21 device call 7 (main 4f68de1; the benchmark's kernels are a77f25c's, byte for byte in PTX): a third sample of the full matmul benchmark, for the call-to-call spread
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
L=$OUT/run.log
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mm21/cache timeout 240 python3 benchmarks/h200_matmul.py run --json $OUT/h200-matmul.json 2>&1 | grep -v Warning > $OUT/h200-matmul.log; echo "matmul $(( $(date +%s) - S )) s" >> $L
grep -v "OutOfResources" $OUT/h200-matmul.log | tail -40 >> $L

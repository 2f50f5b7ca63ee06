#!/bin/bash
# session 21 device call 5 (main ef24121, compiler as a77f25c): tensor-core checks, the full matmul benchmark, the GPU suite plain and under memcheck
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
L=$OUT/run.log
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mma21 timeout 100 python3 scripts/gpu_mma_check.py run --no-timing > $OUT/mma-check.log 2>&1; echo "mma check rc $? $(( $(date +%s) - S )) s: $(tail -n 1 $OUT/mma-check.log)" >> $L
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mm21/cache timeout 240 python3 benchmarks/h200_matmul.py run --json $OUT/h200-matmul.json 2>&1 | grep -v Warning > $OUT/h200-matmul.log; echo "matmul $(( $(date +%s) - S )) s" >> $L
grep -v "OutOfResources" $OUT/h200-matmul.log | tail -40 >> $L
export TILEC_CACHE_DIR=$PWD/.carry/suite21
S=$(date +%s); timeout 100 python3 scripts/gpu_suite.py run > $OUT/gpu-suite.log 2>&1; echo "suite rc $? $(( $(date +%s) - S )) s: $(grep -c '^PASS' $OUT/gpu-suite.log) PASS; $(tail -n 1 $OUT/gpu-suite.log)" >> $L
grep -A12 "^FAIL" $OUT/gpu-suite.log | head -30 >> $L
S=$(date +%s); timeout 200 compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/gpu_suite.py run > $OUT/gpu-suite-memcheck.log 2>&1; echo "suite memcheck rc $? $(( $(date +%s) - S )) s: $(tail -n 2 $OUT/gpu-suite-memcheck.log | tr '\n' ' ')" >> $L

#!/bin/bash
# session 20 device call 7: main d13866c (the lagged refill for 128x256-class rings): tensor-core checks, the full matmul benchmark, the GPU suite plain and under memcheck
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p $OUT/logs
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mma20 timeout 100 python3 scripts/gpu_mma_check.py run --no-timing > $OUT/logs/mma-check.log 2>&1; echo "mma check rc $? $(( $(date +%s) - S )) s: $(tail -n 1 $OUT/logs/mma-check.log)"
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mm20/cache timeout 200 python3 benchmarks/h200_matmul.py run --json $OUT/h200-matmul.json 2>&1 | grep -v Warning > $OUT/logs/h200-matmul.log; echo "matmul $(( $(date +%s) - S )) s"; grep -v "OutOfResources" $OUT/logs/h200-matmul.log
export TILEC_CACHE_DIR=$PWD/.carry/suite20
S=$(date +%s); timeout 100 python3 scripts/gpu_suite.py run > $OUT/logs/gpu-suite.log 2>&1; echo "suite rc $? $(( $(date +%s) - S )) s: $(grep -c '^PASS' $OUT/logs/gpu-suite.log) PASS; $(tail -n 1 $OUT/logs/gpu-suite.log)"
grep -A12 "^FAIL" $OUT/logs/gpu-suite.log | head -30
S=$(date +%s); timeout 170 compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/gpu_suite.py run > $OUT/logs/gpu-suite-memcheck.log 2>&1; echo "suite memcheck rc $? $(( $(date +%s) - S )) s: $(tail -n 2 $OUT/logs/gpu-suite-memcheck.log | tr '\n' ' ')"

#!/bin/bash
# session 19 device call 6: the GPU suite with its attention case, plain and under the three sanitizers
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TILEC_CACHE_DIR=$PWD/.carry/suite19b
mkdir -p $OUT/logs
S=$(date +%s); timeout 120 python3 scripts/gpu_suite.py run > $OUT/logs/gpu-suite.log 2>&1; echo "suite rc $? $(( $(date +%s) - S )) s: $(grep -c '^PASS' $OUT/logs/gpu-suite.log) PASS; $(tail -n 1 $OUT/logs/gpu-suite.log)"
grep -A12 "^FAIL" $OUT/logs/gpu-suite.log | head -30
for t in memcheck synccheck racecheck; do S=$(date +%s); timeout 200 compute-sanitizer --tool $t --report-api-errors no python3 scripts/gpu_suite.py run > $OUT/logs/gpu-suite-$t.log 2>&1; echo "suite $t rc $? $(( $(date +%s) - S )) s: $(tail -n 2 $OUT/logs/gpu-suite-$t.log | tr '\n' ' ')"; grep "access at" $OUT/logs/gpu-suite-$t.log | grep -v fmha_cutlass | head -3; done

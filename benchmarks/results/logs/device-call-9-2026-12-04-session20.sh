#!/bin/bash
# session 20 device call 9: main d13866c: the GPU suite under synccheck and racecheck
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TILEC_CACHE_DIR=$PWD/.carry/suite20
mkdir -p $OUT/logs
S=$(date +%s); timeout 80 compute-sanitizer --tool synccheck --report-api-errors no python3 scripts/gpu_suite.py run > $OUT/logs/gpu-suite-synccheck.log 2>&1; echo "suite synccheck rc $? $(( $(date +%s) - S )) s: $(tail -n 2 $OUT/logs/gpu-suite-synccheck.log | tr '\n' ' ')"
S=$(date +%s); timeout 360 compute-sanitizer --tool racecheck --report-api-errors no python3 scripts/gpu_suite.py run > $OUT/logs/gpu-suite-racecheck.log 2>&1; echo "suite racecheck rc $? $(( $(date +%s) - S )) s: $(tail -n 2 $OUT/logs/gpu-suite-racecheck.log | tr '\n' ' ')"; grep "access at" $OUT/logs/gpu-suite-racecheck.log | grep -v fmha_cutlass | head -3; grep -c "fmha_cutlass" $OUT/logs/gpu-suite-racecheck.log

#!/bin/bash
# session 21 device call 6 (main ef24121, compiler as a77f25c): the GPU suite under synccheck and racecheck
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TILEC_CACHE_DIR=$PWD/.carry/suite21
L=$OUT/run.log
S=$(date +%s); timeout 100 compute-sanitizer --tool synccheck --report-api-errors no python3 scripts/gpu_suite.py run > $OUT/gpu-suite-synccheck.log 2>&1; echo "suite synccheck rc $? $(( $(date +%s) - S )) s: $(tail -n 2 $OUT/gpu-suite-synccheck.log | tr '\n' ' ')" >> $L
S=$(date +%s); timeout 380 compute-sanitizer --tool racecheck --report-api-errors no python3 scripts/gpu_suite.py run > $OUT/gpu-suite-racecheck.log 2>&1; echo "suite racecheck rc $? $(( $(date +%s) - S )) s: $(tail -n 2 $OUT/gpu-suite-racecheck.log | tr '\n' ' ')" >> $L
grep "access at" $OUT/gpu-suite-racecheck.log | grep -v fmha_cutlass | head -3 >> $L; echo "fmha_cutlass lines: $(grep -c fmha_cutlass $OUT/gpu-suite-racecheck.log)" >> $L

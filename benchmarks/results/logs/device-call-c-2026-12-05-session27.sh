#!/bin/bash
# session 27, device call c (carry .carry/suite29 .carry/check29.py .carry/call27c.sh; suite29
# prepared on main ff3cd7a: the kernels tile-accelerate-dot now sends to wgmma)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TILEC_CACHE_DIR=$PWD/.carry/suite29/cache
S="compute-sanitizer --report-api-errors no"
for t in memcheck racecheck synccheck; do
  timeout 70 $S --tool $t python3 .carry/check29.py > $OUT/check-$t.log 2>&1; echo "$t rc $?"; grep -E "^ok|SUMMARY|Error" $OUT/check-$t.log | head -8
done
timeout 150 python3 scripts/gpu_suite.py run > $OUT/suite.log 2>&1; echo "suite rc $?"; tail -1 $OUT/suite.log; grep FAIL $OUT/suite.log
timeout 130 $S --tool racecheck python3 scripts/gpu_suite.py run --only "attention forward and backward" > $OUT/attention-racecheck.log 2>&1; echo "attention racecheck rc $?"; grep -E "PASS|FAIL|SUMMARY" $OUT/attention-racecheck.log | cut -c1-200

#!/bin/bash
# session 26, device call 7 (carry .carry/suite27 .carry/call26f.sh): the whole GPU suite on dccc01c's
# compiler (B's TMA copies evict-first), then the "inferred tensor maps" case (tutorial-03 sources
# on TMA, the kernels the policy changes) under memcheck.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TILEC_CACHE_DIR=$PWD/.carry/suite27/cache
timeout 150 python3 scripts/gpu_suite.py run > $OUT/suite.log 2>&1
echo "suite rc $?"; grep -E "^(PASS|FAIL)|passed" $OUT/suite.log | cut -c1-90
timeout 150 compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/gpu_suite.py run --only "inferred tensor maps" > $OUT/inferred-memcheck.log 2>&1
echo "memcheck rc $?"; grep -E "passed|ERROR SUMMARY" $OUT/inferred-memcheck.log

#!/bin/bash
# session 26 plan, device call 2 (carry .carry/suite26 .carry/call26r.sh): racecheck of the
# "batched tensor maps" case alone (sessions 24-25: never finished within 85 s).
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TILEC_CACHE_DIR=$PWD/.carry/suite26/cache
timeout 560 compute-sanitizer --tool racecheck --report-api-errors no python3 scripts/gpu_suite.py run --only "batched tensor maps" > $OUT/batched-racecheck.log 2>&1
echo "racecheck rc $?"; grep -E "passed|RACECHECK SUMMARY|ERROR" $OUT/batched-racecheck.log | head

#!/bin/bash
# session 24 device call 6: the suite inferred-tensor-map case (source variants, batched rank-3 maps incl. a batch stride of 0), plain and under memcheck, synccheck, racecheck
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
start=$(date +%s)
export TILEC_CACHE_DIR=$PWD/.carry/suite24c/cache
timeout 60 python3 scripts/gpu_suite.py run --only "inferred tensor maps" > $OUT/suite-inferred.log 2>&1; rc=$?; echo "plain rc $rc"; tail -2 $OUT/suite-inferred.log
tools="memcheck synccheck racecheck"; [ $rc -ne 0 ] && { tail -40 $OUT/suite-inferred.log; tools=memcheck; }
for tool in $tools; do
  timeout 75 compute-sanitizer --tool $tool --report-api-errors no python3 scripts/gpu_suite.py run --only "inferred tensor maps" > $OUT/suite-inferred-$tool.log 2>&1
  echo "$tool rc $?"; grep -E "passed|ERROR SUMMARY|RACECHECK SUMMARY" $OUT/suite-inferred-$tool.log
done

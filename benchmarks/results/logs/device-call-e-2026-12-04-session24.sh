#!/bin/bash
# session 24 device call 5: the GPU suite on main b0ffea0 (prefetch.tensormap in every TMA kernel), then its TMA cases under memcheck, synccheck, racecheck
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TILEC_CACHE_DIR=$PWD/.carry/suite24/cache
set -o pipefail
timeout 200 python3 scripts/gpu_suite.py run 2>&1 | tee $OUT/gpu-suite.log | grep -E "PASS|FAIL|passed"
ONLY=("TMA descriptor loads" "inferred tensor maps" "flattened persistent" "TMA store epilogue")
for tool in memcheck synccheck racecheck; do
  echo "== $tool"
  extra=(); [ $tool = memcheck ] && extra=("attention forward")
  timeout 200 compute-sanitizer --tool $tool --report-api-errors no python3 scripts/gpu_suite.py run --only "${ONLY[@]}" "${extra[@]}" > $OUT/gpu-suite-$tool.log 2>&1
  echo "rc $?"; grep -E "PASS|FAIL|passed|ERROR SUMMARY|RACECHECK SUMMARY|hazard" $OUT/gpu-suite-$tool.log | tail -8
done

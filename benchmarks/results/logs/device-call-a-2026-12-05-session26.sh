#!/bin/bash
# session 26 plan, device call 1 (carry .carry/suite26 .carry/call26a.sh): the suite case
# "batched tensor maps" (rank 3-5 maps from pointers, K-major batched B, heads, batch masks,
# per-batch and per-head descriptors) plain, then under memcheck and synccheck.
# prepare (here, after any compiler change): TILEC_CACHE_DIR=$PWD/.carry/suite26/cache PYTHONPATH=$PWD .venv/bin/python scripts/gpu_suite.py prepare; .venv/bin/python scripts/slim_cache.py .carry/suite26/cache
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TILEC_CACHE_DIR=$PWD/.carry/suite26/cache
C="batched tensor maps"
timeout 90 python3 scripts/gpu_suite.py run --only "$C" > $OUT/batched.log 2>&1; rc=$?
echo "plain rc $rc"; tail -3 $OUT/batched.log
[ $rc -ne 0 ] && tail -60 $OUT/batched.log
for tool in memcheck synccheck; do
  timeout 200 compute-sanitizer --tool $tool --report-api-errors no python3 scripts/gpu_suite.py run --only "$C" > $OUT/batched-$tool.log 2>&1
  echo "$tool rc $?"; grep -E "passed|ERROR SUMMARY" $OUT/batched-$tool.log
done

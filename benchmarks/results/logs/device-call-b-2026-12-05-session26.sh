#!/bin/bash
# session 26 plan, device call 3 (carry .carry/suite26 .carry/mm26 .carry/call26b.sh): the whole
# GPU suite on this tree (every case, plain) and the matmul benchmark (fresh data for the
# 127x4096x4096 and fp8 8192^3 rows).
# prepare (here): the suite as in call26a.sh, and TILEC_CACHE_DIR=$PWD/.carry/mm26/cache .venv/bin/python benchmarks/h200_matmul.py prepare; .venv/bin/python scripts/slim_cache.py .carry/mm26/cache
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
TILEC_CACHE_DIR=$PWD/.carry/suite26/cache timeout 240 python3 scripts/gpu_suite.py run > $OUT/suite.log 2>&1
echo "suite rc $?"; grep -E "^(PASS|FAIL)|passed" $OUT/suite.log | cut -c1-100
TILEC_CACHE_DIR=$PWD/.carry/mm26/cache timeout 320 python3 benchmarks/h200_matmul.py run --json $OUT/h200-matmul.json > $OUT/h200-matmul.log 2>&1
echo "matmul rc $?"; tail -40 $OUT/h200-matmul.log

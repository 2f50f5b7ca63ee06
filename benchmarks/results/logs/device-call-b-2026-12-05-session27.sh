#!/bin/bash
# session 27, device call b (carry .carry/suite28, prepared here on main 63ebdaa:
#   TILEC_CACHE_DIR=$PWD/.carry/suite28/cache PYTHONPATH=$PWD .venv/bin/python scripts/gpu_suite.py prepare
#   .venv/bin/python scripts/slim_cache.py .carry/suite28/cache
# its 293 cubins byte-identical to dccc01c's, which passed memcheck and synccheck in session 26):
# the whole GPU suite under racecheck.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TILEC_CACHE_DIR=$PWD/.carry/suite28/cache
timeout 570 compute-sanitizer --tool racecheck --report-api-errors no python3 scripts/gpu_suite.py run > $OUT/racecheck.log 2>&1

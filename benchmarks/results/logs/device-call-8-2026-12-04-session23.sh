#!/bin/bash
# session 23 device call: the inferred-tensor-map suite case with the K masks written four ways (after the sle/sge fix), plain and under memcheck
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TILEC_CACHE_DIR=$PWD/.carry/suite23f/cache
timeout 60 python3 scripts/gpu_suite.py run --only "inferred tensor maps" 2>&1 | tail -4
timeout 90 compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/gpu_suite.py run --only "inferred tensor maps" 2>&1 | tail -3

#!/bin/bash
# session 23 device call: the inferred-tensor-map suite case with K-major B (transposed map blocks: fp16, bf16, fp8), plain and under memcheck
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TILEC_CACHE_DIR=$PWD/.carry/suite23g/cache
timeout 60 python3 scripts/gpu_suite.py run --only "inferred tensor maps" 2>&1 | tail -4
timeout 90 compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/gpu_suite.py run --only "inferred tensor maps" 2>&1 | tail -3

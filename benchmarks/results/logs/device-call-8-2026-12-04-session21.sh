#!/bin/bash
# session 21 device call 8 (main 4f68de1): SM clock and power of the persistent fp8 kernels under the power cap (tilec, Triton TMA, cuBLAS), and their cycles at ncu's locked clock
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TILEC_CACHE_DIR=$PWD/.carry/pair21
L=$OUT/run.log
timeout 100 python3 benchmarks/probe/persistent_pair.py clocks fp8 >> $L 2>&1

#!/bin/bash
# session 19 device call 4: the attention benchmark again (a second call, for the clock's spread), then tilec's and Triton's matmul kernels at ncu's locked clock with instruction counts
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p $OUT/logs
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/att19 timeout 260 python3 benchmarks/h200_attention.py run --json $OUT/h200-attention-b.json > $OUT/logs/attention-b.log 2>&1; echo "attention rc $? $(( $(date +%s) - S )) s"
M=gpc__cycles_elapsed.max,smsp__inst_executed.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed
TILEC_CACHE_DIR=$PWD/.carry/mm19 timeout 120 ncu --metrics $M -k regex:"matmul_persistent|mm_tutorial" --csv python3 benchmarks/probe/persistent_pair.py 2>&1 | grep -v "^==PROF" | awk -F'","' '{print $5, $13, $15}' | tr -d '"' | grep -v "Kernel Name" | tee $OUT/logs/matmul-ncu.txt | tail -20

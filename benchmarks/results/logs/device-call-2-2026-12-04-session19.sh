#!/bin/bash
# session 19 device call 2: the backward's kernels at ncu's locked clock (new build vs Triton), then the attention and matmul benchmarks
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p $OUT/logs
M=gpc__cycles_elapsed.max,smsp__inst_executed.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed
echo "== bwd ncu"; S=$(date +%s)
TILEC_CACHE_DIR=$PWD/.carry/att19 timeout 120 ncu --metrics $M -k regex:"_attn_bwd_(dkdv|dq)" --csv python3 benchmarks/probe/attention_bwd_ncu.py run > $OUT/logs/bwd-ncu.csv 2>&1; echo "rc $? $(( $(date +%s) - S )) s"
grep "^launch" $OUT/logs/bwd-ncu.csv
grep -v "^==PROF\|^launch" $OUT/logs/bwd-ncu.csv | awk -F'","' '{print $5, $13, $15}' | tr -d '"' | grep -v "Kernel Name" | grep -v "^ *$" | paste - - - | head -20
echo "== attention"; S=$(date +%s)
TILEC_CACHE_DIR=$PWD/.carry/att19 timeout 260 python3 benchmarks/h200_attention.py run --json $OUT/h200-attention.json > $OUT/logs/attention.log 2>&1; echo "rc $? $(( $(date +%s) - S )) s"
grep -v Warning $OUT/logs/attention.log | tail -24
echo "== matmul"; S=$(date +%s)
TILEC_CACHE_DIR=$PWD/.carry/mm19 timeout 170 python3 benchmarks/h200_matmul.py run --json $OUT/h200-matmul.json > $OUT/logs/matmul.log 2>&1; echo "rc $? $(( $(date +%s) - S )) s"
tail -30 $OUT/logs/matmul.log

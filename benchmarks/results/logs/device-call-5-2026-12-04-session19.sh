#!/bin/bash
# session 19 device call 5: the forward (default and persistent) and cuDNN at ncu's locked clock with commit 012f13b's compiler, then the alternated timing
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TILEC_CACHE_DIR=$PWD/.carry/pers19
mkdir -p $OUT/logs
P=benchmarks/probe/attention_persistent.py
timeout 150 ncu --metrics gpc__cycles_elapsed.max,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum -k regex:"_attn_fwd|cudnn" --csv python3 $P once 2>/dev/null | grep -v "^==PROF" | awk -F'","' '{print $1, substr($5,1,24), $13, $15}' | tr -d '"' | grep -v "Kernel Name" | tee $OUT/logs/fwd-ncu.txt
timeout 150 python3 $P run --json $OUT/attention-persistent.json 2>&1 | grep -v Warning | tail -8

#!/bin/bash
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TILEC_CACHE_DIR=$PWD/.carry/pers
mkdir -p $OUT/logs
P=benchmarks/probe/attention_persistent.py
echo "== check"; timeout 90 python3 $P check 2>&1 | tee $OUT/logs/check.log | grep -v Warning | tail -8
grep -q "all passed" $OUT/logs/check.log || { echo "check failed: stop"; exit 1; }
for t in synccheck racecheck memcheck; do S=$(date +%s); timeout 100 compute-sanitizer --tool $t --report-api-errors no python3 $P check --small > $OUT/logs/$t.log 2>&1; echo "$t rc $? $(( $(date +%s) - S )) s: $(grep -c ' ok' $OUT/logs/$t.log) ok; $(tail -1 $OUT/logs/$t.log)"; done
echo "== ncu"; timeout 150 ncu --metrics gpc__cycles_elapsed.max,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed -k regex:"_attn_fwd|cudnn" --csv python3 $P once 2>/dev/null | grep -v "^==PROF" | awk -F'","' '{print $1, substr($5,1,24), $13, $15}' | tr -d '"' | grep -v "Kernel Name" | tee $OUT/logs/ncu.txt
echo "== run"; timeout 150 python3 $P run --json $OUT/attention-persistent.json 2>&1 | grep -v Warning | tail -6

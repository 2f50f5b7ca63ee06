#!/bin/bash
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p $OUT/logs
M=gpc__cycles_elapsed.max,smsp__inst_executed.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed
echo "== bwd ncu"; S=$(date +%s)
TILEC_CACHE_DIR=$PWD/.carry/bwdncu timeout 240 ncu --metrics $M -k regex:"_attn_bwd_(dkdv|dq)" --csv python3 benchmarks/probe/attention_bwd_ncu.py run > $OUT/logs/bwd-ncu.csv 2>&1; echo "rc $? $(( $(date +%s) - S )) s"
grep "^launch" $OUT/logs/bwd-ncu.csv
grep -v "^==PROF\|^launch" $OUT/logs/bwd-ncu.csv | awk -F'","' '{print $5, $13, $15}' | tr -d '"' | grep -v "Kernel Name" | head -60
echo "== clocks"; S=$(date +%s)
TILEC_CACHE_DIR=$PWD/.carry/pair timeout 150 python3 benchmarks/probe/persistent_pair.py clocks 2>&1 | tee $OUT/logs/clocks.log | tail -14; echo "rc $? $(( $(date +%s) - S )) s"
cp /tmp/smi-clocks.csv $OUT/logs/ 2>/dev/null
echo "== tutorial ncu"; S=$(date +%s)
TILEC_CACHE_DIR=$PWD/.carry/pair timeout 150 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats -k regex:"mm_tutorial" python3 benchmarks/probe/persistent_pair.py > $OUT/logs/tut-ncu.txt 2>&1; echo "rc $? $(( $(date +%s) - S )) s"
grep -E "mm_tutorial|Elapsed Cycles|L2 Hit|L1/TEX Hit|DRAM Throughput|Memory Throughput|Stall|Bank|Issued Warp|No Eligible|Warp Cycles Per Issued" $OUT/logs/tut-ncu.txt | head -60

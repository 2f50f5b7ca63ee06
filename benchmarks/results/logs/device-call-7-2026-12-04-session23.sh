#!/bin/bash
# session 23 device call: Nsight Compute on tutorial-03 127x4096x4096 (128x128x64, 4 warps, 4 stages), tilec (TMA) and Triton (cp.async), one launch each, clock not locked
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TILEC_CACHE_DIR=$PWD/.carry/ncu127/cache
timeout 200 ncu --clock-control none --csv --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --metrics gpc__cycles_elapsed.max,smsp__inst_executed.sum,dram__bytes_read.sum,lts__t_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active -k regex:mm_tutorial python3 benchmarks/probe/tutorial_refill.py once --configs "128,128,64,4,4" --shapes "127,4096,4096,float16" > $OUT/ncu-127.csv 2> $OUT/ncu-127.err
echo "rc $?"; grep -E "gpc__cycles_elapsed.max|smsp__inst_executed.sum|dram__bytes_read.sum|lts__t_bytes.sum|hmma|Stall|Warp Cycles Per Issued|Duration" $OUT/ncu-127.csv | awk -F'","' '{print $5" | "$(NF-2)" | "$(NF-1)" | "$NF}' | head -60
tail -3 $OUT/ncu-127.err

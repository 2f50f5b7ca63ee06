#!/bin/bash
# session 20 device call 5: tutorial-03 128x128x64, 8 warps, 3 stages at 4096^3 fp16, tilec vs Triton at ncu's locked clock: occupancy, L2, DRAM, shared-memory conflicts, stall samples
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
P=benchmarks/probe/tutorial_refill.py
mkdir -p $OUT/logs
M=gpc__cycles_elapsed.max,sm__warps_active.avg.pct_of_peak_sustained_active,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static,launch__registers_per_thread,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,lts__t_bytes.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__inst_executed.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__ctas_launched.sum,smsp__cycles_active.avg
TILEC_CACHE_DIR=$PWD/.carry/refill/new timeout 200 ncu --metrics $M --section WarpStateStats -k regex:"mm_tutorial" --launch-skip 4 --launch-count 2 --csv python3 $P once 2>/dev/null > $OUT/logs/ncu-128x128.csv
python3 - $OUT/logs/ncu-128x128.csv <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 14 and r[0] != "ID"]
by = {}
for r in rows:
    by.setdefault(r[12], {})[r[4][:14]] = r[14]
for k, v in by.items():
    print(f"{k[:70]:70s}", *(f"{n}={x}" for n, x in v.items()))
PY

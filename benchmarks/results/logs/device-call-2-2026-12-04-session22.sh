#!/bin/bash
# session 22 device call 2: L2 eviction hints on the persistent kernel's TMA copies (benchmarks/probe/l2_hints.py PTX edits), each variant's timing modes against Triton and its DRAM bytes under ncu (clock control none)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
L=$OUT/run.log
for v in base c_first b_last b_last_c_first a_first; do
  S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/l2-$v timeout 100 python3 benchmarks/probe/persistent_pair.py modes > $OUT/modes-$v.log 2>&1; echo "== $v modes rc $? $(( $(date +%s) - S )) s" >> $L
  grep "paired" $OUT/modes-$v.log >> $L
  for sz in 4096 8192; do
    PAIR_SIZE=$sz TILEC_CACHE_DIR=$PWD/.carry/l2-$v timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes.sum,lts__t_sector_hit_rate.pct -k regex:"matmul_persistent" --csv python3 benchmarks/probe/persistent_pair.py > $OUT/ncu.csv 2>&1
    echo "ncu $v $sz: $(grep -E '"(gpu__time_duration.sum|dram__bytes.sum|lts__t_sector_hit_rate.pct)"' $OUT/ncu.csv | awk -F'","' '{printf "%s %s %s | ", $5, $(NF-2), $NF}')" >> $L
  done
done

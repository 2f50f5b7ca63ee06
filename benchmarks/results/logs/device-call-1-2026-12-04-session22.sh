#!/bin/bash
# session 22 device call 1: the persistent pair's timing modes (flush vs warm, clocks), ncu (clock control none) on the fp8 pair, the full matmul benchmark with paired ABBA rounds and clocks
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
L=$OUT/run.log
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv >> $L
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/pair22 timeout 150 python3 benchmarks/probe/persistent_pair.py modes > $OUT/modes.log 2>&1; echo "modes rc $? $(( $(date +%s) - S )) s" >> $L
grep -v Warn $OUT/modes.log | tail -8 >> $L
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/pair22 timeout 90 ncu --clock-control none --metrics gpc__cycles_elapsed.max,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes.sum,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum -k regex:"matmul_persistent" --csv python3 benchmarks/probe/persistent_pair.py > $OUT/ncu-pair.csv 2>&1; echo "ncu rc $? $(( $(date +%s) - S )) s" >> $L
grep -E '"(gpc__cycles_elapsed.max|gpu__time_duration.sum|sm__cycles_elapsed.avg.per_second|dram__bytes.sum|lts__t_sector_hit_rate.pct)"' $OUT/ncu-pair.csv | awk -F'","' '{print $5, $(NF-2), $(NF-1), $NF}' | cut -c1-160 >> $L
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mm21/cache timeout 330 python3 benchmarks/h200_matmul.py run --json $OUT/h200-matmul.json 2>&1 | grep -v Warning > $OUT/h200-matmul.log; echo "matmul $(( $(date +%s) - S )) s" >> $L
sed -n '/^row /,$p' $OUT/h200-matmul.log >> $L
grep -E "^fp8|^persistent|^(float16|bfloat16)" $OUT/h200-matmul.log >> $L

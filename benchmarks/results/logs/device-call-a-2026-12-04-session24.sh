#!/bin/bash
# session 24 device call 1: skinny_probe (timing modes, L2 promotion, pointer epilogue) and ncu after a memset
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TILEC_CACHE_DIR=$PWD/.carry/sk24/cache
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv
python3 benchmarks/probe/skinny_probe.py run --json $OUT/skinny-probe.json 2>&1 | tee $OUT/skinny-probe.log
timeout 240 ncu --clock-control none --cache-control none --csv --metrics gpu__time_duration.sum,gpc__cycles_elapsed.max,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum -k regex:mm_ python3 benchmarks/probe/skinny_probe.py once > $OUT/ncu-memset.csv 2> $OUT/ncu-memset.err
echo "rc $?"; grep -E "mm_" $OUT/ncu-memset.csv | awk -F'","' '{print $1" "$5" | "$(NF-2)" | "$(NF-1)" | "$NF}'
tail -3 $OUT/ncu-memset.err

#!/bin/bash
# session 21 device call 2: the build without the proxy fence after cp.async waits feeding wgmma and with the epilogue's
# redundant barriers dropped: tensor-core checks, the tutorial-03 probe per config (alternated + ncu cycles), the full matmul benchmark
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
P=benchmarks/probe/tutorial_refill.py
CF="128,128,128,8,3;128,128,64,8,3;128,256,64,8,3;128,256,64,8,4"
L=$OUT/run.log
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mma21 timeout 100 python3 scripts/gpu_mma_check.py run --no-timing > $OUT/mma-check.log 2>&1; echo "mma check rc $? $(( $(date +%s) - S )) s: $(tail -n 1 $OUT/mma-check.log)" >> $L
TILEC_CACHE_DIR=$PWD/.carry/p3/cache timeout 150 python3 $P run --label p3 --configs "$CF" --shapes "4096,4096,4096,float16;1024,8192,1024,float16" --json $OUT/p3.json >> $L 2>&1
M=gpc__cycles_elapsed.max,smsp__inst_executed.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread
echo "== ncu cycles p3" >> $L
TILEC_CACHE_DIR=$PWD/.carry/p3/cache timeout 120 ncu --metrics $M -k regex:"mm_tutorial" --csv python3 $P once --configs "$CF" 2>/dev/null > /tmp/ncu-p3.csv
python3 - /tmp/ncu-p3.csv >> $L <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 14 and r[0] != "ID"]
by = {}
for r in rows:
    by.setdefault((int(r[0]), r[4][:14]), {})[r[12]] = r[14]
for k, v in sorted(by.items()):
    print(k, *(f"{n.split('__')[1][:28]}={x}" for n, x in v.items()))
PY
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mm21/cache timeout 240 python3 benchmarks/h200_matmul.py run --json $OUT/h200-matmul.json 2>&1 | grep -v Warning > $OUT/h200-matmul.log; echo "matmul $(( $(date +%s) - S )) s" >> $L
grep -v "OutOfResources" $OUT/h200-matmul.log | tail -40 >> $L

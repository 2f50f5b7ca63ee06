#!/bin/bash
# session 21 device call 3 (main a77f25c): why tutorial-03 bf16 4096^3 trails Triton when fp16 does not:
# 128x256x64 s3/s4 alternated per dtype, their cycles at ncu's locked clock, and SM clock / power per kernel
# under the power cap (2 s windows); the persistent pair's cycles and instructions (baseline) and its clocks
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
P=benchmarks/probe/tutorial_refill.py
CF="128,256,64,8,3;128,256,64,8,4"
SH="4096,4096,4096,float16;4096,4096,4096,bfloat16"
L=$OUT/run.log
export TILEC_CACHE_DIR=$PWD/.carry/p4/cache
timeout 120 python3 $P run --label bf16 --configs "$CF" --shapes "$SH" --json $OUT/bf16.json >> $L 2>&1
M=gpc__cycles_elapsed.max,smsp__inst_executed.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,lts__t_sector_hit_rate.pct
echo "== ncu cycles (order: per shape, per config: tilec, triton)" >> $L
timeout 150 ncu --metrics $M -k regex:"mm_tutorial" --csv python3 $P once --configs "$CF" --shapes "$SH" 2>/dev/null > $OUT/ncu-tutorial.csv
python3 - $OUT/ncu-tutorial.csv >> $L <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 14 and r[0] != "ID"]
by = {}
for r in rows:
    by.setdefault((int(r[0]), r[4][:14]), {})[r[12]] = r[14]
for k, v in sorted(by.items()):
    print(k, *(f"{n.split('__')[1][:24]}={x}" for n, x in v.items()))
PY
echo "== tutorial clocks 128x256x64 s3" >> $L
timeout 100 python3 $P clocks --configs "128,256,64,8,3" --shapes "$SH" >> $L 2>&1
echo "== tutorial clocks 128x256x64 s4" >> $L
timeout 100 python3 $P clocks --configs "128,256,64,8,4" --shapes "$SH" >> $L 2>&1
export TILEC_CACHE_DIR=$PWD/.carry/pair21
echo "== persistent pair ncu" >> $L
timeout 120 ncu --metrics gpc__cycles_elapsed.max,smsp__inst_executed.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed -k regex:"matmul_persistent|mm_tutorial" --csv python3 benchmarks/probe/persistent_pair.py 2>/dev/null > $OUT/ncu-pair.csv
python3 - $OUT/ncu-pair.csv >> $L <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 14 and r[0] != "ID"]
by = {}
for r in rows:
    by.setdefault((int(r[0]), r[4][:20]), {})[r[12]] = r[14]
for k, v in sorted(by.items()):
    print(k, *(f"{n.split('__')[1][:24]}={x}" for n, x in v.items()))
PY
echo "== persistent clocks" >> $L
timeout 100 python3 benchmarks/probe/persistent_pair.py clocks >> $L 2>&1

#!/bin/bash
# session 21 device call 1: tutorial-03 128x128 configs, tilec (main p0; probe builds p1 = no proxy fence, p2 = A rows in order) vs Triton:
# alternated timing, ncu locked-clock cycles, and per-SASS-instruction stall samples (SourceCounters) for 128x128x128 and 128x128x64
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
P=benchmarks/probe/tutorial_refill.py
CF="128,128,128,8,3;128,128,64,8,3;128,256,64,8,3"
L=$OUT/run.log
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv >> $L
TILEC_CACHE_DIR=$PWD/.carry/p0/cache timeout 150 python3 $P run --label p0 --configs "$CF" --shapes "4096,4096,4096,float16;1024,8192,1024,float16" --json $OUT/p0.json >> $L 2>&1
for v in p1 p2; do TILEC_CACHE_DIR=$PWD/.carry/$v/cache timeout 90 python3 $P run --label $v --configs "$CF" --shapes "4096,4096,4096,float16" --json $OUT/$v.json >> $L 2>&1; done
M=gpc__cycles_elapsed.max,smsp__inst_executed.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__occupancy_limit_shared_mem
for v in p0 p1 p2; do
  echo "== ncu cycles $v" >> $L
  TILEC_CACHE_DIR=$PWD/.carry/$v/cache timeout 120 ncu --metrics $M -k regex:"mm_tutorial" --csv python3 $P once --configs "$CF" 2>/dev/null > /tmp/ncu-$v.csv
  python3 - /tmp/ncu-$v.csv >> $L <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 14 and r[0] != "ID"]
by = {}
for r in rows:
    by.setdefault((int(r[0]), r[4][:14]), {})[r[12]] = r[14]
for k, v in sorted(by.items()):
    print(k, *(f"{n.split('__')[1][:28]}={x}" for n, x in v.items()))
PY
done
for c in "128,128,128,8,3" "128,128,64,8,3"; do
  t=$(echo $c | cut -d, -f3)
  TILEC_CACHE_DIR=$PWD/.carry/p0/cache timeout 120 ncu --section SourceCounters --section WarpStateStats -k regex:"^mm_tutorial" --launch-count 1 -o /tmp/tc$t python3 $P once --configs "$c" >> $L 2>&1
  TILEC_CACHE_DIR=$PWD/.carry/p0/cache timeout 120 ncu --section SourceCounters --section WarpStateStats -k regex:"t_mm_tutorial" --launch-count 1 -o /tmp/tt$t python3 $P once --configs "$c" >> $L 2>&1
  for w in tc tt; do ncu -i /tmp/$w$t.ncu-rep --page source --csv --print-source sass > $OUT/src-$w-$t.csv 2>> $L; ncu -i /tmp/$w$t.ncu-rep --page details >> $L 2>&1; done
done
ls -la $OUT >> $L

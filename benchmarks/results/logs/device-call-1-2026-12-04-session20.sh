#!/bin/bash
# session 20 device call 1: tutorial-03 per config, tilec (base schedule vs lagged refill) against Triton, alternated; then both at ncu's locked clock
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
P=benchmarks/probe/tutorial_refill.py
mkdir -p $OUT/logs
for v in base lag; do
  TILEC_CACHE_DIR=$PWD/.carry/refill/$v timeout 200 python3 $P run --label $v --json $OUT/refill-$v.json 2>&1 | grep -v Warning | tee $OUT/logs/refill-$v.log
done
for v in base lag; do
  TILEC_CACHE_DIR=$PWD/.carry/refill/$v timeout 100 ncu --metrics gpc__cycles_elapsed.max,smsp__inst_executed.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed -k regex:"mm_tutorial" --csv python3 $P once 2>/dev/null > $OUT/logs/ncu-$v.csv
  python3 - $OUT/logs/ncu-$v.csv $v <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 14 and r[0] != "ID"]
by = {}
for r in rows:
    by.setdefault((r[0], r[4][:40], r[8]), {})[r[12]] = r[14]
for (i, name, grid), m in sorted(by.items(), key=lambda x: int(x[0][0])):
    print(sys.argv[2], i, name, grid, *(f"{k.split('.')[0]}={v}" for k, v in m.items()))
PY
done

#!/bin/bash
# session 20 device call 4: experiment - the tutorial kernels built without the proxy fence after the cp.async wait (TILEC_EXP_FENCE=none, a temporary switch, not committed), at ncu's locked clock beside Triton's
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
P=benchmarks/probe/tutorial_refill.py
mkdir -p $OUT/logs
for v in nofence; do
  TILEC_CACHE_DIR=$PWD/.carry/refill/$v timeout 100 ncu --metrics gpc__cycles_elapsed.max,smsp__inst_executed.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed -k regex:"mm_tutorial" --csv python3 $P once 2>/dev/null > $OUT/logs/ncu-$v.csv
  python3 - $OUT/logs/ncu-$v.csv $v <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 14 and r[0] != "ID"]
by = {}
for r in rows:
    by.setdefault((r[0], r[4][:40], r[7], r[8]), {})[r[12]] = r[14]
for (i, name, block, grid), m in sorted(by.items(), key=lambda x: int(x[0][0])):
    print(sys.argv[2], i, name, block, grid, *(f"{k.split('.')[0]}={v}" for k, v in m.items()))
PY
done

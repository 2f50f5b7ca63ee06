#!/bin/bash
# session 20 device call 3: the tutorial probe with the unlagged compiler (d6a7f9c) again; both builds at ncu's locked clock (4096^3 fp16, every config); the lagged configs' checks under the three sanitizers
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
P=benchmarks/probe/tutorial_refill.py
mkdir -p $OUT/logs
TILEC_CACHE_DIR=$PWD/.carry/refill/base timeout 150 python3 $P run --label base --json $OUT/refill-base.json 2>&1 | grep -v Warning | tee $OUT/logs/refill-base.log | grep -v "^ \|Trace\|File"
for v in base new; do
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
export TILEC_CACHE_DIR=$PWD/.carry/mma20
export CHECK_CASES="128,256,64,8,4:1000,520,1000;128,256,64,8,5:1000,520,1000;128,128,64,8,4:1000,520,1000;128,128,64,8,5:1000,520,1000;128,256,64,8,4:127,4096,4096"
for t in memcheck racecheck synccheck; do S=$(date +%s); timeout 100 compute-sanitizer --tool $t --report-api-errors no python3 scripts/gpu_mma_check.py run --no-timing > $OUT/logs/mma-lag-$t.log 2>&1; echo "mma lag $t rc $? $(( $(date +%s) - S )) s: $(tail -n 2 $OUT/logs/mma-lag-$t.log | tr '\n' ' ')"; done

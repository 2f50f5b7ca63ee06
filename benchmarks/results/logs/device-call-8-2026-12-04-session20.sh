#!/bin/bash
# session 20 device call 8: experiment (not kept) - the refill's copies behind one branch on the iteration bound (masks alone as the copies' predicates): tensor-core checks, the tutorial probe per config and at ncu's locked clock, the full matmul benchmark, the GPU suite plain and under the three sanitizers
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
P=benchmarks/probe/tutorial_refill.py
mkdir -p $OUT/logs
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mma20 timeout 100 python3 scripts/gpu_mma_check.py run --no-timing > $OUT/logs/mma-check.log 2>&1; echo "mma check rc $? $(( $(date +%s) - S )) s: $(tail -n 1 $OUT/logs/mma-check.log)"; grep -i "fail\|wrong" $OUT/logs/mma-check.log | head -5
TILEC_CACHE_DIR=$PWD/.carry/refill/guard timeout 100 ncu --metrics gpc__cycles_elapsed.max,smsp__inst_executed.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed -k regex:"mm_tutorial" --csv python3 $P once 2>/dev/null > $OUT/logs/ncu-guard.csv
python3 - $OUT/logs/ncu-guard.csv guard <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 14 and r[0] != "ID"]
by = {}
for r in rows:
    by.setdefault((r[0], r[4][:40], r[7], r[8]), {})[r[12]] = r[14]
for (i, name, block, grid), m in sorted(by.items(), key=lambda x: int(x[0][0])):
    print(sys.argv[2], i, name, block, grid, *(f"{k.split('.')[0]}={v}" for k, v in m.items()))
PY
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/refill/guard timeout 120 python3 $P run --label guard --json $OUT/refill-guard.json 2>&1 | grep -v Warning > $OUT/logs/refill-guard.log; echo "probe $(( $(date +%s) - S )) s"; grep -v "^ \|Trace\|File\|OutOfRes" $OUT/logs/refill-guard.log
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mm20/cache timeout 150 python3 benchmarks/h200_matmul.py run --json $OUT/h200-matmul.json 2>&1 | grep -v Warning > $OUT/logs/h200-matmul.log; echo "matmul $(( $(date +%s) - S )) s"; grep -v "OutOfResources" $OUT/logs/h200-matmul.log
export TILEC_CACHE_DIR=$PWD/.carry/suite20
S=$(date +%s); timeout 60 python3 scripts/gpu_suite.py run > $OUT/logs/gpu-suite.log 2>&1; echo "suite rc $? $(( $(date +%s) - S )) s: $(grep -c '^PASS' $OUT/logs/gpu-suite.log) PASS; $(tail -n 1 $OUT/logs/gpu-suite.log)"
grep -A12 "^FAIL" $OUT/logs/gpu-suite.log | head -30
for t in memcheck synccheck racecheck; do S=$(date +%s); timeout 100 compute-sanitizer --tool $t --report-api-errors no python3 scripts/gpu_suite.py run > $OUT/logs/gpu-suite-$t.log 2>&1; echo "suite $t rc $? $(( $(date +%s) - S )) s: $(tail -n 2 $OUT/logs/gpu-suite-$t.log | tr '\n' ' ')"; grep "access at" $OUT/logs/gpu-suite-$t.log | grep -v fmha_cutlass | head -3; done

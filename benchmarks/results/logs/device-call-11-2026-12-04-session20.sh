#!/bin/bash
# session 20 device call 11: the refill's copies predicated on the iteration bound (`@live cp.async`, the load's mask alone as the source size; one basic block): tensor-core checks, the tutorial kernels at ncu's locked clock and per config against Triton, the GPU suite plain, memcheck, synccheck
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
P=benchmarks/probe/tutorial_refill.py
mkdir -p $OUT/logs
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mma20 timeout 40 python3 scripts/gpu_mma_check.py run --no-timing > $OUT/logs/mma-check.log 2>&1; echo "mma check rc $? $(( $(date +%s) - S )) s: $(tail -n 1 $OUT/logs/mma-check.log)"; grep -i "fail\|wrong" $OUT/logs/mma-check.log | head -3
TILEC_CACHE_DIR=$PWD/.carry/refill/pred timeout 60 ncu --metrics gpc__cycles_elapsed.max,smsp__inst_executed.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed -k regex:"mm_tutorial" --csv python3 $P once 2>/dev/null > $OUT/ncu-pred.csv
python3 - $OUT/ncu-pred.csv pred <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 14 and r[0] != "ID"]
by = {}
for r in rows:
    by.setdefault((r[0], r[4][:40], r[7], r[8]), {})[r[12]] = r[14]
for (i, name, block, grid), m in sorted(by.items(), key=lambda x: int(x[0][0])):
    print(sys.argv[2], i, name, block, grid, *(f"{k.split('.')[0]}={v}" for k, v in m.items()))
PY
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/refill/pred timeout 60 python3 $P run --label pred --json $OUT/refill-pred.json 2>&1 | grep -v "Warning\|^ \|Trace\|File\|OutOfRes" | head -30; echo "probe $(( $(date +%s) - S )) s"
export TILEC_CACHE_DIR=$PWD/.carry/suite20
S=$(date +%s); timeout 30 python3 scripts/gpu_suite.py run > $OUT/gpu-suite.log 2>&1; echo "suite rc $? $(( $(date +%s) - S )) s: $(tail -n 1 $OUT/gpu-suite.log)"
for t in memcheck synccheck; do S=$(date +%s); timeout 40 compute-sanitizer --tool $t --report-api-errors no python3 scripts/gpu_suite.py run > $OUT/gpu-suite-$t.log 2>&1; echo "suite $t rc $? $(( $(date +%s) - S )) s: $(tail -n 2 $OUT/gpu-suite-$t.log | tr '\n' ' ')"; done

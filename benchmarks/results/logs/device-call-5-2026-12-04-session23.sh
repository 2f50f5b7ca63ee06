#!/bin/bash
# session 23 device call: three sanitizers on the tensor-map cases of the GPU suite, then the matmul benchmark once more
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
L=$OUT/run.log
for tool in memcheck synccheck racecheck; do
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/suite23/cache timeout 240 compute-sanitizer --tool $tool --report-api-errors no python3 scripts/gpu_suite.py run --only "inferred tensor maps" "TMA store epilogue" "TMA descriptor loads" > $OUT/suite-$tool.log 2>&1; echo "== $tool rc $? $(( $(date +%s) - S )) s" >> $L; grep -E "^(PASS|FAIL)|passed|ERROR SUMMARY|RACECHECK SUMMARY" $OUT/suite-$tool.log | head -8 >> $L
done
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mm23/cache timeout 200 python3 benchmarks/h200_matmul.py run --json $OUT/h200-matmul-c.json 2>&1 | grep -v Warning > $OUT/h200-matmul-c.log; echo "== matmul c $(( $(date +%s) - S )) s" >> $L
sed -n '/^row /,$p' $OUT/h200-matmul-c.log >> $L
cat $L

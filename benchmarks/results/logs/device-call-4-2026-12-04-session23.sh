#!/bin/bash
# session 23 device call: the 127-row probe (TMA vs cp.async vs Triton), then the GPU suite and three sanitizers on the tensor-map cases
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
L=$OUT/run.log
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/tma23c/cache timeout 150 python3 benchmarks/probe/tutorial_tma.py run --rounds 16 --configs "128,128,64,4,4;128,128,128,8,3;64,128,64,4,3" --shapes "127,4096,4096,float16;1024,8192,1024,float16" --json $OUT/tma-127.json > $OUT/tma-127.log 2>&1; echo "== probe $(( $(date +%s) - S )) s" >> $L; grep -v Warning $OUT/tma-127.log >> $L
export TILEC_CACHE_DIR=$PWD/.carry/suite23/cache
S=$(date +%s); timeout 150 python3 scripts/gpu_suite.py run > $OUT/suite.log 2>&1; echo "== suite $(( $(date +%s) - S )) s" >> $L; grep -E "^(PASS|FAIL)|passed" $OUT/suite.log >> $L
for tool in memcheck racecheck synccheck; do
S=$(date +%s); timeout 80 compute-sanitizer --tool $tool python3 scripts/gpu_suite.py run --only "inferred tensor maps" "TMA store epilogue" > $OUT/suite-$tool.log 2>&1; echo "== $tool $(( $(date +%s) - S )) s" >> $L; grep -E "^(PASS|FAIL)|passed|ERROR SUMMARY|RACECHECK SUMMARY|hazard" $OUT/suite-$tool.log | head -8 >> $L
done
cat $L

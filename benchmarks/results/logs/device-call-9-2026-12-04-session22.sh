#!/bin/bash
# session 22 device call 9 (main HEAD: checks and compiles before timings, interleaved sweep): the full matmul benchmark once
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
L=$OUT/run.log
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mm22/cache timeout 165 python3 benchmarks/h200_matmul.py run --json $OUT/h200-matmul.json 2>&1 | grep -v Warning > $OUT/h200-matmul.log; echo "== matmul $(( $(date +%s) - S )) s" >> $L
sed -n '/^row /,$p' $OUT/h200-matmul.log >> $L
grep -E "^fp8|^persistent|^(float16|bfloat16)|WRONG" $OUT/h200-matmul.log >> $L

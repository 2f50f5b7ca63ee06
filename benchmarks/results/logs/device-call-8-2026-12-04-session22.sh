#!/bin/bash
# session 22 device call 8 (main HEAD, interleaved sweep): the full matmul benchmark twice (paired ABBA rounds with the A/A control and clocks), compiler at main (its 27 benchmark cubins byte-identical to a77f25c's)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
L=$OUT/run.log
nvidia-smi --query-gpu=name,clocks.sm,power.limit,temperature.gpu --format=csv,noheader >> $L
for s in a b; do
  S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mm22/cache timeout 280 python3 benchmarks/h200_matmul.py run --json $OUT/h200-matmul-$s.json 2>&1 | grep -v Warning > $OUT/h200-matmul-$s.log; echo "== matmul $s $(( $(date +%s) - S )) s" >> $L
  sed -n '/^row /,$p' $OUT/h200-matmul-$s.log >> $L
  grep -E "^fp8|^persistent|^(float16|bfloat16)|WRONG" $OUT/h200-matmul-$s.log >> $L
done

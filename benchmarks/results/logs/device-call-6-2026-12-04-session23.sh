#!/bin/bash
# session 23 device call: the full matmul benchmark twice more on main 17f3980 (runs d, e)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
L=$OUT/run.log
for r in d e; do
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mm23/cache timeout 200 python3 benchmarks/h200_matmul.py run --json $OUT/h200-matmul-$r.json 2>&1 | grep -v Warning > $OUT/h200-matmul-$r.log; echo "== matmul $r $(( $(date +%s) - S )) s" >> $L
sed -n '/^row /,$p' $OUT/h200-matmul-$r.log >> $L
grep -E "WRONG|Error|error" $OUT/h200-matmul-$r.log >> $L
done
cat $L

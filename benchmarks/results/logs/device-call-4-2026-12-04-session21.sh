#!/bin/bash
# session 21 device call 4: slot counters whose wrap compares the counter itself (pipeline_support.wrap_add) against
# main a77f25c: tensor-core checks, locked-clock cycles per config for both builds (tutorial-03 fp16 4096^3; the
# persistent pair), and the new build's tutorial-03 per config alternated with Triton
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
P=benchmarks/probe/tutorial_refill.py
CF="128,128,128,8,3;128,128,64,8,3;128,256,64,8,3;128,256,64,8,4"
L=$OUT/run.log
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mma21b timeout 100 python3 scripts/gpu_mma_check.py run --no-timing > $OUT/mma-check.log 2>&1; echo "mma check rc $? $(( $(date +%s) - S )) s: $(tail -n 1 $OUT/mma-check.log)" >> $L
summ() { python3 - $1 <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 14 and r[0] != "ID"]
by = {}
for r in rows:
    by.setdefault((int(r[0]), r[4][:20]), {})[r[12]] = r[14]
for k, v in sorted(by.items()):
    print(k, *(f"{n.split('__')[1][:24]}={x}" for n, x in v.items()))
PY
}
M=gpc__cycles_elapsed.max,smsp__inst_executed.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed
for rnd in 1 2; do for v in p3 p5; do
  echo "== ncu tutorial $v round $rnd (per config: tilec, triton)" >> $L
  TILEC_CACHE_DIR=$PWD/.carry/$v/cache timeout 100 ncu --metrics $M -k regex:"mm_tutorial" --csv python3 $P once --configs "$CF" --shapes "4096,4096,4096,float16" 2>/dev/null > /tmp/ncu-$v.csv
  summ /tmp/ncu-$v.csv >> $L
done; done
for v in pair21 pair21b; do
  echo "== ncu persistent pair $v" >> $L
  TILEC_CACHE_DIR=$PWD/.carry/$v timeout 100 ncu --metrics $M -k regex:"matmul_persistent|mm_tutorial" --csv python3 benchmarks/probe/persistent_pair.py 2>/dev/null > /tmp/ncu-$v.csv
  summ /tmp/ncu-$v.csv >> $L
done
TILEC_CACHE_DIR=$PWD/.carry/p5/cache timeout 150 python3 $P run --label wrapadd --configs "$CF" --shapes "4096,4096,4096,float16;1024,8192,1024,float16" --json $OUT/wrapadd.json >> $L 2>&1

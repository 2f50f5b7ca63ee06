#!/bin/bash
# session 22 device call 3: tutorial-03 128x128x64 8 warps 3 stages fp16 4096^3, tilec's PTX variants (benchmarks/probe/tutorial_ptx_variants.py) against Triton, timed (alternated) and under ncu (clock control none)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
L=$OUT/run.log
for v in base split_commit counters desc_carried all; do
  S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/tv-$v timeout 90 python3 benchmarks/probe/tutorial_refill.py run --configs "128,128,64,8,3" --shapes "4096,4096,4096,float16;1024,8192,1024,float16" --label $v --json $OUT/tv-$v.json > $OUT/tv-$v.log 2>&1; echo "== $v run rc $? $(( $(date +%s) - S )) s" >> $L
  grep -v Warn $OUT/tv-$v.log | tail -4 >> $L
  for r in 1 2; do
  TILEC_CACHE_DIR=$PWD/.carry/tv-$v timeout 60 ncu --clock-control none --metrics gpc__cycles_elapsed.max,smsp__inst_executed.sum -k regex:mm_tutorial --csv python3 benchmarks/probe/tutorial_refill.py once --configs "128,128,64,8,3" --shapes "4096,4096,4096,float16" > $OUT/ncu.csv 2>&1
  echo "ncu $v $r: $(grep -E '"(gpc__cycles_elapsed.max|smsp__inst_executed.sum)"' $OUT/ncu.csv | awk -F'","' '{printf "%s %s %s | ", substr($5,1,14), $(NF-2), $NF}')" >> $L
  done
done

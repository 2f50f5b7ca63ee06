#!/bin/bash
# session 22 device call 5: the shared-memory carveout (CU_FUNC_CACHE_PREFER_SHARED, as Triton's loader sets) on vs off for tilec's kernels, against Triton in the same process; ncu cycles
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
L=$OUT/run.log
R='import sys, runpy, tilec.runtime.cuda as c; c.PREFER_SHARED = sys.argv[1] == "on"; sys.argv = sys.argv[2:]; runpy.run_path(sys.argv[0], run_name="__main__")'
CF="128,128,64,8,3;128,256,64,8,3;128,128,128,8,3;128,128,64,4,4"
for r in 1 2; do for p in off on; do
  S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/mm21/cache timeout 120 python3 -c "$R" $p benchmarks/probe/tutorial_refill.py run --configs "$CF" --shapes "4096,4096,4096,float16;1024,8192,1024,float16" --label $p > $OUT/cv-$p.log 2>&1; echo "== $p round $r rc $? $(( $(date +%s) - S )) s" >> $L
  grep -v Warn $OUT/cv-$p.log | grep ratio >> $L
done; done
for p in off on; do
  TILEC_CACHE_DIR=$PWD/.carry/mm21/cache timeout 90 ncu --clock-control none --metrics gpc__cycles_elapsed.max,lts__t_sector_hit_rate.pct -k regex:mm_tutorial --csv python3 -c "$R" $p benchmarks/probe/tutorial_refill.py once --configs "$CF" --shapes "4096,4096,4096,float16" > $OUT/ncu-$p.csv 2>&1
  echo "ncu $p: $(grep -E '"(gpc__cycles_elapsed.max|lts__t_sector_hit_rate.pct)"' $OUT/ncu-$p.csv | awk -F'","' '{printf "%s %s %s | ", substr($5,1,14), $(NF-2), $NF}')" >> $L
done
for p in off on; do
  S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/pair22 timeout 100 python3 -c "$R" $p benchmarks/probe/persistent_pair.py modes > $OUT/modes-$p.log 2>&1; echo "== persistent modes $p rc $? $(( $(date +%s) - S )) s" >> $L
  grep paired $OUT/modes-$p.log >> $L
done

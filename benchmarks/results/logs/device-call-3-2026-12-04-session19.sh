#!/bin/bash
# session 19 device call 3: GPU suite plain and under the three sanitizers; the attention check (small ragged shapes, every config) plain, under memcheck and racecheck; the card's power state under a matmul load
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p $OUT/logs
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/suite19 timeout 120 python3 scripts/gpu_suite.py run > $OUT/logs/gpu-suite.log 2>&1; echo "suite rc $? $(( $(date +%s) - S )) s: $(tail -n 1 $OUT/logs/gpu-suite.log)"
for t in memcheck racecheck synccheck; do S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/suite19 timeout 150 compute-sanitizer --tool $t --report-api-errors no python3 scripts/gpu_suite.py run > $OUT/logs/gpu-suite-$t.log 2>&1; echo "suite $t rc $? $(( $(date +%s) - S )) s: $(tail -n 2 $OUT/logs/gpu-suite-$t.log | tr '\n' ' ')"; done
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/att19 timeout 100 python3 benchmarks/h200_attention.py check > $OUT/logs/attention-check.log 2>&1; echo "attention check rc $? $(( $(date +%s) - S )) s: $(grep -v Warning $OUT/logs/attention-check.log | tail -n 2 | tr '\n' ' ')"
for t in memcheck racecheck; do S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/att19 timeout 150 compute-sanitizer --tool $t --report-api-errors no python3 benchmarks/h200_attention.py check > $OUT/logs/attention-check-$t.log 2>&1; echo "attention $t rc $? $(( $(date +%s) - S )) s: $(tail -n 2 $OUT/logs/attention-check-$t.log | tr '\n' ' ')"; done
nvidia-smi -q -d POWER,CLOCK,PERFORMANCE > $OUT/logs/smi-idle.txt 2>&1
grep -E "Power Limit|Max Clocks|SM  |Graphics" $OUT/logs/smi-idle.txt | head -12
(TILEC_CACHE_DIR=$PWD/.carry/pair timeout 60 python3 benchmarks/probe/persistent_pair.py clocks > $OUT/logs/clocks.log 2>&1 &)
sleep 8; nvidia-smi -q -d POWER,CLOCK,PERFORMANCE > $OUT/logs/smi-load.txt 2>&1; sleep 3; nvidia-smi -q -d PERFORMANCE,POWER >> $OUT/logs/smi-load.txt 2>&1
grep -E "Power Draw|Power Limit|SW Power|HW Slowdown|HW Power|Thermal|Active|Idle|SM  " $OUT/logs/smi-load.txt | head -30
sleep 30; cat $OUT/logs/clocks.log | tail -12

#!/bin/bash
# session 20 device call 6: tutorial-03 128x128x64 w8 s3 at 4096^3 fp16, tilec vs Triton: stall samples per SASS instruction (ncu SourceCounters)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
P=benchmarks/probe/tutorial_refill.py
mkdir -p $OUT/logs
TILEC_CACHE_DIR=$PWD/.carry/refill/new timeout 250 ncu --section SourceCounters --section WarpStateStats -k regex:"mm_tutorial" --launch-skip 4 --launch-count 2 --page source --print-source sass --csv python3 $P once > $OUT/logs/ncu-src-128x128.csv 2>$OUT/logs/ncu-src.err
echo "rc $?"; wc -c $OUT/logs/ncu-src-128x128.csv; head -c 1500 $OUT/logs/ncu-src-128x128.csv; tail -3 $OUT/logs/ncu-src.err
TILEC_CACHE_DIR=$PWD/.carry/refill/new timeout 200 ncu --metrics smsp__pcsamp_warps_issue_stalled_barrier,smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_warps_issue_stalled_math_pipe_throttle,smsp__pcsamp_warps_issue_stalled_mio_throttle,smsp__pcsamp_warps_issue_stalled_lg_throttle,smsp__pcsamp_warps_issue_stalled_dispatch_stall,smsp__pcsamp_warps_issue_stalled_selected,smsp__pcsamp_warps_issue_stalled_not_selected,smsp__pcsamp_warps_issue_stalled_short_scoreboard,smsp__pcsamp_warps_issue_stalled_membar,smsp__pcsamp_warps_issue_stalled_drain,smsp__pcsamp_warps_issue_stalled_warpgroup_arrive,smsp__pcsamp_warps_issue_stalled_sleeping,smsp__pcsamp_warps_issue_stalled_branch_resolving,smsp__pcsamp_warps_issue_stalled_no_instructions,smsp__pcsamp_sample_count -k regex:"mm_tutorial" --launch-skip 4 --launch-count 2 --csv python3 $P once 2>/dev/null > $OUT/logs/ncu-stall-128x128.csv
python3 - $OUT/logs/ncu-stall-128x128.csv <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 14 and r[0] != "ID"]
by = {}
for r in rows:
    by.setdefault(r[12], {})[r[4][:14]] = r[14]
for k, v in by.items():
    print(f"{k[:60]:60s}", *(f"{n}={x}" for n, x in v.items()))
PY

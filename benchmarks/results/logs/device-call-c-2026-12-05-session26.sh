#!/bin/bash
# session 26 plan, device call 4 (carry .carry/sk26 .carry/sk26-b_first .carry/sk26-a_last_b_first
# .carry/call26c.sh): the 127x4096x4096 row's remaining gap (dirty-L2 writebacks after
# do_bench's memset): B's TMA loads with an L2 evict_first policy (each column block is read
# once when the grid has one row block), and with A evict_last too, against the plain build,
# each paired with Triton in its own run; the 4096^3 row as the control (B is re-read there).
# prepare (here): TILEC_CACHE_DIR=$PWD/.carry/sk26/cache .venv/bin/python benchmarks/probe/skinny_probe.py prepare
#   .venv/bin/python benchmarks/probe/l2_hints.py .carry/sk26/cache .carry/sk26-b_first/cache b_first mm_tutorial
#   .venv/bin/python benchmarks/probe/l2_hints.py .carry/sk26/cache .carry/sk26-a_last_b_first/cache a_last,b_first mm_tutorial
#   .venv/bin/python scripts/slim_cache.py .carry/sk26*/cache
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
i=0
for v in sk26 sk26-b_first sk26-a_last_b_first; do
  i=$((i + 1)); echo "== $i $v"
  TILEC_CACHE_DIR=$PWD/.carry/$v/cache timeout 180 python3 benchmarks/probe/skinny_probe.py run --modes flush,b2b,read --json $OUT/skinny-$i-$v.json 2>&1 | tail -8
done

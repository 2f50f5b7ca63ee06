#!/bin/bash
# session 18 device call A: hoisted TMA refill (pairH) vs main (pairR), then the matmul benchmark with the winner's cache
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p $OUT/logs
echo "== check pairH"; TILEC_CACHE_DIR=$PWD/.carry/pairH timeout 60 python3 benchmarks/probe/persistent_pair.py check 2>&1 | tail -4
M="gpc__cycles_elapsed.max,smsp__inst_executed.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
for r in 1 2; do for c in pairR pairH; do
  TILEC_CACHE_DIR=$PWD/.carry/$c timeout 80 ncu --metrics $M -k regex:"matmul_persistent" --csv python3 benchmarks/probe/persistent_pair.py 2>/dev/null | grep -v "^==PROF" | awk -F'","' -v c=$c '{print c, $1, $5, $13, $15}' | grep -v "Kernel Name" | tr -d '"' | tee -a $OUT/logs/pair-ncu.txt
done; done
W=$(python3 - <<'PY'
import collections
c=collections.defaultdict(list)
for l in open(__import__("os").environ["OUT"]+"/logs/pair-ncu.txt"):
    f=l.split()
    if len(f)>=5 and f[2]=="matmul_persistent" and f[3]=="gpc__cycles_elapsed.max":
        c[f[0]].append(float(f[4].replace(",","")))
s={k:sum(v)/len(v) for k,v in c.items()}
print("mmH" if s.get("pairH",1e18)<=s.get("pairR",0) else "mmM")
PY
)
echo "== bench with $W"
S=$(date +%s); TILEC_CACHE_DIR=$PWD/.carry/$W/c timeout 240 python3 benchmarks/h200_matmul.py run --json $OUT/h200-matmul.json > $OUT/logs/matmul-$W.log 2>&1; echo "rc $? $(( $(date +%s) - S )) s"
tail -40 $OUT/logs/matmul-$W.log

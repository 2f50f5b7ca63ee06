"""One launch each of the persistent matmul at 8192^3 with one CTA per program
and as a 2-CTA cluster with B multicast (cluster_probe.py's configs), fp8 then
fp16, for Nsight Compute (L2 and DRAM bytes, cycles at its locked clock):

    TILEC_CACHE_DIR=.carry/cluster/cache ncu --metrics lts__t_bytes.sum,dram__bytes.sum,\
        gpu__time_duration.sum,sm__cycles_elapsed.avg,lts__t_sectors_srcunit_tex.sum \
        -k regex:^matmul_persistent --csv python3 benchmarks/probe/cluster_ncu.py
"""
import os, sys
ROOT = os.getcwd()
sys.path[:0] = [os.path.join(ROOT, "benchmarks"), os.path.join(ROOT, "benchmarks/probe"), os.path.join(ROOT, "examples"), ROOT]
import torch
from cluster_probe import ROWS, _launch
from h200_matmul import _persistent_args
for dt, one, two in ROWS:
    pargs = _persistent_args(torch, "cuda", 8192, 8192, 8192, dt, True)
    _launch(pargs, one, 1)
    _launch(pargs, two[0], 2)
    torch.cuda.synchronize()
    print(dt, "done", flush=True)

"""One launch each of the attention forwards of the headline row (fp16
(4,32,4096,128), non-causal) for Nsight Compute to compare at locked clocks:
tilec schedules of examples/attention.py (and, with --alt, those an experiment
tree built: see attention_variants.py), Triton's best configuration of the same
source, and SDPA's cuDNN backend.  Elapsed cycles and tensor-pipe activity at
ncu's locked clock do not drift with the card's clock as timings do.

    # here
    TILEC_CACHE_DIR=$PWD/.carry/ncu .venv/bin/python benchmarks/probe/attention_ncu.py prepare
    TILEC_ALT_TREE=<tree> TILEC_CACHE_DIR=$PWD/.carry/ncu \\
        .venv/bin/python benchmarks/probe/attention_ncu.py prepare --alt
    # on the H200 (-s 8 skips the inputs' randn and casts), then --page raw --csv:
    ncu --set full -s 8 -o att python3 benchmarks/probe/attention_ncu.py run [--alt]
"""
from __future__ import annotations

import argparse
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import attention_variants as av  # noqa: E402  (puts TILEC_ALT_TREE first when set)

bench = av.bench
SHAPE = (4, 32, 4096, 128)
# (BLOCK_M, BLOCK_N, warps, stages, warp_specialize, overlap_dots)
VARIANTS = [(128, 128, 8, 3, True, None),    # the default: producer + deferred P @ V
            (128, 128, 8, 3, False, False),  # no producer, deferred P @ V
            (128, 128, 8, 3, False, None)]   # no producer, early S
ALT_VARIANTS = [(128, 128, 8, 3, True, None)]
TRITON = (128, 128, 8, 3, True)              # Triton's best in the session-16 run


def prepare(alt: bool, shape: tuple[int, ...] = SHAPE) -> None:
    import torch
    z, h, n, d = shape
    mod = av._alt() if alt else bench.tl_attn
    q = torch.empty((1, 1, 16, d), dtype=torch.float16)
    lse = torch.empty(16, dtype=torch.float32)
    for bm, bn, w, s, ws, ov in (ALT_VARIANTS if alt else VARIANTS):
        mod._attn_fwd.warmup(q, q, q, q, lse, 0.1, z, h, n, HEAD_DIM=d, BLOCK_M=bm,
                             BLOCK_N=bn, CAUSAL=False, WARP_SPECIALIZE=ws, OVERLAP=ov,
                             num_warps=w, num_stages=s, target="sm90")
    print("prepared", ALT_VARIANTS if alt else VARIANTS, "with", mod.__file__)


def run(alt: bool, shape: tuple[int, ...] = SHAPE) -> None:
    """Each forward once, in the order: VARIANTS, ALT_VARIANTS (with alt),
    Triton, cuDNN; the order is printed for reading the report.  Another
    `shape` (N a multiple of 16, D = 128; prepared with the same --shape),
    such as (1, 32, 16384, 128), has the headline row's programs (4,096) with
    four times the key blocks each: it separates a per-program cost from a
    per-block one."""
    import torch
    import triton
    from torch.nn.attention import SDPBackend, sdpa_kernel
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    q, k, v, _ = bench._inputs(torch, shape, "float16", "cuda", True)
    scale = 1.0 / math.sqrt(shape[3])
    want = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                            scale=scale)
    order = []
    for mod, var in [(bench.tl_attn, v_) for v_ in VARIANTS] + (
            [(av._alt(), v_) for v_ in ALT_VARIANTS] if alt else []):
        o, _ = mod._launch_fwd(q, k, v, False, scale, var)
        order.append(f"{av._name(mod, var)} err {bench._err(torch, o, want):.2e}")
    tri = bench._triton_module()
    tri._launch_fwd(q, k, v, False, scale, TRITON)
    order.append(f"triton {TRITON}")
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)
    order.append("cudnn")
    torch.cuda.synchronize()
    print("launch order:", "; ".join(order))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["prepare", "run"])
    ap.add_argument("--alt", action="store_true")
    ap.add_argument("--shape", default=",".join(map(str, SHAPE)),
                    help="Z,H,N,D (D = 128, N a multiple of 16; Z = 1 is a specialization "
                    "of its own: prepare it too)")
    a = ap.parse_args()
    shape = tuple(int(x) for x in a.shape.split(","))
    prepare(a.alt, shape) if a.phase == "prepare" else run(a.alt, shape)

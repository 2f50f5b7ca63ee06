"""GPU check of the swizzled layout exchange (Feature.SWIZZLED_EXCHANGE,
passes/gpu/shape.py) on a real NVIDIA GPU, standing in for the AMD chips
that have it (no AMD GPU exists here; the exchange is vendor-generic code).

The sm90 record is given the feature in both phases, so the matmul
epilogue's accumulator conversion (mma/wgmma layout -> store layout) goes
through the unpadded exchange with 16-byte chunks permuted by row % 8, as
it does on gfx942; the products are compared with torch.

    # here: compile every case into a cache that travels
    TILEC_CACHE_DIR=$PWD/.carry/xchg-cache .venv/bin/python scripts/gpu_exchange_check.py prepare
    # on the GPU machine
    TILEC_CACHE_DIR=$PWD/.carry/xchg-cache python3 scripts/gpu_exchange_check.py run

The closing line is 'N passed, N failed'.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tilec  # noqa: E402
import tilec.language as tl  # noqa: E402
from tilec.targets import TARGETS, Feature  # noqa: E402


@tilec.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
       F32: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * N
    out = acc if F32 else acc.to(tl.float16)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], out,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


# (BM, BN, BK, warps, F32, M, N, K): rows of 64 to 512 bytes in the exchange.
CASES = [(128, 128, 64, 8, False, 256, 256, 256), (128, 128, 64, 8, True, 256, 384, 192),
         (64, 64, 32, 4, False, 200, 136, 96), (64, 128, 32, 4, True, 130, 250, 64)]


def _swizzle_sm90() -> None:
    t = TARGETS["sm90"]
    TARGETS["sm90"] = dataclasses.replace(t, features=t.features | {Feature.SWIZZLED_EXCHANGE})


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["prepare", "run"])
    launch = ap.parse_args().phase == "run"
    import torch
    dev = "cuda" if launch else "cpu"
    _swizzle_sm90()
    torch.manual_seed(0)
    passed = failed = 0
    for bm, bn, bk, warps, f32, m, n, k in CASES:
        name = f"{bm}x{bn}x{bk} w{warps} {'f32' if f32 else 'f16'} out, {m}x{n}x{k}"
        try:
            a = torch.randn(m, k, device=dev, dtype=torch.float16)
            b = torch.randn(k, n, device=dev, dtype=torch.float16)
            c = torch.full((m, n), float("nan"), device=dev,
                           dtype=torch.float32 if f32 else torch.float16)
            args = (a, b, c, m, n, k)
            kw = dict(BM=bm, BN=bn, BK=bk, F32=f32, num_warps=warps, num_stages=2)
            if launch:
                mm[(tilec.cdiv(m, bm), tilec.cdiv(n, bn))](*args, **kw)
                torch.cuda.synchronize()
                ref = a.double() @ b.double()
                torch.testing.assert_close(c.double(), ref, rtol=2e-2, atol=2e-2)
            else:
                mm.warmup(*args, target="sm90", **kw)
            passed += 1
            print(f"PASS {name}", flush=True)
        except Exception:
            failed += 1
            print(f"FAIL {name}\n{traceback.format_exc()}", flush=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

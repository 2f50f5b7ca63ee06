"""tile-warp-specialize (passes/tile_warp_specialize.py) and its NVIDIA rules
(targets/nvidia/warp_specialize.py): which loops get a producer warpgroup,
the launch facts the runtime reads (384 threads), and the machine code
(ptxas: setmaxnreg applied, no spills).  Correctness and speed on the GPU:
benchmarks/h200_attention.py check / run and benchmarks/probe/attention_variants.py
on the H200 (CI has no GPU); the CPU ignores the hint (tested here)."""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import attention  # noqa: E402

SIG = "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16"


def _fwd(target: str, d: int, bm: int, bn: int, warps: int, stages: int, causal: bool = False,
         ws: bool = True, overlap: bool | None = False) -> Any:
    return attention._attn_fwd.compile(
        target=target, signature=SIG, num_warps=warps, num_stages=stages,
        constexprs={"HEAD_DIM": d, "BLOCK_M": bm, "BLOCK_N": bn, "CAUSAL": causal,
                    "WARP_SPECIALIZE": ws, "OVERLAP": overlap})


@pytest.mark.parametrize("d,bn,stages,causal,overlap", [
    (128, 64, 4, False, False), (128, 128, 3, True, False), (64, 128, 3, False, None),
    (64, 64, 2, True, None),
])
def test_split_kernels_take_their_registers_without_spills(d: int, bn: int, stages: int,
                                                            causal: bool,
                                                            overlap: bool | None) -> None:
    """384 threads (8 consumer warps and the producer warpgroup), a register cap
    at entry so that ptxas applies setmaxnreg (no C7508), no spills, and the
    early products of tile-pipeline (overlap None) split the same way."""
    k = _fwd("sm90", d, 128, bn, 8, stages, causal, overlap=overlap)
    ptx = k.asm["ptx"]
    assert ".maxntid 384, 1, 1" in ptx and ".maxnreg 168" in ptx
    assert len(re.findall(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+40;", ptx)) == 1
    assert len(re.findall(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+232;", ptx)) == 1
    assert k.metadata["block_threads"] == 384
    if not k.asm.get("cubin"):
        pytest.skip("no ptxas here")
    md = k.metadata
    assert md["spill_stores"] == 0 and md["stack_bytes"] == 0, md
    assert "C7508" not in (md.get("ptxas_log") or ""), md.get("ptxas_log")


def test_without_the_hint_nothing_changes() -> None:
    k = _fwd("sm90", 128, 128, 64, 8, 4, ws=False)
    assert "setmaxnreg" not in k.asm["ptx"] and ".maxntid 256, 1, 1" in k.asm["ptx"]
    assert "block_threads" not in k.metadata


@pytest.mark.parametrize("target", ["sm80", "sm100", "gfx942"])
def test_targets_without_the_feature_keep_the_schedule(target: str) -> None:
    k = _fwd(target, 64, 64, 64, 4, 3)
    assert "block_threads" not in k.metadata
    text = k.asm.get("ptx", "") or k.asm.get("amdgcn", "")
    assert "setmaxnreg" not in text


def test_four_consumer_warps_get_a_producer_too() -> None:
    """One consumer warpgroup (64-row tiles of 4 warps) and the producer: 256 threads."""
    k = _fwd("sm90", 64, 64, 64, 4, 3)
    assert k.metadata["block_threads"] == 256 and ".maxnreg 255" in k.asm["ptx"]


def test_cpu_ignores_the_hint() -> None:
    """examples/attention.py with the hint on the CPU: the same results as without."""
    import torch
    g = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn((1, 2, 77, 32), generator=g) for _ in range(3))
    outs = []
    for ws in (False, True):
        o, _ = attention._launch_fwd(q, k, v, True, 0.2, (32, 32, 4, 1, ws, False))
        outs.append(o)
    assert torch.equal(outs[0], outs[1])
    want = attention.reference(q, k, v, True, 0.2)
    assert torch.allclose(outs[1], want, atol=2e-5, rtol=2e-5)


def test_persistent_forward_splits_with_rings_once() -> None:
    """`_attn_fwd_persistent` (the key/value loop nested in the tile loop):
    a producer warpgroup, the barriers initialized once before the split
    (one fence and one CTA barrier), the consumers' barriers named, no
    spills (passes/tile_pipeline_defer.py, "Persistent kernels").  D = 64
    takes tile_pipeline_multi's schedule (no deferred product: P @ V is
    narrower than 128 columns), which has no persistent form: rings per tile,
    no producer."""
    k = attention._attn_fwd_persistent.compile(
        target="sm90", signature=SIG, num_warps=8, num_stages=3,
        constexprs={"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": 128})
    ptx = k.asm["ptx"]
    assert ".maxntid 384, 1, 1" in ptx and k.metadata["block_threads"] == 384
    assert len(re.findall(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+40;", ptx)) == 1
    assert len(re.findall(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+232;", ptx)) == 1
    assert ptx.count("fence.mbarrier_init") == 1 and ptx.count("bar.sync \t0;") == 1
    first_init = ptx.index("mbarrier.init")
    assert ptx.rindex("mbarrier.init") < ptx.index("setmaxnreg") and first_init < ptx.index(
        "fence.mbarrier_init")
    if not k.asm.get("cubin"):
        pytest.skip("no ptxas here")
    md = k.metadata
    assert md["spill_stores"] == 0 and md["stack_bytes"] == 0, md

"""examples/attention.py on the CPU: forward and gradients against torch's
scaled_dot_product_attention in fp32 (causal and not, ragged N, fp16/bf16)."""
import pytest

from toolcheck import EXAMPLES_DIR, load_example

attention = load_example(EXAMPLES_DIR / "attention.py")


@pytest.mark.parametrize("z,h,n,d,causal,dtype", [
    (1, 2, 64, 64, False, "float16"),
    (1, 2, 100, 64, True, "float16"),
    (2, 1, 77, 32, False, "bfloat16"),
    (1, 1, 45, 32, True, "bfloat16"),
])
def test_attention_matches_sdpa(z: int, h: int, n: int, d: int, causal: bool, dtype: str) -> None:
    import torch
    attention.check(z, h, n, d, causal, getattr(torch, dtype))


@pytest.mark.parametrize("z,h,n,d,programs,dtype", [
    (2, 2, 64, 32, 3, "float16"),     # 8 tiles on 3 programs: 3, 3 and 2 each
    (1, 3, 96, 64, 2, "bfloat16"),    # 9 tiles on 2 programs
])
def test_persistent_forward_matches_sdpa(z: int, h: int, n: int, d: int, programs: int,
                                         dtype: str) -> None:
    """`_attn_fwd_persistent` (one program walks several (head, query block)
    tiles) against torch, output and log-sum-exp."""
    import math

    import numpy as np
    import torch
    g = torch.Generator().manual_seed(n + d)
    q, k, v = (torch.randn((z, h, n, d), generator=g).to(getattr(torch, dtype))
               for _ in range(3))
    scale = 1.0 / math.sqrt(d)
    o, lse = attention._launch_fwd(q, k, v, False, scale, config=(32, 32, 4, 1, True, None, True),
                                   num_programs=programs)
    want = attention.reference(q, k, v, False, scale)
    tol = 2e-2 if dtype == "float16" else 6e-2
    np.testing.assert_allclose(o.float().numpy(), want.numpy(), rtol=tol, atol=tol)
    s = q.float() @ k.float().transpose(-1, -2) * scale
    want_lse = torch.logsumexp(s, -1) / math.log(2.0)
    np.testing.assert_allclose(lse.numpy(), want_lse.numpy(), rtol=1e-3, atol=1e-3)


BWD_SIG = "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,*fp32:16,fp32,i32,i32:16"


@pytest.mark.parametrize("d,stages", [(64, None), (128, 2), (128, 3)])
def test_sm90_backward_configs_do_not_spill(d: int, stages: int | None) -> None:
    """The example's default H200 backward configuration (BWD_CONFIG; D = 128:
    each pipeline depth the benchmark tries) compiles for sm90 without spills,
    causal or not (with 3 stages the D = 128 dk/dv kernel spilled 64-180 bytes
    at 255 registers until its masks were compared once per run of equal
    values and its Q/dO descriptors were computed where each product is
    issued: 238-242 registers)."""
    (bm1, bn1, w1), (bm2, bn2, w2), default = attention.BWD_CONFIG[d]
    stages = stages or default
    for causal in (False, True):
        for kern, bm, bn, w in ((attention._attn_bwd_dkdv, bm1, bn1, w1),
                                (attention._attn_bwd_dq, bm2, bn2, w2)):
            sig = BWD_SIG if kern is attention._attn_bwd_dkdv else \
                "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,*fp32:16,fp32,i32,i32:16"
            k = kern.compile(target="sm90", signature=sig, num_warps=w, num_stages=stages,
                             constexprs={"HEAD_DIM": d, "BLOCK_M": bm, "BLOCK_N": bn,
                                         "CAUSAL": causal})
            if not k.asm.get("cubin"):
                pytest.skip("no ptxas here")
            md = k.metadata
            assert md["spill_stores"] == 0 and md["stack_bytes"] == 0, (kern, causal, md)

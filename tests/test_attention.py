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

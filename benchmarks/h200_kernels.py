"""The kernels of the H200 suite, each written for tilec and (same algorithm) Triton.

A `Case` knows its shape, how to make a stand-in specialization on the CPU (for
`prepare`: NumPy arrays of the same dtypes and alignment, the same ints), and
how to check and time tilec, Triton and PyTorch on the GPU.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import tilec
import tilec.language as tl

try:
    import triton
    import triton.language as ttl
    HAVE_TRITON = True
except ImportError:  # `prepare` runs without Triton
    HAVE_TRITON = False


# ---------------------------------------------------------------- tilec kernels
@tilec.kernel
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


tiny_add = add


@tilec.kernel
def bias_gelu_residual(x_ptr, b_ptr, r_ptr, out_ptr, n, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs % N, mask=m, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + offs, mask=m, other=0.0).to(tl.float32)
    h = x + b
    z = 0.7978845608028654 * (h + 0.044715 * h * h * h)
    t = 2.0 / (1.0 + tl.exp(-2.0 * z)) - 1.0
    y = 0.5 * h * (1.0 + t) + r
    tl.store(out_ptr + offs, y.to(tl.float16), mask=m)


# ---------------------------------------------------------------- Triton kernels
if HAVE_TRITON:
    @triton.jit
    def t_add(x_ptr, y_ptr, out_ptr, n, BLOCK: ttl.constexpr):
        offs = ttl.program_id(0) * BLOCK + ttl.arange(0, BLOCK)
        m = offs < n
        ttl.store(out_ptr + offs, ttl.load(x_ptr + offs, mask=m) + ttl.load(y_ptr + offs, mask=m),
                  mask=m)

    @triton.jit
    def t_bias_gelu_residual(x_ptr, b_ptr, r_ptr, out_ptr, n, N, BLOCK: ttl.constexpr):
        offs = ttl.program_id(0) * BLOCK + ttl.arange(0, BLOCK)
        m = offs < n
        x = ttl.load(x_ptr + offs, mask=m, other=0.0).to(ttl.float32)
        b = ttl.load(b_ptr + offs % N, mask=m, other=0.0).to(ttl.float32)
        r = ttl.load(r_ptr + offs, mask=m, other=0.0).to(ttl.float32)
        h = x + b
        z = 0.7978845608028654 * (h + 0.044715 * h * h * h)
        t = 2.0 / (1.0 + ttl.exp(-2.0 * z)) - 1.0
        y = 0.5 * h * (1.0 + t) + r
        ttl.store(out_ptr + offs, y.to(ttl.float16), mask=m)
else:
    t_add = t_bias_gelu_residual = None


# ---------------------------------------------------------------- cases
@dataclass
class Spec:
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)


def _np(dtype: Any, n: int = 64) -> np.ndarray:
    return np.zeros(n, dtype=dtype)


@dataclass
class Case:
    name: str
    shape: list[int]
    kernel: Any
    specs: Callable[[], list[Spec]]
    measure_fn: Callable[..., dict[str, Any]]

    def specializations(self) -> list[Spec]:
        return self.specs()

    def measure(self, torch: Any, triton_mod: Any, bench: Callable[[Callable[[], Any]], float],
                dev: Any) -> dict[str, Any]:
        row = self.measure_fn(torch, bench, dev)
        row.update(kernel=self.name, shape=self.shape)
        row["ratio_vs_triton"] = round(row["tilec"] / row["triton"], 3) if row["unit"] == "TB/s" \
            else round(row["triton"] / row["tilec"], 3)
        return row


def _tbs(nbytes: int, seconds: float) -> float:
    return round(nbytes / seconds / 1e12, 3)


VADD_N = 1 << 28


def _vadd_measure(torch: Any, bench: Callable[..., float], dev: Any) -> dict[str, Any]:
    n = VADD_N
    x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
    out = torch.full((n,), float("nan"), device=dev)
    grid = (tilec.cdiv(n, 1024),)
    add[grid](x, y, out, n, BLOCK=1024)
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    nbytes = 3 * 4 * n
    return {"unit": "TB/s",
            "tilec": _tbs(nbytes, bench(lambda: add[grid](x, y, out, n, BLOCK=1024))),
            "triton": _tbs(nbytes, bench(lambda: t_add[grid](x, y, out, n, BLOCK=1024))),
            "torch": _tbs(nbytes, bench(lambda: torch.add(x, y, out=out)))}


GELU_M, GELU_N = 16384, 8192


def _gelu_measure(torch: Any, bench: Callable[..., float], dev: Any) -> dict[str, Any]:
    M, N = GELU_M, GELU_N
    n = M * N
    x = torch.randn(M, N, device=dev, dtype=torch.float16)
    r = torch.randn(M, N, device=dev, dtype=torch.float16)
    b = torch.randn(N, device=dev, dtype=torch.float16)
    out = torch.full((M, N), float("nan"), device=dev, dtype=torch.float16)
    grid = (tilec.cdiv(n, 1024),)

    def ref() -> Any:
        return torch.nn.functional.gelu(x + b, approximate="tanh") + r

    bias_gelu_residual[grid](x, b, r, out, n, N, BLOCK=1024)
    expect = (torch.nn.functional.gelu(x.float() + b.float(), approximate="tanh") + r.float())
    torch.testing.assert_close(out.float(), expect, rtol=2e-3, atol=2e-3)
    nbytes = 3 * 2 * n
    return {"unit": "TB/s",
            "tilec": _tbs(nbytes, bench(lambda: bias_gelu_residual[grid](x, b, r, out, n, N,
                                                                         BLOCK=1024))),
            "triton": _tbs(nbytes, bench(lambda: t_bias_gelu_residual[grid](x, b, r, out, n, N,
                                                                            BLOCK=1024))),
            "torch": _tbs(nbytes, bench(ref))}


KERNELS: list[Case] = [
    Case("vector add fp32", [VADD_N], add,
         lambda: [Spec((_np(np.float32), _np(np.float32), _np(np.float32), VADD_N),
                       {"BLOCK": 1024}),
                  Spec((_np(np.float32, 16), _np(np.float32, 16), _np(np.float32, 16), 16),
                       {"BLOCK": 16})],
         _vadd_measure),
    Case("bias+GELU+residual fp16", [GELU_M, GELU_N], bias_gelu_residual,
         lambda: [Spec((_np(np.float16), _np(np.float16), _np(np.float16), _np(np.float16),
                        GELU_M * GELU_N, GELU_N), {"BLOCK": 1024})],
         _gelu_measure),
]

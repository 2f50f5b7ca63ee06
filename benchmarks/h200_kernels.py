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


@tilec.kernel
def softmax(in_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=m, other=float("-inf"))
    z = x - tl.max(x, axis=0)
    e = tl.exp(z)
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=m)


@tilec.kernel
def layernorm(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, stride, N, eps,
              BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(m, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=m, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride + cols, (xc * rstd * w + b).to(tl.float16), mask=m)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@tilec.kernel
def rmsnorm(x_ptr, w_ptr, y_ptr, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    rms = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride + cols, (x * rms * w).to(tl.float16), mask=m)


@tilec.kernel
def cross_entropy(logits_ptr, target_ptr, loss_ptr, stride, V, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = logits_ptr + row.to(tl.int64) * stride
    cols = tl.arange(0, BLOCK)
    run_max = float("-inf")
    run_sum = 0.0
    for start in range(0, V, BLOCK):
        m = start + cols < V
        x = tl.load(base + start + cols, mask=m, other=float("-inf")).to(tl.float32)
        new_max = tl.maximum(run_max, tl.max(x, axis=0))
        run_sum = run_sum * tl.exp(run_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
        run_max = new_max
    t = tl.load(target_ptr + row)
    picked = tl.load(base + t).to(tl.float32)
    tl.store(loss_ptr + row, run_max + tl.log(run_sum) - picked)


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
    @triton.jit
    def t_softmax(in_ptr, out_ptr, stride, n_cols, BLOCK: ttl.constexpr):
        row = ttl.program_id(0)
        cols = ttl.arange(0, BLOCK)
        m = cols < n_cols
        x = ttl.load(in_ptr + row * stride + cols, mask=m, other=float("-inf"))
        z = x - ttl.max(x, axis=0)
        e = ttl.exp(z)
        ttl.store(out_ptr + row * stride + cols, e / ttl.sum(e, axis=0), mask=m)

    @triton.jit
    def t_layernorm(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, stride, N, eps,
                    BLOCK: ttl.constexpr):
        row = ttl.program_id(0)
        cols = ttl.arange(0, BLOCK)
        m = cols < N
        x = ttl.load(x_ptr + row * stride + cols, mask=m, other=0.0).to(ttl.float32)
        mean = ttl.sum(x, axis=0) / N
        xc = ttl.where(m, x - mean, 0.0)
        var = ttl.sum(xc * xc, axis=0) / N
        rstd = 1.0 / ttl.sqrt(var + eps)
        w = ttl.load(w_ptr + cols, mask=m, other=0.0).to(ttl.float32)
        b = ttl.load(b_ptr + cols, mask=m, other=0.0).to(ttl.float32)
        ttl.store(y_ptr + row * stride + cols, (xc * rstd * w + b).to(ttl.float16), mask=m)
        ttl.store(mean_ptr + row, mean)
        ttl.store(rstd_ptr + row, rstd)

    @triton.jit
    def t_rmsnorm(x_ptr, w_ptr, y_ptr, stride, N, eps, BLOCK: ttl.constexpr):
        row = ttl.program_id(0)
        cols = ttl.arange(0, BLOCK)
        m = cols < N
        x = ttl.load(x_ptr + row * stride + cols, mask=m, other=0.0).to(ttl.float32)
        rms = ttl.rsqrt(ttl.sum(x * x, axis=0) / N + eps)
        w = ttl.load(w_ptr + cols, mask=m, other=0.0).to(ttl.float32)
        ttl.store(y_ptr + row * stride + cols, (x * rms * w).to(ttl.float16), mask=m)

    @triton.jit
    def t_cross_entropy(logits_ptr, target_ptr, loss_ptr, stride, V, BLOCK: ttl.constexpr):
        row = ttl.program_id(0)
        base = logits_ptr + row.to(ttl.int64) * stride
        cols = ttl.arange(0, BLOCK)
        run_max = float("-inf")
        run_sum = 0.0
        for start in range(0, V, BLOCK):
            m = start + cols < V
            x = ttl.load(base + start + cols, mask=m, other=float("-inf")).to(ttl.float32)
            new_max = ttl.maximum(run_max, ttl.max(x, axis=0))
            run_sum = run_sum * ttl.exp(run_max - new_max) + ttl.sum(ttl.exp(x - new_max), axis=0)
            run_max = new_max
        t = ttl.load(target_ptr + row)
        picked = ttl.load(base + t).to(ttl.float32)
        ttl.store(loss_ptr + row, run_max + ttl.log(run_sum) - picked)
else:
    t_add = t_bias_gelu_residual = t_softmax = t_layernorm = t_rmsnorm = t_cross_entropy = None


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


def _softmax_case(M: int, N: int, warps: int) -> Case:
    def specs() -> list[Spec]:
        return [Spec((_np(np.float32), _np(np.float32), N, N),
                     {"BLOCK": N, "num_warps": warps})]

    def measure(torch: Any, bench: Callable[..., float], dev: Any) -> dict[str, Any]:
        x = torch.randn(M, N, device=dev)
        y = torch.full_like(x, float("nan"))
        run = lambda: softmax[(M,)](x, y, N, N, BLOCK=N, num_warps=warps)  # noqa: E731
        run()
        torch.testing.assert_close(y, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-6)
        nbytes = 2 * 4 * M * N
        return {"unit": "TB/s", "tilec": _tbs(nbytes, bench(run)),
                "triton": _tbs(nbytes, bench(lambda: t_softmax[(M,)](x, y, N, N, BLOCK=N,
                                                                     num_warps=warps))),
                "torch": _tbs(nbytes, bench(lambda: torch.softmax(x, dim=1)))}
    return Case("softmax fp32", [M, N], softmax, specs, measure)


LN_M, LN_N = 16384, 8192


def _ln_specs() -> list[Spec]:
    return [Spec((_np(np.float16), _np(np.float16), _np(np.float16), _np(np.float16),
                  _np(np.float32), _np(np.float32), LN_N, LN_N, 1e-5),
                 {"BLOCK": LN_N, "num_warps": 8})]


def _ln_measure(torch: Any, bench: Callable[..., float], dev: Any) -> dict[str, Any]:
    M, N = LN_M, LN_N
    x = torch.randn(M, N, device=dev, dtype=torch.float16)
    w = torch.rand(N, device=dev, dtype=torch.float16)
    b = torch.randn(N, device=dev, dtype=torch.float16)
    y = torch.full_like(x, float("nan"))
    mean = torch.empty(M, device=dev)
    rstd = torch.empty(M, device=dev)
    run = lambda: layernorm[(M,)](x, w, b, y, mean, rstd, N, N, 1e-5, BLOCK=N,  # noqa: E731
                                  num_warps=8)
    run()
    ref = torch.nn.functional.layer_norm(x.float(), (N,), w.float(), b.float(), 1e-5)
    torch.testing.assert_close(y.float(), ref, rtol=1e-2, atol=1e-2)
    nbytes = 2 * 2 * M * N
    return {"unit": "TB/s", "tilec": _tbs(nbytes, bench(run)),
            "triton": _tbs(nbytes, bench(lambda: t_layernorm[(M,)](x, w, b, y, mean, rstd, N, N,
                                                                   1e-5, BLOCK=N, num_warps=8))),
            "torch": _tbs(nbytes, bench(lambda: torch.nn.functional.layer_norm(x, (N,), w, b,
                                                                               1e-5)))}


def _rms_specs() -> list[Spec]:
    return [Spec((_np(np.float16), _np(np.float16), _np(np.float16), LN_N, LN_N, 1e-6),
                 {"BLOCK": LN_N, "num_warps": 8})]


def _rms_measure(torch: Any, bench: Callable[..., float], dev: Any) -> dict[str, Any]:
    M, N = LN_M, LN_N
    x = torch.randn(M, N, device=dev, dtype=torch.float16)
    w = torch.rand(N, device=dev, dtype=torch.float16)
    y = torch.full_like(x, float("nan"))
    run = lambda: rmsnorm[(M,)](x, w, y, N, N, 1e-6, BLOCK=N, num_warps=8)  # noqa: E731
    run()
    xf = x.float()
    ref = xf * torch.rsqrt((xf * xf).mean(dim=1, keepdim=True) + 1e-6) * w.float()
    torch.testing.assert_close(y.float(), ref, rtol=1e-2, atol=1e-2)

    def torch_rms() -> Any:
        return torch.nn.functional.rms_norm(x, (N,), w, 1e-6)
    nbytes = 2 * 2 * M * N
    return {"unit": "TB/s", "tilec": _tbs(nbytes, bench(run)),
            "triton": _tbs(nbytes, bench(lambda: t_rmsnorm[(M,)](x, w, y, N, N, 1e-6, BLOCK=N,
                                                                 num_warps=8))),
            "torch": _tbs(nbytes, bench(torch_rms))}


CE_M, CE_V, CE_BLOCK = 8192, 131072, 4096


def _ce_specs() -> list[Spec]:
    try:
        import torch
        logits = torch.zeros(64, dtype=torch.bfloat16)
    except ImportError:  # pragma: no cover
        raise RuntimeError("prepare needs torch for bf16 stand-ins")
    return [Spec((logits, np.zeros(4, np.int64), _np(np.float32), CE_V, CE_V),
                 {"BLOCK": CE_BLOCK, "num_warps": 8})]


def _ce_measure(torch: Any, bench: Callable[..., float], dev: Any) -> dict[str, Any]:
    M, V = CE_M, CE_V
    logits = torch.randn(M, V, device=dev, dtype=torch.bfloat16)
    target = torch.randint(0, V, (M,), device=dev, dtype=torch.int64)
    loss = torch.full((M,), float("nan"), device=dev)
    run = lambda: cross_entropy[(M,)](logits, target, loss, V, V, BLOCK=CE_BLOCK,  # noqa: E731
                                      num_warps=8)
    run()
    ref = torch.nn.functional.cross_entropy(logits.float(), target, reduction="none")
    torch.testing.assert_close(loss, ref, rtol=1e-4, atol=1e-3)
    nbytes = 2 * M * V
    return {"unit": "TB/s", "tilec": _tbs(nbytes, bench(run)),
            "triton": _tbs(nbytes, bench(lambda: t_cross_entropy[(M,)](
                logits, target, loss, V, V, BLOCK=CE_BLOCK, num_warps=8))),
            "torch": _tbs(nbytes, bench(lambda: torch.nn.functional.cross_entropy(
                logits, target, reduction="none")))}


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
    _softmax_case(32768, 1024, 4),
    _softmax_case(8192, 8192, 16),
    Case("layernorm fwd fp16", [LN_M, LN_N], layernorm, _ln_specs, _ln_measure),
    Case("rmsnorm fwd fp16", [LN_M, LN_N], rmsnorm, _rms_specs, _rms_measure),
    Case("cross-entropy fwd bf16", [CE_M, CE_V], cross_entropy, _ce_specs, _ce_measure),
]

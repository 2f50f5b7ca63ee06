"""The LLM-kernel-library style kernels of tests/compat/llm_kernels.py against
torch autograd on the CPU target (forward and backward), and compiled for
sm90 and gfx942 (ptxas / ld.lld)."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import tilec as triton
from tests.compat import llm_kernels as K
from tests.compat.gpu_check import GPU_TARGETS, assemble
from tests.compat.sampling import sample


def _rows_per_program(n_rows: int, programs: int) -> int:
    return math.ceil(n_rows / programs)


@pytest.mark.parametrize("dt, offset", [(torch.float32, 0.0), (torch.float16, 1.0)])
def test_rms_norm(dt: torch.dtype, offset: float) -> None:
    torch.manual_seed(0)
    n_rows, n_cols, eps = 12, 100, 1e-6
    x = torch.randn(n_rows, n_cols, dtype=dt)
    w = torch.randn(n_cols, dtype=dt)
    dy = torch.randn(n_rows, n_cols, dtype=dt)
    y = torch.empty_like(x)
    rstd = torch.empty(n_rows, dtype=torch.float32)
    B = triton.next_power_of_2(n_cols)
    K.rms_norm_fwd[(n_rows,)](y, y.stride(0), x, x.stride(0), w, rstd, n_cols, eps, offset, BLOCK=B)
    progs = 4
    dx = torch.empty_like(x)
    dw = torch.empty(progs, n_cols, dtype=torch.float32)
    K.rms_norm_bwd[(progs,)](dy, dy.stride(0), dx, dx.stride(0), x, x.stride(0), w, rstd, dw,
                             dw.stride(0), n_rows, n_cols, offset,
                             _rows_per_program(n_rows, progs), BLOCK=B)
    xr, wr = x.float().requires_grad_(), w.float().requires_grad_()
    yr = xr * torch.rsqrt(xr.pow(2).mean(-1, keepdim=True) + eps) * (offset + wr)
    yr.backward(dy.float())
    tol = dict(rtol=1e-4, atol=1e-4) if dt == torch.float32 else dict(rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(y.float(), yr.detach(), **tol)
    torch.testing.assert_close(dx.float(), xr.grad, **tol)
    torch.testing.assert_close(dw.sum(0), wr.grad, rtol=1e-3, atol=1e-3 if dt == torch.float32 else 5e-2)


def test_layer_norm() -> None:
    torch.manual_seed(1)
    n_rows, n_cols, eps = 10, 72, 1e-5
    x = torch.randn(n_rows, n_cols) * 2 + 0.5
    w, b = torch.randn(n_cols), torch.randn(n_cols)
    dy = torch.randn(n_rows, n_cols)
    y = torch.empty_like(x)
    mean, rstd = torch.empty(n_rows), torch.empty(n_rows)
    B = triton.next_power_of_2(n_cols)
    K.layer_norm_fwd[(n_rows,)](y, x, w, b, mean, rstd, x.stride(0), n_cols, eps, BLOCK=B)
    progs = 3
    dx = torch.empty_like(x)
    dw, db = torch.empty(progs, n_cols), torch.empty(progs, n_cols)
    K.layer_norm_bwd[(progs,)](dx, dy, dw, db, x, w, mean, rstd, x.stride(0), n_rows, n_cols,
                               _rows_per_program(n_rows, progs), BLOCK=B)
    xr, wr, br = (t.clone().requires_grad_() for t in (x, w, b))
    yr = F.layer_norm(xr, (n_cols,), wr, br, eps)
    yr.backward(dy)
    torch.testing.assert_close(y, yr.detach(), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(dx, xr.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(dw.sum(0), wr.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(db.sum(0), br.grad, rtol=1e-4, atol=1e-4)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


@pytest.mark.parametrize("n_qh, n_kh, hd", [(4, 2, 32), (3, 1, 24)])
def test_rope(n_qh: int, n_kh: int, hd: int) -> None:
    torch.manual_seed(2)
    bsz, sl = 2, 5
    q = torch.randn(bsz, sl, n_qh, hd)
    k = torch.randn(bsz, sl, n_kh, hd)
    inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
    freqs = torch.outer(torch.arange(sl).float(), inv)
    emb = torch.cat((freqs, freqs), -1)
    cos, sin = emb.cos().contiguous(), emb.sin().contiguous()
    qr, kr = q.clone().requires_grad_(), k.clone().requires_grad_()
    q_ref = qr * cos[None, :, None, :] + _rotate_half(qr) * sin[None, :, None, :]
    k_ref = kr * cos[None, :, None, :] + _rotate_half(kr) * sin[None, :, None, :]
    qt, kt = q.clone(), k.clone()
    args = dict(n_qh=n_qh, n_kh=n_kh, hd=hd, pad_n_qh=triton.next_power_of_2(n_qh),
                pad_n_kh=triton.next_power_of_2(n_kh), pad_hd=triton.next_power_of_2(hd))
    K.rope_kernel[(bsz * sl,)](qt, qt.stride(1), kt, kt.stride(1), cos, cos.stride(0), sin,
                               sin.stride(0), sl, **args)
    torch.testing.assert_close(qt, q_ref.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(kt, k_ref.detach(), rtol=1e-5, atol=1e-5)
    dq, dk = torch.randn_like(q), torch.randn_like(k)
    (q_ref * dq).sum().add((k_ref * dk).sum()).backward()
    K.rope_kernel[(bsz * sl,)](dq, dq.stride(1), dk, dk.stride(1), cos, cos.stride(0), sin,
                               sin.stride(0), sl, **args, BACKWARD_PASS=True)
    torch.testing.assert_close(dq, qr.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(dk, kr.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["swiglu", "geglu"])
@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16])
def test_gated_mlp(kind: str, dt: torch.dtype) -> None:
    torch.manual_seed(3)
    rows, cols = 6, 200
    a, b = torch.randn(rows, cols, dtype=dt), torch.randn(rows, cols, dtype=dt)
    dc = torch.randn(rows, cols, dtype=dt)
    fwd, bwd = (K.swiglu_fwd, K.swiglu_bwd) if kind == "swiglu" else (K.geglu_tanh_fwd, K.geglu_tanh_bwd)
    B = triton.next_power_of_2(cols)
    c = torch.empty_like(a)
    fwd[(rows,)](a, b, c, a.stride(0), n_cols=cols, BLOCK=B)
    ar, br = a.float().requires_grad_(), b.float().requires_grad_()
    act = F.silu(ar) if kind == "swiglu" else F.gelu(ar, approximate="tanh")
    cr = act * br
    cr.backward(dc.float())
    da, db = a.clone(), b.clone()
    bwd[(rows,)](dc, da, db, a.stride(0), n_cols=cols, BLOCK=B)
    tol = dict(rtol=1e-5, atol=1e-5) if dt == torch.float32 else dict(rtol=2e-2, atol=5e-2)
    torch.testing.assert_close(c.float(), cr.detach(), **tol)
    torch.testing.assert_close(da.float(), ar.grad, **tol)
    torch.testing.assert_close(db.float(), br.grad, **tol)


def _cross_entropy(x: torch.Tensor, y: torch.Tensor, ignore_index: int, smoothing: float,
                   block: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean loss, dloss/dx): the library's host side, the gradient written over a copy."""
    g = x.clone()
    n_non_ignore = int((y != ignore_index).sum())
    loss = torch.zeros(x.shape[0], dtype=torch.float32)
    K.cross_entropy_kernel[(x.shape[0],)](g, g.stride(0), y, y.stride(0), loss, x.shape[1],
                                          n_non_ignore, ignore_index, label_smoothing=smoothing,
                                          BLOCK=block)
    return loss.sum(), g


CE_CASES = [(v, ii, ls, dt) for v in (100, 1000) for ii in (-100, 2) for ls in (0.0, 0.1)
            for dt in (torch.float32, torch.bfloat16)]


@pytest.mark.parametrize("vocab, ignore_index, smoothing, dt", sample(CE_CASES, 3))
def test_cross_entropy(vocab: int, ignore_index: int, smoothing: float, dt: torch.dtype) -> None:
    torch.manual_seed(vocab + ignore_index)
    n = 9
    x = (torch.randn(n, vocab) * 3).to(dt)
    y = torch.randint(0, vocab, (n,))
    y[::3] = ignore_index if ignore_index >= 0 else -100
    loss, g = _cross_entropy(x, y, ignore_index, smoothing, block=128)
    xr = x.float().requires_grad_()
    ref = F.cross_entropy(xr, y, ignore_index=ignore_index, label_smoothing=smoothing)
    ref.backward()
    torch.testing.assert_close(loss, ref.detach(), rtol=1e-4, atol=1e-4)
    tol = dict(rtol=1e-4, atol=1e-5) if dt == torch.float32 else dict(rtol=2e-2, atol=2e-3)
    torch.testing.assert_close(g.float(), xr.grad, **tol)


def test_fused_linear_cross_entropy() -> None:
    """Rows in chunks: logits = h W^T (torch), the CE kernel writes d logits in
    place, then dh = d logits W and dW += d logits^T h (the libraries' scheme)."""
    torch.manual_seed(5)
    n, hidden, vocab, chunk = 24, 32, 300, 8
    h, w = torch.randn(n, hidden), torch.randn(vocab, hidden) * 0.2
    y = torch.randint(0, vocab, (n,))
    y[5] = -100
    n_non_ignore = int((y != -100).sum())
    dh, dw, total = torch.zeros_like(h), torch.zeros_like(w), torch.zeros(())
    for s in range(0, n, chunk):
        logits = h[s:s + chunk] @ w.T
        loss = torch.zeros(logits.shape[0])
        K.cross_entropy_kernel[(logits.shape[0],)](logits, logits.stride(0), y[s:s + chunk], 1,
                                                   loss, vocab, n_non_ignore, -100,
                                                   label_smoothing=0.05, BLOCK=128)
        total += loss.sum()
        dh[s:s + chunk] = logits @ w
        dw += logits.T @ h[s:s + chunk]
    hr, wr = h.clone().requires_grad_(), w.clone().requires_grad_()
    ref = F.cross_entropy(hr @ wr.T, y, ignore_index=-100, label_smoothing=0.05)
    ref.backward()
    torch.testing.assert_close(total, ref.detach(), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(dh, hr.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(dw, wr.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(log_target: bool) -> None:
    torch.manual_seed(6)
    n, v = 7, 150
    pred = torch.log_softmax(torch.randn(n, v), -1)
    true = torch.softmax(torch.randn(n, v), -1)
    if log_target:
        true = true.log()
    loss, grad = torch.empty(n), torch.empty(n, v)
    K.kl_div_kernel[(n,)](pred, true, loss, grad, v, v, 1.0 / n, LOG_TARGET=log_target, BLOCK=64)
    pr = pred.clone().requires_grad_()
    ref = F.kl_div(pr, true, reduction="batchmean", log_target=log_target)
    ref.backward()
    torch.testing.assert_close(loss.sum(), ref.detach(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(grad, pr.grad, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("beta", [0.5, 0.1])
def test_jsd(beta: float) -> None:
    torch.manual_seed(7)
    n, v = 6, 300
    x = torch.log_softmax(torch.randn(n, v), -1)
    y = torch.log_softmax(torch.randn(n, v), -1)
    loss, dx = torch.empty(n), torch.empty(n, v)
    K.jsd_kernel[(n,)](x, x.stride(0), y, y.stride(0), loss, dx, v, n, beta=beta, BLOCK=128)
    xr = x.clone().requires_grad_()
    q, p = xr.exp(), y.exp()
    log_m = torch.log(beta * p + (1 - beta) * q)
    ref = (beta * p * (y - log_m) + (1 - beta) * q * (xr - log_m)).sum() / n
    ref.backward()
    torch.testing.assert_close(loss.sum(), ref.detach(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(dx, xr.grad, rtol=1e-4, atol=1e-7)


# ------------------------------------------------------------------ GPU targets
GPU_CASES = [
    (K.rms_norm_fwd, "*bf16:16,i32,*bf16:16,i32,*bf16:16,*fp32:16,i32,fp32,fp32", dict(BLOCK=1024)),
    (K.rms_norm_bwd, "*bf16:16,i32,*bf16:16,i32,*bf16:16,i32,*bf16:16,*fp32:16,*fp32:16,i32,i32,i32,"
                     "fp32,i32", dict(BLOCK=1024)),
    (K.layer_norm_fwd, "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,*fp32:16,i32,i32,fp32",
     dict(BLOCK=1024)),
    (K.layer_norm_bwd, "*fp16:16,*fp16:16,*fp32:16,*fp32:16,*fp16:16,*fp16:16,*fp32:16,*fp32:16,i32,"
                       "i32,i32,i32", dict(BLOCK=1024)),
    (K.rope_kernel, "*bf16:16,i32,*bf16:16,i32,*fp32:16,i32,*fp32:16,i32,i32",
     dict(n_qh=32, n_kh=8, hd=128, pad_n_qh=32, pad_n_kh=8, pad_hd=128)),
    (K.swiglu_fwd, "*bf16:16,*bf16:16,*bf16:16,i32", dict(n_cols=4096, BLOCK=4096)),
    (K.swiglu_bwd, "*bf16:16,*bf16:16,*bf16:16,i32", dict(n_cols=4096, BLOCK=4096)),
    (K.geglu_tanh_fwd, "*bf16:16,*bf16:16,*bf16:16,i32", dict(n_cols=4096, BLOCK=4096)),
    (K.geglu_tanh_bwd, "*bf16:16,*bf16:16,*bf16:16,i32", dict(n_cols=4096, BLOCK=4096)),
    (K.cross_entropy_kernel, "*bf16:16,i32,*i64:16,i32,*fp32:16,i32,i32,i32",
     dict(label_smoothing=0.1, BLOCK=4096)),
    (K.kl_div_kernel, "*fp32:16,*fp32:16,*fp32:16,*fp32:16,i32,i32,fp32",
     dict(LOG_TARGET=False, BLOCK=1024)),
    (K.jsd_kernel, "*fp32:16,i32,*fp32:16,i32,*fp32:16,*fp32:16,i32,i32", dict(beta=0.5, BLOCK=1024)),
]


@pytest.mark.parametrize("target", GPU_TARGETS)
@pytest.mark.parametrize("case", sample(list(range(len(GPU_CASES))), 4))
def test_compiles_for_gpus(case: int, target: str) -> None:
    kernel, sig, cx = GPU_CASES[case]
    assemble(kernel, target, sig, cx)

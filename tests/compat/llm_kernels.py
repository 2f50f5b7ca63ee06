"""Kernels in the style of the open-source LLM kernel libraries (fused norms
and their backward, RoPE, SwiGLU / GeGLU, chunked cross-entropy with
ignore_index and label smoothing, fused linear cross-entropy, KL divergence,
JSD), written for this suite as a Triton user writes them (`import tilec as
triton`); tests/compat/test_llm_kernels.py checks them against torch autograd."""
from __future__ import annotations

import tilec as triton
import tilec.language as tl


# ------------------------------------------------------------------ RMSNorm
@triton.jit
def rms_norm_fwd(Y, y_stride, X, x_stride, W, RSTD, n_cols, eps, offset,
                 BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(X + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(RSTD + row, rstd)
    tl.store(Y + row * y_stride + cols, (x * rstd * (offset + w)).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def rms_norm_bwd(DY, dy_stride, DX, dx_stride, X, x_stride, W, RSTD, DW, dw_stride,
                 n_rows, n_cols, offset, rows_per_program, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    first = pid * rows_per_program
    last = min(first + rows_per_program, n_rows)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32) + offset
    dw = tl.zeros((BLOCK,), dtype=tl.float32)
    for row in range(first, last):
        x = tl.load(X + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(DY + row * dy_stride + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(RSTD + row)
        m = dy * w
        dx = rstd * m - rstd * rstd * rstd * x * (tl.sum(m * x, axis=0) / n_cols)
        dw += dy * x * rstd
        tl.store(DX + row * dx_stride + cols, dx.to(DX.dtype.element_ty), mask=mask)
    tl.store(DW + pid * dw_stride + cols, dw, mask=mask)


# ------------------------------------------------------------------ LayerNorm
@triton.jit
def layer_norm_fwd(Y, X, W, B, MEAN, RSTD, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(xc * xc, axis=0) / n_cols + eps)
    w = tl.load(W + cols, mask=mask)
    b = tl.load(B + cols, mask=mask)
    tl.store(MEAN + row, mean)
    tl.store(RSTD + row, rstd)
    tl.store(Y + row * stride + cols, (xc * rstd * w + b).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def layer_norm_bwd(DX, DY, DW, DB, X, W, MEAN, RSTD, stride, n_rows, n_cols,
                   rows_per_program, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    dw = tl.zeros((BLOCK,), dtype=tl.float32)
    db = tl.zeros((BLOCK,), dtype=tl.float32)
    for row in range(pid * rows_per_program, min((pid + 1) * rows_per_program, n_rows)):
        x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(DY + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        xhat = tl.where(mask, (x - tl.load(MEAN + row)) * tl.load(RSTD + row), 0.0)
        wdy = w * dy
        c1 = tl.sum(xhat * wdy, axis=0) / n_cols
        c2 = tl.sum(wdy, axis=0) / n_cols
        dx = (wdy - (xhat * c1 + c2)) * tl.load(RSTD + row)
        tl.store(DX + row * stride + cols, dx.to(DX.dtype.element_ty), mask=mask)
        dw += dy * xhat
        db += dy
    tl.store(DW + pid * n_cols + cols, dw, mask=mask)
    tl.store(DB + pid * n_cols + cols, db, mask=mask)


# ------------------------------------------------------------------ RoPE
@triton.jit
def rope_kernel(q_ptr, q_row_stride, k_ptr, k_row_stride, cos, cos_row_stride, sin,
                sin_row_stride, seq_len, n_qh: tl.constexpr, n_kh: tl.constexpr,
                hd: tl.constexpr, pad_n_qh: tl.constexpr, pad_n_kh: tl.constexpr,
                pad_hd: tl.constexpr, BACKWARD_PASS: tl.constexpr = False):
    pid = tl.program_id(0)
    q_ptr = q_ptr + pid * q_row_stride
    k_ptr = k_ptr + pid * k_row_stride
    pos = pid % seq_len
    half = tl.arange(0, pad_hd // 2)
    hmask = half < hd // 2
    c = tl.load(cos + pos * cos_row_stride + half, mask=hmask, other=0)
    s = tl.load(sin + pos * sin_row_stride + half, mask=hmask, other=0)
    q_offs = tl.arange(0, pad_n_qh)[:, None] * hd + half[None, :]
    k_offs = tl.arange(0, pad_n_kh)[:, None] * hd + half[None, :]
    q_mask = (tl.arange(0, pad_n_qh)[:, None] < n_qh) & hmask[None, :]
    k_mask = (tl.arange(0, pad_n_kh)[:, None] < n_kh) & hmask[None, :]
    q1 = tl.load(q_ptr + q_offs, mask=q_mask, other=0).to(s.dtype)
    q2 = tl.load(q_ptr + q_offs + hd // 2, mask=q_mask, other=0).to(s.dtype)
    k1 = tl.load(k_ptr + k_offs, mask=k_mask, other=0).to(s.dtype)
    k2 = tl.load(k_ptr + k_offs + hd // 2, mask=k_mask, other=0).to(s.dtype)
    if not BACKWARD_PASS:
        s = s
    else:
        s = -s
    tl.store(q_ptr + q_offs, q1 * c - q2 * s, mask=q_mask)
    tl.store(q_ptr + q_offs + hd // 2, q2 * c + q1 * s, mask=q_mask)
    tl.store(k_ptr + k_offs, k1 * c - k2 * s, mask=k_mask)
    tl.store(k_ptr + k_offs + hd // 2, k2 * c + k1 * s, mask=k_mask)


# ------------------------------------------------------------------ gated MLPs
@triton.jit
def _silu(x):
    return x * tl.sigmoid(x)


@triton.jit
def swiglu_fwd(a_ptr, b_ptr, c_ptr, stride, n_cols: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    a = tl.load(a_ptr + row * stride + offs, mask=mask, other=0).to(tl.float32)
    b = tl.load(b_ptr + row * stride + offs, mask=mask, other=0)
    c = _silu(a).cast(b.dtype) * b
    tl.store(c_ptr + row * stride + offs, c, mask=mask)


@triton.jit
def swiglu_bwd(dc_ptr, a_ptr, b_ptr, stride, n_cols: tl.constexpr, BLOCK: tl.constexpr):
    """Recomputes silu(a); writes da into a and db into b (in place)."""
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    dc = tl.load(dc_ptr + row * stride + offs, mask=mask, other=0)
    a = tl.load(a_ptr + row * stride + offs, mask=mask, other=0).to(tl.float32)
    b = tl.load(b_ptr + row * stride + offs, mask=mask, other=0)
    sig = tl.sigmoid(a)
    silu = a * sig
    db = dc * silu
    da = dc * (silu * (1 - sig) + sig) * b
    tl.store(a_ptr + row * stride + offs, da, mask=mask)
    tl.store(b_ptr + row * stride + offs, db, mask=mask)


@triton.jit
def geglu_tanh_fwd(a_ptr, b_ptr, c_ptr, stride, n_cols: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    a = tl.load(a_ptr + row * stride + offs, mask=mask, other=0).to(tl.float32)
    b = tl.load(b_ptr + row * stride + offs, mask=mask, other=0)
    k = 0.7978845608028654   # sqrt(2 / pi)
    gelu = 0.5 * a * (1 + tl.tanh(k * (a + 0.044715 * a * a * a)))
    tl.store(c_ptr + row * stride + offs, gelu.cast(b.dtype) * b, mask=mask)


@triton.jit
def geglu_tanh_bwd(dc_ptr, a_ptr, b_ptr, stride, n_cols: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    dc = tl.load(dc_ptr + row * stride + offs, mask=mask, other=0)
    a = tl.load(a_ptr + row * stride + offs, mask=mask, other=0).to(tl.float32)
    b = tl.load(b_ptr + row * stride + offs, mask=mask, other=0)
    k = 0.7978845608028654
    inner = k * (a + 0.044715 * a * a * a)
    t = tl.tanh(inner)
    gelu = 0.5 * a * (1 + t)
    db = dc * gelu
    dgelu = 0.5 * (1 + t) + 0.5 * a * (1 - t * t) * k * (1 + 3 * 0.044715 * a * a)
    da = dc * b * dgelu
    tl.store(a_ptr + row * stride + offs, da, mask=mask)
    tl.store(b_ptr + row * stride + offs, db, mask=mask)


# ------------------------------------------------------------------ losses
@triton.jit
def cross_entropy_kernel(X, x_stride, Y, y_stride, loss_ptr, n_cols, n_non_ignore: int,
                         ignore_index, label_smoothing: tl.constexpr, BLOCK: tl.constexpr):
    """One row of logits per program, read in BLOCK-wide chunks (online softmax);
    the gradient is written over the logits (X) in a second pass."""
    row = tl.program_id(0).to(tl.int64)
    X += row * x_stride
    y = tl.load(Y + row * y_stride)
    if y == ignore_index:
        for i in range(0, n_cols, BLOCK):
            offs = i + tl.arange(0, BLOCK)
            tl.store(X + offs, 0.0, mask=offs < n_cols)
        tl.store(loss_ptr + row, 0.0)
        return
    m = float("-inf")
    d = 0.0
    x_y = tl.load(X + y).cast(tl.float32)
    scaled_x_sum = 0.0
    eps = label_smoothing / n_cols
    for i in range(0, n_cols, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        x = tl.load(X + offs, mask=offs < n_cols, other=float("-inf")).cast(tl.float32)
        if label_smoothing > 0:
            scaled_x_sum += tl.sum(tl.where(offs < n_cols, -eps * x, 0.0))
        m_new = tl.maximum(m, tl.max(x))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new))
        m = m_new
    lse = m + tl.log(d)
    for i in range(0, n_cols, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        x = tl.load(X + offs, mask=offs < n_cols, other=float("-inf")).cast(tl.float32)
        g = (tl.exp(x - m) / d - eps) / n_non_ignore
        g = tl.where(offs == y, g - (1 - label_smoothing) / n_non_ignore, g)
        tl.store(X + offs, g, mask=offs < n_cols)
    loss = lse - x_y
    if label_smoothing > 0:
        loss = loss * (1 - label_smoothing) + scaled_x_sum + label_smoothing * lse
    tl.store(loss_ptr + row, loss / n_non_ignore)


@triton.jit
def kl_div_kernel(y_pred, y_true, loss, grad, stride, n_cols, scale, LOG_TARGET: tl.constexpr,
                  BLOCK: tl.constexpr):
    """Per element y_true * (log y_true - y_pred) (log_target: exp(t) * (t - y_pred));
    a row's sum scaled into loss, the gradient w.r.t. y_pred into grad."""
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, n_cols, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        mask = offs < n_cols
        p = tl.load(y_pred + row * stride + offs, mask=mask, other=0.0)
        t = tl.load(y_true + row * stride + offs, mask=mask, other=0.0)
        if not LOG_TARGET:
            el = t * (tl.log(tl.maximum(t, 1e-10)) - p)
            g = -t
        else:
            el = tl.exp(t) * (t - p)
            g = -tl.exp(t)
        acc += tl.where(mask, el, 0.0)
        tl.store(grad + row * stride + offs, g * scale, mask=mask)
    tl.store(loss + row, tl.sum(acc) * scale)


@triton.jit
def jsd_kernel(X, x_stride, Y, y_stride, loss, dX, n_cols, n_rows, beta: tl.constexpr,
               BLOCK: tl.constexpr):
    """Generalized JSD of student log-probs X and teacher log-probs Y with
    M = beta P + (1 - beta) Q; loss per row (batchmean), dL/dX."""
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, n_cols, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.load(X + row * x_stride + offs, mask=mask, other=float("-inf")).to(tl.float32)
        y = tl.load(Y + row * y_stride + offs, mask=mask, other=float("-inf")).to(tl.float32)
        q = tl.exp(x)
        p = tl.exp(y)
        log_m = tl.log(beta * p + (1 - beta) * q)
        el = beta * p * (y - log_m) + (1 - beta) * q * (x - log_m)
        acc += tl.where(mask, el, 0.0)
        g = (1 - beta) * q * (x - log_m) / n_rows
        tl.store(dX + row * x_stride + offs, g, mask=mask)
    tl.store(loss + row, tl.sum(acc) / n_rows)

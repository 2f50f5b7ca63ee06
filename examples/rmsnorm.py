"""RMSNorm forward: y = x / sqrt(mean(x**2) + eps) * w, fp16 in and out, fp32
math, one row per program (BLOCK >= N; the tail is masked).

    python examples/rmsnorm.py
"""
import numpy as np

import tilec
import tilec.language as tl


@tilec.kernel
def rms_norm_fwd(X, Y, W, Rstd, stride_x, stride_y, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.).to(tl.float32)
    ms = tl.sum(x * x, axis=0) / N
    rstd = tl.rsqrt(ms + eps)
    tl.store(Rstd + row, rstd)
    w = tl.load(W + cols, mask=mask, other=0.).to(tl.float32)
    y = x * rstd * w
    tl.store(Y + row * stride_y + cols, y.to(tl.float16), mask=mask)


# What the test suite compiles for every target: (kernel, signature, constexprs).
SPECS = [
    (rms_norm_fwd, "*fp16,*fp16,*fp16,*fp32,i32:16,i32:16,i32,fp32", {"BLOCK_SIZE": 4096}),
    (rms_norm_fwd, "*fp16,*fp16,*fp16,*fp32,i32:16,i32:16,i32:16,fp32", {"BLOCK_SIZE": 1024}),
]


def rms_norm(x: np.ndarray, w: np.ndarray, eps: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    m, n = x.shape
    y = np.empty((m, n), np.float16)
    rstd = np.empty(m, np.float32)
    block = max(16, 1 << (n - 1).bit_length())
    rms_norm_fwd[(m,)](x, y, w, rstd, x.strides[0] // 2, y.strides[0] // 2, n, eps,
                       BLOCK_SIZE=block)
    return y, rstd


def check(m: int, n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.standard_normal((m, n + 8)).astype(np.float16)[:, :n]   # strided rows
    w = rng.standard_normal(n).astype(np.float16)
    eps = 1e-6
    y, rstd = rms_norm(x, w, eps)
    x32 = x.astype(np.float32)
    rstd_ref = 1 / np.sqrt((x32 * x32).mean(axis=1) + eps)
    y_ref = x32 * rstd_ref[:, None] * w.astype(np.float32)
    np.testing.assert_allclose(rstd, rstd_ref, rtol=1e-4)
    np.testing.assert_allclose(y.astype(np.float32), y_ref, rtol=1e-2, atol=1e-2)


def main() -> None:
    check(31, 1000)
    check(4, 4096)
    check(3, 1)
    print("rmsnorm: ok")


if __name__ == "__main__":
    main()

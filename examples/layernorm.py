"""LayerNorm forward, as in Triton's layer-norm tutorial: fp16 in and out,
fp32 math, weight and bias, eps; writes each row's mean and 1/std (fp32).

* `layer_norm_fwd`: one row per program in one block (BLOCK >= N);
* `layer_norm_fwd_looped`: N larger than BLOCK; loops over column blocks to
  accumulate the mean, then the variance (of x - mean, like the tutorial,
  so no cancellation), then normalizes.

    python examples/layernorm.py
"""
import numpy as np

import tilec
import tilec.language as tl


@tilec.kernel
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    b = tl.load(B + cols, mask=mask).to(tl.float32)
    y = xc * rstd * w + b
    tl.store(Y + row * stride + cols, y.to(tl.float16), mask=mask)


@tilec.kernel
def layer_norm_fwd_looped(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    # the mean
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    # the variance
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    # normalize and apply the linear transformation
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


SIG = "*fp16,*fp16,*fp16,*fp16,*fp32,*fp32,i32:16,i32,fp32"
# What the test suite compiles for every target: (kernel, signature, constexprs).
SPECS = [
    (layer_norm_fwd, SIG, {"BLOCK_SIZE": 1024}),
    (layer_norm_fwd_looped, SIG, {"BLOCK_SIZE": 1024}),
]


def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-5,
               block: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """y, mean, rstd; one block per row when it fits, else the looped kernel."""
    m, n = x.shape
    y = np.empty_like(x)
    mean = np.empty(m, np.float32)
    rstd = np.empty(m, np.float32)
    pow2 = 1 << max(0, (n - 1).bit_length())
    if block is None and pow2 <= 4096:
        layer_norm_fwd[(m,)](x, y, w, b, mean, rstd, x.strides[0] // 2, n, eps,
                             BLOCK_SIZE=max(16, pow2))
    else:
        layer_norm_fwd_looped[(m,)](x, y, w, b, mean, rstd, x.strides[0] // 2, n, eps,
                                    BLOCK_SIZE=block or 1024)
    return y, mean, rstd


def reference(x: np.ndarray, w: np.ndarray, b: np.ndarray,
              eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x32 = x.astype(np.float32)
    mean = x32.mean(axis=1)
    var = ((x32 - mean[:, None]) ** 2).mean(axis=1)
    rstd = 1 / np.sqrt(var + eps)
    y = (x32 - mean[:, None]) * rstd[:, None] * w.astype(np.float32) + b.astype(np.float32)
    return y.astype(np.float16), mean, rstd


def check(m: int, n: int, block: int | None = None) -> None:
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((m, n)) * 2 + 3).astype(np.float16)
    w = rng.standard_normal(n).astype(np.float16)
    b = rng.standard_normal(n).astype(np.float16)
    eps = 1e-5
    y, mean, rstd = layer_norm(x, w, b, eps, block)
    y_ref, mean_ref, rstd_ref = reference(x, w, b, eps)
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rstd, rstd_ref, rtol=1e-4)
    np.testing.assert_allclose(y.astype(np.float32), y_ref.astype(np.float32), rtol=1e-2, atol=1e-2)


def main() -> None:
    check(33, 1000)           # one block per row, masked
    check(8, 4096)            # one block, exact
    check(5, 1)
    check(7, 5000)            # looped: N > BLOCK
    check(4, 3000, block=256)
    print("layernorm: ok")


if __name__ == "__main__":
    main()

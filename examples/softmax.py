"""Row softmax, as in Triton's fused-softmax tutorial.

`softmax_kernel` handles one row per program (BLOCK >= n_cols, the tail masked
with -inf so it adds exp(-inf) = 0 to the sum); `softmax_persistent` launches
fewer programs than rows and walks the rows grid-stride:
`for row in range(tl.program_id(0), n_rows, tl.num_programs(0))`.

    python examples/softmax.py
"""
import numpy as np

import tilec
import tilec.language as tl


@tilec.kernel
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols,
                   BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x = x.to(tl.float32)
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    den = tl.sum(num, axis=0)
    y = num / den
    tl.store(out_ptr + row * out_row_stride + cols, y, mask=mask)


@tilec.kernel
def softmax_persistent(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols,
                       BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
        x = x.to(tl.float32)
        z = x - tl.max(x, axis=0)
        num = tl.exp(z)
        den = tl.sum(num, axis=0)
        tl.store(out_ptr + row * out_row_stride + cols, num / den, mask=mask)


# What the test suite compiles for every target: (kernel, signature, constexprs).
SPECS = [
    (softmax_kernel, "*fp32,*fp32,i32:16,i32:16,i32", {"BLOCK": 1024}),
    (softmax_kernel, "*fp16,*fp16,i32:16,i32:16,i32", {"BLOCK": 2048}),
    (softmax_persistent, "*fp32,*fp32,i32:16,i32:16,i32,i32", {"BLOCK": 1024}),
]


def reference(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def check(n_rows: int = 37, n_cols: int = 781, dtype: type = np.float32) -> None:
    rng = np.random.default_rng(0)
    block = max(16, 1 << (n_cols - 1).bit_length())
    x = (rng.standard_normal((n_rows, n_cols + 3)) * 4).astype(dtype)   # padded rows
    want = reference(x[:, :n_cols])
    tol = dict(rtol=1e-5, atol=1e-7) if dtype == np.float32 else dict(rtol=2e-3, atol=1e-4)
    out = np.zeros((n_rows, n_cols + 5), dtype)
    softmax_kernel[(n_rows,)](out, x, x.shape[1], out.shape[1], n_cols, BLOCK=block)
    np.testing.assert_allclose(out[:, :n_cols], want, **tol)
    assert not out[:, n_cols:].any()
    out2 = np.zeros_like(out)
    programs = max(1, n_rows // 5)
    softmax_persistent[(programs,)](out2, x, x.shape[1], out2.shape[1], n_rows, n_cols,
                                    BLOCK=block)
    np.testing.assert_allclose(out2[:, :n_cols], want, **tol)
    assert not out2[:, n_cols:].any()


def main() -> None:
    check(37, 781, np.float32)
    check(64, 1024, np.float32)
    check(5, 1, np.float32)
    check(9, 2000, np.float16)
    print("softmax: ok")


if __name__ == "__main__":
    main()

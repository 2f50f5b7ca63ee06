"""Blocked matrix multiply C = A @ B, as in Triton's matmul tutorial.

Each program computes one BLOCK_M x BLOCK_N tile of C, walking K in steps of
BLOCK_K with `tl.dot` accumulating in float32 (int32 for int8).  Masks cover
sizes that are not multiples of the blocks; strides make any row/column-major
view work.  `tl.dot` runs on the vector units (no matrix units yet).

    python examples/matmul.py
"""
import numpy as np

import tilec
import tilec.language as tl


@tilec.kernel
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
           stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
           BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, c,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@tilec.kernel
def matmul_i8(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              BLOCK_K: tl.constexpr):
    """int8 x int8 -> int32, row-major, one tile of C per program."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.int32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :],
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


SIG = "*{t}:16,*{t}:16,*{t}:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1"
# What the test suite compiles for every target: (kernel, signature, constexprs).
SPECS = [
    (matmul, SIG.format(t="fp32"), {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16}),
    (matmul, SIG.format(t="fp16"), {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}),
    (matmul_i8, "*i8,*i8,*i32,i32,i32,i32", {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}),
]


def check(m: int, n: int, k: int, dtype: type = np.float32, transpose_b: bool = False) -> None:
    rng = np.random.default_rng(m * n + k)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((n, k)).astype(dtype).T if transpose_b else \
        rng.standard_normal((k, n)).astype(dtype)
    c = np.full((m, n), np.nan, dtype)
    bm, bn, bk = 32, 32, 16
    grid = (tilec.cdiv(m, bm), tilec.cdiv(n, bn))
    matmul[grid](a, b, c, m, n, k, a.strides[0] // a.itemsize, a.strides[1] // a.itemsize,
                 b.strides[0] // b.itemsize, b.strides[1] // b.itemsize,
                 c.strides[0] // c.itemsize, c.strides[1] // c.itemsize,
                 BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk)
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-4 if dtype == np.float32 else 2e-2
    np.testing.assert_allclose(c, want, rtol=tol, atol=tol * np.sqrt(k))


def check_i8(m: int, n: int, k: int) -> None:
    rng = np.random.default_rng(k)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    c = np.zeros((m, n), np.int32)
    matmul_i8[(tilec.cdiv(m, 16), tilec.cdiv(n, 16))](a, b, c, m, n, k, BLOCK_M=16,
                                                      BLOCK_N=16, BLOCK_K=16)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))


def main() -> None:
    check(64, 64, 64)
    check(100, 70, 45)
    check(33, 129, 200, transpose_b=True)
    check(50, 40, 30, np.float16)
    check_i8(40, 24, 100)
    print("matmul: ok")


if __name__ == "__main__":
    main()

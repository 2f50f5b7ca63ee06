"""A 2-D strided elementwise kernel: out = x * scale + bias[None, :] over an M x N matrix.

Rows may be padded (row strides differ from N), both dimensions are masked and
the grid has one program per (row block, column block).  Run it to check the
result against NumPy:

    python examples/elementwise_2d.py

Its IR and artifacts come from the command line, e.g.

    tilec ir examples/elementwise_2d.py --target cpu --stage cpu \
        --signature "*fp32,*fp32,*fp32,fp32,i32,i32,i32,i32" \
        --constexpr BLOCK_M=4 BLOCK_N=16
"""
import numpy as np

import tilec
import tilec.language as tl


@tilec.kernel
def scale_bias_2d(x_ptr, bias_ptr, out_ptr, scale, M, N, stride_x, stride_out,
                  BLOCK_M: tl.constexpr = 16, BLOCK_N: tl.constexpr = 64):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    row_ok = rows < M
    col_ok = cols < N
    mask = row_ok[:, None] & col_ok[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0)
    bias = tl.load(bias_ptr + cols, mask=col_ok, other=0.0)
    tl.store(out_ptr + rows[:, None] * stride_out + cols[None, :], x * scale + bias[None, :],
             mask=mask)


# What the test suite compiles for every target: (kernel, signature, constexprs).
SPECS = [(scale_bias_2d, "*fp32,*fp32,*fp32,fp32,i32,i32,i32,i32", {"BLOCK_M": 16, "BLOCK_N": 64})]


def main() -> None:
    m, n = 100, 300
    x_full = np.random.rand(m, n + 20).astype(np.float32)   # row stride n + 20
    x = x_full[:, :n]
    bias = np.random.rand(n).astype(np.float32)
    out_full = np.zeros((m, n + 7), dtype=np.float32)       # row stride n + 7
    scale = 1.5
    bm, bn = 16, 64
    grid = (tilec.cdiv(m, bm), tilec.cdiv(n, bn))
    scale_bias_2d[grid](x_full, bias, out_full, scale, m, n, x_full.shape[1],
                        out_full.shape[1], BLOCK_M=bm, BLOCK_N=bn)
    expected = x * np.float32(scale) + bias[None, :]
    np.testing.assert_allclose(out_full[:, :n], expected, rtol=1e-6)
    assert not out_full[:, n:].any(), "the kernel wrote outside its columns"
    print("elementwise_2d: ok")


if __name__ == "__main__":
    main()

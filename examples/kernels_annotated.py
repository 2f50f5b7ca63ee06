"""Kernels whose runtime parameters carry their types, so the command line
needs no `--signature`:

    tilec compile examples/kernels_annotated.py --target cpu -o out
    tilec ir examples/kernels_annotated.py --target cpu --kernel scale --stage llir

Run it to launch both kernels and check them against NumPy.
"""
import numpy as np

import tilec
import tilec.language as tl


@tilec.kernel
def scale(x_ptr: "*fp32", out_ptr: "*fp32", alpha: "fp32", n: "i32",
          BLOCK: tl.constexpr = 256):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=m, other=0.0), mask=m)


@tilec.kernel
def relu(x_ptr: "*fp32", out_ptr: "*fp32", n: "i32", BLOCK: tl.constexpr = 256):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=m)


# What the test suite compiles for every target: (kernel, signature, constexprs).
SPECS = [(scale, None, {}), (relu, None, {})]


def main() -> None:
    n = 10_000
    x = (np.random.rand(n).astype(np.float32) - 0.5)
    out = np.empty_like(x)
    scale[(tilec.cdiv(n, 256),)](x, out, 3.0, n)
    np.testing.assert_allclose(out, np.float32(3.0) * x, rtol=1e-6)
    relu[(tilec.cdiv(n, 256),)](x, out, n)
    np.testing.assert_array_equal(out, np.maximum(x, 0))
    print("kernels_annotated: ok")


if __name__ == "__main__":
    main()

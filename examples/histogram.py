"""A histogram with atomics: many programs each read BLOCK int32 values and
add 1 to their bins with `tl.atomic_add` (values outside [0, num_bins) and
masked-off lanes are skipped).

    python examples/histogram.py
"""
import numpy as np

import tilec
import tilec.language as tl


@tilec.kernel
def histogram_kernel(x_ptr, hist_ptr, n, num_bins, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    ok = mask & (x >= 0) & (x < num_bins)
    tl.atomic_add(hist_ptr + x, 1, mask=ok)


@tilec.kernel
def weighted_histogram_kernel(x_ptr, w_ptr, hist_ptr, n, num_bins, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    w = tl.load(w_ptr + offs, mask=mask, other=0.)
    ok = mask & (x >= 0) & (x < num_bins)
    tl.atomic_add(hist_ptr + x, w, mask=ok)


# What the test suite compiles for every target: (kernel, signature, constexprs).
SPECS = [
    (histogram_kernel, "*i32,*i32,i32,i32", {"BLOCK": 1024}),
    (weighted_histogram_kernel, "*i32,*fp32,*fp32,i32,i32", {"BLOCK": 512}),
]


def check(n: int = 100_003, num_bins: int = 77, block: int = 1024) -> None:
    rng = np.random.default_rng(n)
    x = rng.integers(-5, num_bins + 5, n).astype(np.int32)    # some out of range
    hist = np.zeros(num_bins, np.int32)
    histogram_kernel[(tilec.cdiv(n, block),)](x, hist, n, num_bins, BLOCK=block)
    want = np.bincount(x[(x >= 0) & (x < num_bins)], minlength=num_bins)
    np.testing.assert_array_equal(hist, want)
    w = rng.integers(0, 4, n).astype(np.float32) * 0.25      # exact in fp32 sums
    whist = np.zeros(num_bins, np.float32)
    weighted_histogram_kernel[(tilec.cdiv(n, 512),)](x, w, whist, n, num_bins, BLOCK=512)
    ok = (x >= 0) & (x < num_bins)
    np.testing.assert_array_equal(whist, np.bincount(x[ok], weights=w[ok], minlength=num_bins))


def main() -> None:
    check(100_003, 77)
    check(5, 3)
    check(1 << 20, 256)
    print("histogram: ok")


if __name__ == "__main__":
    main()

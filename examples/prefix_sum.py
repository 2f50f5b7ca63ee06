"""Prefix sums (inclusive scans) with `tl.cumsum`.

* `cumsum_single_block`: n <= BLOCK, one program scans the whole array;
* the multi-block version, three launches like a classic GPU scan:
  `block_scan` scans each block and writes its total, `block_scan` again on
  the (few) totals turns them into inclusive block offsets, and
  `add_block_offsets` adds the offset of all earlier blocks to each block.

    python examples/prefix_sum.py
"""
import numpy as np

import tilec
import tilec.language as tl


@tilec.kernel
def cumsum_single_block(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, tl.cumsum(x, axis=0), mask=mask)


@tilec.kernel
def block_scan(x_ptr, out_ptr, totals_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, tl.cumsum(x, axis=0), mask=mask)
    tl.store(totals_ptr + pid, tl.sum(x, axis=0))


@tilec.kernel
def add_block_offsets(out_ptr, scanned_totals_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    # inclusive scan of the totals: the block before this one ends at pid - 1
    carry = tl.load(scanned_totals_ptr + pid - 1, mask=pid > 0, other=0)
    y = tl.load(out_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, y + carry, mask=mask)


# What the test suite compiles for every target: (kernel, signature, constexprs).
SPECS = [
    (cumsum_single_block, "*fp32,*fp32,i32", {"BLOCK": 1024}),
    (cumsum_single_block, "*i32,*i32,i32", {"BLOCK": 256}),
    (block_scan, "*fp32,*fp32,*fp32,i32", {"BLOCK": 1024}),
    (add_block_offsets, "*fp32,*fp32,i32", {"BLOCK": 1024}),
]


def prefix_sum(x: np.ndarray, block: int = 1024) -> np.ndarray:
    """Inclusive prefix sum of a 1-D array (up to block * block elements)."""
    n = x.size
    out = np.empty_like(x)
    if n <= block:
        cumsum_single_block[(1,)](x, out, n, BLOCK=block)
        return out
    nblocks = tilec.cdiv(n, block)
    assert nblocks <= block, "one level of block totals"
    totals = np.zeros(nblocks, x.dtype)
    block_scan[(nblocks,)](x, out, totals, n, BLOCK=block)
    scanned = np.empty_like(totals)
    cumsum_single_block[(1,)](totals, scanned, nblocks, BLOCK=block)
    add_block_offsets[(nblocks,)](out, scanned, n, BLOCK=block)
    return out


def check(n: int, dtype: type = np.float32, block: int = 1024) -> None:
    rng = np.random.default_rng(n)
    if dtype == np.float32:
        x = rng.integers(-8, 9, n).astype(np.float32) * 0.5    # sums exact in fp32
    else:
        x = rng.integers(-1000, 1000, n).astype(dtype)
    np.testing.assert_array_equal(prefix_sum(x, block), np.cumsum(x, dtype=dtype))


def main() -> None:
    for n in (1, 7, 1000, 1024, 1025, 100_003):
        check(n, np.float32)
    for n in (1, 255, 256, 257, 30_000):
        check(n, np.int32, 256)
    print("prefix_sum: ok")


if __name__ == "__main__":
    main()

"""Vector add: compile for the CPU, run, check against NumPy, print the IR stages."""
import numpy as np

import tilec
import tilec.language as tl


@tilec.kernel
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


# What the test suite compiles for every target: (kernel, signature, constexprs).
SPECS = [(add, "*fp32,*fp32,*fp32,i32:16", {"BLOCK": 1024})]


def main() -> None:
    n = 100_003
    x = np.random.rand(n).astype(np.float32)
    y = np.random.rand(n).astype(np.float32)
    out = np.empty_like(x)
    add[(tilec.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    np.testing.assert_array_equal(out, x + y)
    print(f"vector add of {n} float32 elements on the CPU matches NumPy")
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    for stage in ("tile", "tile-opt", "cpu"):
        print(f"\n// ----- IR after stage '{stage}' (BLOCK=16 for brevity) -----")
        print(add.ir(target="cpu", signature=sig, constexprs={"BLOCK": 16}, stage=stage))


if __name__ == "__main__":
    main()

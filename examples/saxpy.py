"""saxpy with a grid function, on NumPy arrays and (when installed) torch CPU tensors."""
import numpy as np

import tilec
import tilec.language as tl


@tilec.kernel
def saxpy(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = tl.load(y_ptr + offs, mask=m, other=0.0)
    tl.store(out_ptr + offs, a * x + y, mask=m)


# What the test suite compiles for every target: (kernel, signature, constexprs).
SPECS = [(saxpy, "*fp32,*fp32,*fp32,fp32,i32", {"BLOCK": 256})]


def main() -> None:
    n = 12_345
    x = np.random.rand(n).astype(np.float32)
    y = np.random.rand(n).astype(np.float32)
    out = np.zeros_like(x)
    saxpy[lambda meta: (tilec.cdiv(n, meta["BLOCK"]),)](x, y, out, 2.5, n, BLOCK=256)
    np.testing.assert_allclose(out, np.float32(2.5) * x + y, rtol=1e-6)
    print("saxpy on NumPy arrays: ok")
    try:
        import torch
    except ImportError:
        return
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    tout = torch.empty_like(tx)
    saxpy[(tilec.cdiv(n, 256),)](tx, ty, tout, 2.5, n, BLOCK=256)
    assert torch.allclose(tout, 2.5 * tx + ty)
    print("saxpy on torch CPU tensors: ok")


if __name__ == "__main__":
    main()

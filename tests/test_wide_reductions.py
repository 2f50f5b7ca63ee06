"""Issue 11, finding 3: reductions and scans of 64-bit values on every GPU
target.  The shuffle butterfly splits a 64-bit scalar into two 32-bit words;
it used to bit-cast `i64` to `vector<2xi32>` (a shape mismatch the verifier
rejects, a CompilerBugError for every `tl.sum` of an int64 tile).  Each
kernel here compiles through ptxas (sm90) or ld.lld (gfx942, gfx1100), with
a 2-D tile reduced along both axes so that the in-warp butterfly and the
cross-warp round trip through workgroup memory both run."""
from __future__ import annotations

import pytest

import tilec
import tilec.language as tl

GPU = ["sm90", "gfx942", "gfx1100"]
WIDE = ["i64", "u64", "fp64"]


@tilec.kernel
def _sum(x_ptr, o_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    x = tl.load(x_ptr + r[:, None] * C + c[None, :])
    tl.store(o_ptr + r, tl.sum(x, axis=1))
    tl.store(o_ptr + R + c, tl.sum(x, axis=0))


@tilec.kernel
def _max(x_ptr, o_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    x = tl.load(x_ptr + r[:, None] * C + c[None, :])
    tl.store(o_ptr + r, tl.max(x, axis=1))
    tl.store(o_ptr + R + c, tl.min(x, axis=0))


@tilec.kernel
def _argmax(x_ptr, o_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    x = tl.load(x_ptr + r[:, None] * C + c[None, :])
    tl.store(o_ptr + r, tl.argmax(x, axis=1).to(o_ptr.dtype.element_ty))
    tl.store(o_ptr + R + c, tl.argmin(x, axis=0).to(o_ptr.dtype.element_ty))


@tilec.kernel
def _scan(x_ptr, o_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    x = tl.load(x_ptr + r[:, None] * C + c[None, :])
    tl.store(o_ptr + r[:, None] * C + c[None, :], tl.cumsum(x, axis=1) + tl.cumprod(x, axis=0))


@tilec.kernel
def _scalar_sum(x_ptr, o_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(o_ptr, tl.sum(x, axis=0))


KERNELS = {"sum": _sum, "max_min": _max, "argmax_argmin": _argmax, "cumsum_cumprod": _scan}


@pytest.mark.sample(2)        # the test command: each (kernel, dtype) on one or two targets
@pytest.mark.parametrize("target", GPU)
@pytest.mark.parametrize("dtype", WIDE)
@pytest.mark.parametrize("kind", sorted(KERNELS))
def test_wide_reduction_compiles(kind: str, dtype: str, target: str) -> None:
    ck = KERNELS[kind].compile(target=target, signature=f"*{dtype},*{dtype}",
                               constexprs={"R": 4, "C": 256}, num_warps=4)
    binary = ck.asm["cubin"] if "cubin" in ck.asm else ck.asm["hsaco"]
    assert binary


@pytest.mark.parametrize("target", GPU)
def test_int64_scalar_sum_shuffles_two_words(target: str) -> None:
    """The reported kernel: one `tl.sum` of an int64 tile to a scalar."""
    ck = _scalar_sum.compile(target=target, signature="*i64,*i64", constexprs={"BLOCK": 256})
    gpu = ck.asm["gpu"]
    shuffles = [ln for ln in gpu.splitlines() if "gpu.shuffle" in ln]
    assert shuffles and all(ln.rstrip().endswith(": i32") for ln in shuffles)
    assert len(shuffles) % 2 == 0          # a low and a high word per step

"""Issue 11, finding 4: every `tl.*` math function on every element type
compiles on every target, or is refused as a located user error; never a
compiler bug.  `tl.abs` of an int8/int16/int64 tile used to reach NVIDIA's
LLVM IR translation as an unconverted `math.absi` (the isolated child
crashed with SIGSEGV).  Also: a crash of the isolated GPU compile child is a
`CompilerBugError` that names the kernel, and the test process lives.

The table is a sweep (tests/sweeps.py): the test command compiles, per
target, the (op, dtype) pairs on one diagonal in four, a different diagonal
for each of the four targets, so every pair compiles on one target and each
target sees every op and every dtype; TILEC_TEST_FULL=1 compiles every pair
on every target."""
from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

import tilec
import tilec.language as tl
from tilec.errors import CompilerBugError, TilecError
import tilec.passes.gpu.math as gpu_math
from sweeps import pick

OPS = ["abs", "maximum", "minimum", "clamp", "cdiv", "fma", "exp", "exp2", "log", "log2",
       "sqrt", "rsqrt", "sin", "cos", "floor", "ceil", "sigmoid", "where_neg_mod"]
DTYPES = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "fp16", "bf16", "fp32", "fp64"]


@tilec.kernel
def _math(x_ptr, y_ptr, o_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == 0:
        r = tl.abs(x)
    elif OP == 1:
        r = tl.maximum(x, y)
    elif OP == 2:
        r = tl.minimum(x, y)
    elif OP == 3:
        r = tl.clamp(x, y, y + 1)
    elif OP == 4:
        r = tl.cdiv(x, y)
    elif OP == 5:
        r = tl.fma(x, y, x)
    elif OP == 6:
        r = tl.exp(x)
    elif OP == 7:
        r = tl.exp2(x)
    elif OP == 8:
        r = tl.log(x)
    elif OP == 9:
        r = tl.log2(x)
    elif OP == 10:
        r = tl.sqrt(x)
    elif OP == 11:
        r = tl.rsqrt(x)
    elif OP == 12:
        r = tl.sin(x)
    elif OP == 13:
        r = tl.cos(x)
    elif OP == 14:
        r = tl.floor(x)
    elif OP == 15:
        r = tl.ceil(x)
    elif OP == 16:
        r = tl.sigmoid(x)
    else:
        r = tl.where(x < y, -x, x % y)
    tl.store(o_ptr + offs, r.to(o_ptr.dtype.element_ty))


TABLE_TARGETS = ["sm90", "gfx942", "gfx1100", "cpu"]


@pytest.mark.parametrize("target", TABLE_TARGETS)
def test_every_math_op_on_every_dtype(target: str) -> None:
    bugs = []
    shift = TABLE_TARGETS.index(target)
    for j, dt in enumerate(DTYPES):
        for i, op in enumerate(OPS):
            if not pick(i + j + shift, len(TABLE_TARGETS)):
                continue
            try:
                _math.compile(target=target, signature=f"*{dt},*{dt},*{dt}",
                              constexprs={"OP": i, "BLOCK": 256})
            except CompilerBugError as e:
                bugs.append(f"{op} {dt}: {str(e)[:300]}")
            except TilecError as e:
                if e.loc is None:                    # a user error must be located
                    bugs.append(f"{op} {dt}: unlocated {e}")
    assert not bugs, "\n".join(bugs)


@tilec.kernel
def _abs(x_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.abs(tl.load(x_ptr + offs)))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_int_abs_on_cpu_matches_numpy(dtype: type) -> None:
    info = np.iinfo(dtype)
    x = np.random.default_rng(0).integers(info.min, info.max, 256, dtype=dtype, endpoint=True)
    x[:4] = [info.min, -1, 0, info.max]
    o = np.zeros_like(x)
    _abs[(1,)](x, o, BLOCK=256)
    np.testing.assert_array_equal(o, np.abs(x))       # abs(min) wraps to min, as in NumPy


@pytest.mark.parametrize("target", ["sm90", "gfx942"])
def test_int64_abs_is_plain_arith(target: str) -> None:
    ck = _abs.compile(target=target, signature="*i64,*i64", constexprs={"BLOCK": 256})
    assert "math.absi" not in ck.asm["gpu"]


def test_child_crash_names_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Leave `math.absi` i64 unconverted (as before the fix): the NVIDIA child
    dies in translation; the parent gets a CompilerBugError naming `_abs`."""
    def old_abs(t: ir.Type, x: ir.Value) -> ir.Value:
        return ir.Operation.create("math.absi", results=[t], operands=[x]).result
    monkeypatch.setattr(gpu_math, "_abs_int", old_abs)
    with pytest.raises(CompilerBugError) as info:
        _abs.compile(target="sm90", signature="*i64,*i64", constexprs={"BLOCK": 128})
    assert "kernel '_abs' for sm90" in str(info.value)
    assert "math.absi" in str(info.value)

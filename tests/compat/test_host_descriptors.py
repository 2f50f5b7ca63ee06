"""Host `TensorDescriptor` arguments (triton.tools.tensor_descriptor), the
sm90+ path of Triton's tutorials 06 and 09: a descriptor is specialized on its
element type and block shape (an autotune pre_hook may set `block_shape` before
the launch), its base, shape and strides are hidden kernel parameters, and
`desc.load` / `desc.store` read zeros / write nothing outside the shape.
Checked against NumPy/torch on the CPU; compiled for sm90 and gfx942."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tilec as triton
import tilec.language as tl
from tilec.tools.tensor_descriptor import DescriptorType, TensorDescriptor

from tests.compat.gpu_check import GPU_TARGETS, assemble


@triton.jit
def scale_kernel(a_desc, c_desc, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    x = a_desc.load([pm * BM, pn * BN])
    c_desc.store([pm * BM, pn * BN], (x * 2 + 1).to(c_desc.dtype))


@pytest.mark.parametrize("bm, bn", [(16, 32), (8, 8)])
def test_load_store_edges(bm: int, bn: int) -> None:
    a = torch.randn(50, 70)
    c = torch.full((50, 70), -3.0, dtype=torch.float16)
    ad, cd = TensorDescriptor.from_tensor(a, [bm, bn]), TensorDescriptor.from_tensor(c, [bm, bn])
    grid = (triton.cdiv(50, bm), triton.cdiv(70, bn))
    for _ in range(2):      # the second launch: the Python path again (no C entry)
        scale_kernel[grid](ad, cd, bm, bn)
    assert torch.equal(c, (a * 2 + 1).half())
    # no fast key, no C launcher: the hidden parameters are filled in Python only
    assert not scale_kernel._fast and not scale_kernel._native


def test_strided_view_and_partial_grid() -> None:
    a = np.random.RandomState(0).randn(40, 96).astype(np.float32)
    view = a[:, 16:80]                       # row stride 96, not the width
    c = np.zeros((40, 64), np.float32)
    ad = TensorDescriptor(view, list(view.shape), [96, 1], [16, 16])
    cd = TensorDescriptor.from_tensor(c, [16, 16])
    scale_kernel[(2, 4)](ad, cd, 16, 16)     # rows 32..39 not covered: left as they were
    np.testing.assert_array_equal(c[:32], view[:32] * 2 + 1)
    assert not c[32:].any()


def _pre_hook(nargs: dict) -> None:
    nargs["x_desc"].block_shape = [nargs["BM"], nargs["BN"]]


@triton.autotune(configs=[triton.Config({"BM": 16, "BN": 32}, pre_hook=_pre_hook),
                          triton.Config({"BM": 32, "BN": 16}, pre_hook=_pre_hook)], key=["N"])
@triton.jit
def tuned_rowsum(x_desc, out_ptr, N, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    acc = tl.zeros((BM,), tl.float32)
    for k in range(0, N, BN):
        acc += tl.sum(x_desc.load([pm * BM, k]), 1)
    tl.store(out_ptr + pm * BM + tl.arange(0, BM), acc)


def test_autotune_pre_hook_sets_block_shape() -> None:
    x = torch.randn(64, 100)
    out = torch.zeros(64)
    d = TensorDescriptor(x, [64, 100], [100, 1], [1, 1])   # a dummy block, as tutorial 06
    tuned_rowsum[lambda meta: (triton.cdiv(64, meta["BM"]),)](d, out, 100)
    torch.testing.assert_close(out, x.sum(1), rtol=1e-5, atol=1e-4)
    assert d.block_shape in ([16, 32], [32, 16])


def test_read_only_base_stored_through_is_an_error() -> None:
    a = np.ones((16, 16), np.float32)
    c = np.zeros((16, 16), np.float32)
    c.setflags(write=False)
    with pytest.raises(triton.TilecError, match="read-only"):
        scale_kernel[(1, 1)](TensorDescriptor.from_tensor(a, [16, 16]),
                             TensorDescriptor.from_tensor(c, [16, 16]), 16, 16)


@pytest.mark.parametrize("bad, message", [
    (dict(strides=[1, 16]), "last stride must be 1"),
    (dict(block_shape=[16, 12]), "powers of two"),
    (dict(padding="nan"), "padding 'nan' is not supported"),
    (dict(shape=[16]), "of one rank"),
])
def test_bad_descriptors_are_errors(bad: dict, message: str) -> None:
    a = np.ones((16, 16), np.float32)
    fields = dict(shape=[16, 16], strides=[16, 1], block_shape=[16, 16], padding="zero")
    fields.update(bad)
    d = TensorDescriptor(a, **fields)
    with pytest.raises(triton.TilecError, match=message) as e:
        scale_kernel[(1, 1)](d, TensorDescriptor.from_tensor(a, [16, 16]), 16, 16)
    assert "a_desc" in str(e.value)


def test_debug_mode_checks_descriptor_bases() -> None:
    dbg = triton.jit(scale_kernel.fn, debug=True)
    a = torch.randn(20, 20)
    c = torch.zeros(20, 20)
    dbg[(2, 2)](TensorDescriptor.from_tensor(a, [16, 16]), TensorDescriptor.from_tensor(c, [16, 16]),
                16, 16)
    torch.testing.assert_close(c, a * 2 + 1)


def _sig(prefix: str, dt: str) -> dict[str, str]:
    return {f"{prefix}.base": f"*{dt}:16", f"{prefix}.shape0": "i64", f"{prefix}.shape1": "i64",
            f"{prefix}.stride0": "i64:16"}


@pytest.mark.parametrize("target", GPU_TARGETS)
def test_compiles_for_gpus(target: str) -> None:
    sig = {"a_desc": "i64", "c_desc": "i64", **_sig("a_desc", "fp32"), **_sig("c_desc", "fp16")}
    cx = {"a_desc": DescriptorType("float32", (64, 64)), "c_desc": DescriptorType("float16", (64, 64)),
          "BM": 64, "BN": 64}
    assemble(scale_kernel, target, sig, cx)

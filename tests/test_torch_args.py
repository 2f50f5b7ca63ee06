"""Argument safety for torch tensors at the launch: overlapping (stride-0) tensors,
0-d tensors for scalar parameters, meta and fake tensors; on the C path, the Python
fast path and the general path."""
from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

import tilec  # noqa: E402
import tilec.language as tl  # noqa: E402
from tilec.runtime.args import may_overlap  # noqa: E402


@tilec.kernel
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@tilec.kernel(allow_overlap=["x_ptr"])
def strided_copy(x_ptr, out_ptr, stride, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * stride, mask=m), mask=m)


@tilec.kernel
def scale_by(x_ptr, scale_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * tl.load(scale_ptr), mask=m)


def grid(meta: dict[str, Any]) -> tuple[int]:
    return (tilec.cdiv(meta["n"], meta["BLOCK"]),)


@pytest.mark.parametrize("g", [(2,), grid], ids=["static grid (C path)", "grid function"])
def test_expanded_tensor_is_refused_after_good_launches(g: Any) -> None:
    x, y, out = torch.randn(100), torch.randn(100), torch.empty(100)
    for _ in range(3):  # the C launcher / fast key now knows this specialization
        add[g](x, y, out, 100, BLOCK=64)
    torch.testing.assert_close(out, x + y)
    e = torch.randn(1).expand(100)
    for _ in range(2):
        with pytest.raises(tilec.TilecError) as info:
            add[g](e, y, out, 100, BLOCK=64)
        text = str(info.value)
        assert "argument 'x_ptr'" in text and "x_ptr.contiguous()" in text
        assert "strides (0,)" in text and "test_torch_args.py" in text
    add[g](e.contiguous(), y, out, 100, BLOCK=64)
    torch.testing.assert_close(out, e + y)


def test_overlap_of_the_gradient_of_sum() -> None:
    x = torch.randn(64, requires_grad=True)
    captured: list[Any] = []
    x.register_hook(lambda grad: captured.append(grad))
    x.sum().backward()
    (grad,) = captured
    with pytest.raises(tilec.TilecError, match="share memory"):
        add[(1,)](grad, grad, torch.empty(64), 64, BLOCK=64)


def test_non_overlapping_views_are_accepted() -> None:
    m = torch.randn(16, 16)
    out = torch.empty(256)
    for v in (m.t(), m[:, :8], m[::2]):
        n = v.numel()
        add[(4,)](v, v, out, n, BLOCK=64)  # the kernel indexes them linearly: only a layout check
    assert not may_overlap((16, 16), (1, 16))
    assert may_overlap((4, 4), (1, 2)) and may_overlap((3,), (0,))
    assert not may_overlap((1, 5), (0, 1)) and not may_overlap((0, 3), (0, 0))


def test_allow_overlap_parameter() -> None:
    base = torch.tensor([3.0])
    out = torch.empty(10)
    for _ in range(2):
        strided_copy[(1,)](base.expand(10), out, 0, 10, BLOCK=16)
        assert torch.equal(out, torch.full((10,), 3.0))
    with pytest.raises(tilec.TilecError, match="allow_overlap names 'nope'"):
        tilec.kernel(allow_overlap=["nope"])(add.fn)


def test_zero_dim_tensor_for_a_scalar_parameter() -> None:
    x, y, out = torch.randn(10), torch.randn(10), torch.empty(10)
    with pytest.raises(tilec.TilecError) as info:
        add[(1,)](x, y, out, torch.tensor(10), BLOCK=64)
    assert "argument 'n'" in str(info.value) and "0-d tensor" in str(info.value)
    assert "int(n)" in str(info.value)
    # A 0-d tensor the kernel loads from is a pointer to one element: fine.
    scale_by[(1,)](x, torch.tensor(2.0), out, 10, BLOCK=16)
    torch.testing.assert_close(out, 2 * x)


def test_meta_and_fake_tensors_point_to_tilec_torch() -> None:
    x, y, out = torch.randn(10), torch.randn(10), torch.empty(10)
    add[(1,)](x, y, out, 10, BLOCK=64)
    with pytest.raises(tilec.TilecError) as info:
        add[(1,)](x.to("meta"), y, out, 10, BLOCK=64)
    assert "meta tensor" in str(info.value) and "tilec.torch" in str(info.value)
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode() as mode:
        fx = mode.from_tensor(x)
        with pytest.raises(tilec.TilecError, match="tilec.torch"):
            add[(1,)](fx, fx, fx, 10, BLOCK=64)


def test_empty_tensor_launch() -> None:
    e = torch.empty(0)
    add[(0,)](e, e, e, 0, BLOCK=64)  # address 0: the general path, which accepts it

"""tilec.torch.custom_op: functional custom ops launching tilec kernels, checked by
torch.library.opcheck, gradcheck, torch.compile(fullgraph=True) and torch.export."""
from __future__ import annotations

import pathlib
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import tilec  # noqa: E402
import tilec.language as tl  # noqa: E402
import tilec.torch  # noqa: E402
from tilec.torch import custom_op, like  # noqa: E402


@tilec.kernel
def mul_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * tl.load(y_ptr + offs, mask=m), mask=m)


@tilec.kernel
def row_sum(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


@custom_op("tilec_test::mul", outputs="x")
def mul(x: torch.Tensor, y: torch.Tensor, out: torch.Tensor) -> None:
    n = x.numel()
    mul_kernel[(tilec.cdiv(n, 128),)](x, y, out, n, BLOCK=128)


def _setup(ctx: Any, inputs: Any, output: Any) -> None:
    ctx.save_for_backward(*inputs)


def _backward(ctx: Any, grad: Any) -> Any:
    x, y = ctx.saved_tensors
    grad = grad.contiguous()  # the gradient of .sum() is an expand()ed (stride 0) tensor
    return mul(grad, y), mul(grad, x)


mul.register_autograd(_backward, setup_context=_setup)


@custom_op("tilec_test::row_sum_and_copy", outputs=[like("x", shape=lambda x: (x.shape[0],)),
                                                     lambda x: torch.empty_like(x)])
def row_sum_and_copy(x: torch.Tensor, sums: torch.Tensor, copy: torch.Tensor) -> None:
    row_sum[(x.shape[0],)](x, sums, x.shape[1], BLOCK=64)
    mul_kernel[(tilec.cdiv(x.numel(), 128),)](x, torch.ones_like(x), copy, x.numel(), BLOCK=128)


def test_eager_and_opcheck() -> None:
    x, y = torch.randn(300), torch.randn(300)
    torch.testing.assert_close(mul(x, y), x * y)
    torch.library.opcheck(mul, (torch.randn(33), torch.randn(33)))
    x2 = torch.randn(5, 40)
    sums, copy = row_sum_and_copy(x2)
    torch.testing.assert_close(sums, x2.sum(1))
    torch.testing.assert_close(copy, x2)
    torch.library.opcheck(row_sum_and_copy, (torch.randn(3, 17),))


def test_gradcheck() -> None:
    x = torch.randn(50, dtype=torch.float64, requires_grad=True)
    y = torch.randn(50, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(mul, (x, y))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compile_fullgraph_with_gradients(backend: str) -> None:
    def f(a: Any, b: Any) -> Any:
        return (mul(a, b) * 3).sum()
    torch._dynamo.reset()
    cf = torch.compile(f, backend=backend, fullgraph=True, dynamic=True)
    for n in (20, 65):
        a = torch.randn(n, requires_grad=True)
        b = torch.randn(n, requires_grad=True)
        out = cf(a, b)
        out.backward()
        torch.testing.assert_close(out, (a * b * 3).sum())
        torch.testing.assert_close(a.grad, 3 * b.detach())
        torch.testing.assert_close(b.grad, 3 * a.detach())
    torch._dynamo.reset()
    assert torch._dynamo.explain(f)(torch.randn(9), torch.randn(9)).graph_break_count == 0


def test_export_and_run() -> None:
    class M(torch.nn.Module):
        def forward(self, a: Any, b: Any) -> Any:
            s, c = row_sum_and_copy(mul(a, b))
            return s + 1, c
    a, b = torch.randn(4, 30), torch.randn(4, 30)
    ep = torch.export.export(M(), (a, b))
    assert "tilec_test.mul" in ep.graph_module.code
    s, c = ep.module()(a, b)
    torch.testing.assert_close(s, (a * b).sum(1) + 1)
    torch.testing.assert_close(c, a * b)


def test_ahead_of_time_kernel_in_a_custom_op(tmp_path: pathlib.Path) -> None:
    """A kernel compiled by `tilec compile` and loaded with tilec.load (no compiler
    needed to launch it) inside a custom op, under torch.compile."""
    from tilec.cli import main
    root = pathlib.Path(__file__).resolve().parent.parent
    assert main(["compile", str(root / "examples" / "vector_add.py"), "--target", "cpu",
                 "--signature", "*fp32,*fp32,*fp32,i32", "--constexpr", "BLOCK=1024",
                 "-o", str(tmp_path / "out")]) == 0
    aot_add = tilec.load(tmp_path / "out" / "add")

    @custom_op("tilec_test::aot_add", outputs="x")
    def aot(x: torch.Tensor, y: torch.Tensor, out: torch.Tensor) -> None:
        aot_add[(tilec.cdiv(x.numel(), 1024),)](x, y, out, x.numel())

    x, y = torch.randn(3000), torch.randn(3000)
    torch.testing.assert_close(aot(x, y), x + y)
    torch.library.opcheck(aot, (x, y))
    torch._dynamo.reset()
    cf = torch.compile(lambda a, b: aot(a, b) * 2, backend="inductor", fullgraph=True,
                       dynamic=True)
    for n in (100, 2500):
        a, b = torch.randn(n), torch.randn(n)
        torch.testing.assert_close(cf(a, b), (a + b) * 2)


def test_spec_mistakes_are_reported() -> None:
    with pytest.raises(tilec.TilecError, match="not an input"):
        @custom_op("tilec_test::bad1", outputs="z")
        def bad1(x: torch.Tensor, out: torch.Tensor) -> None:
            pass
    with pytest.raises(tilec.TilecError, match="declares 2 outputs"):
        @custom_op("tilec_test::bad2", outputs=["x", "x"])
        def bad2(out: torch.Tensor) -> None:
            pass

"""Direct launches `kernel[grid](...)` inside torch.compile(fullgraph=True) and torch.export:
the `tilec::launch` operator (tilec/torch_launch.py), checked against torch, with 0 graph
breaks counted by torch._dynamo.explain."""
from __future__ import annotations

import pathlib
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import tilec  # noqa: E402
import tilec.language as tl  # noqa: E402
from tilec.param_uses import pointer_uses  # noqa: E402

BACKENDS = ["aot_eager", "inductor"]


@tilec.kernel
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@tilec.kernel
def axpy_inplace(y_ptr, x_ptr, a, n, BLOCK: tl.constexpr):
    """y += a * x: writes y (read too), reads x."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(y_ptr + offs, y + a * tl.load(x_ptr + offs, mask=m), mask=m)


@tilec.kernel
def count_positive(x_ptr, count_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(count_ptr, tl.sum((x > 0).to(tl.int32), axis=0))


def grid(meta: dict[str, Any]) -> tuple[int]:
    return (tilec.cdiv(meta["n"], meta["BLOCK"]),)


def add_then_scale(x: Any, y: Any) -> Any:
    out = torch.empty_like(x)
    add[grid](x, y, out, x.numel(), BLOCK=64)
    return out * 2


def graph_breaks(fn: Any, *args: Any) -> int:
    torch._dynamo.reset()
    return int(torch._dynamo.explain(fn)(*args).graph_break_count)


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_launch_fullgraph_dynamic(backend: str) -> None:
    torch._dynamo.reset()
    cf = torch.compile(add_then_scale, backend=backend, fullgraph=True, dynamic=True)
    for n in (10, 33, 1000):
        x, y = torch.randn(n), torch.randn(n)
        torch.testing.assert_close(cf(x, y), (x + y) * 2)
    assert graph_breaks(add_then_scale, torch.randn(7), torch.randn(7)) == 0


def test_direct_launch_static_grid_and_explain() -> None:
    def f(x: Any, y: Any) -> Any:
        out = torch.empty_like(x)
        add[(4,)](x, y, out, x.numel(), BLOCK=64)
        return out.sum()
    x, y = torch.randn(256), torch.randn(256)
    assert graph_breaks(f, x, y) == 0
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(f, fullgraph=True, backend="aot_eager")(x, y),
                               (x + y).sum())


@pytest.mark.parametrize("backend", BACKENDS)
def test_written_tensor_is_mutated_for_the_graph(backend: str) -> None:
    """The kernel writes y in place: later ops in the graph must see the new values,
    and the caller's tensor must hold them afterwards."""
    def f(y: Any, x: Any) -> Any:
        before = y.sum()
        axpy_inplace[grid](y, x, 0.5, y.numel(), BLOCK=32)
        return before, y * 1.0
    torch._dynamo.reset()
    cf = torch.compile(f, backend=backend, fullgraph=True, dynamic=True)
    for n in (40, 77):
        y0, x = torch.randn(n), torch.randn(n)
        y = y0.clone()
        before, after = cf(y, x)
        torch.testing.assert_close(before, y0.sum())
        torch.testing.assert_close(after, y0 + 0.5 * x)
        torch.testing.assert_close(y, y0 + 0.5 * x)


def test_same_tensor_twice_and_atomics() -> None:
    def f(x: Any) -> Any:
        out = torch.empty_like(x)
        add[grid](x, x, out, x.numel(), BLOCK=64)   # x passed twice: one input
        count = torch.zeros(1, dtype=torch.int32)
        count_positive[grid](x, count, x.numel(), BLOCK=64)
        return out, count
    torch._dynamo.reset()
    cf = torch.compile(f, backend="inductor", fullgraph=True, dynamic=True)
    x = torch.randn(300)
    out, count = cf(x)
    torch.testing.assert_close(out, 2 * x)
    assert int(count) == int((x > 0).sum())
    assert graph_breaks(f, x) == 0


def test_graph_records_tilec_launch_with_mutated_outputs() -> None:
    graphs: list[Any] = []

    def backend(gm: Any, example_inputs: Any) -> Any:
        graphs.append(gm)
        return gm.forward
    torch._dynamo.reset()
    torch.compile(add_then_scale, backend=backend, fullgraph=True)(torch.randn(8), torch.randn(8))
    (gm,) = graphs
    calls = [n for n in gm.graph.nodes if n.target is torch.ops.tilec.launch]
    assert len(calls) == 1
    schema = str(torch.ops.tilec.launch.default._schema)
    assert "Tensor(a2!)[] outputs" in schema and "Tensor[] inputs" in schema and "SymInt[] grid" in schema


def test_export_direct_launch_strict_and_not(tmp_path: pathlib.Path) -> None:
    class M(torch.nn.Module):
        def forward(self, a: Any, b: Any) -> Any:
            out = torch.empty_like(a)
            add[grid](a, b, out, a.shape[0], BLOCK=16)
            return out + 1
    a, b = torch.randn(20), torch.randn(20)
    for strict in (False, True):
        ep = torch.export.export(M(), (a, b), strict=strict)
        assert "tilec.launch" in ep.graph_module.code
        torch.testing.assert_close(ep.module()(a, b), a + b + 1)
    path = tmp_path / "m.pt2"
    torch.export.save(ep, str(path))
    torch.testing.assert_close(torch.export.load(str(path)).module()(a, b), a + b + 1)


def test_eager_launch_outside_compile_is_unchanged() -> None:
    x, y, out = torch.randn(100), torch.randn(100), torch.empty(100)
    add[(2,)](x, y, out, 100, BLOCK=64)
    assert type(add[(2,)]).__name__ in ("Launcher", "function")
    torch.testing.assert_close(out, x + y)


# ------------------------------------------------------------ stored-parameter analysis

def _kernels() -> list[tuple[str, Any, str, dict[str, Any]]]:
    import importlib.util
    root = pathlib.Path(__file__).resolve().parent.parent
    out = []
    for path in sorted((root / "examples").glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"ex_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for k, sig, cx in getattr(mod, "SPECS", []):
            out.append((f"{path.stem}.{k.name}", k, sig, cx))
    for k, sig, cx in [(axpy_inplace, "*fp32,*fp32,fp32,i32", {"BLOCK": 32}),
                       (count_positive, "*fp32,*i32,i32", {"BLOCK": 64})]:
        out.append((k.name, k, sig, cx))
    return out


KERNELS = _kernels()


@pytest.mark.parametrize("name,k,sig,cx", KERNELS, ids=[c[0] for c in KERNELS])
def test_source_analysis_covers_the_ir_analysis(name: str, k: Any, sig: str,
                                                cx: dict[str, Any]) -> None:
    """Every parameter the frontend's IR analysis finds stored through is in the
    source analysis' written set (which the traced launch declares as mutated).
    The frontend's code generation finds `stored_args`: the compile stops after
    it (the `tile` stage; these kernels run on the CPU in tests/test_examples.py)."""
    from tilec.driver import compile_kernel
    stored = set(compile_kernel(k, "cpu", sig, cx, stop_after="tile").metadata["stored_args"])
    written, addressed = pointer_uses(k.fn)
    assert stored <= written, (stored, written)
    assert written <= addressed
    assert stored, name


def test_source_analysis_examples() -> None:
    """Constexprs the pointers depend on (BLOCK) are named too; only tensors matter."""
    assert pointer_uses(add.fn) == ({"out_ptr", "BLOCK"}, {"x_ptr", "y_ptr", "out_ptr", "BLOCK"})
    assert pointer_uses(axpy_inplace.fn)[0] == {"y_ptr", "BLOCK"}
    assert pointer_uses(count_positive.fn)[0] == {"count_ptr"}

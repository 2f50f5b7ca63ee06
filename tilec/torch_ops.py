"""`tilec.torch`: functions that launch tilec kernels as PyTorch custom operators.

    import tilec

    @tilec.torch.custom_op("mylib::add", outputs="x")
    def add(x: torch.Tensor, y: torch.Tensor, out: torch.Tensor) -> None:
        add_kernel[(tilec.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)

    z = add(x, y)          # a functional op: allocates `out` like x, returns it

The decorated function takes the op's inputs followed by one tensor per
declared output, which it fills by launching kernels.  The result is the
`torch.library.CustomOpDef` of a functional operator (no input is mutated):
`torch.compile` (fullgraph, dynamic shapes), `torch.export`,
`torch.library.opcheck` and `make_fx` see one opaque op whose fake
implementation allocates the outputs from the spec and launches nothing;
`add.register_autograd(backward, setup_context=...)` gives it a gradient.
Kernels loaded ahead of time (`tilec.load`) launch inside it the same way.

An output spec is one of (or a sequence of, for several outputs):
* the name of an input: an uninitialised tensor like it (`torch.empty_like`);
* `like(name, shape=..., dtype=..., fill=...)`: like that input with another
  shape (a tuple, or a function of the inputs), dtype or initial value;
* a function of the inputs returning a new tensor (`lambda a, b:
  a.new_empty(a.shape[0], b.shape[1])`); it runs on fake tensors too.

Direct launches need none of this: under `torch.compile`, `kernel[grid](...)`
itself records the generic `tilec::launch` operator (tilec/torch_launch.py).
This module is `tilec.torch` (a module named torch.py inside the package
would be found instead of PyTorch by a script run from the package folder,
so the file has another name).
"""
from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from tilec.errors import TilecError
from tilec.launch import watch_torch

__all__ = ["custom_op", "like"]

watch_torch()


@dataclass(frozen=True)
class like:  # noqa: N801 - reads as a spec: like("x", dtype=torch.float32)
    """An output allocated like input `name`, optionally with another shape
    (tuple or function of the inputs), dtype or fill value."""

    name: str
    shape: Any = None
    dtype: Any = None
    fill: Any = None


def _allocator(spec: Any, names: list[str], op: str) -> Callable[..., torch.Tensor]:
    if isinstance(spec, str):
        spec = like(spec)
    if isinstance(spec, like):
        if spec.name not in names:
            raise TilecError(f"custom op '{op}': output spec names '{spec.name}', which is not an "
                             f"input ({', '.join(names)})")
        index = names.index(spec.name)

        def alloc(*inputs: Any) -> torch.Tensor:
            base = inputs[index]
            dtype = spec.dtype if spec.dtype is not None else base.dtype
            shape = spec.shape(*inputs) if callable(spec.shape) else spec.shape
            out = torch.empty_like(base, dtype=dtype) if shape is None else \
                base.new_empty(tuple(shape), dtype=dtype)
            if spec.fill is not None:
                out.fill_(spec.fill)
            return out
        return alloc
    if callable(spec):
        return spec
    raise TilecError(f"custom op '{op}': an output spec is an input's name, tilec.torch.like(...) "
                     f"or a function of the inputs returning a tensor, got {spec!r}")


def custom_op(name: str, *, outputs: Any, device_types: str | Sequence[str] | None = None,
              schema: str | None = None) -> Callable[[Callable[..., Any]], Any]:
    """Decorator: `fn(*inputs, *outputs)` launching tilec kernels -> a functional
    `torch.library` custom op `name` ("namespace::op") returning the outputs
    (one tensor, or a tuple for several).  See the module docstring."""
    specs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    if not specs:
        raise TilecError(f"custom op '{name}' declares no outputs")

    def decorate(fn: Callable[..., Any]) -> Any:
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
        n_in = len(params) - len(specs)
        if n_in < 0:
            raise TilecError(f"custom op '{name}': '{fn.__name__}' takes {len(params)} "
                             f"parameters but declares {len(specs)} outputs; it takes the "
                             "inputs followed by one tensor per output")
        try:
            hints = typing.get_type_hints(fn)
        except Exception:
            hints = {}
        inputs = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in params[:n_in]]
        names = [p.name for p in inputs]
        allocs = [_allocator(s, names, name) for s in specs]
        single = len(specs) == 1

        def allocate(args: Sequence[Any]) -> list[torch.Tensor]:
            return [a(*args) for a in allocs]

        def run(*args: Any) -> Any:
            outs = allocate(args)
            fn(*args, *outs)
            return outs[0] if single else tuple(outs)

        ret = torch.Tensor if single else tuple[tuple(torch.Tensor for _ in specs)]  # type: ignore[misc]
        run.__signature__ = inspect.Signature(inputs, return_annotation=ret)  # type: ignore[attr-defined]
        run.__name__ = fn.__name__
        run.__qualname__ = fn.__qualname__
        run.__module__ = fn.__module__
        run.__doc__ = fn.__doc__
        op = torch.library.custom_op(name, run, mutates_args=(), device_types=device_types,
                                     schema=schema)

        def fake(*args: Any) -> Any:
            outs = allocate(args)
            return outs[0] if single else tuple(outs)

        op.register_fake(fake)
        return op
    return decorate

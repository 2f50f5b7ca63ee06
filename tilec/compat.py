"""Triton's top-level names, so that `import tilec as triton` ports a kernel.

`jit` is `tilec.kernel` taking Triton's keywords (`do_not_specialize` by name
or index, `do_not_specialize_on_alignment`, `debug` (tilec's debug mode, as
`@tilec.kernel(debug=True)`), `noinline`, `repr`, `launch_metadata`,
`version`: accepted; a helper is always inlined), plus
`src=` for a function made by `exec` (its source text).  `CompiledHandle` is
what `kernel.warmup(...)` returns: the compiled kernel's register and spill
counts and its shared memory, under Triton's names.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from tilec.compiled import CompiledHandle
from tilec.jit import _user_api
from tilec.kernel import Kernel


def _names(fn: Callable[..., Any], which: Sequence[Any]) -> list[str]:
    import inspect
    params = list(inspect.signature(fn).parameters)
    return [params[w] if isinstance(w, int) and 0 <= w < len(params) else str(w) for w in which]


@_user_api
def jit(fn: Callable[..., Any] | None = None, *, version: Any = None, repr: Any = None,
        launch_metadata: Any = None, do_not_specialize: Sequence[Any] = (),
        do_not_specialize_on_alignment: Sequence[Any] = (), debug: Any = None,
        noinline: Any = None, src: str | None = None) -> Any:
    """Triton's `@triton.jit`: a kernel, or a helper function called from kernels."""
    def make(f: Callable[..., Any]) -> Kernel:
        if src is not None:
            f.__tilec_source__ = src  # type: ignore[attr-defined]
        names = list(dict.fromkeys(_names(f, do_not_specialize)
                                   + _names(f, do_not_specialize_on_alignment)))
        import inspect
        from tilec.specialization import _parse_annotation
        sig = inspect.signature(f)
        runtime = [n for n in names if n in sig.parameters
                   and not _parse_annotation(f, n, sig.parameters[n].annotation)[0]]
        return Kernel(f, runtime, debug=None if debug is None else bool(debug))
    if fn is None:
        return _user_api(make)
    return make(fn)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def cdiv(x: Any, y: Any) -> Any:
    """Ceiling division: the number of blocks of size y that cover x."""
    return -(-x // y)


_ALLOCATOR: list[Any] = [None]


def set_allocator(allocator: Any) -> None:
    """Triton's global scratch allocator for device-side descriptors: kept, never
    called (tilec's `tl.make_tensor_descriptor` needs no global scratch memory)."""
    _ALLOCATOR[0] = allocator


class OutOfResources(Exception):
    """Triton's exception for a config that needs more registers or shared memory."""


class TensorWrapper:
    """Triton's `triton.reinterpret(tensor, dtype)`: the same memory seen as
    another element type of the same width (fp8 data in an int8 tensor, uint32
    data in an int32 tensor).  A kernel argument of this class is a pointer to
    `dtype`; `base` is the wrapped tensor."""

    def __init__(self, base: Any, dtype: Any) -> None:
        self.base = base
        self.dtype = dtype
        self.shape = base.shape
        self.device = getattr(base, "device", "cpu")

    def data_ptr(self) -> int:
        return int(self.base.data_ptr()) if hasattr(self.base, "data_ptr") \
            else int(self.base.__array_interface__["data"][0])

    def stride(self, *args: Any) -> Any:
        return self.base.stride(*args)

    def numel(self) -> int:
        return int(self.base.numel())

    def element_size(self) -> int:
        return int(self.base.element_size())

    def dim(self) -> int:
        return int(self.base.dim())

    def __len__(self) -> int:
        return len(self.base)

    def clone(self) -> "TensorWrapper":
        return TensorWrapper(self.base.clone(), self.dtype)

    def copy_(self, other: Any) -> "TensorWrapper":
        self.base.copy_(other.base if isinstance(other, TensorWrapper) else other)
        return self

    def __str__(self) -> str:
        return f"TensorWrapper[{self.dtype}]({self.base})"


def reinterpret(tensor: Any, dtype: Any) -> Any:
    """Triton's `triton.reinterpret`: view `tensor`'s memory as `dtype` elements
    (a TensorWrapper), or unwrap when `dtype` is the base tensor's own type."""
    from tilec.runtime.args import classify
    if isinstance(tensor, TensorWrapper):
        tensor = tensor.base
    own = classify(tensor).type
    if getattr(own, "element_ty", None) == dtype:
        return tensor
    return TensorWrapper(tensor, dtype)


__all__ = ["jit", "next_power_of_2", "cdiv", "set_allocator", "CompiledHandle", "OutOfResources",
           "TensorWrapper", "reinterpret"]

"""`triton.tools.tensor_descriptor.TensorDescriptor`: a host-side descriptor of a
strided tensor (base, shape, strides, block_shape, padding), as Triton's host code
builds them (tutorials 06 and 09 on GPUs with TMA).

Passed to a kernel, a descriptor is specialized as a `DescriptorType` (element
type, block shape, padding: a constexpr-like part of the key, read at launch,
so an autotune `pre_hook` may still set `block_shape`); the kernel gets hidden
parameters after its own (`desc.base` the pointer, `desc.shape0..`, and
`desc.stride0..` but the last, which must be 1), and in the kernel the
parameter is a tensor descriptor built from them (`desc.load(offsets)`,
`desc.store(offsets, value)`, lowered as `tl.make_tensor_descriptor` is:
passes/tile_lower_descriptors.py).  The parameter's own slot stays an unused
i64 (as for a `None` argument), so the launchers' argument lists do not move.
Launches with a descriptor take the Python launch path (the C launcher makes
no entry for them).  No MLIR imported.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tilec.language import core as tl
from tilec.runtime.args import ArgInfo, classify

MAX_RANK = 4


@dataclass
class TensorDescriptor:
    """A strided tensor and the block shape loads and stores through it use."""

    base: Any
    shape: list[int]
    strides: list[int]
    block_shape: list[int]
    padding: str = "zero"

    @staticmethod
    def from_tensor(tensor: Any, block_shape: list[int], padding: str = "zero") -> "TensorDescriptor":
        """The descriptor of a whole contiguous or strided torch/NumPy tensor."""
        shape = list(tensor.shape)
        strides = list(tensor.stride()) if callable(getattr(tensor, "stride", None)) else \
            [s // tensor.itemsize for s in tensor.strides]
        return TensorDescriptor(tensor, shape, strides, list(block_shape), padding)


@dataclass(frozen=True)
class DescriptorType:
    """What a kernel is compiled for when a parameter gets a host TensorDescriptor."""

    dtype: str                      # the element type's name (tl.float16.name)
    block_shape: tuple[int, ...]
    padding: str = "zero"

    @property
    def rank(self) -> int:
        return len(self.block_shape)

    def hidden_names(self, name: str) -> list[str]:
        """The hidden kernel parameters of parameter `name`, in order."""
        return ([f"{name}.base"] + [f"{name}.shape{i}" for i in range(self.rank)]
                + [f"{name}.stride{i}" for i in range(self.rank - 1)])


def _ints(what: str, xs: Any) -> list[int]:
    try:
        out = [int(x) for x in xs]
    except (TypeError, ValueError):
        raise TypeError(f"its {what} must be a list of ints, got {xs!r}") from None
    return out


def describe(d: TensorDescriptor) -> tuple[DescriptorType, list[ArgInfo]]:
    """The specialization and the hidden arguments of descriptor `d` (a kernel
    argument); TypeError with a plain reason when tilec cannot take it (the
    caller names the kernel and the parameter)."""
    shape = _ints("shape", d.shape)
    strides = _ints("strides", d.strides)
    block = _ints("block_shape", d.block_shape)
    rank = len(block)
    if not 1 <= rank <= MAX_RANK or len(shape) != rank or len(strides) != rank:
        raise TypeError(f"a TensorDescriptor needs shape, strides and block_shape of one rank "
                        f"(1 to {MAX_RANK}); got {shape}, {strides}, {block}")
    if any(b <= 0 or b & (b - 1) for b in block):
        raise TypeError(f"its block_shape {block} must hold powers of two")
    if strides[-1] != 1:
        raise TypeError(f"its last stride must be 1 (the innermost dimension contiguous), "
                        f"got strides {strides}")
    if d.padding not in ("zero", None):
        raise TypeError(f"padding {d.padding!r} is not supported (\"zero\" is)")
    base = classify(d.base)
    if not isinstance(base.type, tl.pointer_type):
        raise TypeError(f"its base must be a tensor, got {type(d.base).__name__}")
    spec = DescriptorType(base.type.element_ty.name, tuple(block), "zero")
    infos = [base] + [ArgInfo(tl.int64, False, v) for v in shape] + \
        [ArgInfo(tl.int64, s % 16 == 0, s) for s in strides[:-1]]
    return spec, infos


__all__ = ["TensorDescriptor", "DescriptorType", "describe"]

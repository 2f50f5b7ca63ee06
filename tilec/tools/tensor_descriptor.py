"""`triton.tools.tensor_descriptor.TensorDescriptor`: a host-side descriptor of a
strided tensor (base, shape, strides, block_shape, padding), as Triton's host code
builds them for TMA.  tilec does not pass host descriptors to kernels yet (a
launch with one is an error naming the parameter); code that checks
`isinstance(x, TensorDescriptor)` or builds one on a path it does not launch
runs unchanged.  In kernels, `tl.make_tensor_descriptor` is supported."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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


__all__ = ["TensorDescriptor"]

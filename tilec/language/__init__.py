"""`tilec.language` (imported as `tl`): what kernel code may call.

Names follow Triton's `tl.*`.  The functions here only exist to be named in
kernel code: the frontend recognises them by their `__tilec_builtin__` tag and
emits IR for them.  Called from ordinary Python they raise.
"""
from __future__ import annotations

from typing import Any, Callable, TypeVar

from tilec.language.core import (  # noqa: F401  (re-exported names)
    ALL_DTYPES, bfloat16, constexpr, dtype, float8e4nv, float8e5, float16, float32, float64,
    int1, int8, int16, int32, int64, parse_type, pointer_type, block_type, tensor, tensor_descriptor, uint8,
    uint16, uint32, uint64,
)

F = TypeVar("F", bound=Callable[..., Any])


def _builtin(fn: F) -> F:
    name = fn.__name__

    def outside_kernel(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"tl.{name} can only be called inside a @tilec.kernel function")

    outside_kernel.__name__ = name
    outside_kernel.__doc__ = fn.__doc__
    outside_kernel.__tilec_builtin__ = name  # type: ignore[attr-defined]
    return outside_kernel  # type: ignore[return-value]


@_builtin
def program_id(axis: int) -> Any:
    """The index of this program instance along grid axis 0, 1 or 2 (int32)."""


@_builtin
def num_programs(axis: int) -> Any:
    """The number of program instances along grid axis 0, 1 or 2 (int32)."""


@_builtin
def arange(start: int, end: int) -> Any:
    """A 1-D int32 tile [start, end); end - start must be a power of two."""


@_builtin
def zeros(shape: Any, dtype: dtype) -> Any:
    """A tile of zeros of the given constexpr shape and dtype."""


@_builtin
def full(shape: Any, value: Any, dtype: dtype) -> Any:
    """A tile filled with `value`."""


@_builtin
def load(pointer: Any, mask: Any = None, other: Any = None, boundary_check: Any = (),
         padding_option: Any = "", cache_modifier: Any = "", eviction_policy: Any = "",
         volatile: Any = False) -> Any:
    """Load from a pointer or a tile of pointers; masked-off lanes give `other`."""


@_builtin
def store(pointer: Any, value: Any, mask: Any = None, boundary_check: Any = (),
          cache_modifier: Any = "", eviction_policy: Any = "") -> None:
    """Store `value` through a pointer or a tile of pointers where `mask` holds."""


@_builtin
def where(condition: Any, x: Any, y: Any) -> Any:
    """Elementwise `x if condition else y`."""


@_builtin
def minimum(x: Any, y: Any, propagate_nan: Any = 0) -> Any:
    """Elementwise minimum."""


@_builtin
def maximum(x: Any, y: Any, propagate_nan: Any = 0) -> Any:
    """Elementwise maximum."""


@_builtin
def fma(x: Any, y: Any, z: Any) -> Any:
    """Fused multiply-add x * y + z."""


@_builtin
def cdiv(x: Any, y: Any) -> Any:
    """Ceiling division of integers."""


@_builtin
def exp(x: Any) -> Any:
    """e ** x."""


@_builtin
def exp2(x: Any) -> Any:
    """2 ** x."""


@_builtin
def log(x: Any) -> Any:
    """Natural logarithm."""


@_builtin
def log2(x: Any) -> Any:
    """Base-2 logarithm."""


@_builtin
def sqrt(x: Any) -> Any:
    """Square root."""


@_builtin
def rsqrt(x: Any) -> Any:
    """1 / sqrt(x)."""


@_builtin
def abs(x: Any) -> Any:
    """Absolute value."""


@_builtin
def sin(x: Any) -> Any:
    """Sine."""


@_builtin
def cos(x: Any) -> Any:
    """Cosine."""


@_builtin
def floor(x: Any) -> Any:
    """Round toward negative infinity."""


@_builtin
def ceil(x: Any) -> Any:
    """Round toward positive infinity."""


@_builtin
def sum(input: Any, axis: Any = None, keep_dims: bool = False, dtype: Any = None) -> Any:
    """Sum along `axis` (all axes when None); ints narrower than 32 bits sum in 32 bits."""


@_builtin
def max(input: Any, axis: Any = None, keep_dims: bool = False, return_indices: bool = False) -> Any:
    """Maximum along `axis` (NaN-ignoring for floats); with return_indices, also argmax."""


@_builtin
def min(input: Any, axis: Any = None, keep_dims: bool = False, return_indices: bool = False) -> Any:
    """Minimum along `axis`; with return_indices, also argmin."""


@_builtin
def argmax(input: Any, axis: Any, keep_dims: bool = False) -> Any:
    """Index (int32) of the maximum along `axis`; ties resolve to the first index."""


@_builtin
def argmin(input: Any, axis: Any, keep_dims: bool = False) -> Any:
    """Index (int32) of the minimum along `axis`; ties resolve to the first index."""


@_builtin
def reduce(input: Any, axis: Any, combine_fn: Any, keep_dims: bool = False) -> Any:
    """Reduce with a user combine function (a @tilec.kernel taking 2N scalars, returning N)."""


@_builtin
def cumsum(input: Any, axis: Any = 0, reverse: bool = False) -> Any:
    """Inclusive prefix sum along `axis`."""


@_builtin
def cumprod(input: Any, axis: Any = 0, reverse: bool = False) -> Any:
    """Inclusive prefix product along `axis`."""


@_builtin
def associative_scan(input: Any, axis: Any, combine_fn: Any, reverse: bool = False) -> Any:
    """Inclusive scan with a user combine function along `axis`."""


@_builtin
def atomic_add(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> Any:
    """Atomically add `val` at `pointer`; returns the old values."""


@_builtin
def atomic_max(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> Any:
    """Atomic maximum; returns the old values."""


@_builtin
def atomic_min(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> Any:
    """Atomic minimum; returns the old values."""


@_builtin
def atomic_xchg(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> Any:
    """Atomic exchange; returns the old values."""


@_builtin
def atomic_cas(pointer: Any, cmp: Any, val: Any, sem: Any = None, scope: Any = None) -> Any:
    """Atomic compare-and-swap; returns the old values."""


@_builtin
def debug_barrier() -> None:
    """Synchronize all threads of the program (a CTA/workgroup barrier)."""


@_builtin
def warp_sync() -> None:
    """Reconverge the lanes of a warp (bar.warp.sync on NVIDIA; nothing on lock-step AMD)."""


@_builtin
def reshape(input: Any, shape: Any) -> Any:
    """The same elements in row-major order with a new (constexpr) shape."""


@_builtin
def trans(input: Any, *dims: Any) -> Any:
    """The tile with its dimensions permuted (default: the transpose of a 2-D tile)."""


@_builtin
def permute(input: Any, *dims: Any) -> Any:
    """The tile with its dimensions in the order `dims` (varargs or one tuple)."""


@_builtin
def cast(input: Any, dtype: dtype, fp_downcast_rounding: Any = None, bitcast: bool = False) -> Any:
    """`input` converted to `dtype` (as `input.to(dtype)`)."""


@_builtin
def make_tensor_descriptor(base: Any, shape: Any, strides: Any, block_shape: Any,
                           padding_option: str = "zero") -> Any:
    """A descriptor of a strided tensor at `base` (runtime `shape`/`strides`, the last
    stride 1) for blocks of the constexpr `block_shape`: `desc.load(offsets)` reads
    a block (0 outside the tensor), `desc.store(offsets, value)` writes the part
    inside it."""


@_builtin
def make_block_ptr(base: Any, shape: Any, strides: Any, offsets: Any, block_shape: Any,
                   order: Any) -> Any:
    """A block pointer: the `block_shape` window at `offsets` of a strided tensor at
    `base`; `tl.load(p, boundary_check=dims, padding_option=...)` / `tl.store(p, v,
    boundary_check=dims)` access it (only the listed dimensions are bounds-checked)."""


@_builtin
def advance(base: Any, offsets: Any) -> Any:
    """The block pointer `base` moved by `offsets` (one per dimension)."""


@_builtin
def static_assert(cond: Any, msg: str = "") -> None:
    """A compile-time assertion on constexprs."""


@_builtin
def static_print(*values: Any) -> None:
    """Print constexpr values (and types of runtime values) at compile time."""


@_builtin
def dot(input: Any, other: Any, acc: Any = None, input_precision: Any = None,
        allow_tf32: Any = None, max_num_imprecise_acc: Any = None, out_dtype: Any = None) -> Any:
    """acc + input @ other for 2-D tiles [M, K] @ [K, N] (f32/f64/i32 accumulation)."""


@_builtin
def sigmoid(x: Any) -> Any:
    """1 / (1 + exp(-x)), elementwise."""


@_builtin
def clamp(x: Any, min: Any, max: Any, propagate_nan: Any = None) -> Any:
    """`x` limited to [min, max], elementwise."""


@_builtin
def zeros_like(input: Any) -> Any:
    """A tile of zeros with the shape and dtype of `input`."""


@_builtin
def expand_dims(input: Any, axis: Any) -> Any:
    """`input` with a new size-1 dimension at `axis` (an int or a tuple of ints)."""


@_builtin
def broadcast_to(input: Any, *shape: Any) -> Any:
    """`input` broadcast to `shape`."""


@_builtin
def broadcast(input: Any, other: Any) -> Any:
    """Both arguments broadcast to their common shape."""


@_builtin
def multiple_of(input: Any, values: Any) -> Any:
    """A hint that `input`'s values are multiples of `values` (returns `input`)."""


@_builtin
def max_contiguous(input: Any, values: Any) -> Any:
    """A hint that `input` holds runs of `values` consecutive values (returns `input`)."""


@_builtin
def max_constancy(input: Any, values: Any) -> Any:
    """A hint that `input` holds runs of `values` equal values (returns `input`)."""


@_builtin
def range(*args: Any, num_stages: Any = None, loop_unroll_factor: Any = None,
          disallow_acc_multi_buffer: bool = False, flatten: bool = False,
          warp_specialize: bool = False, disable_licm: bool = False,
          overlap_dots: bool | None = None) -> Any:
    """`for i in tl.range(lo, hi, step)`: a loop like `range`.  The keywords are
    scheduling hints recorded on the loop (`tile.num_stages`, `tile.loop_unroll_factor`,
    `tile.flatten`, ...); they do not change what the loop computes.
    `overlap_dots` (tilec's own): on sm90, issue the loop's first dot (S = Q @ K.T)
    one iteration early so that it runs during the softmax (True: every dot that
    qualifies; False: none; None: the compiler decides, passes/tile_pipeline_early.py)."""


@_builtin
def static_range(*args: Any) -> Any:
    """`for i in tl.static_range(lo, hi, step)`: a loop with compile-time bounds."""


from tilec.language.triton_names import (  # noqa: E402,F401  (more of Triton's tl.* names)
    PropagateNan, acos, asin, assume, atan, atan2, cast, cosh, device_assert, div_rn, erf, expm1, fast_dividef, fdiv,
    isinf, isnan, log1p, log10, pow, signbit, sinh, square, tanh, trunc, umulhi,
    join, split, interleave, cat, flip, histogram, sort, topk, gather, device_print,
    inline_asm_elementwise,
)
from tilec.language.random import (  # noqa: E402,F401  (Philox random numbers)
    pair_uniform_to_normal, philox, rand, rand4x, randint, randint4x, randn, randn4x,
    uint_to_uniform_float,
)
from tilec.language import math  # noqa: E402,F401  (tl.math.*: the same functions)
from tilec.language import extra  # noqa: E402,F401  (tl.extra.cuda.libdevice, tl.extra.hip)

# Builtin names the frontend implements, for error messages and checks.
BUILTINS = frozenset(n for n, v in list(globals().items())
                     if callable(v) and hasattr(v, "__tilec_builtin__"))

# Kernel authors list `tl` with dir(): keep the typing helpers out of it.
del Any, Callable, TypeVar, F, annotations

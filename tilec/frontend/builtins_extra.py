"""Frontend rules for `tl.dot` and Triton's conveniences.

`tl.dot` emits `tile.dot` (accumulator types as Triton: f32 for f16/bf16/f32
operands; f64 for f64; i32 for integers).  An f16 result (f16 operands with
`out_dtype=tl.float16`) is an f32 `tile.dot` over the widened accumulator,
rounded to f16 once after it, on every target: the rounding of Triton's
interpreter (NumPy's f16 matmul sums in f32) and of MFMA, and within 1 f16 ulp
of the exact product, where an f16 running sum loses bits at every k.  `tl.sigmoid`, `tl.clamp`, `tl.zeros_like`, `tl.expand_dims`, `tl.broadcast_to`,
`tl.broadcast`, and the compiler hints `tl.multiple_of`, `tl.max_contiguous`,
`tl.max_constancy` (accepted and checked; the axis analysis derives these
facts itself, so a hint never changes the code).  `tl.range` / `tl.static_range`
as loop iterables are handled with `range` in `control_flow.py`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mlir import ir
from mlir.dialects import math as math_d

from tilec.dialects import tile
from tilec.frontend.builtins import Rule, _shape, maximum, minimum, propagate_nans, rule_table
from tilec.frontend.semantic import TValue, broadcast_shapes
from tilec.language import core as tl

if TYPE_CHECKING:
    from tilec.frontend.codegen import CodeGen

RULES: dict[str, Rule] = {}
rule = rule_table(RULES)


def _tile(cg: CodeGen, node: Any, x: Any, fn: str) -> TValue:
    if isinstance(x, tl.constexpr):
        x = x.value
    if not isinstance(x, TValue):
        cg.err(node, f"tl.{fn} needs a tile or a runtime scalar, got {cg.describe(x)}")
    return x


_PRECISIONS = ("tf32", "tf32x3", "ieee")


def _input_precision(cg: CodeGen, node: Any, input_precision: Any, allow_tf32: Any) -> str:
    """Triton's `input_precision` / `allow_tf32` pair as one of _PRECISIONS
    ("ieee" when neither is given: tilec keeps exact f32 products by default)."""
    if isinstance(input_precision, tl.constexpr):
        input_precision = input_precision.value
    if isinstance(allow_tf32, tl.constexpr):
        allow_tf32 = allow_tf32.value
    if input_precision is not None and allow_tf32 is not None:
        cg.err(node, "tl.dot: give input_precision or allow_tf32, not both")
    if allow_tf32 is not None:
        if not isinstance(allow_tf32, bool):
            cg.err(node, f"tl.dot: allow_tf32 must be True or False, got {cg.describe(allow_tf32)}")
        return "tf32" if allow_tf32 else "ieee"
    if input_precision is None:
        return "ieee"
    if input_precision not in _PRECISIONS:
        cg.err(node, f"tl.dot: input_precision must be one of {_PRECISIONS}, got "
               f"{input_precision!r}")
    return str(input_precision)


def _accumulator(cg: CodeGen, node: Any, dt: tl.dtype, out_dtype: Any) -> tl.dtype:
    if isinstance(out_dtype, tl.constexpr):
        out_dtype = out_dtype.value
    if dt.is_floating() and dt.bits == 64:
        return tl.float64
    if dt.is_floating():
        if out_dtype is tl.float16 and dt is tl.float16:
            return tl.float16
        if out_dtype is tl.float32:
            return tl.float32
        cg.err(node, f"tl.dot of {dt!r} accumulates in tl.float32"
               + (" (or tl.float16 for tl.float16 operands)" if dt is tl.float16 else "")
               + f", not {out_dtype!r}")
    if dt.kind in ("int", "uint") and dt.bits <= 32:
        # Triton accumulates integer dots in int32 whatever integer out_dtype says.
        if out_dtype is not tl.float32 and not (isinstance(out_dtype, tl.dtype) and out_dtype.is_int()):
            cg.err(node, f"tl.dot of {dt!r} accumulates in tl.int32, not {out_dtype!r}")
        return tl.int32
    cg.err(node, f"tl.dot does not support {dt!r} operands")


@rule("dot")
def dot(cg: CodeGen, node: Any, input: Any, other: Any, acc: Any = None,
        input_precision: Any = None, allow_tf32: Any = None, max_num_imprecise_acc: Any = None,
        out_dtype: Any = tl.float32) -> TValue:
    """acc + input @ other for 2-D tiles [M, K] @ [K, N]; 3-D tiles [B, M, K] @
    [B, K, N] are B 2-D dots (one per batch element, picked out and stacked
    again with `tile.restride`)."""
    a = _tile(cg, node, input, "dot")
    b = _tile(cg, node, other, "dot")
    if a.is_ptr or b.is_ptr:
        cg.err(node, "tl.dot needs tiles of numbers, not pointers")
    if len(a.shape) == 3 and len(b.shape) == 3 and a.shape[0] == b.shape[0]:
        return _batched_dot(cg, node, a, b, acc, input_precision, allow_tf32, max_num_imprecise_acc,
                            out_dtype)
    if len(a.shape) != 2 or len(b.shape) != 2:
        cg.err(node, f"tl.dot needs 2-D tiles (or 3-D with one batch size), got shapes "
               f"{list(a.shape)} and {list(b.shape)}")
    if a.shape[1] != b.shape[0]:
        cg.err(node, f"tl.dot: the inner dimensions differ: {list(a.shape)} @ {list(b.shape)}")
    if a.dtype is not b.dtype:
        cg.err(node, f"tl.dot operands must have one dtype, got {a.dtype!r} and {b.dtype!r}; "
               "convert one with .to()")
    precision = _input_precision(cg, node, input_precision, allow_tf32)
    if isinstance(max_num_imprecise_acc, tl.constexpr):
        max_num_imprecise_acc = max_num_imprecise_acc.value
    if max_num_imprecise_acc is not None and not isinstance(max_num_imprecise_acc, int):
        cg.err(node, "tl.dot: max_num_imprecise_acc must be a constexpr int or None")
    dt = a.dtype
    res_t = _accumulator(cg, node, dt, out_dtype)
    shape = (a.shape[0], b.shape[1])
    # An f16 result is summed in f32 and rounded once at the end (as Triton's
    # interpreter, whose NumPy matmul sums f16 in f32, and MFMA).
    sum_t = tl.float32 if res_t is tl.float16 else res_t
    if acc is None:
        acc_v = cg.broadcast_to(cg.constant(0, sum_t), shape, node)
    else:
        acc_v = _tile(cg, node, acc, "dot")
        if tuple(acc_v.shape) != shape or acc_v.is_ptr or acc_v.dtype is not res_t:
            cg.err(node, f"tl.dot: acc must be a {list(shape)} tile of {res_t!r}, got "
                   f"{acc_v.type_str()}")
        acc_v = cg.cast(acc_v, sum_t, node)
    out = tile.dot(a.handle, b.handle, acc_v.handle, loc=cg.loc, ip=cg.ip)
    if dt is tl.float32 and precision != "ieee":  # the other dtypes have one precision
        out.owner.attributes["input_precision"] = ir.StringAttr.get(precision)
    return cg.cast(TValue(out, sum_t, shape), res_t, node)


def _batched_dot(cg: CodeGen, node: Any, a: TValue, b: TValue, acc: Any, input_precision: Any,
                 allow_tf32: Any, max_num_imprecise_acc: Any, out_dtype: Any) -> TValue:
    from tilec.dialects import tile_elements as el
    nb, m, k = a.shape
    n = b.shape[2]

    def pick(x: TValue, i: int) -> TValue:
        r, c = x.shape[1], x.shape[2]
        h = el.restride([x.handle], (r, c), [r, c], [c, 1], i * r * c, loc=cg.loc, ip=cg.ip)
        return TValue(h, x.elem, (r, c))

    accs = None
    if acc is not None:
        acc_v = _tile(cg, node, acc, "dot")
        if tuple(acc_v.shape) != (nb, m, n):
            cg.err(node, f"tl.dot: acc must be a {[nb, m, n]} tile, got {acc_v.type_str()}")
        accs = [pick(acc_v, i) for i in range(nb)]
    outs = [dot(cg, node, pick(a, i), pick(b, i), None if accs is None else accs[i], input_precision,
                allow_tf32, max_num_imprecise_acc, out_dtype) for i in range(nb)]
    # Stack pairwise: two sources per restride (their concatenation is the
    # row-major [2k, M, N] tile), as the CPU lowering shuffles two vectors at a time.
    parts = [(o.handle, 1) for o in outs]
    while len(parts) > 1:
        nxt = []
        for (x, bx), (y, by) in zip(parts[0::2], parts[1::2]):
            rows = bx + by
            nxt.append((el.restride([x, y], (rows, m, n), [rows, m, n], [m * n, n, 1], 0,
                                    loc=cg.loc, ip=cg.ip), rows))
        parts = nxt + ([parts[-1]] if len(parts) % 2 else [])
    h = parts[0][0]
    if nb == 1:
        h = el.restride([h], (1, m, n), [1, m, n], [m * n, n, 1], 0, loc=cg.loc, ip=cg.ip)
    return TValue(h, outs[0].elem, (nb, m, n))


@rule("sigmoid")
def sigmoid(cg: CodeGen, node: Any, x: Any) -> TValue:
    """1 / (1 + exp(-x)), in x's floating type."""
    v = _tile(cg, node, x, "sigmoid")
    if v.is_ptr or not v.dtype.is_floating():
        cg.err(node, f"tl.sigmoid needs a floating-point argument, got {v.type_str()}; convert "
               "it with .to(tl.float32)")
    neg = cg.binary("-", 0.0, v, node)
    e = cg.arith_op(math_d.exp, neg)
    result: TValue = cg.binary("/", 1.0, cg.binary("+", 1.0, e, node), node)
    return result


@rule("clamp")
def clamp(cg: CodeGen, node: Any, x: Any, min: Any, max: Any, propagate_nan: Any = None) -> Any:
    """min(max(x, lo), hi), elementwise; a NaN x gives NaN only with
    propagate_nan=tl.PropagateNan.ALL (NaN bounds are the caller's mistake, as in Triton)."""
    return propagate_nans(cg, node, minimum(cg, node, maximum(cg, node, x, min), max), (x,),
                          propagate_nan)


@rule("zeros_like")
def zeros_like(cg: CodeGen, node: Any, input: Any) -> TValue:
    v = _tile(cg, node, input, "zeros_like")
    if v.is_ptr:
        cg.err(node, "tl.zeros_like needs a tile of numbers, not pointers")
    return cg.broadcast_to(cg.constant(0, v.dtype), v.shape, node)


@rule("expand_dims")
def expand_dims(cg: CodeGen, node: Any, input: Any, axis: Any) -> TValue:
    """A new size-1 dimension at `axis` (an int or a sequence of ints; negative
    counts from the end of the result)."""
    v = _tile(cg, node, input, "expand_dims")
    if isinstance(axis, tl.constexpr):
        axis = axis.value
    axes = list(axis) if isinstance(axis, (tuple, list)) else [axis]
    rank = len(v.shape) + len(axes)
    norm: list[int] = []
    for a in axes:
        if isinstance(a, tl.constexpr):
            a = a.value
        if not isinstance(a, int) or isinstance(a, bool) or not -rank <= a < rank:
            cg.err(node, f"tl.expand_dims: axis {a!r} is not an int in [{-rank}, {rank})")
        norm.append(a % rank)
    if len(set(norm)) != len(norm):
        cg.err(node, f"tl.expand_dims: repeated axis in {axes}")
    for a in sorted(norm):
        v = cg.expand_dims(v, a)
    return v


@rule("broadcast_to")
def broadcast_to(cg: CodeGen, node: Any, input: Any, *shape: Any) -> TValue:
    v = _tile(cg, node, input, "broadcast_to")
    dims = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list, tl.constexpr)) \
        else shape
    return cg.broadcast_to(v, _shape(cg, node, dims), node)


@rule("broadcast")
def broadcast(cg: CodeGen, node: Any, input: Any, other: Any) -> tuple[Any, Any]:
    """Both arguments broadcast to their common shape (types unchanged)."""
    a = _tile(cg, node, input, "broadcast")
    b = _tile(cg, node, other, "broadcast")
    try:
        shape = broadcast_shapes(a.shape, b.shape)
    except ValueError:
        cg.err(node, f"tl.broadcast: shapes {list(a.shape)} and {list(b.shape)} are not "
               "compatible")
    return cg.broadcast_to(a, shape, node), cg.broadcast_to(b, shape, node)


HINT_ATTRS = {"multiple_of": "tile.hint_multiple_of", "max_contiguous": "tile.hint_max_contiguous",
              "max_constancy": "tile.hint_max_constancy"}


def _record_hint(name: str, value: TValue, vals: list[int]) -> None:
    """Triton's contract for these hints (an assertion about the value the
    compiler may trust, as `tt.divisibility` / `tt.contiguity` /
    `tt.constancy`): recorded on the op that defines the value, one entry per
    dimension (a single value for every dimension), the larger where the value
    was hinted before; passes/analysis/axis_info.py reads them.  A function
    argument (no defining op) keeps what its specialization says."""
    owner = value.handle.owner
    if not isinstance(owner, ir.OpView):
        return
    op = owner.operation
    rank = max(len(value.shape), 1)
    per = vals * rank if len(vals) == 1 else vals
    attr = HINT_ATTRS[name]
    if attr in op.attributes:
        per = [max(a, b) for a, b in zip(ir.DenseI32ArrayAttr(op.attributes[attr]), per)]
    op.attributes[attr] = ir.DenseI32ArrayAttr.get(per)


def _hint(name: str) -> None:
    def impl(cg: CodeGen, node: Any, input: Any, values: Any) -> Any:
        if isinstance(values, tl.constexpr):
            values = values.value
        vals = list(values) if isinstance(values, (tuple, list)) else [values]
        for v in vals:
            if isinstance(v, tl.constexpr):
                v = v.value
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                cg.err(node, f"tl.{name} needs positive constexpr ints, got {v!r}")
        if isinstance(input, TValue) and input.is_block and len(vals) not in (1, len(input.shape)):
            cg.err(node, f"tl.{name}: {len(vals)} values for a tile of rank {len(input.shape)}")
        if isinstance(input, TValue):
            _record_hint(name, input, [int(v.value if isinstance(v, tl.constexpr) else v)
                                       for v in vals])
        return input
    impl.__name__ = name
    RULES[name] = impl


for _name in ("multiple_of", "max_contiguous", "max_constancy"):
    _hint(_name)

__all__ = ["dot", "sigmoid", "clamp", "zeros_like", "expand_dims", "broadcast_to", "broadcast"]

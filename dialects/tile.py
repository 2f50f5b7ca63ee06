"""The `tile` dialect: tile-level kernel IR.

Defined in IRDL (no C++), loaded into every MLIR context tilec creates.  Tiles
are builtin ranked tensors; pointers are `!tile.ptr<T>`; a tile of pointers is
`tensor<128x!tile.ptr<f32>>`.  Elementwise math uses `arith`/`math` on tensors,
splats use `tensor.splat`, control flow is `scf`.  The dialect owns what has no
upstream equivalent:

| op | operands -> result | attributes |
|---|---|---|
| `tile.program_id`   | () -> i32 | `axis` (0-2) |
| `tile.num_programs` | () -> i32 | `axis` (0-2) |
| `tile.range`        | () -> tensor<Nxi32> | `start`, `end` (N = end - start) |
| `tile.broadcast`    | tensor -> tensor (size-1 dims stretched) | |
| `tile.expand_dims`  | tensor -> tensor (a size-1 dim inserted) | `axis` |
| `tile.addptr`       | ptr-like, int-like -> ptr-like (offset in elements) | |
| `tile.load`         | ptr-like [, mask] [, other] -> value | `operandSegmentSizes` |
| `tile.store`        | ptr-like, value [, mask] -> () | `operandSegmentSizes` |
| `tile.convert_layout` | tensor -> same tensor with another layout encoding | |
| `tile.reduce`       | N tiles -> N tiles (or scalars) without dim `axis` | `axis`, `combine` |
| `tile.scan`         | N tiles -> N tiles of the same types | `axis`, `combine`, `reverse` (unit) |
| `tile.atomic_rmw`   | ptr-like, value [, mask] -> old value | `kind` (ATOMIC_KINDS), `operandSegmentSizes` |
| `tile.atomic_cas`   | ptr-like, cmp, value -> old value | |
| `tile.barrier`      | () -> () : all threads of a program, memory visible | |
| `tile.warp_sync`    | () -> () : the lanes of a warp reconverge | |
| `tile.reshape`      | tensor -> tensor with as many elements (row-major) | |
| `tile.trans`        | 2-D tensor -> its transpose | |
| `tile.dot`          | a [M,K], b [K,N], acc [M,N] -> acc + a @ b | |
| `tile.make_descriptor`, `tile.descriptor_load/store`: dialects/tile_descriptors.py; `tile.int_to_ptr`, `tile.ptr_to_int`, `tile.restride`, `tile.gather`: dialects/tile_elements.py; `tile.assert`, `tile.debug_trap`: dialects/tile_debug.py; `tile.print`: dialects/tile_print.py | | |

`combine` names a `func.func private` in the same module that takes 2N
scalars (the running values, then the new values) and returns N scalars; IRDL
ops cannot hold a region with a terminator, so the combine function is a
symbol.  Lowerings clone its body (on scalars, vectors or shuffled lanes).
`tile.reduce`/`tile.scan` take 1 to `MAX_COMBINE_OPERANDS` operands of
possibly different types: IRDL binds one constraint variable to one type, so
each operand (and result) is its own optional group, sized by
`operandSegmentSizes`/`resultSegmentSizes` (`segment_attrs(n)`).

IRDL checks op names and operand counts; the shape and element-type rules are
checked by the `tile-verify` pass (passes/tile_verify.py), which reports the
op's location.  The builders below compute result types from the operands.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence, Union

from mlir import ir
from mlir.dialects import irdl

from tilec.dialects import memory_ops, tile_debug, tile_descriptors, tile_elements, tile_print

_IRDL_TEMPLATE = r"""
irdl.dialect @tile {
  irdl.type @ptr {
    %0 = irdl.any
    irdl.parameters(pointee: %0)
  }
  irdl.operation @program_id {
    %i32 = irdl.is i32
    %a = irdl.any
    irdl.attributes {"axis" = %a}
    irdl.results(result: %i32)
  }
  irdl.operation @num_programs {
    %i32 = irdl.is i32
    %a = irdl.any
    irdl.attributes {"axis" = %a}
    irdl.results(result: %i32)
  }
  irdl.operation @range {
    %r = irdl.any
    %s = irdl.any
    %e = irdl.any
    irdl.attributes {"start" = %s, "end" = %e}
    irdl.results(result: %r)
  }
  irdl.operation @expand_dims {
    %s = irdl.any
    %r = irdl.any
    %a = irdl.any
    irdl.attributes {"axis" = %a}
    irdl.operands(src: %s)
    irdl.results(result: %r)
  }
  irdl.operation @addptr {
    %p = irdl.any
    %o = irdl.any
    %r = irdl.any
    irdl.operands(ptr: %p, offset: %o)
    irdl.results(result: %r)
  }
  irdl.operation @load {
    %p = irdl.any
    %m = irdl.any
    %o = irdl.any
    %r = irdl.any
    irdl.operands(ptr: %p, mask: optional %m, other: optional %o)
    irdl.results(result: %r)
  }
  irdl.operation @store {
    %p = irdl.any
    %v = irdl.any
    %m = irdl.any
    irdl.operands(ptr: %p, value: %v, mask: optional %m)
  }
  // ---- layouts (tiled level; `Blocked`/`Slice` below read and build them)
  // #tile.blocked<per_thread, lanes, warps, order>: four array<i32> of rank entries.
  irdl.attribute @blocked {
    %pt = irdl.base "#builtin.dense_array"
    %ln = irdl.base "#builtin.dense_array"
    %wp = irdl.base "#builtin.dense_array"
    %od = irdl.base "#builtin.dense_array"
    irdl.parameters(per_thread: %pt, lanes: %ln, warps: %wp, order: %od)
  }
  // #tile.slice<dim, parent>: the parent layout with dimension `dim` removed.
  irdl.attribute @slice {
    %d = irdl.base "#builtin.integer"
    %p = irdl.base @tile::@blocked
    irdl.parameters(dim: %d, parent: %p)
  }
{generated_ops}  irdl.operation @atomic_rmw {
    %p = irdl.any
    %v = irdl.any
    %m = irdl.any
    %r = irdl.any
    %k = irdl.any
    irdl.attributes {"kind" = %k}
    irdl.operands(ptr: %p, value: %v, mask: optional %m)
    irdl.results(result: %r)
  }
  irdl.operation @atomic_cas {
    %p = irdl.any
    %c = irdl.any
    %v = irdl.any
    %r = irdl.any
    irdl.operands(ptr: %p, cmp: %c, value: %v)
    irdl.results(result: %r)
  }
  irdl.operation @barrier {
  }
  irdl.operation @warp_sync {
  }
  irdl.operation @dot {
    %a = irdl.any
    %b = irdl.any
    %c = irdl.any
    irdl.operands(a: %a, b: %b, acc: %c)
    irdl.results(result: %c)
  }
{memory_ops}}
"""


def _combine_op(name: str, groups: int) -> str:
    """IRDL for a reduce-like op: `groups` operand/result groups, each its own
    constraint variable (IRDL binds one variable to one type)."""
    decl = "".join(f"    %s{i} = irdl.any\n    %r{i} = irdl.any\n" for i in range(groups))
    ops = ", ".join(f"src{i}: {'optional ' if i else ''}%s{i}" for i in range(groups))
    res = ", ".join(f"res{i}: {'optional ' if i else ''}%r{i}" for i in range(groups))
    return (f"  irdl.operation @{name} {{\n{decl}    %a = irdl.any\n    %c = irdl.any\n"
            f'    irdl.attributes {{"axis" = %a, "combine" = %c}}\n'
            f"    irdl.operands({ops})\n    irdl.results({res})\n  }}\n")


def _one_operand_op(name: str) -> str:
    """IRDL for an op from one value to one value of any types."""
    return (f"  irdl.operation @{name} {{\n    %s = irdl.any\n    %r = irdl.any\n"
            f"    irdl.operands(src: %s)\n    irdl.results(result: %r)\n  }}\n")


# Ops without side effects: removed when unused by the `tile-dce` pass.
PURE_OPS = frozenset({
    "tile.program_id", "tile.num_programs", "tile.range", "tile.broadcast",
    "tile.expand_dims", "tile.addptr", "tile.load", "tile.reduce", "tile.scan",
    "tile.reshape", "tile.trans", "tile.dot", "tile.convert_layout",
}) | tile_descriptors.PURE_OPS | tile_elements.PURE_OPS

MAX_COMBINE_OPERANDS = 4
IRDL_SOURCE = _IRDL_TEMPLATE.replace("{memory_ops}", memory_ops.IRDL_MEMORY_OPS).replace(
    "{generated_ops}",
    "".join(_one_operand_op(n) for n in ("broadcast", "convert_layout", "reshape", "trans")) +
    tile_descriptors.IRDL_OPS + tile_elements.IRDL_OPS + tile_debug.IRDL_OPS + tile_print.IRDL_OPS +
    _combine_op("reduce", MAX_COMBINE_OPERANDS) + _combine_op("scan", MAX_COMBINE_OPERANDS))


def segment_attrs(n: int) -> dict[str, ir.Attribute]:
    """operandSegmentSizes / resultSegmentSizes of a reduce or scan with n operands."""
    if not 1 <= n <= MAX_COMBINE_OPERANDS:
        raise ValueError(f"reduce/scan take 1 to {MAX_COMBINE_OPERANDS} operands, got {n}")
    sizes = ir.DenseI32ArrayAttr.get([1] * n + [0] * (MAX_COMBINE_OPERANDS - n))
    return {"operandSegmentSizes": sizes, "resultSegmentSizes": sizes}


def combine_function(op: ir.Operation) -> ir.Operation | None:
    """The `func.func` a reduce/scan op names in its `combine` attribute, or None."""
    name = ir.FlatSymbolRefAttr(op.attributes["combine"]).value
    module = op
    while module.name != "builtin.module":
        if module.parent is None:
            return None
        module = module.parent
    for view in module.regions[0].blocks[0].operations:
        f = view.operation
        if f.name == "func.func" and ir.StringAttr(f.attributes["sym_name"]).value == name:
            return f
    return None


# Atomic read-modify-write kinds (`tile.atomic_rmw {kind}`) and the element
# types each accepts: 'f' float, 'i' integer (signless), 'u' unsigned integer.
ATOMIC_KINDS = {
    "add": "i", "fadd": "f", "max": "i", "min": "i", "umax": "u", "umin": "u",
    "fmax": "f", "fmin": "f", "xchg": "if", "and": "i", "or": "i", "xor": "i",
}


def register(context: ir.Context) -> None:
    """Register the `tile` dialect in `context` (idempotent per context)."""
    if getattr(context, "_tilec_tile_loaded", False):
        return
    with context, ir.Location.unknown():
        irdl.load_dialects(ir.Module.parse(IRDL_SOURCE))
    setattr(context, "_tilec_tile_loaded", True)


def new_context() -> ir.Context:
    """A fresh MLIR context with every upstream dialect and `tile` loaded."""
    ctx = ir.Context()
    register(ctx)
    return ctx


# ---------------------------------------------------------------- types
# IRDL types and attributes have no Python classes: `!tile.ptr<T>` and the
# layout encodings are built from and read back from their printed form, here
# and nowhere else.

_PTR_PREFIX = "!tile.ptr<"


def ptr_type(pointee: ir.Type) -> ir.Type:
    """`!tile.ptr<pointee>`."""
    return ir.Type.parse(f"{_PTR_PREFIX}{pointee}>", pointee.context)


def is_ptr(t: ir.Type) -> bool:
    return str(t).startswith(_PTR_PREFIX)


def pointee(t: ir.Type) -> ir.Type:
    """The element type of `!tile.ptr<T>`."""
    s = str(t)
    if not is_ptr(t):
        raise ValueError(f"not a tile pointer type: {s}")
    return ir.Type.parse(s[len(_PTR_PREFIX):-1], t.context)


def tensor_type(shape: Sequence[int], element: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(shape), element)


def element_type(t: ir.Type) -> ir.Type:
    """The scalar type of a tile type, or `t` itself for a scalar."""
    if isinstance(t, ir.RankedTensorType):
        return ir.RankedTensorType(t).element_type
    return t


def shape_of(t: ir.Type) -> tuple[int, ...]:
    if isinstance(t, ir.RankedTensorType):
        return tuple(ir.RankedTensorType(t).shape)
    return ()


def _tile_or_scalar(shape: Sequence[int], element: ir.Type) -> ir.Type:
    return tensor_type(shape, element) if shape else element


# ---------------------------------------------------------------- layouts
# A tiled-level tensor carries its distribution over threads as its encoding:
#   #tile.blocked<array<i32: per_thread...>, array<i32: lanes...>,
#                 array<i32: warps...>, array<i32: order...>>
#   #tile.slice<dim : i32, #tile.blocked<...>>
# `order` lists dimensions fastest-varying first (order[0] is the contiguous
# one).  IRDL attributes print their parameters positionally, so the four
# arrays always come in the order above.  These helpers convert between the
# attribute and plain dataclasses.

@dataclass(frozen=True)
class Blocked:
    """Each thread owns `per_thread[d]` contiguous elements along dim d; a warp
    spreads `lanes[d]` threads and the program `warps[d]` warps along d, both
    filled in `order`.  Tiles larger than the coverage repeat the pattern, tiles
    smaller than it wrap (several threads hold the same element)."""

    per_thread: tuple[int, ...]
    lanes: tuple[int, ...]
    warps: tuple[int, ...]
    order: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.per_thread)


@dataclass(frozen=True)
class Slice:
    """The 1-D layout of a tensor that `tile.expand_dims` at `dim` turns into a
    tensor with layout `parent` (so that expand_dims and broadcast are free)."""

    dim: int
    parent: Blocked


Layout = Union[Blocked, Slice]


def layout_attr(layout: Layout) -> ir.Attribute:
    """The `#tile.blocked`/`#tile.slice` attribute for `layout` (context: current)."""
    return ir.Attribute.parse(_layout_text(layout))


def _layout_text(layout: Layout) -> str:
    if isinstance(layout, Slice):
        return f"#tile.slice<{layout.dim} : i32, {_layout_text(layout.parent)}>"
    fields = (layout.per_thread, layout.lanes, layout.warps, layout.order)
    return "#tile.blocked<" + ", ".join(
        "array<i32: " + ", ".join(str(v) for v in f) + ">" for f in fields) + ">"


_ARRAY_RE = re.compile(r"array<i32(?::\s*([-\d,\s]*))?>")
_SLICE_RE = re.compile(r"#tile\.slice<(\d+) : i\d+, (.*)>$")


def parse_layout(attr: ir.Attribute | None) -> Layout | None:
    """The layout an encoding attribute denotes, or None if it is not one."""
    return None if attr is None else _parse_layout_text(str(attr))


def _parse_layout_text(text: str) -> Layout | None:
    if text.startswith("#tile.slice<"):
        m = _SLICE_RE.match(text)
        parent = _parse_layout_text(m.group(2)) if m else None
        if m is None or not isinstance(parent, Blocked):
            raise ValueError(f"malformed slice layout: {text}")
        return Slice(int(m.group(1)), parent)
    if text.startswith("#tile.blocked<"):
        arrays = [tuple(int(x) for x in (g or "").split(",") if x.strip())
                  for g in _ARRAY_RE.findall(text)]
        if len(arrays) != 4:
            raise ValueError(f"malformed blocked layout: {text}")
        return Blocked(*arrays)
    return None


def layout_of(t: ir.Type) -> Layout | None:
    """The layout encoding of a tile type (None for scalars and unlaid tensors)."""
    if not isinstance(t, ir.RankedTensorType):
        return None
    return parse_layout(t.encoding)


def with_layout(t: ir.Type, layout: Layout | None) -> ir.Type:
    """`t` (a tile type) with its encoding replaced by `layout`."""
    rt = ir.RankedTensorType(t)
    enc = layout_attr(layout) if layout is not None else None
    return ir.RankedTensorType.get(list(rt.shape), rt.element_type, enc,
                                   loc=ir.Location.unknown(rt.context))


# ---------------------------------------------------------------- builders
# One function per op.  Each takes the location explicitly (every op tilec
# builds carries the user's source position or the rewritten op's) and an
# optional insertion point (default: the current one).  Result types follow
# from the operands, as the verifier (`tile-verify`) expects them.

IP = Union[ir.InsertionPoint, None]


def _i32_attr(v: int) -> ir.Attribute:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), v)


def _segments(*sizes: int) -> ir.Attribute:
    return ir.DenseI32ArrayAttr.get(list(sizes))


def _create(name: str, results: Iterable[ir.Type], operands: Iterable[ir.Value],
            attributes: dict[str, ir.Attribute] | None, loc: ir.Location,
            ip: IP) -> ir.Operation:
    return ir.Operation.create(name, results=list(results), operands=list(operands),
                               attributes=attributes or {}, loc=loc, ip=ip)


def _optional(*values: ir.Value | None) -> list[ir.Value]:
    return [v for v in values if v is not None]


def program_id(axis: int, *, loc: ir.Location, ip: IP = None) -> ir.Value:
    return _create("tile.program_id", [ir.IntegerType.get_signless(32)], [],
                   {"axis": _i32_attr(axis)}, loc, ip).result


def num_programs(axis: int, *, loc: ir.Location, ip: IP = None) -> ir.Value:
    return _create("tile.num_programs", [ir.IntegerType.get_signless(32)], [],
                   {"axis": _i32_attr(axis)}, loc, ip).result


def range_(start: int, end: int, *, loc: ir.Location, ip: IP = None) -> ir.Value:
    """tensor<(end - start)xi32> holding start, start + 1, ..., end - 1."""
    t = tensor_type([end - start], ir.IntegerType.get_signless(32))
    return _create("tile.range", [t], [], {"start": _i32_attr(start), "end": _i32_attr(end)},
                   loc, ip).result


def broadcast(src: ir.Value, result: ir.Type, *, loc: ir.Location, ip: IP = None) -> ir.Value:
    return _create("tile.broadcast", [result], [src], None, loc, ip).result


def expand_dims(src: ir.Value, axis: int, *, loc: ir.Location, ip: IP = None) -> ir.Value:
    shape = list(shape_of(src.type))
    shape.insert(axis, 1)
    t = tensor_type(shape, element_type(src.type))
    return _create("tile.expand_dims", [t], [src], {"axis": _i32_attr(axis)}, loc, ip).result


def addptr(ptr: ir.Value, offset: ir.Value, *, loc: ir.Location, ip: IP = None) -> ir.Value:
    """`ptr` advanced by `offset` elements (both of one shape)."""
    return _create("tile.addptr", [ptr.type], [ptr, offset], None, loc, ip).result


def load(ptr: ir.Value, mask: ir.Value | None = None, other: ir.Value | None = None,
         *, loc: ir.Location, ip: IP = None) -> ir.Value:
    result = _tile_or_scalar(shape_of(ptr.type), pointee(element_type(ptr.type)))
    seg = _segments(1, int(mask is not None), int(other is not None))
    return _create("tile.load", [result], [ptr, *_optional(mask, other)],
                   {"operandSegmentSizes": seg}, loc, ip).result


def store(ptr: ir.Value, value: ir.Value, mask: ir.Value | None = None,
          *, loc: ir.Location, ip: IP = None) -> ir.Operation:
    seg = _segments(1, 1, int(mask is not None))
    return _create("tile.store", [], [ptr, value, *_optional(mask)],
                   {"operandSegmentSizes": seg}, loc, ip)


def convert_layout(src: ir.Value, result: ir.Type, *, loc: ir.Location,
                   ip: IP = None) -> ir.Value:
    return _create("tile.convert_layout", [result], [src], None, loc, ip).result


def _combine_attrs(n: int, axis: int, combine: str) -> dict[str, ir.Attribute]:
    return {"axis": _i32_attr(axis), "combine": ir.FlatSymbolRefAttr.get(combine),
            **segment_attrs(n)}


def reduce(srcs: Sequence[ir.Value], axis: int, combine: str, *, loc: ir.Location,
           ip: IP = None) -> list[ir.Value]:
    """`srcs` (1 to MAX_COMBINE_OPERANDS tiles of one shape) reduced along `axis`
    with the private function `@combine`; 1-D tiles reduce to scalars."""
    results = []
    for s in srcs:
        shape = shape_of(s.type)
        results.append(_tile_or_scalar(shape[:axis] + shape[axis + 1:], element_type(s.type)))
    op = _create("tile.reduce", results, srcs, _combine_attrs(len(srcs), axis, combine), loc, ip)
    return list(op.results)


def scan(srcs: Sequence[ir.Value], axis: int, combine: str, reverse: bool = False,
         *, loc: ir.Location, ip: IP = None) -> list[ir.Value]:
    """Inclusive scans of `srcs` along `axis` with `@combine` (last to first if `reverse`)."""
    attrs = _combine_attrs(len(srcs), axis, combine)
    if reverse:
        attrs["reverse"] = ir.UnitAttr.get()
    op = _create("tile.scan", [s.type for s in srcs], srcs, attrs, loc, ip)
    return list(op.results)


def atomic_rmw(kind: str, ptr: ir.Value, value: ir.Value, mask: ir.Value | None = None,
               *, loc: ir.Location, ip: IP = None) -> ir.Value:
    """The old values at `ptr`, which become `old <kind> value` (kind: ATOMIC_KINDS)."""
    if kind not in ATOMIC_KINDS:
        raise ValueError(f"unknown atomic kind '{kind}'")
    attrs = {"kind": ir.StringAttr.get(kind),
             "operandSegmentSizes": _segments(1, 1, int(mask is not None))}
    return _create("tile.atomic_rmw", [value.type], [ptr, value, *_optional(mask)], attrs,
                   loc, ip).result


def atomic_cas(ptr: ir.Value, cmp: ir.Value, value: ir.Value, *, loc: ir.Location,
               ip: IP = None) -> ir.Value:
    return _create("tile.atomic_cas", [value.type], [ptr, cmp, value], None, loc, ip).result


def barrier(*, loc: ir.Location, ip: IP = None) -> ir.Operation:
    return _create("tile.barrier", [], [], None, loc, ip)


def warp_sync(*, loc: ir.Location, ip: IP = None) -> ir.Operation:
    return _create("tile.warp_sync", [], [], None, loc, ip)


def reshape(src: ir.Value, shape: Sequence[int], *, loc: ir.Location,
            ip: IP = None) -> ir.Value:
    t = tensor_type(shape, element_type(src.type))
    return _create("tile.reshape", [t], [src], None, loc, ip).result


def trans(src: ir.Value, *, loc: ir.Location, ip: IP = None) -> ir.Value:
    t = tensor_type(shape_of(src.type)[::-1], element_type(src.type))
    return _create("tile.trans", [t], [src], None, loc, ip).result


def dot(a: ir.Value, b: ir.Value, acc: ir.Value, *, loc: ir.Location,
        ip: IP = None) -> ir.Value:
    """acc + a @ b for a [M, K], b [K, N], acc [M, N]."""
    return _create("tile.dot", [acc.type], [a, b, acc], None, loc, ip).result

"""Code generation rule for `tl.inline_asm_elementwise(asm, constraints, args,
dtype, is_pure, pack)` (Triton's name and arguments): a `tile.inline_asm` op
(dialects/tile_elements.py) over the arguments broadcast to one shape.

Checked here, so that LLVM never sees a malformed request (it aborts on some):
`asm` and `constraints` are strings; the constraints name one output (`=...`)
per result dtype and one input per argument (clobbers `~{...}` may follow);
`pack` is 1, 2, 4 or 8, and with pack > 1 every argument's and result's `pack`
elements fill 16, 32 or 64 bits (the register the assembly sees).  GPU targets
lower it (passes/gpu/elements.py); the CPU target reports a located error.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tilec.dialects import tile_elements as el
from tilec.frontend.builtins import Rule, rule_table
from tilec.frontend.semantic import TValue, broadcast_shapes, literal_dtype, mlir_type
from tilec.language import core as tl

if TYPE_CHECKING:
    from tilec.frontend.codegen import CodeGen

RULES: dict[str, Rule] = {}
rule = rule_table(RULES)


def _plain(v: Any) -> Any:
    return v.value if isinstance(v, tl.constexpr) else v


def _constraint_counts(constraints: str) -> tuple[int, int]:
    """(outputs, inputs) named by an LLVM inline-asm constraint string."""
    parts = [c.strip() for c in constraints.split(",") if c.strip()]
    outs = sum(1 for c in parts if c.startswith("="))
    ins = sum(1 for c in parts if not c.startswith(("=", "~")))
    return outs, ins


@rule("inline_asm_elementwise")
def inline_asm_elementwise(cg: CodeGen, node: Any, asm: Any, constraints: Any, args: Any,
                           dtype: Any, is_pure: Any, pack: Any) -> Any:
    asm, constraints, args = _plain(asm), _plain(constraints), _plain(args)
    dtype, is_pure, pack = _plain(dtype), _plain(is_pure), _plain(pack)
    name = "tl.inline_asm_elementwise"
    if not isinstance(asm, str) or not isinstance(constraints, str):
        cg.err(node, f"{name}: asm and constraints must be strings")
    if not isinstance(is_pure, bool):
        cg.err(node, f"{name}: is_pure must be True or False")
    if not isinstance(pack, int) or isinstance(pack, bool) or pack not in (1, 2, 4, 8):
        cg.err(node, f"{name}: pack must be 1, 2, 4 or 8, got {pack!r}")
    many = isinstance(dtype, (tuple, list))
    dtypes = [_plain(d) for d in (dtype if many else [dtype])]
    if not dtypes or not all(isinstance(d, tl.dtype) for d in dtypes):
        cg.err(node, f"{name}: dtype must be a tl dtype or a tuple of them")
    vals = [_plain(a) for a in (args if isinstance(args, (tuple, list)) else [args])]
    tiles: list[TValue] = []
    for a in vals:
        if isinstance(a, (bool, int, float)):
            a = cg.constant(a, literal_dtype(a))
        if not isinstance(a, TValue) or a.is_ptr:
            cg.err(node, f"{name}: every argument must be a number or a tile of numbers, got "
                   f"{cg.describe(a)}")
        tiles.append(a)
    outs, ins = _constraint_counts(constraints)
    if outs != len(dtypes) or ins != len(tiles):
        cg.err(node, f"{name}: the constraints '{constraints}' name {outs} output(s) and {ins} "
               f"input(s), but there are {len(dtypes)} result dtype(s) and {len(tiles)} "
               "argument(s)")
    shape: tuple[int, ...] = ()
    try:
        for t in tiles:
            shape = broadcast_shapes(shape, t.shape)
    except ValueError:
        cg.err(node, f"{name}: argument shapes {[list(t.shape) for t in tiles]} do not "
               "broadcast")
    if pack > 1:
        if not shape or shape[-1] % pack:
            cg.err(node, f"{name}: pack={pack} needs tiles whose last dimension is a multiple "
                   f"of {pack}")
        for t in [*(v.dtype for v in tiles), *dtypes]:
            if t.primitive_bitwidth * pack not in (16, 32, 64):
                cg.err(node, f"{name}: pack={pack} elements of {t.short} fill "
                       f"{t.primitive_bitwidth * pack} bits; a register takes 16, 32 or 64")
    tiles = [cg.broadcast_to(t, shape, node) if shape and t.shape != shape else t for t in tiles]
    results = el.inline_asm([t.handle for t in tiles], [mlir_type(d, shape) for d in dtypes],
                            asm, constraints, is_pure, pack, loc=cg.loc, ip=cg.ip)
    out = [TValue(r, d, shape) for r, d in zip(results, dtypes)]
    return tuple(out) if many else out[0]


__all__ = ["RULES"]

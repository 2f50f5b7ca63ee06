"""`tile-accelerate-dot`: choose the instruction family of every `tile.dot`.

Input: tile-level IR (before `tile-layout`), `tile.dot %a, %b, %acc` as the
frontend builds it.  Output: the same IR; every `tile.dot` carries
`tile.mma = "tcgen05" | "wgmma" | "mma_sync" | "mfma" | "wmma" | "fma"` (fp8 wgmma/tcgen05 dots,
and fp8 MFMA dots where the record has fp8 instructions (gfx950, OCP fp8),
also `tile.mma_fp8 = "e4m3" | "e5m2"`: `tile-expand-fp8` then leaves their
operands as raw bytes) and, where the choice was not the
target's best family, `tile.mma_reason` saying why (shown by `tilec ir`).
`tile-layout` gives the accumulator the layout of the chosen family
(`layouts.tcgen05_accumulator_layout`, `layouts.wgmma_accumulator_layout`,
`layouts.mma_accumulator_layout`,
`matrix_tiling.MatrixTiling.layout` for AMD's MFMA/WMMA);
`convert-tile-to-gpu` lowers the dot with the target hook of that family.

The families are data: `FAMILIES` lists them best first, each with the target
feature that provides it and a fit check on the operand/accumulator dtypes,
the tile shape and `num_warps`; the first family the target has and the dot
fits wins.  No chip name is read.

Nearest upstream analogue: Triton's `AccelerateMatmul` (TritonGPU), which picks
the MMA version and warp arrangement per dot.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from mlir import ir

from tilec.dialects import tile
from tilec.options import CompileOptions
from tilec.passes import pipeline_support
from tilec.passes.analysis import axis_info
from tilec.passes.analysis import matrix_tiling
from tilec.passes.analysis.layouts import (
    mma_accumulator_layout, tcgen05_accumulator_layout, wgmma_accumulator_layout,
)
from tilec.targets import Feature, MatrixInstr, Target

NAME = "tile-accelerate-dot"
# Accumulator registers per thread above which a wgmma tile would spill.
_MAX_ACC_PER_THREAD = 128


@dataclass(frozen=True)
class DotShape:
    m: int
    n: int
    k: int
    a: str       # operand element type, e.g. "f16"
    acc: str     # accumulator element type
    num_warps: int
    warp_size: int
    precision: str
    # Bytes per thread access the operand loads allow along each operand's
    # contiguous dimension (16 when not loaded from memory here).
    operand_access: int = 16
    # b is `tile.trans` of a loaded [N, K] tile (K-major in memory).
    b_kmajor: bool = False
    # The target's AMD matrix instructions (`Target.matrix_instrs`).
    instrs: tuple[MatrixInstr, ...] = ()


FP8_TYPES = {"f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}


def _wgmma_misfit(d: DotShape) -> str | None:
    if d.a in FP8_TYPES and d.acc == "f32":
        if not d.b_kmajor:
            return ("fp8 wgmma reads B K-major: give B as [N, K] and use b.T "
                    "(or load it transposed)")
        if d.k % 128:
            return f"fp8 operands need K a multiple of 128 (128-byte rows), not {d.k}"
    elif d.a not in ("f16", "bf16") or d.acc != "f32":
        return (f"wgmma here takes f16/bf16/fp8 operands with an f32 accumulator, not "
                f"{d.a} -> {d.acc}")
    if wgmma_accumulator_layout(d.m, d.n, d.k, d.warp_size, d.num_warps) is None:
        return (f"a {d.m}x{d.n}x{d.k} dot with num_warps={d.num_warps} does not fill whole "
                "warpgroups (num_warps a multiple of 4, M a multiple of 16 * num_warps)")
    if d.a not in FP8_TYPES and (d.k % 64 or d.n % 64):
        return f"the 128-byte swizzled operands need K and N multiples of 64 (K={d.k}, N={d.n})"
    if d.n > 256 and d.n % 256:
        return f"N={d.n} is not a whole number of 256-wide instructions"
    if d.operand_access < 8:
        return (f"the operand loads move {d.operand_access} bytes per access (pointers or "
                "strides not known to be 16-byte aligned): staging them element by element "
                "beside wgmma's accumulators spills")
    if d.m * d.n // (d.warp_size * d.num_warps) > _MAX_ACC_PER_THREAD:
        return (f"{d.m * d.n // (d.warp_size * d.num_warps)} accumulator registers per thread "
                f"would spill (at most {_MAX_ACC_PER_THREAD}): use more warps or a smaller tile")
    return None


def _tcgen05_misfit(d: DotShape) -> str | None:
    tf32 = d.a == "f32" and d.precision == "tf32"
    if (d.a not in ("f16", "bf16", *FP8_TYPES) and not tf32) or d.acc != "f32":
        return (f"tcgen05 here takes f16/bf16/fp8 operands (f32 with input_precision="
                f"'tf32') with an f32 accumulator, not {d.a} -> {d.acc}")
    if d.m != 128 or d.num_warps not in (4, 8):
        return (f"tcgen05 here computes M = 128 rows per program with 4 or 8 warps (one "
                f"TMEM lane per row), not M={d.m} with num_warps={d.num_warps}")
    row = 128 if d.a in FP8_TYPES else 32 if tf32 else 64     # elements per 128-byte row
    if d.k % row or (d.n % 16 if d.b_kmajor else d.n % row) or d.n > 256:
        return (f"the 128-byte swizzled operands need K a multiple of {row} and N a multiple "
                f"of {16 if d.b_kmajor else row} up to 256 (K={d.k}, N={d.n})")
    if tcgen05_accumulator_layout(d.m, d.n, d.k, d.warp_size, d.num_warps) is None:
        return f"a {d.m}x{d.n}x{d.k} dot does not fit tcgen05's 32x32b accumulator reads"
    if d.operand_access < 8:
        return (f"the operand loads move {d.operand_access} bytes per access (pointers or "
                "strides not known to be 16-byte aligned)")
    if d.m * d.n // (d.warp_size * d.num_warps) > _MAX_ACC_PER_THREAD:
        return (f"{d.m * d.n // (d.warp_size * d.num_warps)} accumulator registers per thread "
                f"in the epilogue would spill (at most {_MAX_ACC_PER_THREAD}): use 8 warps")
    return None


def _mma_sync_misfit(d: DotShape) -> str | None:
    # fp8 operands reach mma.sync widened to f16 (tile-expand-fp8).
    if d.a not in ("f16", "bf16", *FP8_TYPES) or d.acc != "f32":
        return f"mma.sync here takes f16/bf16 operands with an f32 accumulator, not {d.a} -> {d.acc}"
    if mma_accumulator_layout(d.m, d.n, d.k, d.warp_size, d.num_warps) is None:
        return (f"a {d.m}x{d.n}x{d.k} dot does not fit m16n8k16 with num_warps={d.num_warps} "
                "side by side along N (M, K multiples of 16, N of 8 * num_warps)")
    return None


def amd_fp8(d: DotShape, kind: str) -> bool:
    """Whether an fp8 dot fits one of the record's fp8 `kind` instructions
    (gfx950's OCP fp8 MFMA): its operands then stay fp8 bytes (`tile.mma_fp8`)."""
    return d.a in FP8_TYPES and matrix_tiling.choose_from(
        d.instrs, d.warp_size, kind, d.m, d.n, d.k, d.a, d.acc, d.num_warps) is not None


def _amd_misfit(kind: str) -> Callable[[DotShape], str | None]:
    """MFMA / WMMA: an instruction of the record's table takes the dtypes and
    the tile splits into whole instruction tiles per warp (`matrix_tiling`)."""
    def misfit(d: DotShape) -> str | None:
        if d.a in FP8_TYPES and not amd_fp8(d, kind):
            # fp8 operands reach the dot widened to f16 (tile-expand-fp8).
            d = replace(d, a="f16")
        have = sorted({f"{i.a} -> {i.acc}" for i in d.instrs if i.kind == kind})
        if f"{d.a} -> {d.acc}" not in have:
            return f"{kind} here takes {', '.join(have)}, not {d.a} -> {d.acc}"
        shapes = ", ".join(i.shape for i in d.instrs if i.kind == kind and i.a == d.a)
        tiling = matrix_tiling.choose_from(d.instrs, d.warp_size, kind, d.m, d.n, d.k, d.a,
                                           d.acc, d.num_warps)
        if tiling is None:
            return (f"a {d.m}x{d.n}x{d.k} dot does not split into whole {shapes} tiles over "
                    f"num_warps={d.num_warps} warps")
        return None
    return misfit


# Best first: (kind, feature that provides it, why the dot does not fit or None).
FAMILIES: tuple[tuple[str, Feature, Callable[[DotShape], str | None]], ...] = (
    ("tcgen05", Feature.TCGEN05, _tcgen05_misfit),
    ("wgmma", Feature.WGMMA, _wgmma_misfit),
    ("mma_sync", Feature.MMA_M16N8K16, _mma_sync_misfit),
    ("mfma", Feature.MFMA, _amd_misfit("mfma")),
    ("wmma", Feature.WMMA, _amd_misfit("wmma")),
)


def select(d: DotShape, target: Target) -> tuple[str, str | None]:
    """(kind, reason the better families were not taken, or None)."""
    reasons: list[str] = []
    d = replace(d, instrs=target.matrix_instrs)
    for kind, feature, misfit in FAMILIES:
        if not target.has(feature):
            continue
        why = misfit(d)
        if why is None:
            return kind, "; ".join(reasons) or None
        reasons.append(f"no {kind}: {why}")
    return "fma", "; ".join(reasons) or f"{target.name} has no matrix instructions tilec uses"


def _access_bytes(v: ir.Value, info: axis_info.AxisInfoMap) -> int:
    """How many bytes one access of the load producing `v` can move along the
    tile's last (contiguous) dimension: 16 when `v` is not a load here."""
    owner = v.owner
    if not (isinstance(owner, ir.OpView) and owner.operation.name == "tile.load"):
        return 16
    ptr = owner.operation.operands[0]
    if not isinstance(ptr.type, ir.RankedTensorType) or len(ptr.type.shape) != 2:
        return 16
    eb = axis_info.type_bytes(tile.pointee(ptr.type.element_type))
    pi = info.get(ptr)
    return min(16, pi.contiguity[1] * eb, max(eb, pi.divisibility[1]))


def _tma_copied(op: ir.Operation, loads: tuple[ir.Value, ir.Value],
                staged: list[ir.Operation]) -> bool:
    """Both operands are loads `tile-tma-pointers` / `tile-tma-descriptors`
    tagged as tensor-map blocks, beside the dot in the body of a loop
    `tile-pipeline` stages: the pipeliner copies such a pair with TMA whatever
    its per-thread access (a `% N` wrap or a ragged mask), so no operand is
    staged element by element."""
    parent = op.parent
    if parent is None or not any(parent == loop for loop in staged):
        return False
    for v in loads:
        owner = v.owner
        if not (isinstance(owner, ir.OpView) and owner.operation.name == "tile.load"
                and "tile.tma" in owner.operation.attributes
                and owner.operation.parent == parent):
            return False
    return True


def _shape_of(op: ir.Operation, num_warps: int, warp_size: int,
              info: axis_info.AxisInfoMap, staged: list[ir.Operation]) -> DotShape:
    a, b, res = op.operands[0].type, op.operands[1].type, op.results[0].type
    (m, k), n = tile.shape_of(a), tile.shape_of(b)[1]
    prec = str(ir.StringAttr(op.attributes["input_precision"]).value) \
        if "input_precision" in op.attributes else "ieee"
    b_src = op.operands[1].owner
    kmajor = isinstance(b_src, ir.OpView) and b_src.operation.name == "tile.trans"
    loads = (op.operands[0], b_src.operation.operands[0] if kmajor else op.operands[1])
    access = 16 if _tma_copied(op, loads, staged) else \
        min(_access_bytes(loads[0], info), _access_bytes(loads[1], info))
    return DotShape(m, n, k, str(tile.element_type(a)), str(tile.element_type(res)),
                    num_warps, warp_size, prec, access, kmajor)


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    dots: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "tile.dot":
            dots.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    infos: dict[ir.Operation, axis_info.AxisInfoMap] = {}
    staged = [loop for _, loop, _ in pipeline_support.staged_loops(module, options.num_stages)] \
        if target.has(Feature.TMA) else []
    with module.context:
        for op in dots:
            func = op
            while func.name != "func.func":
                func = func.parent
            if func not in infos:
                infos[func] = axis_info.analyze(func)
            why: str | None
            if len(tile.shape_of(op.operands[0].type)) != 2:
                kind, why = "fma", "batched (3-D) dots run on the vector units"
            else:
                shape = _shape_of(op, options.num_warps, target.warp_size, infos[func], staged)
                kind, why = select(shape, target)
            op.attributes["tile.mma"] = ir.StringAttr.get(kind)
            fp8 = FP8_TYPES.get(str(tile.element_type(op.operands[0].type)))
            if fp8 is not None and (kind in ("wgmma", "tcgen05") or kind in ("mfma", "wmma") and
                                    amd_fp8(replace(shape, instrs=target.matrix_instrs), kind)):
                op.attributes["tile.mma_fp8"] = ir.StringAttr.get(fp8)
            if why is not None:
                op.attributes["tile.mma_reason"] = ir.StringAttr.get(why)

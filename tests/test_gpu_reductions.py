"""Reductions, scans, atomics and barriers on GPUs: tile IR -> tile-layout ->
convert-tile-to-gpu (with the warp-sync lowering rules) -> PTX/ptxas and
AMDGCN/ld.lld, plus a pure-Python model of the reduction's index math."""
from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest
from mlir import ir

from tilec.dialects import tile
from tilec.dialects.tile import Blocked
from tilec.errors import CompilerBugError
from tilec.passes import gpu as convert_tile_to_gpu, tile_layout
from tilec.passes.analysis.layouts import Distribution, axis_span, replica_masks
from tilec.passes.gpu.reduce import check_shuffle
from tilec.options import CompileOptions
from tilec.targets import get_target

NV = ["sm80", "sm90", "sm100"]
AMD = ["gfx90a", "gfx942", "gfx950", "gfx1100"]

# ---------------------------------------------------------------- kernels

COMBINES = {
    "max_f32": "%r = arith.maxnumf %a, %b : f32\n  return %r : f32",
    "sum_f32": "%r = arith.addf %a, %b : f32\n  return %r : f32",
    "sum_i32": "%r = arith.addi %a, %b : i32\n  return %r : i32",
}


def combine(name: str) -> str:
    t = name.split("_")[1]
    return (f"func.func private @__tilec_{name}(%a: {t}, %b: {t}) -> {t} {{\n  "
            f"{COMBINES[name]}\n}}\n")


ARGMAX = '''func.func private @__tilec_argmax_f32(%av: f32, %ai: i32, %bv: f32, %bi: i32) -> (f32, i32) {
  %gt = arith.cmpf ogt, %bv, %av : f32
  %eq = arith.cmpf oeq, %bv, %av : f32
  %lt = arith.cmpi slt, %bi, %ai : i32
  %tie = arith.andi %eq, %lt : i1
  %take = arith.ori %gt, %tie : i1
  %v = arith.select %take, %bv, %av : f32
  %i = arith.select %take, %bi, %ai : i32
  return %v, %i : f32, i32
}
'''

HEAD = ('func.func @{name}(%x: !tile.ptr<{T}> {{tile.divisibility = 16 : i32}}, '
        '%o: !tile.ptr<{T}> {{tile.divisibility = 16 : i32}}, %stride: i32 '
        '{{tile.divisibility = 16 : i32}}) attributes {{tile.kernel}} {{\n')


def row_ptrs(N: int, T: str, base: str, tag: str) -> str:
    """%{tag}p: tensor<Nx!tile.ptr<T>> = base + pid * stride + range(N)."""
    P = f"tensor<{N}x!tile.ptr<{T}>>"
    return f'''  %{tag}pid = "tile.program_id"() {{axis = 0 : i32}} : () -> i32
  %{tag}row = arith.muli %{tag}pid, %stride : i32
  %{tag}r = "tile.range"() {{start = 0 : i32, end = {N} : i32}} : () -> tensor<{N}xi32>
  %{tag}rs = tensor.splat %{tag}row : tensor<{N}xi32>
  %{tag}off = arith.addi %{tag}rs, %{tag}r : tensor<{N}xi32>
  %{tag}b = tensor.splat %{base} : {P}
  %{tag}p = "tile.addptr"(%{tag}b, %{tag}off) : ({P}, tensor<{N}xi32>) -> {P}
'''


def softmax_ir(N: int = 1024) -> str:
    V = f"tensor<{N}xf32>"
    P = f"tensor<{N}x!tile.ptr<f32>>"
    return combine("max_f32") + combine("sum_f32") + HEAD.format(name="softmax", T="f32") + \
        row_ptrs(N, "f32", "x", "i") + f'''  %v = "tile.load"(%ip) {{operandSegmentSizes = array<i32: 1, 0, 0>}} : ({P}) -> {V} loc("softmax.py":5:8)
  %mx = "tile.reduce"(%v) {{operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>, axis = 0 : i32, combine = @__tilec_max_f32}} : ({V}) -> f32 loc("softmax.py":6:9)
  %mxs = tensor.splat %mx : {V}
  %d = arith.subf %v, %mxs : {V}
  %e = math.exp %d : {V}
  %s = "tile.reduce"(%e) {{operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>, axis = 0 : i32, combine = @__tilec_sum_f32}} : ({V}) -> f32 loc("softmax.py":8:8)
  %ss = tensor.splat %s : {V}
  %y = arith.divf %e, %ss : {V}
''' + row_ptrs(N, "f32", "o", "q") + f'''  "tile.store"(%qp, %y) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : ({P}, {V}) -> ()
  return
}}
'''


def rowsum_ir(N: int = 1024) -> str:
    V = f"tensor<{N}xf32>"
    P = f"tensor<{N}x!tile.ptr<f32>>"
    return combine("sum_f32") + HEAD.format(name="rowsum", T="f32") + row_ptrs(N, "f32", "x", "i") + f'''  %v = "tile.load"(%ip) {{operandSegmentSizes = array<i32: 1, 0, 0>}} : ({P}) -> {V}
  %s = "tile.reduce"(%v) {{operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>, axis = 0 : i32, combine = @__tilec_sum_f32}} : ({V}) -> f32
  %pid = "tile.program_id"() {{axis = 0 : i32}} : () -> i32
  %op = "tile.addptr"(%o, %pid) : (!tile.ptr<f32>, i32) -> !tile.ptr<f32>
  "tile.store"(%op, %s) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : (!tile.ptr<f32>, f32) -> ()
  return
}}
'''


def tile2d_ptrs(M: int, N: int, T: str, base: str, tag: str) -> str:
    P = f"tensor<{M}x{N}x!tile.ptr<{T}>>"
    return f'''  %{tag}rm = "tile.range"() {{start = 0 : i32, end = {M} : i32}} : () -> tensor<{M}xi32>
  %{tag}rn = "tile.range"() {{start = 0 : i32, end = {N} : i32}} : () -> tensor<{N}xi32>
  %{tag}r2 = "tile.expand_dims"(%{tag}rm) {{axis = 1 : i32}} : (tensor<{M}xi32>) -> tensor<{M}x1xi32>
  %{tag}st = tensor.splat %stride : tensor<{M}x1xi32>
  %{tag}rs = arith.muli %{tag}r2, %{tag}st : tensor<{M}x1xi32>
  %{tag}rsb = "tile.broadcast"(%{tag}rs) : (tensor<{M}x1xi32>) -> tensor<{M}x{N}xi32>
  %{tag}c2 = "tile.expand_dims"(%{tag}rn) {{axis = 0 : i32}} : (tensor<{N}xi32>) -> tensor<1x{N}xi32>
  %{tag}c2b = "tile.broadcast"(%{tag}c2) : (tensor<1x{N}xi32>) -> tensor<{M}x{N}xi32>
  %{tag}off = arith.addi %{tag}rsb, %{tag}c2b : tensor<{M}x{N}xi32>
  %{tag}b = tensor.splat %{base} : {P}
  %{tag}p = "tile.addptr"(%{tag}b, %{tag}off) : ({P}, tensor<{M}x{N}xi32>) -> {P}
'''


def reduce2d_ir(axis: int, M: int = 32, N: int = 64) -> str:
    K = N if axis == 0 else M
    V = f"tensor<{M}x{N}xf32>"
    return combine("sum_f32") + HEAD.format(name=f"colsum{axis}", T="f32") + \
        tile2d_ptrs(M, N, "f32", "x", "i") + f'''  %v = "tile.load"(%ip) {{operandSegmentSizes = array<i32: 1, 0, 0>}} : (tensor<{M}x{N}x!tile.ptr<f32>>) -> {V}
  %s = "tile.reduce"(%v) {{operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>, axis = {axis} : i32, combine = @__tilec_sum_f32}} : ({V}) -> tensor<{K}xf32>
  %k = "tile.range"() {{start = 0 : i32, end = {K} : i32}} : () -> tensor<{K}xi32>
  %ob = tensor.splat %o : tensor<{K}x!tile.ptr<f32>>
  %op = "tile.addptr"(%ob, %k) : (tensor<{K}x!tile.ptr<f32>>, tensor<{K}xi32>) -> tensor<{K}x!tile.ptr<f32>>
  "tile.store"(%op, %s) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : (tensor<{K}x!tile.ptr<f32>>, tensor<{K}xf32>) -> ()
  return
}}
'''


ARGMAX_I32 = ARGMAX.replace("argmax_f32", "argmax_i32").replace("f32", "i32").replace(
    "arith.cmpf ogt", "arith.cmpi sgt").replace("arith.cmpf oeq", "arith.cmpi eq")


def argmax_ir(N: int = 1024, T: str = "f32") -> str:
    """(value, index) argmax; with T = i32 both operands have one type, which
    the tile dialect's IRDL definition of tile.reduce accepts today."""
    V = f"tensor<{N}x{T}>"
    P = f"tensor<{N}x!tile.ptr<{T}>>"
    return (ARGMAX if T == "f32" else ARGMAX_I32) + HEAD.format(name="argmax", T=T).replace(
        f"%o: !tile.ptr<{T}>", "%o: !tile.ptr<i32>") + \
        row_ptrs(N, T, "x", "i") + f'''  %v = "tile.load"(%ip) {{operandSegmentSizes = array<i32: 1, 0, 0>}} : ({P}) -> {V}
  %mv, %mi = "tile.reduce"(%v, %ir) {{operandSegmentSizes = array<i32: 1, 1, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 0, 0>, axis = 0 : i32, combine = @__tilec_argmax_{T}}} : ({V}, tensor<{N}xi32>) -> ({T}, i32)
  %op = "tile.addptr"(%o, %ipid) : (!tile.ptr<i32>, i32) -> !tile.ptr<i32>
  "tile.store"(%op, %mi) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : (!tile.ptr<i32>, i32) -> ()
  return
}}
'''


def cumsum_ir(N: int = 1024, reverse: bool = False) -> str:
    V = f"tensor<{N}xf32>"
    P = f"tensor<{N}x!tile.ptr<f32>>"
    rev = ", reverse" if reverse else ""
    return combine("sum_f32") + HEAD.format(name="cumsum", T="f32") + row_ptrs(N, "f32", "x", "i") + \
        f'''  %v = "tile.load"(%ip) {{operandSegmentSizes = array<i32: 1, 0, 0>}} : ({P}) -> {V}
  %c = "tile.scan"(%v) {{operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>, axis = 0 : i32, combine = @__tilec_sum_f32{rev}}} : ({V}) -> {V}
''' + row_ptrs(N, "f32", "o", "q") + f'''  "tile.store"(%qp, %c) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : ({P}, {V}) -> ()
  return
}}
'''


def cumsum2d_ir(M: int = 32, N: int = 64) -> str:
    V = f"tensor<{M}x{N}xf32>"
    P = f"tensor<{M}x{N}x!tile.ptr<f32>>"
    return combine("sum_f32") + HEAD.format(name="cumsum2d", T="f32") + \
        tile2d_ptrs(M, N, "f32", "x", "i") + f'''  %v = "tile.load"(%ip) {{operandSegmentSizes = array<i32: 1, 0, 0>}} : ({P}) -> {V}
  %c = "tile.scan"(%v) {{operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>, axis = 1 : i32, combine = @__tilec_sum_f32}} : ({V}) -> {V}
''' + tile2d_ptrs(M, N, "f32", "o", "q") + f'''  "tile.store"(%qp, %c) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : ({P}, {V}) -> ()
  return
}}
'''


def histogram_ir(T: str, N: int = 1024) -> str:
    """hist[bins[i]] += w (i32 add, or f32 fadd of 1.0), masked by i < n."""
    kind, one = ("add", "1 : i32") if T == "i32" else ("fadd", "1.0 : f32")
    P = f"tensor<{N}x!tile.ptr<i32>>"
    H = f"tensor<{N}x!tile.ptr<{T}>>"
    return (f'func.func @hist(%x: !tile.ptr<i32> {{tile.divisibility = 16 : i32}}, %o: !tile.ptr<{T}> '
            '{tile.divisibility = 16 : i32}, %stride: i32 {tile.divisibility = 16 : i32}) '
            'attributes {tile.kernel} {\n') + row_ptrs(N, "i32", "x", "i") + f'''  %n = tensor.splat %stride : tensor<{N}xi32>
  %m = arith.cmpi slt, %ioff, %n : tensor<{N}xi32>
  %bins = "tile.load"(%ip, %m) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : ({P}, tensor<{N}xi1>) -> tensor<{N}xi32>
  %hb = tensor.splat %o : {H}
  %hp = "tile.addptr"(%hb, %bins) : ({H}, tensor<{N}xi32>) -> {H}
  %w = arith.constant dense<{one.split(" : ")[0]}> : tensor<{N}x{T}>
  %old = "tile.atomic_rmw"(%hp, %w, %m) {{kind = "{kind}", operandSegmentSizes = array<i32: 1, 1, 1>}} : ({H}, tensor<{N}x{T}>, tensor<{N}xi1>) -> tensor<{N}x{T}> loc("hist.py":9:4)
  return
}}
'''


def cas_ir() -> str:
    """A spin-lock style scalar CAS plus a tile CAS, barrier and warp_sync."""
    P = "tensor<128x!tile.ptr<i32>>"
    return '''func.func @cas(%x: !tile.ptr<i32> {tile.divisibility = 16 : i32}, %o: !tile.ptr<i32> {tile.divisibility = 16 : i32}, %stride: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %old = "tile.atomic_cas"(%o, %c0, %c1) : (!tile.ptr<i32>, i32, i32) -> i32
  "tile.barrier"() : () -> ()
  "tile.warp_sync"() : () -> ()
''' + row_ptrs(128, "i32", "x", "i") + f'''  %z = arith.constant dense<0> : tensor<128xi32>
  %t = tensor.splat %old : tensor<128xi32>
  %prev = "tile.atomic_cas"(%ip, %z, %t) : ({P}, tensor<128xi32>, tensor<128xi32>) -> tensor<128xi32>
  "tile.store"(%ip, %prev) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : ({P}, tensor<128xi32>) -> ()
  return
}}
'''


KERNELS = {
    "softmax": softmax_ir(), "rowsum": rowsum_ir(), "reduce_axis0": reduce2d_ir(0),
    "reduce_axis1": reduce2d_ir(1), "argmax": argmax_ir(), "argmax_i32": argmax_ir(T="i32"), "cumsum": cumsum_ir(),
    "cumsum_reverse": cumsum_ir(reverse=True), "cumsum2d": cumsum2d_ir(),
    "hist_i32": histogram_ir("i32"), "hist_f32": histogram_ir("f32"), "cas": cas_ir(),
}


# ---------------------------------------------------------------- helpers

def lower(text: str, target: str, num_warps: int = 4, stop_after_layout: bool = False) -> ir.Module:
    with tile.new_context():
        module = ir.Module.parse(text)
        tile_layout.run(module, get_target(target), CompileOptions(num_warps=num_warps))
        assert module.operation.verify()
        if not stop_after_layout:
            convert_tile_to_gpu.run(module, get_target(target), CompileOptions(num_warps=num_warps))
            assert module.operation.verify()
    return module


def compile_for(text: str, target: str, num_warps: int = 4) -> dict[str, Any]:
    from tilec.targets.amd.backend import compile_amd
    from tilec.targets.nvidia.backend import compile_nvidia
    t = get_target(target)
    module = lower(text, target, num_warps)
    with module.context:
        return (compile_nvidia if t.vendor == "nvidia" else compile_amd)(module, t)


def ptx_body(ptx: str) -> str:
    return ptx[ptx.index(".entry"):]


# ---------------------------------------------------------------- index math (no GPU)

def simulate_reduce(d: Distribution, axis: int, warp_size: int, num_warps: int) -> None:
    """Model the in-thread fold, the butterfly and the cross-warp step over the
    thread -> element map: every thread must end with each element of its
    line exactly once."""
    threads = warp_size * num_warps
    owned = [d.thread_coords(t, warp_size) for t in range(threads)]
    line_of = lambda c: tuple(x for i, x in enumerate(c) if i != axis)   # noqa: E731
    # (a) per thread and line: a multiset of the elements folded in.
    acc: list[dict[tuple[int, ...], Counter[tuple[int, ...]]]] = []
    for t in range(threads):
        lines: dict[tuple[int, ...], Counter[tuple[int, ...]]] = {}
        for c in owned[t].values():
            lines.setdefault(line_of(c), Counter())[c] += 1
        acc.append(lines)
    span = axis_span(d, axis)
    for off in span.xor_offsets():
        assert off < warp_size
        acc = [{k: v + acc[t ^ off][k] for k, v in acc[t].items()} for t in range(threads)]
    if span.warp_bits:
        lm, wm = replica_masks(d)
        lm |= ((1 << span.lane_bits) - 1) << span.lane_shift
        smem: dict[tuple[tuple[int, ...], int], Counter[tuple[int, ...]]] = {}
        for t in range(threads):
            lane, warp = t % warp_size, t // warp_size
            if lane & lm or warp & wm:
                continue
            w = (warp >> span.warp_shift) % span.warp_positions
            for k, v in acc[t].items():
                assert (k, w) not in smem or smem[k, w] == v     # one value per slot
                smem[k, w] = v
        acc = [{k: sum((smem[k, w] for w in range(span.warp_positions)), Counter())
                for k in acc[t]} for t in range(threads)]
    full: dict[tuple[int, ...], Counter[tuple[int, ...]]] = {}   # each line's elements, once
    for c in _all_coords(d):
        full.setdefault(line_of(c), Counter())[c] += 1
    for t in range(threads):
        for k, got in acc[t].items():
            assert got == full.get(k, Counter()), (t, k)


def _all_coords(d: Distribution) -> list[tuple[int, ...]]:
    import itertools
    return list(itertools.product(*(range(s) for s in d.shape)))


@pytest.mark.parametrize("target", ["sm90", "gfx942", "gfx1100"])
@pytest.mark.parametrize("shape,axis", [((1024,), 0), ((64,), 0), ((32,), 0), ((32, 64), 0),
                                        ((32, 64), 1), ((8, 16), 0), ((8, 16), 1), ((128, 4), 1)])
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_reduce_index_math(target: str, shape: tuple[int, ...], axis: int, num_warps: int) -> None:
    t = get_target(target)
    for order in ([tuple(reversed(range(len(shape))))] + ([(0, 1)] if len(shape) == 2 else [])):
        b = tile_layout.make_blocked(shape, order, 4, t.warp_size, num_warps)
        simulate_reduce(Distribution.of(b, shape), axis, t.warp_size, num_warps)


def test_butterfly_offsets() -> None:
    d32 = Distribution.of(Blocked((4,), (32,), (4,), (0,)), (1024,))
    d64 = Distribution.of(Blocked((4,), (64,), (4,), (0,)), (1024,))
    assert axis_span(d32, 0).xor_offsets() == [16, 8, 4, 2, 1]
    assert axis_span(d64, 0).xor_offsets() == [32, 16, 8, 4, 2, 1]
    with pytest.raises(CompilerBugError):
        check_shuffle(get_target("gfx1100"), 16, 64)       # would abort LLVM
    with pytest.raises(CompilerBugError):
        check_shuffle(get_target("gfx1100"), 32, 32)


# ---------------------------------------------------------------- tiled and per-thread IR

def test_reduce_layouts() -> None:
    text = str(lower(reduce2d_ir(1), "sm90", stop_after_layout=True))
    parent = re.search(r"tensor<32x64xf32, (#tile\.blocked<[^>]*>[^>]*>[^>]*>[^>]*>)>", text)
    assert parent, text
    assert f"tensor<32xf32, #tile.slice<1 : i32, {parent.group(1)}>>" in text
    text = str(lower(softmax_ir(), "sm90", stop_after_layout=True))
    assert '"tile.reduce"' in text and "-> f32" in text


@pytest.mark.parametrize("target,offsets", [("sm90", [16, 8, 4, 2, 1]), ("gfx942", [32, 16, 8, 4, 2, 1]),
                                            ("gfx1100", [16, 8, 4, 2, 1])])
def test_rowsum_gpu_ir(target: str, offsets: list[int]) -> None:
    text = str(lower(rowsum_ir(), target))
    ws = get_target(target).warp_size
    shuffles = re.findall(r"gpu.shuffle\s+xor [^,]+, %c(\d+)_i32\S*, %c(\d+)_i32", text)
    assert [int(o) for o, _ in shuffles] == offsets, text
    assert all(int(w) == ws for _, w in shuffles)
    assert text.count("gpu.barrier") == 1 and "func.func" not in text


# ---------------------------------------------------------------- NVIDIA

@pytest.mark.parametrize("target", NV)
@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_nvidia(target: str, kernel: str) -> None:
    out = compile_for(KERNELS[kernel], target)
    ptx, meta = out["ptx"], out["metadata"]
    assert out["cubin"], meta
    assert meta["spill_stores"] == 0 and meta["spill_loads"] == 0, meta["ptxas_log"]
    body = ptx_body(ptx)
    if kernel in ("softmax", "rowsum", "argmax", "argmax_i32", "reduce_axis0", "reduce_axis1"):
        assert "shfl.sync.bfly.b32" in body
    if kernel == "argmax_i32":
        assert body.count("shfl.sync.bfly.b32") == 10        # value and index, 5 levels
    if kernel == "rowsum":
        assert body.count("shfl.sync.bfly.b32") == 5
    if kernel.startswith("cumsum"):
        assert "shfl.sync.up.b32" in body or "shfl.sync.down.b32" in body
    if kernel == "hist_i32":
        assert re.search(r"atom\.[a-z_.]*add\.u32|red\.[a-z_.]*add\.u32|atom\.[a-z_.]*add\.s32", body), body
    if kernel == "hist_f32":
        assert re.search(r"(atom|red)\.[a-z_.]*add\.f32", body), body
    if kernel == "cas":
        assert "atom." in body and "cas.b32" in body and "bar.warp.sync" in body
        assert "bar.sync" in body or "barrier.sync" in body


# ---------------------------------------------------------------- AMD

_SHUFFLE = re.compile(r"ds_swizzle_b32|ds_bpermute_b32|_dpp|row_|quad_perm|v_permlane")


@pytest.mark.parametrize("target", AMD)
@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_amd(target: str, kernel: str) -> None:
    out = compile_for(KERNELS[kernel], target)
    asm, meta = out["amdgcn"], out["metadata"]
    assert out["hsaco"], meta
    assert meta["wavefront_size"] == get_target(target).warp_size
    assert meta["vgpr_spill_count"] == 0 and meta["sgpr_spill_count"] == 0
    if kernel in ("softmax", "rowsum", "argmax", "argmax_i32", "reduce_axis0", "reduce_axis1") or \
            kernel.startswith("cumsum"):
        assert _SHUFFLE.search(asm), asm
    if kernel.startswith("hist") or kernel == "cas":
        assert "global_atomic_" in asm or "flat_atomic_" in asm, asm
    if kernel == "cas":
        assert "s_barrier" in asm


def test_gfx1100_is_wave32_sequence() -> None:
    ir32 = str(lower(rowsum_ir(), "gfx1100"))
    ir64 = str(lower(rowsum_ir(), "gfx942"))
    count = lambda text: len(re.findall(r"gpu.shuffle\s+xor", text))   # noqa: E731
    assert count(ir32) == 5 and count(ir64) == 6


def simulate_scan(d: Distribution, axis: int, warp_size: int, num_warps: int, reverse: bool) -> None:
    """Model the scan lowering with sequence concatenation as the combine (it is
    associative but not commutative, so order mistakes show): every element
    must end with exactly the elements before it along its line, in order."""
    threads = warp_size * num_warps
    owned = [d.thread_coords(t, warp_size) for t in range(threads)]
    span = axis_span(d, axis)
    npos, W = span.lane_positions, span.warp_positions
    ept, reps = d.ept[axis], d.reps[axis]
    lm, wm = replica_masks(d)
    Seq = tuple[tuple[int, ...], ...]

    def lines(t: int) -> dict[tuple[int, ...], list[tuple[int, ...]]]:
        out: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
        for local in sorted(owned[t]):
            out.setdefault(tuple(0 if i == axis else c for i, c in enumerate(local)), []).append(local)
        return out

    lpos = [((t % warp_size) >> span.lane_shift) % npos for t in range(threads)]
    wpos = [((t // warp_size) >> span.warp_shift) % W for t in range(threads)]
    runs: list[dict[Any, list[tuple[tuple[int, ...], Seq]]]] = [{} for _ in range(threads)]
    incl: list[dict[Any, Seq]] = [{} for _ in range(threads)]
    for t in range(threads):
        for key, line in lines(t).items():
            for r in range(reps):
                seg = line[r * ept:(r + 1) * ept][::-1 if reverse else 1]
                cur: Seq = ()
                runs[t][key, r] = []
                for local in seg:
                    cur = cur + (owned[t][local],)
                    runs[t][key, r].append((local, cur))
                incl[t][key, r] = cur
    sgn = 1 if reverse else -1        # shuffle down (reverse) reads lane + off
    for k in range(span.lane_bits):
        off = (1 << k) << span.lane_shift
        new = []
        for t in range(threads):
            ok = lpos[t] < npos - (1 << k) if reverse else lpos[t] >= 1 << k
            src = t + sgn * off
            new.append({kr: (incl[src][kr] + v if ok else v) for kr, v in incl[t].items()})
        incl = new
    line_pos = lambda t, key: tuple(c for i, c in enumerate(owned[t][key]) if i != axis)  # noqa: E731
    smem: dict[Any, Seq] = {}
    last = 0 if reverse else npos - 1
    for t in range(threads):
        lane, warp = t % warp_size, t // warp_size
        if not (lane & lm or warp & wm) and lpos[t] == last:
            for (key, r), v in incl[t].items():
                smem[line_pos(t, key), r, wpos[t]] = v
    # Each line's elements in scan order (the order `want` below sorts them in), once.
    in_order: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
    for e in _all_coords(d):
        in_order.setdefault(line_pos_c(e, axis), []).append(e)
    for ln in in_order.values():
        ln.sort(key=lambda e: -e[axis] if reverse else e[axis])
    for t in range(threads):
        for key, line in lines(t).items():
            rep_carry: Seq = ()
            for r in (reversed(range(reps)) if reverse else range(reps)):
                order = list(reversed(range(W))) if reverse else list(range(W))
                warp_carry = sum((smem[line_pos(t, key), r, j] for j in order
                                  if (j > wpos[t] if reverse else j < wpos[t])), ())
                has_lane = lpos[t] != (npos - 1 if reverse else 0)
                lane_carry = incl[t + sgn * (1 << span.lane_shift)][key, r] if has_lane else ()
                for local, x in runs[t][key, r]:
                    got = rep_carry + warp_carry + lane_carry + x
                    c = owned[t][local]
                    want = tuple(e for e in in_order[line_pos_c(c, axis)]
                                 if (e[axis] >= c[axis] if reverse else e[axis] <= c[axis]))
                    assert got == want, (t, local, got, want)
                rep_carry = rep_carry + sum((smem[line_pos(t, key), r, j] for j in order), ())


def line_pos_c(c: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return tuple(x for i, x in enumerate(c) if i != axis)


@pytest.mark.parametrize("target", ["sm90", "gfx942"])
@pytest.mark.parametrize("shape,axis", [((1024,), 0), ((64,), 0), ((32, 64), 1), ((32, 64), 0),
                                        ((8, 16), 1)])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_index_math(target: str, shape: tuple[int, ...], axis: int, reverse: bool) -> None:
    t = get_target(target)
    order = tuple(reversed(range(len(shape))))
    b = tile_layout.make_blocked(shape, order, 4, t.warp_size, 4)
    simulate_scan(Distribution.of(b, shape), axis, t.warp_size, 4, reverse)

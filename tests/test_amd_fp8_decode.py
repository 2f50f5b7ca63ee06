"""targets/amd/fp8_decode.py: the f16 decoding of fp8 bytes after the LDS
reads (gfx942's OCP fp8 dots), checked on every code against torch's fp8 ->
f16 casts, both as emitted MLIR (folded by canonicalize) and as the integer
model."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from mlir import ir, passmanager
from mlir.dialects import arith, func, vector

from tilec.errors import CompilerBugError
from tilec.passes.tile_expand_fp8 import FORMATS, Fp8Format
from tilec.targets.amd.fp8_decode import decode_f16, decode_value

TORCH = {"f8E4M3FN": torch.float8_e4m3fn, "f8E5M2": torch.float8_e5m2}


def _run(fmt: Fp8Format) -> np.ndarray:
    """The f16 bits decode_f16's code gives the codes 0..255, run on the host
    (the CPU path's lowering and MLIR's ExecutionEngine)."""
    import ctypes

    from mlir import execution_engine, runtime
    with ir.Context(), ir.Location.unknown():
        m = ir.Module.create()
        i8, i32 = ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(32)
        src_t, dst_t = ir.MemRefType.get([256], i8), ir.MemRefType.get([128], i32)
        with ir.InsertionPoint(m.body):
            f = func.FuncOp("decode", ir.FunctionType.get([src_t, dst_t], []))
            f.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
            with ir.InsertionPoint(f.add_entry_block()):
                src, dst = f.arguments
                zero = arith.constant(ir.IndexType.get(), 0)
                v = vector.load(ir.VectorType.get([256], i8), src, [zero])
                out = vector.bitcast(ir.VectorType.get([128], i32), decode_f16(v, fmt))
                vector.store(out, dst, [zero])
                func.ReturnOp([])
        passmanager.PassManager.parse(
            "builtin.module(convert-vector-to-scf,convert-scf-to-cf,convert-vector-to-llvm,"
            "convert-arith-to-llvm,expand-strided-metadata,finalize-memref-to-llvm,"
            "convert-func-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts)"
        ).run(m.operation)
        engine = execution_engine.ExecutionEngine(m, opt_level=2)
        codes = np.arange(256, dtype=np.uint8).view(np.int8)
        res = np.zeros(128, dtype=np.int32)
        args = [ctypes.pointer(ctypes.pointer(runtime.get_ranked_memref_descriptor(a)))
                for a in (codes, res)]
        engine.invoke("decode", *args)
    return res.view(np.uint16)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_decode_matches_torch_on_every_code(name: str) -> None:
    fmt = FORMATS[name]
    ref = torch.arange(256, dtype=torch.uint8).view(TORCH[name]).to(torch.float16)
    ref_bits = ref.view(torch.int16).numpy().view(np.uint16)
    emitted = _run(fmt)
    model = np.array([decode_value(c, fmt) for c in range(256)], dtype=np.uint16)
    for code in range(256):
        want = float(ref[code])
        for bits in (int(emitted[code]), int(model[code])):
            got = float(np.uint16(bits).view(np.float16))
            if math.isnan(want):        # NaN payloads may differ
                assert math.isnan(got), (name, code, hex(bits))
            else:
                assert bits == ref_bits[code], (name, code, hex(bits), hex(ref_bits[code]))


def test_formats_without_an_exact_f16_decoding_are_refused() -> None:
    wide = Fp8Format("f8E5M2_bias16", 2, 16, 0x7C, True)
    with pytest.raises(CompilerBugError):
        decode_value(0, wide)

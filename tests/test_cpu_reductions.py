"""End-to-end CPU tests of tile.reduce / scan / atomics / reshape / trans.

Hand-written tile IR (what the frontend emits) goes through tile-verify,
convert-tile-to-cpu, the LLVM lowering and host code generation; the shared
object is launched over a grid on the runtime's thread pool and compared with
NumPy.
"""
from __future__ import annotations

import itertools
import math
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pytest

from mlir import ir

from tilec import language as tl
from tilec.dialects import tile
from tilec.passes import cpu as convert_tile_to_cpu, tile_verify
from tilec.runtime.cpu import CpuKernel
from tilec.options import CompileOptions
from tilec.targets import get_target
from tilec.targets.cpu import backend as cpu

_counter = itertools.count()
COMPILE_TIMES: dict[str, float] = {}

F32P = tl.pointer_type(tl.float32)
F16P = tl.pointer_type(tl.float16)
I32P = tl.pointer_type(tl.int32)

NP_OF = {"f32": np.float32, "f16": np.float16, "i32": np.int32}


def lower_text(src: str) -> str:
    """The module after convert-tile-to-cpu (for checks on the lowering's shape)."""
    with tile.new_context(), ir.Location.unknown():
        m = ir.Module.parse(src)
        tile_verify.run(m, get_target("cpu"), CompileOptions())
        convert_tile_to_cpu.run(m, get_target("cpu"), CompileOptions())
        assert m.operation.verify()
        return str(m)


def build(src: str, name: str, arg_types: Sequence[Any], tmp_path: Path) -> CpuKernel:
    t0 = time.perf_counter()
    with tile.new_context(), ir.Location.unknown():
        m = ir.Module.parse(src)
        tile_verify.run(m, get_target("cpu"), CompileOptions())
        convert_tile_to_cpu.run(m, get_target("cpu"), CompileOptions())
        cpu.lower_to_llvm_dialect(m)
        llir = cpu.translate(m)
    out = cpu.codegen(llir)
    COMPILE_TIMES[name] = time.perf_counter() - t0
    so = tmp_path / f"{name}_{next(_counter)}.so"
    so.write_bytes(out["so"])  # type: ignore[arg-type]
    return CpuKernel(str(so), name, arg_types)


def ptr(a: np.ndarray) -> int:
    assert a.flags.c_contiguous
    return int(a.ctypes.data)


# ---------------------------------------------------------------- IR snippets

def combine(name: str, t: str, op: str) -> str:
    if op == "first":  # associative, not commutative: keeps the running value
        return f"""
func.func private @{name}(%a: {t}, %b: {t}) -> {t} {{
  return %a : {t}
}}"""
    return f"""
func.func private @{name}(%a: {t}, %b: {t}) -> {t} {{
  %r = {op} %a, %b : {t}
  return %r : {t}
}}"""


def argcombine(name: str, vt: str, it: str, pred: str) -> str:
    """(value, index) combine: take the new pair if its value is better, or equal
    with a smaller index (NumPy's first-occurrence rule)."""
    vcmp = "arith.cmpf" if vt.startswith("f") else "arith.cmpi"
    icmp = "arith.cmpf olt" if it.startswith("f") else "arith.cmpi slt"
    better = {"max": "ogt", "min": "olt"}[pred] if vt.startswith("f") else \
        {"max": "sgt", "min": "slt"}[pred]
    eq = "oeq" if vt.startswith("f") else "eq"
    return f"""
func.func private @{name}(%v0: {vt}, %i0: {it}, %v1: {vt}, %i1: {it}) -> ({vt}, {it}) {{
  %gt = {vcmp} {better}, %v1, %v0 : {vt}
  %eq = {vcmp} {eq}, %v1, %v0 : {vt}
  %lt = {icmp}, %i1, %i0 : {it}
  %tie = arith.andi %eq, %lt : i1
  %take = arith.ori %gt, %tie : i1
  %v = arith.select %take, %v1, %v0 : {vt}
  %i = arith.select %take, %i1, %i0 : {it}
  return %v, %i : {vt}, {it}
}}"""


def offsets_1d(n: int, per_program: int | None = None, p: str = "") -> str:
    """%{p}offs : tensor<nxi32> = pid * per_program + range(n)."""
    per = n if per_program is None else per_program
    return f"""
  %{p}pid = "tile.program_id"() {{axis = 0 : i32}} : () -> i32
  %{p}cper = arith.constant {per} : i32
  %{p}base = arith.muli %{p}pid, %{p}cper : i32
  %{p}r = "tile.range"() {{end = {n} : i32, start = 0 : i32}} : () -> tensor<{n}xi32>
  %{p}bs = tensor.splat %{p}base : tensor<{n}xi32>
  %{p}offs = arith.addi %{p}bs, %{p}r : tensor<{n}xi32>"""


def offsets_2d(r: int, c: int, p: str = "") -> str:
    """%{p}offs : tensor<rxcxi32> = pid*r*c + i*c + j."""
    return f"""
  %{p}pid = "tile.program_id"() {{axis = 0 : i32}} : () -> i32
  %{p}cper = arith.constant {r * c} : i32
  %{p}base = arith.muli %{p}pid, %{p}cper : i32
  %{p}ri = "tile.range"() {{end = {r} : i32, start = 0 : i32}} : () -> tensor<{r}xi32>
  %{p}rj = "tile.range"() {{end = {c} : i32, start = 0 : i32}} : () -> tensor<{c}xi32>
  %{p}ei = "tile.expand_dims"(%{p}ri) {{axis = 1 : i32}} : (tensor<{r}xi32>) -> tensor<{r}x1xi32>
  %{p}ej = "tile.expand_dims"(%{p}rj) {{axis = 0 : i32}} : (tensor<{c}xi32>) -> tensor<1x{c}xi32>
  %{p}cc = arith.constant dense<{c}> : tensor<{r}x1xi32>
  %{p}eis = arith.muli %{p}ei, %{p}cc : tensor<{r}x1xi32>
  %{p}bi = "tile.broadcast"(%{p}eis) : (tensor<{r}x1xi32>) -> tensor<{r}x{c}xi32>
  %{p}bj = "tile.broadcast"(%{p}ej) : (tensor<1x{c}xi32>) -> tensor<{r}x{c}xi32>
  %{p}o2 = arith.addi %{p}bi, %{p}bj : tensor<{r}x{c}xi32>
  %{p}bs = tensor.splat %{p}base : tensor<{r}x{c}xi32>
  %{p}offs = arith.addi %{p}bs, %{p}o2 : tensor<{r}x{c}xi32>"""


def ptrs(dst: str, base: str, offs: str, shape: str, t: str) -> str:
    return f"""
  %{dst}_s = tensor.splat %{base} : tensor<{shape}x!tile.ptr<{t}>>
  %{dst} = "tile.addptr"(%{dst}_s, %{offs}) : (tensor<{shape}x!tile.ptr<{t}>>, tensor<{shape}xi32>) -> tensor<{shape}x!tile.ptr<{t}>>"""


def load(dst: str, p: str, shape: str, t: str) -> str:
    return (f'\n  %{dst} = "tile.load"(%{p}) {{operandSegmentSizes = array<i32: 1, 0, 0>}} : '
            f"(tensor<{shape}x!tile.ptr<{t}>>) -> tensor<{shape}x{t}>")


def store(p: str, v: str, shape: str, t: str) -> str:
    return (f'\n  "tile.store"(%{p}, %{v}) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : '
            f"(tensor<{shape}x!tile.ptr<{t}>>, tensor<{shape}x{t}>) -> ()")


def store_scalar(out: str, index: str, v: str, t: str) -> str:
    return f"""
  %sp_{v} = "tile.addptr"(%{out}, %{index}) : (!tile.ptr<{t}>, i32) -> !tile.ptr<{t}>
  "tile.store"(%sp_{v}, %{v}) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : (!tile.ptr<{t}>, {t}) -> ()"""


def kernel(name: str, args: str, body: str, extra: str = "") -> str:
    return f"""{extra}
func.func @{name}({args}) attributes {{tile.kernel}} {{{body}
  return
}}"""


def arg(name: str, t: str) -> str:
    return f"%{name}: !tile.ptr<{t}> {{tile.divisibility = 16 : i32}}"


# ---------------------------------------------------------------- softmax

SOFTMAX_W = 1024


def softmax_src(w: int = SOFTMAX_W) -> str:
    body = f"""
  %pid = "tile.program_id"() {{axis = 0 : i32}} : () -> i32
  %rowoff = arith.muli %pid, %n : i32
  %r = "tile.range"() {{end = {w} : i32, start = 0 : i32}} : () -> tensor<{w}xi32>
  %ns = tensor.splat %n : tensor<{w}xi32>
  %mask = arith.cmpi slt, %r, %ns : tensor<{w}xi32>
  %ro = tensor.splat %rowoff : tensor<{w}xi32>
  %offs = arith.addi %ro, %r : tensor<{w}xi32>""" + ptrs("xp", "x", "offs", f"{w}", "f32") + f"""
  %ninf = arith.constant dense<0xFF800000> : tensor<{w}xf32>
  %v = "tile.load"(%xp, %mask, %ninf) {{operandSegmentSizes = array<i32: 1, 1, 1>}} : (tensor<{w}x!tile.ptr<f32>>, tensor<{w}xi1>, tensor<{w}xf32>) -> tensor<{w}xf32>
  %mx = "tile.reduce"(%v) {{operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>, axis = 0 : i32, combine = @__tilec_max_f32}} : (tensor<{w}xf32>) -> f32
  %mxs = tensor.splat %mx : tensor<{w}xf32>
  %d = arith.subf %v, %mxs : tensor<{w}xf32>
  %e = math.exp %d : tensor<{w}xf32>
  %s = "tile.reduce"(%e) {{operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>, axis = 0 : i32, combine = @__tilec_sum_f32}} : (tensor<{w}xf32>) -> f32
  %one = arith.constant 1.0 : f32
  %inv = arith.divf %one, %s : f32
  %invs = tensor.splat %inv : tensor<{w}xf32>
  %res = arith.mulf %e, %invs : tensor<{w}xf32>""" + ptrs("yp", "y", "offs", f"{w}", "f32") + f"""
  "tile.store"(%yp, %res, %mask) {{operandSegmentSizes = array<i32: 1, 1, 1>}} : (tensor<{w}x!tile.ptr<f32>>, tensor<{w}xf32>, tensor<{w}xi1>) -> ()"""
    extra = combine("__tilec_max_f32", "f32", "arith.maxnumf") + \
        combine("__tilec_sum_f32", "f32", "arith.addf")
    return kernel("softmax", f"{arg('y', 'f32')}, {arg('x', 'f32')}, %n: i32", body, extra)


def test_softmax_rows(tmp_path: Path) -> None:
    k = build(softmax_src(), "softmax", [F32P, F32P, tl.int32], tmp_path)
    rng = np.random.default_rng(0)
    for rows, n in [(1, 1024), (7, 781), (37, 1000), (5, 3)]:
        x = (rng.standard_normal((rows, n)) * 4).astype(np.float32)
        y = np.full((rows, n), np.nan, dtype=np.float32)
        k.launch((rows, 1, 1), [ptr(y), ptr(x), n])
        e = np.exp(x - x.max(axis=1, keepdims=True))
        ref = e / e.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-7)
    print(f"softmax 1024-wide compile: {COMPILE_TIMES['softmax'] * 1000:.0f} ms")


# ---------------------------------------------------------------- 1-D reductions

REDUCE_OPS: dict[tuple[str, str], tuple[str, Callable[..., Any]]] = {
    ("f32", "sum"): ("arith.addf", np.sum), ("f32", "max"): ("arith.maxnumf", np.max),
    ("f32", "min"): ("arith.minnumf", np.min), ("f16", "sum"): ("arith.addf", np.sum),
    ("f16", "max"): ("arith.maxnumf", np.max), ("f16", "min"): ("arith.minnumf", np.min),
    ("i32", "sum"): ("arith.addi", np.sum), ("i32", "max"): ("arith.maxsi", np.max),
    ("i32", "min"): ("arith.minsi", np.min),
}


def reduce_1d_src(t: str, how: str, n: int) -> str:
    op = REDUCE_OPS[(t, how)][0]
    fn = f"__tilec_{how}_{t}"
    body = offsets_1d(n) + ptrs("xp", "x", "offs", f"{n}", t) + load("v", "xp", f"{n}", t) + f"""
  %s = "tile.reduce"(%v) {{operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>, axis = 0 : i32, combine = @{fn}}} : (tensor<{n}x{t}>) -> {t}""" + \
        store_scalar("out", "pid", "s", t)
    return kernel("red", f"{arg('out', t)}, {arg('x', t)}", body, combine(fn, t, op))


@pytest.mark.parametrize("t,how", sorted(REDUCE_OPS))
def test_reduce_1d(tmp_path: Path, t: str, how: str) -> None:
    n, progs = 256, 6
    ptype = {"f32": F32P, "f16": F16P, "i32": I32P}[t]
    k = build(reduce_1d_src(t, how, n), "red", [ptype, ptype], tmp_path)
    rng = np.random.default_rng(1)
    if t == "i32":
        x = rng.integers(-1000, 1000, (progs, n)).astype(np.int32)
    else:
        x = rng.standard_normal((progs, n)).astype(NP_OF[t])
    out = np.zeros(progs, dtype=NP_OF[t])
    k.launch((progs, 1, 1), [ptr(out), ptr(x)])
    ref = REDUCE_OPS[(t, how)][1](x.astype(np.float64) if t != "i32" else x, axis=1)
    if t == "i32":
        np.testing.assert_array_equal(out, ref)
    else:
        tol = 2e-2 if t == "f16" else 1e-5
        np.testing.assert_allclose(out.astype(np.float64), ref, rtol=tol, atol=tol)


def test_reduce_1d_non_power_of_two_generic(tmp_path: Path) -> None:
    """A 24-element tile (not a power of two) through the generic tree (argmax)."""
    n = 24
    body = offsets_1d(n) + ptrs("xp", "x", "offs", f"{n}", "i32") + load("v", "xp", f"{n}", "i32") + \
        f"""
  %mv, %mi = "tile.reduce"(%v, %r) {{operandSegmentSizes = array<i32: 1, 1, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 0, 0>, axis = 0 : i32, combine = @am}} : (tensor<{n}xi32>, tensor<{n}xi32>) -> (i32, i32)""" + \
        store_scalar("oi", "pid", "mi", "i32")
    src = kernel("amax", f"{arg('oi', 'i32')}, {arg('x', 'i32')}", body,
                 argcombine("am", "i32", "i32", "max"))
    k = build(src, "amax", [I32P, I32P], tmp_path)
    rng = np.random.default_rng(2)
    x = rng.integers(0, 5, (9, n)).astype(np.int32)
    out = np.full(9, -1, dtype=np.int32)
    k.launch((9, 1, 1), [ptr(out), ptr(x)])
    np.testing.assert_array_equal(out, np.argmax(x, axis=1))


# ---------------------------------------------------------------- argmax / argmin

@pytest.mark.parametrize("which,vt,it", [
    ("max", "f32", "f32"), ("min", "f32", "f32"), ("max", "i32", "i32"), ("min", "i32", "i32"),
    ("max", "f32", "i32"),
])
def test_argmax_argmin_ties(tmp_path: Path, which: str, vt: str, it: str) -> None:
    n = 512
    idx = "%r" if it == "i32" else "%rf"
    body = offsets_1d(n) + ptrs("xp", "x", "offs", f"{n}", vt) + load("v", "xp", f"{n}", vt) + \
        f"""
  %rf = arith.sitofp %r : tensor<{n}xi32> to tensor<{n}xf32>
  %mv, %mi = "tile.reduce"(%v, {idx}) {{operandSegmentSizes = array<i32: 1, 1, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 0, 0>, axis = 0 : i32, combine = @am}} : (tensor<{n}x{vt}>, tensor<{n}x{it}>) -> ({vt}, {it})""" + \
        store_scalar("ov", "pid", "mv", vt) + store_scalar("oi", "pid", "mi", it)
    src = kernel("arg", f"{arg('ov', vt)}, {arg('oi', it)}, {arg('x', vt)}", body,
                 argcombine("am", vt, it, which))
    pt = {"f32": F32P, "i32": I32P}
    k = build(src, "arg", [pt[vt], pt[it], pt[vt]], tmp_path)
    rng = np.random.default_rng(3)
    progs = 8
    x = rng.integers(-3, 4, (progs, n)).astype(NP_OF[vt])  # many ties
    ov = np.zeros(progs, NP_OF[vt])
    oi = np.full(progs, -1, NP_OF[it])
    k.launch((progs, 1, 1), [ptr(ov), ptr(oi), ptr(x)])
    ref = np.argmax(x, axis=1) if which == "max" else np.argmin(x, axis=1)
    np.testing.assert_array_equal(oi, ref)
    np.testing.assert_array_equal(ov, x[np.arange(progs), ref])


# ---------------------------------------------------------------- 2-D reductions

@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("how", ["sum", "max"])
def test_reduce_2d(tmp_path: Path, axis: int, how: str) -> None:
    r, c = 32, 64
    out_n = c if axis == 0 else r
    op = {"sum": "arith.addf", "max": "arith.maxnumf"}[how]
    body = offsets_2d(r, c) + ptrs("xp", "x", "offs", f"{r}x{c}", "f32") + \
        load("v", "xp", f"{r}x{c}", "f32") + f"""
  %s = "tile.reduce"(%v) {{operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>, axis = {axis} : i32, combine = @cmb}} : (tensor<{r}x{c}xf32>) -> tensor<{out_n}xf32>""" + \
        offsets_1d(out_n, p="o") + ptrs("op", "out", "ooffs", f"{out_n}", "f32") + \
        store("op", "s", f"{out_n}", "f32")
    src = kernel("red2", f"{arg('out', 'f32')}, {arg('x', 'f32')}", body, combine("cmb", "f32", op))
    k = build(src, "red2", [F32P, F32P], tmp_path)
    progs = 3
    x = np.random.default_rng(4).standard_normal((progs, r, c)).astype(np.float32)
    out = np.zeros((progs, out_n), np.float32)
    k.launch((progs, 1, 1), [ptr(out), ptr(x)])
    ref = getattr(np, how)(x, axis=axis + 1)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_argmax_2d_axis1(tmp_path: Path) -> None:
    r, c = 16, 32
    body = offsets_2d(r, c) + ptrs("xp", "x", "offs", f"{r}x{c}", "i32") + \
        load("v", "xp", f"{r}x{c}", "i32") + f"""
  %idx = "tile.broadcast"(%ej) : (tensor<1x{c}xi32>) -> tensor<{r}x{c}xi32>
  %mv, %mi = "tile.reduce"(%v, %idx) {{operandSegmentSizes = array<i32: 1, 1, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 0, 0>, axis = 1 : i32, combine = @am}} : (tensor<{r}x{c}xi32>, tensor<{r}x{c}xi32>) -> (tensor<{r}xi32>, tensor<{r}xi32>)""" + \
        offsets_1d(r, p="o") + ptrs("op", "out", "ooffs", f"{r}", "i32") + store("op", "mi", f"{r}", "i32")
    src = kernel("amax2", f"{arg('out', 'i32')}, {arg('x', 'i32')}", body,
                 argcombine("am", "i32", "i32", "max"))
    k = build(src, "amax2", [I32P, I32P], tmp_path)
    progs = 2
    x = np.random.default_rng(5).integers(0, 3, (progs, r, c)).astype(np.int32)
    out = np.full((progs, r), -1, np.int32)
    k.launch((progs, 1, 1), [ptr(out), ptr(x)])
    np.testing.assert_array_equal(out, np.argmax(x, axis=2))


def test_reduce_non_vectorizable_combine(tmp_path: Path) -> None:
    """A combine with control flow is called per lane (func.call)."""
    n = 64
    extra = """
func.func private @cmb(%a: i32, %b: i32) -> i32 {
  %c = arith.cmpi sgt, %a, %b : i32
  %r = scf.if %c -> (i32) {
    scf.yield %a : i32
  } else {
    scf.yield %b : i32
  }
  return %r : i32
}"""
    body = offsets_1d(n) + ptrs("xp", "x", "offs", f"{n}", "i32") + load("v", "xp", f"{n}", "i32") + \
        f"""
  %s = "tile.reduce"(%v) {{operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>, axis = 0 : i32, combine = @cmb}} : (tensor<{n}xi32>) -> i32""" + \
        store_scalar("out", "pid", "s", "i32")
    k = build(kernel("redcf", f"{arg('out', 'i32')}, {arg('x', 'i32')}", body, extra), "redcf",
              [I32P, I32P], tmp_path)
    x = np.random.default_rng(6).integers(-99, 99, (4, n)).astype(np.int32)
    out = np.zeros(4, np.int32)
    k.launch((4, 1, 1), [ptr(out), ptr(x)])
    np.testing.assert_array_equal(out, x.max(axis=1))


# ---------------------------------------------------------------- scans

def scan_src(t: str, op: str, shape: tuple[int, ...], axis: int, reverse: bool) -> str:
    s = "x".join(map(str, shape))
    offs = offsets_1d(shape[0]) if len(shape) == 1 else offsets_2d(shape[0], shape[1])
    rev = ", reverse" if reverse else ""
    body = offs + ptrs("xp", "x", "offs", s, t) + load("v", "xp", s, t) + f"""
  %c = "tile.scan"(%v) {{operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>, axis = {axis} : i32, combine = @cmb{rev}}} : (tensor<{s}x{t}>) -> tensor<{s}x{t}>""" + \
        ptrs("op", "out", "offs", s, t) + store("op", "c", s, t)
    return kernel("scan", f"{arg('out', t)}, {arg('x', t)}", body, combine("cmb", t, op))


@pytest.mark.parametrize("t,op,shape,axis,reverse", [
    ("f32", "arith.addf", (1024,), 0, False),
    ("i32", "arith.addi", (1024,), 0, False),
    ("i32", "arith.addi", (8, 128), 1, False),
    ("i32", "arith.addi", (16, 8), 0, False),
    ("i32", "arith.addi", (256,), 0, True),
    ("i32", "arith.maxsi", (8, 64), 1, True),
    ("i32", "first", (64,), 0, False),  # not commutative: order matters
    ("i32", "first", (4, 32), 1, True),
    ("f32", "arith.addf", (4096,), 0, True),
    ("i32", "arith.addi", (32, 4), 0, True),
])
def test_scan(tmp_path: Path, t: str, op: str, shape: tuple[int, ...], axis: int,
              reverse: bool) -> None:
    ptype = {"f32": F32P, "i32": I32P}[t]
    k = build(scan_src(t, op, shape, axis, reverse), "scan", [ptype, ptype], tmp_path)
    progs = 3
    rng = np.random.default_rng(7)
    if t == "i32":
        x = rng.integers(-50, 50, (progs,) + shape).astype(np.int32)
    else:
        x = rng.standard_normal((progs,) + shape).astype(np.float32)
    out = np.zeros_like(x)
    k.launch((progs, 1, 1), [ptr(out), ptr(x)])
    ax = axis + 1
    xs = np.flip(x, ax) if reverse else x
    if op == "arith.maxsi":
        ref = np.maximum.accumulate(xs, axis=ax)
    elif op == "first":
        ref = np.repeat(np.take(xs, [0], axis=ax), xs.shape[ax], axis=ax)
    else:
        ref = np.cumsum(xs.astype(np.float64) if t == "f32" else xs, axis=ax)
    if reverse:
        ref = np.flip(ref, ax)
    if t == "i32":
        np.testing.assert_array_equal(out, ref)
    else:
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- atomics

def test_atomic_add_histogram(tmp_path: Path) -> None:
    n, bins = 1024, 64
    body = f"""
  %pid = "tile.program_id"() {{axis = 0 : i32}} : () -> i32
  %cper = arith.constant {n} : i32
  %base = arith.muli %pid, %cper : i32
  %r = "tile.range"() {{end = {n} : i32, start = 0 : i32}} : () -> tensor<{n}xi32>
  %bs = tensor.splat %base : tensor<{n}xi32>
  %offs = arith.addi %bs, %r : tensor<{n}xi32>
  %ns = tensor.splat %n : tensor<{n}xi32>
  %mask = arith.cmpi slt, %offs, %ns : tensor<{n}xi32>""" + ptrs("xp", "x", "offs", f"{n}", "i32") + f"""
  %zero = arith.constant dense<0> : tensor<{n}xi32>
  %b = "tile.load"(%xp, %mask, %zero) {{operandSegmentSizes = array<i32: 1, 1, 1>}} : (tensor<{n}x!tile.ptr<i32>>, tensor<{n}xi1>, tensor<{n}xi32>) -> tensor<{n}xi32>""" + \
        ptrs("hp", "h", "b", f"{n}", "i32") + f"""
  %ones = arith.constant dense<1> : tensor<{n}xi32>
  %old = "tile.atomic_rmw"(%hp, %ones, %mask) {{kind = "add", operandSegmentSizes = array<i32: 1, 1, 1>}} : (tensor<{n}x!tile.ptr<i32>>, tensor<{n}xi32>, tensor<{n}xi1>) -> tensor<{n}xi32>"""
    src = kernel("hist", f"{arg('h', 'i32')}, {arg('x', 'i32')}, %n: i32", body)
    k = build(src, "hist", [I32P, I32P, tl.int32], tmp_path)
    total = 200 * n - 123
    x = np.random.default_rng(8).integers(0, bins, total).astype(np.int32)
    # Skewed: half the values hit bin 3, so programs collide constantly.
    x[::2] = 3
    h = np.zeros(bins, np.int32)
    k.launch((math.ceil(total / n), 1, 1), [ptr(h), ptr(x), total])
    np.testing.assert_array_equal(h, np.bincount(x, minlength=bins))


def test_atomic_fadd(tmp_path: Path) -> None:
    n, slots = 256, 8
    body = offsets_1d(n) + ptrs("xp", "x", "offs", f"{n}", "f32") + load("v", "xp", f"{n}", "f32") + f"""
  %cs = arith.constant dense<{slots}> : tensor<{n}xi32>
  %slot = arith.remsi %r, %cs : tensor<{n}xi32>""" + ptrs("sp", "s", "slot", f"{n}", "f32") + f"""
  %old = "tile.atomic_rmw"(%sp, %v) {{kind = "fadd", operandSegmentSizes = array<i32: 1, 1, 0>}} : (tensor<{n}x!tile.ptr<f32>>, tensor<{n}xf32>) -> tensor<{n}xf32>"""
    k = build(kernel("fadd", f"{arg('s', 'f32')}, {arg('x', 'f32')}", body), "fadd", [F32P, F32P],
              tmp_path)
    progs = 64
    x = np.random.default_rng(9).random((progs, n)).astype(np.float32)
    s = np.zeros(slots, np.float32)
    k.launch((progs, 1, 1), [ptr(s), ptr(x)])
    ref = x.astype(np.float64).reshape(progs, n // slots, slots).sum(axis=(0, 1))
    np.testing.assert_allclose(s, ref, rtol=1e-4)


@pytest.mark.parametrize("kind,t,n", [
    ("max", "i32", 16), ("min", "i32", 16), ("xchg", "i32", 16), ("umax", "i32", 8),
    ("fmax", "f32", 16), ("fmin", "f32", 64), ("xchg", "f32", 64), ("add", "i32", 64),
    ("and", "i32", 16), ("or", "i32", 16), ("xor", "i32", 32),
])
def test_atomic_rmw_returns_old(tmp_path: Path, kind: str, t: str, n: int) -> None:
    """One program, distinct addresses, half the lanes masked off: memory is
    updated where the mask is set and the op returns the old values (0 elsewhere)."""
    body = offsets_1d(n) + ptrs("mp", "m", "offs", f"{n}", t) + ptrs("vp", "v", "offs", f"{n}", t) + \
        load("val", "vp", f"{n}", t) + f"""
  %two = arith.constant dense<2> : tensor<{n}xi32>
  %par = arith.remsi %r, %two : tensor<{n}xi32>
  %zero = arith.constant dense<0> : tensor<{n}xi32>
  %mask = arith.cmpi eq, %par, %zero : tensor<{n}xi32>
  %old = "tile.atomic_rmw"(%mp, %val, %mask) {{kind = "{kind}", operandSegmentSizes = array<i32: 1, 1, 1>}} : (tensor<{n}x!tile.ptr<{t}>>, tensor<{n}x{t}>, tensor<{n}xi1>) -> tensor<{n}x{t}>""" + \
        ptrs("op", "o", "offs", f"{n}", t) + store("op", "old", f"{n}", t)
    ptype = F32P if t == "f32" else I32P
    k = build(kernel("rmw", f"{arg('m', t)}, {arg('v', t)}, {arg('o', t)}", body), "rmw",
              [ptype, ptype, ptype], tmp_path)
    rng = np.random.default_rng(10)
    if t == "i32":
        m0 = rng.integers(-100, 100, n).astype(np.int32)
        v = rng.integers(-100, 100, n).astype(np.int32)
    else:
        m0 = rng.standard_normal(n).astype(np.float32)
        v = rng.standard_normal(n).astype(np.float32)
    m = m0.copy()
    o = np.full(n, 77, dtype=m.dtype)
    k.launch((1, 1, 1), [ptr(m), ptr(v), ptr(o)])
    u = lambda a: a.view(np.uint32)  # noqa: E731
    new = {
        "max": lambda: np.maximum(m0, v), "min": lambda: np.minimum(m0, v), "xchg": lambda: v,
        "umax": lambda: np.maximum(u(m0), u(v)).view(np.int32),
        "fmax": lambda: np.fmax(m0, v), "fmin": lambda: np.fmin(m0, v), "add": lambda: m0 + v,
        "and": lambda: m0 & v, "or": lambda: m0 | v, "xor": lambda: m0 ^ v,
    }[kind]()
    on = np.arange(n) % 2 == 0
    np.testing.assert_array_equal(m, np.where(on, new, m0))
    np.testing.assert_array_equal(o, np.where(on, m0, 0))


def test_atomic_max_concurrent(tmp_path: Path) -> None:
    n, bins = 128, 16
    body = offsets_1d(n) + ptrs("vp", "v", "offs", f"{n}", "i32") + load("val", "vp", f"{n}", "i32") + \
        f"""
  %cb = arith.constant dense<{bins}> : tensor<{n}xi32>
  %bin = arith.remsi %r, %cb : tensor<{n}xi32>""" + ptrs("mp", "m", "bin", f"{n}", "i32") + f"""
  %old = "tile.atomic_rmw"(%mp, %val) {{kind = "max", operandSegmentSizes = array<i32: 1, 1, 0>}} : (tensor<{n}x!tile.ptr<i32>>, tensor<{n}xi32>) -> tensor<{n}xi32>"""
    k = build(kernel("amaxc", f"{arg('m', 'i32')}, {arg('v', 'i32')}", body), "amaxc", [I32P, I32P],
              tmp_path)
    progs = 256
    v = np.random.default_rng(11).integers(-10 ** 6, 10 ** 6, (progs, n)).astype(np.int32)
    m = np.full(bins, np.iinfo(np.int32).min, np.int32)
    k.launch((progs, 1, 1), [ptr(m), ptr(v)])
    np.testing.assert_array_equal(m, v.reshape(progs, n // bins, bins).max(axis=(0, 1)))


@pytest.mark.parametrize("t,n", [("i32", 16), ("f32", 32)])
def test_atomic_cas(tmp_path: Path, t: str, n: int) -> None:
    body = offsets_1d(n) + ptrs("mp", "m", "offs", f"{n}", t) + ptrs("cp", "c", "offs", f"{n}", t) + \
        ptrs("vp", "v", "offs", f"{n}", t) + load("cmp", "cp", f"{n}", t) + \
        load("val", "vp", f"{n}", t) + f"""
  %old = "tile.atomic_cas"(%mp, %cmp, %val) : (tensor<{n}x!tile.ptr<{t}>>, tensor<{n}x{t}>, tensor<{n}x{t}>) -> tensor<{n}x{t}>""" + \
        ptrs("op", "o", "offs", f"{n}", t) + store("op", "old", f"{n}", t)
    ptype = F32P if t == "f32" else I32P
    k = build(kernel("cas", f"{arg('m', t)}, {arg('c', t)}, {arg('v', t)}, {arg('o', t)}", body),
              "cas", [ptype] * 4, tmp_path)
    dt = NP_OF[t]
    m0 = np.arange(n).astype(dt)
    c = m0.copy()
    c[1::3] += 1  # these compare unequal: memory unchanged
    v = (np.arange(n) * 10 + 5).astype(dt)
    m = m0.copy()
    o = np.zeros(n, dt)
    k.launch((1, 1, 1), [ptr(m), ptr(c), ptr(v), ptr(o)])
    np.testing.assert_array_equal(o, m0)
    np.testing.assert_array_equal(m, np.where(c == m0, v, m0))


def test_atomic_cas_concurrent_single_winner(tmp_path: Path) -> None:
    """Every program tries cas(m, 0, pid + 1) on one word at once: exactly one
    sees the old value 0, and memory holds its id."""
    body = """
  %pid = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %one = arith.constant 1 : i32
  %zero = arith.constant 0 : i32
  %mine = arith.addi %pid, %one : i32
  %old = "tile.atomic_cas"(%m, %zero, %mine) : (!tile.ptr<i32>, i32, i32) -> i32""" + \
        store_scalar("o", "pid", "old", "i32")
    k = build(kernel("casw", f"{arg('m', 'i32')}, {arg('o', 'i32')}", body), "casw", [I32P, I32P],
              tmp_path)
    for _ in range(5):
        m = np.zeros(1, np.int32)
        o = np.full(256, -1, np.int32)
        k.launch((256, 1, 1), [ptr(m), ptr(o)])
        winners = np.flatnonzero(o == 0)
        assert len(winners) == 1 and int(m[0]) == winners[0] + 1
        assert np.all(o[o != 0] == m[0])


# ---------------------------------------------------------------- reshape / trans / sync

def test_trans_and_reshape(tmp_path: Path) -> None:
    r, c = 16, 32
    body = offsets_2d(r, c) + ptrs("xp", "x", "offs", f"{r}x{c}", "f32") + \
        load("v", "xp", f"{r}x{c}", "f32") + f"""
  "tile.barrier"() : () -> ()
  %t = "tile.trans"(%v) : (tensor<{r}x{c}xf32>) -> tensor<{c}x{r}xf32>
  "tile.warp_sync"() : () -> ()""" + offsets_2d(c, r, p="t") + ptrs("tp", "tout", "toffs", f"{c}x{r}", "f32") + \
        store("tp", "t", f"{c}x{r}", "f32") + f"""
  %flat = "tile.reshape"(%v) : (tensor<{r}x{c}xf32>) -> tensor<{r * c}xf32>
  %re = "tile.reshape"(%flat) : (tensor<{r * c}xf32>) -> tensor<{r * c // 8}x8xf32>
  %rs = "tile.reduce"(%re) {{operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>, axis = 1 : i32, combine = @cmb}} : (tensor<{r * c // 8}x8xf32>) -> tensor<{r * c // 8}xf32>""" + \
        offsets_1d(r * c // 8, p="s") + ptrs("sp", "sout", "soffs", f"{r * c // 8}", "f32") + \
        store("sp", "rs", f"{r * c // 8}", "f32")
    src = kernel("tr", f"{arg('tout', 'f32')}, {arg('sout', 'f32')}, {arg('x', 'f32')}", body,
                 combine("cmb", "f32", "arith.addf"))
    k = build(src, "tr", [F32P, F32P, F32P], tmp_path)
    progs = 2
    x = np.random.default_rng(12).standard_normal((progs, r, c)).astype(np.float32)
    tout = np.zeros((progs, c, r), np.float32)
    sout = np.zeros((progs, r * c // 8), np.float32)
    k.launch((progs, 1, 1), [ptr(tout), ptr(sout), ptr(x)])
    np.testing.assert_array_equal(tout, x.transpose(0, 2, 1))
    np.testing.assert_allclose(sout, x.reshape(progs, -1, 8).sum(axis=2), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- lowering shape

def test_lowering_shape() -> None:
    text = lower_text(softmax_src())
    assert "tile." not in text.replace("tile.divisibility", "")
    assert "vector.extract_strided_slice" in text
    assert "vector.reduction <maxnumf>" in text
    assert "vector.reduction <add>" in text and "fastmath<reassoc>" in text


def test_softmax_compile_time(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    build(softmax_src(), "softmax", [F32P, F32P, tl.int32], tmp_path)
    dt = time.perf_counter() - t0
    print(f"softmax 1024 compile: {dt * 1000:.0f} ms")
    assert dt < 10.0

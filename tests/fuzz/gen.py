"""Generated valid kernels with a NumPy reference.

A `Case` is plain data (JSON-able) so that it crosses to a worker process:
the kernel's source, the arrays it gets (name, dtype, shape, how to fill
them), the launch (grid, constexprs, argument order) and, per output array,
a NumPy expression over the inputs that states the documented semantics
(Triton's): a binary op on two tiles of one dtype keeps that dtype (integers
wrap), `tl.sum`/`tl.cumsum` of narrow integers accumulate in int32 and the
store converts back, `argmax`/`argmin` return the first index of the
extremum, masked-off lanes of a load take `other`, masked-off lanes of a
store leave memory as it was.  Operands within one kernel share a dtype, so
no promotion rule is involved except where a `.to()` says so.
"""
from __future__ import annotations

import random
from typing import Any

INTS = ["i8", "i16", "i32", "i64", "u8", "u32"]
FLOATS = ["fp32", "fp16", "fp64"]
NP = {"i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8",
      "u32": "uint32", "fp32": "float32", "fp16": "float16", "fp64": "float64",
      "bf16": "float32"}        # bf16 inputs are made as float32 values exact in bf16
TL = {"i8": "tl.int8", "i16": "tl.int16", "i32": "tl.int32", "i64": "tl.int64",
      "u8": "tl.uint8", "u32": "tl.uint32", "fp32": "tl.float32", "fp16": "tl.float16",
      "fp64": "tl.float64", "bf16": "tl.bfloat16"}

Case = dict[str, Any]


def _expr(r: random.Random, dt: str, names: list[str], depth: int) -> tuple[str, str]:
    """(tl expression, NumPy expression) of dtype `dt` over `names`."""
    if depth == 0 or r.random() < 0.25:
        v = r.choice(names)
        return v, v
    a_t, a_n = _expr(r, dt, names, depth - 1)
    b_t, b_n = _expr(r, dt, names, depth - 1)
    is_int = dt in INTS
    signed = dt in INTS and not dt.startswith("u")
    ops = ["+", "-", "*", "max", "min", "where"]
    if is_int:
        ops += ["&", "|", "^"]
    if signed or not is_int:
        ops += ["abs"]
    if not is_int and dt in ("fp32", "fp64"):
        ops += ["exp", "sqrt"]
    op = r.choice(ops)
    cast = f".astype(np.{NP[dt]})"
    if op in ("+", "-", "*", "&", "|", "^"):
        return f"({a_t} {op} {b_t})", f"({a_n} {op} {b_n}){cast}"
    if op == "max":
        return f"tl.maximum({a_t}, {b_t})", f"np.maximum({a_n}, {b_n})"
    if op == "min":
        return f"tl.minimum({a_t}, {b_t})", f"np.minimum({a_n}, {b_n})"
    if op == "where":
        return f"tl.where({a_t} > {b_t}, {a_t}, {b_t})", f"np.where({a_n} > {b_n}, {a_n}, {b_n})"
    if op == "abs":
        return f"tl.abs({a_t})", f"np.abs({a_n}){cast}"
    if op == "exp":   # bounded argument: no overflow
        return (f"tl.exp(tl.minimum({a_t}, 4.0))", f"np.exp(np.minimum({a_n}, 4.0)){cast}")
    return f"tl.sqrt(tl.abs({a_t}))", f"np.sqrt(np.abs({a_n})){cast}"


def _fill(dt: str) -> str:
    """How the worker fills an input array of dtype dt (small values: no
    overflow in float math, exact in every float type)."""
    return "small_int" if dt in INTS else "small_float"


def _tol(dt: str) -> float:
    return {"fp16": 2e-2, "bf16": 5e-2, "fp32": 1e-4, "fp64": 1e-9}.get(dt, 0.0)


def elementwise(r: random.Random, i: int) -> Case:
    dt = r.choice(INTS + FLOATS)
    block = r.choice([16, 64, 128, 256, 1024])
    n = r.randint(1, 3 * block)
    t, ref = _expr(r, dt, ["x", "y"], r.randint(1, 4))
    cast_to = r.choice(["fp32", "i32"]) if r.random() < 0.3 else None
    store = t if cast_to is None else f"({t}).to({TL[cast_to]})"
    out_dt = cast_to or dt
    if cast_to is not None:   # float -> int truncates toward zero
        inner = f"np.trunc({ref})" if dt in FLOATS and cast_to in INTS else f"({ref})"
        ref = f"{inner}.astype(np.{NP[cast_to]})"
    src = f"""
@tilec.kernel
def k{i}(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    tl.store(o_ptr + offs, {store}, mask=m)
"""
    return {"name": f"k{i}", "source": src, "kind": "elementwise",
            "arrays": [["x", dt, [n], _fill(dt)], ["y", dt, [n], _fill(dt)],
                       ["o", out_dt, [n], "zeros"]],
            "scalars": {"n": n}, "params": ["x", "y", "o", "n"], "grid": [-(-n // block)],
            "constexprs": {"BLOCK": block}, "reference": {"o": ref},
            "tol": max(_tol(dt), _tol(out_dt))}


def reduction(r: random.Random, i: int) -> Case:
    dt = r.choice(INTS + ["fp32", "fp64", "fp16"])
    kind = r.choice(["sum", "max", "min", "argmax", "argmin"])
    bm, bn = r.choice([1, 2, 4, 8]), r.choice([16, 32, 64, 256])
    R, C = r.randint(1, bm), r.randint(1, bn)
    axis = r.choice([0, 1])
    neutral = {"sum": "0", "max": "-100", "min": "100", "argmax": "-100", "argmin": "100"}[kind]
    if dt.startswith("u") and kind in ("max", "argmax"):
        neutral = "0"
    out_dt = "i32" if kind.startswith("arg") else dt
    npf = {"sum": "np.sum", "max": "np.max", "min": "np.min", "argmax": "np.argmax",
           "argmin": "np.argmin"}[kind]
    ref = f"{npf}(x.astype(np.int64) if x.dtype.kind in 'iu' else x, axis={axis})"
    ref = f"({ref}).astype(np.{NP[out_dt]})"
    offs = "rows" if axis == 1 else "cols"
    lim = "R" if axis == 1 else "C"
    src = f"""
@tilec.kernel
def k{i}(x_ptr, o_ptr, R, C, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    ok = (rows[:, None] < R) & (cols[None, :] < C)
    x = tl.load(x_ptr + rows[:, None] * C + cols[None, :], mask=ok, other={neutral})
    v = tl.{kind}(x, axis={axis})
    tl.store(o_ptr + {offs}, v, mask={offs} < {lim})
"""
    return {"name": f"k{i}", "source": src, "kind": "reduction",
            "arrays": [["x", dt, [R, C], _fill(dt)],
                       ["o", out_dt, [R if axis == 1 else C], "zeros"]],
            "scalars": {"R": R, "C": C}, "params": ["x", "o", "R", "C"], "grid": [1],
            "constexprs": {"BM": bm, "BN": bn}, "reference": {"o": ref},
            "tol": 1e-3 if kind == "sum" and dt == "fp16" else _tol(dt) * 10}


def scan_loop(r: random.Random, i: int) -> Case:
    dt = r.choice(["i32", "i64", "fp32", "i8"])
    block = r.choice([16, 32, 128])
    n = r.randint(1, 4 * block)
    src = f"""
@tilec.kernel
def k{i}(x_ptr, o_ptr, t_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype={TL[dt]})
    for start in range(0, n, BLOCK):
        m = start + offs < n
        x = tl.load(x_ptr + start + offs, mask=m, other=0)
        tl.store(o_ptr + start + offs, tl.cumsum(x, axis=0), mask=m)
        acc += x
    tl.store(t_ptr, tl.sum(acc, axis=0))
"""
    blocks = f"[x[s:s + {block}] for s in range(0, {n}, {block})]"
    ref_o = (f"np.concatenate([np.cumsum(b.astype(np.int64) if b.dtype.kind in 'iu' else b)"
             f" for b in {blocks}]).astype(np.{NP[dt]})")
    ref_t = (f"np.array([np.sum(x.astype(np.int64) if x.dtype.kind in 'iu' else x)])"
             f".astype(np.{NP[dt]})")
    return {"name": f"k{i}", "source": src, "kind": "scan_loop",
            "arrays": [["x", dt, [n], _fill(dt)], ["o", dt, [n], "zeros"], ["t", dt, [1], "zeros"]],
            "scalars": {"n": n}, "params": ["x", "o", "t", "n"], "grid": [1],
            "constexprs": {"BLOCK": block}, "reference": {"o": ref_o, "t": ref_t},
            "tol": _tol(dt) * 10}


def broadcast_2d(r: random.Random, i: int) -> Case:
    dt = r.choice(INTS + FLOATS)
    bm, bn = r.choice([2, 4, 16]), r.choice([8, 32, 64])
    R, C = r.randint(1, 2 * bm), r.randint(1, 2 * bn)
    t, ref = _expr(r, dt, ["x", "b[None, :]", "c[:, None]"], r.randint(1, 3))
    t = t.replace("b[None, :]", "b").replace("c[:, None]", "c")
    src = f"""
@tilec.kernel
def k{i}(x_ptr, b_ptr, c_ptr, o_ptr, R, C, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    ok = (rows[:, None] < R) & (cols[None, :] < C)
    x = tl.load(x_ptr + rows[:, None] * C + cols[None, :], mask=ok, other=1)
    b = tl.load(b_ptr + cols, mask=cols < C, other=1)[None, :]
    c = tl.load(c_ptr + rows, mask=rows < R, other=1)[:, None]
    tl.store(o_ptr + rows[:, None] * C + cols[None, :], {t}, mask=ok)
"""
    full = f"(({ref}) + np.zeros(({R}, {C}), np.{NP[dt]})).astype(np.{NP[dt]})"
    return {"name": f"k{i}", "source": src, "kind": "broadcast_2d",
            "arrays": [["x", dt, [R, C], _fill(dt)], ["b", dt, [C], _fill(dt)],
                       ["c", dt, [R], _fill(dt)], ["o", dt, [R, C], "zeros"]],
            "scalars": {"R": R, "C": C}, "params": ["x", "b", "c", "o", "R", "C"],
            "grid": [-(-R // bm), -(-C // bn)], "constexprs": {"BM": bm, "BN": bn},
            "reference": {"o": full}, "tol": _tol(dt)}


def atomics(r: random.Random, i: int) -> Case:
    vt = r.choice(["i32", "fp32", "i64"])
    block = r.choice([32, 128, 256])
    bins = r.choice([4, 16, 64])
    n = r.randint(1, 4 * block)
    kind = r.choice(["add", "max", "min"]) if vt != "fp32" else "add"
    src = f"""
@tilec.kernel
def k{i}(x_ptr, w_ptr, h_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    w = tl.load(w_ptr + offs, mask=m, other=0)
    tl.atomic_{kind}(h_ptr + (x & {bins - 1}), w, mask=m)
"""
    ufunc = {"add": "np.add", "max": "np.maximum", "min": "np.minimum"}[kind]
    ref = (f"(lambda h: ({ufunc}.at(h, x.astype(np.int64) & {bins - 1}, w), h)[1])"
           f"(np.zeros({bins}, np.{NP[vt]}))")
    return {"name": f"k{i}", "source": src, "kind": "atomics",
            "arrays": [["x", "i8", [n], "small_int"], ["w", vt, [n], _fill(vt)],
                       ["h", vt, [bins], "zeros"]],
            "scalars": {"n": n}, "params": ["x", "w", "h", "n"], "grid": [-(-n // block)],
            "constexprs": {"BLOCK": block}, "reference": {"h": ref},
            "tol": 1e-4 if vt == "fp32" else 0.0}


def softmax_rows(r: random.Random, i: int) -> Case:
    """Row kernels the CPU lowers row by row (rows.py): a reduction feeding
    elementwise math and a masked store."""
    dt = r.choice(["fp32", "fp64"])
    block = r.choice([16, 64, 256, 1024])
    n = r.randint(1, block)
    rows = r.randint(1, 6)
    src = f"""
@tilec.kernel
def k{i}(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    x = tl.load(x_ptr + row * n + cols, mask=m, other=float("-inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(o_ptr + row * n + cols, e / tl.sum(e, axis=0), mask=m)
"""
    ref = "(lambda e: e / e.sum(axis=1, keepdims=True))(np.exp(x - x.max(axis=1, keepdims=True)))"
    return {"name": f"k{i}", "source": src, "kind": "softmax_rows",
            "arrays": [["x", dt, [rows, n], "small_float"], ["o", dt, [rows, n], "zeros"]],
            "scalars": {"n": n}, "params": ["x", "o", "n"], "grid": [rows],
            "constexprs": {"BLOCK": block}, "reference": {"o": f"({ref}).astype(np.{NP[dt]})"},
            "tol": 1e-5}


def dot(r: random.Random, i: int) -> Case:
    dt = r.choice(["fp32", "fp16"])
    bm, bn, bk = r.choice([16, 32]), r.choice([16, 32]), r.choice([16, 32])
    M, N, K = r.randint(1, bm), r.randint(1, bn), r.randint(1, bk)
    src = f"""
@tilec.kernel
def k{i}(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0)
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0)
    c = tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c, mask=(rm[:, None] < M) & (rn[None, :] < N))
"""
    ref = "(a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)"
    return {"name": f"k{i}", "source": src, "kind": "dot",
            "arrays": [["a", dt, [M, K], "small_float"], ["b", dt, [K, N], "small_float"],
                       ["c", "fp32", [M, N], "zeros"]],
            "scalars": {"M": M, "N": N, "K": K}, "params": ["a", "b", "c", "M", "N", "K"],
            "grid": [1], "constexprs": {"BM": bm, "BN": bn, "BK": bk},
            "reference": {"c": ref}, "tol": 1e-4}


GENERATORS = [elementwise, elementwise, reduction, scan_loop, broadcast_2d, atomics,
              softmax_rows, dot]


def valid_case(seed: int, i: int) -> Case:
    r = random.Random(seed * 1_000_003 + i)
    case: Case = r.choice(GENERATORS)(r, i)
    case["valid"] = True
    return case

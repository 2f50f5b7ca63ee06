"""The fuzzer's `tma` mode, descriptor cases: random Triton-style kernels
written with `tl.make_tensor_descriptor` through the CPU differential
harness for `tile-tma-descriptors` (tests/tma_emulation.py), whose per-program
bases (`x_ptr + off_z * s_z + off_h * s_h`) are maps of rank 3 to 5.

Each case is a generated matmul (A [M, K] @ B [K, N] -> C, or B given as an
[N, K] descriptor and `tl.dot(a, b.T, acc)`) or copy (X [M, N] -> f(X) -> Y)
whose operands are descriptors made at the top of the kernel, after the
program ids (inside a persistent tile loop, `tl.range(..., flatten=True)`
or `range`) or inside the K loop; bases are the pointer argument or it plus
a per-program offset of up to three batch indices (`pid_b`, or `off_z =
zh // H`, `off_h = zh % H`, `off_x = zh % X`) for some operands only (an
input may be shared by the batches), each batch stride written as an
argument (its launch value a multiple of 16 elements or not), the
descriptor's rows times its row stride (`pid_b * M * stride_am`), a
constant factor (`pid_b * 64 * stride_am`), a constant (a multiple of 16
bytes or not), or a sum of those (one batch index in two or three groups:
four groups in all must stay pointer accesses), maybe `(b + 1) * s` (the
next batch) and `.to(tl.int64)`; row strides padded (multiples of 16
elements past the shape), packed (an argument or the column size itself),
odd, or a constexpr; M, N, K ragged, K = 0 or below BLOCK_K; blocks whose
rows are 128 bytes (fp16 64 columns, fp32 32) and sometimes not (not a map,
still compared); a K loop over tiles or elements; programs beyond the tile
grid, GROUP_M swizzles, block origins below zero on rows and columns
(`pid_m * BLOCK_M - SHIFT_M`: a descriptor reads zeros there either way);
stores through a descriptor (`acc.to(..)`, elementwise epilogues) or a
masked pointer store; fp16, bf16 (torch) and fp32 data in NaN-filled
buffers (an input's rows filled, their padding NaN, where its batch strides
are multiples of its row stride; else the whole buffer random).

Excluded by construction: a per-program base below the argument's address
(the buffers start at the argument; the pass takes only batch coordinates
it shows non-negative, so such a base would stay a pointer access): every
batch term is a non-negative program value times a non-negative stride,
and every buffer holds each batch the grid reaches (the next one too for
`(b + 1) * s`).  Also excluded: stores whose
batches overlap (a race, not a mismatch): an output's batch strides leave
each batch's [M, N] region to itself.  Batch terms written backwards,
`(H - 1 - off_h) * s_h` (a base inside the tensor whose split has a batch
coordinate below zero: a wrong answer found by this generator in session
26, now refused by `map_blocks.nonnegative`), make 15% of the batch terms
(TILEC_FUZZ_TMA_REVERSED sets the fraction).

Made by `tests.fuzz.tma.tma_case` for about a third of the cases (kind
`tma-desc-matmul` / `tma-desc-copy`, feature `descriptor=True`); they run in
tests/fuzz/tma_run.py as the pointer cases do.
"""
from __future__ import annotations

import os
import random
from dataclasses import dataclass, field

from .tma import EB, Case, _batch_counts, _batch_params, _conj, _Dim, _dims, _emit_programs, \
    _epilogue, _Gen, _lower, _origin, _pick, _programs, _sum, _upper

# The fraction of batch terms written backwards, `(H - 1 - off_h) * s` (a
# base inside the tensor whose split has a batch coordinate below zero: the
# pass must keep such a descriptor a pointer access).
REVERSED = float(os.environ.get("TILEC_FUZZ_TMA_REVERSED", "0.15"))
COUNT = {"off_h": "H", "off_x": "X"}
TL = {"fp16": "tl.float16", "bf16": "tl.bfloat16", "fp32": "tl.float32"}
SHORT = {"pid_b": "b", "off_z": "z", "off_h": "h", "off_x": "x"}


def _up(x: int, m: int) -> int:
    return -(-x // m) * m


@dataclass
class _Mat:
    """A descriptor operand: [rows, cols] matrices (one per batch) with row
    stride `ld` (written `ld_src`), its block, its base-offset terms and the
    argument groups they make (`split_offset`'s)."""

    name: str
    rows: _Dim
    cols: _Dim
    dtype: str
    output: bool
    ld: int = 0
    ld_src: str = ""
    terms: list[str] = field(default_factory=list)
    groups: set[tuple[str, ...]] = field(default_factory=set)
    ld_rows: bool = True    # every batch offset a multiple of ld (rows of NaN padding)

    @property
    def block(self) -> str:
        return f"[{self.rows.block}, {self.cols.block}]"


def _row_stride(g: _Gen, m: _Mat) -> None:
    r, c = g.r, m.cols.value
    form = g.feature(f"{m.name}_ld", _pick(r, {"padded": 0.55, "packed": 0.14, "dim": 0.12,
                                                "const": 0.09, "odd": 0.1}))
    padded = _up(max(c, 1), 16) + 16 * r.randint(0, 2)
    if form == "dim":
        m.ld, m.ld_src = c, m.cols.size
        return
    m.ld = {"padded": padded, "packed": max(c, 1), "const": padded,
            "odd": padded + r.choice([1, 3, 5, 7])}[form]
    m.ld_src = g.constexpr(f"LD_{m.name.upper()}", m.ld) if form == "const" else \
        g.param(f"stride_{m.name}{m.rows.size.lower()}", m.ld)


def _ld_args(m: _Mat, g: _Gen) -> tuple[str, ...]:
    return (m.ld_src,) if m.ld_src in g.scalars else ()


def _term(g: _Gen, m: _Mat, var: str, n: int, ext: int, form: str) -> tuple[int, bool]:
    """Append var's term(s) to m's base offset; its stride (>= ext, the
    extent of the batches inside it, so that batches never overlap)."""
    r, eb = g.r, EB[m.dtype]
    unit = 16 // eb                                  # elements in 16 bytes
    b = f"{var}.to(tl.int64)" if r.random() < 0.15 else var
    plus = r.random() < 0.08
    if plus:
        b = f"({b} + 1)"
        g.feature(f"{m.name}_next_batch", True)
    elif REVERSED and r.random() < REVERSED:     # batch n - 1 - b: the same batches
        count = COUNT.get(var) or g.param(f"N{SHORT[var].upper()}{m.name.upper()}", n)
        b = f"({count} - 1 - {b})"
        g.feature(f"{m.name}_reversed", True)
    s_name = f"stride_{m.name}{SHORT[var]}"
    parts: list[tuple[str, int, tuple[str, ...]]] = []   # (source factor, value, arguments)
    if form == "arg":
        v = _up(ext, 16) + 16 * r.randint(0, 1)
        if r.random() < 0.08:
            v += r.choice([8, 1, 4, 2])              # a stride the launch does not align
            g.feature(f"{m.name}_batch_unaligned", True)
        parts.append((g.param(s_name, v), v, (s_name,)))
    elif form == "rows_ld":
        v = m.rows.value * m.ld
        parts.append((f"{m.rows.size} * {m.ld_src}", v, (m.rows.size, *_ld_args(m, g))))
    elif form == "factor_ld":
        f = max(-(-ext // max(m.ld, 1)), 1) + r.choice([0, 0, 1, 3])
        f = 64 if 64 * m.ld >= ext and r.random() < 0.4 else f
        v = f * m.ld
        src = r.choice([f"{f} * {m.ld_src}", f"({f} * {m.ld_src})"])
        parts.append((src, v, _ld_args(m, g)))
    elif form == "const":
        v = _up(ext, unit) + unit * r.randint(0, 2)
        if r.random() < 0.25:
            v += r.randint(1, unit - 1) if unit > 1 else 0   # not a multiple of 16 bytes
            g.feature(f"{m.name}_const_unaligned", True)
        parts.append((str(v) if r.random() < 0.7 else g.constexpr(f"SB_{m.name.upper()}"
                                                                  f"{SHORT[var].upper()}", v),
                      v, ()))
    else:   # split: an argument and a constant (and the row stride times a constant)
        c = unit * r.randint(1, 4)
        fl = r.randint(1, 2) if form == "split3" else 0
        v = _up(ext, 16) + 16 * r.randint(0, 1)
        parts += [(g.param(s_name, v), v, (s_name,)), (str(c), c, ())]
        if fl:
            parts.append((f"{fl} * {m.ld_src}", fl * m.ld, _ld_args(m, g)))
        v += c + fl * m.ld
    for src, val, args in parts:
        m.terms.append(r.choice([f"{b} * {src}", f"{src} * {b}"]))
        m.groups.add(tuple(sorted(args)))
        m.ld_rows &= m.ld > 0 and val % m.ld == 0
    return v, plus


def _layout(g: _Gen, m: _Mat, lib: str, batch: list[str], counts: list[int],
            four: bool) -> None:
    """m's row stride, base offset terms and buffer: batch k at offset
    sum_k (b_k (+1)) * S_k, each S_k past the batches inside it."""
    r = g.r
    _row_stride(g, m)
    rows, cols = m.rows.value, m.cols.value
    body = (rows - 1) * m.ld + cols if rows and cols else 0
    ext = max(body, 1)
    forms: list[str] = []
    for var, n in reversed(list(zip(batch, counts))):
        if not m.output and r.random() < 0.15:
            forms.insert(0, "shared")
            continue
        weights = {"arg": 0.45, "rows_ld": 0.12 if rows * m.ld >= ext else 0.0,
                   "factor_ld": 0.13 if m.ld else 0.0, "const": 0.15, "split": 0.08,
                   "split3": 0.07 if m.ld else 0.0}
        form = "split3" if four and m.ld else "split" if four else _pick(r, weights)
        forms.insert(0, form)
        v, plus = _term(g, m, var, n, ext, form)
        ext += (n - 1 + plus) * v
    g.feature(f"{m.name}_base", ",".join(forms) or "argument")
    g.feature(f"{m.name}_groups", len(m.groups))
    eb = EB[m.dtype]
    misaligned = r.random() < 0.03
    g.feature(f"{m.name}_base_misaligned", misaligned)
    lead = (16 // eb) * r.randint(1, 4) + (r.randint(1, 16 // eb - 1) if misaligned else 0)
    length = lead + ext + 2 * max(m.ld, 1) + 256
    if m.output:
        fill = None
    elif m.ld_rows and m.ld:
        fill = [[-(-ext // m.ld), m.ld], [min(cols, m.ld), 1]]
    else:
        fill = [[ext, 1]]
    g.arrays[f"{m.name}_ptr"] = {"dtype": m.dtype, "lib": lib, "length": length,
                                 "lead": lead, "fill": fill}


def _base(g: _Gen, m: _Mat) -> str:
    r = g.r
    if not m.terms:
        return f"{m.name}_ptr"
    if r.random() < 0.3:
        g.emit(f"{m.name}_off = " + _sum(r, m.terms[0], m.terms[1:]))
        return f"{m.name}_ptr + {m.name}_off"
    return _sum(r, f"{m.name}_ptr", m.terms)


def _make(g: _Gen, m: _Mat) -> None:
    base = _base(g, m)
    shape = f"[{m.rows.size}, {m.cols.size}]"
    g.emit(f"{m.name}_d = tl.make_tensor_descriptor({base}, shape={shape}, "
           f"strides=[{m.ld_src}, 1], block_shape={m.block})")


def _place(g: _Gen, m: _Mat, inner_ok: bool) -> str:
    """Where m's descriptor is made: top (an argument base), outer (after
    the program ids), inner (in the K loop), late (an output's: right
    before its store); none (an output stored through a pointer)."""
    if m.output and g.features["store"] == "pointer":
        return "none"
    w = {"top": 0.35 if not m.terms else 0.0, "outer": 0.45,
         "inner": 0.3 if inner_ok else 0.0, "late": 0.3 if m.output else 0.0}
    return str(g.feature(f"{m.name}_place", _pick(g.r, w)))


def _common(g: _Gen, dims_blocks: tuple[int, int, int | None]) -> tuple[
        str, str, dict[str, _Dim], list[int], list[str], str]:
    """dtype, lib, dims, batch counts and names, mapping; the grid and the
    size / batch parameters (M, N, K, H, X, NB)."""
    r = g.r
    dtype = str(g.feature("dtype", _pick(r, {"fp16": 0.45, "bf16": 0.3, "fp32": 0.25})))
    lib = "torch" if dtype == "bf16" or r.random() < 0.15 else "numpy"
    mapping = str(g.feature("mapping", _pick(r, {"grid": 0.55, "group": 0.15,
                                                 "persistent": 0.3})))
    counts = _batch_counts(g)
    bm, bn, bk = dims_blocks
    wide = 128 // EB[dtype]
    bn = bn * wide // 64
    bk = None if bk is None else bk * wide // 64
    g.feature("blocks", f"{bm}x{bn}" + ("" if bk is None else f"x{bk}"))
    for name, v in (("BLOCK_M", bm), ("BLOCK_N", bn), ("BLOCK_K", bk)):
        if v is not None:
            g.constexpr(name, v)
    dims = _dims(g, bm, bn, bk)
    grid, _ = _programs(g, dims, counts, mapping)
    g.grid = grid
    for d in dims:
        g.param(d, dims[d].value)
    _batch_params(g, counts, mapping)
    batch = [] if not counts else ["pid_b"] if len(counts) == 1 else \
        ["off_z", "off_h", "off_x"][:len(counts)]
    return dtype, lib, dims, counts, batch, mapping


def _blocks(r: random.Random, kind: str) -> tuple[int, int, int | None]:
    """(BLOCK_M, BLOCK_N, BLOCK_K) for fp16 (scaled to the element size:
    64 columns are 128 bytes); sometimes half a 128-byte row (not a map)."""
    bn = 64 if r.random() < 0.88 else r.choice([32, 128])
    if kind == "copy":
        return r.choice([4, 8, 16, 32]), bn, None
    return r.choice([16, 32, 64]), bn, 64 if r.random() < 0.88 else 32


def _matmul(g: _Gen) -> list[str]:
    r = g.r
    dtype, lib, dims, counts, batch, mapping = _common(g, _blocks(r, "matmul"))
    c_dtype = dtype if r.random() < 0.7 else "fp32"
    nk = g.feature("b_layout", "nk" if r.random() < 0.35 else "kn") == "nk"
    four = g.feature("four_groups", len(counts) >= 2 and r.random() < 0.12)
    a = _Mat("a", dims["M"], dims["K"], dtype, False)
    b = _Mat("b", dims["N"], dims["K"], dtype, False) if nk else \
        _Mat("b", dims["K"], dims["N"], dtype, False)
    c = _Mat("c", dims["M"], dims["N"], c_dtype, True)
    for m in (a, b, c):
        _layout(g, m, lib, batch, counts, bool(four) and m is a)
    g.feature("store", _pick(r, {"descriptor": 0.75, "pointer": 0.25}))
    places = {m.name: _place(g, m, m is not c) for m in (a, b, c)}
    for m in (a, b, c):
        if places[m.name] == "top":
            _make(g, m)
    _emit_programs(g, mapping, counts)
    for m in (a, b, c):
        if places[m.name] == "outer":
            _make(g, m)
    g.emit("acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)")
    tiles = g.feature("k_loop", _pick(r, {"tiles": 0.6, "elements": 0.4})) == "tiles"
    g.emit("for k in range(0, tl.cdiv(K, BLOCK_K)):" if tiles else
           "for k in range(0, K, BLOCK_K):")
    g.depth += 1
    kk = "k * BLOCK_K" if tiles else "k"
    for m in (a, b):
        if places[m.name] == "inner":
            _make(g, m)
    om, on = _origin(dims["M"], "pid_m"), _origin(dims["N"], "pid_n")
    g.emit(f"a = a_d.load([{om}, {kk}])")
    g.emit(f"b = b_d.load([{on}, {kk}])" if nk else f"b = b_d.load([{kk}, {on}])")
    bt = r.choice(["b.T", "tl.trans(b)"]) if nk else "b"
    g.emit(f"acc = tl.dot(a, {bt}, acc)" if r.random() < 0.7 else f"acc += tl.dot(a, {bt})")
    g.depth -= 1
    _epilogue(g, "acc")
    _store_c(g, c)
    return ["a_ptr", "b_ptr", "c_ptr"]


def _store_c(g: _Gen, c: _Mat) -> None:
    """The output's store; its descriptor made here unless made above."""
    made = any(line.lstrip().startswith(f"{c.name}_d = ") for line in g.lines)
    how = str(g.features["store"])
    if how == "descriptor" and not made:
        _make(g, c)
    _store_as(g, c, "acc" if c.name == "c" else "v", how)


def _store_as(g: _Gen, m: _Mat, value: str, how: str) -> None:
    r = g.r
    om, on = _origin(m.rows, "pid_m"), _origin(m.cols, "pid_n")
    cast = _pick(r, {"elem": 0.5, "named": 0.3, "none": 0.2})
    if how == "descriptor":
        v = {"elem": f"{value}.to({m.name}_ptr.dtype.element_ty)",
             "named": f"{value}.to({TL[m.dtype]})", "none": value}[cast]
        g.emit(f"{m.name}_d.store([{om}, {on}], {v})")
        return
    g.emit(f"offs_sm = {om} + tl.arange(0, {m.rows.block})")
    g.emit(f"offs_sn = {on} + tl.arange(0, {m.cols.block})")
    im, i_n = "offs_sm[:, None]", "offs_sn[None, :]"
    conj = [_upper(r, im, m.rows.size), _upper(r, i_n, m.cols.size)]
    conj += [_lower(r, im)] if m.rows.shift else []
    conj += [_lower(r, i_n)] if m.cols.shift else []
    ptr = _sum(r, _base(g, m), [f"{im} * {m.ld_src}", i_n])
    v = f"{value}.to({m.name}_ptr.dtype.element_ty)" if cast != "named" else \
        f"{value}.to({TL[m.dtype]})"
    g.emit(f"tl.store({ptr}, {v}, mask={_conj(r, conj)})")


def _copy(g: _Gen) -> list[str]:
    r = g.r
    dtype, lib, dims, counts, batch, mapping = _common(g, _blocks(r, "copy"))
    x = _Mat("x", dims["M"], dims["N"], dtype, False)
    y = _Mat("y", dims["M"], dims["N"], dtype if r.random() < 0.7 else "fp32", True)
    four = g.feature("four_groups", len(counts) >= 2 and r.random() < 0.12)
    for m in (x, y):
        _layout(g, m, lib, batch, counts, bool(four) and m is x)
    g.feature("store", _pick(r, {"descriptor": 0.75, "pointer": 0.25}))
    places = {m.name: _place(g, m, False) for m in (x, y)}
    for m in (x, y):
        if places[m.name] == "top":
            _make(g, m)
    _emit_programs(g, mapping, counts)
    for m in (x, y):
        if places[m.name] == "outer":
            _make(g, m)
    g.emit(f"v = x_d.load([{_origin(dims['M'], 'pid_m')}, {_origin(dims['N'], 'pid_n')}])")
    if g.feature("copy_f32", r.random() < 0.3):
        g.emit("v = v.to(tl.float32)")
    _epilogue(g, "v")
    _store_c(g, y)
    return ["x_ptr", "y_ptr"]


def desc_case(seed: int, i: int) -> Case:
    """Descriptor case i of `seed` (its own random stream)."""
    r = random.Random(f"tma-desc {seed} {i}")
    name = f"tma_desc_{seed}_{i}"
    g = _Gen(r, name)
    g.feature("descriptor", True)
    kind = "matmul" if r.random() < 0.65 else "copy"
    pointers = (_matmul if kind == "matmul" else _copy)(g)
    params = pointers + g.params
    sig = ", ".join(params + [f"{c}: tl.constexpr" for c in g.constexprs])
    source = "\n".join(["@tilec.kernel", f"def {name}({sig}):", *g.lines]) + "\n"
    return {"name": name, "kind": f"tma-desc-{kind}", "valid": True, "source": source,
            "params": params, "arrays": g.arrays, "scalars": g.scalars,
            "constexprs": g.constexprs, "grid": g.grid, "features": g.features}

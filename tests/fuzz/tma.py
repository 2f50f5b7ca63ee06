"""The fuzzer's `tma` mode: random Triton-style pointer kernels through the
CPU differential harness for `tile-tma-pointers` (tests/tma_emulation.py).

Each case is a generated matmul (A [M, K] @ B [K, N] -> C [M, N]) or copy
(X [M, N] -> f(X) -> Y) kernel written the ways the pass reasons about:
rows and columns wrapped by `% M` / `% N` (after or before `[:, None]`) or
masked, a wrap with the redundant conjunct `x % M < M` (`<= M - 1`,
`M > x`) or a near miss (`< M - 1`, `< N`, `% N < N`), K masks written
`offs_k < K - k * BLOCK_K`, `k * BLOCK_K + offs_k < K`, with `<=` / `>`
/ `>=`, one element short, or missing; loops over K tiles or over K itself,
pointers carried (`a_ptrs += BLOCK_K * stride_ak`) or recomputed each
step; strides as arguments (a row stride a multiple of 16 or not, a
contiguous stride the launch specializes to 1), constexpr constants, the
size argument itself (`rows * K`) or omitted (constexpr 1); terms of the
pointer sums in any order and grouping; row-major or transposed (K-major
B, column-major A or X); a batch offset `pid_b * stride_xb` (batch stride 0
for B, A one batch ahead), two, `off_z * s_z + off_h * s_h`, or three
(rank-5 maps); program ids
from a 2-D or 3-D grid (axes swapped), GROUP_M swizzled, or a persistent
loop over tiles (flattened or not); programs beyond the tile grid; negative
program origins (`pid * BLOCK - SHIFT`, see below); stores with both masks,
one, or none; elementwise epilogues, and reductions that make wrapped lanes
live; A's batch one ahead or one further each K step, its rows drifting
each K step or reversed (`M - 1 - rows`); Triton's hints and cache
keywords; fp16, bf16 (torch) and fp32 data in NaN-filled buffers
(misaligned bases sometimes).  A case passes when the plain and the
emulated CPU builds leave every byte of every buffer the same (and, with a
K-major tag, the pass's untagged IR too), and the GPU runtime would accept
every map for the launch's arguments; the number of accesses the pass
tagged is recorded (most cases should have one).

Excluded by construction (an intentional divergence, not a bug): a tagged
access whose block origin is below zero.  The pass's documented semantic
choice is that such a block reads zeros / stores nothing there, where the
pointer program reads or writes outside the tensor (`% M` of a negative
index is negative).  So negative origins are generated only on dimensions
whose every access is masked from below too (`0 <= offs`), which the pass
never takes as a map: the pointer semantics and the map's agree there
anyway.  Also excluded: programs beyond the tile grid under GROUP_M (their
group size is 0: `% 0`), and unmasked stores that could overlap another
program's (a race, not a mismatch).

    python -m tests.fuzz --mode tma --cases 1400 --seed 20261204 --budget 900 \\
        --out benchmarks/results/fuzz-tma-cpu-2026-12-04-session25.json

(about 0.7 s a case on one core: a plain and an emulated CPU build, two
launches).

Cases run in tests/fuzz/tma_run.py (the worker's side); a finding's case
(in the summary, with its `launch`) reruns in-process with
`tests.fuzz.tma_run.run_case(case, directory)`.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

Case = dict[str, Any]
DESCRIPTOR_FRACTION = 0.35   # of the cases: descriptor kernels (tests/fuzz/tma_desc.py)
EB = {"fp16": 2, "bf16": 2, "fp32": 4}
DTYPE = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}


# ---------------------------------------------------------------- source pieces
def _bcast(e: str, d: int) -> str:
    """`e` ([B]) broadcast as tile dimension d of a 2-D tile."""
    e = e if e.isidentifier() else f"({e})"
    return f"{e}[:, None]" if d == 0 else f"{e}[None, :]"


def _mul(r: random.Random, e: str, s: str | None) -> str:
    if s is None:
        return e
    return f"{e} * {s}" if r.random() < 0.6 else f"{s} * {e}"


def _sum(r: random.Random, base: str, terms: list[str]) -> str:
    """`base + terms` in a random order and grouping."""
    terms = [t for t in terms if t]
    r.shuffle(terms)
    if len(terms) >= 2 and r.random() < 0.5:
        k = r.randint(0, len(terms) - 2)
        terms[k:k + 2] = [f"({terms[k]} + {terms[k + 1]})"]
    return " + ".join([base, *terms])


def _upper(r: random.Random, i: str, bound: str, exact: bool = True) -> str:
    """A conjunct `i < bound` in one of its spellings."""
    b = bound if bound.isidentifier() else f"({bound})"
    forms = [f"{i} < {b}", f"{i} <= {b} - 1", f"{b} > {i}", f"{b} - 1 >= {i}"]
    return forms[0] if exact and r.random() < 0.4 else r.choice(forms)


def _lower(r: random.Random, i: str) -> str:
    return r.choice([f"{i} >= 0", f"0 <= {i}"])


def _conj(r: random.Random, parts: list[str]) -> str | None:
    if not parts:
        return None
    parts = list(parts)
    r.shuffle(parts)
    return " & ".join(f"({p})" for p in parts) if len(parts) > 1 else parts[0]


def _pick(r: random.Random, weights: dict[str, float]) -> str:
    return r.choices(list(weights), list(weights.values()))[0]


# ---------------------------------------------------------------- kernel state
@dataclass
class _Dim:
    """A problem dimension: its size argument, block, origin shift (> 0:
    negative program origins, every access masked from below) and reach
    (one past the largest index any lane can address)."""

    size: str
    block: str
    value: int
    bsize: int
    shift: int = 0
    reach: int = 0


@dataclass
class _Operand:
    """An array operand: its tile dimensions (problem dimension names), which
    tile dimension is contiguous in memory, how each stride is written."""

    name: str
    dims: tuple[str, str]
    contiguous: int
    forms: dict[int, str]
    batches: int = 0
    batch_zero: bool = False
    batch_extra: int = 0
    row_extra: int = 0
    misaligned: bool = False
    strides: dict[int, str | None] = field(default_factory=dict)
    batch_strides: list[str] = field(default_factory=list)


class _Gen:
    """One generated kernel: source lines, parameters, launch data."""

    def __init__(self, r: random.Random, name: str) -> None:
        self.r = r
        self.name = name
        self.params: list[str] = []
        self.constexprs: dict[str, int] = {}
        self.scalars: dict[str, int] = {}
        self.arrays: dict[str, dict[str, Any]] = {}
        self.features: dict[str, Any] = {}
        self.lines: list[str] = []
        self.depth = 1
        self.grid: list[int] = []

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def param(self, name: str, value: int) -> str:
        self.params.append(name)
        self.scalars[name] = value
        return name

    def constexpr(self, name: str, value: int) -> str:
        self.constexprs[name] = value
        return name

    def feature(self, key: str, value: Any) -> Any:
        self.features[key] = value
        return value


# ---------------------------------------------------------------- dimensions
def _index(g: _Gen, dim: _Dim, var: str, other: _Dim | None, origin: str,
           in_bounds: bool = False) -> tuple[str, list[str]]:
    """The index vector of `dim` for a loaded operand: (its broadcastable
    name or expression, its conjuncts as templates over `{i}`, the index as
    the access broadcasts it).  `in_bounds`: a form whose every lane that is
    not masked off lies in [0, size)."""
    r = g.r
    if dim.shift:
        form = "mask_lower"
    elif in_bounds:
        form = _pick(r, {"wrap": 0.4, "wrap_redundant": 0.3, "mask": 0.3})
    else:
        form = _pick(r, {"wrap": 0.32, "wrap_late": 0.1, "wrap_redundant": 0.2,
                         "wrap_near": 0.05, "mask": 0.3, "none": 0.03})
    g.feature(f"index_{var}", form)
    ar = f"tl.arange(0, {dim.block})"
    start = f"{origin} + {ar}" if r.random() < 0.7 else f"{ar} + {origin}"
    if form in ("wrap", "wrap_redundant", "wrap_near"):
        g.emit(f"{var} = ({start}) % {dim.size}")
    else:
        g.emit(f"{var} = {start}")
    # Triton's hints, only where they hold (the compiler trusts them: a wrapped
    # or shifted index is neither contiguous over the block nor a multiple of it).
    if g.feature(f"hints_{var}", r.random() < 0.08 and not dim.shift and
                 form not in ("wrap", "wrap_redundant", "wrap_near")):
        g.emit(f"{var} = tl.max_contiguous(tl.multiple_of({var}, {dim.block}), {dim.block})")
    conj: list[str] = []
    if form == "wrap_redundant":
        conj.append(r.choice(["{i} < S", "{i} <= S - 1", "S > {i}"]).replace("S", dim.size))
    elif form == "wrap_near":
        near = [f"{{i}} < {dim.size} - 1"]
        if other is not None:
            near += [f"{{i}} < {other.size}", f"({{i}} % {other.size}) < {other.size}"]
        conj.append(r.choice(near))
    elif form == "mask":
        conj.append(_upper(r, "{i}", dim.size))
    elif form == "mask_lower":
        conj += [_lower(r, "{i}"), _upper(r, "{i}", dim.size)]
    if form == "wrap_late":
        return f"{var} % {dim.size}", conj   # the remainder after [:, None]
    return var, conj


def _indexed(e: str, d: int) -> str:
    """Index `e` as tile dimension d; an `x % m` expression is wrapped after
    the broadcast: `(x[:, None] % m)`."""
    if " % " in e:
        x, m = e.split(" % ")
        return f"({_bcast(x, d)} % {m})"
    return _bcast(e, d)


def _reach(dims: dict[str, _Dim], grid_tiles: dict[str, int]) -> None:
    """Each dimension's reach: past the size, the tiles programs can address."""
    for name, dim in dims.items():
        tiles = grid_tiles.get(name, -(-max(dim.value, 1) // dim.bsize))
        dim.reach = max(dim.value, tiles * dim.bsize) + 1


# ---------------------------------------------------------------- operands and data
def _operand(g: _Gen, name: str, dims: tuple[str, str], transposed: float, batches: int,
             dim_ok: bool, store: bool = False) -> _Operand:
    r = g.r
    contiguous = 0 if r.random() < transposed else 1
    strided = 1 - contiguous
    forms = {contiguous: _pick(r, {"one": 0.6, "arg1": 0.4}),
             strided: _pick(r, {"arg": 0.9, "const": 0.03, "dim": 0.04 if dim_ok else 0.0,
                                "arg_odd": 0.03})}
    op = _Operand(name, dims, contiguous, forms, batches)
    op.misaligned = g.feature(f"{name}_base_misaligned", r.random() < 0.03)
    if batches and not store:
        op.batch_zero = name == "b" and r.random() < 0.25
    g.feature(f"{name}_layout", "row" if contiguous == 1 else "transposed")
    g.feature(f"{name}_strides", f"{forms[0]},{forms[1]}")
    return op


def _layout(g: _Gen, op: _Operand, dims: dict[str, _Dim], batch_counts: list[int],
            dtype: str, lib: str, output: bool) -> None:
    """Choose `op`'s buffer layout and stride arguments; record its array."""
    r = g.r
    c, s = op.contiguous, 1 - op.contiguous
    reach_c, reach_s = dims[op.dims[c]].reach, dims[op.dims[s]].reach + op.row_extra
    per_row = -(-reach_c // 16) * 16 + 16 * r.randint(0, 2)
    form = op.forms[s]
    if form == "arg_odd":
        per_row += r.choice([1, 3, 5, 7])
    if form == "dim":
        ld = dims[op.dims[c]].value
        per_row = ld
    ld = per_row
    for d in (0, 1):
        f = op.forms[d]
        if d == c:
            op.strides[d] = None if f == "one" else g.param(f"stride_{op.name}{op.dims[d].lower()}", 1)
        elif f == "const":
            op.strides[d] = g.constexpr(f"LD_{op.name.upper()}", ld)
        elif f == "dim":
            op.strides[d] = dims[op.dims[c]].size
        else:
            op.strides[d] = g.param(f"stride_{op.name}{op.dims[d].lower()}", ld)
    body = reach_s * max(ld, 1) + (reach_c if ld < reach_c else 0)
    per_batch = -(-body // 16) * 16
    if op.batches and r.random() < 0.02:
        per_batch += 8    # a batch stride that is no multiple of 16 elements
        g.feature(f"{op.name}_batch_stride", "odd")
    counts = list(batch_counts)
    if op.batch_extra:
        counts[0] += op.batch_extra
    bstrides: list[int] = []
    step = per_batch
    for n in reversed(counts):
        bstrides.insert(0, step)
        step *= n
    if op.batch_zero:
        bstrides[0] = 0
    names = ["b"] if op.batches == 1 else ["z", "h", "x"][:op.batches]
    op.batch_strides = [g.param(f"stride_{op.name}{n}", v) for n, v in zip(names, bstrides)]
    eb = EB[dtype]
    lead = (16 // eb) * r.randint(1, 4) + (r.randint(1, 16 // eb - 1) if op.misaligned else 0)
    total = lead + max(step, per_batch) + 2 * max(ld, 1) + 512
    elem = [ld if d == s else 1 for d in (0, 1)]
    sizes = [dims[op.dims[d]].value for d in (0, 1)]
    fill = [[1 if st == 0 else n, st] for n, st in zip(counts, bstrides)]
    fill += [[sizes[d], elem[d]] for d in (0, 1)]
    g.arrays[op.name + "_ptr"] = {"dtype": dtype, "lib": lib, "length": total, "lead": lead,
                                  "fill": None if output else fill}


def _pointer(g: _Gen, op: _Operand, index: dict[int, str], batch: list[str],
             extra: list[str] | None = None) -> str:
    """`op_ptr + batch terms + index_0 * s_0 + index_1 * s_1` (shuffled)."""
    r = g.r
    terms = [_mul(r, index[d], op.strides[d]) for d in (0, 1)]
    bt = [_mul(r, b, st) for b, st in zip(batch, op.batch_strides)]
    if bt:
        terms.append(bt[0] if len(bt) == 1 else _sum(r, bt[0], bt[1:]))
    return _sum(r, f"{op.name}_ptr", terms + (extra or []))


# ---------------------------------------------------------------- program ids
def _batch_counts(g: _Gen) -> list[int]:
    """The batch extents: [] (none), [nb] (`pid_b`), [Z, H] (`off_z`, `off_h`)."""
    r = g.r
    n = int(g.feature("batches", _pick(g.r, {"0": 0.42, "1": 0.33, "2": 0.17, "3": 0.08})))
    return [] if n == 0 else [r.randint(1, 3)] if n == 1 else \
        [r.randint(1, 2), r.randint(1, 3)] if n == 2 else [r.randint(1, 2) for _ in range(3)]


def _programs(g: _Gen, dims: dict[str, _Dim], counts: list[int], mapping: str
              ) -> tuple[list[int], dict[str, int]]:
    """Choose the grid (programs beyond the tile grid included where that is
    sound); (grid, the tiles each problem dimension's program ids span)."""
    r = g.r
    m, n = dims["M"], dims["N"]
    tiles_m = -(-(m.value + m.shift) // m.bsize)
    tiles_n = -(-(n.value + n.shift) // n.bsize)
    nbatch = 1
    for c in counts:
        nbatch *= c
    if mapping == "grid":
        em, en = (r.choice([0, 0, 1, 1, 2]) for _ in range(2))
        g.feature("beyond_grid", em + en > 0)
        grid = [tiles_m + em, tiles_n + en]
        if g.feature("axes_swapped", r.random() < 0.2):
            grid.reverse()
        return grid + ([nbatch] if counts else []), {"M": tiles_m + em, "N": tiles_n + en}
    own = {"M": -(-m.value // m.bsize), "N": -(-n.value // n.bsize)}
    if mapping == "group":
        g.constexpr("GROUP_M", r.choice([1, 2, 4]))
        total = own["M"] * own["N"]
        return [max(1, total - (r.randint(0, 2) if r.random() < 0.1 else 0))] + \
            ([nbatch] if counts else []), own
    g.constexpr("NUM_PROGS", r.randint(1, 5))
    return [r.randint(1, g.constexprs["NUM_PROGS"] + 2)], own


def _emit_programs(g: _Gen, mapping: str, counts: list[int]) -> list[str]:
    """The program-id lines (a persistent mapping opens its tile loop); the
    batch index expressions."""
    r = g.r
    batch_axis = {"grid": 2, "group": 1}.get(mapping)
    if mapping == "grid":
        axes = (1, 0) if g.features.get("axes_swapped") else (0, 1)
        g.emit(f"pid_m = tl.program_id({axes[0]})")
        g.emit(f"pid_n = tl.program_id({axes[1]})")
    elif mapping == "group":
        for line in ("pid = tl.program_id(0)", "num_pid_m = tl.cdiv(M, BLOCK_M)",
                     "num_pid_n = tl.cdiv(N, BLOCK_N)", "num_pid_in_group = GROUP_M * num_pid_n",
                     "group_id = pid // num_pid_in_group", "first_pid_m = group_id * GROUP_M",
                     "group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)",
                     "pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)",
                     "pid_n = (pid % num_pid_in_group) // group_size_m"):
            g.emit(line)
    else:
        g.emit("num_pid_m = tl.cdiv(M, BLOCK_M)")
        g.emit("num_pid_n = tl.cdiv(N, BLOCK_N)")
        g.emit("per = num_pid_m * num_pid_n")
        total = "per * NB" if counts else "per"
        flat = g.feature("flatten", r.random() < 0.5)
        loop = f"tl.range(tl.program_id(0), {total}, NUM_PROGS, flatten=True)" if flat else \
            f"range(tl.program_id(0), {total}, NUM_PROGS)"
        g.emit(f"for tile_id in {loop}:")
        g.depth += 1
        g.emit("pid_m = (tile_id % per) // num_pid_n")
        g.emit("pid_n = (tile_id % per) % num_pid_n")
    if not counts:
        return []
    source = f"tl.program_id({batch_axis})" if batch_axis is not None else "tile_id // per"
    if len(counts) == 1:
        g.emit(f"pid_b = {source}")
        return ["pid_b"]
    g.emit(f"zh = {source}")
    if len(counts) == 3:   # zh = (z H + h) X + x
        g.emit("off_x = zh % X")
        g.emit("zh = zh // X")
    g.emit("off_z = zh // H")
    g.emit("off_h = zh % H")
    return ["off_z", "off_h", "off_x"][:len(counts)]


def _batch_params(g: _Gen, counts: list[int], mapping: str) -> None:
    """H (and X) that split the batch program id; NB, the batches a
    persistent loop walks."""
    for name, n in zip(("H", "X"), counts[1:]):
        g.param(name, n)
    if mapping == "persistent" and counts:
        total = 1
        for n in counts:
            total *= n
        g.param("NB", total)


def _dims(g: _Gen, bm: int, bn: int, bk: int | None) -> dict[str, _Dim]:
    r = g.r
    dims = {"M": _Dim("M", "BLOCK_M", r.randint(1, 3 * bm + 3), bm),
            "N": _Dim("N", "BLOCK_N", r.randint(1, 2 * bn + 5), bn)}
    if bk is not None:
        kind = _pick(r, {"zero": 0.08, "below_block": 0.2, "ragged": 0.5, "multiple16": 0.22})
        g.feature("k_size", kind)
        k = {"zero": 0, "below_block": r.randint(1, bk - 1), "ragged": r.randint(bk, 2 * bk + 7),
             "multiple16": 16 * r.randint(1, 2 * bk // 16)}[kind]
        dims["K"] = _Dim("K", "BLOCK_K", k, bk)
    for name in ("M", "N"):
        if r.random() < 0.05:   # negative program origins, masked from below everywhere
            dims[name].shift = r.randint(1, dims[name].bsize - 1)
            g.constexpr(f"SHIFT_{name}", dims[name].shift)
    g.feature("negative_origin", any(d.shift for d in dims.values()))
    return dims


def _origin(dim: _Dim, pid: str) -> str:
    return f"{pid} * {dim.block}" + (f" - SHIFT_{dim.size}" if dim.shift else "")


def _store_conj(g: _Gen, dim: _Dim, idx: str) -> list[str]:
    r = g.r
    if dim.shift:
        return [_lower(r, idx), _upper(r, idx, dim.size)]
    masked = g.feature(f"store_mask_{dim.size}", r.random() < 0.94)
    return [_upper(r, idx, dim.size)] if masked else []


def _other(g: _Gen, load: str, mask: str | None) -> str:
    """The keywords of a load: mask, other, cache hints (which leave nothing
    in the IR)."""
    hint = _hint(g, load, ['cache_modifier=".cg"', 'eviction_policy="evict_last"'])
    if mask is None:
        return hint
    other = g.feature(f"{load}_other", _pick(g.r, {"absent": 0.3, "0.0": 0.56, "0": 0.1,
                                                   "1.0": 0.02, "-0.0": 0.02}))
    return f", mask={mask}" + ("" if other == "absent" else f", other={other}") + hint


def _hint(g: _Gen, access: str, choices: list[str]) -> str:
    if not g.feature(f"{access}_cache_hint", g.r.random() < 0.08):
        return ""
    return ", " + g.r.choice(choices)


def _epilogue(g: _Gen, v: str) -> None:
    form = g.feature("epilogue", _pick(g.r, {"none": 0.35, "scale": 0.15, "relu": 0.15,
                                              "bias": 0.12, "where": 0.15, "colsum": 0.04,
                                              "rowsum": 0.04}))
    line = {"scale": f"{v} = {v} * 0.5", "relu": f"{v} = tl.maximum({v}, 0.0)",
            "bias": f"{v} = {v} + 1.0", "where": f"{v} = tl.where({v} > 0.0, {v}, {v} * 0.25)",
            "colsum": f"{v} = {v} + tl.sum({v}, axis=0)[None, :]",
            "rowsum": f"{v} = {v} + tl.sum({v}, axis=1)[:, None]"}.get(form)
    if line:
        g.emit(line)


# ---------------------------------------------------------------- kernels
def _blocks(g: _Gen, dtype: str, a_t: bool) -> tuple[int, int, int]:
    r = g.r
    wide = 128 // EB[dtype]
    bm = wide if a_t else r.choice([16, 32])
    bn = wide // 2 if r.random() < 0.03 else 2 * wide if dtype == "fp32" and r.random() < 0.1 \
        else wide
    bk = wide if r.random() < 0.96 else wide // 2
    return bm, bn, bk


def _matmul(g: _Gen) -> None:
    r = g.r
    dtype = g.feature("dtype", _pick(r, {"fp16": 0.45, "bf16": 0.3, "fp32": 0.25}))
    lib = "torch" if dtype == "bf16" or r.random() < 0.15 else "numpy"
    c_dtype = dtype if r.random() < 0.7 else "fp32"
    mapping = g.feature("mapping", _pick(r, {"grid": 0.55, "group": 0.2, "persistent": 0.25}))
    counts = _batch_counts(g)
    a_t = r.random() < 0.06
    bm, bn, bk = _blocks(g, dtype, a_t)
    g.feature("blocks", f"{bm}x{bn}x{bk}")
    for name, v in (("BLOCK_M", bm), ("BLOCK_N", bn), ("BLOCK_K", bk)):
        g.constexpr(name, v)
    dims = _dims(g, bm, bn, bk)
    grid, tiles = _programs(g, dims, counts, mapping)
    _reach(dims, tiles)
    for d in ("M", "N", "K"):
        g.param(d, dims[d].value)
    _batch_params(g, counts, mapping)
    store_m = _store_conj(g, dims["M"], "{i}")
    store_n = _store_conj(g, dims["N"], "{i}")
    carried = g.feature("pointers", _pick(r, {"carried": 0.55, "recomputed": 0.45}))
    one = len(counts) == 1
    move = g.feature("a_move", _pick(r, {
        "none": 0.84, "ahead": 0.04 if one else 0.0,              # batch pid_b + 1
        "step": 0.04 if one and carried == "carried" else 0.0,   # batch pid_b + k
        "drift": 0.04 if carried == "carried" and not a_t else 0.0,   # rows + k
        "reversed": 0.04 if not a_t and not dims["M"].shift else 0.0}))   # M - 1 - rows
    a = _operand(g, "a", ("M", "K"), 1.0 if a_t else 0.0, len(counts), True)
    steps = -(-dims["K"].value // bk)
    a.batch_extra = {"ahead": 1, "step": steps}.get(move, 0)
    a.row_extra = steps if move == "drift" else 0
    b = _operand(g, "b", ("K", "N"), 0.35, len(counts), True)
    c_t = r.random() < 0.03
    c = _operand(g, "c", ("M", "N"), 1.0 if c_t else 0.0, len(counts),
                 bool(store_m if c_t else store_n), store=True)
    for op, dt, out in ((a, dtype, False), (b, dtype, False), (c, c_dtype, True)):
        _layout(g, op, dims, counts, dt, lib, out)
    batch = _emit_programs(g, mapping, counts)
    am, am_conj = _index(g, dims["M"], "offs_am", dims["N"], _origin(dims["M"], "pid_m"),
                         move == "reversed")
    bn_, bn_conj = _index(g, dims["N"], "offs_bn", dims["M"], _origin(dims["N"], "pid_n"))
    g.emit("offs_k = tl.arange(0, BLOCK_K)")
    _k_loop(g, a, b, batch, (am, am_conj), (bn_, bn_conj), carried, move)
    _epilogue(g, "acc")
    _store(g, c, "c", "acc", dims, (store_m, store_n), batch)
    g.grid = grid


def _store(g: _Gen, out: _Operand, name: str, value: str, dims: dict[str, _Dim],
           conjuncts: tuple[list[str], list[str]], batch: list[str]) -> None:
    """The epilogue's store of `value` into operand `name` at the program's
    tile (offs_<name>m / offs_<name>n), masked by the store conjuncts."""
    g.emit(f"offs_{name}m = {_origin(dims['M'], 'pid_m')} + tl.arange(0, BLOCK_M)")
    g.emit(f"offs_{name}n = {_origin(dims['N'], 'pid_n')} + tl.arange(0, BLOCK_N)")
    im, i_n = _bcast(f"offs_{name}m", 0), _bcast(f"offs_{name}n", 1)
    ptr = _pointer(g, out, {0: im, 1: i_n}, batch)
    mask = _conj(g.r, [t.replace("{i}", im) for t in conjuncts[0]]
                 + [t.replace("{i}", i_n) for t in conjuncts[1]])
    hint = _hint(g, name, ['cache_modifier=".cs"', 'eviction_policy="evict_first"'])
    g.emit(f"tl.store({ptr}, {value}.to({name}_ptr.dtype.element_ty)"
           + (f", mask={mask}" if mask else "") + hint + ")")


def _k_loop(g: _Gen, a: _Operand, b: _Operand, batch: list[str],
            am: tuple[str, list[str]], bn: tuple[str, list[str]], carried: str,
            move: str) -> None:
    """The K loop: A [BLOCK_M, BLOCK_K] and B [BLOCK_K, BLOCK_N] tiles, the
    dot; A's `move` (see `_matmul`)."""
    r = g.r
    over_k = g.feature("loop", _pick(r, {"tiles": 0.6, "elements": 0.4}))
    kk = "k * BLOCK_K" if over_k == "tiles" else "k"
    k_mask = g.feature("k_mask", _pick(r, {"offs": 0.47, "sum": 0.43, "short": 0.06,
                                           "none": 0.04}))
    a_batch = ["(pid_b + 1)"] if move == "ahead" else batch

    def ptr(op: _Operand, other: str, od: int, bt: list[str]) -> str:
        kd = 1 - od
        rev = op.name == "a" and move == "reversed"
        idx = {od: _bcast(f"M - 1 - {other}", od) if rev else _indexed(other, od)}
        if carried == "carried":
            idx[kd] = _bcast("offs_k", kd)
            return _pointer(g, op, idx, bt)
        if r.random() < 0.5:
            idx[kd] = _bcast(f"{kk} + offs_k", kd)
            return _pointer(g, op, idx, bt)
        idx[kd] = _bcast("offs_k", kd)
        return _pointer(g, op, idx, bt, [_mul(r, kk, op.strides[kd])])

    def mask(od: int, other: tuple[str, list[str]]) -> str | None:
        kd = 1 - od
        conj = [t.replace("{i}", _indexed(other[0], od)) for t in other[1]]
        if k_mask == "offs":
            conj.append(_upper(r, _bcast("offs_k", kd), f"K - {kk}"))
        elif k_mask == "sum":
            conj.append(_upper(r, _bcast(f"{kk} + offs_k", kd), "K"))
        elif k_mask == "short":
            conj.append(_upper(r, _bcast("offs_k", kd), f"K - {kk} - 1"))
        return _conj(r, conj)

    if carried == "carried":
        g.emit(f"a_ptrs = {ptr(a, am[0], 0, a_batch)}")
        g.emit(f"b_ptrs = {ptr(b, bn[0], 1, batch)}")
    g.emit("acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)")
    g.emit("for k in range(0, tl.cdiv(K, BLOCK_K)):" if over_k == "tiles" else
           "for k in range(0, K, BLOCK_K):")
    g.depth += 1
    if carried == "recomputed":
        g.emit(f"a_ptrs = {ptr(a, am[0], 0, a_batch)}")
        g.emit(f"b_ptrs = {ptr(b, bn[0], 1, batch)}")
    g.emit(f"a = tl.load(a_ptrs{_other(g, 'a', mask(0, am))})")
    g.emit(f"b = tl.load(b_ptrs{_other(g, 'b', mask(1, bn))})")
    g.emit("acc = tl.dot(a, b, acc)" if r.random() < 0.7 else "acc += tl.dot(a, b)")
    if carried == "carried":
        for op, kd in ((a, 1), (b, 0)):
            s = op.strides[kd]
            g.emit(f"{op.name}_ptrs += " + ("BLOCK_K" if s is None else _mul(r, "BLOCK_K", s)))
        if move in ("step", "drift"):
            g.emit(f"a_ptrs += {a.batch_strides[0] if move == 'step' else a.strides[0]}")
    g.depth -= 1


def _copy(g: _Gen) -> None:
    """Y = f(X) tile by tile (X maybe transposed), both indices maybe wrapped."""
    r = g.r
    dtype = g.feature("dtype", _pick(r, {"fp16": 0.45, "bf16": 0.3, "fp32": 0.25}))
    lib = "torch" if dtype == "bf16" or r.random() < 0.15 else "numpy"
    wide = 128 // EB[dtype]
    mapping = g.feature("mapping", _pick(r, {"grid": 0.7, "persistent": 0.3}))
    counts = _batch_counts(g)
    x_t = r.random() < 0.25
    bm = wide if x_t else r.choice([8, 16, 32])
    bn = wide if r.random() < 0.9 else (2 * wide if dtype == "fp32" else wide // 2)
    g.feature("blocks", f"{bm}x{bn}")
    g.constexpr("BLOCK_M", bm)
    g.constexpr("BLOCK_N", bn)
    dims = _dims(g, bm, bn, None)
    grid, tiles = _programs(g, dims, counts, mapping)
    _reach(dims, tiles)
    g.param("M", dims["M"].value)
    g.param("N", dims["N"].value)
    _batch_params(g, counts, mapping)
    store_m = _store_conj(g, dims["M"], "{i}")
    store_n = _store_conj(g, dims["N"], "{i}")
    x = _operand(g, "x", ("M", "N"), 1.0 if x_t else 0.0, len(counts), True)
    y = _operand(g, "y", ("M", "N"), 0.0, len(counts), bool(store_n), store=True)
    _layout(g, x, dims, counts, dtype, lib, False)
    _layout(g, y, dims, counts, dtype if r.random() < 0.7 else "fp32", lib, True)
    batch = _emit_programs(g, mapping, counts)
    xm, xm_conj = _index(g, dims["M"], "offs_xm", dims["N"], _origin(dims["M"], "pid_m"))
    xn, xn_conj = _index(g, dims["N"], "offs_xn", dims["M"], _origin(dims["N"], "pid_n"))
    im, i_n = _indexed(xm, 0), _indexed(xn, 1)
    conj = [t.replace("{i}", im) for t in xm_conj] + [t.replace("{i}", i_n) for t in xn_conj]
    g.emit(f"v = tl.load({_pointer(g, x, {0: im, 1: i_n}, batch)}{_other(g, 'x', _conj(r, conj))})")
    _epilogue(g, "v")
    _store(g, y, "y", "v", dims, (store_m, store_n), batch)
    g.grid = grid


def tma_case(seed: int, i: int) -> Case:
    """Case i of `seed` (independent of how many cases a run makes): a
    descriptor kernel (tests/fuzz/tma_desc.py) for DESCRIPTOR_FRACTION of
    them, chosen by a stream of its own (a pointer case i is what it was)."""
    if random.Random(f"tma-kind {seed} {i}").random() < DESCRIPTOR_FRACTION:
        from .tma_desc import desc_case
        return desc_case(seed, i)
    r = random.Random(seed * 1_000_003 + i)
    name = f"tma_{seed}_{i}"
    g = _Gen(r, name)
    kind = "matmul" if r.random() < 0.7 else "copy"
    (_matmul if kind == "matmul" else _copy)(g)
    pointers = [p for p in ("a_ptr", "b_ptr", "c_ptr", "x_ptr", "y_ptr") if p in g.arrays]
    params = pointers + g.params
    sig = ", ".join(params + [f"{c}: tl.constexpr" for c in g.constexprs])
    source = "\n".join(["@tilec.kernel", f"def {name}({sig}):", *g.lines]) + "\n"
    return {"name": name, "kind": f"tma-{kind}", "valid": True, "source": source,
            "params": params, "arrays": g.arrays, "scalars": g.scalars,
            "constexprs": g.constexprs, "grid": g.grid,
            "features": {**g.features, "descriptor": False}}

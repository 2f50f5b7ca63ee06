"""Static AMD code comparison with Triton 3.9 on gfx942 (no AMD GPU needed).

The tutorial-03 matmul (benchmarks/matmul_kernels.py `mm_tutorial`, fp16 and
OCP fp8 e4m3 operands, 128x128x64 and 256x256x64 blocks, 8 warps, GROUP_M 8,
num_stages 2 (Triton's AMD default: one LDS buffer) and for 128x128x64 also 3;
fp16 and fp8 128x128x64 on gfx950 and fp16 on gfx1100 too), vector add (fp32, BLOCK 1024, 4 warps)
and the row softmax of examples/softmax.py (fp32, BLOCK 1024, 4 warps),
compiled by tilec and by Triton 3.9 (`GPUTarget("hip", chip, wave size)`, the same
num_warps and num_stages, 16-divisible integer arguments and pointers
marked `tt.divisibility` 16 as a real launch would), printed side by side:
MFMA instructions per K step (one BLOCK_K iteration of the main loop) and
their kind, VGPR + AGPR, SGPR, LDS bytes, scratch bytes, code-object
instruction count, instructions of the main loop, global access widths, waves
per SIMD (registers and LDS), and a roofline estimate at MI300X peaks
(`roofline`: matrix-core vs LDS vs HBM cycles per CU per K step; gfx942 rows
only), and the attention forward of examples/attention.py (d = 128, fp16,
non-causal, tensor descriptors; its Triton twin `t_attn_fwd` is the example's
source with the decorators changed) at the example's launch config (BLOCK_M 128,
BLOCK_N 64, 8 warps, num_stages 4) and at Triton's usual AMD config (4 warps,
num_stages 2).  Triton runs in its own interpreter (it need not share
tilec's environment), given with --triton-python.

    .venv/bin/python benchmarks/static_amd_vs_triton.py --triton-python /tmp/tv/bin/python \
        [--json benchmarks/results/static-amd-<date>.json]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from typing import Any, NamedTuple

import tilec
import tilec.language as tl
from tilec.passes.analysis.matrix_tiling import choose
from tilec.targets import TARGETS

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from matmul_kernels import mm_tutorial  # noqa: E402

sys.path.insert(0, os.path.join(HERE, os.pardir, "examples"))
from softmax import softmax_kernel  # noqa: E402
from attention import _SIG as ATTN_SIG, _attn_fwd  # noqa: E402

# (name, kernel, types, constexprs, num_warps, 16-divisible argument indices)
MM_TYPES = ["*fp16", "*fp16", "*fp16", "i32", "i32", "i32", "i32", "i32", "i32", "i32", "i32",
            "i32"]
MM_DIV = [0, 1, 2, 3, 4, 5, 6, 8, 10]         # unit strides (7, 9, 11) are specialized to 1
MM_FP8 = ["*fp8e4nv", "*fp8e4nv"] + MM_TYPES[2:]
_MM128 = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}
_MM256 = {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}
_ATTN_TYPES = [t.split(":")[0] for t in ATTN_SIG.format(t="fp16").split(",")]
_ATTN_DIV = [i for i, t in enumerate(ATTN_SIG.split(",")) if t.endswith(":16")]
_ATTN = {"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": 0}


class Case(NamedTuple):
    name: str
    kind: str                  # "mm", "add", "softmax" or "attn"
    types: list[str]
    cx: dict[str, int]         # constexprs
    warps: int
    div: list[int]             # 16-divisible argument indices
    stages: int = 2            # both compilers get the same num_stages (2: Triton's AMD default)
    target: str = "gfx942"


CASES: list[Case] = [
    Case("matmul fp16 128x128x64", "mm", MM_TYPES, _MM128, 8, MM_DIV),
    Case("matmul fp16 128x128x64 num_stages=3", "mm", MM_TYPES, _MM128, 8, MM_DIV, 3),
    Case("matmul fp16 256x256x64", "mm", MM_TYPES, _MM256, 8, MM_DIV),
    # OCP e4m3 operands (torch.float8_e4m3fn): gfx942's fp8 MFMA takes FNUZ
    # e4m3, so both compilers widen OCP fp8 to f16 there; gfx950 has OCP fp8 MFMA.
    Case("matmul fp8e4nv 128x128x64", "mm", MM_FP8, _MM128, 8, MM_DIV),
    Case("matmul fp8e4nv 256x256x64", "mm", MM_FP8, _MM256, 8, MM_DIV),
    Case("matmul fp8e4nv 128x128x64 gfx950", "mm", MM_FP8, _MM128, 8, MM_DIV, 2, "gfx950"),
    Case("matmul fp16 128x128x64 gfx950", "mm", MM_TYPES, _MM128, 8, MM_DIV, 2, "gfx950"),
    # RDNA3, wave32: WMMA.
    Case("matmul fp16 128x128x64 gfx1100", "mm", MM_TYPES, _MM128, 8, MM_DIV, 2, "gfx1100"),
    Case("vector add fp32 1024", "add", ["*fp32", "*fp32", "*fp32", "i32"], {"BLOCK": 1024}, 4,
         [0, 1, 2, 3]),
    # Triton's fused-softmax tutorial kernel, one row per program.
    Case("softmax fp32 1024", "softmax", ["*fp32", "*fp32", "i32", "i32", "i32"],
         {"BLOCK": 1024}, 4, [0, 1, 2, 3]),
    # examples/attention.py's forward, d = 128: one K step is one BLOCK_N block of
    # keys (two dots); FWD_CONFIG[128] there, then Triton's AMD tutorial config.
    Case("attention fwd fp16 d128 128x64", "attn", _ATTN_TYPES, _ATTN, 8, _ATTN_DIV, 4),
    Case("attention fwd fp16 d128 128x64 4 warps", "attn", _ATTN_TYPES, _ATTN, 4, _ATTN_DIV, 2),
    Case("attention fwd fp16 d128 128x64 gfx1100", "attn", _ATTN_TYPES, _ATTN, 8, _ATTN_DIV, 4,
         "gfx1100"),
]


def amdgcn_stats(asm: str) -> dict[str, Any]:
    """Counts from one kernel's AMDGCN text and its code-object metadata."""
    def meta(key: str) -> int:
        m = re.search(rf"\.{key}:\s+(\d+)", asm)
        return int(m.group(1)) if m else -1
    start = asm.index(":\n", asm.index(".type"))
    body = asm[start:asm.index(".Lfunc_end")]
    instrs = [ln.strip() for ln in body.splitlines()
              if re.match(r"[a-z_][0-9a-z_]*\b", ln.strip()) and not ln.strip().startswith(".")]
    mfma: dict[str, int] = {}
    for ln in instrs:
        m = re.match(r"(v_(?:mfma|wmma)\w+)", ln)
        if m:
            mfma[m.group(1)] = mfma.get(m.group(1), 0) + 1
    # The main loop: the block ending in the backward branch that holds the MFMAs.
    loop_mfma = 0
    labels = [m for m in re.finditer(r"^(\.LBB\w+):", body, re.M)]
    for lab in labels:
        back = re.search(rf"s_cbranch_\w+\s+{re.escape(lab.group(1))}\b", body[lab.end():])
        if back:
            seg = body[lab.end():lab.end() + back.start()]
            loop_mfma = max(loop_mfma, len(re.findall(r"^\s*v_(?:mfma|wmma)", seg, re.M)))
    # The main loop: the block ending in the backward branch with the most MFMAs
    # (else the longest loop), its instructions counted.
    loop_len = 0
    best = -1
    for lab in labels:
        back = re.search(rf"s_cbranch_\w+\s+{re.escape(lab.group(1))}\b", body[lab.end():])
        if back:
            seg = body[lab.end():lab.end() + back.start()]
            n_mfma = len(re.findall(r"^\s*v_(?:mfma|wmma)", seg, re.M))
            n = len([ln for ln in seg.splitlines() if re.match(r"\s*[a-z_][0-9a-z_]*\b", ln)
                     and not ln.strip().startswith(".")])
            if (n_mfma, n) > (best, loop_len):
                best, loop_len = n_mfma, n
    widths: dict[str, int] = {}
    for ln in instrs:
        m = re.match(r"((?:global|buffer)_(?:load|store)_\w+)", ln)
        if m:
            widths[m.group(1)] = widths.get(m.group(1), 0) + 1
    vgpr, agpr = meta("vgpr_count"), max(0, meta("agpr_count"))
    # CDNA2+ (a kernel descriptor with an accum_offset): one register file,
    # `.vgpr_count` already counts the AGPRs (after the VGPRs, from
    # accum_offset on); elsewhere the two are apart.
    total = vgpr if ".amdhsa_accum_offset" in asm else vgpr + agpr
    return {"mfma_kinds": mfma, "mfma_per_k_step": loop_mfma, "vgpr": total - agpr,
            "agpr": agpr, "vgpr_plus_agpr": total, "sgpr": meta("sgpr_count"),
            "lds_bytes": meta("group_segment_fixed_size"),
            "scratch_bytes": meta("private_segment_fixed_size"), "instructions": len(instrs),
            "loop_instructions": loop_len, "global_accesses": widths}


@tilec.kernel
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


def tilec_asm(kind: str, types: list[str], cx: dict[str, int], warps: int,
              div: list[int], stages: int = 2, target: str = "gfx942") -> str:
    fn = {"mm": mm_tutorial, "add": add, "softmax": softmax_kernel, "attn": _attn_fwd}[kind]
    names = fn.runtime_names()
    sig = {}
    for i, (n, t) in enumerate(zip(names, types)):
        unit = kind == "mm" and i in (7, 9, 11)
        sig[n] = t + ("=1" if unit else ":16" if i in div else ":1" if kind != "attn" else "")
    if kind == "attn":
        cx = {**cx, "CAUSAL": bool(cx["CAUSAL"])}
    return str(fn.compile(target=target, signature=sig, constexprs=cx, num_warps=warps,
                           num_stages=stages).asm["amdgcn"])


_TRITON_CHILD = r'''
import json, sys, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, sys.argv[1])
import triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

sys.path.insert(0, sys.argv[3])
from triton_twin import t_attn_fwd, t_mm_tutorial


@triton.jit
def t_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

@triton.jit
def t_softmax(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x = x.to(tl.float32)
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, num / den, mask=mask)

kind, types, cx, warps, div, stages, chip, wave = json.loads(sys.argv[2])
fn = {"mm": t_mm_tutorial, "add": t_add, "softmax": t_softmax, "attn": t_attn_fwd}[kind]
sig = {n: t for n, t in zip(fn.arg_names, types)}
if kind == "mm":
    for i in (7, 9, 11):
        sig[fn.arg_names[i]] = "constexpr"
consts = dict(cx)
if kind == "attn":
    consts["CAUSAL"] = bool(consts["CAUSAL"])
if kind == "mm":
    consts.update({fn.arg_names[i]: 1 for i in (7, 9, 11)})
sig.update({k: "constexpr" for k in cx})
attrs = {(i,): [["tt.divisibility", 16]] for i in div}
k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs),
                   target=GPUTarget("hip", chip, wave), options={"num_warps": warps, "num_stages": stages})
print(json.dumps({"amdgcn": k.asm["amdgcn"], "version": triton.__version__,
                  "shared": k.metadata.shared, "ttgir": k.asm["ttgir"]}))
'''


def _triton_twin_source() -> str:
    """The Triton twin of `mm_tutorial`, as matmul_kernels.py writes it (that
    module imports tilec, which Triton's environment need not have)."""
    text = open(os.path.join(HERE, "matmul_kernels.py")).read()
    start = text.index("    @triton.jit\n    def t_mm_tutorial")
    body = text[start:text.index("except ImportError", start)]
    return "import triton\nimport triton.language as ttl\n\n\n" + textwrap.dedent(body) + \
        _attention_twin_source()


def _attention_twin_source() -> str:
    """The Triton twin of examples/attention.py's forward: its `_fwd_blocks` and
    `_attn_fwd` with the decorators changed (`tl` is Triton's language there),
    as `t_attn_fwd`."""
    text = open(os.path.join(HERE, "..", "examples", "attention.py")).read()
    start = text.index("@tilec.jit\ndef _fwd_blocks")
    body = text[start:text.index("@tilec.kernel\ndef _attn_bwd_preprocess", start)]
    body = body.replace("@tilec.jit", "@triton.jit").replace("@tilec.kernel", "@triton.jit")
    return "\n\nimport triton.language as tl\n\n\n" + body + "\nt_attn_fwd = _attn_fwd\n"


def triton_asm(py: str, kind: str, types: list[str], cx: dict[str, int], warps: int,
               div: list[int], stages: int, target: str) -> tuple[str, str, int, str]:
    """Triton's AMDGCN, version, LDS bytes (dynamic: not in the code object)
    and TTGIR."""
    with tempfile.TemporaryDirectory() as d:     # @triton.jit needs a source file
        child = os.path.join(d, "triton_child.py")
        with open(child, "w") as f:
            f.write(_TRITON_CHILD)
        twin = os.path.join(d, "triton_twin.py")
        with open(twin, "w") as f:
            f.write(_triton_twin_source())
        run = subprocess.run([py, child, HERE, json.dumps([kind, types, cx, warps, div, stages, target,
                                                    TARGETS[target].warp_size]), d],
                             capture_output=True, text=True)
    if run.returncode:
        raise SystemExit(f"Triton failed:\n{run.stderr[-3000:]}")
    out = run.stdout
    d = json.loads(out.strip().splitlines()[-1])
    return d["amdgcn"], d["version"], d["shared"], d["ttgir"]


def triton_dot_layouts(ttgir: str, warps: int) -> list[dict[str, Any]]:
    """Per distinct `tt.dot` of Triton's TTGIR on an `#ttg.amd_mfma` layout: its
    result shape, K, warpsPerCTA and instruction, how many warps compute each
    result element (`copies`: warpsPerCTA times the instruction tile exceeding
    the result along a dimension replicates it) and the MFMAs per warp with
    and without the copies (one K step: one execution of the dot)."""
    mmas = {}
    for m in re.finditer(r"^#(\w+) = #ttg\.amd_mfma<\{[^\n]*?warpsPerCTA = \[(\d+), (\d+)\],"
                         r" instrShape = \[(\d+), (\d+), (\d+)\]", ttgir, re.M):
        mmas[m.group(1)] = tuple(int(m.group(i)) for i in range(2, 7))
    out: list[dict[str, Any]] = []
    for m in re.finditer(r"tt\.dot [^\n]*?: tensor<(\d+)x(\d+)x\w+, #ttg\.dot_op[^\n]*?"
                         r"-> tensor<(\d+)x(\d+)x\w+, #(\w+)>", ttgir):
        name = m.group(5)
        if name not in mmas:
            continue
        k, rows, cols = int(m.group(2)), int(m.group(3)), int(m.group(4))
        wm, wn, im, in_, ik = mmas[name]
        copies = max(1, wm * im // rows) * max(1, wn * in_ // cols)
        per_warp = max(1, rows // (wm * im)) * max(1, cols // (wn * in_)) * (k // ik)
        row = {"dot": f"{rows}x{cols} (K {k})", "warpsPerCTA": [wm, wn],
               "instrShape": [im, in_, ik], "copies": copies, "mfma_per_warp": per_warp,
               "distinct_mfma_per_warp": rows * cols * k // (im * in_ * ik) // warps}
        if row not in out:
            out.append(row)
    return out


def duplication_note(layouts: list[dict[str, Any]], ours: int) -> str | None:
    """A sentence where Triton's layouts compute result elements in several
    warps (its MFMA count per K step then exceeds the distinct work)."""
    dup = [d for d in layouts if d["copies"] > 1]
    if not dup:
        return None
    distinct = sum(d["distinct_mfma_per_warp"] for d in layouts)
    parts = "; ".join(f"its {d['dot']} dot has warpsPerCTA {d['warpsPerCTA']} with "
                      f"{d['instrShape'][0]}x{d['instrShape'][1]} instructions: each element "
                      f"computed by {d['copies']} warps ({d['mfma_per_warp']} MFMAs per warp "
                      f"for {d['distinct_mfma_per_warp']} distinct)" for d in dup)
    return (f"Triton computes duplicated rows ({parts}): its distinct MFMAs per K step "
            f"are {distinct} per warp, tilec's {ours} (no copies)")


# MI300X (AMD CDNA3 white paper / instinct data sheet): 304 CUs at 2.1 GHz peak
# engine clock, 1307.4 TFLOP/s dense fp16/bf16 matrix (2614.9 fp8), 5.3 TB/s HBM3,
# LDS 64 KiB per CU at 128 bytes per clock, 512 VGPRs+AGPRs per SIMD lane.
MI300X = {"cus": 304, "clock_hz": 2.1e9, "fp16_flops": 1307.4e12, "fp8_flops": 2614.9e12,
          "hbm_bytes_s": 5.3e12, "lds_bytes_per_clk_cu": 128, "regs_per_simd_lane": 512,
          "lds_per_cu": 65536}


def occupancy(s: dict[str, Any], warps: int, lds_per_cu: int) -> int:
    # (CDNA's register file: a wave32 RDNA3 row's waves per SIMD are a rough figure.)
    """Waves per SIMD the registers (granule 8) and the LDS allow (at most 8);
    `lds_per_cu`: the chip's LDS (gfx950: 160 KiB, the others 64 KiB)."""
    regs = max(8, -(-s["vgpr_plus_agpr"] // 8) * 8)
    by_regs = min(8, MI300X["regs_per_simd_lane"] // regs)
    lds = s["lds_bytes"]
    by_lds = 8 if lds <= 0 else (lds_per_cu // lds) * warps // 4
    return max(0, min(by_regs, by_lds))


def roofline(kind: str, cx: dict[str, int], warps: int, eb: int) -> dict[str, Any]:
    """Cycles per CU for one K step (matmul, attention: one block of keys) or one
    program (vector add, softmax)
    at MI300X peaks: matrix math vs LDS vs HBM traffic (no cache reuse assumed:
    an upper bound on HBM time), and which bounds."""
    per_cu_clk = MI300X["cus"] * MI300X["clock_hz"]
    extra: dict[str, float] = {}
    if kind == "mm":
        bm, bn, bk = cx["BLOCK_M"], cx["BLOCK_N"], cx["BLOCK_K"]
        flops = 2 * bm * bn * bk
        # fp8 operands are widened to f16 on gfx942 (OCP fp8): the f16 rate.
        math_clk = flops / (MI300X["fp16_flops"] / per_cu_clk)
        global_b = (bm * bk + bk * bn) * eb
        t = choose(TARGETS["gfx942"], "mfma", bm, bn, bk, "f16", "f32", warps)
        assert t is not None
        # LDS: the tiles written once, each warp reads its rows of A and columns
        # of B (both compilers keep fp8 as bytes in LDS, decoded after the reads).
        lds_b = (bm * bk + bk * bn) * eb + warps * (bm // t.wm + bn // t.wn) * bk * eb
        lds_clk = lds_b / MI300X["lds_bytes_per_clk_cu"]
    elif kind == "attn":
        # One K step: a BLOCK_N block of keys, QK^T [bm, bn, d] and PV [bm, d, bn].
        bm, bn, d = cx["BLOCK_M"], cx["BLOCK_N"], cx["HEAD_DIM"]
        flops = 2 * 2 * bm * bn * d
        math_clk = flops / (MI300X["fp16_flops"] / per_cu_clk)
        global_b = 2 * bn * d * eb                      # the K and V blocks
        t1 = choose(TARGETS["gfx942"], "mfma", bm, bn, d, "f16", "f32", warps)
        t2 = choose(TARGETS["gfx942"], "mfma", bm, d, bn, "f16", "f32", warps)
        assert t1 is not None and t2 is not None
        # The least LDS traffic: K and V written once, each warp reads its
        # columns of K^T and of V (Q and P stay in registers, as Triton keeps them).
        lds_b = 2 * bn * d * eb + warps * (bn // t1.wn * d + d // t2.wn * bn) * eb
        lds_clk = lds_b / MI300X["lds_bytes_per_clk_cu"]
        # exp2 of every score: a quarter-rate VALU op, 4 SIMDs x 16 lanes per clock.
        extra["exp"] = bm * bn / (4 * 16 / 4)
    else:
        n = cx["BLOCK"]
        global_b = n * (12 if kind == "add" else 8)
        math_clk = lds_clk = 0.0
        flops = 0
    hbm_clk = global_b / (MI300X["hbm_bytes_s"] / per_cu_clk)
    bounds = {"matrix": math_clk, "lds": lds_clk, "hbm": hbm_clk, **extra}
    on_chip = {k: v for k, v in bounds.items() if k != "hbm"}
    return {"flops": flops, "global_bytes": global_b, "cycles": {k: round(v, 1)
            for k, v in bounds.items()}, "bound": max(bounds, key=lambda k: bounds[k]),
            # With the operand tiles served from L2/MALL (GROUP_M reuse), HBM drops out.
            "bound_with_cache_reuse": (max(on_chip, key=lambda k: on_chip[k])
                                       if flops else "hbm")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--triton-python", default=sys.executable)
    ap.add_argument("--json")
    ap.add_argument("--only", help="the cases whose name contains this text")
    args = ap.parse_args()
    rows = []
    version = "?"
    for name, kind, types, cx, warps, div, stages, target in CASES:
        if args.only and args.only not in name:
            continue
        ours = amdgcn_stats(tilec_asm(kind, types, cx, warps, div, stages, target))
        asm, version, shared, ttgir = triton_asm(args.triton_python, kind, types, cx, warps,
                                                 div, stages, target)
        theirs = amdgcn_stats(asm)
        theirs["dot_layouts"] = triton_dot_layouts(ttgir, warps)
        note = duplication_note(theirs["dot_layouts"], ours["mfma_per_k_step"])
        theirs["lds_bytes"] = max(theirs["lds_bytes"], shared)
        for st in (ours, theirs):
            st["waves_per_simd"] = occupancy(st, warps, TARGETS[target].shared_bytes)
        eb = 1 if "fp8" in types[0] else 4 if "fp32" in types[0] else 2
        rows.append({"kernel": name, "target": target, "num_warps": warps,
                     "num_stages": stages, "tilec": ours, "triton": theirs,
                     **({"note": note} if note else {}),
                     # MI300X peaks are gfx942's; no gfx950 (MI355X) estimate.
                     "roofline_mi300x": roofline(kind, cx, warps, eb)
                     if target == "gfx942" else None})
    print(f"| kernel | metric | tilec | Triton {version} |")
    print("|---|---|---|---|")
    for r in rows:
        for metric in r["tilec"]:
            print(f"| {r['kernel']} | {metric} | {r['tilec'][metric]} | {r['triton'][metric]} |")
        if "note" in r:
            print(f"| {r['kernel']} | note | {r['note']} | |")
        rl = r["roofline_mi300x"]
        if rl is None:
            continue
        print(f"| {r['kernel']} | roofline (MI300X cycles/CU: {rl['cycles']}) | "
              f"{rl['bound']}-bound ({rl['bound_with_cache_reuse']}-bound with cache reuse) "
              "| (same work) |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": "python benchmarks/static_amd_vs_triton.py --triton-python "
                       f"<triton 3.9 python> --json {args.json}", "target": "gfx942 (gfx950 where a row's target says so)",
                       "triton": version, "mi300x_peaks": MI300X,
                       "rows": rows}, f, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

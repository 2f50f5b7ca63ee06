"""Static code comparison with Triton: the same kernels compiled offline by both.

For vector add (fp32, BLOCK 1024) and a 2-D strided elementwise kernel, compile
with Triton (offline, `GPUTarget("cuda", 90, 32)` and `GPUTarget("hip",
"gfx942", 64)`) and with tilec (`sm90`, `gfx942`), pointers 16-byte aligned,
num_warps 4, and print side by side: registers (ptxas 13.0 `-v` for both PTX
files) / VGPRs and SGPRs, instruction counts, and the width of global memory
accesses.  Needs `pip install triton==3.9.0` (not a test dependency).

    .venv/bin/python benchmarks/static_vs_triton.py [--json benchmarks/results/static-<date>.json]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tempfile
import warnings
from typing import Any

import tilec
import tilec.language as tl

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
warnings.filterwarnings("ignore")

import triton  # noqa: E402
import triton.language as ttl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402


# The same kernels, written once for each compiler (bodies are identical).
@tilec.kernel
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def t_add(x_ptr, y_ptr, out_ptr, n, BLOCK: ttl.constexpr):
    offs = ttl.program_id(0) * BLOCK + ttl.arange(0, BLOCK)
    m = offs < n
    ttl.store(out_ptr + offs, ttl.load(x_ptr + offs, mask=m) + ttl.load(y_ptr + offs, mask=m), mask=m)


@tilec.kernel
def scale2d(x_ptr, b_ptr, out_ptr, M, N, stride_x, stride_o, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    m = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=m, other=0.0)
    b = tl.load(b_ptr + cols, mask=cols < N, other=0.0)
    tl.store(out_ptr + rows[:, None] * stride_o + cols[None, :], x * 2.0 + b[None, :], mask=m)


@triton.jit
def t_scale2d(x_ptr, b_ptr, out_ptr, M, N, stride_x, stride_o, BM: ttl.constexpr, BN: ttl.constexpr):
    rows = ttl.program_id(0) * BM + ttl.arange(0, BM)
    cols = ttl.program_id(1) * BN + ttl.arange(0, BN)
    m = (rows[:, None] < M) & (cols[None, :] < N)
    x = ttl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=m, other=0.0)
    b = ttl.load(b_ptr + cols, mask=cols < N, other=0.0)
    ttl.store(out_ptr + rows[:, None] * stride_o + cols[None, :], x * 2.0 + b[None, :], mask=m)


CASES = [
    # (name, tilec kernel, triton kernel, types, constexprs, indices of 16-divisible args)
    ("vector add fp32 BLOCK 1024", add, t_add,
     ["*fp32", "*fp32", "*fp32", "i32"], {"BLOCK": 1024}, [0, 1, 2, 3]),
    ("2-D scale+bias fp32 32x64", scale2d, t_scale2d,
     ["*fp32", "*fp32", "*fp32", "i32", "i32", "i32", "i32"], {"BM": 32, "BN": 64},
     [0, 1, 2, 3, 4, 5, 6]),
]


def ptx_stats(ptx: str) -> dict[str, Any]:
    ptx = re.sub(r"^\.version \d+\.\d+", ".version 9.0", ptx, flags=re.M)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.ptx")
        with open(path, "w") as f:
            f.write(ptx)
        log = subprocess.run(["ptxas", "-arch=sm_90a", "-v", "-O3", path, "-o",
                              os.path.join(d, "k.cubin")], capture_output=True, text=True,
                             check=True).stderr
    regs = int(re.search(r"Used (\d+) registers", log).group(1))  # type: ignore[union-attr]
    spills = re.search(r"(\d+) bytes spill stores", log)
    body = ptx[ptx.index("{", ptx.index(".entry")):]
    instrs = [ln.strip() for ln in body.splitlines()
              if ln.strip() and not ln.strip().startswith(("//", ".", "{", "}", "$", "@$"))
              and not ln.strip().endswith(":")]
    instrs += [ln.strip() for ln in body.splitlines() if ln.strip().startswith("@")]
    widths = []
    for ln in instrs:
        mm = re.search(r"(ld|st)\.global(\.\w+)*", ln)
        if mm:
            vec = re.search(r"\.v(\d)", ln)
            bits = re.search(r"\.[bfsu](\d+)", ln[mm.start():])
            widths.append((int(vec.group(1)) if vec else 1) * int(bits.group(1) if bits else 32))
    return {"registers": regs, "spill_bytes": int(spills.group(1)) if spills else 0,
            "instructions": len(instrs), "widest_global_bits": max(widths) if widths else 0,
            "narrowest_global_bits": min(widths) if widths else 0}


_AMD_WIDTH = {"dword": 32, "dwordx2": 64, "dwordx3": 96, "dwordx4": 128, "b32": 32, "b64": 64,
              "b96": 96, "b128": 128, "short": 16, "ushort": 16, "ubyte": 8, "byte": 8}


def amdgcn_stats(asm: str) -> dict[str, Any]:
    def meta(key: str) -> int:
        m = re.search(rf"\.{key}:\s+(\d+)", asm)
        return int(m.group(1)) if m else -1
    start = asm.index(":\n", asm.index(".type"))  # first kernel label
    end = asm.index(".Lfunc_end")
    body = asm[start:end]
    instrs = [ln.strip() for ln in body.splitlines()
              if ln.strip() and re.match(r"[a-z_]+[0-9a-z_]*\b", ln.strip())
              and not ln.strip().startswith(".")]
    widths = []
    for ln in instrs:
        m = re.match(r"(global|buffer)_(load|store)_(\w+)", ln)
        if m:
            widths.append(_AMD_WIDTH.get(m.group(3), 0))
    return {"vgpr": meta("vgpr_count"), "sgpr": meta("sgpr_count"),
            "instructions": len(instrs), "widest_global_bits": max(widths) if widths else 0,
            "narrowest_global_bits": min(widths) if widths else 0}


def compile_triton(fn: Any, types: list[str], constexprs: dict[str, int], div: list[int],
                   target: GPUTarget) -> dict[str, Any]:
    names = list(fn.arg_names)
    sig = {n: t for n, t in zip(names, types)}
    sig.update({k: "constexpr" for k in constexprs})
    attrs = {(i,): [["tt.divisibility", 16]] for i in div}
    k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=constexprs, attrs=attrs),
                       target=target, options={"num_warps": 4})
    return dict(k.asm)


def compile_tilec(fn: Any, types: list[str], constexprs: dict[str, int], div: list[int],
                  target: str) -> dict[str, Any]:
    names = fn.runtime_names()
    sig = {n: t + (":16" if i in div else ":1") for i, (n, t) in enumerate(zip(names, types))}
    return dict(fn.compile(target=target, signature=sig, constexprs=constexprs, num_warps=4).asm)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    for name, tk, tt, types, cx, div in CASES:
        for divisible in (True, False):
            d = div if divisible else [i for i, t in enumerate(types) if t.startswith("*")]
            spec = "ints % 16 == 0" if divisible else "ints unknown"
            ours_nv = ptx_stats(compile_tilec(tk, types, cx, d, "sm90")["ptx"])
            theirs_nv = ptx_stats(compile_triton(tt, types, cx, d, GPUTarget("cuda", 90, 32))["ptx"])
            ours_amd = amdgcn_stats(compile_tilec(tk, types, cx, d, "gfx942")["amdgcn"])
            theirs_amd = amdgcn_stats(compile_triton(tt, types, cx, d,
                                                     GPUTarget("hip", "gfx942", 64))["amdgcn"])
            rows.append({"kernel": name, "specialization": spec,
                         "sm90": {"tilec": ours_nv, "triton": theirs_nv},
                         "gfx942": {"tilec": ours_amd, "triton": theirs_amd}})
    print("| kernel | specialization | target | metric | tilec | Triton 3.9 |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        for tgt in ("sm90", "gfx942"):
            o, t = r[tgt]["tilec"], r[tgt]["triton"]
            for metric in o:
                print(f"| {r['kernel']} | {r['specialization']} | {tgt} | {metric} | {o[metric]} | "
                      f"{t[metric]} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": "python benchmarks/static_vs_triton.py --json " + args.json,
                       "triton": triton.__version__, "rows": rows}, f, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

"""Static AMD code comparison with Triton 3.9 on gfx942 (no AMD GPU needed).

The tutorial-03 matmul (benchmarks/matmul_kernels.py `mm_tutorial`, fp16,
128x128x64 and 256x256x64 blocks, 8 warps, GROUP_M 8) and vector add (fp32,
BLOCK 1024, 4 warps), compiled by tilec (`gfx942`) and by Triton 3.9
(`GPUTarget("hip", "gfx942", 64)`, 16-divisible integer arguments and pointers
marked `tt.divisibility` 16 as a real launch would), printed side by side:
MFMA instructions per K step (one BLOCK_K iteration of the main loop) and
their kind, VGPR + AGPR, SGPR, LDS bytes, scratch bytes, code-object
instruction count.  Triton runs in its own interpreter (it need not share
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
from typing import Any

import tilec
import tilec.language as tl

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from matmul_kernels import mm_tutorial  # noqa: E402
# (name, kernel, types, constexprs, num_warps, 16-divisible argument indices)
MM_TYPES = ["*fp16", "*fp16", "*fp16", "i32", "i32", "i32", "i32", "i32", "i32", "i32", "i32",
            "i32"]
MM_DIV = [0, 1, 2, 3, 4, 5, 6, 8, 10]         # unit strides (7, 9, 11) are specialized to 1
CASES: list[tuple[str, str, list[str], dict[str, int], int, list[int]]] = [
    ("matmul fp16 128x128x64", "mm", MM_TYPES,
     {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, 8, MM_DIV),
    ("matmul fp16 256x256x64", "mm", MM_TYPES,
     {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, 8, MM_DIV),
    ("vector add fp32 1024", "add", ["*fp32", "*fp32", "*fp32", "i32"], {"BLOCK": 1024}, 4,
     [0, 1, 2, 3]),
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
    vgpr, agpr = meta("vgpr_count"), max(0, meta("agpr_count"))
    return {"mfma_kinds": mfma, "mfma_per_k_step": loop_mfma, "vgpr": vgpr, "agpr": agpr,
            "vgpr_plus_agpr": vgpr + agpr, "sgpr": meta("sgpr_count"),
            "lds_bytes": meta("group_segment_fixed_size"),
            "scratch_bytes": meta("private_segment_fixed_size"), "instructions": len(instrs)}


@tilec.kernel
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


def tilec_asm(kind: str, types: list[str], cx: dict[str, int], warps: int,
              div: list[int]) -> str:
    fn = mm_tutorial if kind == "mm" else add
    names = fn.runtime_names()
    sig = {}
    for i, (n, t) in enumerate(zip(names, types)):
        unit = kind == "mm" and i in (7, 9, 11)
        sig[n] = t + ("=1" if unit else ":16" if i in div else ":1")
    return str(fn.compile(target="gfx942", signature=sig, constexprs=cx, num_warps=warps)
               .asm["amdgcn"])


_TRITON_CHILD = r'''
import json, sys, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, sys.argv[1])
import triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

sys.path.insert(0, sys.argv[3])
from triton_twin import t_mm_tutorial


@triton.jit
def t_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

kind, types, cx, warps, div = json.loads(sys.argv[2])
fn = t_mm_tutorial if kind == "mm" else t_add
sig = {n: t for n, t in zip(fn.arg_names, types)}
if kind == "mm":
    for i in (7, 9, 11):
        sig[fn.arg_names[i]] = "constexpr"
consts = dict(cx)
if kind == "mm":
    consts.update({fn.arg_names[i]: 1 for i in (7, 9, 11)})
sig.update({k: "constexpr" for k in cx})
attrs = {(i,): [["tt.divisibility", 16]] for i in div}
k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs),
                   target=GPUTarget("hip", "gfx942", 64), options={"num_warps": warps})
print(json.dumps({"amdgcn": k.asm["amdgcn"], "version": triton.__version__,
                  "shared": k.metadata.shared}))
'''


def _triton_twin_source() -> str:
    """The Triton twin of `mm_tutorial`, as matmul_kernels.py writes it (that
    module imports tilec, which Triton's environment need not have)."""
    text = open(os.path.join(HERE, "matmul_kernels.py")).read()
    start = text.index("    @triton.jit\n    def t_mm_tutorial")
    body = text[start:text.index("except ImportError", start)]
    return "import triton\nimport triton.language as ttl\n\n\n" + textwrap.dedent(body)


def triton_asm(py: str, kind: str, types: list[str], cx: dict[str, int], warps: int,
               div: list[int]) -> tuple[str, str, int]:
    """Triton's AMDGCN, version and LDS bytes (dynamic: not in the code object)."""
    with tempfile.TemporaryDirectory() as d:     # @triton.jit needs a source file
        child = os.path.join(d, "triton_child.py")
        with open(child, "w") as f:
            f.write(_TRITON_CHILD)
        twin = os.path.join(d, "triton_twin.py")
        with open(twin, "w") as f:
            f.write(_triton_twin_source())
        run = subprocess.run([py, child, HERE, json.dumps([kind, types, cx, warps, div]), d],
                             capture_output=True, text=True)
    if run.returncode:
        raise SystemExit(f"Triton failed:\n{run.stderr[-3000:]}")
    out = run.stdout
    d = json.loads(out.strip().splitlines()[-1])
    return d["amdgcn"], d["version"], d["shared"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--triton-python", default=sys.executable)
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    version = "?"
    for name, kind, types, cx, warps, div in CASES:
        ours = amdgcn_stats(tilec_asm(kind, types, cx, warps, div))
        asm, version, shared = triton_asm(args.triton_python, kind, types, cx, warps, div)
        theirs = amdgcn_stats(asm)
        theirs["lds_bytes"] = max(theirs["lds_bytes"], shared)
        rows.append({"kernel": name, "num_warps": warps, "tilec": ours, "triton": theirs})
    print(f"| kernel | metric | tilec | Triton {version} |")
    print("|---|---|---|---|")
    for r in rows:
        for metric in r["tilec"]:
            print(f"| {r['kernel']} | {metric} | {r['tilec'][metric]} | {r['triton'][metric]} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": "python benchmarks/static_amd_vs_triton.py --triton-python "
                       f"<triton 3.9 python> --json {args.json}", "target": "gfx942",
                       "triton": version, "rows": rows}, f, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

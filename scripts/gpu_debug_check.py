"""The debug mode on a real NVIDIA GPU: checked kernels that pass give torch's
answer; a failed check prints its message (vprintf) and the launch raises a
located TilecError from the error record.

Two phases, as scripts/gpu_suite.py (the GPU machine has no compiler):

    # here: compile the kernels `run` launches for sm90 into a cache
    TILEC_CACHE_DIR=$PWD/.carry/tilec-cache .venv/bin/python scripts/gpu_debug_check.py prepare
    # on the GPU machine
    TILEC_CACHE_DIR=$PWD/.carry/tilec-cache python3 scripts/gpu_debug_check.py run

`run` launches the passing cases in this process and each failing case in a
child process (a trap ends the CUDA context); the closing line is
'N passed, N failed'.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tilec  # noqa: E402
import tilec.language as tl  # noqa: E402

N, BLOCK = 1000, 64


@tilec.kernel(debug=True)
def dbg_store(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, x * 2, mask=offs < n)


@tilec.kernel(debug=True)
def dbg_wild(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, x * 2)  # unmasked: past the end in the last program


@tilec.kernel(debug=True)
def dbg_assert(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    tl.device_assert(x > 0, "x must be positive")


def prepare() -> None:
    import numpy as np
    x = np.zeros(N, np.float32)
    for k in (dbg_store, dbg_wild):
        k.warmup(x, x, N, BLOCK=BLOCK, target="sm90")
    dbg_assert.warmup(x, N, BLOCK=BLOCK, target="sm90")
    print("prepared dbg_store, dbg_wild, dbg_assert for sm90")


def _child(case: str) -> int:
    import torch
    x = torch.arange(N, dtype=torch.float32, device="cuda")
    if case == "wild":
        out = torch.zeros(N, device="cuda")
        dbg_wild[((N + BLOCK - 1) // BLOCK,)](x, out, N, BLOCK=BLOCK)
    else:
        x[700] = -1.0
        dbg_assert[((N + BLOCK - 1) // BLOCK,)](x, N, BLOCK=BLOCK)
    torch.cuda.synchronize()
    return 0


def run() -> int:
    import torch
    passed = failed = 0

    def check(name: str, ok: bool, detail: str = "") -> None:
        nonlocal passed, failed
        passed, failed = passed + ok, failed + (not ok)
        print(f"{'PASS' if ok else 'FAIL'} {name} {detail}", flush=True)

    grid = ((N + BLOCK - 1) // BLOCK,)
    x = torch.arange(N, dtype=torch.float32, device="cuda")
    out = torch.zeros(N, device="cuda")
    dbg_store[grid](x, out, N, BLOCK=BLOCK)
    torch.cuda.synchronize()
    check("masked store inside", bool(torch.equal(out, 2 * x)))
    dbg_assert[grid](x + 1, N, BLOCK=BLOCK)
    torch.cuda.synchronize()
    check("device_assert true", True)
    for case, want in (("wild", "tilec debug: out-of-bounds store of 'out_ptr' at "),
                       ("assert", "tilec debug: x must be positive at ")):
        r = subprocess.run([sys.executable, __file__, "child", case], capture_output=True,
                           text=True, env=dict(os.environ), timeout=300)
        text = r.stdout + r.stderr
        print(f"--- {case}: exit {r.returncode}\n{text[-1500:]}")
        check(f"{case} prints and raises", want in text and r.returncode != 0
              and "TilecError" in text)
        if case == "wild":
            check("wild names the program and offset",
                  "program (15, 0, 0), element offset 1000" in text)
        else:
            check("assert names the program", "program (10, 0, 0)" in text)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "run"
    if what == "prepare":
        prepare()
    elif what == "child":
        sys.exit(_child(sys.argv[2]))
    else:
        sys.exit(run())

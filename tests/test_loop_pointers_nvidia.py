"""tile-loop-pointers on NVIDIA (every GPU stage list runs it before tile-layout):
the tutorial-03 matmul's pipelined cp.async loop carries scalar bases, not a
64-bit pointer per element of the operand tiles.

Before the pass ran on NVIDIA the loop of the 128x128x64 4-warp config had 147
`add.s64` (every carried pointer advanced, 16 of them used per iteration) and
8 `mov.b64` copies of the pointers the copies read; ptxas then spent 30 register
moves per iteration re-pairing them (180 SASS instructions, Triton 142)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

SIG = "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1"


def _loop_bodies(ptx: str) -> list[str]:
    """The bodies of the PTX loops that issue cp.async copies."""
    found = re.finditer(r"^(\$L__BB\d+_\d+):\n(.*?)^\s*@%p\d+ bra\s+\1;", ptx, re.S | re.M)
    return [m.group(2) for m in found if "cp.async.cg" in m.group(2)]


@pytest.mark.parametrize("cfg", [(128, 128, 64, 4, 4), (128, 256, 64, 8, 3), (64, 128, 64, 4, 3)])
def test_pipelined_loop_carries_scalar_bases(cfg: tuple[int, ...], tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    from kernels_for_tests import mm_clamped   # cp.async tiles (tile-tma-pointers leaves them)
    bm, bn, bk, w, s = cfg
    ck = mm_clamped.compile(target="sm90", signature=SIG, num_warps=w, num_stages=s,
                             constexprs={"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
                                         "GROUP_M": 8})
    bodies = _loop_bodies(ck.asm["ptx"])
    assert len(bodies) == 1, "expected one pipelined cp.async loop"
    body = bodies[0]
    copies = body.count("cp.async.cg")
    assert copies == (bm * bk + bk * bn) * 2 // 16 // (32 * w)
    # Per copy at most a few 64-bit adds (its source and destination), and no
    # carried pointer copied at the back edge (the wgmma descriptor bases are
    # re-read by an inline-asm `mov.b64` where each product is issued,
    # targets/nvidia/wgmma.py `_here`: not counted).
    assert len(re.findall(r"add\.s64", body)) <= 3 * copies
    outside_asm = re.sub(r"// begin inline asm.*?// end inline asm", "", body, flags=re.S)
    assert "mov.b64" not in outside_asm
    if ck.metadata.get("spill_stores") is not None:
        assert ck.metadata["spill_stores"] == 0

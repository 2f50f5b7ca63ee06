"""The pipelined mma.sync path (sm80, sm100, and sm90 tiles that do not fit
wgmma): the padded ring layout, the rule lookup of `tile.mma` on targets with
several MMA families, and the pipelined kernels' machine code (cp.async +
ldmatrix + mma.sync in the loop; ptxas: registers, 0 spills; the rings'
shared-memory size).  Correctness on a GPU: scripts/gpu_mma_check.py on the
H200 (sm90 configs with BLOCK_K=32 take this path; CI has no GPU)."""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tilec.passes.analysis.layouts import PaddedTile
from tilec.passes.gpu import TABLE
from tilec.passes.gpu import dot as gpu_dot
from tilec.targets import TARGETS

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from matmul_kernels import mm_tutorial  # noqa: E402

SIG = "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1"


@pytest.mark.parametrize("rows,cols", [(128, 32), (32, 128), (64, 64), (32, 256)])
def test_padded_tile_rows_and_ldmatrix_banks(rows: int, cols: int) -> None:
    t = PaddedTile(rows, cols, 2)
    assert t.row_bytes == 2 * cols + 16 and t.nbytes == rows * t.row_bytes
    offs = [t.offset(r, c) for r in range(rows) for c in range(cols)]
    assert len(set(offs)) == len(offs) and max(offs) < t.nbytes
    for r in range(rows):
        for c in range(0, cols, 8):   # cp.async's 16-byte pieces: contiguous, aligned
            base = t.offset(r, c)
            assert base % 16 == 0
            assert [t.offset(r, c + i) for i in range(8)] == list(range(base, base + 16, 2))
    # One ldmatrix phase reads 8 rows of 16 bytes at one column: the padding
    # puts them in 8 different 16-byte groups of the 128-byte bank line.
    for r0 in range(0, rows - 7, 8):
        for c in range(0, cols, 8):
            assert len({t.offset(r0 + i, c) % 128 // 16 for i in range(8)}) == 8


def test_tile_mma_has_one_rule_per_target() -> None:
    """`tile.mma` is one generic rule dispatching on the op's kind, so sm90
    (WGMMA and MMA_M16N8K16) sees no ambiguity; each kind's hook resolves where
    the target has its feature."""
    for name in ("sm80", "sm90", "sm100"):
        t = TARGETS[name]
        assert TABLE.find("tile.mma", t) is gpu_dot._mma
        assert TABLE.find("hook.mma-sync", t) is not None
        assert (TABLE.find("hook.mma-wgmma", t) is not None) == (name == "sm90")
    assert TABLE.find("hook.mma-sync", TARGETS["gfx942"]) is None


def _compile(target: str, bm: int, bn: int, bk: int, warps: int, stages: int) -> Any:
    return mm_tutorial.compile(target=target, signature=SIG, num_warps=warps,
                               num_stages=stages,
                               constexprs={"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
                                           "GROUP_M": 8})


def _loop_body(ptx: str, stages: int) -> str:
    """The PTX of the K loop: from the label before the in-loop
    `cp.async.wait_group S-2` to the branch back to it."""
    i = ptx.index(f"cp.async.wait_group \t{stages - 2};")
    label = re.findall(r"^(\$L__BB0_\d+):$", ptx[:i], re.M)[-1]
    back = re.search(rf"bra(\.uni)?\s+{re.escape(label)};", ptx[i:])
    assert back is not None
    return ptx[ptx.index(f"{label}:"):i + back.end()]


@pytest.mark.parametrize("target", ["sm80", "sm90", "sm100"])
@pytest.mark.parametrize("bm,bn,bk,warps,stages", [
    (128, 128, 32, 4, 3), (64, 64, 32, 4, 3), (128, 256, 32, 8, 3),
])
def test_pipelined_mma_sync_kernels_assemble_without_spills(target: str, bm: int, bn: int,
                                                            bk: int, warps: int,
                                                            stages: int) -> None:
    k = _compile(target, bm, bn, bk, warps, stages)
    ptx = k.asm["ptx"]
    assert "wgmma" not in ptx
    body = _loop_body(ptx, stages)
    assert "cp.async.cg.shared.global" in body and "cp.async.commit_group;" in body
    m_tiles, n_tiles = bm // 16, bn // (8 * warps)
    assert body.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == m_tiles * bk // 16
    assert body.count("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16") == n_tiles * bk // 16
    assert body.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == \
        m_tiles * n_tiles * bk // 16
    # ldmatrix reads through the generic proxy: no proxy fence after the copies
    # (neither does a wgmma ring take one: targets/nvidia/async_copy.py).
    assert "fence.proxy.async" not in ptx
    # The rings: stages x (A [bm, bk] + B [bk, bn]), each row padded by 16 bytes.
    ring = stages * (bm * (2 * bk + 16) + bk * (2 * bn + 16))
    assert k.metadata["shared"] >= ring
    if not k.asm.get("cubin"):
        pytest.skip("no ptxas here")
    md = k.metadata
    assert md["spill_stores"] == 0 and md["spill_loads"] == 0 and md["stack_bytes"] == 0, md
    assert md["registers"] <= 255


def test_one_stage_keeps_the_staged_dot() -> None:
    ptx = _compile("sm80", 64, 64, 32, 4, 1).asm["ptx"]
    assert "cp.async" not in ptx and "mma.sync.aligned.m16n8k16" in ptx


@pytest.mark.parametrize("form", [0, 1, 2, 3])
def test_k_mask_spellings_pipeline_on_sm80(form: int) -> None:
    """tutorial-03's K mask as `<`, `<=` (`offs_k <= K - 1 - k * BLOCK_K`),
    `>` and `>=`: each bounds runs of 16 elements (the axis analysis sees
    that `K - 1 - k * BLOCK_K` + 1 is a multiple of 16), so cp.async copies
    A in every form (the `<=` / `>=` ones were plain loads)."""
    spec = importlib.util.spec_from_file_location(
        "tma_pointer_kernels_sm80", Path(__file__).resolve().parent / "lit" / "tile-tma-pointers"
        / "kernels.py")
    assert spec is not None and spec.loader is not None
    kmod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kmod)
    k = kmod.tutorial.compile(target="sm80", signature=SIG, num_warps=8, num_stages=3,
                              constexprs=dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, ROW_SUM=0,
                                              OTHER=0, STORE_ROWS=1, MASK_FORM=form))
    ptx = k.asm["ptx"]
    assert "cp.async.cg" in ptx and "ld.global" not in ptx
    if k.asm.get("cubin"):
        assert k.metadata["spill_stores"] == 0

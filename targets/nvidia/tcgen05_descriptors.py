"""Bit-level encodings of the sm100 `tcgen05.mma` path, as pure Python (no
MLIR), so tests/test_tcgen05.py can check them against the PTX ISA tables and
against the swizzled shared-memory layout (`layouts.SwizzledTile`).

* `instr_descriptor`: the 32-bit instruction descriptor (PTX ISA 9.7.16.4.2,
  Table 42) of a dense `.kind::f16` (f16/bf16), `.kind::f8f6f4` (e4m3/e5m2)
  or `.kind::tf32` product with an F32 accumulator.
* `smem_descriptor`: the 64-bit shared memory descriptor (9.7.16.4.1, Table
  40); it differs from sm90's wgmma descriptor by the fixed 0b001 in bits
  46-48 and the 3-bit swizzle mode in bits 61-63 (128-byte swizzle = 2, which
  happens to be the same bit 62 as wgmma's mode 1 in bits 62-63).
* `strides` / `k_step_offsets`: LBO/SBO and the per-k-step start of the
  operands in their `SwizzledTile` layout.
* `thread_tmem_start`: the TMEM lane and columns one thread reads with
  `tcgen05.ld.32x32b` (what `layouts.tcgen05_accumulator_layout` declares).
"""
from __future__ import annotations

from tilec.passes.analysis.layouts import SwizzledTile

M = 128                   # rows of one cta_group::1 product (= TMEM lanes)
K_STEP_BYTES = 32         # bytes of K per instruction: 16 f16/bf16, 32 fp8, 8 tf32
SWIZZLE_128B = 2          # Table 40, bits 61-63
# Table 42: atype/btype codes (bits 7-9 / 10-12) and the .kind they belong to.
_TYPES = {"f16": (0, "f16"), "bf16": (1, "f16"), "e4m3": (0, "f8f6f4"), "e5m2": (1, "f8f6f4"),
          "tf32": (2, "tf32")}
# Operand bytes per element of each type.
ELEM_BYTES = {"f16": 2, "bf16": 2, "e4m3": 1, "e5m2": 1, "tf32": 4}


def mma_kind(atype: str) -> str:
    """The `.kind::` of `tcgen05.mma` for operand type `atype`."""
    return _TYPES[atype][1]


def instr_descriptor(atype: str, m: int, n: int, a_mn_major: bool, b_mn_major: bool) -> int:
    """The 32-bit instruction descriptor of a dense product with an F32
    accumulator (PTX ISA 9.7.16.4.2, Table 42); `atype` is both operands' type."""
    t = _TYPES[atype][0]
    return ((1 << 4) | (t << 7) | (t << 10) | (int(a_mn_major) << 15) |
            (int(b_mn_major) << 16) | ((n >> 3) << 17) | ((m >> 4) << 24))


def _encode(x: int) -> int:
    return (x & 0x3FFFF) >> 4


def smem_descriptor(addr: int, lbo: int, sbo: int, base_offset: int = 0,
                    swizzle: int = SWIZZLE_128B) -> int:
    """The 64-bit tcgen05 shared memory descriptor (PTX ISA 9.7.16.4.1, Table 40)."""
    return (_encode(addr) | (_encode(lbo) << 16) | (_encode(sbo) << 32) | (1 << 46) |
            ((base_offset & 7) << 49) | (swizzle << 61))


def strides(t: SwizzledTile, kmajor: bool) -> tuple[int, int]:
    """(leading, stride) byte offsets of an operand's descriptor: K-major
    swizzled: LBO unused (16), SBO 1024 between 8-row groups; MN-major: LBO
    between 128-byte column atoms, SBO 1024 between groups of 8 K rows."""
    return (16 if kmajor else t.atom_bytes), 1024


def k_step_offsets(ta: SwizzledTile, tb: SwizzledTile, k0: int,
                   b_kmajor: bool) -> tuple[int, int]:
    """Byte offsets of A's and B's start for the k-step at k0."""
    def kmajor(t: SwizzledTile) -> int:
        return (k0 // t.atom_cols) * t.atom_bytes + (k0 % t.atom_cols) * t.elem_bytes
    return kmajor(ta), kmajor(tb) if b_kmajor else k0 * 128


def thread_tmem_start(tid: int, n: int, num_warps: int) -> tuple[int, int, int]:
    """(TMEM lane, first column, column count) that thread `tid` reads with
    `tcgen05.ld.32x32b` for an [128, n] accumulator: the lane is fixed by the
    hardware (warp w: lanes 32 (w % 4) + lane id), the columns are tilec's
    choice (8 warps: w // 4 picks the half).  `_thread_columns` emits this."""
    lane = tid & 0x60 | tid & 31
    if num_warps == 4:
        return lane, 0, n
    return lane, (tid >> 7) * (n // 2), n // 2


def columns(n: int) -> int:
    """TMEM columns allocated for an [128, n] f32 accumulator."""
    return max(32, 1 << (n - 1).bit_length())

"""Probe: L2 cache-eviction hints on the persistent matmul's TMA copies, as PTX
edits of a prepared cache (no compiler change): does keeping B in L2 across
tile groups, or streaming C out first, cut DRAM traffic and energy enough to
move the power-capped rate?

    # here: a cache from persistent_pair.py prepare, unslimmed
    TILEC_CACHE_DIR=/tmp/pair .venv/bin/python benchmarks/probe/persistent_pair.py prepare
    .venv/bin/python benchmarks/probe/l2_hints.py /tmp/pair .carry/l2-<variant> <variant>
    # on the H200, per variant: persistent_pair.py modes / ncu, as for the plain cache

Variants (comma-separated parts): `c_first` (the C tile's TMA stores with an
evict_first policy), `b_last` (B's TMA loads evict_last), `a_first` (A's loads
evict_first), `b_first`.  The policy is made once at entry with
`createpolicy.fractional.L2::<policy>.b64 <reg>, 1.0`; the copies gain
`.L2::cache_hint` and the policy operand.  Only the entries of one kernel
(`matmul_persistent`, or the fourth argument: `mm_tutorial` for
skinny_probe.py's cache, the 127-row launch) are edited; the cubin is
rebuilt with ptxas -arch=sm_90a and the manifest's sizes and hashes
updated.  The tensor maps are the kernel's three 128-byte parameters (A, B,
C: runtime/tensormap.py's order).  A variant `x_last` on a skinny launch
keeps A (read by every program) and `b_first` streams B (each column block
read once when the grid has one row block): whether the memset's dirty L2
lines then survive the launch instead of being written back during it.
"""
from __future__ import annotations

import re
import sys

from ptx_edit import edit_cache

def _map_regs(ptx: str) -> dict[str, str]:
    """Which %rd register holds each tensor map's generic address (the
    kernel's 128-byte parameters in order: A, B, C)."""
    params = re.findall(r"\.param \.align 64 \.b8 (\w+_param_\d+)\[128\]", ptx)
    assert len(params) >= 2, params   # A, B (and C where the store is a TMA store)
    regs = {}
    for name, param in zip("abc", params):
        mov = re.search(rf"mov\.b64\s+(%rd\d+), {param};", ptx)
        assert mov, param
        cvta = re.search(rf"cvta\.param\.u64\s+(%rd\d+), {re.escape(mov.group(1))};", ptx)
        assert cvta, param
        regs[name] = cvta.group(1)
    return regs


def edit(ptx: str, variant: str) -> str:
    parts = [p for p in variant.split(",") if p]
    regs = _map_regs(ptx)
    policies: dict[str, str] = {}
    for p in parts:
        policies[p[0]] = "evict_first" if p.endswith("first") else "evict_last"
    decl = "\t.reg .b64 \t%pol<3>;\n"
    made = "".join(f"\tcreatepolicy.fractional.L2::{pol}.b64 \t%pol{i}, 1.0;\n"
                   for i, pol in enumerate(policies.values()))
    index = {m: i for i, m in enumerate(policies)}
    # declarations and policies after the kernel's first `{` line's register declarations
    body = ptx.index("{", ptx.index(".entry"))
    first_ins = re.compile(r"\n\t(?!\.reg|\.shared|\.local)[a-z]").search(ptx, body)
    assert first_ins
    ptx = ptx[:first_ins.start() + 1] + decl + made + ptx[first_ins.start() + 1:]
    count = 0
    for m, i in index.items():
        reg = re.escape(regs[m])
        if m == "c":
            pat = re.compile(rf"(cp\.async\.bulk\.tensor\.\dd\.global\.shared::cta\.tile\.bulk_group)"
                             rf"( \[{reg}, [^;]*);")
        else:
            pat = re.compile(rf"(cp\.async\.bulk\.tensor\.\dd\.shared::cluster\.global\.tile\."
                             rf"mbarrier::complete_tx::bytes)( \[[^\]]*\], \[{reg}, [^;]*);")
        ptx, n = pat.subn(rf"\1.L2::cache_hint\2, %pol{i};", ptx)
        assert n, m
        count += n
    print(f"  {variant}: {count} copies hinted")
    return ptx


def main() -> None:
    src, dst, variant = sys.argv[1:4]
    kernel = sys.argv[4] if len(sys.argv) > 4 else "matmul_persistent"
    edit_cache(src, dst, kernel, lambda ptx: edit(ptx, variant), variant)


if __name__ == "__main__":
    main()

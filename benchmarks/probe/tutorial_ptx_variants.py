"""Probe: which difference between tilec's and Triton's SASS main loops keeps
tutorial-03 at 128x128x64, 8 warps, 3 slots (two CTAs per SM) ~5% behind
Triton at the locked clock?  Each variant is a PTX edit of a prepared cache's
`mm_tutorial` entries (no compiler change) that gives tilec's loop Triton's
form of one thing, the rest left as it is:

    here:   TILEC_CACHE_DIR=/tmp/tv .venv/bin/python benchmarks/probe/tutorial_refill.py \\
                prepare --configs "128,128,64,8,3" --shapes "4096,4096,4096,float16"
            .venv/bin/python benchmarks/probe/tutorial_ptx_variants.py /tmp/tv .carry/tv-<v> <v>
            .venv/bin/python scripts/slim_cache.py .carry/tv-<v>
    device: tutorial_refill.py run / once (ncu) with TILEC_CACHE_DIR=$PWD/.carry/tv-<v>

Variants (comma-separated parts, or `all`):

`split_commit`: one cp.async group per operand, as Triton commits them (A's
    copies, then B's, each followed by `cp.async.commit_group`, in the
    prologue and the loop) and the loop's wait at 2 groups instead of 1.  The
    same bytes are waited for; what changes is one `LDGDEPBAR` after A's four
    `LDGSTS`, so A's group is closed before B's copies issue, and the
    `DEPBAR.LE SB0, 0x2` at the loop top.

`desc_carried`: the first product's two shared-memory descriptors ready at
    the loop top.  tilec makes them there from the read slot: `USHF` (slot <<
    14) -> `UIADD3` (+ the warpgroup's rows) -> `ULEA.HI` (>> 4 into the base
    descriptor, carry out) -> `UIADD3.X` (the high word), four dependent
    uniform ops between the loop-top `BAR.SYNC` and the first `HGMMA`, where
    the stall samples put `wait`.  Here the same PTX block is moved to the end
    of the previous iteration (and before the loop), computed from the next
    read slot, so the descriptors are loop-carried values and the first
    product depends on nothing made after the barrier (Triton's chain is as
    long as tilec's, but its read counter advances before the cp.async wait).

`counters`: the ring's slot counters as Triton keeps them: a read counter
    advanced at the loop top, before the cp.async wait (`r = r + 1 > 2 ? 0 :
    r + 1`), and a separate write counter advanced the same way where the
    refill's slot is made, instead of tilec's one counter from which the
    refill slot is `(r + 2) mod 3` and the next read slot `(r + 1) mod 3` by
    compare-the-sum and select at the loop's end (`@UP0 UIADD3` + `UMOV UR4`
    just before `WARPGROUP.DEPBAR`, where session 21's stall samples put
    `wait` stalls).  Session 21's `wrapadd` compiler experiment kept the
    counter at the loop's end; this one moves the read side to the top, as
    Triton does.

`all`: the three together (are the differences additive?).  `base`: no
edit, the cubin rebuilt the same way (byte-identical to the compiler's).

What ptxas 13.0 made of them (fp16, main loop, SASS instructions; Triton's
loop 103): base 99; split_commit 100 (the second `LDGDEPBAR`, `DEPBAR.LE SB0,
0x2`); counters 97 (`UIADD3` before the `DEPBAR`, `UISETP` + `USEL` after
the `BAR.SYNC`; the write counter in a vector register, the `@UP0 UIADD3` +
`UMOV` before `WARPGROUP.DEPBAR` gone); desc_carried 102 (the slot counter
and the carried descriptors in vector registers: four `R2UR` after the
loop-top `BAR.SYNC`, one `HGMMA`, the refill's masks and addresses, then
the other three and `WARPGROUP.DEPBAR` right after them, Triton's shape;
122 registers instead of 116); all 105.  Each keeps 8 `LDGSTS`, 4 `HGMMA`,
2 `BAR.SYNC`.

Only `mm_tutorial` entries are edited; each kernel.cubin is rebuilt with
`ptxas -arch=sm_90a -O3` and the manifest's artifact sizes / hashes and
register count updated.  Each edit asserts the pattern it rewrites, so a
cache from another compiler build fails loudly instead of silently staying
unedited.
"""
from __future__ import annotations

import re
import sys

from ptx_edit import edit_cache

PARTS = ("split_commit", "counters", "desc_carried")
B_RING = 49152      # the B ring's byte offset in the kernel's shared buffer (3 A slots of 16 KiB)


def _loop(ptx: str) -> tuple[int, int, str]:
    """(start, end, label) of the main loop: the block from the label the
    loop's backward `bra` names (the block holding wgmma) to that branch."""
    for m in re.finditer(r"@%p\d+ bra \t(\$L__BB\d+_\d+);", ptx):
        label = m.group(1)
        start = ptx.find(f"\n{label}:")
        if 0 <= start < m.start() and "wgmma.mma_async" in ptx[start:m.start()]:
            return start + 1, m.end(), label
    raise AssertionError("no wgmma loop")


def split_commit(ptx: str) -> str:
    """A commit before the first B copy of each group that also holds A copies."""
    out, pending_a, n = [], False, 0
    for line in ptx.split("\n"):
        cp = re.match(r"\tcp\.async\.cg\.shared\.global \[%rd\d+(?:\+(\d+))?\]", line)
        if cp:
            is_b = int(cp.group(1) or 0) >= B_RING
            if is_b and pending_a:
                out.append("\tcp.async.commit_group;")
                n += 1
                pending_a = False
            pending_a = pending_a or not is_b
        elif "cp.async.commit_group" in line:
            pending_a = False
        out.append(line)
    assert n == 3, f"split {n} groups (want prologue 2 + loop 1)"
    ptx = "\n".join(out)
    start, end, _ = _loop(ptx)
    body, k = re.subn(r"cp\.async\.wait_group \t1;", "cp.async.wait_group \t2;", ptx[start:end])
    assert k == 1, k
    return ptx[:start] + body + ptx[end:]


def desc_carried(ptx: str) -> str:
    """The first product's two descriptors made at the end of the previous
    iteration (and before the loop), from the next read slot, instead of at
    the loop top from the current one."""
    start, end, label = _loop(ptx)
    body = ptx[start:end]
    first = re.search(r"\}, (%rd\d+), (%rd\d+), p,", body)
    assert first
    da, db = first.groups()
    make = re.search(r"\tshl\.b32 \t%r\d+, (%r\d+), 14;\n(?:.*\n)*?"
                     rf"\tadd\.s64 \t{re.escape(db)}, %rd\d+, %rd\d+;\n", body)
    assert make and f"\tadd.s64 \t{da}, " in make.group(0), "descriptor block"
    assert "wgmma" not in make.group(0) and "bar.sync" not in make.group(0)
    slot = make.group(1)
    block = make.group(0).replace(f", {slot}, 14;", ", %tvn, 14;")
    body = body.replace(make.group(0), "")
    if "%tvw" in ptx:   # `counters`: the loop top advances the read slot
        nxt = (f"\tadd.s32 \t%tvn, {slot}, 1;\n\tsetp.gt.s32 \t%tvq, %tvn, 2;\n"
               f"\tselp.b32 \t%tvn, 0, %tvn, %tvq;\n")
    else:               # tilec's: the loop end did
        nxt = f"\tmov.b32 \t%tvn, {slot};\n"
    branch = re.search(r"\t@%p\d+ bra \t" + re.escape(label) + ";$", body)
    assert branch
    body = body[:branch.start()] + nxt + block + body[branch.start():]
    ptx = ptx[:start] + nxt + block + body + ptx[end:]
    return _declare(ptx, "\t.reg .b32 \t%tvn;\n\t.reg .pred \t%tvq;\n")


def _declare(ptx: str, decl: str) -> str:
    """`decl` after the kernel's register declarations."""
    first = re.compile(r"\n\t(?!\.reg|\.shared|\.local)[a-z]").search(
        ptx, ptx.index("{", ptx.index(".entry")))
    assert first
    return ptx[:first.start() + 1] + decl + ptx[first.start() + 1:]


def counters(ptx: str) -> str:
    """Triton's read / write slot counters in place of tilec's one counter."""
    start, end, label = _loop(ptx)
    body = ptx[start:end]
    # tilec's refill slot: r + 2 wrapped by comparing the sum, and the next read slot r + 1
    refill = re.search(r"\tadd\.s32 \t(%r\d+), (%r\d+), 2;\n\tsetp\.gt\.u32 \t(%p\d+), \1, 2;\n"
                       r"\tadd\.s32 \t(%r\d+), \2, -1;\n\tselp\.b32 \t(%r\d+), \4, \1, \3;\n", body)
    assert refill, "refill slot"
    slot, pred, wslot = refill.group(2), refill.group(3), refill.group(5)
    advance = re.search(rf"\tadd\.s32 \t(%r\d+), {slot}, 1;\n\tsetp\.gt\.u32 \t(%p\d+), \1, 2;\n"
                        rf"\tadd\.s32 \t(%r\d+), {slot}, -2;\n\tselp\.b32 \t{slot}, \3, \1, \2;\n",
                        body)
    assert advance, "slot advance"
    body = body.replace(advance.group(0), "")
    body = body.replace(refill.group(0),
                        f"\tadd.s32 \t%tvw, %tvw, 1;\n\tsetp.gt.s32 \t{pred}, %tvw, 2;\n"
                        f"\tselp.b32 \t%tvw, 0, %tvw, {pred};\n\tmov.b32 \t{wslot}, %tvw;\n")
    head = f"{label}:\n"
    assert body.startswith(head)
    body = (head + f"\tadd.s32 \t{slot}, {slot}, 1;\n\tsetp.gt.s32 \t%tvp, {slot}, 2;\n"
            f"\tselp.b32 \t{slot}, 0, {slot}, %tvp;\n" + body[len(head):])
    # both counters enter the loop one step back (read 2 -> 0 at the first top, write 1 -> 2)
    pre = ptx[:start]
    assert re.search(rf"\tmov\.b32 \t{slot}, 0;", pre), "slot init"
    pre += f"\tmov.b32 \t{slot}, 2;\n\tmov.b32 \t%tvw, 1;\n"
    return _declare(pre + body + ptx[end:], "\t.reg .b32 \t%tvw;\n\t.reg .pred \t%tvp;\n")


def edit(ptx: str, variant: str) -> str:
    parts = list(PARTS) if variant == "all" else [p for p in variant.split(",") if p]
    for p in parts:
        assert p in PARTS, f"unknown variant part {p!r} (know {PARTS} and all)"
    for p in PARTS:     # a fixed order: the edits find their patterns in tilec's own forms
        if p in parts:
            ptx = {"split_commit": split_commit, "counters": counters,
                   "desc_carried": desc_carried}[p](ptx)
    return ptx


def main() -> None:
    src, dst, variant = sys.argv[1:4]
    edit_cache(src, dst, "mm_tutorial",
               (lambda ptx: ptx) if variant == "base" else (lambda ptx: edit(ptx, variant)),
               variant)


if __name__ == "__main__":
    main()

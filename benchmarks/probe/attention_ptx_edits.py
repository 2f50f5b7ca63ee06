"""Hand edits of the default D128 attention forward's PTX (producer warpgroup,
deferred P @ V), each written into a copy of an attention_ncu.py cache as
`<cache>-<edit>` with its cubin rebuilt by ptxas and the manifest's hashes
updated, so the H200 launches the edited kernel through the normal runtime and
Nsight Compute compares cycles at its locked clock.  A probe of what ptxas
does with a schedule, not a compiler feature: the edits key on the labels of
this kernel's PTX (the loop header is the label before the first run of P
conversions, the exit the target of the header's branch).

    .venv/bin/python benchmarks/probe/attention_ptx_edits.py .carry/ncu cvt-after-k cvt-after-v nreg240
    # on the H200, per copy:
    TILEC_CACHE_DIR=.carry/ncu-<edit> ncu --metrics gpc__cycles_elapsed.max -k regex:_attn_fwd -c 1 \\
        python3 benchmarks/probe/attention_ncu.py run

Edits: cvt-after-k moves the 32 `cvt.rn.f16x2.f32` (P to fp16) from the loop
header to after the K-slot wait loop; cvt-after-v to after the V-slot wait
loop, just before P @ V; nreg240 sets setmaxnreg 240 / 24 (from 232 / 40);
cvt-after-v-nreg240 both.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys


def _entry(cache: str) -> str:
    """The cache entry of the producer kernel (the one with setmaxnreg) built by
    the builder of most entries: main's, not the --alt tree's single entry."""
    entries = []
    for man in glob.glob(os.path.join(cache, "*", "*", "manifest.json")):
        with open(man) as fh:
            builder = json.load(fh)["metadata"].get("builder", "")
        with open(os.path.join(os.path.dirname(man), "kernel.ptx")) as fh:
            entries.append((os.path.dirname(man), builder, "setmaxnreg" in fh.read()))
    builders = [b for _, b, _ in entries]
    main_builder = max(set(builders), key=builders.count)
    found = [d for d, b, ws in entries if ws and b == main_builder]
    if len(found) != 1:
        raise SystemExit(f"{cache}: {len(found)} producer-warpgroup entries of {main_builder}")
    return found[0]


def _move_cvts(lines: list[str], after_wait: int) -> list[str]:
    """The loop header's P conversions (the first run of `cvt.rn.f16x2.f32`,
    under a label), moved after the `after_wait`-th mbarrier wait loop of the
    body (0: K slot, 1: V slot) and repeated at the loop exit (the target of
    the header's branch), which uses P for the last P @ V."""
    first = next(i for i, ln in enumerate(lines) if "cvt.rn.f16x2.f32" in ln)
    head = max(i for i in range(first) if lines[i].startswith("$L__BB"))
    moved = [i for i in range(head + 1, head + 40) if "cvt.rn.f16x2.f32" in lines[i]]
    branch = next(lines[i] for i in range(moved[-1], moved[-1] + 4) if " bra " in lines[i])
    exit_label = branch.split()[-1].rstrip(";") + ":"
    dones = [i for i in range(head, head + 300) if lines[i].strip() == "DONE:"]
    target = dones[after_wait] + 1        # the wait loop's closing brace
    exit_ = next(i for i, ln in enumerate(lines) if ln.startswith(exit_label))
    block = [lines[i] for i in moved]
    out: list[str] = []
    for i, ln in enumerate(lines):
        if i in moved:
            continue
        out.append(ln)
        if i in (target, exit_):
            out += block
    return out


def edit(ptx: str, name: str) -> str:
    lines = ptx.splitlines()
    if name.startswith("cvt-after-k"):
        lines = _move_cvts(lines, 0)
    elif name.startswith("cvt-after-v"):
        lines = _move_cvts(lines, 1)
    text = "\n".join(lines) + "\n"
    if name.endswith("nreg240"):
        text = (text.replace("setmaxnreg.inc.sync.aligned.u32 \t232",
                             "setmaxnreg.inc.sync.aligned.u32 \t240")
                .replace("setmaxnreg.dec.sync.aligned.u32 \t40",
                         "setmaxnreg.dec.sync.aligned.u32 \t24"))
    return text


def main(cache: str, names: list[str]) -> None:
    entry = os.path.relpath(_entry(cache), cache)
    with open(os.path.join(cache, entry, "kernel.ptx")) as fh:
        ptx = fh.read()
    for name in names:
        dst = f"{cache.rstrip('/')}-{name}"
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(cache, dst)
        d = os.path.join(dst, entry)
        with open(os.path.join(d, "kernel.ptx"), "w") as fh:
            fh.write(edit(ptx, name))
        run = subprocess.run(["ptxas", "-arch=sm_90a", "-v", "-O3", "kernel.ptx", "-o",
                              "kernel.cubin"], cwd=d, capture_output=True, text=True, check=True)
        print(name, [ln.strip() for ln in run.stderr.splitlines() if "spill" in ln][-1:])
        with open(os.path.join(d, "manifest.json")) as fh:
            man = json.load(fh)
        for art in ("kernel.cubin", "kernel.ptx"):
            with open(os.path.join(d, art), "rb") as fh:
                data = fh.read()
            man["artifacts"][art] = {"sha256": hashlib.sha256(data).hexdigest(),
                                     "size": len(data)}
        with open(os.path.join(d, "manifest.json"), "w") as fh:
            json.dump(man, fh)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])

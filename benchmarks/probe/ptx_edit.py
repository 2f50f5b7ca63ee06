"""Shared by the PTX-edit probes (l2_hints.py, tutorial_ptx_variants.py): copy
a prepared tilec cache, rewrite one kernel's `kernel.ptx` in every entry that
defines it, rebuild `kernel.cubin` with `ptxas -arch=sm_90a -O3 -v`, and
update the manifest (artifact sizes and hashes; the register count where the
manifest records one), so the MLIR-free runtime serves the edited kernel."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from typing import Callable


def edit_cache(src: str, dst: str, kernel: str, edit: Callable[[str], str],
               label: str) -> int:
    """Copy `src` to `dst` and apply `edit` to each entry of `kernel`; returns
    how many entries were edited (at least one, or AssertionError)."""
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    edited = 0
    for root, _, files in os.walk(dst):
        if "manifest.json" not in files:
            continue
        ptx_path = os.path.join(root, "kernel.ptx")
        ptx = open(ptx_path).read()
        if f".entry {kernel}" not in ptx:
            continue
        open(ptx_path, "w").write(edit(ptx))
        res = subprocess.run(["ptxas", "-arch=sm_90a", "-O3", "-v", ptx_path, "-o",
                              os.path.join(root, "kernel.cubin")],
                             check=True, capture_output=True, text=True)
        regs = re.search(r"Used (\d+) registers", res.stdout + res.stderr)
        assert regs
        man_path = os.path.join(root, "manifest.json")
        man = json.load(open(man_path))
        meta = man.get("metadata", {}).get("metadata", {})
        if "registers" in meta:
            meta["registers"] = int(regs.group(1))
            for k in meta.get("kernels", {}).values():
                k["registers"] = int(regs.group(1))
        for name in ("kernel.ptx", "kernel.cubin"):
            data = open(os.path.join(root, name), "rb").read()
            man["artifacts"][name] = {"sha256": hashlib.sha256(data).hexdigest(),
                                      "size": len(data)}
        json.dump(man, open(man_path, "w"), indent=1, sort_keys=True)
        edited += 1
        print(f"  {label}: {root}: {regs.group(1)} registers")
    assert edited, f"no {kernel} entry"
    return edited

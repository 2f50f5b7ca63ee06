"""Compile a compat kernel for sm90 and gfx942 and check that the real
assemblers accepted it (ptxas -> cubin, ld.lld -> code object)."""
from __future__ import annotations

from typing import Any

import pytest

from tilec.targets import toolchain

GPU_TARGETS = ("sm90", "gfx942")


def assemble(kernel: Any, target: str, signature: str, constexprs: dict[str, Any]) -> None:
    ck = kernel.compile(target=target, signature=signature, constexprs=constexprs)
    if target.startswith("sm"):
        if toolchain.find_ptxas() is None:
            pytest.skip("ptxas not found")
        assert ck.asm.get("cubin", b"")[:4] == b"\x7fELF", ck.metadata.get("cubin_error")
    else:
        if toolchain.find_lld() is None:
            pytest.skip("ld.lld not found")
        assert ck.asm.get("hsaco", b"")[:4] == b"\x7fELF", ck.metadata

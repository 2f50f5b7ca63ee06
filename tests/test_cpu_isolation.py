"""Issue 11, finding 1: the CPU back end's native steps (MLIR lowering to
LLVM, llvmlite, cc) run in an isolated child, so an LLVM abort is a
`CompilerBugError` naming the kernel and the user's process lives; and every
target refuses a tile over its `max_tile_elements` (Target data) as a
located `TilecError` before any code generation."""
from __future__ import annotations

import dataclasses
import os
import pathlib

import numpy as np
import pytest

import tilec
import tilec.language as tl
import tilec.targets.cpu.backend as cpu_backend
from tilec.errors import CompilerBugError
from tilec.targets import TARGETS
from tilec.targets.isolate import ChildCrashError

THIS_FILE = pathlib.Path(__file__).resolve()


@tilec.kernel
def argmin_tile(x_ptr, o_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(o_ptr, tl.argmin(x, axis=0))


@tilec.kernel
def big_2d(x_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    tl.store(x_ptr + r[:, None] * C + c[None, :], 1.0)


@pytest.mark.parametrize("target", ["cpu", "sm90", "gfx942", "gfx1100"])
def test_a_huge_tile_is_a_located_error(target: str) -> None:
    with pytest.raises(tilec.TilecError) as info:
        argmin_tile.compile(target=target, signature="*i8,*i32", constexprs={"BLOCK": 1 << 20})
    e = info.value
    assert type(e) is tilec.TilecError
    assert e.loc is not None and pathlib.Path(e.loc.file).resolve() == THIS_FILE
    assert "a tile of 1048576 elements exceeds the" in str(e)
    assert f"{TARGETS[target].max_tile_elements} elements per tile" in str(e)


def test_a_huge_2d_tile_at_launch() -> None:
    x = np.zeros(1 << 18, np.float32)
    with pytest.raises(tilec.TilecError) as info:
        big_2d[(1,)](x, R=512, C=512)
    assert "a tile of 262144 elements (512x512) exceeds" in str(info.value)
    assert info.value.loc is not None and info.value.loc.line > 0


def test_the_limit_itself_compiles_on_the_cpu() -> None:
    n = TARGETS["cpu"].max_tile_elements
    x = np.zeros(n, np.float32)
    big_2d[(1,)](x, R=n // 256, C=256)
    assert (x == 1.0).all()


def test_an_llvm_abort_on_the_cpu_does_not_kill_the_process(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The reported case (argmin over an int8 tile past LLVM's SDNode operand
    limit), on a CPU record whose tile limit is raised past it: LLVM asserts
    in the child; the parent gets a CompilerBugError naming the kernel."""
    monkeypatch.setitem(TARGETS, "cpu", dataclasses.replace(TARGETS["cpu"],
                                                            max_tile_elements=1 << 18))
    with pytest.raises(ChildCrashError) as info:
        argmin_tile.compile(target="cpu", signature="*i8,*i32", constexprs={"BLOCK": 1 << 18})
    msg = str(info.value)
    assert "kernel 'argmin_tile' for cpu" in msg and "SIGABRT" in msg
    assert "A reproducer" in msg


def test_an_abort_in_cpu_codegen_is_a_compiler_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    def dies(*args: object, **kwargs: object) -> None:
        os.abort()
    monkeypatch.setattr(cpu_backend, "optimize", dies)
    with pytest.raises(CompilerBugError) as info:
        argmin_tile.compile(target="cpu", signature="*i8,*i32", constexprs={"BLOCK": 64})
    assert "kernel 'argmin_tile' for cpu" in str(info.value)
    assert "signal 6" in str(info.value)


def test_the_isolated_steps_still_give_every_artifact() -> None:
    ck = argmin_tile.compile(target="cpu", signature="*fp32,*i32", constexprs={"BLOCK": 64})
    assert {"cpu", "llir", "asm", "so"} <= set(ck.asm)
    assert "define" in ck.asm["llir"] and ck.asm["so"][:4] == b"\x7fELF"
    assert ck.metadata["times_ms"]["isolated_total"] > 0

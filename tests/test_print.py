"""tl.device_print and print() in kernels: the CPU prints from the kernel
(captured at the file-descriptor level: it is the C library's printf), in
Triton's format; NVIDIA through vprintf (PTX + ptxas); AMD through the OpenCL
printf buffer (ld.lld; the code object's printf metadata is checked in
tests/compat/test_device_print_amd.py)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tilec as triton
import tilec.language as tl
from tilec import TilecError

from compat.gpu_check import assemble


@triton.jit
def print_kernel(x_ptr, y_ptr, b_ptr, n, m):
    o = tl.arange(0, 4)
    tl.device_print("x", tl.load(x_ptr + o))
    y = tl.load(y_ptr + o[:, None] * 2 + tl.arange(0, 2)[None, :])
    print("vals", n, y)
    tl.device_print("b", tl.load(b_ptr + o) != 0)
    print("big", m)
    print("just text")


def _lines(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.startswith("pid")]


def test_cpu_prints_every_element(capfd: pytest.CaptureFixture[str]) -> None:
    x = np.array([-1.5, 0.25, 3.0, 1e10], np.float32)
    y = np.array([0, 1, 2, 3, 200, 5, 6, 255], np.uint8)
    b = np.array([0, 1, 0, 2], np.int8)
    print_kernel[(1,)](x, y, b, -7, 2 ** 40)
    got = _lines(capfd.readouterr().out)
    want = [
        "pid (0, 0, 0) idx (0) x: -1.500000", "pid (0, 0, 0) idx (1) x: 0.250000",
        "pid (0, 0, 0) idx (2) x: 3.000000", "pid (0, 0, 0) idx (3) x: 10000000000.000000",
        "pid (0, 0, 0) idx () vals: (operand 0) -7",
        *[f"pid (0, 0, 0) idx ({i // 2}, {i % 2}) vals: (operand 1) {int(v)}"
          for i, v in enumerate(y)],
        "pid (0, 0, 0) idx (0) b: 0", "pid (0, 0, 0) idx (1) b: 1",
        "pid (0, 0, 0) idx (2) b: 0", "pid (0, 0, 0) idx (3) b: 1",
        f"pid (0, 0, 0) idx () big: {2 ** 40}",
        "pid (0, 0, 0) idx () just text",
    ]
    assert got == want


@triton.jit
def print_dtypes(p_ptr, q_ptr, r_ptr, HEX: tl.constexpr):
    o = tl.arange(0, 2)
    tl.device_print("i64", tl.load(p_ptr + o), hex=HEX)
    tl.device_print("f16", tl.load(q_ptr + o))
    tl.device_print("u32", tl.load(r_ptr + o), hex=HEX)


def test_cpu_print_dtypes_and_hex(capfd: pytest.CaptureFixture[str]) -> None:
    p = np.array([-(2 ** 40), 5], np.int64)
    q = np.array([0.5, -2.0], np.float16)
    r = np.array([2 ** 32 - 1, 7], np.uint32)
    print_dtypes[(1,)](p, q, r, False)
    got = [ln.split(") ", 2)[-1] for ln in _lines(capfd.readouterr().out)]
    assert got == [f"i64: {-(2 ** 40)}", "i64: 5", "f16: 0.500000", "f16: -2.000000",
                   f"u32: {2 ** 32 - 1}", "u32: 7"]
    print_dtypes[(1,)](p, q, r, True)
    got = [ln.split(") ", 2)[-1] for ln in _lines(capfd.readouterr().out)]
    assert got[0] == "i64: 0xffffff0000000000" and got[1] == "i64: 0x0000000000000005"
    assert got[4:] == ["u32: 0xffffffff", "u32: 0x00000007"]


def test_cpu_print_from_every_program(capfd: pytest.CaptureFixture[str]) -> None:
    x = np.zeros(4, np.float32)
    y = np.zeros(8, np.uint8)
    print_kernel[(3, 2)](x, y, np.zeros(4, np.int8), 1, 2)
    got = _lines(capfd.readouterr().out)
    pids = {re.match(r"pid \((\d), (\d), 0\)", ln).groups() for ln in got}  # type: ignore[union-attr]
    assert pids == {(str(a), str(b)) for a in range(3) for b in range(2)}
    assert len(got) == 6 * 19


def test_ptx_uses_vprintf() -> None:
    ck = print_kernel.compile(target="sm90", signature="*fp32, *u8, *i8, i32, i64",
                              constexprs={})
    ptx = ck.asm["ptx"]
    assert "vprintf" in ptx
    assert "call.uni" in ptx or "call " in ptx
    assemble(print_kernel, "sm90", "*fp32, *u8, *i8, i32, i64", {})


@triton.jit
def print_big(x_ptr, n):
    x = tl.load(x_ptr + tl.arange(0, 64)[:, None] * 32 + tl.arange(0, 32)[None, :])
    tl.device_print("x", x)
    tl.device_print("p", x_ptr + tl.arange(0, 4))
    for i in range(n):
        tl.device_print("i", i)


def test_ptx_print_of_a_2d_tile_pointers_and_in_a_loop_assembles() -> None:
    assemble(print_big, "sm90", "*fp16, i32", {})


def test_cpu_print_pointers_in_a_loop_and_big_tiles(capfd: pytest.CaptureFixture[str]) -> None:
    x = np.ones(64 * 32, np.float16)
    print_big[(1,)](x, 3)
    got = _lines(capfd.readouterr().out)
    assert len(got) == 64 * 32 + 4 + 3
    addr = x.__array_interface__["data"][0]
    assert got[64 * 32] == f"pid (0, 0, 0) idx (0) p: {hex(addr)}"
    assert got[64 * 32 + 3] == f"pid (0, 0, 0) idx (3) p: {hex(addr + 6)}"
    assert got[-3:] == [f"pid (0, 0, 0) idx () i: {i}" for i in range(3)]


@pytest.mark.parametrize("kernel, signature", [(print_kernel, "*fp32, *u8, *i8, i32, i64"),
                                               (print_big, "*fp16, i32")])
def test_amd_print_links(kernel: object, signature: str) -> None:
    assemble(kernel, "gfx942", signature, {})


@triton.jit
def bad_print(x_ptr, WHICH: tl.constexpr):
    x = tl.load(x_ptr)
    if WHICH == 0:
        tl.device_print(x)
    else:
        tl.device_print("x", "text")


@pytest.mark.parametrize("which, msg", [(0, "prefix must be a string"),
                                        (1, "put text in the prefix")])
def test_print_errors(which: int, msg: str) -> None:
    with pytest.raises(TilecError, match=msg):
        bad_print[(1,)](np.zeros(1, np.float32), which)

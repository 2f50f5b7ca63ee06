"""The debug mode (issue 11, finding 9): bounds-checked memory accesses and
active `tl.device_assert` (passes/tile_debug_checks.py, tilec/runtime/debug.py),
and the crash message of a CPU kernel outside the debug mode.

Differential: every checked kernel that passes its checks gives NumPy's
answer; every reported failure names the kernel's line, the program id and
the offset that the test computes itself.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.driver import compile_kernel
from tilec.options import CompileOptions
from tilec.targets import toolchain

HERE = os.path.abspath(__file__)


def _line(text: str) -> int:
    """The line of this file holding `text` (once)."""
    with open(HERE) as f:
        lines = [i + 1 for i, ln in enumerate(f) if text in ln]
    assert len(lines) == 2, lines  # the kernel's line and the search string here
    return lines[0]


@tilec.kernel(debug=True)
def add_checked(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs)  # unmasked load
    tl.store(out_ptr + offs, x + y, mask=mask)


@tilec.kernel(debug=True)
def store_unmasked(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, x * 2)  # unmasked store


def test_masked_off_out_of_bounds_is_not_reported() -> None:
    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.ones(1024, np.float32)   # the unmasked load stays inside
    out = np.zeros(n, np.float32)
    add_checked[(16,)](x, y, out, n, BLOCK=64)   # 1024 > n: the mask keeps it in
    np.testing.assert_array_equal(out, x + 1)


def test_unmasked_store_past_the_end_is_reported_with_line_and_pid() -> None:
    n = 1000
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    with pytest.raises(tilec.TilecError) as e:
        store_unmasked[(16,)](x, out, n, BLOCK=64)
    text = str(e.value)
    assert f"{HERE}:{_line('x * 2)  # unmasked store')}:5" in text
    assert "tl.store(out_ptr + offs, x * 2)" in text and "^" in text
    assert "program (15, 0, 0)" in text            # 15 * 64 + 40 = 1000: the first outside
    assert "element offset 1000 from 'out_ptr'" in text and "0..999" in text
    # The checked kernel wrote nothing outside and everything inside.
    np.testing.assert_array_equal(out, 2 * x)


def test_unmasked_load_past_the_end_is_reported() -> None:
    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    with pytest.raises(tilec.TilecError) as e:
        add_checked[(16,)](x, y, out, n, BLOCK=64)
    text = str(e.value)
    assert f":{_line('y_ptr + offs)  # unmasked load')}:9" in text
    assert "out-of-bounds load of 'y_ptr'" in text
    assert "program (15, 0, 0)" in text and "element offset 1000" in text


@tilec.kernel(debug=True)
def shifted(x_ptr, out_ptr, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs - shift))  # shifted load


def test_negative_offset_is_reported() -> None:
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    shifted[(1,)](x, out, 0, BLOCK=64)
    np.testing.assert_array_equal(out, x)
    with pytest.raises(tilec.TilecError, match=r"program \(0, 0, 0\): element offset -3 from "
                                               r"'x_ptr'"):
        shifted[(1,)](x, out, 3, BLOCK=64)


def test_a_view_may_reach_the_rest_of_its_array() -> None:
    """The extent is the memory the array's owner holds: a view's negative
    offsets inside it are not errors."""
    base = np.arange(128, dtype=np.float32)
    out = np.zeros(64, np.float32)
    shifted[(1,)](base[16:80], out, 8, BLOCK=64)
    np.testing.assert_array_equal(out, base[8:72])


@tilec.kernel(debug=True)
def row_sums(a_ptr, out_ptr, stride, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    p = a_ptr + row * stride + cols[:, None] * 0 + tl.arange(0, BLOCK_K)[None, :]
    acc = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        acc += tl.load(p)  # loop-carried pointer
        p += BLOCK_K
    tl.store(out_ptr + row * BLOCK_N + cols, tl.sum(acc, axis=1))


def test_loop_carried_2d_pointer_is_checked() -> None:
    a = np.arange(4 * 64, dtype=np.float32).reshape(4, 64)
    out = np.zeros(4 * 2, np.float32)
    row_sums[(4,)](a, out, 64, 64, BLOCK_N=2, BLOCK_K=16)
    np.testing.assert_allclose(out.reshape(4, 2), np.repeat(a.sum(1, keepdims=True), 2, 1))
    with pytest.raises(tilec.TilecError) as e:
        row_sums[(4,)](a, out, 64, 80, BLOCK_N=2, BLOCK_K=16)   # K past the row end
    text = str(e.value)
    assert f":{_line('acc += tl.load(p)  # loop-carried pointer')}:16" in text
    assert "program (3, 0, 0): element offset 256" in text


@tilec.kernel(debug=True)
def histogram(x_ptr, h_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + offs, mask=m, other=0)
    tl.atomic_add(h_ptr + v, 1, mask=m)  # the bins


def test_atomic_out_of_bounds_is_reported() -> None:
    x = np.array([0, 1, 1, 3] * 8, dtype=np.int32)
    h = np.zeros(4, np.int32)
    histogram[(1,)](x, h, 32, BLOCK=32)
    np.testing.assert_array_equal(h, np.bincount(x, minlength=4))
    x[5] = 9
    with pytest.raises(tilec.TilecError, match=r"out-of-bounds atomic of 'h_ptr' .*element "
                                               r"offset 9 "):
        histogram[(1,)](x, np.zeros(4, np.int32), 32, BLOCK=32)


@tilec.kernel(debug=True)
def positive(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    tl.device_assert(x > 0, "x must be positive")  # the assertion


def test_device_assert_true_and_false() -> None:
    x = np.ones(100, np.float32)
    positive[(4,)](x, 100, BLOCK=32)
    x[70] = -1.0
    with pytest.raises(tilec.TilecError) as e:
        positive[(4,)](x, 100, BLOCK=32)
    text = str(e.value)
    line = _line("  # the assertion")
    assert f":{line}:5" in text
    assert "tl.device_assert failed in kernel 'positive', program (2, 0, 0): x must be " \
           "positive (element 6 of the condition is false)" in text


def test_device_assert_is_off_without_debug() -> None:
    plain = tilec.kernel(positive.fn, debug=False)
    x = -np.ones(100, np.float32)
    plain[(4,)](x, 100, BLOCK=32)   # not checked


def test_debug_off_has_no_checks_and_no_cost() -> None:
    """Without the debug mode the pass leaves nothing: no extra argument, no
    check, and a kernel's device_assert costs no instruction."""
    def body(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        tl.store(out_ptr + offs, x + 1)

    src_with = textwrap.dedent('''
        def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs)
            tl.device_assert(x > 0, "positive")
            tl.store(out_ptr + offs, x + 1)
    ''')
    src_without = src_with.replace('            tl.device_assert(x > 0, "positive")\n', "")
    sig, cx = "*fp32,*fp32", {"BLOCK": 64}
    kw, kwo = (tilec.kernel(body, debug=False) for _ in range(2))
    kw.src, kwo.src = src_with, src_without
    a = compile_kernel(kw, "cpu", sig, cx, CompileOptions(debug=False), keep_ir=True)
    b = compile_kernel(kwo, "cpu", sig, cx, CompileOptions(debug=False))
    after = dict(a.ir_after)["tile-debug-checks"]
    assert "tile.assert" in dict(a.ir_after)["frontend"]
    for word in ("tile.assert", "ptr_to_int", "__debug", "tile.debug_trap", "atomic_cas"):
        assert word not in after
    assert a.asm["asm"].replace("body", "k") == b.asm["asm"].replace("body", "k")
    on = compile_kernel(kw, "cpu", sig, cx, CompileOptions(debug=True), keep_ir=True)
    checked = dict(on.ir_after)["tile-debug-checks"]
    assert checked.count("tile.debug_trap") == 3 and "__debug_error" in checked


def test_debug_is_part_of_the_cache_key() -> None:
    from tilec.specialization import Specialization
    from tilec.specialization import ArgSpec
    args = (ArgSpec("x", tl.pointer_type(tl.float32), 16),)
    off = Specialization(args, (), "cpu", CompileOptions())
    on = Specialization(args, (), "cpu", CompileOptions(debug=True))
    assert off.cache_key("m.k", "h") != on.cache_key("m.k", "h")
    assert "debug" not in CompileOptions().as_dict()   # old keys stay the same
    with pytest.raises(tilec.TilecError, match="debug must be True or False"):
        tilec.kernel(lambda: None, debug="yes")   # type: ignore[arg-type]


def _child(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `code` as a script file in a child process (kernels need a source file)."""
    import tempfile
    full = dict(os.environ)
    full.update(env or {})
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "child.py")
        with open(path, "w") as f:
            f.write(textwrap.dedent(code))
        return subprocess.run([sys.executable, path], capture_output=True, text=True, env=full,
                              timeout=300)


_CHILD_KERNEL = '''
    import numpy as np, tilec, sys
    import tilec.language as tl
    {decorator}
    def wild(out_ptr, scale, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs * scale, offs.to(tl.float32))
    out = np.zeros(64, np.float32)
    wild[(1,)](out, 1, BLOCK=64)            # inside
    print("first launch done", flush=True)
    try:
        wild[(1,)](out, 16 * 10 ** 6, BLOCK=64)     # far outside
    except tilec.TilecError as e:
        print("TilecError:", e)
        sys.exit(3)
'''


def test_tilec_debug_environment_variable() -> None:
    r = _child(_CHILD_KERNEL.format(decorator="@tilec.kernel"), {"TILEC_DEBUG": "1"})
    assert r.returncode == 3, r.stderr
    assert "out-of-bounds store of 'out_ptr' in kernel 'wild', program (0, 0, 0): element " \
           "offset 16000000" in r.stdout


def test_triton_jit_debug_keyword() -> None:
    code = _CHILD_KERNEL.format(decorator="@tilec.jit(debug=True)")
    r = _child(code)
    assert r.returncode == 3 and "out-of-bounds store" in r.stdout, r.stderr


@pytest.mark.parametrize("native", ["1", "0"])
def test_crash_outside_debug_mode_names_the_kernel(native: str) -> None:
    """Without the debug mode the wild store kills the process (a child here),
    but not silently: the message names the kernel.  The second launch goes
    through the C launch path where it exists (TILEC_NATIVE_LAUNCH=1)."""
    r = _child(_CHILD_KERNEL.format(decorator="@tilec.kernel"),
               {"TILEC_DEBUG": "0", "TILEC_NATIVE_LAUNCH": native})
    assert "first launch done" in r.stdout
    assert r.returncode in (-11, -7), (r.returncode, r.stderr)   # SIGSEGV / SIGBUS
    assert "tilec: fatal signal SIG" in r.stderr
    assert "while the CPU kernel 'wild' was running" in r.stderr


def test_crash_hook_keeps_faulthandler() -> None:
    r = _child(_CHILD_KERNEL.format(decorator="@tilec.kernel"),
               {"TILEC_DEBUG": "0", "PYTHONFAULTHANDLER": "1"})
    assert "CPU kernel 'wild'" in r.stderr and "Fatal Python error" in r.stderr


def test_torch_tensor_extent_is_its_storage() -> None:
    torch = pytest.importorskip("torch")
    base = torch.arange(128, dtype=torch.float32)
    out = torch.zeros(64)
    shifted[(1,)](base[16:80], out, 8, BLOCK=64)   # reaches back into the storage
    assert torch.equal(out, base[8:72])
    with pytest.raises(tilec.TilecError, match="element offset -1 "):
        shifted[(1,)](base[:64], out, 1, BLOCK=64)


@pytest.mark.parametrize("target", ["sm90", "gfx942"])
def test_gpu_debug_mode_compiles_and_assembles(target: str) -> None:
    """A debug-mode kernel for the GPUs: NVIDIA prints through vprintf, neither
    traps (the host raises from the error record); the code assembles (ptxas / ld.lld)."""
    ck = compile_kernel(store_unmasked, target, "*fp32,*fp32,i32", {"BLOCK": 256},
                        CompileOptions(debug=True))
    if target == "sm90":
        ptx = ck.asm["ptx"]
        assert "vprintf" in ptx and "trap;" not in ptx   # reported by the host, no trap
        if toolchain.find_ptxas() is None:
            pytest.skip("ptxas not found")
        assert ck.asm.get("cubin")
    else:
        assert "s_trap" not in ck.asm["amdgcn"]   # the record is reported by the host
        if toolchain.find_lld() is None:
            pytest.skip("ld.lld not found")
        assert ck.asm.get("hsaco")
    plain = compile_kernel(store_unmasked, target, "*fp32,*fp32,i32", {"BLOCK": 256},
                           CompileOptions())
    text = plain.asm.get("ptx") or plain.asm["amdgcn"]
    assert "trap" not in text and "vprintf" not in text


def test_ahead_of_time_debug_kernel(tmp_path: "os.PathLike[str]") -> None:
    """`tilec compile --debug` writes a checked kernel; `tilec.load` launches it
    with the extents and raises the located error."""
    src = os.path.join(str(tmp_path), "kern.py")
    with open(src, "w") as f:
        f.write(textwrap.dedent('''
            import tilec
            import tilec.language as tl

            @tilec.kernel
            def twice(x_ptr, out_ptr, BLOCK: tl.constexpr):
                offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2)
        '''))
    out = os.path.join(str(tmp_path), "out")
    r = subprocess.run([sys.executable, "-m", "tilec.cli", "compile", src, "--target", "cpu",
                        "--signature", "*fp32,*fp32", "--constexpr", "BLOCK=64", "--debug",
                        "-o", out], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    k = tilec.load(os.path.join(out, "twice"))
    x = np.arange(128, dtype=np.float32)
    y = np.zeros(128, np.float32)
    k[(2,)](x, y)
    np.testing.assert_array_equal(y, 2 * x)
    with pytest.raises(tilec.TilecError, match=r"kern.py:8:30(.|\n)*out-of-bounds load of "
                                               r"'x_ptr' in kernel 'twice', program \(1, 0, 0\)"):
        k[(2,)](np.arange(100, dtype=np.float32), y)


@tilec.kernel(debug=True)
def pick(x_ptr, y_ptr, out_ptr, flag):
    pid = tl.program_id(0)
    p = x_ptr
    if flag > 0:
        p = y_ptr
    tl.store(out_ptr + pid, tl.load(p + pid))  # the chosen pointer


def test_pointer_chosen_between_arguments_is_checked_against_the_chosen_one() -> None:
    x = np.arange(8, dtype=np.float32)
    y = -np.arange(4, dtype=np.float32)
    out = np.zeros(8, np.float32)
    pick[(8,)](x, y, out, 0)
    np.testing.assert_array_equal(out, x)
    with pytest.raises(tilec.TilecError, match=r"'y_ptr' or 'x_ptr' in kernel 'pick', program "
                                               r"\(4, 0, 0\): element offset 4 "):
        pick[(5,)](x, y, out, 2)     # y holds 4: program 4 reads past it

"""User mistakes give a `tilec.TilecError` at the user's own file, line and column.

Every kernel line (or launch line) where a mistake is expected carries a
marker comment `# <- NAME`; the tests look the marker up in this file, so the
expected line numbers are exact and survive edits.  The expected column is
where the offending snippet starts on that line.
"""
from __future__ import annotations

import pathlib
import traceback
from typing import Any, Callable

import numpy as np
import pytest
import torch

import tilec
import tilec.language as tl

THIS_FILE = str(pathlib.Path(__file__).resolve())
LINES = pathlib.Path(__file__).read_text().splitlines()


def marker_line(name: str) -> int:
    """The 1-based line that ends with the marker comment `# <- name`."""
    hits = [i + 1 for i, text in enumerate(LINES) if text.rstrip().endswith(f"# <- {name}")]
    assert len(hits) == 1, f"marker {name!r} found {len(hits)} times"
    return hits[0]


def check_error(e: tilec.TilecError, marker: str, snippet: str, *fragments: str) -> None:
    """The error points at `snippet` on the marked line and says what is wrong."""
    line = marker_line(marker)
    text = LINES[line - 1]
    col = text.index(snippet) + 1
    msg = str(e)
    assert e.loc is not None, msg
    assert pathlib.Path(e.loc.file).resolve() == pathlib.Path(THIS_FILE), msg
    assert (e.loc.line, e.loc.col) == (line, col), f"expected {line}:{col}\n{msg}"
    head, quoted, caret, *rest = msg.splitlines()
    assert head == f"{e.loc.file}:{line}:{col}"
    assert quoted.strip() == text.strip()
    # the caret sits under the snippet, in the quoted line's columns
    assert caret.rstrip().endswith("^") and len(caret.rstrip()) - 1 == quoted.index(snippet), msg
    sentence = "\n".join(rest)
    assert sentence.startswith("error: ") and len(sentence) > 20
    for f in fragments:
        assert f in sentence, f"{f!r} not in {sentence!r}"
    # no chained internal exception, no frames from inside tilec but the API entry point
    assert e.__cause__ is None and e.__suppress_context__, msg
    frames = traceback.extract_tb(e.__traceback__)
    inside = [f for f in frames if "/tilec/" in f.filename.replace("\\", "/")]
    assert len(inside) <= 1 and all(f.filename.endswith("jit.py") for f in inside), \
        [f"{f.filename}:{f.lineno} {f.name}" for f in frames]


def raises(fn: Callable[[], Any]) -> tilec.TilecError:
    with pytest.raises(tilec.TilecError) as info:
        fn()
    assert type(info.value) is tilec.TilecError  # a user mistake, not a compiler bug
    return info.value


A = np.zeros(256, np.float32)


# ---------------------------------------------------------------- kernels with mistakes

@tilec.kernel
def k_undefined(x_ptr):
    tl.store(x_ptr, undefined_thing)  # noqa: F821  # <- undefined


@tilec.kernel
def k_listcomp(x_ptr):
    a = [i for i in range(3)]  # <- listcomp
    tl.store(x_ptr, a[0])


@tilec.kernel
def k_lambda(x_ptr):
    f = lambda v: v + 1  # noqa: E731  # <- lambda
    tl.store(x_ptr, f(1.0))


@tilec.kernel
def k_while(x_ptr, n):
    i = 0
    while i < n:  # <- while
        i += 1
    else:
        i = 0


@tilec.kernel
def k_break(x_ptr, n):
    for i in range(n):
        if i > 3:
            break  # <- break


@tilec.kernel
def k_shape(x_ptr):
    a = tl.arange(0, 128) + tl.arange(0, 256)  # <- shape
    tl.store(x_ptr + a, 1.0)


@tilec.kernel
def k_store_shape(x_ptr):
    offs = tl.arange(0, 64)
    tl.store(x_ptr + offs, tl.zeros((128,), tl.float32))  # <- store_shape


@tilec.kernel
def k_floordiv_float(x_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, x // 2.0)  # <- floordiv


@tilec.kernel
def k_invert_float(x_ptr):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs, ~tl.load(x_ptr + offs))  # <- invert


@tilec.kernel
def k_exp_int(x_ptr, o_ptr):
    offs = tl.arange(0, 16)
    tl.store(o_ptr + offs, tl.exp(tl.load(x_ptr + offs)))  # <- exp_int


@tilec.kernel
def k_float_offset(x_ptr):
    tl.store(x_ptr + 1.5, 0.0)  # <- float_offset


@tilec.kernel
def k_runtime_arange(x_ptr, n):
    tl.store(x_ptr + tl.arange(0, n), 1.0)  # <- runtime_arange


@tilec.kernel
def k_runtime_zeros(x_ptr, n):
    tl.store(x_ptr, tl.zeros((n,), tl.float32))  # <- runtime_zeros


@tilec.kernel
def k_non_pow2(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)  # <- non_pow2


@tilec.kernel
def k_if_tile(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    if x > 0:  # <- if_tile
        tl.store(x_ptr, 1.0)


@tilec.kernel
def k_loop_type(x_ptr, n):
    acc = 0
    for i in range(n):  # <- loop_type
        acc = acc + 0.5
    tl.store(x_ptr, acc)


@tilec.kernel
def k_if_types(x_ptr, n):
    if n > 0:  # <- if_types
        v = tl.zeros((16,), tl.float32)
    else:
        v = tl.zeros((16,), tl.int32)
    tl.store(x_ptr + tl.arange(0, 16), v)


@tilec.kernel
def k_branch_only(x_ptr, n):
    if n > 0:
        v = 1.0
    tl.store(x_ptr, v)  # <- branch_only


@tilec.kernel
def k_subscript(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    x[0] = 1.0  # <- subscript
    tl.store(x_ptr + tl.arange(0, 16), x)


@tilec.kernel
def k_unknown_call(x_ptr):
    tl.store(x_ptr, np.sum(1.0))  # <- unknown_call


@tilec.kernel
def k_unknown_tl(x_ptr):
    tl.store(x_ptr, tl.dot(1.0, 2.0))  # <- unknown_tl


@tilec.kernel
def k_builtin_on_tile(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr + tl.arange(0, 16), float(x))  # <- builtin_on_tile


@tilec.kernel
def k_return(x_ptr):
    tl.store(x_ptr, 1.0)
    return 1  # <- return


@tilec.kernel
def k_bad_kwarg(x_ptr):
    tl.store(x_ptr, 1.0, msk=True)  # <- bad_kwarg


@tilec.kernel
def k_bad_arity(x_ptr):
    tl.store(x_ptr + tl.arange(0, 16))  # <- bad_arity


@tilec.kernel
def k_chained(x_ptr, n):
    if 0 < n < 10:  # <- chained
        tl.store(x_ptr, 1.0)


@tilec.kernel
def k_try(x_ptr):
    try:  # <- try
        tl.store(x_ptr, 1.0)
    except Exception:
        pass


@tilec.kernel
def k_nested_def(x_ptr):
    def helper(v):  # <- nested_def
        return v
    tl.store(x_ptr, helper(1.0))


@tilec.kernel
def k_walrus(x_ptr):
    tl.store(x_ptr, (y := 2.0))  # <- walrus


@tilec.kernel
def k_assert(x_ptr, BLOCK: tl.constexpr):
    assert BLOCK % 16 == 0, "BLOCK must be a multiple of 16"  # <- assert
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


@tilec.kernel
def k_range_float(x_ptr):
    for i in range(0, 1.5):  # <- range_float
        tl.store(x_ptr + i, 1.0)


@tilec.kernel
def k_to_bad(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr).to("float"))  # <- to_bad


@tilec.kernel
def k_and_tile(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr + tl.arange(0, 16), (x > 0) and (x < 1))  # <- and_tile


@tilec.kernel
def k_literal_range(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr + tl.arange(0, 16), x + 1000)  # <- literal_range


@tilec.kernel
def k_negative_unsigned(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr + tl.arange(0, 16), tl.maximum(x, -1))  # <- negative_unsigned


@tilec.kernel
def k_huge_literal(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) * 2 ** 70)  # <- huge_literal


def nested_kernel() -> tilec.Kernel:
    @tilec.kernel
    def k_nested(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, missing_name)  # noqa: F821  # <- nested


    return k_nested


def nested_kernel_with_comment() -> tilec.Kernel:
    @tilec.kernel
    def k_comment(x_ptr, BLOCK: tl.constexpr):
        """A docstring."""
# a comment at column 0 inside a nested kernel is valid Python
        offs = tl.arange(0, BLOCK)
        v = (tl.load(x_ptr + offs) +
             missing_too)  # noqa: F821  # <- continuation
        tl.store(x_ptr + offs, v)
    return k_comment


KERNEL_CASES = [
    # (kernel, args, kwargs, marker, snippet, message fragments)
    (k_undefined, (A,), {}, "undefined", "undefined_thing", ["'undefined_thing'", "not defined"]),
    (k_listcomp, (A,), {}, "listcomp", "[i for", ["comprehension"]),
    (k_lambda, (A,), {}, "lambda", "lambda", ["lambda"]),
    (k_while, (A, 3), {}, "while", "while", ["while ... else"]),
    (k_break, (A, 3), {}, "break", "break", ["break"]),
    (k_shape, (A,), {}, "shape", "+ tl.arange(0, 256)", ["[128]", "[256]"]),
    (k_store_shape, (A,), {}, "store_shape", "tl.store", ["[128]", "[64]"]),
    (k_floordiv_float, (A,), {}, "floordiv", "//", ["'//'", "tl.floor"]),
    (k_invert_float, (A,), {}, "invert", "~", ["'~'", "float32"]),
    (k_exp_int, (np.zeros(16, np.int32), A), {}, "exp_int", "tl.exp", ["tl.exp", "floating"]),
    (k_float_offset, (A,), {}, "float_offset", "+ 1.5", ["offset", "integer"]),
    (k_runtime_arange, (A, 16), {}, "runtime_arange", "tl.arange", ["compile-time", "constexpr"]),
    (k_runtime_zeros, (A, 16), {}, "runtime_zeros", "tl.zeros", ["compile-time", "constexpr"]),
    (k_non_pow2, (A,), {"BLOCK": 100}, "non_pow2", "tl.arange", ["100", "power of two"]),
    (k_if_tile, (A,), {}, "if_tile", "x > 0", ["scalar", "tl.where"]),
    (k_loop_type, (A, 3), {}, "loop_type", "for", ["'acc'", "i32", "fp32"]),
    (k_if_types, (A, 3), {}, "if_types", "if", ["'v'", "fp32", "i32"]),
    (k_branch_only, (A, 3), {}, "branch_only", "v)", ["'v'", "one branch"]),
    (k_subscript, (A,), {}, "subscript", "x[0]", ["subscript"]),
    (k_unknown_call, (A,), {}, "unknown_call", "np.sum", ["cannot call"]),
    (k_unknown_tl, (A,), {}, "unknown_tl", "tl.dot", ["dot"]),
    (k_builtin_on_tile, (A,), {}, "builtin_on_tile", "float(", ["float()", ".to(tl.float32)"]),
    (k_return, (A,), {}, "return", "return", ["return a value"]),
    (k_bad_kwarg, (A,), {}, "bad_kwarg", "tl.store", ["'msk'", "tl.store(pointer, value, mask=None, "]),
    (k_bad_arity, (A,), {}, "bad_arity", "tl.store", ["value"]),
    (k_chained, (A, 3), {}, "chained", "0 < n < 10", ["chained comparison"]),
    (k_try, (A,), {}, "try", "try", ["try"]),
    (k_nested_def, (A,), {}, "nested_def", "def helper", ["nested function"]),
    (k_walrus, (A,), {}, "walrus", ":=", ["not Python syntax that tilec kernels support"]),
    (k_assert, (A,), {"BLOCK": 8}, "assert", "assert", ["BLOCK must be a multiple of 16"]),
    (k_range_float, (A,), {}, "range_float", "range(0, 1.5)", ["range()", "integer"]),
    (k_to_bad, (A,), {}, "to_bad", "tl.load(x_ptr).to", ["dtype"]),
    (k_and_tile, (A,), {}, "and_tile", "(x > 0) and", ["&"]),
    (k_literal_range, (np.zeros(16, np.int8),), {}, "literal_range", "+ 1000",
     ["1000", "out of range", "int8"]),
    (k_negative_unsigned, (np.zeros(16, np.uint8),), {}, "negative_unsigned", "tl.maximum",
     ["negative", "uint8"]),
    (k_huge_literal, (np.zeros(16, np.int64),), {}, "huge_literal", "* 2 ** 70",
     ["does not fit in 64 bits"]),
    (nested_kernel(), (A,), {"BLOCK": 16}, "nested", "missing_name", ["'missing_name'"]),
    (nested_kernel_with_comment(), (A,), {"BLOCK": 16}, "continuation", "missing_too",
     ["'missing_too'"]),
]


@pytest.mark.parametrize("kernel,args,kwargs,marker,snippet,fragments", KERNEL_CASES,
                         ids=[c[3] for c in KERNEL_CASES])
def test_kernel_code_errors(kernel: tilec.Kernel, args: tuple[Any, ...], kwargs: dict[str, Any],
                            marker: str, snippet: str, fragments: list[str]) -> None:
    e = raises(lambda: kernel[(1,)](*args, **kwargs))
    check_error(e, marker, snippet, *fragments)
    # the same error again (the parse is cached on the kernel; nothing is half-compiled)
    e2 = raises(lambda: kernel[(1,)](*args, **kwargs))
    assert str(e2) == str(e)


def test_kernel_code_error_from_ir_and_compile() -> None:
    e = raises(lambda: k_shape.ir(signature={"x_ptr": "*fp32"}))
    check_error(e, "shape", "+ tl.arange(0, 256)", "cannot be broadcast")
    e = raises(lambda: k_non_pow2.compile(signature="*fp32", constexprs={"BLOCK": 48}))
    check_error(e, "non_pow2", "tl.arange", "48")


# ---------------------------------------------------------------- launch mistakes

@tilec.kernel
def k_ok(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


@tilec.kernel
def k_reader(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@tilec.kernel
def k_annotated(x_ptr: "*fp32", n: "i32", BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs < n)


class FakeCudaArray:
    """A device array as CUDA libraries expose it (no CUDA needed to build one)."""

    def __init__(self) -> None:
        self.__cuda_array_interface__ = {"data": (0x7F0000000000, False), "typestr": "<f4",
                                         "shape": (256,), "strides": None, "version": 3}


def test_wrong_argument_count() -> None:
    e = raises(lambda: k_ok[(1,)](A, BLOCK=16))  # <- too_few
    check_error(e, "too_few", "k_ok[(1,)]", "takes 3 arguments", "missing: n")
    e = raises(lambda: k_ok[(1,)](A, 3, 16, 4))  # <- too_many
    check_error(e, "too_many", "k_ok[(1,)]", "takes 3 arguments", "4 were given")


def test_missing_constexpr() -> None:
    e = raises(lambda: k_ok[(1,)](A, 3))  # <- missing_constexpr
    check_error(e, "missing_constexpr", "k_ok[(1,)]", "missing: BLOCK")
    e = raises(lambda: k_ok.compile(signature="*fp32,i32"))  # <- missing_constexpr_compile
    check_error(e, "missing_constexpr_compile", "k_ok.compile", "'BLOCK'", "no value")


def test_unknown_and_duplicate_keyword_arguments() -> None:
    e = raises(lambda: k_ok[(1,)](A, 3, BLOCK=16, BLCK=16))  # <- unknown_kw
    check_error(e, "unknown_kw", "k_ok[(1,)]", "no parameter 'BLCK'")
    e = raises(lambda: k_ok[(1,)](A, 3, 16, BLOCK=16))  # <- duplicate_kw
    check_error(e, "duplicate_kw", "k_ok[(1,)]", "two values for parameter 'BLOCK'")


def test_annotation_mismatch() -> None:
    e = raises(lambda: k_annotated[(1,)](np.zeros(16), 16, BLOCK=16))  # <- ann_dtype
    check_error(e, "ann_dtype", "k_annotated[(1,)]", "'x_ptr'", "*fp32", "float64")
    e = raises(lambda: k_annotated[(1,)](A, 1.5, BLOCK=16))  # <- ann_scalar
    check_error(e, "ann_scalar", "k_annotated[(1,)]", "'n'", "i32", "float")
    e = raises(lambda: k_annotated[(1,)](A, 2 ** 40, BLOCK=16))  # <- ann_range
    check_error(e, "ann_range", "k_annotated[(1,)]", "'n'", "does not fit")
    e = raises(lambda: k_annotated[(1,)](3, 16, BLOCK=16))  # <- ann_ptr
    check_error(e, "ann_ptr", "k_annotated[(1,)]", "'x_ptr'", "scalar")


# None is accepted (Triton's constexpr None; using it is an error in the kernel:
# tests/test_none_args.py)
@pytest.mark.parametrize("bad,fragment", [([1.0, 2.0], "list"), ("abc", "str"),
                                          ({"a": 1}, "dict"),
                                          (torch.zeros(4, dtype=torch.complex64), "complex64"),
                                          (np.zeros(4, np.complex64), "complex64")],
                         ids=["list", "str", "dict", "torch-complex", "numpy-complex"])
def test_unsupported_argument(bad: Any, fragment: str) -> None:
    e = raises(lambda: k_ok[(1,)](bad, 3, BLOCK=16))  # <- bad_arg
    check_error(e, "bad_arg", "k_ok[(1,)]", "'x_ptr'", fragment)


def test_array_on_another_device() -> None:
    e = raises(lambda: k_reader[(1,)](FakeCudaArray(), A, 3, BLOCK=16))  # <- mixed_devices
    check_error(e, "mixed_devices", "k_reader[(1,)]", "cpu", "cuda")
    e = raises(lambda: k_ok[(1,)](FakeCudaArray(), 3, BLOCK=16))  # <- cuda_only
    assert "cuda" in str(e).lower() or "nvidia" in str(e).lower()
    check_error(e, "cuda_only", "k_ok[(1,)]")
    meta = torch.empty(16, device="meta")                 # a torch tensor on another device
    e = raises(lambda: k_ok[(1,)](meta, 3, BLOCK=16))  # <- meta_device
    check_error(e, "meta_device", "k_ok[(1,)]", "'x_ptr'", "meta")


def test_read_only_array_stored_through() -> None:
    ro = np.zeros(16, np.float32)
    ro.flags.writeable = False
    e = raises(lambda: k_ok[(1,)](ro, 3, BLOCK=16))  # <- read_only
    check_error(e, "read_only", "k_ok[(1,)]", "'x_ptr'", "read-only")
    # a read-only array the kernel only reads is fine
    out = np.zeros(16, np.float32)
    src = np.frombuffer(np.full(16, 2.5, np.float32).tobytes(), np.float32)  # read-only
    assert not src.flags.writeable
    k_reader[(1,)](src, out, 16, BLOCK=16)
    assert (out == 2.5).all()
    e = raises(lambda: k_reader[(1,)](out, ro, 16, BLOCK=16))  # <- read_only_out
    check_error(e, "read_only_out", "k_reader[(1,)]", "'o_ptr'", "read-only")


def test_kernel_called_without_grid() -> None:
    e = raises(lambda: k_ok(A, 3, BLOCK=16))  # <- no_grid
    check_error(e, "no_grid", "k_ok(A", "grid", "k_ok[grid]")


@pytest.mark.parametrize("grid", [(1, 2, 3, 4), "x", (1.5,), (-1,), ()],
                         ids=["4d", "str", "float", "negative", "empty"])
def test_bad_grid(grid: Any) -> None:
    e = raises(lambda: k_ok[grid](A, 3, BLOCK=16))  # <- bad_grid
    check_error(e, "bad_grid", "k_ok[grid]", "grid")


def test_bad_annotation_at_definition() -> None:
    def define() -> None:
        @tilec.kernel  # <- bad_annotation
        def k(x_ptr: "*fp33"):  # noqa: F821
            pass
    e = raises(define)
    check_error(e, "bad_annotation", "tilec.kernel", "'x_ptr'", "*fp33")

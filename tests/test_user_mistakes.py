"""Issue 11, findings 7 and 8: Python exceptions that escaped tilec and
mistakes that were accepted silently are now located `TilecError`s (the
kernel line carries a `# <- NAME` marker; the error must point at it with a
caret and hide tilec's frames); valid code that was rejected now runs."""
from __future__ import annotations

import pathlib
import traceback
from typing import Any, Callable

import numpy as np
import pytest

import tilec
import tilec.language as tl

THIS_FILE = pathlib.Path(__file__).resolve()
LINES = THIS_FILE.read_text().splitlines()


def located(fn: Callable[[], Any], marker: str, snippet: str, *fragments: str) -> None:
    with pytest.raises(tilec.TilecError) as info:
        fn()
    e = info.value
    assert type(e) is tilec.TilecError, repr(e)
    (line,) = [i + 1 for i, t in enumerate(LINES) if t.rstrip().endswith(f"# <- {marker}")]
    assert e.loc is not None and pathlib.Path(e.loc.file).resolve() == THIS_FILE, str(e)
    assert (e.loc.line, e.loc.col) == (line, LINES[line - 1].index(snippet) + 1), str(e)
    assert "^" in str(e) and all(f in str(e) for f in fragments), str(e)
    inside = [f for f in traceback.extract_tb(e.__traceback__) if "/tilec/" in f.filename]
    assert all(f.filename.endswith("jit.py") for f in inside)


@tilec.kernel
def bytes_literal(x_ptr, BLOCK: tl.constexpr):
    s = b"abc"  # <- bytes
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


@tilec.kernel
def where_shapes(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    c = tl.arange(0, 4) < 2
    v = tl.where(c, tl.load(x_ptr + offs), 0.0)  # <- where
    tl.store(x_ptr + offs, v)


@tilec.kernel
def addptr_shapes(x_ptr, BLOCK: tl.constexpr):
    p = x_ptr + tl.arange(0, 4)
    q = p + tl.arange(0, BLOCK)  # <- addptr
    tl.store(q, 1.0)


@tilec.kernel
def atomic_shapes(x_ptr, BLOCK: tl.constexpr):
    v = tl.zeros((4,), tl.float32)
    tl.atomic_add(x_ptr + tl.arange(0, BLOCK), v)  # <- atomic


@tilec.kernel
def int_store_mask(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = (offs < n).to(tl.int32)
    tl.store(x_ptr + offs, 1.0, mask=m)  # <- store_mask


@tilec.kernel
def int_load_mask(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs)  # <- load_mask
    tl.store(x_ptr + offs, v + 1)


@tilec.kernel
def int_atomic_mask(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(x_ptr + offs, 1.0, mask=offs & 1)  # <- atomic_mask


@tilec.kernel
def paren_targets(x_ptr, BLOCK: tl.constexpr):
    (offs) = tl.arange(0, BLOCK)
    (a, b) = (offs, 2.0)
    ((c)) = b
    (d), e = a, c
    tl.store(x_ptr + d, e)


def _x() -> np.ndarray:
    return np.zeros(16, np.float32)


def test_bytes_literal() -> None:
    located(lambda: bytes_literal[(1,)](_x(), BLOCK=16), "bytes", 'b"abc"', "byte strings")


def test_where_condition_shape() -> None:
    located(lambda: where_shapes[(1,)](_x(), BLOCK=16), "where", "tl.where", "[4]", "[16]")


def test_pointer_offset_shape() -> None:
    located(lambda: addptr_shapes[(1,)](_x(), BLOCK=16), "addptr", "+ tl", "[16]", "[4]")


def test_atomic_value_shape() -> None:
    located(lambda: atomic_shapes[(1,)](_x(), BLOCK=16), "atomic", "tl.atomic_add", "[4]")


@pytest.mark.parametrize("kernel, marker, snippet", [
    (int_store_mask, "store_mask", "tl.store"), (int_load_mask, "load_mask", "tl.load"),
    (int_atomic_mask, "atomic_mask", "tl.atomic_add")])
def test_int_mask_is_refused(kernel: Any, marker: str, snippet: str) -> None:
    located(lambda: kernel[(1,)](_x(), 8, BLOCK=16), marker, snippet, "mask must be boolean",
            "i32")


def test_parenthesised_assignment_targets() -> None:
    x = _x()
    paren_targets[(1,)](x, BLOCK=16)
    np.testing.assert_array_equal(x, np.full(16, 2.0, np.float32))

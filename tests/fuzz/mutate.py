"""Mutations of valid kernels the way users err.

Each mutation changes one generated case and says where the error must be
reported: the kernel line carrying the marker comment `# <- here` (a kernel
mistake), or the launch (`"expect": "launch"`: the worker's launch line).
A mutated case that runs without an error is a mistake accepted silently.
"""
from __future__ import annotations

import random
from typing import Any, Callable

from .gen import Case

MARK = "  # <- here"

# Lines inserted as the kernel's first statement (they need only x_ptr).
INSERTED = [
    ("undefined name", "    _q = undefined_name_q + 1"),
    ("undefined tl function", "    _q = tl.no_such_function(1)"),
    ("wrong arity", "    _q = tl.arange(0)"),
    ("too many arguments", "    _q = tl.program_id(0, 1, 2)"),
    ("unknown keyword", "    _q = tl.arange(0, 16, step=2)"),
    ("shape mismatch", "    _q = tl.arange(0, 16) + tl.arange(0, 32)"),
    ("store shape mismatch", "    tl.store(x_ptr + tl.arange(0, 16), tl.zeros((32,), dtype=tl.float32))"),
    ("pointer times int", "    _q = x_ptr * 2"),
    ("pointer plus float", "    _q = x_ptr + 1.5"),
    ("float op on ints", "    _q = tl.exp(tl.arange(0, 16))"),
    ("bitwise op on floats", "    _q = tl.zeros((16,), dtype=tl.float32) & 1"),
    ("axis out of range", "    _q = tl.sum(tl.arange(0, 16), axis=3)"),
    ("program id axis", "    _q = tl.program_id(5)"),
    ("non-power-of-two range", "    _q = tl.arange(0, 17)"),
    # (used: an unused tile is erased, as Triton does, and is no error)
    ("huge literal tile",
     "    tl.store(x_ptr, tl.sum(tl.zeros((1 << 20,), dtype=x_ptr.dtype.element_ty), axis=0))"),
    ("list comprehension", "    _q = [j for j in range(3)]"),
    ("lambda", "    _q = lambda: 1"),
    ("dict literal", "    _q = {1: 2}"),
    ("walrus", "    _q = (_r := 1)"),
    ("print to a file", "    print(1, file=None)"),  # print(...) itself is tl.device_print
    ("star call", "    _q = tl.arange(*(0, 16))"),
    ("matmul operator on scalars", "    _q = 1 @ 2"),
    ("string arithmetic", "    _q = 'a' + 1"),
    ("bytes literal", "    _q = b'abc'"),
    ("slice step", "    _q = tl.arange(0, 16)[::2]"),
    ("del statement", "    del x_ptr"),
    ("int mask", "    tl.store(x_ptr + tl.arange(0, 16), 0, mask=tl.arange(0, 16))"),
    ("where shapes", "    _q = tl.where(tl.arange(0, 4) < 2, tl.arange(0, 16), 0)"),
    ("load of a number", "    _q = tl.load(3)"),
    ("reduce a scalar", "    _q = tl.sum(3, axis=0)"),
    ("runtime assert", "    assert tl.program_id(0) == 0"),
]
# Statements that span lines: the marker goes on their first line.
BLOCKS = [
    ("try statement", ["    try:", "        _q = 1", "    except Exception:", "        _q = 2"]),
    ("with statement", ["    with open('f') as _f:", "        _q = 1"]),
    ("class definition", ["    class _Q:", "        pass"]),
    ("nested def", ["    def _inner():", "        return 1"]),
    ("while on a tile", ["    while tl.arange(0, 16) < 3:", "        _q = 1"]),
]


def _insert(case: Case, lines: list[str]) -> Case:
    src = case["source"].splitlines()
    at = next(k for k, line in enumerate(src) if line.startswith("def ")) + 1
    first = lines[0] + MARK
    src[at:at] = [first, *lines[1:]]
    return dict(case, source="\n".join(src) + "\n")


def _replace_on_line(case: Case, needle: str, new: str) -> Case | None:
    src = case["source"].splitlines()
    for k, line in enumerate(src):
        if needle in line:
            src[k] = line.replace(needle, new, 1) + MARK
            return dict(case, source="\n".join(src) + "\n")
    return None


def _huge_block(case: Case) -> Case | None:
    cx = case["constexprs"]
    key = "BLOCK" if "BLOCK" in cx else "BN"
    marked = _replace_on_line(case, f"tl.arange(0, {key})", f"tl.arange(0, {key})")
    if marked is None:
        return None
    return dict(marked, constexprs=dict(cx, **{key: 1 << 20}))


def _launch(change: Callable[[Case], Case]) -> Callable[[Case], Case | None]:
    def apply(case: Case) -> Case:
        return dict(change(case), expect="launch")
    return apply


def _string_scalar(case: Case) -> Case:
    scalars = dict(case["scalars"])
    key = next(iter(scalars))
    scalars[key] = "twelve"
    return dict(case, scalars=scalars)


def _drop_arg(case: Case) -> Case:
    return dict(case, params=case["params"][:-1])


def _extra_arg(case: Case) -> Case:
    return dict(case, params=case["params"] + ["__extra__"])


def _list_for_array(case: Case) -> Case:
    return dict(case, as_list=case["params"][0])


def _missing_constexpr(case: Case) -> Case:
    cx = dict(case["constexprs"])
    cx.pop(next(iter(cx)))
    return dict(case, constexprs=cx)


def _unknown_constexpr(case: Case) -> Case:
    return dict(case, constexprs=dict(case["constexprs"], NOPE=3))


def _bad_grid(case: Case) -> Case:
    return dict(case, grid=[0.5])


MUTATIONS: list[tuple[str, Callable[[Case], Case | None]]] = [
    *[(name, (lambda c, line=line: _insert(c, line.split("\n")))) for name, line in INSERTED],
    *[(name, (lambda c, lines=lines: _insert(c, lines))) for name, lines in BLOCKS],
    ("huge tile", _huge_block),
    ("mask of offsets", lambda c: _replace_on_line(c, "mask=m)", "mask=offs)")),
    ("store of a pointer", lambda c: _replace_on_line(c, "tl.store(o_ptr + offs, ",
                                                      "tl.store(o_ptr + offs, x_ptr + offs + 0 * ")),
    ("launch: string for an int", _launch(_string_scalar)),
    ("launch: missing argument", _launch(_drop_arg)),
    ("launch: extra argument", _launch(_extra_arg)),
    ("launch: list for an array", _launch(_list_for_array)),
    ("launch: missing constexpr", _launch(_missing_constexpr)),
    ("launch: unknown keyword", _launch(_unknown_constexpr)),
    ("launch: float grid", _launch(_bad_grid)),
]


def mutated_case(valid: Case, seed: int, i: int) -> Case:
    """One mutation of `valid` (retrying mutations that do not apply)."""
    r = random.Random(seed * 7_919 + i)
    for _ in range(20):
        name, fn = r.choice(MUTATIONS)
        out: Any = fn(valid)
        if out is not None:
            out = dict(out, valid=False, mutation=name)
            out.setdefault("expect", "kernel")
            return out  # type: ignore[no-any-return]
    raise AssertionError("no mutation applies")

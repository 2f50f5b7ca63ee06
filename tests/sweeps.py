"""Exhaustive sweeps: the test command runs a deterministic sample of them,
`TILEC_TEST_FULL=1` (or `bash scripts/test-full`) runs every case.

Two forms, both keyed on the switch below:

* `@pytest.mark.sample(every)` on a parametrized test (tests/conftest.py
  deselects the rest at collection): the cases whose parameter indices sum
  to a multiple of `every` (a diagonal through the grid, so each value of a
  parameter meets several values of the others), plus, for any parameter
  value the diagonal missed, the first case with it; every value of every
  parameter runs.  Only `parametrize` marks count (not fixture params).
* `sweeps.pick(i, every)` for a loop inside one test (the math table).

README.md's test section lists which tests are sampled; each says how.
"""
from __future__ import annotations

import os
from typing import Any, Sequence

FULL = os.environ.get("TILEC_TEST_FULL") == "1"


def pick(i: int, every: int) -> bool:
    """Whether case `i` of a sampled loop runs (every case with TILEC_TEST_FULL=1)."""
    return FULL or every <= 1 or i % every == 0


def _position(mark: Any, params: dict[str, Any]) -> int:
    """Where the item's values stand in one `parametrize` mark's list."""
    names = mark.args[0] if len(mark.args) > 0 else mark.kwargs["argnames"]
    values = mark.args[1] if len(mark.args) > 1 else mark.kwargs["argvalues"]
    names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
    for i, v in enumerate(values):
        v = getattr(v, "values", v) if type(v).__name__ == "ParameterSet" else v
        vals = v if len(names) > 1 else (v,)
        if all(params[n] is x for n, x in zip(names, vals)):
            return i
    raise ValueError(f"{names}: value not found in its parametrize list")


def _indices(item: Any) -> tuple[int, ...]:
    """One index per `parametrize` mark of the item (its position in that list)."""
    return tuple(_position(m, item.callspec.params) for m in item.iter_markers("parametrize"))


def deselect(items: Sequence[Any], named: Sequence[str] = ()) -> list[Any]:
    """The items of `sample`-marked tests that the sample leaves out (none with
    TILEC_TEST_FULL=1).  `named`: the command line's arguments; a case named
    there with its parameters (`test_x.py::test_y[a-b]`) always runs."""
    if FULL:
        return []
    asked = {a.split("::", 1)[1] for a in named if "::" in a and "[" in a}
    groups: dict[Any, list[tuple[Any, tuple[int, ...]]]] = {}
    for item in items:
        mark = item.get_closest_marker("sample")
        if mark is None or not hasattr(item, "callspec") or item.nodeid.split("::", 1)[1] in asked:
            continue
        groups.setdefault(item.function, []).append((item, _indices(item)))
    dropped = []
    for func, cases in groups.items():
        mark = cases[0][0].get_closest_marker("sample")
        every = int(mark.args[0])
        kept = {id(it) for it, ix in cases if sum(ix) % every == 0}
        seen = {(axis, v) for it, ix in cases if id(it) in kept for axis, v in enumerate(ix)}
        for it, ix in cases:                  # a value the diagonal missed: its first case
            if any((axis, v) not in seen for axis, v in enumerate(ix)):
                kept.add(id(it))
                seen.update(enumerate(ix))
        dropped += [it for it, _ in cases if id(it) not in kept]
    return dropped

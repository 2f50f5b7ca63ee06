"""Many distinct CPU kernels compiled and launched in one process (issue 11,
finding 2: heap corruption in a long-lived process).

Each case is a generated kernel source (elementwise, row reductions, scans,
atomics; 1-D and 2-D; several dtypes; masks that cut the last block) written
to its own module file and imported, so every kernel is distinct.  Every
array a kernel receives is a view into a larger buffer whose guard bands on
both sides hold a sentinel: a write out of bounds shows up as a changed
guard at once, not as a glibc abort forty kernels later.  Each kernel is
launched twice through a static grid (the second launch takes the C launch
path when the grid is small) and once through a grid function (the Python
path); results are compared with NumPy.

Run: python tests/stress_cpu.py --cases 300 [--seed S] [--no-compile]
(the sanitizer script scripts/sanitize_cpu.sh runs it under valgrind).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import random
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

GUARD = 4096            # elements of sentinel on each side of every array
DTYPES = {"fp32": np.float32, "fp64": np.float64, "i32": np.int32, "i64": np.int64,
          "i8": np.int8, "i16": np.int16, "fp16": np.float16}


@dataclass
class Case:
    name: str
    source: str                                  # kernel source (def ...)
    make: Callable[[np.random.Generator], dict[str, Any]]   # inputs (arrays, ints)
    outputs: list[str]                           # names of the arrays it writes
    reference: Callable[[dict[str, Any]], dict[str, np.ndarray]]
    grid: Callable[[dict[str, Any]], tuple[int, ...]]
    constexprs: dict[str, int]
    params: list[str]                            # runtime parameter names, in order
    exact: bool = True


class Guarded:
    """Arrays as views into guard-banded buffers, checked after each launch."""

    def __init__(self) -> None:
        self.buffers: list[tuple[np.ndarray, np.ndarray, str]] = []

    def array(self, values: np.ndarray, what: str) -> np.ndarray:
        values = np.ascontiguousarray(values)
        buf = np.empty(values.size + 2 * GUARD, values.dtype)
        buf.view(np.uint8)[:] = 0xA5
        view = buf[GUARD:GUARD + values.size].reshape(values.shape)
        view[...] = values
        self.buffers.append((buf, buf.copy(), what))
        return view

    def refresh(self) -> None:
        self.buffers = [(b, b.copy(), w) for b, _, w in self.buffers]

    def check(self) -> list[str]:
        bad = []
        for buf, _, what in self.buffers:
            g = buf.view(np.uint8)
            item = buf.itemsize
            lo, hi = g[:GUARD * item], g[len(g) - GUARD * item:]
            for side, band in (("before", lo), ("after", hi)):
                changed = np.nonzero(band != 0xA5)[0]
                if changed.size:
                    bad.append(f"{what}: {changed.size} guard bytes {side} the array changed "
                               f"(first at byte {int(changed[0])})")
        return bad


# ---------------------------------------------------------------- case generators

def _elementwise(i: int, r: random.Random) -> Case:
    dt = r.choice(["fp32", "fp64", "i32", "i64", "i16", "fp16"])
    block = r.choice([16, 32, 64, 128, 256, 1024])
    op, ref = r.choice([("x + y", lambda x, y: x + y), ("x * 2 - y", lambda x, y: x * 2 - y),
                        ("tl.maximum(x, y)", np.maximum), ("tl.where(x > y, x, y)", np.maximum)])
    n = r.randint(1, 3 * block)
    src = f"""
    @tilec.kernel
    def k{i}(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m)
        y = tl.load(y_ptr + offs, mask=m)
        tl.store(o_ptr + offs, {op}, mask=m)
    """
    npdt = DTYPES[dt]

    def make(g: np.random.Generator) -> dict[str, Any]:
        return {"x": (g.integers(-50, 50, n)).astype(npdt), "y": g.integers(-50, 50, n).astype(npdt),
                "o": np.zeros(n, npdt), "n": n}
    return Case(f"k{i}", src, make, ["o"],
                lambda a: {"o": ref(a["x"], a["y"]).astype(npdt)},
                lambda a: (-(-n // block),), {"BLOCK": block}, ["x", "y", "o", "n"])


def _rows(i: int, r: random.Random) -> Case:
    dt = r.choice(["fp32", "i32", "i64", "i8", "fp64"])
    block = r.choice([16, 64, 128, 512])
    rows = r.randint(1, 9)
    n = r.randint(1, block)
    kind = r.choice(["sum", "max", "min", "argmax", "argmin"])
    other = {"sum": "0", "max": "-100", "min": "100", "argmax": "-100", "argmin": "100"}[kind]
    src = f"""
    @tilec.kernel
    def k{i}(x_ptr, o_ptr, n, stride, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n, other={other})
        tl.store(o_ptr + row, tl.{kind}(x, axis=0))
    """
    npdt = DTYPES[dt]
    odt = np.int32 if kind.startswith("arg") else npdt
    fn = {"sum": np.sum, "max": np.max, "min": np.min, "argmax": np.argmax, "argmin": np.argmin}[kind]

    def make(g: np.random.Generator) -> dict[str, Any]:
        return {"x": g.integers(-20, 20, (rows, n)).astype(npdt), "o": np.zeros(rows, odt),
                "n": n, "stride": n}

    def ref(a: dict[str, Any]) -> dict[str, np.ndarray]:
        x = a["x"]
        if kind == "sum" and npdt == np.int8:
            return {"o": x.astype(np.int32).sum(axis=1).astype(odt)}
        return {"o": fn(x, axis=1).astype(odt)}
    return Case(f"k{i}", src, make, ["o"], ref, lambda a: (rows,), {"BLOCK": block},
                ["x", "o", "n", "stride"])


def _two_d(i: int, r: random.Random) -> Case:
    dt = r.choice(["fp32", "i32", "fp16"])
    bm, bn = r.choice([4, 8, 16]), r.choice([16, 32, 64])
    R, C = r.randint(1, 2 * bm), r.randint(1, 2 * bn)
    src = f"""
    @tilec.kernel
    def k{i}(x_ptr, b_ptr, o_ptr, R, C, BM: tl.constexpr, BN: tl.constexpr):
        rows = tl.program_id(0) * BM + tl.arange(0, BM)
        cols = tl.program_id(1) * BN + tl.arange(0, BN)
        ok = (rows[:, None] < R) & (cols[None, :] < C)
        x = tl.load(x_ptr + rows[:, None] * C + cols[None, :], mask=ok, other=0)
        b = tl.load(b_ptr + cols, mask=cols < C, other=0)
        tl.store(o_ptr + rows[:, None] * C + cols[None, :], x + b[None, :], mask=ok)
    """
    npdt = DTYPES[dt]

    def make(g: np.random.Generator) -> dict[str, Any]:
        return {"x": g.integers(-9, 9, (R, C)).astype(npdt), "b": g.integers(-9, 9, C).astype(npdt),
                "o": np.zeros((R, C), npdt), "R": R, "C": C}
    return Case(f"k{i}", src, make, ["o"], lambda a: {"o": (a["x"] + a["b"][None, :]).astype(npdt)},
                lambda a: (-(-R // bm), -(-C // bn)), {"BM": bm, "BN": bn},
                ["x", "b", "o", "R", "C"])


def _scan(i: int, r: random.Random) -> Case:
    dt = r.choice(["fp32", "i32", "i64"])
    block = r.choice([16, 64, 256])
    n = r.randint(1, block)
    rows = r.randint(1, 5)
    src = f"""
    @tilec.kernel
    def k{i}(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        m = cols < n
        x = tl.load(x_ptr + row * n + cols, mask=m, other=0)
        tl.store(o_ptr + row * n + cols, tl.cumsum(x, axis=0), mask=m)
    """
    npdt = DTYPES[dt]

    def make(g: np.random.Generator) -> dict[str, Any]:
        return {"x": g.integers(-9, 9, (rows, n)).astype(npdt), "o": np.zeros((rows, n), npdt),
                "n": n}
    return Case(f"k{i}", src, make, ["o"], lambda a: {"o": np.cumsum(a["x"], axis=1).astype(npdt)},
                lambda a: (rows,), {"BLOCK": block}, ["x", "o", "n"])


def _atomics(i: int, r: random.Random) -> Case:
    vt = r.choice(["fp32", "i32"])
    block = r.choice([32, 128, 256])
    bins = r.choice([4, 16, 64])
    n = r.randint(1, 4 * block)
    src = f"""
    @tilec.kernel
    def k{i}(x_ptr, h_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m, other=0)
        tl.atomic_add(h_ptr + (x & {bins - 1}), 1, mask=m)
    """
    npdt = DTYPES[vt]

    def make(g: np.random.Generator) -> dict[str, Any]:
        return {"x": g.integers(0, 127, n).astype(np.int8), "h": np.zeros(bins, npdt), "n": n}
    return Case(f"k{i}", src, make, ["h"],
                lambda a: {"h": np.bincount(a["x"] & (bins - 1), minlength=bins).astype(npdt)},
                lambda a: (-(-n // block),), {"BLOCK": block}, ["x", "h", "n"])


def _softmax(i: int, r: random.Random) -> Case:
    block = r.choice([16, 32, 128, 256, 1024])
    n = r.randint(1, block)
    rows = r.randint(1, 7)
    dt = r.choice(["fp32", "fp64"])
    src = f"""
    @tilec.kernel
    def k{i}(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        m = cols < n
        x = tl.load(x_ptr + row * n + cols, mask=m, other=float("-inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(o_ptr + row * n + cols, e / tl.sum(e, axis=0), mask=m)
    """
    npdt = DTYPES[dt]

    def make(g: np.random.Generator) -> dict[str, Any]:
        return {"x": g.standard_normal((rows, n)).astype(npdt), "o": np.zeros((rows, n), npdt),
                "n": n}

    def ref(a: dict[str, Any]) -> dict[str, np.ndarray]:
        e = np.exp(a["x"] - a["x"].max(axis=1, keepdims=True))
        return {"o": (e / e.sum(axis=1, keepdims=True)).astype(npdt)}
    return Case(f"k{i}", src, make, ["o"], ref, lambda a: (rows,), {"BLOCK": block},
                ["x", "o", "n"], exact=False)


def _transpose(i: int, r: random.Random) -> Case:
    """A transposed (scattered) masked store, and a boolean output."""
    dt = r.choice(["fp32", "i8", "i16", "i64"])
    bm, bn = r.choice([2, 8, 16]), r.choice([4, 16, 32])
    R, C = r.randint(1, 2 * bm), r.randint(1, 2 * bn)
    src = f"""
    @tilec.kernel
    def k{i}(x_ptr, o_ptr, p_ptr, R, C, BM: tl.constexpr, BN: tl.constexpr):
        rows = tl.program_id(0) * BM + tl.arange(0, BM)
        cols = tl.program_id(1) * BN + tl.arange(0, BN)
        ok = (rows[:, None] < R) & (cols[None, :] < C)
        x = tl.load(x_ptr + rows[:, None] * C + cols[None, :], mask=ok, other=0)
        tl.store(o_ptr + cols[None, :] * R + rows[:, None], x, mask=ok)
        tl.store(p_ptr + rows[:, None] * C + cols[None, :], x > 0, mask=ok)
    """
    npdt = DTYPES[dt]

    def make(g: np.random.Generator) -> dict[str, Any]:
        return {"x": g.integers(-9, 9, (R, C)).astype(npdt), "o": np.zeros((C, R), npdt),
                "p": np.zeros((R, C), np.bool_), "R": R, "C": C}
    return Case(f"k{i}", src, make, ["o", "p"], lambda a: {"o": a["x"].T.copy(), "p": a["x"] > 0},
                lambda a: (-(-R // bm), -(-C // bn)), {"BM": bm, "BN": bn},
                ["x", "o", "p", "R", "C"])


def _scalar_and_old(i: int, r: random.Random) -> Case:
    """Masked scalar stores and atomics whose old values are stored."""
    block = r.choice([8, 32, 64])
    n = r.randint(1, 3 * block)
    src = f"""
    @tilec.kernel
    def k{i}(x_ptr, c_ptr, s_ptr, old_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m, other=0)
        old = tl.atomic_add(c_ptr + offs * 0, x, mask=m)
        tl.store(old_ptr + offs, old * 0 + 1, mask=m)
        tl.store(s_ptr + pid, tl.sum(x, axis=0), mask=pid * BLOCK < n)
    """
    progs = -(-n // block)

    def make(g: np.random.Generator) -> dict[str, Any]:
        return {"x": g.integers(-9, 9, n).astype(np.int32), "c": np.zeros(1, np.int32),
                "s": np.zeros(progs, np.int32), "old": np.zeros(n, np.int32), "n": n}

    def ref(a: dict[str, Any]) -> dict[str, np.ndarray]:
        x = a["x"]
        sums = np.array([x[j * block:(j + 1) * block].sum() for j in range(progs)], np.int32)
        return {"c": np.array([x.sum()], np.int32), "s": sums, "old": np.ones(n, np.int32)}
    return Case(f"k{i}", src, make, ["c", "s", "old"], ref, lambda a: (progs,),
                {"BLOCK": block}, ["x", "c", "s", "old", "n"])


GENERATORS = [_elementwise, _rows, _two_d, _scan, _atomics, _softmax, _transpose, _scalar_and_old]


def make_cases(count: int, seed: int) -> list[Case]:
    r = random.Random(seed)
    return [GENERATORS[i % len(GENERATORS)](i, r) for i in range(count)]


def load_kernels(cases: list[Case], directory: str) -> Any:
    """Write every case's kernel into one module file and import it."""
    body = "import tilec\nimport tilec.language as tl\n" + "".join(
        textwrap.dedent(c.source) for c in cases)
    path = os.path.join(directory, f"stress_kernels_{os.getpid()}_{len(cases)}.py")
    with open(path, "w") as f:
        f.write(body)
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run_case(module: Any, case: Case, seed: int) -> list[str]:
    """Launch one case three times (static grid twice, grid function once); the
    problems found (guard bands, wrong values)."""
    kernel = getattr(module, case.name)
    problems: list[str] = []
    for how in ("static", "static-again", "grid-function"):
        g = np.random.default_rng(seed)
        raw = case.make(g)
        guarded = Guarded()
        args = {k: guarded.array(v, f"{case.name}.{k}") if isinstance(v, np.ndarray) else v
                for k, v in raw.items()}
        grid: Any = case.grid(raw)
        if how == "grid-function":
            fixed = grid
            grid = lambda meta: fixed  # noqa: E731
        kernel[grid](*[args[p] for p in case.params], **case.constexprs)
        problems += [f"{case.name} ({how}): {p}" for p in guarded.check()]
        want = case.reference(raw)
        for name in case.outputs:
            got = args[name]
            ok = np.array_equal(got, want[name]) if case.exact else np.allclose(got, want[name])
            if not ok:
                problems.append(f"{case.name} ({how}): wrong values in {name}")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dir", default=None, help="where the kernel module is written")
    ap.add_argument("--require-native", action="store_true",
                    help="fail unless the C launch path is built and used")
    a = ap.parse_args(argv)
    if a.require_native:
        from tilec.runtime import native
        if native.launch_module() is None:
            print(f"the C launch path is not available: {native.status()}")
            return 2
    cases = make_cases(a.cases, a.seed)
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="tilec-stress-") as d:
        module = load_kernels(cases, a.dir or d)
        problems: list[str] = []
        for i, c in enumerate(cases):
            problems += run_case(module, c, a.seed + i)
    for p in problems:
        print(p)
    print(f"{len(cases)} kernels, {3 * len(cases)} launches, {len(problems)} problems, "
          f"{time.time() - t0:.1f} s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

"""`tilec.testing`: Triton's `triton.testing` helpers for ported benchmarks.

`do_bench(fn)` times `fn` (milliseconds; on a GPU with CUDA events and the L2
flushed before each call, as Triton does; the host clock otherwise) and
returns the mean, or the `quantiles` asked for.
`do_bench_cudagraph` is `do_bench` (no CUDA graphs here; on the CPU there is
nothing to capture).  `assert_close` compares arrays/tensors (NumPy or torch)
with tolerances.  `Benchmark` and `perf_report` run a function over a grid of
arguments and print (or return) the table; `save_path=` writes
`<plot_name>.csv` there, `show_plots=True` prints the table and plots it with
matplotlib where installed (`<plot_name>.png` in save_path).
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence


def _sync(device_is_cuda: bool) -> None:
    if device_is_cuda:
        import torch
        torch.cuda.synchronize()


def _uses_cuda() -> bool:
    try:
        import torch
        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def do_bench(fn: Callable[[], Any], warmup: float = 25, rep: float = 100,
             grad_to_none: Any = None, quantiles: Sequence[float] | None = None,
             return_mode: str = "mean") -> Any:
    """Run `fn` repeatedly for about `rep` ms (after `warmup` ms) and return its
    time per call in ms: `quantiles` of the samples if given, else by
    `return_mode` ("min", "max", "mean", "median", "all")."""
    cuda = _uses_cuda()
    if cuda:
        return _do_bench_cuda(fn, warmup, rep, grad_to_none, quantiles, return_mode)
    fn()
    _sync(cuda)
    t0 = time.perf_counter()
    fn()
    _sync(cuda)
    one = max((time.perf_counter() - t0) * 1e3, 1e-3)
    for _ in range(max(0, int(warmup / one))):
        fn()
    _sync(cuda)
    times = []
    for _ in range(max(1, int(rep / one))):
        if grad_to_none is not None:
            for x in grad_to_none:
                x.grad = None
        t = time.perf_counter()
        fn()
        _sync(cuda)
        times.append((time.perf_counter() - t) * 1e3)
    return _summary(times, quantiles, return_mode)


def _summary(times: list[float], quantiles: Sequence[float] | None, return_mode: str) -> Any:
    if quantiles is not None:
        s = sorted(times)
        out = [s[min(len(s) - 1, int(q * len(s)))] for q in quantiles]
        return out[0] if len(out) == 1 else out
    if return_mode == "all":
        return times
    pick: dict[str, Callable[[list[float]], float]] = {
        "min": min, "max": max, "mean": statistics.fmean, "median": statistics.median}
    return pick[return_mode](times)


def _do_bench_cuda(fn: Callable[[], Any], warmup: float, rep: float, grad_to_none: Any,
                   quantiles: Sequence[float] | None, return_mode: str) -> Any:
    """`do_bench` on a GPU, as Triton measures: CUDA events around each call,
    the L2 cache flushed (a 256 MB buffer zeroed) before each, the number of
    warm-up and timed calls estimated from five calls."""
    import torch
    fn()
    torch.cuda.synchronize()
    cache = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        cache.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate = max(start.elapsed_time(end) / 5, 1e-6)
    n_warmup, n_repeat = max(1, int(warmup / estimate)), max(1, int(rep / estimate))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    for _ in range(n_warmup):
        fn()
    for i in range(n_repeat):
        if grad_to_none is not None:
            for x in grad_to_none:
                x.grad = None
        cache.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return _summary([s.elapsed_time(e) for s, e in zip(starts, ends)], quantiles, return_mode)


def do_bench_cudagraph(fn: Callable[[], Any], rep: float = 20, grad_to_none: Any = None,
                       quantiles: Sequence[float] | None = None,
                       return_mode: str = "mean") -> Any:
    """`do_bench` (tilec launches no CUDA graphs; the CPU fallback times `fn`)."""
    return do_bench(fn, warmup=rep / 4, rep=rep, grad_to_none=grad_to_none,
                    quantiles=quantiles, return_mode=return_mode)


def _numpy(x: Any) -> Any:
    import numpy as np
    if hasattr(x, "detach"):
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":
            x = x.float()
        return x.numpy()
    return np.asarray(x)


def assert_close(x: Any, y: Any, atol: float | None = None, rtol: float | None = None,
                 err_msg: str = "") -> None:
    """Raise AssertionError unless x and y agree within atol + rtol * |y|
    (defaults 1e-2 / 0 as Triton's)."""
    import numpy as np
    a, b = _numpy(x), _numpy(y)
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    np.testing.assert_allclose(a.astype(np.float64) if a.dtype.kind == "f" else a,
                               b.astype(np.float64) if b.dtype.kind == "f" else b,
                               atol=atol, rtol=rtol, err_msg=err_msg)


@dataclass
class Benchmark:
    """One benchmark table: `x_vals` for `x_names`, one line per `line_vals`."""

    x_names: list[str]
    x_vals: list[Any]
    line_arg: str
    line_vals: list[Any]
    line_names: list[str]
    plot_name: str
    args: dict[str, Any] = field(default_factory=dict)
    xlabel: str = ""
    ylabel: str = ""
    x_log: bool = False
    y_log: bool = False
    styles: Any = None


class Mark:
    """A function decorated with `perf_report`: `.run(print_data=True)`."""

    def __init__(self, fn: Callable[..., Any], benchmarks: Benchmark | list[Benchmark]) -> None:
        self.fn = fn
        self.benchmarks = benchmarks if isinstance(benchmarks, list) else [benchmarks]

    def _table(self, bench: Benchmark, **kwargs: Any) -> list[list[Any]]:
        rows = []
        for x in bench.x_vals:
            xs = x if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            xargs = dict(zip(bench.x_names, xs))
            row = list(xs)
            for line in bench.line_vals:
                r = self.fn(**xargs, **{bench.line_arg: line}, **bench.args, **kwargs)
                row.append(r[0] if isinstance(r, tuple) else r)
            rows.append(row)
        return rows

    def run(self, show_plots: bool = False, print_data: bool = False, save_path: str = "",
            return_df: bool = False, **kwargs: Any) -> Any:
        tables = []
        for bench in self.benchmarks:
            rows = self._table(bench, **kwargs)
            header = list(bench.x_names) + list(bench.line_names)
            if print_data or show_plots:
                print(f"{bench.plot_name}:")
                print("\t".join(header))
                for r in rows:
                    print("\t".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in r))
            tables.append((header, rows))
            if save_path:
                _save(bench, header, rows, save_path)
            if show_plots:
                _plot(bench, header, rows, save_path)
        if return_df:
            return tables[0] if len(tables) == 1 else tables
        return None


def _save(bench: Benchmark, header: list[str], rows: list[list[Any]], folder: str) -> None:
    """`<save_path>/<plot_name>.csv` (Triton writes this file too)."""
    import csv
    import os
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{bench.plot_name}.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def _plot(bench: Benchmark, header: list[str], rows: list[list[Any]], folder: str) -> None:
    """One line per `line_vals` against the first x name, with matplotlib where
    it is installed (shown with its backend's `show`, saved as
    `<save_path>/<plot_name>.png` when save_path is given); nothing otherwise."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        return
    nx = len(bench.x_names)
    fig, ax = plt.subplots()
    xs = [r[0] for r in rows]
    for j, name in enumerate(header[nx:]):
        style = bench.styles[j] if bench.styles and j < len(bench.styles) else None
        ax.plot(xs, [r[nx + j] for r in rows], label=name,
                color=style[0] if style else None, linestyle=style[1] if style else None)
    ax.set_xlabel(bench.xlabel or bench.x_names[0])
    ax.set_ylabel(bench.ylabel)
    if bench.x_log:
        ax.set_xscale("log")
    if bench.y_log:
        ax.set_yscale("log")
    ax.legend()
    if folder:
        import os
        fig.savefig(os.path.join(folder, f"{bench.plot_name}.png"))
    plt.show()
    plt.close(fig)


def perf_report(benchmarks: Benchmark | list[Benchmark]) -> Callable[[Callable[..., Any]], Mark]:
    """Decorator: a benchmark function run over `benchmarks` by `.run()`."""
    return lambda fn: Mark(fn, benchmarks)


__all__ = ["do_bench", "do_bench_cudagraph", "assert_close", "Benchmark", "perf_report"]

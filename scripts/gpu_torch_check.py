"""PyTorch integration on a real NVIDIA GPU: torch.compile (fullgraph, inductor),
CUDA graphs (mode="reduce-overhead"), a tilec.torch custom op, host time per launch.

Two phases, as scripts/gpu_suite.py (the GPU machine has no compiler):

    # here: compile what `run` launches for sm90 into a cache
    TILEC_CACHE_DIR=$PWD/.carry/tilec-cache .venv/bin/python scripts/gpu_torch_check.py prepare
    # on the GPU machine
    TILEC_CACHE_DIR=$PWD/.carry/tilec-cache PYTHONPATH=. python3 scripts/gpu_torch_check.py run

`run` checks every result against torch, counts graph breaks with
torch._dynamo.explain (must be 0), and prints a table of host time per call
(microseconds; the loop's wall time divided by the calls, synchronised once at
the end) for eager launches, the compiled function and its CUDA-graph version,
next to torch doing the same add.  The closing line is 'N passed, N failed'.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tilec  # noqa: E402
import tilec.language as tl  # noqa: E402

N = 1 << 20          # a multiple of 16: the i32:16 specialization prepared below
BLOCK = 1024
GRID = (N // BLOCK,)


@tilec.kernel
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@tilec.kernel
def scale_kernel(x_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * a, mask=m)


def prepare() -> None:
    import numpy as np
    x = np.zeros(N, np.float32)  # 16-byte aligned, like CUDA allocations
    add_kernel.warmup(x, x, x, N, BLOCK=BLOCK, target="sm90")
    scale_kernel.warmup(x, x, 2.0, N, BLOCK=BLOCK, target="sm90")
    print(f"prepared add_kernel and scale_kernel for sm90 (n={N}, BLOCK={BLOCK})")


def per_call_us(fn: Callable[[], Any], n: int = 2000, blocks: int = 7) -> float:
    import torch
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(blocks):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(times)


def run() -> int:
    import torch
    import tilec.torch  # noqa: F401
    passed = failed = 0
    rows: list[tuple[str, float]] = []
    x, y = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    out = torch.empty_like(x)

    def f(a: Any, b: Any) -> Any:
        c = torch.empty_like(a)
        add_kernel[GRID](a, b, c, a.numel(), BLOCK=BLOCK)
        d = torch.empty_like(a)
        scale_kernel[GRID](c, d, 2.0, a.numel(), BLOCK=BLOCK)
        return d.relu()

    @tilec.torch.custom_op("tilec_gpu_check::add", outputs="a")
    def add_op(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
        add_kernel[GRID](a, b, c, a.numel(), BLOCK=BLOCK)

    def g(a: Any, b: Any) -> Any:
        return add_op(a, b) * 3

    def check(name: str, body: Callable[[], None]) -> None:
        nonlocal passed, failed
        try:
            body()
            passed += 1
            print(f"PASS {name}")
        except Exception:
            failed += 1
            print(f"FAIL {name}\n{traceback.format_exc()}")

    def eager() -> None:
        add_kernel[GRID](x, y, out, N, BLOCK=BLOCK)
        torch.testing.assert_close(out, x + y)
        rows.append(("eager kernel[grid](...) (C path)",
                     per_call_us(lambda: add_kernel[GRID](x, y, out, N, BLOCK=BLOCK))))
        rows.append(("torch.add(x, y, out=out)", per_call_us(lambda: torch.add(x, y, out=out))))

    def compiled() -> None:
        torch._dynamo.reset()
        assert torch._dynamo.explain(f)(x, y).graph_break_count == 0
        torch._dynamo.reset()
        cf = torch.compile(f, fullgraph=True)
        torch.testing.assert_close(cf(x, y), ((x + y) * 2).relu())
        rows.append(("torch.compile(fullgraph) f: 2 launches + relu", per_call_us(lambda: cf(x, y))))
        rows.append(("eager f: 2 launches + relu", per_call_us(lambda: f(x, y))))

    def cudagraphs() -> None:
        torch._dynamo.reset()
        cg = torch.compile(f, mode="reduce-overhead", fullgraph=True)
        for _ in range(3):
            r = cg(x, y)
        torch.testing.assert_close(r, ((x + y) * 2).relu())
        x2, y2 = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
        torch.testing.assert_close(cg(x2, y2), ((x2 + y2) * 2).relu())  # replay, new inputs
        rows.append(("reduce-overhead (CUDA graph) f", per_call_us(lambda: cg(x, y))))

    def custom_op() -> None:
        torch.library.opcheck(add_op, (x[:4096].clone(), y[:4096].clone()))
        torch._dynamo.reset()
        cg = torch.compile(g, mode="reduce-overhead", fullgraph=True)
        for _ in range(3):
            r = cg(x, y)
        torch.testing.assert_close(r, (x + y) * 3)
        rows.append(("reduce-overhead custom op g", per_call_us(lambda: cg(x, y))))

    def streams() -> None:
        s = torch.cuda.Stream()
        o2 = torch.empty_like(x)
        with torch.cuda.stream(s):
            add_kernel[GRID](x, y, o2, N, BLOCK=BLOCK)
        s.synchronize()
        torch.testing.assert_close(o2, x + y)

    for name, body in [("eager", eager), ("compiled fullgraph", compiled),
                       ("reduce-overhead", cudagraphs), ("custom op", custom_op),
                       ("streams", streams)]:
        check(name, body)
    print(f"\n{'us per call (host)':>20}  case  [torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}]")
    for name, us in rows:
        print(f"{us:20.2f}  {name}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["prepare", "run"])
    args = ap.parse_args()
    if args.phase == "prepare":
        prepare()
        return 0
    return run()


if __name__ == "__main__":
    sys.exit(main())

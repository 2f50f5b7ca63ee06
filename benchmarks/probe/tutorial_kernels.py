"""Probe: the kernel shapes of Triton's tutorials 02 (fused softmax) and 05
(layer-norm backward), with the tutorials' host logic, timed in tilec, in
Triton (the same kernel text under `triton.jit`) and in torch.  The kernels
here are this file's own, written in the tutorials' style.

    here:   rm -rf .carry/soft12 && TILEC_CACHE_DIR=$PWD/.carry/soft12/cache \\
                .venv/bin/python benchmarks/probe/tutorial_kernels.py prepare
            (~1 min, ~3 MB; `tar -C .carry/soft12 -cJf .carry/soft12/cache.tar.xz
            cache` packs it, ~0.2 MB)
    device: PYTHONPATH=$PWD TILEC_CACHE_DIR=$PWD/.carry/soft12/cache \\
                python3 benchmarks/probe/tutorial_kernels.py run [--no-triton]
            (carry `.carry/soft12`; about a minute: Triton compiles its twins there)
    here, without a GPU: ... tutorial_kernels.py run --cpu-smoke (the script's
            code paths on tilec's CPU target, small sizes; not a measurement)

`prepare` compiles, for sm90, every specialization `run` launches (CPU
stand-in arrays of the same dtypes and alignment, the same ints: 24 cache
entries); the GPU machine has no compiler, so it launches from that cache
only, and the keys name this file's kernels as `__main__.<name>`: run both
phases as scripts, from the same file.  A miss is reported at its line in
`run` and the rest goes on.  The binaries are those of the compiler that
ran `prepare`.

What `run` prints (M = 4096 rows; GB/s count bytes read + written once, as
the tutorials do; times are medians of `tilec.testing.do_bench`, the L2
flushed before each call, everything on a side stream as tutorial 02):
* the device properties tilec's and Triton's drivers report;
* softmax, per N: each compiler's warmup facts (n_regs, n_spills, shared)
  and the grid tutorial 02's formula makes of them; GB/s of
  `tut`  the tutorial's host function (warmup before each launch),
  `kern` the warmed-up handle's launch alone,
  `cap`  the same with the grid capped at the CTAs an SM holds (2048 threads:
         8 of 8 warps; the tutorial's formula counts registers and shared
         memory only, so 26-27 registers give 9 per SM and a second wave),
  `row`  one row per program (grid M, no persistent loop),
  `pre`  the persistent loop loading the next row one iteration ahead by hand
         (what pipelining the loop would give: tilec's pipeliner leaves a loop
         without a dot as it is, Triton's streams the row through a 3-slot
         cp.async ring),
  and torch.softmax; the host time of one `tut` call (us, no GPU wait);
* layer-norm backward, per N (fp16, the tutorial's GROUP_SIZE_M): max errors
  against torch, GB/s of the backward through autograd (the tutorial's
  measurement), the host function alone (`fn`), its dX kernel alone (lock and
  partial sums; the locks zeroed in the timed call), the dW/dB reduction
  alone (a grid function made anew per call), torch's autograd backward.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))

import tilec  # noqa: E402
import tilec.language as tl  # noqa: E402

M = 4096
SOFTMAX_N = [256, 1024, 2048, 4096, 8192, 12672]
LAYERNORM_N = [1024, 2048, 4096, 8192, 15872]
NUM_WARPS = 8


# ---------------------------------------------------------------- kernels
@tilec.kernel
def softmax_persistent(y_ptr, x_ptr, x_row_stride, y_row_stride, n_rows, n_cols,
                       BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    # program p normalizes rows p, p + P, p + 2P, ... (P programs)
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=num_stages):
        cols = tl.arange(0, BLOCK_SIZE)
        inside = cols < n_cols
        v = tl.load(x_ptr + row * x_row_stride + cols, mask=inside, other=-float("inf"))
        v = v - tl.max(v, axis=0)
        num = tl.exp(v)
        tl.store(y_ptr + row * y_row_stride + cols, num / tl.sum(num, axis=0), mask=inside)


@tilec.kernel
def softmax_one_row(y_ptr, x_ptr, x_row_stride, y_row_stride, n_cols,
                    BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    inside = cols < n_cols
    v = tl.load(x_ptr + row * x_row_stride + cols, mask=inside, other=-float("inf"))
    v = v - tl.max(v, axis=0)
    num = tl.exp(v)
    tl.store(y_ptr + row * y_row_stride + cols, num / tl.sum(num, axis=0), mask=inside)


@tilec.kernel
def softmax_prefetch(y_ptr, x_ptr, x_row_stride, y_row_stride, n_rows, n_cols,
                     BLOCK_SIZE: tl.constexpr):
    first = tl.program_id(0)
    step = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_SIZE)
    inside = cols < n_cols
    ahead = tl.load(x_ptr + first * x_row_stride + cols, mask=inside & (first < n_rows),
                    other=-float("inf"))
    for row in range(first, n_rows, step):
        v = ahead
        nxt = row + step
        ahead = tl.load(x_ptr + nxt * x_row_stride + cols, mask=inside & (nxt < n_rows),
                        other=-float("inf"))
        v = v - tl.max(v, axis=0)
        num = tl.exp(v)
        tl.store(y_ptr + row * y_row_stride + cols, num / tl.sum(num, axis=0), mask=inside)


@tilec.kernel
def ln_bwd_dx(DX, DY, PART_W, PART_B, X, W, MEAN, RSTD, LOCKS, row_stride, N,
              GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    inside = cols < N
    base = row * row_stride
    x = tl.load(X + base + cols, mask=inside, other=0).to(tl.float32)
    g = tl.load(DY + base + cols, mask=inside, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=inside).to(tl.float32)
    mu = tl.load(MEAN + row)
    rs = tl.load(RSTD + row)
    xn = tl.where(inside, (x - mu) * rs, 0.)
    gw = tl.where(inside, w * g, 0.)
    a = tl.sum(xn * gw, axis=0) / N
    b = tl.sum(gw, axis=0) / N
    tl.store(DX + base + cols, (gw - (xn * a + b)) * rs, mask=inside)
    # this row's dW / dB go into partial row `slot`, one program at a time
    slot = row % GROUP_SIZE_M
    lock = LOCKS + slot
    filled = LOCKS + GROUP_SIZE_M + slot
    pw_ptrs = PART_W + slot * N + cols
    pb_ptrs = PART_B + slot * N + cols
    pw = g * xn
    pb = g
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    if tl.load(filled) == 0:
        tl.atomic_xchg(filled, 1)
    else:
        pw += tl.load(pw_ptrs, mask=inside)
        pb += tl.load(pb_ptrs, mask=inside)
    tl.store(pw_ptrs, pw, mask=inside)
    tl.store(pb_ptrs, pb, mask=inside)
    tl.debug_barrier()      # every thread's stores before the release
    tl.atomic_xchg(lock, 0)


@tilec.kernel
def ln_bwd_dwdb(PART_W, PART_B, DW, DB, G, N, BLOCK_SIZE_M: tl.constexpr,
                BLOCK_SIZE_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    acc_w = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    acc_b = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for r0 in range(0, G, BLOCK_SIZE_M):
        rows = r0 + tl.arange(0, BLOCK_SIZE_M)
        keep = (rows[:, None] < G) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        acc_w += tl.load(PART_W + offs, mask=keep, other=0.)
        acc_b += tl.load(PART_B + offs, mask=keep, other=0.)
    tl.store(DW + cols, tl.sum(acc_w, axis=0), mask=cols < N)
    tl.store(DB + cols, tl.sum(acc_b, axis=0), mask=cols < N)


KERNELS = {k.name: k for k in (softmax_persistent, softmax_one_row, softmax_prefetch,
                               ln_bwd_dx, ln_bwd_dwdb)}


# ---------------------------------------------------------------- the tutorials' host logic
def next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def softmax_stages(props: dict[str, int]) -> int:
    return 4 if props["max_shared_mem"] > 200000 else 2     # tutorial 02's choice


def softmax_grid(h: Any, props: dict[str, int], n_rows: int) -> tuple[int, int]:
    """(occupancy, programs) as tutorial 02 computes them (CUDA branch)."""
    occ = props["max_num_regs"] // (h.n_regs * props["warpSize"] * NUM_WARPS)
    occ = min(occ, props["max_shared_mem"] // h.metadata.shared)
    return occ, min(props["multiprocessor_count"] * occ, n_rows)


def make_softmax(k: Any, props: dict[str, int], torch: Any) -> Callable[[Any], Any]:
    stages = softmax_stages(props)

    def softmax(x: Any) -> Any:   # the tutorial's `softmax(x)`, for either compiler
        n_rows, n_cols = x.shape
        block = next_pow2(n_cols)
        y = torch.empty_like(x)
        h = k.warmup(y, x, x.stride(0), y.stride(0), n_rows, n_cols, BLOCK_SIZE=block,
                     num_stages=stages, num_warps=NUM_WARPS, grid=(1,))
        h._init_handles()
        _, programs = softmax_grid(h, props, n_rows)
        h[(programs, 1, 1)](y, x, x.stride(0), y.stride(0), n_rows, n_cols, block, stages)
        return y
    return softmax


def group_size(n: int) -> int:
    return 256 if n <= 1024 else 128 if n <= 4096 else 96 if n <= 8192 else 64


def ln_config(n: int) -> tuple[int, int]:
    block = min(65536 // 2, next_pow2(n))
    return block, min(max(block // 256, 1), 8)


def make_ln_backward(dx_k: Any, dwdb_k: Any, torch: Any) -> Callable[..., Any]:
    def backward(x: Any, w: Any, mean: Any, rstd: Any, dy: Any) -> tuple[Any, Any, Any]:
        m, n = x.shape
        g = group_size(n)
        block, warps = ln_config(n)
        locks = torch.zeros(2 * g, dtype=torch.int32, device=x.device)
        part_w = torch.zeros((g, n), dtype=x.dtype, device=x.device)
        part_b = torch.zeros((g, n), dtype=x.dtype, device=x.device)
        dw = torch.empty((n,), dtype=w.dtype, device=w.device)
        db = torch.empty((n,), dtype=w.dtype, device=w.device)
        dx = torch.empty_like(dy)
        dx_k[(m,)](dx, dy, part_w, part_b, x, w, mean, rstd, locks, x.stride(0), n,
                   GROUP_SIZE_M=g, BLOCK_SIZE_N=block, num_warps=warps)
        dwdb_k[lambda meta: (-(-n // meta["BLOCK_SIZE_N"]),)](
            part_w, part_b, dw, db, min(g, m), n, BLOCK_SIZE_M=32, BLOCK_SIZE_N=128, num_ctas=1)
        return dx, dw, db
    return backward


# ---------------------------------------------------------------- prepare
def prepare() -> None:
    import torch
    if not os.environ.get("TILEC_CACHE_DIR"):
        raise SystemExit("set TILEC_CACHE_DIR to the folder the GPU machine will read")
    h200 = {"max_shared_mem": 232448}
    stages = softmax_stages(h200)
    t0 = time.perf_counter()
    for n in SOFTMAX_N:
        x = torch.empty((8, n), dtype=torch.float32)
        block = next_pow2(n)
        softmax_persistent.warmup(x, x, n, n, M, n, BLOCK_SIZE=block, num_stages=stages,
                                  num_warps=NUM_WARPS, grid=(1,), target="sm90")
        softmax_one_row.warmup(x, x, n, n, n, BLOCK_SIZE=block, num_warps=NUM_WARPS,
                               target="sm90")
        softmax_prefetch.warmup(x, x, n, n, M, n, BLOCK_SIZE=block, num_warps=NUM_WARPS,
                                target="sm90")
    for n in LAYERNORM_N:
        h = torch.empty((8, n), dtype=torch.float16)
        f = torch.empty(8, dtype=torch.float32)
        i = torch.empty(8, dtype=torch.int32)
        g = group_size(n)
        block, warps = ln_config(n)
        ln_bwd_dx.warmup(h, h, h, h, h, h, f, f, i, n, n, GROUP_SIZE_M=g, BLOCK_SIZE_N=block,
                         num_warps=warps, target="sm90")
        ln_bwd_dwdb.warmup(h, h, h, h, min(g, M), n, BLOCK_SIZE_M=32, BLOCK_SIZE_N=128,
                           num_ctas=1, target="sm90")
    root = os.environ["TILEC_CACHE_DIR"]
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs)
    print(f"prepared {root}: {size / 1e6:.1f} MB in {time.perf_counter() - t0:.0f} s")


# ---------------------------------------------------------------- run
def triton_twins() -> dict[str, Any]:
    """This file's kernels under `triton.jit` (the same text, Triton's `tl`)."""
    lines = ["import triton", "import triton.language as tl", ""]
    for k in KERNELS.values():
        body = [ln for ln in k.src.splitlines() if not ln.lstrip().startswith("@")]
        lines += ["@triton.jit"] + body + [""]
    path = os.path.join(tempfile.mkdtemp(prefix="probe-triton-"), "tutorial_twins.py")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    spec = importlib.util.spec_from_file_location("tutorial_twins", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {name: getattr(mod, name) for name in KERNELS}


def gbps(nbytes: float, ms: float) -> float:
    return nbytes * 1e-9 / (ms * 1e-3)


class Runner:
    def __init__(self, torch: Any, use_triton: bool, smoke: bool = False) -> None:
        from tilec.runtime import driver
        from tilec.testing import do_bench
        self.torch, self.do_bench = torch, do_bench
        # smoke: a check of this script on a CPU (tilec's CPU target, small sizes)
        self.dev, self.m = ("cpu", 64) if smoke else ("cuda", M)
        self.softmax_n = SOFTMAX_N[:2] if smoke else SOFTMAX_N
        self.ln_n = [128, 200] if smoke else LAYERNORM_N
        self.props = {"tilec": driver.active.utils.get_device_properties(0)}
        self.impls: dict[str, dict[str, Any]] = {"tilec": KERNELS}
        if use_triton:
            try:
                import triton
                self.impls["triton"] = triton_twins()
                self.props["triton"] = triton.runtime.driver.active.utils.get_device_properties(0)
                print(f"triton {triton.__version__}")
            except Exception as e:   # no Triton there: tilec and torch only
                print(f"triton unavailable: {type(e).__name__}: {e}")

    def bench(self, fn: Callable[[], Any], grad_to_none: Any = None) -> float:
        return float(self.do_bench(fn, warmup=10, rep=40, grad_to_none=grad_to_none,
                                   quantiles=[0.5]))

    def host_us(self, fn: Callable[[], Any], n: int = 200) -> float:
        self.sync()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t = (time.perf_counter() - t0) / n * 1e6
        self.sync()
        return t

    def sync(self) -> None:
        if self.dev == "cuda":
            self.torch.cuda.synchronize()

    def guarded(self, what: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception as e:  # a cache miss, a Triton limit: say so, go on
            print(f"  {what}: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
            return None

    def softmax(self) -> None:
        torch = self.torch
        print(f"\nsoftmax fp32, M = {self.m} (GB/s; facts: regs/spills/shared -> occupancy, "
              "programs)")
        for n in self.softmax_n:
            x = torch.randn(self.m, n, device=self.dev)
            ref = torch.softmax(x, dim=-1)
            nbytes = 2 * x.numel() * 4
            row: dict[str, Any] = {"torch": gbps(nbytes, self.bench(lambda: torch.softmax(x, -1)))}
            for name, ks in self.impls.items():
                r = self.guarded(f"N={n} {name}", lambda: self._softmax_one(name, ks, x, ref, nbytes))
                if r is not None:
                    row[name] = r
            self._print_softmax(n, row)

    def _softmax_one(self, name: str, ks: dict[str, Any], x: Any, ref: Any,
                     nbytes: int) -> dict[str, Any]:
        torch, props = self.torch, self.props[name]
        n = x.shape[1]
        block, stages = next_pow2(n), softmax_stages(props)
        y = torch.empty_like(x)
        tut = make_softmax(ks["softmax_persistent"], props, torch)
        err = float((tut(x) - ref).abs().max())
        h = ks["softmax_persistent"].warmup(y, x, n, n, self.m, n, BLOCK_SIZE=block,
                                            num_stages=stages, num_warps=NUM_WARPS, grid=(1,))
        h._init_handles()
        occ, programs = softmax_grid(h, props, self.m)
        out = {"err": err, "facts": (h.n_regs, h.n_spills, h.metadata.shared, occ, programs),
               "tut": gbps(nbytes, self.bench(lambda: tut(x))),
               "host_us": self.host_us(lambda: tut(x))}
        out["kern"] = gbps(nbytes, self.bench(
            lambda: h[(programs, 1, 1)](y, x, n, n, self.m, n, block, stages)))
        # the grid capped at what an SM holds (the formula ignores the thread limit)
        per_sm = props.get("max_threads_per_sm", 2048) // (props["warpSize"] * NUM_WARPS)
        capped = min(props["multiprocessor_count"] * min(occ, per_sm), self.m)
        out["cap"] = gbps(nbytes, self.bench(
            lambda: h[(capped, 1, 1)](y, x, n, n, self.m, n, block, stages)))
        out["capped"] = capped
        one = ks["softmax_one_row"]
        out["row"] = gbps(nbytes, self.bench(
            lambda: one[(self.m,)](y, x, n, n, n, BLOCK_SIZE=block, num_warps=NUM_WARPS)))
        pre = ks["softmax_prefetch"]
        hp = pre.warmup(y, x, n, n, self.m, n, BLOCK_SIZE=block, num_warps=NUM_WARPS, grid=(1,))
        hp._init_handles()
        _, pp = softmax_grid(hp, props, self.m)
        pre[(pp,)](y, x, n, n, self.m, n, BLOCK_SIZE=block, num_warps=NUM_WARPS)
        out["pre_err"] = float((y - ref).abs().max())
        out["pre"] = gbps(nbytes, self.bench(
            lambda: pre[(pp,)](y, x, n, n, self.m, n, BLOCK_SIZE=block, num_warps=NUM_WARPS)))
        out["pre_facts"] = (hp.n_regs, hp.metadata.shared, pp)
        return out

    def _print_softmax(self, n: int, row: dict[str, Any]) -> None:
        print(f"N={n:5d} torch {row['torch']:7.1f}")
        for name in self.impls:
            r = row.get(name)
            if r is None:
                continue
            regs, spills, shared, occ, programs = r["facts"]
            ratio = " ".join(f"{k}/torch {r[k] / row['torch']:.2f}" for k in ("tut", "kern"))
            print(f"  {name:6s} facts {regs}/{spills}/{shared} -> {occ}, {programs}  "
                  f"tut {r['tut']:7.1f} kern {r['kern']:7.1f} cap({r['capped']}) "
                  f"{r['cap']:7.1f} row {r['row']:7.1f} "
                  f"pre {r['pre']:7.1f} (facts {r['pre_facts']})  host {r['host_us']:6.1f} us  "
                  f"{ratio}  err {r['err']:.1e}/{r['pre_err']:.1e}")
        if "tilec" in row and "triton" in row:
            a, b = row["tilec"], row["triton"]
            print("  tilec/triton " + " ".join(f"{k} {a[k] / b[k]:.2f}"
                                               for k in ("tut", "kern", "cap", "row", "pre")))

    def layernorm(self) -> None:
        torch = self.torch
        print(f"\nlayer-norm backward fp16, M = {self.m} (GB/s = 3 * M * N * 2 bytes / t)")
        for n in self.ln_n:
            w = torch.rand(n, dtype=torch.float16, device=self.dev, requires_grad=True)
            b = torch.rand(n, dtype=torch.float16, device=self.dev, requires_grad=True)
            x = (-2.3 + 0.5 * torch.randn(self.m, n, device=self.dev)).half().requires_grad_(True)
            dy = 0.1 * torch.randn_like(x)
            nbytes = 3 * x.numel() * 2
            y_ref = torch.nn.functional.layer_norm(x, (n,), w, b, 1e-5)
            y_ref.backward(dy, retain_graph=True)
            refs = [t.grad.clone() for t in (x, w, b)]
            x.grad = w.grad = b.grad = None
            line = {"torch": gbps(nbytes, self.bench(lambda: y_ref.backward(dy, retain_graph=True),
                                                     grad_to_none=[x]))}
            print(f"N={n:5d} G={group_size(n)} torch autograd {line['torch']:7.1f}")
            for name, ks in self.impls.items():
                self.guarded(f"N={n} {name}",
                             lambda: self._ln_one(name, ks, x, w, b, dy, refs, nbytes, line))

    def _ln_one(self, name: str, ks: dict[str, Any], x: Any, w: Any, b: Any, dy: Any,
                refs: list[Any], nbytes: int, line: dict[str, float]) -> None:
        torch = self.torch
        n = x.shape[1]
        xf = x.detach().float()
        mean = xf.mean(dim=1)
        rstd = 1.0 / torch.sqrt(xf.var(dim=1, unbiased=False) + 1e-5)
        bwd = make_ln_backward(ks["ln_bwd_dx"], ks["ln_bwd_dwdb"], torch)
        xd = x.detach()
        got = bwd(xd, w.detach(), mean, rstd, dy)
        errs = [float((g - r).abs().max()) for g, r in zip(got, refs)]

        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any, w: Any, b: Any) -> Any:
                ctx.save_for_backward(x, w)
                return torch.nn.functional.layer_norm(x, (n,), w, b, 1e-5)

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                sx, sw = ctx.saved_tensors
                dx, dw, db = bwd(sx, sw, mean, rstd, g)
                return dx, dw, db
        y = Fn.apply(x, w, b)
        auto = gbps(nbytes, self.bench(lambda: y.backward(dy, retain_graph=True),
                                       grad_to_none=[x]))
        fn = gbps(nbytes, self.bench(lambda: bwd(xd, w.detach(), mean, rstd, dy)))
        g = group_size(n)
        block, warps = ln_config(n)
        locks = torch.zeros(2 * g, dtype=torch.int32, device=self.dev)
        pw = torch.zeros((g, n), dtype=x.dtype, device=self.dev)
        pb = torch.zeros_like(pw)
        dx = torch.empty_like(dy)
        dxk, dwdbk = ks["ln_bwd_dx"], ks["ln_bwd_dwdb"]

        def dx_only() -> None:
            locks.zero_()
            dxk[(self.m,)](dx, dy, pw, pb, xd, w.detach(), mean, rstd, locks, n, n,
                      GROUP_SIZE_M=g, BLOCK_SIZE_N=block, num_warps=warps)
        t_dx = self.bench(dx_only)
        dw, db = torch.empty(n, dtype=x.dtype, device=self.dev), torch.empty(n, dtype=x.dtype,
                                                                            device=self.dev)
        t_dwdb = self.bench(lambda: dwdbk[lambda meta: (-(-n // meta["BLOCK_SIZE_N"]),)](
            pw, pb, dw, db, min(g, self.m), n, BLOCK_SIZE_M=32, BLOCK_SIZE_N=128, num_ctas=1))
        host = self.host_us(lambda: bwd(xd, w.detach(), mean, rstd, dy), n=100)
        print(f"  {name:6s} autograd {auto:7.1f} ({auto / line['torch']:.2f}x torch)  fn {fn:7.1f}"
              f"  dx kernel {gbps(nbytes, t_dx):7.1f} ({t_dx * 1e3:6.1f} us)  dwdb "
              f"{t_dwdb * 1e3:6.1f} us  host {host:6.1f} us/call  max err dx/dw/db "
              + "/".join(f"{e:.1e}" for e in errs))


def run() -> None:
    import torch
    from tilec.runtime import native
    smoke = "--cpu-smoke" in sys.argv
    if not smoke:
        print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, "
              f"C launch path: {native.status()}")
    r = Runner(torch, "--no-triton" not in sys.argv and not smoke, smoke)
    for name, p in r.props.items():
        print(f"{name} get_device_properties: " + ", ".join(
            f"{k}={p[k]}" for k in ("multiprocessor_count", "max_num_regs", "max_shared_mem",
                                    "warpSize")))
    t0 = time.perf_counter()
    if smoke:
        r.softmax()
        r.layernorm()
    else:
        with torch.cuda.stream(torch.cuda.Stream()):
            r.softmax()
            r.layernorm()
    print(f"\ndone in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in ("prepare", "run"):
        raise SystemExit(__doc__)
    prepare() if sys.argv[1] == "prepare" else run()

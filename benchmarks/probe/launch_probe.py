"""Where the host time of one tiny-kernel launch goes, on the GPU machine.

    PYTHONPATH=$PWD TILEC_CACHE_DIR=$PWD/.carry/tilec-cache python3 benchmarks/probe/launch_probe.py

Times (us per launch, batches of N launches with an untimed synchronize
between batches) the whole tilec launch, its pieces, the bare driver call
through ctypes and cuda-bindings, PyTorch and Triton, for two batch sizes (a
rate that depends on N means the GPU's queue, not the host, sets it).
"""
from __future__ import annotations

import ctypes
import os
import sys
import time
from typing import Any, Callable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

import h200  # noqa: E402
from h200_kernels import t_add, tiny_add  # noqa: E402


def per_launch(fn: Callable[[], Any], n: int) -> float:
    return h200.per_launch(torch, fn, batches=100, n=n)


def per_call(fn: Callable[[], Any], n: int = 100000) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def drv_mod() -> Any:
    from cuda.bindings import driver
    return driver


def main() -> None:
    x = torch.ones(16, device="cuda")
    y = torch.ones(16, device="cuda")
    o = torch.empty(16, device="cuda")
    from tilec.runtime import native
    tiny_add[(1,)](x, y, o, 16, BLOCK=16)
    torch.cuda.synchronize()
    print(f"C launch path: {native.status()}; kernel[(1,)] is a {type(tiny_add[(1,)]).__name__}")
    loaded = next(iter(tiny_add._fast.values()))
    cu = loaded._launcher
    raw = [x.data_ptr(), y.data_ptr(), o.data_ptr(), 16]
    one = ctypes.c_uint(1)
    f, thr, sh, prm = cu._c_function, cu._c_threads, cu._c_shared, cu._c_params
    pyfn = cu._raw_launch
    cdll = ctypes.CDLL("libcuda.so.1").cuLaunchKernel
    cdll.argtypes, cdll.restype = pyfn.argtypes, pyfn.restype
    # cuLaunchKernel as the driver hands it out through cuGetProcAddress (what
    # cuda-bindings calls) instead of the exported symbol.
    proc_fn: Any = None
    try:
        err, ver = drv_mod().cuDriverGetVersion()
        res = drv_mod().cuGetProcAddress(b"cuLaunchKernel", ver, 0)
        print("cuGetProcAddress ->", res)
        addr = int(res[1])
        proto = ctypes.PYFUNCTYPE(ctypes.c_int, *pyfn.argtypes)
        proc_fn = proto(addr)
        print(f"cuGetProcAddress(cuLaunchKernel) = {addr:#x}; dlsym = "
              f"{ctypes.cast(pyfn, ctypes.c_void_p).value:#x}")
    except Exception as e:  # report and go on
        print(f"cuGetProcAddress failed: {e!r}")
    side = torch.cuda.Stream()
    side_h = side.cuda_stream
    from cuda.bindings import driver as drv
    stream0 = drv.CUstream(0)

    rows: list[tuple[str, Callable[[], Any]]] = [
        ("tilec tiny_add[(1,)](x, y, o, 16, BLOCK=16)", lambda: tiny_add[(1,)](x, y, o, 16, BLOCK=16)),
        ("tilec Python launch path (Kernel.run)", lambda: tiny_add.run((1,), (x, y, o, 16), {"BLOCK": 16})),
        ("tilec LoadedKernel.launch", lambda: loaded.launch((1, 1, 1), raw)),
        ("ctypes PyDLL cuLaunchKernel, stream 0", lambda: pyfn(f, 1, 1, 1, thr, one, one, sh, 0, prm, None)),
        ("ctypes CDLL cuLaunchKernel, stream 0", lambda: cdll(f, 1, 1, 1, thr, one, one, sh, 0, prm, None)),
        ("ctypes PyDLL cuLaunchKernel, side stream", lambda: pyfn(f, 1, 1, 1, thr, one, one, sh, side_h, prm, None)),
        ("ctypes PyDLL cuLaunchKernel, per-thread stream", lambda: pyfn(f, 1, 1, 1, thr, one, one, sh, 2, prm, None)),
        ("ctypes cuLaunchKernel from cuGetProcAddress, stream 0",
         lambda: proc_fn(f, 1, 1, 1, thr, one, one, sh, 0, prm, None) if proc_fn else None),
        ("cuda-bindings cuLaunchKernel, stream 0", lambda: drv.cuLaunchKernel(cu.function, 1, 1, 1, cu.threads, 1, 1, 0, stream0, cu._params_addr, 0)),
        ("torch.add(x, y, out=o)", lambda: torch.add(x, y, out=o)),
        ("torch o.fill_(1.0)", lambda: o.fill_(1.0)),
        ("triton t_add[(1,)](x, y, o, 16, BLOCK=16)", lambda: t_add[(1,)](x, y, o, 16, BLOCK=16)),
    ]
    for name, fn in rows:
        a, b = per_launch(fn, 20), per_launch(fn, 200)
        print(f"{a:7.2f} {b:7.2f}  {name}")
    print("(us per launch: batches of 20, batches of 200)")

    # Host-only pieces (no driver call).
    from tilec.runtime.args import fast_arg
    keyfn = next(iter(tiny_add._keyfns.values()))
    args, kw = (x, y, o, 16), {"BLOCK": 16}
    getter = cu._stream_handle
    pieces = [
        ("empty lambda", lambda: None),
        ("fast_arg(tensor)", lambda: fast_arg(x)),
        ("x.data_ptr()", lambda: x.data_ptr()),
        ("x.dtype", lambda: x.dtype),
        ("x.is_cuda", lambda: x.is_cuda),
        ("keyfn(args, kwargs)", lambda: keyfn(args, kw)),
        ("current stream handle", getter),
        ("tiny_add[(1,)] (launcher lookup)", lambda: tiny_add[(1,)]),
    ]
    for name, fn in pieces:
        print(f"{per_call(fn):7.3f}  {name}")

    # GPU side: time per tiny kernel when the host is out of the way (graph replay).
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(500):
            tiny_add[(1,)](x, y, o, 16, BLOCK=16)
    g.replay()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(10):
        g.replay()
    e.record()
    torch.cuda.synchronize()
    print(f"GPU time per tiny kernel in a graph: {s.elapsed_time(e) * 1e3 / 5000:.2f} us")


if __name__ == "__main__":
    main()

"""Module-level kernels and workers for the torch.distributed test (spawned processes
import this module by name)."""
from __future__ import annotations

import os
import traceback
from typing import Any

import tilec
import tilec.language as tl


@tilec.kernel
def affine(x_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * a + 1.0, mask=m)


def distributed_worker(rank: int, world: int, cache_dir: str, init_file: str,
                       results: Any) -> None:
    """One rank: a torch.compile'd module launching `affine`, then an all-reduce."""
    try:
        os.environ["TILEC_CACHE_DIR"] = cache_dir
        import torch
        import torch.distributed as dist

        import tilec.driver
        calls: list[int] = []
        real = tilec.driver.compile_kernel

        def counting(*args: Any, **kwargs: Any) -> Any:
            calls.append(1)
            return real(*args, **kwargs)
        tilec.driver.compile_kernel = counting  # type: ignore[assignment]

        class Affine(torch.nn.Module):
            def forward(self, x: Any) -> Any:
                out = torch.empty_like(x)
                n = x.numel()
                affine[(tilec.cdiv(n, 256),)](x, out, 2.0, n, BLOCK=256)
                return out

        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                                world_size=world)
        module = torch.compile(Affine(), fullgraph=True, backend="aot_eager")
        x = torch.arange(1000, dtype=torch.float32) + rank
        dist.barrier()  # every rank reaches its first launch (and the compile) at once
        y = module(x)
        dist.all_reduce(y)
        base = torch.arange(1000, dtype=torch.float32)
        expected = sum((base + r) * 2.0 + 1.0 for r in range(world))
        ok = bool(torch.equal(y, expected))
        dist.destroy_process_group()
        results.put((rank, "ok" if ok else "wrong result", len(calls)))
    except BaseException:
        results.put((rank, "error: " + traceback.format_exc(), -1))

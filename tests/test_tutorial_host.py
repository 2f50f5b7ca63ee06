"""The host paths Triton's tutorials 02 and 05 time, checked without a GPU.

Tutorial 02 warms its kernel up before every launch (`kernel.warmup(...,
grid=(1,))`, then `n_regs` / `metadata.shared` into an occupancy formula);
tutorial 05 launches its second backward kernel with a grid function made
anew per call.  On the H200 both ran 10-100x below torch: the warmup read the
disk cache's manifest and hashed its artifacts (~1 ms a call) and a grid
function took the general launch path.  Here: warmups and grid-function
launches seen before skip both, the handle's facts are ptxas's, and the
grid the tutorial computes from them on an H200."""
from __future__ import annotations

import pathlib
import re
from typing import Any

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.cache import DiskCache
from tilec.errors import TilecError
from tilec.targets import toolchain
from test_native_launch import FakeTensor, fake_cuda, module  # noqa: F401 (fixtures)

# H200 (get_device_properties): SMs, registers per SM, opt-in shared per block, warp.
H200 = {"multiprocessor_count": 132, "max_num_regs": 65536, "max_shared_mem": 232448,
        "warpSize": 32}


@tilec.kernel
def rows_softmax(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols,
                 BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    first, step = tl.program_id(0), tl.num_programs(0)
    for r in tl.range(first, n_rows, step, num_stages=num_stages):
        cols = tl.arange(0, BLOCK_SIZE)
        keep = cols < n_cols
        x = tl.load(in_ptr + r * in_stride + cols, mask=keep, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + r * out_stride + cols, e / tl.sum(e, axis=0), mask=keep)


@pytest.fixture
def cache_dir(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("TILEC_CACHE_DIR", str(d))
    return d


def _disk_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    real = DiskCache.get

    def counting(self: DiskCache, key: str) -> Any:
        reads.append(key)
        return real(self, key)
    monkeypatch.setattr(DiskCache, "get", counting)
    return reads


def test_a_warmup_seen_before_skips_the_disk_cache(cache_dir: pathlib.Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    k = tilec.kernel(rows_softmax.fn)
    x = np.random.default_rng(0).standard_normal((8, 100)).astype(np.float32)
    y = np.zeros_like(x)
    reads = _disk_reads(monkeypatch)

    def warm(block: int) -> Any:
        return k.warmup(y, x, 100, 100, 8, 100, BLOCK_SIZE=block, num_stages=4, num_warps=8,
                        grid=(1,))
    h = warm(128)
    assert len(reads) >= 1
    n = len(reads)
    for _ in range(3):
        assert warm(128) is h
    assert len(reads) == n                       # from memory
    assert warm(256) is not h and len(reads) > n  # another specialization: the cache again
    h[(4, 1, 1)](y, x, 100, 100, 8, 100, 128, 4)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    k.src = k.src                                # a new source forgets the handles
    n = len(reads)
    warm(128)
    assert len(reads) > n


def _ptxas_report(ptx: str) -> dict[str, int]:
    ptxas = toolchain.find_ptxas()
    if ptxas is None:
        pytest.skip("no ptxas")
    res = toolchain.run_tool([ptxas, "-arch=sm_90a", "-v", "k.ptx", "-o", "k.cubin"],
                             {"k.ptx": ptx})
    log = res.log
    used = re.search(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?", log)
    frame = re.search(r"(\d+) bytes stack frame", log)
    assert used and frame, log
    return {"registers": int(used.group(1)), "smem": int(used.group(2) or 0),
            "stack": int(frame.group(1))}


@pytest.mark.parametrize("n_cols", [781, 1024, 8192, 12672])
def test_warmup_facts_are_ptxas_and_give_the_tutorials_grid(cache_dir: pathlib.Path,
                                                            n_cols: int) -> None:
    block = triton_next_power_of_2(n_cols)
    x = np.zeros((4, n_cols), np.float32)
    h = rows_softmax.warmup(x, x, n_cols, n_cols, 4096, n_cols, BLOCK_SIZE=block, num_stages=4,
                            num_warps=8, grid=(1,), target="sm90")
    sig = "*fp32:16,*fp32:16," + ",".join(["i32:16"] * 3) + \
        (",i32:16" if n_cols % 16 == 0 else ",i32")
    ck = rows_softmax.compile(target="sm90", signature=sig,
                              constexprs={"BLOCK_SIZE": block, "num_stages": 4}, num_warps=8,
                              num_stages=4)
    rep = _ptxas_report(ck.asm["ptx"])
    assert h.n_regs == rep["registers"]
    assert h.metadata.shared == max(rep["smem"], 1)   # bytes, the whole block's
    assert h.n_spills == rep["stack"] // 4             # Triton's: local bytes / 4
    # Tutorial 02's arithmetic (CUDA branch) on an H200's properties.
    occupancy = H200["max_num_regs"] // (h.n_regs * H200["warpSize"] * 8)
    occupancy = min(occupancy, H200["max_shared_mem"] // h.metadata.shared)
    programs = min(H200["multiprocessor_count"] * occupancy, 4096)
    assert programs >= 2 * 132, (h, programs)           # not 1 per SM or none


def triton_next_power_of_2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def test_grid_functions_take_the_fast_path(fake_cuda: Any, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    """Tutorial 05's `_layer_norm_bwd_dwdb[lambda meta: ...]`: a new function
    each call, launched without building its Specialization again."""
    from tilec.specialization import Params
    python_launches, _ = fake_cuda
    k = tilec.kernel(rows_softmax.fn)
    x, y = FakeTensor(0x10000), FakeTensor(0x20000)
    classified: list[int] = []
    real = Params.classify

    def counting(self: Params, values: Any) -> Any:
        classified.append(1)
        return real(self, values)
    monkeypatch.setattr(Params, "classify", counting)
    for n_rows in (64, 96, 128):
        k[lambda meta: (meta["n_rows"] // 32, 1, 1)](y, x, 512, 512, n_rows, 500,
                                                      BLOCK_SIZE=512, num_stages=2)
    assert [g for g, _ in python_launches] == [(2, 1, 1), (3, 1, 1), (4, 1, 1)]
    assert python_launches[2][1] == [0x20000, 0x10000, 512, 512, 128, 500]
    assert len(classified) == 1
    # the fast path keeps the general path's checks of the grid
    with pytest.raises(TilecError, match="grid dimension y = 70000 exceeds the sm90 limit"):
        k[lambda meta: (1, 70000)](y, x, 512, 512, 64, 500, BLOCK_SIZE=512, num_stages=2)
    with pytest.raises(TilecError, match="the grid function raised KeyError"):
        k[lambda meta: (meta["rows"],)](y, x, 512, 512, 64, 500, BLOCK_SIZE=512, num_stages=2)
    assert len(classified) == 1


def test_tutorial_02_handle_launches_from_c(module: Any, fake_cuda: Any) -> None:  # noqa: F811
    python_launches, drivers = fake_cuda
    k = tilec.kernel(rows_softmax.fn)
    x, y = FakeTensor(0x10000), FakeTensor(0x20000)
    for rows in (4096, 4096, 4096):
        h = k.warmup(y, x, 1024, 1024, rows, 1000, BLOCK_SIZE=1024, num_stages=4, num_warps=8,
                     grid=(1,))
        h[(1056, 1, 1)](y, x, 1024, 1024, rows, 1000, 1024, 4)
    assert len(python_launches) == 1                       # the first, then from C
    assert [c[1:3] for c in drivers[0].calls] == [((1056, 1, 1), (256, 1, 1))] * 2

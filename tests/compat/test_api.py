"""`import tilec as triton`: the decorator's keywords, autotune/heuristics/Config,
testing, runtime.driver, dtype introspection, launch options, parameter names
and annotations Triton allows, warmup's compiled handle, unsigned arrays."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tilec as triton
import tilec.language as tl


@triton.jit(do_not_specialize=["n"], do_not_specialize_on_alignment=[0], noinline=True,
            debug=False, repr=lambda _: "copy", launch_metadata=None)
def copy(x_ptr, o_ptr, n: int, num_stages: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m, cache_modifier=".cg",
                                   eviction_policy="evict_last") + num_stages,
             mask=m, cache_modifier=".cs")


def test_jit_keywords_param_names_and_launch_options() -> None:
    x = torch.arange(100, dtype=torch.float32)
    o = torch.zeros(100)
    copy[(triton.cdiv(100, 64),)](x, o, 100, num_stages=2, BLOCK=64, num_warps=4, num_ctas=1,
                                 maxnreg=128)
    assert torch.equal(o, x + 2)


def test_num_ctas_above_two_names_the_target() -> None:
    """num_ctas=2 is a cluster of two CTAs per program (tests/test_clusters.py);
    a kernel without dots to split runs one per program."""
    x = torch.arange(8, dtype=torch.float32)
    o = torch.zeros(8)
    copy[(1,)](x, o, 8, num_stages=1, BLOCK=8, num_ctas=2)
    assert torch.equal(o, x + 1)
    with pytest.raises(triton.TilecError, match="num_ctas=4: target cpu"):
        copy[(1,)](x, x, 8, num_stages=1, BLOCK=8, num_ctas=4)


def test_warmup_handle() -> None:
    x = torch.zeros(64)
    h = copy.warmup(x, x, 64, num_stages=1, BLOCK=64, grid=(1,))
    h._init_handles() if hasattr(h, "_init_handles") else None
    assert h.n_regs >= 0 and h.n_spills >= 0 and h.metadata.shared >= 0


def test_autotune_unknown_key_config_options_heuristics() -> None:
    @triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w, num_ctas=1, maxnreg=None)
                              for b in (32, 64) for w in (2, 4)],
                     key=["n", "not_a_parameter"])
    @triton.heuristics({"EVEN": lambda a: a["n"] % 64 == 0})
    @triton.jit
    def add1(x_ptr, o_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        if EVEN:
            tl.store(o_ptr + offs, tl.load(x_ptr + offs) + 1)
        else:
            m = offs < n
            tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)

    for n in (128, 100):
        x = torch.randn(n)
        o = torch.zeros(n)
        add1[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, o, n)
        triton.testing.assert_close(o, x + 1, atol=0, rtol=0)


def test_amd_hints_in_config_kwargs() -> None:
    """Tutorial 03's HIP configs put `waves_per_eu` (and Triton's AMD back end
    reads `matrix_instr_nonkdim`, `kpack`) in a config's kwargs: kept as hints."""
    cfg = triton.Config({"BLOCK": 32, "waves_per_eu": 2, "kpack": 1}, num_warps=4)
    assert cfg.kwargs == {"BLOCK": 32} and cfg.backend_hints == {"waves_per_eu": 2, "kpack": 1}

    @triton.autotune(configs=[cfg, triton.Config({"BLOCK": 64, "matrix_instr_nonkdim": 16})],
                     key=["n"])
    @triton.jit
    def add2(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 2, mask=offs < n)

    x = torch.zeros(100)
    add2[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, 100)
    assert bool((x > 0).all())   # (each benchmark run of a config adds 2 again)
    assert bool((x % 2 == 0).all())


def test_testing_and_driver() -> None:
    ms = triton.testing.do_bench(lambda: None, warmup=1, rep=2)
    assert ms >= 0
    q = triton.testing.do_bench_cudagraph(lambda: None, rep=2, quantiles=[0.5, 0.2, 0.8])
    assert len(q) == 3
    d = triton.runtime.driver.active
    assert d.get_active_torch_device() == torch.device("cpu")
    assert d.get_current_target().backend == "cpu"
    props = d.utils.get_device_properties(0)
    assert props["multiprocessor_count"] >= 1
    assert triton.next_power_of_2(1) == 1 and triton.next_power_of_2(1000) == 1024

    @triton.testing.perf_report(triton.testing.Benchmark(
        x_names=["n"], x_vals=[1, 2], line_arg="p", line_vals=["a"], line_names=["A"],
        plot_name="t", args={}))
    def bench(n: int, p: str) -> float:
        return float(n)
    assert bench.run(return_df=True)[1] == [[1, 1.0], [2, 2.0]]


def test_dtype_introspection() -> None:
    assert tl.float16.is_fp16() and not tl.float16.is_bf16() and tl.float32.is_floating()
    assert tl.int8.primitive_bitwidth == 8 and tl.uint32.is_int_unsigned()
    assert "int16" in tl.core.dtype.SINT_TYPES and tl.dtype("int32") is tl.int32
    assert tl.float32.fp_mantissa_width == 23


@triton.jit
def bits(x_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr + offs, (x >> 1) ^ x)


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64])
def test_unsigned_arrays(dtype: type) -> None:
    x = (np.arange(16, dtype=np.uint64) * 0x9E3779B97F4A7C15 % np.uint64(2 ** 63)).astype(dtype)
    o = np.zeros_like(x)
    bits[(1,)](x, o, BLOCK=16)
    np.testing.assert_array_equal(o, (x >> dtype(1)) ^ x)


def test_decorator_lines_with_arbitrary_python() -> None:
    @triton.autotune(configs=[triton.Config({"B": 2 ** i}) for i in range(3, 5) if i != 99],
                     key={"n": 1}.keys())
    @triton.jit
    def fill(o_ptr, n, B: tl.constexpr):
        offs = tl.program_id(0) * B + tl.arange(0, B)
        tl.store(o_ptr + offs, 1.0, mask=offs < n)
    o = torch.zeros(40)
    fill[lambda m: (triton.cdiv(40, m["B"]),)](o, 40)
    assert bool((o == 1).all())

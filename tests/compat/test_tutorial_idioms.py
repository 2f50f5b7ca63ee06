"""Idioms of Triton's tutorials 06-08, in kernels written for this suite: a
flash-attention forward through device-side tensor descriptors chosen by
`isinstance(x, tl.tensor_descriptor)` in a helper, `.T`, a helper whose
`tl.constexpr` parameters receive tiles, `early_config_prune(configs, named,
**kwargs)`, `triton.set_allocator`, the host `TensorDescriptor` class, the
`extern_libs=` launch keyword (accepted, ignored), and a grouped GEMM whose
matrix addresses come from an int64 table (`.to(tl.pointer_type(...))`)."""
from __future__ import annotations

import numpy as np
import pytest

import tilec as triton
import tilec.language as tl
from tilec.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _as_desc(x, rows, COLS: tl.constexpr, BR: tl.constexpr):
    if isinstance(x, tl.tensor_descriptor):
        return x
    else:
        return tl.make_tensor_descriptor(x, shape=[rows, COLS], strides=[COLS, 1],
                                         block_shape=[BR, COLS])


@triton.jit
def _softmax_step(acc, m_i, l_i, q, k_desc, v_desc, scale, rows_m: tl.constexpr,
                  BN: tl.constexpr, NCTX: tl.constexpr):
    for start in range(0, NCTX, BN):
        k = k_desc.load([start, 0]).T
        s = tl.dot(q, k) * scale
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v_desc.load([start, 0]))
        m_i = m_new
    return acc + rows_m[:, None] * 0, m_i, l_i


def _prune(configs, named_args, **kwargs):
    assert "NCTX" in kwargs and "q" in named_args
    return [c for c in configs if c.kwargs["BM"] <= kwargs["NCTX"]]


@triton.autotune(configs=[triton.Config({"BM": 32}), triton.Config({"BM": 4096})],
                 key=["NCTX"], prune_configs_by={"early_config_prune": _prune})
@triton.jit
def attention_fwd(q, k, v, o, scale, NCTX: tl.constexpr, D: tl.constexpr, BN: tl.constexpr,
                  BM: tl.constexpr):
    start_m = tl.program_id(0)
    qd = _as_desc(q, NCTX, D, BM)
    kd = _as_desc(k, NCTX, D, BN)
    vd = _as_desc(v, NCTX, D, BN)
    od = _as_desc(o, NCTX, D, BM)
    rows = start_m * BM + tl.arange(0, BM)
    acc = tl.zeros([BM, D], dtype=tl.float32)
    m_i = tl.zeros([BM], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BM], dtype=tl.float32)
    acc, m_i, l_i = _softmax_step(acc, m_i, l_i, qd.load([start_m * BM, 0]), kd, vd, scale,
                                  rows, BN, NCTX)
    od.store([start_m * BM, 0], (acc / l_i[:, None]).to(tl.float16))


def test_attention_forward_through_descriptors() -> None:
    rng = np.random.default_rng(6)
    n, d = 64, 32
    q, k, v = (rng.standard_normal((n, d)).astype(np.float16) for _ in range(3))
    o = np.zeros((n, d), np.float16)
    triton.set_allocator(lambda size, align, stream: None)
    attention_fwd[lambda meta: (triton.cdiv(n, meta["BM"]),)](
        q, k, v, o, 0.5, NCTX=n, D=d, BN=16, extern_libs={"libdevice": "/nonexistent.bc"})
    s = q.astype(np.float64) @ k.astype(np.float64).T * 0.5
    p = np.exp(s - s.max(1, keepdims=True))
    ref = (p / p.sum(1, keepdims=True)) @ v.astype(np.float64)
    np.testing.assert_allclose(o.astype(np.float64), ref, atol=1e-2, rtol=0)


def test_host_tensor_descriptor_class() -> None:
    x = np.zeros((8, 4), np.float32)
    d = TensorDescriptor.from_tensor(x, [2, 4])
    assert d.shape == [8, 4] and d.strides == [4, 1] and d.block_shape == [2, 4]
    d.block_shape = [4, 4]  # pre-hooks set it per config
    assert isinstance(d, TensorDescriptor)


@triton.jit
def grouped_scale(addrs, sizes, n_groups, BLOCK: tl.constexpr):
    for g in range(n_groups):
        p = tl.load(addrs + g).to(tl.pointer_type(tl.float32))
        n = tl.load(sizes + g)
        offs = tl.arange(0, BLOCK)
        x = tl.load(p + offs, mask=offs < n)
        tl.store(p + offs, x * (g + 1), mask=offs < n)


def test_grouped_pointers_from_an_address_table() -> None:
    torch = pytest.importorskip("torch")
    xs = [torch.arange(m, dtype=torch.float32) for m in (5, 16, 9)]
    want = [x * (i + 1) for i, x in enumerate(xs)]
    addrs = torch.tensor([x.data_ptr() for x in xs], dtype=torch.int64)
    sizes = torch.tensor([x.numel() for x in xs], dtype=torch.int32)
    grouped_scale[(1,)](addrs, sizes, len(xs), BLOCK=16)
    for got, w in zip(xs, want):
        assert torch.equal(got, w)


@pytest.mark.parametrize("target", ["sm90", "gfx942"])
def test_grouped_pointers_assemble_for_gpus(target: str) -> None:
    from tests.compat.gpu_check import assemble
    assemble(grouped_scale, target, "*i64,*i32,i32", {"BLOCK": 128})

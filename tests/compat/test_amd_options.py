"""Triton's AMD launch options `waves_per_eu` and `allow_flush_denorm`: Triton's
tutorial 06 passes both (`waves_per_eu=3 if HEAD_DIM <= 64 else 2`,
`allow_flush_denorm=True`) to its autotuned attention kernel when the target is
HIP.  Accepted at every launch (also through an autotuner and in a config's
kwargs), applied by the AMD back end as LLVM function attributes
("amdgpu-waves-per-eu", "denormal-fp-math-f32"="preserve-sign"), of no effect
on the CPU and NVIDIA targets; bad values are errors at the launching line."""
from __future__ import annotations

import inspect
import re

import numpy as np
import pytest
import torch

import tilec as triton
import tilec.language as tl
from tilec.targets import toolchain


@triton.jit
def softplus_rows(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, tl.log(1.0 + tl.exp(v)) / (v * v + 1.0), mask=m)


@triton.autotune(configs=[triton.Config({"BLOCK": 32}, num_stages=1),
                          triton.Config({"BLOCK": 64, "waves_per_eu": 2}, num_stages=1)],
                 key=["n"])
@triton.jit
def tuned_scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 3.0, mask=m)


def _expected(x: torch.Tensor) -> torch.Tensor:
    return torch.log(1.0 + torch.exp(x)) / (x * x + 1.0)


def test_launch_options_accepted_on_the_cpu() -> None:
    # The CPU keeps IEEE denormals (flushing is a permission, not a duty):
    # tiny inputs give the same results as without the options.
    x = torch.tensor(np.r_[np.linspace(-4, 4, 90), [1e-39, -1e-39, 1e-42] * 2, 0.0],
                     dtype=torch.float32)
    want = torch.empty_like(x)
    softplus_rows[(triton.cdiv(x.numel(), 64),)](x, want, x.numel(), BLOCK=64)
    for kw in ({"waves_per_eu": 3}, {"allow_flush_denorm": True},
               {"waves_per_eu": 3, "allow_flush_denorm": True, "num_stages": 1}):
        got = torch.zeros_like(x)
        softplus_rows[(triton.cdiv(x.numel(), 64),)](x, got, x.numel(), BLOCK=64, **kw)
        assert torch.equal(got, want), kw
    torch.testing.assert_close(want, _expected(x), atol=1e-6, rtol=1e-6)


def test_autotuned_launch_with_the_options_and_a_config_hint() -> None:
    # tutorial 06's AMD branch: extra launch keywords next to the autotuner's choices
    x = torch.randn(200)
    y = torch.zeros(200)
    tuned_scale[lambda meta: (triton.cdiv(200, meta["BLOCK"]),)](
        x, y, 200, waves_per_eu=3, allow_flush_denorm=True)
    torch.testing.assert_close(y, x * 3.0)
    cfg = tuned_scale.configs[1]
    assert cfg.backend_hints == {"waves_per_eu": 2} and cfg.options.waves_per_eu == 2
    assert "waves_per_eu" not in cfg.kwargs and cfg.all_kwargs()["waves_per_eu"] == 2
    assert "waves_per_eu" not in tuned_scale.configs[0].all_kwargs()


@pytest.mark.parametrize("kw, message", [
    ({"waves_per_eu": -1}, "waves_per_eu must be an int >= 0"),
    ({"waves_per_eu": "3"}, "waves_per_eu must be an int >= 0"),
    ({"allow_flush_denorm": 1}, "allow_flush_denorm must be True or False"),
    ({"allow_flush_denorm": "yes"}, "allow_flush_denorm must be True or False"),
])
def test_bad_values_are_located_errors(kw: dict[str, object], message: str) -> None:
    x = torch.zeros(8)
    line = inspect.currentframe().f_lineno + 2  # type: ignore[union-attr]
    with pytest.raises(triton.TilecError, match=message) as e:
        softplus_rows[(1,)](x, x, 8, BLOCK=8, **kw)
    assert e.value.loc is not None and e.value.loc.line == line
    assert e.value.loc.file == __file__


def _gfx942(**kw: object) -> object:
    return softplus_rows.compile(target="gfx942", signature="*fp32,*fp32,i32",
                                 constexprs={"BLOCK": 256}, **kw)


def _kernel_attributes(llir: str) -> str:
    m = re.search(r"define amdgpu_kernel void @\w+\([^)]*\)[^#{]*#(\d+)", llir)
    assert m, "no kernel definition in the LLVM IR"
    group = re.search(rf"^attributes #{m.group(1)} = \{{(.*)\}}$", llir, re.M)
    assert group
    return group.group(1)


def test_gfx942_kernel_attributes_and_code_object() -> None:
    plain = _gfx942()
    assert "amdgpu-waves-per-eu" not in plain.asm["llir"]
    assert "denormal-fp-math" not in plain.asm["llir"]
    assert ".amdhsa_float_denorm_mode_32 3" in plain.asm["amdgcn"]   # IEEE f32 denormals
    waves = _gfx942(waves_per_eu=3)
    assert '"amdgpu-waves-per-eu"="3"' in _kernel_attributes(waves.asm["llir"])
    flush = _gfx942(allow_flush_denorm=True)
    assert '"denormal-fp-math-f32"="preserve-sign,preserve-sign"' in \
        _kernel_attributes(flush.asm["llir"])
    assert ".amdhsa_float_denorm_mode_32 0" in flush.asm["amdgcn"]   # f32 denormals flushed
    both = _gfx942(waves_per_eu=2, allow_flush_denorm=True)
    attrs = _kernel_attributes(both.asm["llir"])
    assert '"amdgpu-waves-per-eu"="2"' in attrs and '"denormal-fp-math-f32"' in attrs
    if toolchain.find_lld() is None:
        pytest.skip("ld.lld not found")
    for ck in (plain, waves, flush, both):
        assert ck.asm.get("hsaco", b"")[:4] == b"\x7fELF", ck.metadata  # type: ignore[attr-defined]


def test_sm90_code_is_unchanged_by_the_amd_options() -> None:
    def ptx(**kw: object) -> str:
        ck = softplus_rows.compile(target="sm90", signature="*fp32,*fp32,i32",
                                   constexprs={"BLOCK": 256}, **kw)
        return str(ck.asm["ptx"])
    assert ptx(waves_per_eu=3, allow_flush_denorm=True) == ptx()

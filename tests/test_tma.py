"""TMA copies of descriptor loads (sm90): which loads the pass takes, the
generated code, the host-side tensor-map recipes, and the launch paths that
pass the maps (the Python path and the C fast path, with a recorded driver).
The copies themselves run on the H200 (scripts/gpu_suite.py, "TMA descriptor
loads")."""
from __future__ import annotations

import ctypes
import pathlib
import sys
from typing import Any

import pytest

import tilec
import tilec.language as tl
from tilec.errors import TilecError
from tilec.runtime import native, tensormap
from tilec.runtime.cuda import CudaKernel, param_slots

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))
from matmul_persistent import matmul_persistent  # noqa: E402

torch = pytest.importorskip("torch")
SIG = "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16"
CX = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "NUM_SMS": 132}


def _compile(target: str = "sm90", sig: str = SIG, **cx: Any) -> Any:
    return matmul_persistent.compile(target=target, signature=sig, num_warps=8, num_stages=3,
                                     constexprs={**CX, **cx})


def test_descriptor_loads_become_tma_copies_with_recipes() -> None:
    k = _compile()
    ptx = k.asm["ptx"]
    assert ptx.count(".param .align 64 .b8 matmul_persistent_param_") == 2
    assert "cvta.param.u64" in ptx and "mbarrier.try_wait.parity.shared::cta.b64 P1, [" in ptx
    assert "mbarrier.arrive.expect_tx.shared.b64 _, [%r" in ptx and "], 32768;" in ptx
    assert "cp.async.cg" not in ptx
    # Thread 0 prefetches both maps first thing, before the barriers are set up.
    head = ptx.split("mbarrier.init", 1)[0]
    assert head.count("@%tmp_p prefetch.tensormap [%rd") == 2 and "setp.eq.u32 %tmp_p" in head
    # A keeps its rows in order (one 128-row box); the accumulator's rows are
    # exchanged once after the loop.
    a, b = k.metadata["tensormaps"]
    assert a == {"base": 0, "elem_bytes": 2, "block": [128, 64], "box": [128, 64],
                 "shape": [["arg", 3], ["arg", 5]], "strides": [["arg", 5], ["const", 1]]}
    assert b["base"] == 1 and b["box"] == [128, 64] and b["shape"][0] == ["arg", 4]
    assert '"tile.row_exchange"' in k.asm["tiled"]
    if k.asm.get("cubin"):
        assert k.metadata["spill_stores"] == 0 and k.metadata["stack_bytes"] == 0


@pytest.mark.parametrize("sig,cx,why", [
    ("*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32", {}, "K may not be a multiple of 16"),
    ("*fp16:1,*fp16:16,*fp16:16,i32:16,i32:16,i32:16", {}, "A's base may be unaligned"),
    (SIG, {"BLOCK_K": 32}, "64-byte rows: not a whole 128-byte atom"),
])
def test_loads_tma_cannot_copy_stay_pointer_loads(sig: str, cx: dict[str, Any],
                                                  why: str) -> None:
    k = _compile(sig=sig, **cx)
    # Both operands of the loop are copied the same way: neither by TMA here.
    assert not k.metadata.get("tensormaps"), why
    assert "tile.tma_coords" not in k.asm["gpu"] and "cp.async.bulk" not in k.asm["ptx"]


def test_tcgen05_loops_take_tma_copies_without_a_barrier() -> None:
    """sm100 (assembled by ptxas for sm_100a; no Blackwell GPU here): the
    product's own mbarrier tells the issuing thread that the slot is free."""
    k = matmul_persistent.compile(target="sm100", signature=SIG, num_warps=4, num_stages=3,
                                  constexprs={**CX, "NUM_SMS": 148})
    assert [m["box"] for m in k.metadata["tensormaps"]] == [[128, 64], [128, 64]]
    ptx = k.asm["ptx"]
    assert "tcgen05.mma" in ptx and "cp.async.bulk.tensor.2d" in ptx and "cp.async.cg" not in ptx
    # The flattened loop's body up to its epilogue branch (the product's final wait).
    loop = k.asm["tiled"].split('"tile.mbarrier_wait"', 1)[1].split("{pending = 0", 1)[0]
    assert '"tile.tma_copy"' in loop and '"tile.barrier"' not in loop
    assert '"tile.row_exchange"' not in k.asm["tiled"]   # tcgen05's A rows are in order


@pytest.mark.parametrize("target", ["sm80", "gfx942", "cpu"])
def test_targets_without_tma_keep_pointer_loads(target: str) -> None:
    k = matmul_persistent.compile(target=target, signature=SIG, num_warps=4, num_stages=3,
                                  constexprs=CX)
    assert not k.metadata.get("tensormaps")
    assert "tile.tma" not in k.asm.get("tiled", k.asm["tile-opt"] if "tile-opt" in k.asm
                                       else "")


def test_recipe_expressions_and_limits() -> None:
    r = {"base": 0, "elem_bytes": 2, "shape": [["arg", 3], ["mul", ["arg", 4], ["const", 2]]],
         "strides": [["add", ["arg", 4], ["const", 8]], ["const", 1]], "box": [8, 64]}
    assert tensormap.fields(r, [4096, 0, 0, 100, 56]) == (4096, (100, 112), (128,))
    with pytest.raises(TilecError, match="negative shape"):
        tensormap.check_fields(r, 4096, (-1, 8), (128,))
    with pytest.raises(TilecError, match="multiples of 16 bytes"):
        tensormap.check_fields(r, 4100, (1, 8), (128,))
    with pytest.raises(TilecError, match="malformed"):
        tensormap.evaluate(["pow", ["const", 1], ["const", 2]], [])
    assert tensormap.TensorMaps([r]).parameters() == [0, 3, 4]


class _FakeMaps(tensormap.TensorMaps):
    """Tensor maps whose 'encoding' records the fields (no driver here)."""

    def _encode(self, recipe: dict[str, Any], addr: int, shape: tuple[int, ...],
                strides: tuple[int, ...]) -> bytes:
        return repr((addr, shape, strides)).encode().ljust(tensormap.MAP_BYTES, b"\0")


def test_maps_are_encoded_once_per_distinct_tensor_and_zero_sized_ones_read_zeros(
        monkeypatch: pytest.MonkeyPatch) -> None:
    r = {"base": 0, "elem_bytes": 2, "shape": [["arg", 1], ["arg", 2]],
         "strides": [["arg", 2], ["const", 1]], "box": [8, 64]}
    maps = _FakeMaps([r])
    calls: list[Any] = []
    real = maps._encode
    monkeypatch.setattr(maps, "_encode", lambda *a: calls.append(a) or real(*a))
    maps.fill([0x10000, 64, 128])
    maps.fill([0x10000, 64, 128])
    assert len(calls) == 1
    assert ctypes.string_at(maps.addresses[0], 40).startswith(b"(65536, (64, 128), (256,))")
    assert all(a % 64 == 0 for a in maps.addresses)
    zeros = tensormap.TensorMaps([r])
    monkeypatch.setattr(zeros, "_zero_buffer", lambda n, store=False: 0x90000 + n)
    seen: list[Any] = []
    monkeypatch.setattr(tensormap, "_encoder", lambda: lambda *a: seen.append(a) or 0)
    zeros.fill([0x10000, 64, 0])   # K = 0: a zeroed box stands in
    assert seen and seen[0][3].value == 0x90000 + 8 * 64 * 2


class _Tensor:
    __module__ = "torch"

    def __init__(self, address: int) -> None:
        self._address, self.dtype, self.is_cuda = address, torch.float16, True
        self.device = type("D", (), {"type": "cuda"})()

    def data_ptr(self) -> int:
        return self._address

    def is_contiguous(self) -> bool:
        return True

    def dim(self) -> int:
        return 2


def test_tma_kernels_launch_through_the_c_path_with_their_maps(
        monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    if native.launch_module() is None:
        pytest.skip(f"no C launch path here: {native.status()}")
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    import tilec.runtime.cuda as cuda_rt
    from tilec.runtime import launch_entries
    calls: list[Any] = []
    python_launches: list[Any] = []

    def launch(f: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int,
               stream: Any, params: int, extra: Any) -> int:
        ptrs = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        maps = [ctypes.string_at(ptrs[6 + i], 40).rstrip(b"\0") for i in range(2)]
        calls.append([ctypes.c_uint64.from_address(ptrs[0]).value, maps])
        return 0

    fn = ctypes.CFUNCTYPE(ctypes.c_int, *([ctypes.c_void_p] + [ctypes.c_uint] * 7 +
                                          [ctypes.c_void_p] * 3))(launch)

    class FakeCudaKernel(CudaKernel):
        def __init__(self, image: bytes, name: str, arg_types: Any, threads: int,
                     shared_bytes: int = 0, tensormaps: Any = (), cluster_ctas: int = 1) -> None:
            self.threads, self.shared, self.cluster_ctas = threads, shared_bytes, cluster_ctas
            self._slots = param_slots(arg_types)
            self._function_handle = 0x7000
            self._raw_launch = fn
            self._maps = _FakeMaps(tensormaps)

        def launch(self, grid: tuple[int, int, int], raw_args: Any) -> None:
            assert self._maps is not None
            self._maps.fill(raw_args)
            python_launches.append(list(raw_args))

    monkeypatch.setattr(cuda_rt, "CudaKernel", FakeCudaKernel)
    monkeypatch.setattr(cuda_rt, "target_for_device", lambda: "sm90")
    monkeypatch.setattr(launch_entries, "stream_functions", lambda: (None, None))
    a, b, c = _Tensor(0x100000), _Tensor(0x200000), _Tensor(0x300000)
    cx = {**CX, "num_warps": 8, "num_stages": 3}
    matmul_persistent[(132,)](a, b, c, 256, 256, 512, **cx)
    assert len(python_launches) == 1 and not calls
    matmul_persistent[(132,)](a, b, c, 256, 256, 512, **cx)   # the C path, same tensors
    assert len(python_launches) == 1
    assert calls == [[0x100000, [b"(1048576, (256, 512), (1024,))",
                                 b"(2097152, (256, 512), (1024,))"]]]
    # Another A: the entry's maps would be stale, so the C path must not take it.
    a2 = _Tensor(0x400000)
    matmul_persistent[(132,)](a2, b, c, 256, 256, 512, **cx)
    assert len(python_launches) == 2 and len(calls) == 1
    matmul_persistent[(132,)](a2, b, c, 256, 256, 512, **cx)
    assert len(calls) == 2 and calls[1][1][0] == b"(4194304, (256, 512), (1024,))"
    # Another K changes the maps too.
    matmul_persistent[(132,)](a2, b, c, 256, 256, 1024, **cx)
    assert len(python_launches) == 3


_ = tl  # the kernel module imports tilec.language itself
_ = tilec


@tilec.kernel
def scaled_in_loop(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr):
    a_d = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1],
                                    block_shape=[BLOCK_M, BLOCK_K])
    b_d = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1],
                                    block_shape=[BLOCK_N, BLOCK_K])
    rows = tl.arange(0, BLOCK_M)
    acc = tl.load(c_ptr + rows[:, None] * N + tl.arange(0, BLOCK_N)[None, :])  # not a splat
    for ki in range(tl.cdiv(K, BLOCK_K)):
        acc = tl.dot(a_d.load([0, ki * BLOCK_K]), b_d.load([0, ki * BLOCK_K]).T, acc)
    tl.store(c_ptr + rows[:, None] * N + tl.arange(0, BLOCK_N)[None, :], acc)


def test_a_non_splat_accumulator_keeps_the_permuted_ring() -> None:
    """Rows of A may stay in order only where the accumulator starts as a splat:
    here it is loaded, so A's ring is permuted (16 boxes of 8 rows) and no row
    exchange follows."""
    k = scaled_in_loop.compile(target="sm90", signature="*fp16:16,*fp16:16,*fp32:16,i32:16,"
                               "i32:16,i32:16", num_warps=8, num_stages=3,
                               constexprs={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64})
    assert [m["box"] for m in k.metadata["tensormaps"]] == [[8, 64], [128, 64]]
    assert '"tile.row_exchange"' not in k.asm["tiled"]
    assert 'row_permutation = "wgmma"' in k.asm["tiled"]

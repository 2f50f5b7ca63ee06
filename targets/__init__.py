"""Target records: every difference between chips is data here.

Passes ask a `Target` for fields and features (`target.warp_size`,
`target.has("warp_sync_instr")`); they never compare chip names or vendors.
Adding a chip is adding one record.  This module imports no MLIR, so the
runtime can read target records on a machine without the compiler.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tilec.errors import TilecError


@dataclass(frozen=True)
class Target:
    """One compilation target.

    name: the user-facing name (`sm90`, `gfx942`, `cpu`).
    vendor: `nvidia`, `amd` or `cpu` (selects the back-end stage list only).
    chip: what the back end is told (`sm_90a`, `gfx942`, `host`).
    warp_size: lanes that execute in lock-step (1 on the CPU).
    vector_bytes: widest single memory access per thread (per core on the CPU).
    shared_bytes: workgroup (shared/LDS) memory available to one program.
    mma: tensor-core kind (`mma_sync`, `wgmma`, `tcgen05`, `mfma`, `wmma`) or None.
    features: capability flags asked for by passes.
    stages: ordered artifact stages this target produces.
    atomic_scope: LLVM syncscope naming "all threads of the device" in the back
        end's memory model (NVPTX `device`, AMDGPU `agent`).
    max_grid: the most programs a launch may have along x, y, z.
    """

    name: str
    vendor: str
    chip: str
    warp_size: int
    vector_bytes: int
    shared_bytes: int
    max_threads: int
    mma: str | None
    features: frozenset[str] = field(default_factory=frozenset)
    ptx_version: str | None = None
    code_object_version: int | None = None
    stages: tuple[str, ...] = ()
    atomic_scope: str | None = None
    max_grid: tuple[int, int, int] = (2 ** 31 - 1, 65535, 65535)

    def check_grid(self, grid: tuple[int, int, int]) -> None:
        """A TilecError when a launch's grid exceeds what this target can launch."""
        for axis, (d, limit) in enumerate(zip(grid, self.max_grid)):
            if d > limit:
                raise TilecError(f"grid dimension {'xyz'[axis]} = {d} exceeds the {self.name} "
                                 f"limit of {limit} programs along it; put the large count on "
                                 "x or loop inside the kernel")

    def has(self, feature: str) -> bool:
        return feature in self.features

    def describe(self) -> dict[str, object]:
        return {
            "name": self.name, "vendor": self.vendor, "chip": self.chip,
            "warp_size": self.warp_size, "vector_bytes": self.vector_bytes,
            "shared_bytes": self.shared_bytes, "max_threads": self.max_threads,
            "mma": self.mma, "features": sorted(self.features),
        }


_NV_STAGES = ("tile", "tiled", "gpu", "llir", "ptx", "cubin")
_AMD_STAGES = ("tile", "tiled", "gpu", "llir", "amdgcn", "hsaco")
# `warp_sync_instr`: lanes of a warp may diverge, so warp-level exchange needs an
# explicit synchronizing instruction (NVIDIA's bar.warp.sync); lock-step AMD
# wavefronts need none.
# `device_libm`: a device math library is linked (NVIDIA's libdevice is embedded
# by MLIR); `fast_exp2`: tl.exp uses the hardware 2^x; `fp_contract`: float
# mul+add may fuse into FMA (Triton's default).
# `dynamic_shared`: static shared memory is capped (48 KiB); kernels needing more
# get it as dynamic shared memory sized at launch.
# `ptx_predicated_mem`: masked global loads/stores become predicated PTX
# instructions (`@p ld.global.v4.b32` through inline asm) instead of branches.
# `mma_m16n8k16`: warp-wide `mma.sync.aligned.m16n8k16` on f16/bf16 (sm80 and later):
# tl.dot's products run on the tensor cores.
_NV_COMMON = frozenset({"warp_sync_instr", "shfl_sync", "f16", "bf16", "device_libm",
                        "fast_exp2", "fp_contract", "ptx_predicated_mem", "fast_fdiv",
                        "dynamic_shared", "mma_m16n8k16"})
# `implicit_block_count`: the grid size comes from the code object's hidden
# kernel arguments (gpu.grid_dim would call the unlinked device library).
_AMD_COMMON = frozenset({"ds_swizzle", "ds_bpermute", "f16", "bf16", "fast_exp2", "fp_contract",
                         "implicit_block_count"})

# HIP's maxGridSize on CDNA/RDNA: x up to 2^31 - 1, y and z up to 65536.
_AMD_GRID = (2 ** 31 - 1, 65536, 65536)

TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("sm80", "nvidia", "sm_80", 32, 16, 166912, 1024, "mma_sync",
           _NV_COMMON | {"cp_async"}, ptx_version="7.0", stages=_NV_STAGES, atomic_scope="device"),
    Target("sm90", "nvidia", "sm_90a", 32, 16, 232448, 1024, "wgmma",
           _NV_COMMON | {"cp_async", "has_wgmma", "has_tma"}, ptx_version="8.0",
           stages=_NV_STAGES, atomic_scope="device"),
    Target("sm100", "nvidia", "sm_100a", 32, 16, 232448, 1024, "tcgen05",
           _NV_COMMON | {"cp_async", "has_tma", "has_tcgen05"}, ptx_version="8.6",
           stages=_NV_STAGES, atomic_scope="device"),
    Target("gfx90a", "amd", "gfx90a", 64, 16, 65536, 1024, "mfma",
           _AMD_COMMON | {"dpp_row_bcast"}, code_object_version=5, stages=_AMD_STAGES, atomic_scope="agent",
           max_grid=_AMD_GRID),
    Target("gfx942", "amd", "gfx942", 64, 16, 65536, 1024, "mfma",
           _AMD_COMMON | {"dpp_row_bcast"}, code_object_version=5, stages=_AMD_STAGES, atomic_scope="agent",
           max_grid=_AMD_GRID),
    Target("gfx950", "amd", "gfx950", 64, 16, 163840, 1024, "mfma",
           _AMD_COMMON | {"dpp_row_bcast", "permlane32_swap"}, code_object_version=5,
           stages=_AMD_STAGES, atomic_scope="agent", max_grid=_AMD_GRID),
    Target("gfx1100", "amd", "gfx1100", 32, 16, 65536, 1024, "wmma",
           _AMD_COMMON, code_object_version=5, stages=_AMD_STAGES, atomic_scope="agent",
           max_grid=_AMD_GRID),
    # The CPU: one "lane" per program instance; each program computes its whole
    # tile as vectors of the host's SIMD width, program ids run on a thread pool.
    Target("cpu", "cpu", "host", 1, 64, 1 << 20, 1, None,
           frozenset({"f16", "bf16"}), stages=("tile", "cpu", "llir", "asm", "so"),
           max_grid=(2 ** 31 - 1, 2 ** 31 - 1, 2 ** 31 - 1)),
)}


def get_target(name: str) -> Target:
    """The record for `name`; a `TilecError` listing the valid names otherwise."""
    try:
        return TARGETS[name]
    except KeyError:
        valid = ", ".join(TARGETS)
        raise TilecError(f"unknown target '{name}'; valid targets are: {valid}") from None

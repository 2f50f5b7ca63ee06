"""Target records: every difference between chips is data here.

Passes ask a `Target` for fields and features (`target.warp_size`,
`target.has(Feature.WARP_SYNC_INSTR)`); they never compare chip names or vendors.
Adding a chip is adding one record.  This module imports no MLIR, so the
runtime can read target records on a machine without the compiler.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from tilec.errors import TilecError


class Feature(str, Enum):
    """A capability a pass or rule may ask a target for (`target.has(Feature.X)`).

    Every member is read by some pass or rule; a feature nobody reads is deleted
    rather than declared.  `Target.has` accepts only members, so a misspelt
    feature is an error, not a silent False.
    """

    # Lanes of a warp may diverge, so warp-level exchange needs an explicit
    # synchronizing instruction (NVIDIA's bar.warp.sync); lock-step AMD
    # wavefronts need none.
    WARP_SYNC_INSTR = "warp_sync_instr"
    # A device math library is linked (NVIDIA's libdevice is embedded by MLIR).
    DEVICE_LIBM = "device_libm"
    # Kernels can print (`gpu.printf` -> NVIDIA's vprintf): a failed debug-mode
    # check prints its message before it traps.
    DEVICE_PRINTF = "device_printf"
    # Kernels can print through the OpenCL printf buffer (AMD: LLVM's printf
    # pass writes records into `hidden_printf_buffer`; targets/amd/printf.py
    # defines `__printf_alloc`): `tl.device_print` only, not the debug mode.
    PRINTF_BUFFER = "printf_buffer"
    # tl.exp uses the hardware 2^x unit.
    FAST_EXP2 = "fast_exp2"
    # tl.math.exp2 on float32 is the chip's 2^x instruction itself (AMD:
    # `llvm.amdgcn.exp2`, one v_exp_f32, as Triton's AMD back end emits) instead
    # of LLVM's exp2, which scales inputs below -126 for denormal results.
    EXP2_INSTR = "exp2_instr"
    # tl.math.exp2 on float32 is `ex2.approx.ftz.f32` (NVIDIA; results below
    # 2^-126 flush to zero, as Triton's NVIDIA back end emits) instead of
    # libdevice's exp2f, whose non-ftz `ex2.approx.f32` ptxas wraps in a range
    # check and two multiplies (three more instructions per element: a sixth
    # of an attention loop).
    EXP2_FTZ = "exp2_ftz"
    # Per-chunk coordinate constants stay the last term of index and address
    # arithmetic: `base + c` with no-wrap flags, extensions distributed over
    # it, `(a + c) + y` emitted as `(a + y) + c` (passes/gpu/context.py
    # `coordinates`, passes/gpu/math.py): LLVM keeps one row base per thread
    # and folds the constants into immediates (AMD: 17 VGPRs of gfx942's
    # 4-warp attention).  CDNA records only: on gfx1100 it made the persistent
    # fp8 64x64x64 matmul spill 14 VGPRs; on NVIDIA it changes the PTX, and that
    # has not been measured on the H200.
    CHUNK_CONSTANTS_LAST = "chunk_constants_last"
    # float32 division may use the approximate (full-range) divide, as Triton does.
    FAST_FDIV = "fast_fdiv"
    # float mul+add may fuse into FMA (Triton's default).
    FP_CONTRACT = "fp_contract"
    # Static shared memory is capped (`static_shared_bytes`); kernels needing more
    # get it as dynamic shared memory sized at launch.
    DYNAMIC_SHARED = "dynamic_shared"
    # Atomic read-modify-writes carry their acq_rel ordering in the PTX text
    # (`atom.acq_rel.gpu.global...` through inline asm, else fences around the
    # atom: targets/nvidia/atomics.py): LLVM 22's NVPTX back end prints an
    # `atomicrmw ... acq_rel` as a relaxed `atom`.
    PTX_ORDERED_ATOM = "ptx_ordered_atom"
    # Masked global loads/stores become predicated PTX instructions
    # (`@p ld.global.v4.b32` through inline asm) instead of branches.
    PTX_PREDICATED_MEM = "ptx_predicated_mem"
    # Warp-wide `mma.sync.aligned.m16n8k16` on f16/bf16 (sm80 and later):
    # tl.dot's products run on the tensor cores.
    MMA_M16N8K16 = "mma_m16n8k16"
    # Warpgroup-wide asynchronous MMA (`wgmma.mma_async`, sm_90a): tl.dot's
    # operands are read from swizzled shared memory through matrix descriptors.
    WGMMA = "wgmma"
    # Single-thread-issued asynchronous MMA with the accumulator in tensor
    # memory (`tcgen05.mma` + `tcgen05.alloc`/`ld`/`st`, sm_100a): tl.dot's
    # operands are read from swizzled shared memory through sm100 descriptors.
    TCGEN05 = "tcgen05"
    # Asynchronous global -> shared copies (`cp.async`, sm80 and later): the
    # software pipeliner stages tl.dot operands without passing through registers.
    CP_ASYNC = "cp_async"
    # The tensor memory accelerator (`cp.async.bulk.tensor` with transaction
    # mbarriers, sm90 and later): the pipeliner copies descriptor loads whose
    # tensor map the host can encode with one thread per block.
    TMA = "tma"
    # The back end assembles inline assembly in the generated code
    # (`tl.inline_asm_elementwise`; NVIDIA: ptxas reads the PTX text).  The
    # in-process AMDGPU back end has no assembler for inline AMDGCN.
    INLINE_ASM = "inline_asm"
    # The back end assembles inline assembly by running `llvm-mc` on the
    # assembly text it prints (AMD: llvmlite's in-process AMDGPU back end has no
    # assembly parser, so its object emission cannot take inline AMDGCN); a
    # kernel with inline asm is refused at its line when no llvm-mc is found.
    INLINE_ASM_LLVM_MC = "inline_asm_llvm_mc"
    # Float conversions take a rounding-mode suffix (PTX `cvt.rz.f16.f32`,
    # `cvt.rz.bf16.f32` from sm80, `cvt.rz.f32.f64`): a round-toward-zero
    # downcast is one instruction; elsewhere an arith sequence
    # (passes/float_rounding.py).
    CVT_ROUNDING = "cvt_rounding"
    # The grid size comes from the code object's hidden kernel arguments
    # (gpu.grid_dim would call the unlinked device library).
    IMPLICIT_BLOCK_COUNT = "implicit_block_count"
    # Wavefront-wide matrix instructions of CDNA (`v_mfma_*` through
    # `amdgpu.mfma`): tl.dot runs on the matrix cores; which shapes and dtypes
    # is the record's `matrix_instrs` table.
    MFMA = "mfma"
    # RDNA3's wave32 matrix instructions (`v_wmma_*` through `amdgpu.wmma`),
    # shapes and dtypes in `matrix_instrs`.
    WMMA = "wmma"
    # CDNA (GFX9-format) buffer resources: a tile access whose pointer is a
    # scalar base plus lane offsets proven to lie in [0, 2^31) becomes a
    # `buffer_load/store` with an SGPR resource and a 32-bit VGPR offset; a
    # masked-off lane gets an out-of-range offset instead of a branch.
    BUFFER_OPS = "buffer_ops"
    # Layout conversions through workgroup memory permute the 16-byte chunks of
    # each row (chunk c of row r at c ^ (r % 8)) instead of padding rows by 16
    # bytes: the exchange takes no bytes beyond the tile (AMD: the LDS bytes
    # bound the waves per SIMD, and a matmul epilogue's padded tile outgrew
    # its operand ring).
    SWIZZLED_EXCHANGE = "swizzled_exchange"
    # `stmatrix.sync.aligned.m8n8.x4.b16` (sm90 and later): a layout exchange
    # through workgroup memory writes 16-bit elements held in an mma/wgmma
    # accumulator layout four 8 x 8 matrices per instruction
    # (targets/nvidia/exchange_stores.py): a 128 x 256 f16 epilogue of 8 warps
    # stores 16 times per thread instead of 64.
    STMATRIX = "stmatrix"
    # Warpgroups of one block take different roles with their own register
    # budgets (`setmaxnreg`, sm_90a) and sync among themselves through named
    # barriers (`bar.sync id, count`): a producer warpgroup issues a
    # pipelined loop's TMA copies (passes/tile_warp_specialize.py).
    WARP_SPECIALIZE = "warp_specialize"
    # A cross-warp reduction's workgroup-memory scratch is released once read;
    # an allocation that reuses the bytes starts with a barrier (AMD: LDS bytes
    # bound the waves per SIMD; on NVIDIA the shifted offsets and the barrier
    # cost more than the bytes: an sm100 attention spilled 8 bytes with it).
    SCRATCH_REUSE = "scratch_reuse"
    # A dot result whose threads hold >= 4 contiguous bytes of a row is stored
    # from its registers, not exchanged through workgroup memory for wider
    # stores (AMD: a wave's 4-byte stores still write whole 128-byte rows, and
    # the exchange's tile outgrew an fp8 operand ring: the LDS bytes bound
    # the waves per SIMD; NVIDIA's mma.sync results keep the exchange).
    DIRECT_ACC_STORES = "direct_acc_stores"
    # K loops carry a scalar pointer base instead of a pointer tile
    # (tile-loop-pointers): SGPR bases on AMD; on the H200 the tutorial-03
    # matmul's cp.async loop lost the register moves that re-paired every
    # carried 64-bit pointer (128x128x64, 4 warps: 0.89-0.94 of Triton ->
    # 0.98).  Not on sm100: there ptxas spilled 4 bytes in a tcgen05 config
    # with it (128x128x128, 8 warps) and no Blackwell GPU can time the change.
    LOOP_SCALAR_BASES = "loop_scalar_bases"
    # Vector loads and stores mask 8- and 16-bit lanes natively (x86
    # AVX-512BW).  Without it LLVM expands every masked narrow lane into a
    # branch of its own (a 2048-lane f16 softmax row: over 300 s of code
    # generation), so such accesses take an all-true fast path and a loop over
    # lane groups (passes/cpu/narrow_masks.py).  The CPU back end drops it when
    # the host lacks it (targets/cpu/backend.py `host_target`).
    MASKED_NARROW_MEMORY = "masked_narrow_memory"
    # Thread-block clusters (sm90): `num_ctas=2` runs a program on two CTAs of
    # one cluster, each computing half the rows of its dot tiles
    # (passes/tile_split_ctas.py), and a TMA ring's B blocks are copied once
    # for both and multicast into their shared memory (`.multicast::cluster`,
    # `mapa`, remote mbarrier arrivals: passes/pipeline_cluster.py).  Not on
    # sm100 yet: its tcgen05 rings have no multicast form.  The CPU runs the
    # two halves as two program instances (the split checked against NumPy).
    CLUSTER = "cluster"
    # f32 <-> bf16 conversions in vector registers (x86 AVX512-BF16).
    # Without it LLVM takes wide bf16 vectors apart lane by lane (a 1024-lane
    # bf16 row reduction: 105 s of code generation), so the CPU back end
    # computes bf16 in f32 and keeps bf16 values as i16 (targets/cpu/bf16.py).
    BF16_VECTOR_CONVERT = "bf16_vector_convert"


@dataclass(frozen=True)
class MatrixInstr:
    """One AMD matrix instruction a target has (an entry of `matrix_instrs`).

    kind: `mfma` or `wmma` (the `tile.mma` family and the amdgpu op).
    m, n, k: the product one instruction computes per wavefront (D[m, n] +=
        A[m, k] B[k, n]).
    a, acc: operand and accumulator element types (`f16`, `bf16`, `f32`, `i32`).
    operand_elems: A (and B) elements each lane passes: lane l holds row l % m
        of A (column l % n of B) at k = operand_elems * g + 0.., with
        g = (l // m) % (k // operand_elems) (k // operand_elems == 1: the
        upper lanes replicate the lower ones, as WMMA wants).
    acc_run: accumulator rows a lane holds contiguously: lane l, register r
        holds column l % n and row L * acc_run * (r // acc_run) +
        acc_run * (l // n) + r % acc_run, L = wave size // n (4 on CDNA's MFMA,
        1 on RDNA3's WMMA, whose registers interleave the lane halves).
    """

    kind: str
    m: int
    n: int
    k: int
    a: str
    acc: str
    operand_elems: int
    acc_run: int

    @property
    def shape(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"


@dataclass(frozen=True)
class Target:
    """One compilation target.

    name: the user-facing name (`sm90`, `gfx942`, `cpu`).
    vendor: `nvidia`, `amd` or `cpu`: selects the back end (its stage list)
        and nothing else.
    chip: what the back end is told (`sm_90a`, `gfx942`, `host`).
    warp_size: lanes that execute in lock-step (1 on the CPU).
    vector_bytes: widest single memory access per thread; on the CPU, the
        SIMD register width the CPU lowering strip-mines by.
    shared_bytes: workgroup (shared/LDS) memory available to one program.
    static_shared_bytes: the most workgroup memory a kernel may declare
        statically; beyond it a target with `Feature.DYNAMIC_SHARED` asks for
        dynamic shared memory at launch.
    max_threads: the most threads one program (block) may have.
    features: capabilities asked for by passes and rules.
    ptx_version: the lowest PTX ISA the chip accepts (NVIDIA).
    code_object_version: the AMDHSA code object version to emit (AMD).
    atomic_scope: LLVM syncscope naming "all threads of the device" in the back
        end's memory model (NVPTX `device`, AMDGPU `agent`).
    max_grid: the most programs a launch may have along x, y, z.
    compute_capability: the CUDA major compute capability of the chips this
        record serves (the runtime maps a device to its record through it).
    max_tile_elements: the most elements one tile may have (tile-verify refuses
        larger ones before code generation).  65536 everywhere today: on the
        CPU a whole-tile vector of more elements aborts LLVM's instruction
        selection (an SDNode holds at most 65535 operands); on GPUs it is
        already 512 values per thread at 4 warps.
    matrix_instrs: the AMD matrix instructions tl.dot may use, preferred
        first (`tile-accelerate-dot` takes the first that fits a dot).
    """

    name: str
    vendor: str
    chip: str
    warp_size: int
    vector_bytes: int
    shared_bytes: int
    max_threads: int
    features: frozenset[Feature] = field(default_factory=frozenset)
    static_shared_bytes: int | None = None
    ptx_version: str | None = None
    code_object_version: int | None = None
    atomic_scope: str | None = None
    max_grid: tuple[int, int, int] = (2 ** 31 - 1, 65535, 65535)
    compute_capability: int | None = None
    max_tile_elements: int = 1 << 16
    matrix_instrs: tuple[MatrixInstr, ...] = ()

    def __post_init__(self) -> None:
        for f in self.features:
            if not isinstance(f, Feature):
                raise TypeError(f"target {self.name}: feature {f!r} is not a tilec.targets.Feature")

    def check_grid(self, grid: tuple[int, int, int]) -> None:
        """A TilecError when a launch's grid exceeds what this target can launch."""
        for axis, (d, limit) in enumerate(zip(grid, self.max_grid)):
            if d > limit:
                raise TilecError(f"grid dimension {'xyz'[axis]} = {d} exceeds the {self.name} "
                                 f"limit of {limit} programs along it; put the large count on "
                                 "x or loop inside the kernel")

    def has(self, feature: Feature) -> bool:
        if not isinstance(feature, Feature):
            raise TypeError(f"Target.has takes a tilec.targets.Feature, not {feature!r}")
        return feature in self.features

    @property
    def stages(self) -> tuple[str, ...]:
        """The artifact stages this target produces, in order."""
        return STAGES[self.vendor]

    def describe(self) -> dict[str, object]:
        return {
            "name": self.name, "vendor": self.vendor, "chip": self.chip,
            "warp_size": self.warp_size, "vector_bytes": self.vector_bytes,
            "shared_bytes": self.shared_bytes, "max_threads": self.max_threads,
            "features": sorted(f.value for f in self.features),
        }


# The artifact stages of each back end, in order (the IR stages first).
STAGES: dict[str, tuple[str, ...]] = {
    "nvidia": ("tile", "tiled", "gpu", "llir", "ptx", "cubin"),
    "amd": ("tile", "tiled", "gpu", "llir", "amdgcn", "hsaco"),
    "cpu": ("tile", "cpu", "llir", "asm", "so"),
}

F = Feature
_NV_COMMON = frozenset({F.WARP_SYNC_INSTR, F.DEVICE_LIBM, F.DEVICE_PRINTF, F.FAST_EXP2,
                        F.FP_CONTRACT, F.PTX_PREDICATED_MEM, F.FAST_FDIV, F.DYNAMIC_SHARED,
                        F.MMA_M16N8K16, F.CP_ASYNC, F.INLINE_ASM, F.CVT_ROUNDING, F.EXP2_FTZ,
                        F.PTX_ORDERED_ATOM})
_AMD_COMMON = frozenset({F.FAST_EXP2, F.EXP2_INSTR, F.FP_CONTRACT, F.IMPLICIT_BLOCK_COUNT,
                         F.SWIZZLED_EXCHANGE, F.SCRATCH_REUSE, F.DIRECT_ACC_STORES,
                         F.INLINE_ASM_LLVM_MC, F.LOOP_SCALAR_BASES, F.PRINTF_BUFFER})
# CUDA's default cap on static shared memory per block.
_NV_STATIC_SHARED = 48 * 1024
# HIP's maxGridSize on CDNA/RDNA: x up to 2^31 - 1, y and z up to 65536.
_AMD_GRID = (2 ** 31 - 1, 65536, 65536)


def _nvidia(name: str, chip: str, shared: int, ptx: str, cc: int,
            extra: frozenset[Feature] = frozenset()) -> Target:
    return Target(name, "nvidia", chip, 32, 16, shared, 1024, _NV_COMMON | extra,
                  static_shared_bytes=_NV_STATIC_SHARED, ptx_version=ptx,
                  atomic_scope="device", compute_capability=cc)


# CDNA2/3 MFMA (wave64; AMD CDNA3 ISA, "Matrix Arithmetic Instructions"): 32x32x8
# first (as Triton 3.9 chooses for tiles of 32 and more), else 16x16x16.  The
# bf16 forms are the `_1k` ones (4 bf16 per lane).
_MFMA_CDNA = tuple(MatrixInstr("mfma", d, d, k, a, "f32", 4, 4)
                   for a in ("f16", "bf16") for d, k in ((32, 8), (16, 16)))
# int8 -> int32: CDNA2 passes 4 bytes per lane (v_mfma_i32_32x32x8_i8,
# 16x16x16), CDNA3 8 (v_mfma_i32_32x32x16_i8, 16x16x32).
_MFMA_I8_CDNA2 = tuple(MatrixInstr("mfma", d, d, k, "i8", "i32", 4, 4)
                       for d, k in ((32, 8), (16, 16)))
_MFMA_I8_CDNA3 = tuple(MatrixInstr("mfma", d, d, k, "i8", "i32", 8, 4)
                       for d, k in ((32, 16), (16, 32)))
# OCP fp8 (e4m3fn, e5m2) -> f32 on CDNA4 (gfx950), preferred first: the
# f8f6f4 forms (v_mfma_f32_32x32x64_f8f6f4, 16x16x128; 32 bytes per lane, the
# operand format in cbsz/blgp: 0 e4m3, 1 e5m2; amdgpu.mfma lowers them to
# rocdl.mfma.scale with neutral scales, the intrinsic call Triton 3.9 emits),
# then v_mfma_f32_32x32x16_fp8_fp8 / _bf8_bf8, 16x16x32 (8 bytes per lane) for
# K below 64.  The hardware's order of the k values in a lane's 32 bytes
# need not be the table's (one run, `operand_elems`): B's lanes mirror A's
# (as on every MFMA), so another order is one permutation of K applied to A
# and B alike, the same sum; Triton 3.9 feeds two 16-byte runs 32 bytes apart
# (kWidth 16), tilec one 32-byte run (not run on an MI355X: no AMD GPU here).
# gfx942's fp8 instructions take the
# FNUZ formats, which the frontend's OCP fp8 would reach only through a lossy
# conversion (e4m3fn holds up to 448, FNUZ e4m3 240): there fp8 dots widen to f16.
# CDNA4 (gfx950) f16/bf16 with twice the K: 8 elements per lane
# (v_mfma_f32_32x32x16_f16/bf16, 16x16x32), preferred over the CDNA3 forms.
_MFMA_CDNA4 = tuple(MatrixInstr("mfma", d, d, k, a, "f32", 8, 4)
                    for a in ("f16", "bf16") for d, k in ((32, 16), (16, 32)))
_MFMA_FP8_OCP = tuple(MatrixInstr("mfma", d, d, k, a, "f32", e, 4)
                      for a in ("f8E4M3FN", "f8E5M2")
                      for d, k, e in ((32, 64, 32), (16, 128, 32), (32, 16, 8), (16, 32, 8)))
# RDNA3 WMMA (wave32): 16 operand elements per lane, lanes 16-31 repeat 0-15
# (v_wmma_f32_16x16x16_f16/bf16, v_wmma_i32_16x16x16_iu8 signed).
_WMMA_RDNA3 = tuple(MatrixInstr("wmma", 16, 16, 16, a, acc, 16, 1)
                    for a, acc in (("f16", "f32"), ("bf16", "f32"), ("i8", "i32")))


def _amd(chip: str, warp: int, lds: int,
         instrs: tuple[MatrixInstr, ...] = ()) -> Target:
    kinds = {i.kind for i in instrs}
    extra = frozenset(f for f in (F.MFMA, F.WMMA) if f.value in kinds)
    if F.MFMA in extra:          # the CDNA chips: GFX9 buffer resources
        extra |= {F.BUFFER_OPS, F.CHUNK_CONSTANTS_LAST}
    return Target(chip, "amd", chip, warp, 16, lds, 1024, _AMD_COMMON | extra,
                  static_shared_bytes=lds, code_object_version=5, atomic_scope="agent",
                  max_grid=_AMD_GRID, matrix_instrs=instrs)


TARGETS: dict[str, Target] = {t.name: t for t in (
    _nvidia("sm80", "sm_80", 166912, "7.0", 8, frozenset({F.LOOP_SCALAR_BASES})),
    _nvidia("sm90", "sm_90a", 232448, "8.0", 9, frozenset({F.WGMMA, F.TMA, F.STMATRIX,
                                                                  F.LOOP_SCALAR_BASES,
                                                                  F.WARP_SPECIALIZE, F.CLUSTER})),
    _nvidia("sm100", "sm_100a", 232448, "8.6", 10, frozenset({F.TCGEN05, F.TMA, F.STMATRIX})),
    _amd("gfx90a", 64, 65536, _MFMA_CDNA + _MFMA_I8_CDNA2),
    _amd("gfx942", 64, 65536, _MFMA_CDNA + _MFMA_I8_CDNA3),
    _amd("gfx950", 64, 163840, _MFMA_CDNA4 + _MFMA_CDNA + _MFMA_I8_CDNA3 + _MFMA_FP8_OCP),
    _amd("gfx1100", 32, 65536, _WMMA_RDNA3),
    # The CPU: one "lane" per program instance; each program computes its whole
    # tile as vectors of the host's SIMD width (64 bytes: AVX-512), program ids
    # run on a thread pool.  The features are an AVX-512 host's; the back end
    # drops those this host lacks.
    Target("cpu", "cpu", "host", 1, 64, 1 << 20, 1,
           frozenset({F.MASKED_NARROW_MEMORY, F.BF16_VECTOR_CONVERT, F.CLUSTER}),
           max_grid=(2 ** 31 - 1, 2 ** 31 - 1, 2 ** 31 - 1)),
)}


def target_for_compute_capability(major: int) -> Target | None:
    """The NVIDIA record serving CUDA compute capability `major`.x, if any."""
    for t in TARGETS.values():
        if t.compute_capability == major:
            return t
    return None


def get_target(name: str) -> Target:
    """The record for `name`; a `TilecError` listing the valid names otherwise."""
    try:
        return TARGETS[name]
    except KeyError:
        valid = ", ".join(TARGETS)
        raise TilecError(f"unknown target '{name}'; valid targets are: {valid}") from None

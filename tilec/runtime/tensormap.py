"""Tensor maps encoded on the host for a kernel's TMA copies (no MLIR imported).

A kernel whose descriptor loads the pipeliner copies with TMA
(passes/tile_tma_descriptors.py, targets/nvidia/tma.py) takes, after its own
parameters, one 128-byte `__grid_constant__` parameter per tensor map.  Its
metadata lists each map's recipe: the base pointer's argument index, the
element size, the shape and strides (element units) as expressions of the
launch's arguments (["arg", i], ["const", c], ["add"|"mul", x, y]) and the box.
`TensorMaps.fill` evaluates them on the launch's raw arguments and encodes
each map with the driver's `cuTensorMapEncodeTiled` (called through ctypes:
plain C arguments; 128-byte swizzle, zeros outside the tensor), once per distinct (address, shape, strides): later launches with the
same tensors copy 128 cached bytes.

A map that tile-tma-pointers inferred from a pointer access (`inferred:
true`) has the bounds of that access's mask (`idx < bound`), so a negative
bound is 0: nothing is in bounds, as the mask says.  A batched access's map
has rank 3 to 5: shape [2^31, ..., rows, columns] (a batch dimension the
source does not bound is the constant 2^31; one a `pid_b < B` mask bounds
is B, like a row bound), strides [batch, ..., row, 1], box [1, ..., r, c].
A dimension of size 0 reads as zeros everywhere: such a map points at a zeroed
device buffer of one box (the box's own shape and dense strides, any rank)
instead of the (possibly absent) tensor.  A store's
map (`store: true`, a `tile.tma_store` writes through it) is encoded the same
way; with a dimension of size 0 it writes nothing that anyone reads (the
kernel has no tile to store then), so it points at a scratch buffer of its
own, never at the zeros the loads read.
"""
from __future__ import annotations

import ctypes
import math
from typing import Any, Sequence

from tilec.errors import TilecError

MAP_BYTES = 128
_CACHE_LIMIT = 4096
Expr = list[Any]


def evaluate(e: Expr, args: Sequence[Any]) -> int:
    """The value of a recipe expression for the raw launch arguments `args`."""
    op = e[0]
    if op == "arg":
        return int(args[e[1]])
    if op == "const":
        return int(e[1])
    x, y = evaluate(e[1], args), evaluate(e[2], args)
    if op == "add":
        return x + y
    if op == "mul":
        return x * y
    raise TilecError(f"malformed tensor-map expression {e!r} in the kernel's metadata")


def fields(recipe: dict[str, Any], args: Sequence[Any]) -> tuple[int, tuple[int, ...],
                                                                  tuple[int, ...]]:
    """(address, shape, byte strides of the outer dimensions) of one map; a
    TilecError where an argument the map's batch coordinates divide by (its
    `positive` list, tile-tma-descriptors) is not positive."""
    for i in recipe.get("positive", ()):
        if int(args[i]) <= 0:
            raise TilecError(f"this compiled kernel copies a tensor descriptor whose base offset "
                             f"divides a program index by argument {i} ({int(args[i])}) with "
                             f"the tensor memory accelerator, which needs it positive")
    eb = int(recipe["elem_bytes"])
    shape = tuple(evaluate(e, args) for e in recipe["shape"])
    strides = tuple(evaluate(e, args) * eb for e in recipe["strides"][:-1])
    return int(args[recipe["base"]]), shape, strides


def map_shape(recipe: dict[str, Any], shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape a map is encoded with: an inferred map's bound that is <= 0
    (a mask `idx < bound` that holds nowhere) is an empty dimension; a
    descriptor's shape as given (check_fields refuses a negative one)."""
    return tuple(max(d, 0) for d in shape) if recipe.get("inferred") else shape


def check_fields(recipe: dict[str, Any], addr: int, shape: tuple[int, ...],
                 strides: tuple[int, ...]) -> None:
    """A TilecError for values a tensor map cannot hold (the compiled kernel's
    specialization already guarantees 16-byte alignment of address and strides
    for launches that reach it; this guards the rest)."""
    if any(d < 0 for d in shape):
        raise TilecError(f"a tensor descriptor has a negative shape {list(shape)}")
    if any(d >= 2 ** 32 for d in shape) or any(s >= 2 ** 40 or s < 0 for s in strides):
        what = ("pointer accesses that this compiled kernel copies through tensor maps "
                "(tile-tma-pointers) have a shape" if recipe.get("inferred") else
                "a tensor descriptor's shape")
        raise TilecError(f"{what} {list(shape)} or strides (bytes) {list(strides)} outside "
                         f"what the tensor memory accelerator addresses (strides >= 0, "
                         f"below 2^40 bytes; sizes below 2^32)")
    if addr % 16 or any(s % 16 for s in strides):
        raise TilecError("a tensor descriptor's base address and row stride must be multiples "
                         "of 16 bytes for this compiled kernel")


class TensorMaps:
    """The tensor-map parameters of one loaded kernel: one 64-byte-aligned
    128-byte buffer each (what the kernel's parameter slots point at)."""

    def __init__(self, recipes: Sequence[dict[str, Any]]) -> None:
        self.recipes = list(recipes)
        self._raw = [ctypes.create_string_buffer(MAP_BYTES + 64) for _ in self.recipes]
        self.addresses = [(ctypes.addressof(b) + 63) // 64 * 64 for b in self._raw]
        self._cache: dict[tuple[Any, ...], bytes] = {}
        self._zeros: dict[tuple[int, bool], int] = {}

    def parameters(self) -> list[int]:
        """The kernel parameters the maps read (base pointers, shape and stride
        arguments), sorted."""
        used: set[int] = set()

        def visit(e: Expr) -> None:
            if e[0] == "arg":
                used.add(int(e[1]))
            elif e[0] in ("add", "mul"):
                visit(e[1])
                visit(e[2])

        for recipe in self.recipes:
            used.add(int(recipe["base"]))
            used.update(int(i) for i in recipe.get("positive", ()))
            for e in (*recipe["shape"], *recipe["strides"]):
                visit(e)
        return sorted(used)

    def encoded(self, args: Sequence[Any]) -> bytes:
        """Every map for `args`, concatenated (what a C launch entry passes)."""
        return b"".join(self._maps_for(args))

    def fill(self, args: Sequence[Any]) -> None:
        """Encode (or take from the cache) every map for this launch's `args`
        into the parameter buffers."""
        for at, data in zip(self.addresses, self._maps_for(args)):
            ctypes.memmove(at, data, MAP_BYTES)

    def _maps_for(self, args: Sequence[Any]) -> list[bytes]:
        out = []
        for i, recipe in enumerate(self.recipes):
            addr, shape, strides = fields(recipe, args)
            key = (i, addr, shape, strides)
            data = self._cache.get(key)
            if data is None:   # encoded once per distinct key, off the cached path
                dims = map_shape(recipe, shape)
                check_fields(recipe, addr, dims, strides)
                data = self._encode(recipe, addr, dims, strides)
                if len(self._cache) >= _CACHE_LIMIT:
                    self._cache.clear()
                self._cache[key] = data
            out.append(data)
        return out

    def _zero_buffer(self, nbytes: int, store: bool = False) -> int:
        """A zeroed device buffer of `nbytes` (kept for the process; a store
        map's is a separate one)."""
        key = (nbytes, store)
        if key not in self._zeros:
            lib = _libcuda()
            ptr = ctypes.c_uint64()
            _ok(lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(nbytes)), "cuMemAlloc")
            _ok(lib.cuMemsetD8_v2(ptr, ctypes.c_ubyte(0), ctypes.c_size_t(nbytes)), "cuMemsetD8")
            self._zeros[key] = int(ptr.value)
        return self._zeros[key]

    def _encode(self, recipe: dict[str, Any], addr: int, shape: tuple[int, ...],
                strides: tuple[int, ...]) -> bytes:
        eb = int(recipe["elem_bytes"])
        box = [int(b) for b in recipe["box"]]
        if 0 in shape:  # nothing to read: a zeroed box stands in for the tensor
            shape = tuple(box)
            strides = tuple(math.prod(box[i + 1:]) * eb for i in range(len(strides)))
            addr = self._zero_buffer(math.prod(box) * eb, bool(recipe.get("store")))
        rank = len(shape)
        out = ctypes.create_string_buffer(MAP_BYTES + 64)
        at = (ctypes.addressof(out) + 63) // 64 * 64
        u64s, u32s = ctypes.c_uint64 * rank, ctypes.c_uint32 * rank
        code = _encoder()(
            ctypes.c_void_p(at), _DATA_TYPE[eb], rank, ctypes.c_void_p(addr),
            u64s(*reversed(shape)), (ctypes.c_uint64 * max(rank - 1, 1))(*reversed(strides)),
            u32s(*reversed(box)), u32s(*([1] * rank)),
            _INTERLEAVE_NONE, _SWIZZLE_128B, _L2_PROMOTION_256B, _OOB_FILL_ZEROS)
        _ok(code, "cuTensorMapEncodeTiled")
        return ctypes.string_at(at, MAP_BYTES)


# The driver's enumerations (cuda.h): CUtensorMapDataType UINT8/16/32,
# CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
# CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE (zeros).
_DATA_TYPE = {1: 0, 2: 1, 4: 2}
_INTERLEAVE_NONE, _SWIZZLE_128B, _L2_PROMOTION_256B, _OOB_FILL_ZEROS = 0, 3, 3, 0
_ENCODER: list[Any] = []


def _libcuda() -> Any:
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        raise TilecError("TMA kernels need the CUDA driver (libcuda.so.1)") from None


def _ok(code: int, what: str) -> None:
    if code != 0:
        raise TilecError(f"CUDA driver error {code} in {what} (encoding a TMA tensor map)")


def _encoder() -> Any:
    """libcuda's cuTensorMapEncodeTiled with its C argument types."""
    if not _ENCODER:
        fn = getattr(_libcuda(), "cuTensorMapEncodeTiled", None)
        if fn is None:
            raise TilecError("TMA kernels need a CUDA 12 or later driver "
                             "(cuTensorMapEncodeTiled)")
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
                       ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                       ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        fn.restype = ctypes.c_int
        _ENCODER.append(fn)
    return _ENCODER[0]

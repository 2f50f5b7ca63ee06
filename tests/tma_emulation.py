"""A CPU differential harness for `tile-tma-pointers` (passes/tile_tma_pointers.py).

The pass tags a pointer-tile `tile.load` / `tile.store` on sm90 as the block
of a tensor map: `tile.tma = id` on the access, `tile.tma_coords` (the
block's coordinates, map dimension order) before it, the map's recipe (base
argument, shape, strides, block, elem_bytes, store) in the func's
`tile.tensormaps`.  On the GPU the pipeliner then copies the block with TMA,
whose semantics are: the block at coordinates c holds the element at
`base + sum_d (c_d + lane_d) * stride_d` where `0 <= c_d + lane_d < shape_d`
in every dimension d, zero elsewhere (loads); a store writes the in-bounds
elements only.

Here a kernel is compiled for the CPU twice through the CPU back end's own
stage list (`targets.cpu.backend.stages`, run by `tilec.compiler.run_steps`):
plain, and with the `tile-tma-pointers` step replaced by the pass run with the
sm90 target record followed by `emulate`, which rewrites every tagged access
into the masked pointer access of exactly the block that its recipe and
coordinates describe under TMA's semantics (a `tile.make_descriptor` from the
recipe's host expressions and a descriptor access at the coordinates, lowered
by tile-lower-descriptors' `lower_load` / `lower_store`: indices
`c_d + [0, B_d)` and offsets in i64, the mask `0 <= idx_d < shape_d` on every
dimension, `other` +0; a block [1, ..., 1, R, C] of rank > 2 reshaped to and
from the [R, C] tile), then drops the tags, so that the CPU pipeline goes on
as usual.  `differential` launches both builds on fresh copies of the same
arguments and compares every array argument's whole buffer bitwise.

What agreement proves: for those launches, the tagged program (the pass's
proof: which accesses, which recipe, which coordinates, the rewrite of a
K-major load into a block load and `tile.trans`) computes exactly what the
pointer program computes, under TMA's documented semantics; and the GPU
runtime's checks of each map's fields (`tensormap.check_fields`, on the
launch's arguments) pass.  Where a tagged load feeds `tile.trans` (a
K-major operand), the pass's own IR without the tags (its masked block load
and transposition: what runs where the pipeliner does not copy the load) is
compared too.  What it cannot prove: anything about the hardware or the
NVIDIA lowering (the pipeliner, which recomputes the coordinates of later
iterations for its prefetches, the TMA copies, the runtime's encoding of
the map: `tests/test_tma_pointers.py` and the GPU suite cover those);
programs whose origin is below zero (the pass's documented semantic
choice: the map reads zeros there and stores nothing, the pointer program
reads and writes outside the tensor; callers must not launch such
programs); the CPU's IR is not the GPU's after tile-tma-pointers (other
passes follow on each); coordinates are i32 as on the GPU, so index
arithmetic past 2^31 is not checked.  Both builds bypass the disk cache
(they never share an entry, nor an in-memory kernel).
"""
from __future__ import annotations

import importlib.util
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from mlir import ir
from mlir.dialects import arith

from tilec import driver
from tilec.cli.compile import write_artifacts
from tilec.compiler import CompileResult, run_steps, tile_steps
from tilec.dialects import tile
from tilec.dialects import tile_descriptors as desc
from tilec.errors import TilecError
from tilec.frontend.codegen import generate
from tilec.kernel import Kernel
from tilec.passes import tile_lower_descriptors, tile_tma_descriptors, tile_tma_pointers
from tilec.runtime import tensormap
from tilec.runtime.loaded import AotKernel
from tilec.specialization import Specialization
from tilec.targets import Target, get_target
from tilec.targets.cpu import backend as cpu_backend
from tilec.targets.pipeline import Compilation, Stages, Step

TMA_TARGET = "sm90"
STEP = "tile-tma-pointers"
DESCRIPTOR_STEP = "tile-tma-descriptors"
# The metadata keys of the recipes the emulating step rewrote and of how
# many tagged loads feed a transposition.
RECIPES, TRANSPOSED = "tma_emulated_recipes", "tma_emulated_transposed"
HostExpr = Any   # a recipe's host expression: ["arg", i], ["const", c], ["add"|"mul", x, y]


def load_module(relative: str, name: str) -> Any:
    """The Python file at `relative` (from the repository root) as module `name`."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent.parent
                                                  / relative)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class HarnessError(AssertionError):
    """The tagged IR is not what the harness can read (a malformed tag or
    recipe: itself a finding about the pass)."""


class Mismatch(AssertionError):
    """The emulated build's results differ from the plain build's."""


class Refused(Mismatch):
    """The GPU runtime would refuse a tagged access's map at this launch
    (`tilec.runtime.tensormap.check_fields`), where the pointer program runs."""


class BuildFailed(Exception):
    """A build failed (`plain`: the one without the pass; the message is the
    compiler's)."""

    def __init__(self, variant: str, error: Exception) -> None:
        super().__init__(f"the {variant} build failed: {error}")
        self.plain = variant == "plain"


# ---------------------------------------------------------------- emulation
def _i64(v: ir.Value) -> ir.Value:
    """Integer scalar `v` as i64 (kernel integers are signed)."""
    i64 = ir.IntegerType.get_signless(64)
    if isinstance(v.type, ir.IndexType):
        return arith.index_cast(i64, v)
    width = ir.IntegerType(v.type).width
    if width == 64:
        return v
    if width > 64:
        raise HarnessError(f"a host expression reads an i{width} argument")
    return arith.extsi(i64, v)


def host_value(e: HostExpr, args: Sequence[ir.Value]) -> ir.Value:
    """The i64 value of a recipe's host expression over the func's arguments
    (at the current insertion point and location)."""
    i64 = ir.IntegerType.get_signless(64)
    head = e[0] if isinstance(e, list) and e else None
    if head == "arg":
        return _i64(args[int(e[1])])
    if head == "const":
        return arith.constant(i64, int(e[1]))
    if head in ("add", "mul"):
        x, y = host_value(e[1], args), host_value(e[2], args)
        return arith.addi(x, y) if head == "add" else arith.muli(x, y)
    raise HarnessError(f"unknown host expression {e!r}")


def _blocks(op: ir.Operation) -> list[ir.Block]:
    out: list[ir.Block] = []
    for region in op.regions:
        for block in region.blocks:
            out.append(block)
            for inner in block.operations:
                out += _blocks(inner.operation)
    return out


def _tma_id(op: ir.Operation, name: str) -> int:
    return int(ir.IntegerAttr(op.attributes[name]).value)


def tagged_accesses(func: ir.Operation) -> list[tuple[ir.Operation, ir.Operation]]:
    """(access, its `tile.tma_coords`) for every tagged access: the one coords
    op of the access's id in its block, before it (what the pipeliner reads)."""
    pairs: list[tuple[ir.Operation, ir.Operation]] = []
    for block in _blocks(func):
        seen: dict[int, list[ir.Operation]] = {}
        for view in block.operations:
            op = view.operation
            if op.name == "tile.tma_coords":
                seen.setdefault(_tma_id(op, "tma"), []).append(op)
            elif "tile.tma" in op.attributes:
                tma = _tma_id(op, "tile.tma")
                found = seen.get(tma, [])
                if len(found) != 1:
                    raise HarnessError(f"{op.name} tagged tma = {tma} has {len(found)} "
                                       "tile.tma_coords of its id before it in its block")
                pairs.append((op, found[0]))
    return pairs


def _check(op: ir.Operation, coords: Sequence[ir.Value], recipe: dict[str, Any],
           tile_shape: Sequence[int], elem: ir.Type) -> list[int]:
    """The recipe's block, checked against the access (else a HarnessError)."""
    block = [int(b) for b in recipe["block"]]
    rank = len(block)
    problems = []
    if not len(recipe["shape"]) == len(recipe["strides"]) == len(coords) == rank:
        problems.append(f"rank {rank} block, {len(recipe['shape'])} shape, "
                        f"{len(recipe['strides'])} strides, {len(coords)} coordinates")
    if any(b != 1 for b in block[:-2]) or list(tile_shape) != block[-2:]:
        problems.append(f"block {block} for a {list(tile_shape)} tile")
    if recipe["strides"][-1] != ["const", 1]:
        problems.append(f"innermost stride {recipe['strides'][-1]}")
    if int(recipe["elem_bytes"]) * 8 != _bits(elem):
        problems.append(f"elem_bytes {recipe['elem_bytes']} for {elem}")
    if bool(recipe.get("store")) != (op.name == "tile.store"):
        problems.append(f"store flag {recipe.get('store')} on a {op.name}")
    if problems:
        raise HarnessError(f"{op.name} tagged {_tma_id(op, 'tile.tma')}: " + "; ".join(problems))
    return block


def _bits(t: ir.Type) -> int:
    if isinstance(t, ir.IntegerType):
        return int(t.width)
    return int(ir.FloatType(t).width)


def _rewrite(op: ir.Operation, coords_op: ir.Operation, recipe: dict[str, Any],
             args: Sequence[ir.Value]) -> None:
    """Replace the tagged `op` by the masked pointer access of its map block."""
    coords = list(coords_op.operands)
    loc = op.location
    is_load = op.name == "tile.load"
    tile_t = ir.RankedTensorType(op.results[0].type if is_load else op.operands[1].type)
    elem = tile.element_type(tile_t)
    block = _check(op, coords, recipe, tile_t.shape, elem)
    with ir.InsertionPoint(op), loc:
        base = args[int(recipe["base"])]
        if tile.pointee(base.type) != elem:
            raise HarnessError(f"{op.name}: map base argument {recipe['base']} holds "
                               f"{tile.pointee(base.type)}, the tile {elem}")
        shape = [host_value(e, args) for e in recipe["shape"]]
        strides = [host_value(e, args) for e in recipe["strides"]]
        made = desc.make_descriptor(base, shape, strides, tile.tensor_type(block, elem), loc=loc)
        if is_load:
            loaded = desc.descriptor_load(made, coords, loc=loc)
            new = tile_lower_descriptors.lower_load(loaded.owner.operation).results[0]
            if len(block) > 2:
                new = tile.reshape(new, block[-2:], loc=loc)
            op.results[0].replace_all_uses_with(new)
        else:
            value = op.operands[1]
            if len(block) > 2:
                value = tile.reshape(value, block, loc=loc)
            tile_lower_descriptors.lower_store(desc.descriptor_store(made, value, coords, loc=loc))
        made.owner.operation.erase()
    op.erase()


def emulate_func(func: ir.Operation) -> list[dict[str, Any]]:
    """Rewrite `func`'s tagged accesses (see the module docstring), drop the
    tags; the recipes of the accesses rewritten, by id."""
    recipes = tile_tma_descriptors.recipes(func)
    args = list(func.regions[0].blocks[0].arguments)
    done: dict[int, dict[str, Any]] = {}
    for op, coords_op in tagged_accesses(func):
        tma = _tma_id(op, "tile.tma")
        if tma not in recipes or tma in done:
            raise HarnessError(f"{op.name} tagged {tma}: no recipe in "
                               f"{tile_tma_descriptors.ATTR}, or another access has the id")
        done[tma] = recipes[tma]
        _rewrite(op, coords_op, recipes[tma], args)
    for block in _blocks(func):
        for view in list(block.operations):
            if view.operation.name == "tile.tma_coords":
                view.operation.erase()
    if tile_tma_descriptors.ATTR in func.attributes:
        del func.attributes[tile_tma_descriptors.ATTR]
    return [done[k] for k in sorted(done)]


def emulate(module: ir.Module) -> list[dict[str, Any]]:
    """`emulate_func` on every func of `module`; the recipes rewritten."""
    done: list[dict[str, Any]] = []
    with module.context:
        for view in module.body.operations:
            if view.operation.name == "func.func":
                done += emulate_func(view.operation)
    return done


def strip_tags(module: ir.Module) -> list[dict[str, Any]]:
    """Drop the tags and leave the pass's IR otherwise as it is: what runs
    on the GPU where the pipeliner does not copy a tagged access (a K-major
    load is then the pass's own masked block load and `tile.trans`); the
    recipes of the accesses that were tagged, by id."""
    dropped: list[dict[str, Any]] = []
    with module.context:
        for view in module.body.operations:
            func = view.operation
            if func.name != "func.func":
                continue
            recipes = tile_tma_descriptors.recipes(func)
            for op, coords_op in tagged_accesses(func):
                dropped.append(recipes[_tma_id(op, "tile.tma")])
                del op.attributes["tile.tma"]
                coords_op.erase()
            if tile_tma_descriptors.ATTR in func.attributes:
                del func.attributes[tile_tma_descriptors.ATTR]
    return dropped


def _feeds_trans(module: ir.Module) -> int:
    """How many tagged loads only feed `tile.trans` (the pass's K-major form,
    or a transposition in the source)."""
    count = 0
    for block in _blocks(module.operation):
        for view in block.operations:
            op = view.operation
            if op.name == "tile.load" and "tile.tma" in op.attributes:
                users = [u.owner.name for u in op.results[0].uses]
                count += bool(users) and all(n == "tile.trans" for n in users)
    return count


Rewrite = Callable[[ir.Module], list[dict[str, Any]]]


def _descriptor_step(tma_target: Target) -> Step:
    def run(c: Compilation) -> None:
        tile_tma_descriptors.run(c.module, tma_target, c.options)
    return Step(run, (), f"{DESCRIPTOR_STEP} (target {tma_target.name})")


def _emulating_step(tma_target: Target, rewrite: Rewrite) -> Step:
    def run(c: Compilation) -> None:
        tile_tma_pointers.run(c.module, tma_target, c.options)
        c.metadata[TRANSPOSED] = _feeds_trans(c.module)
        c.metadata[RECIPES] = rewrite(c.module)
    return Step(run, (), f"{STEP} (target {tma_target.name}), then tests/tma_emulation.py")


def cpu_steps(options: Any, rewrite: Rewrite | None) -> Stages:
    """The CPU compile's steps after the frontend (`tilec.compiler.all_steps`
    for the cpu target); with a `rewrite` (`emulate`, or a test's variant of
    it), tile-tma-pointers runs for sm90 and `rewrite` after it."""
    target = get_target("cpu")
    steps = {**tile_steps(), **cpu_backend.stages(target, options)}
    if STEP not in steps or DESCRIPTOR_STEP not in steps:
        raise HarnessError(f"the CPU stage list lacks '{STEP}' or '{DESCRIPTOR_STEP}': "
                           f"{list(steps)}")
    if rewrite is not None:
        tma_target = get_target(TMA_TARGET)
        steps[DESCRIPTOR_STEP] = _descriptor_step(tma_target)
        steps[STEP] = _emulating_step(tma_target, rewrite)
    return steps


# ---------------------------------------------------------------- building
@dataclass
class Build:
    """One CPU build of a specialization: the loaded kernel and, for an
    emulated build, the accesses tagged (their recipes) and how many of the
    tagged loads feed `tile.trans`."""

    kernel: AotKernel
    recipes: list[dict[str, Any]]
    transposed: int = 0

    @property
    def tagged(self) -> int:
        return len(self.recipes)


_BUILDS: dict[tuple[Kernel, Specialization, Rewrite | None], Build] = {}
_OUT = tempfile.mkdtemp(prefix="tilec-tma-emulation-")


def build(kernel: Kernel, spec: Specialization, rewrite: Rewrite | None) -> Build:
    """`kernel` compiled for the CPU for `spec` (memoized per process; no
    disk cache): plain (`rewrite` None), or with tile-tma-pointers for sm90
    and `rewrite` (`emulate`) after it."""
    key = (kernel, spec, rewrite)
    if key not in _BUILDS:
        _BUILDS[key] = _build(kernel, spec, rewrite)
    return _BUILDS[key]


def _build(kernel: Kernel, spec: Specialization, rewrite: Rewrite | None) -> Build:
    fe = driver.make_spec(kernel, {a.name: a.type for a in spec.args},
                          {a.name: a.divisibility for a in spec.args}, dict(spec.constexprs))
    ctx = tile.new_context()
    ctx.enable_multithreading(False)   # the back end's isolated child forks with it
    with ctx, ir.Location.unknown():
        c = Compilation(generate(fe), get_target("cpu"), spec.options, want_text=False,
                        keep_module=False)
        run_steps(c, cpu_steps(spec.options, rewrite), CompileResult(c.asm, c.metadata),
                  keep_ir=False)
    c.metadata.update(name=kernel.name, target="cpu", num_warps=spec.options.num_warps,
                      stored_args=list(fe.stored_params or []))
    ck = driver.CompiledKernel(kernel.name, spec, dict(c.asm), c.metadata)
    how = "plain" if rewrite is None else getattr(rewrite, "__name__", "rewritten")
    folder = Path(_OUT) / f"{kernel.name}-{len(_BUILDS)}-{how}"
    write_artifacts(ck, folder)
    return Build(AotKernel(folder), list(c.metadata.get(RECIPES, [])),
                 int(c.metadata.get(TRANSPOSED, 0)))


def specialize(kernel: Kernel, args: Sequence[Any], kwargs: dict[str, Any]
               ) -> tuple[Specialization, list[Any]]:
    """A CPU launch's specialization of `kernel(*args, **kwargs)` (as
    `kernel[grid](...)` makes it) and its runtime arguments in order."""
    values, options = kernel.plan.bind(args, kwargs)
    infos, constexprs = kernel.plan.classify(values)
    spec = Specialization.of(kernel.plan, infos, constexprs, "cpu",
                             kernel.compile_options(options), kernel.used_globals())
    runtime = [v for p, v in zip(kernel.plan.params, values) if not p.constexpr]
    return spec, runtime


# ---------------------------------------------------------------- comparing
def _buffer(a: Any) -> np.ndarray | None:
    """The bytes of the whole allocation behind an array argument (a view's
    base included), or None for a scalar."""
    if isinstance(a, np.ndarray):
        root = a
        while isinstance(root.base, np.ndarray):
            root = root.base
        return np.frombuffer(root.tobytes(), np.uint8) if root.base is not None else \
            root.reshape(-1).view(np.uint8)
    if type(a).__module__.startswith("torch"):
        import torch
        storage = a.untyped_storage()
        flat = torch.empty(0, dtype=torch.uint8).set_(storage)   # every byte of it
        return np.asarray(flat.numpy())
    return None


def _first_difference(x: np.ndarray, y: np.ndarray) -> str:
    bad = np.flatnonzero(x != y)
    return f"{bad.size} bytes differ, first at byte {int(bad[0])}" if bad.size else "equal"


def _check_fields(name: str, b: Build, runtime: Sequence[Any]) -> None:
    """Refused unless the runtime would encode every map of `b` for these
    arguments (its fields evaluated as on the GPU)."""
    raw = b.kernel.loaded.spec.admit(name, runtime)
    for recipe in b.recipes:
        addr, shape, strides = tensormap.fields(recipe, raw)
        try:
            tensormap.check_fields(recipe, addr, tensormap.map_shape(recipe, shape), strides)
        except TilecError as e:
            raise Refused(f"{name}: the runtime would refuse map {json.dumps(recipe)} "
                          f"(shape {shape}, byte strides {strides}): {e}") from None


@dataclass
class Pair:
    """A differential launch's facts: the accesses the pass tagged (their
    recipes), the specialization both builds were made for, and how many
    bytes of the array arguments the launch changed (0: it wrote nothing,
    and the comparison proved little)."""

    recipes: list[dict[str, Any]]
    signature: str
    changed: int
    variants: list[str]

    @property
    def tagged(self) -> int:
        return len(self.recipes)


Args = tuple[list[Any], dict[str, Any]]


def differential(kernel: Kernel, grid: tuple[int, ...], make_args: Callable[[], Args],
                 rewrite: Rewrite = emulate) -> Pair:
    """Launch `kernel[grid]` plain and emulated (`rewrite`), each on a fresh
    `make_args()` (positional arguments, keyword constexprs and options: the
    same values each call), and compare every array argument's whole buffer
    bitwise (a Mismatch names the first that differs; Refused: the GPU
    runtime would not encode a map for these arguments; a BuildFailed says
    which build failed).  Where `emulate` found a tagged load feeding
    `tile.trans`, the pass's IR without its tags (`strip_tags`: the K-major
    fallback when not pipelined) is launched and compared too."""
    untouched = specialize(kernel, *make_args())[1]
    variants: list[tuple[str, Rewrite | None]] = [("plain", None), ("emulated", rewrite)]
    results: list[list[Any]] = []
    tagged: list[dict[str, Any]] = []
    signature = ""
    for name, how in variants:
        args, kwargs = make_args()
        spec, runtime = specialize(kernel, args, kwargs)
        try:
            b = build(kernel, spec, how)
        except TilecError as e:
            raise BuildFailed(name, e) from e
        b.kernel[grid](*runtime)
        results.append(runtime)
        if name == "emulated":
            tagged, signature = b.recipes, spec.signature()
            _check_fields(kernel.name, b, runtime)
            if b.transposed and rewrite is emulate:
                variants.append(("untagged pass IR", strip_tags))
    changed = 0
    for k, (name, _) in enumerate(variants[1:], 1):
        for i, (before, plain, other) in enumerate(zip(untouched, results[0], results[k])):
            w, x, y = _buffer(before), _buffer(plain), _buffer(other)
            if w is None or x is None or y is None:
                continue
            if x.shape != y.shape or not np.array_equal(x, y):
                raise Mismatch(f"{kernel.name}{list(grid)}: argument {i} "
                               f"({kernel.plan.runtime[i].name}) differs between the plain and "
                               f"the {name} build ({_first_difference(x, y)}); signature "
                               f"{signature}; recipes {json.dumps(tagged)}")
            if k == 1:
                changed += int(np.count_nonzero(w != x)) if w.shape == x.shape else x.size
    return Pair(tagged, signature, changed, [name for name, _ in variants[1:]])

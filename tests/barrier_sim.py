"""A lockstep model of a pipelined kernel's TMA rings, mbarriers and wgmma
groups, run on the `tiled` IR (after tile-pipeline) with concrete scalar
arguments, for tests of the barrier and phase logic that the CPU target does
not execute (tests/test_pipeline_early.py).

Every warp runs the same program, so one interpreter stands for all of them:
an `mbarrier_arrive` is every warp's arrival (a phase of a per-warp barrier
completes), a copy lands no earlier than the first wait that needs its phase
(a wait whose parity says "complete" without it returns at once), and a wait
that its own thread cannot satisfy is a deadlock.  Checked, raising
`SimError`:
  * a wait that can never return (deadlock);
  * a product read (by anything but a wait or the loop's yield) that read a
    slot before the slot's copy landed (a product no one reads may: the early
    product of an iteration that does not run), or before it is retired (`wgmma.wait_group` semantics: a wait with `pending = N` retires
    every product but the N latest);
  * a copy into a slot that an unretired product reads, that holds a copy not
    yet waited for, or whose last release (the arrival that completed the
    phase the issuing thread waited for) came before a product read it or
    while one still read it;
  * a ring released, or a barrier invalidated, with copies or products in flight.
Scalars are Python ints (i32 arithmetic wraps); tensors other than products
are opaque.  `reads` lists (product, (tma, coords) per ring operand, loop
induction variables when issued); `uses` lists (product, loop induction
variables when read).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mlir import ir


class SimError(AssertionError):
    pass


@dataclass
class _Ring:
    name: str
    slots: int
    content: dict[int, Any] = field(default_factory=dict)      # slot -> (tma, coords)
    landed: dict[int, bool] = field(default_factory=dict)


@dataclass
class _Bars:
    name: str
    slots: int
    completed: list[int]
    pending: list[list[tuple[_Ring, int]]]          # copies of the phase in progress
    arrivals: list[list[tuple[int, frozenset[Any]]]]   # (time, slots read then) per arrival


@dataclass
class _Product:
    serial: int
    reads: list[tuple[_Ring, int]]
    retired: bool = False
    garbage: bool = False          # it read a slot before the slot's copy landed


_OPAQUE = object()


def _known(*vals: Any) -> None:
    if not all(isinstance(v, int) for v in vals):
        raise SimError(f"unknown scalar among {vals}")


def _i32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


class Sim:
    def __init__(self, func: ir.Operation, args: list[Any],
                 program_ids: tuple[int, int, int] = (0, 0, 0)) -> None:
        self.env: dict[ir.Value, Any] = {}
        self.program_ids = program_ids
        for a, v in zip(func.regions[0].blocks[0].arguments, args):
            self.env[a] = v
        self.func = func
        self.time = 0
        self.queue: list[_Product] = []
        self.readers: dict[tuple[int, int], list[_Product]] = {}
        self.last_read: dict[tuple[int, int], int] = {}
        self.last_free_wait: tuple[_Bars, int, tuple[int, frozenset[Any]]] | None = None
        self.ivs: list[int] = []
        self.reads: list[tuple[_Product, list[Any], tuple[int, ...]]] = []
        self.uses: list[tuple[_Product, tuple[int, ...]]] = []
        self.serial = 0

    def run(self) -> None:
        self._block(self.func.regions[0].blocks[0])

    def _get(self, v: ir.Value) -> Any:
        return self.env.get(v, _OPAQUE)

    def _block(self, block: ir.Block) -> list[Any]:
        for op in block.operations:
            op = op.operation
            self.time += 1
            if op.name in ("scf.yield", "func.return"):
                return [self._get(v) for v in op.operands]
            self._op(op)
        return []

    def _op(self, op: ir.Operation) -> None:
        name = op.name
        vals = [self._get(v) for v in op.operands]
        handler = getattr(self, "_" + name.replace(".", "_"), None)
        if handler is not None:
            out = handler(op, vals)
        elif name.startswith("arith.") and vals and all(isinstance(v, int) for v in vals):
            out = self._arith(op, vals)
        else:
            for v in vals:   # an opaque op reads a product's registers
                if isinstance(v, _Product):
                    if not v.retired:
                        raise SimError(f"{name} reads product {v.serial} before its wait")
                    if v.garbage:
                        raise SimError(f"{name} reads product {v.serial}, which read a slot "
                                       "before its copy landed")
                    self.uses.append((v, tuple(self.ivs)))
            out = [_OPAQUE] * len(op.results)
        for r, v in zip(op.results, out if isinstance(out, list) else [out]):
            self.env[r] = v

    def _arith(self, op: ir.Operation, v: list[int]) -> Any:
        n = op.name[len("arith."):]
        if n == "cmpi":
            pred = int(ir.IntegerAttr(op.attributes["predicate"]).value)
            a, b = v
            ua, ub = a & 0xFFFFFFFF, b & 0xFFFFFFFF
            return int([a == b, a != b, a < b, a <= b, a > b, a >= b,
                        ua < ub, ua <= ub, ua > ub, ua >= ub][pred])
        ops = {"addi": lambda a, b: a + b, "subi": lambda a, b: a - b,
               "muli": lambda a, b: a * b, "andi": lambda a, b: a & b,
               "ori": lambda a, b: a | b, "xori": lambda a, b: a ^ b,
               "divsi": lambda a, b: int(a / b), "divui": lambda a, b: a // b,
               "remui": lambda a, b: a % b, "remsi": lambda a, b: a - int(a / b) * b,
               "minsi": min, "maxsi": max}
        if n in ops:
            r = ops[n](*v)
            return r if ir.IntegerType(op.results[0].type).width == 1 else _i32(r)
        if n in ("extui", "extsi", "index_cast", "trunci"):
            return v[0]
        if n == "select":
            return v[1] if v[0] else v[2]
        raise SimError(f"unmodelled {op.name}")

    def _arith_constant(self, op: ir.Operation, vals: list[Any]) -> Any:
        attr = op.attributes["value"]
        if isinstance(attr, ir.BoolAttr):
            return int(attr.value)
        if isinstance(attr, ir.IntegerAttr):
            return int(attr.value)
        return _OPAQUE

    def _tile_program_id(self, op: ir.Operation, vals: list[Any]) -> Any:
        return self.program_ids[int(ir.IntegerAttr(op.attributes["axis"]).value)]

    def _tile_num_programs(self, op: ir.Operation, vals: list[Any]) -> Any:
        return 1

    def _scf_for(self, op: ir.Operation, vals: list[Any]) -> list[Any]:
        lb, ub, step, *carried = vals
        _known(lb, ub, step)
        body = op.regions[0].blocks[0]
        iv = lb
        while iv < ub:
            for a, v in zip(body.arguments, [iv, *carried]):
                self.env[a] = v
            self.ivs.append(iv)
            carried = self._block(body)
            self.ivs.pop()
            iv += step
        return carried

    def _scf_if(self, op: ir.Operation, vals: list[Any]) -> list[Any]:
        if not isinstance(vals[0], int):
            raise SimError("scf.if on an unknown condition")
        return self._block(op.regions[0 if vals[0] else 1].blocks[0])

    def _tile_local_alloc(self, op: ir.Operation, vals: list[Any]) -> Any:
        t = ir.MemRefType(op.results[0].type)
        return _Ring(op.results[0].get_name(), t.shape[0])

    def _tile_local_dealloc(self, op: ir.Operation, vals: list[Any]) -> Any:
        ring = vals[0]
        for s in range(ring.slots):
            if self.readers.get((id(ring), s)) or not ring.landed.get(s, True):
                raise SimError(f"{ring.name} released with slot {s} in use")
        return []

    def _tile_mbarrier_alloc(self, op: ir.Operation, vals: list[Any]) -> Any:
        n = int(ir.IntegerAttr(op.attributes["slots"]).value)
        return _Bars(op.results[0].get_name(), n, [0] * n, [[] for _ in range(n)],
                     [[] for _ in range(n)])

    def _tile_mbarrier_inval(self, op: ir.Operation, vals: list[Any]) -> Any:
        if any(vals[0].pending):
            raise SimError(f"{vals[0].name} invalidated with copies in flight")
        return []

    def _tile_tma_expect(self, op: ir.Operation, vals: list[Any]) -> Any:
        return []

    def _tile_tma_copy(self, op: ir.Operation, vals: list[Any]) -> Any:
        ring, slot, bars, live, *coords = vals
        _known(slot, live, *coords)
        if not live:
            return []
        key = (id(ring), slot)
        if self.readers.get(key):
            raise SimError(f"copy into {ring.name}[{slot}] while a product reads it")
        if not ring.landed.get(slot, True):
            raise SimError(f"copy into {ring.name}[{slot}] before its last copy was waited for")
        if ring.content.get(slot) is not None:   # a refill: released after its last read
            w = self.last_free_wait
            if w is None or w[1] != slot:
                raise SimError(f"refill of {ring.name}[{slot}] without waiting for the slot")
            when, busy = w[2]
            if when <= self.last_read.get(key, -1) or key in busy:
                raise SimError(f"{ring.name}[{slot}] released before its readers were done")
        ring.content[slot] = (int(ir.IntegerAttr(op.attributes["tma"]).value), tuple(coords))
        ring.landed[slot] = False
        bars.pending[slot].append((ring, slot))
        return []

    def _tile_mbarrier_arrive(self, op: ir.Operation, vals: list[Any]) -> Any:
        bars, slot, live = vals
        _known(slot, live)
        if live:   # (which ring the barrier guards is checked at the refill)
            busy = frozenset(k for k, rs in self.readers.items() if rs)
            bars.completed[slot] += 1
            bars.arrivals[slot].append((self.time, busy))
        return []

    def _tile_mbarrier_wait(self, op: ir.Operation, vals: list[Any]) -> Any:
        bars, slot, parity = vals
        _known(slot, parity)
        if (bars.completed[slot] & 1) == parity and bars.pending[slot]:
            for ring, s in bars.pending[slot]:   # the copies land
                ring.landed[s] = True
            bars.pending[slot] = []
            bars.completed[slot] += 1
        if (bars.completed[slot] & 1) == parity:
            raise SimError(f"deadlock: wait on {bars.name}[{slot}] phase parity {parity} "
                           f"({bars.completed[slot]} phases complete) at iteration "
                           f"{self.ivs}")
        if "tile.one_thread" in op.attributes:
            done = bars.arrivals[slot]
            # The phase waited for is the last complete one: its arrival.
            self.last_free_wait = (bars, slot, done[-1] if done else (-1, frozenset()))
        return []

    def _tile_mma(self, op: ir.Operation, vals: list[Any]) -> Any:
        a, sa, b, sb, _acc = vals[:5]
        _known(sa, sb)
        reads = []
        tags = []
        garbage = False
        for ring, slot in ((a, sa), (b, sb)):
            if not isinstance(ring, _Ring):
                continue
            # A slot not filled yet (or in flight): a product no one may read.
            garbage = garbage or ring.landed.get(slot) is not True
            reads.append((ring, slot))
            tags.append(ring.content.get(slot))
        self.serial += 1
        p = _Product(self.serial, reads, garbage=garbage)
        for ring, slot in reads:
            self.readers.setdefault((id(ring), slot), []).append(p)
            self.last_read[(id(ring), slot)] = self.time
        self.queue.append(p)
        self.reads.append((p, tags, tuple(self.ivs)))
        return p

    def _tile_mma_wait(self, op: ir.Operation, vals: list[Any]) -> Any:
        n = int(ir.IntegerAttr(op.attributes["pending"]).value)
        keep = self.queue[len(self.queue) - n:] if n else []
        for p in self.queue[:len(self.queue) - n]:
            p.retired = True
            for ring, slot in p.reads:
                self.readers[(id(ring), slot)].remove(p)
        self.queue = keep
        p = vals[0]
        if isinstance(p, _Product) and not p.retired:
            raise SimError(f"a wait with pending = {n} leaves its product {p.serial} in flight")
        return p

"""passes/tile_pipeline_early.py: the attention forward's first dot (S = Q @ K.T)
issued one iteration early on sm90.  Which loops take it, and the barrier and
phase logic of the rotated loop, run in a lockstep model of its TMA rings,
mbarriers and wgmma groups (tests/barrier_sim.py) for trip counts from 0 up,
ragged and causal, every ring depth: no wait that cannot return, every product
reads the tiles of the right iteration after they landed, no slot refilled
while (or before) it is read, nothing in flight when the rings are released.
The kernel itself runs on the H200 (benchmarks/h200_attention.py check)."""
from __future__ import annotations

import re
from typing import Any

import pytest
from mlir import ir

import tilec
import tilec.language as tl
from barrier_sim import Sim, SimError
from tilec.dialects import tile
from toolcheck import EXAMPLES_DIR, load_example

attention = load_example(EXAMPLES_DIR / "attention.py")
SIG = "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16"


def _tiled(d: int, bm: int, bn: int, causal: bool, warps: int, stages: int,
           overlap: bool | None = True) -> str:
    """The forward's tiled IR; `overlap` is the loop's overlap_dots (True: the
    early product wherever the loop allows it, None: the compiler's default)."""
    return attention._attn_fwd.ir(target="sm90", signature=SIG, stage="tiled",
                                  constexprs={"HEAD_DIM": d, "BLOCK_M": bm, "BLOCK_N": bn,
                                              "CAUSAL": causal, "OVERLAP": overlap},
                                  num_warps=warps, num_stages=stages)


_CACHE: dict[tuple[Any, ...], str] = {}


def _ir(*key: Any) -> str:
    if key not in _CACHE:
        _CACHE[key] = _tiled(*key)
    return _CACHE[key]


def _loops(text: str) -> list[str]:
    """The text of each top-level scf.for of the kernel (prologue not included)."""
    out = []
    for m in re.finditer(r"^    %\S+ = scf\.for .*?^    \}", text, re.S | re.M):
        out.append(m.group(0))
    return out


def _simulate(text: str, n_ctx: int, pid: int, bm: int, bn: int, causal: bool) -> Sim:
    ctx = ir.Context()
    tile.register(ctx)
    with ctx:
        module = ir.Module.parse(text)
        func = next(op.operation for op in module.body.operations
                    if op.operation.name == "func.func" and "tile.kernel" in op.attributes)
        names = [ir.StringAttr(ir.DictAttr(a)["tile.name"]).value
                 for a in ir.ArrayAttr(func.attributes["arg_attrs"])]
        values = {"Z": 1, "H": 1, "N_CTX": n_ctx}
        sim = Sim(func, [values.get(nm, object()) for nm in names], (pid, 0, 0))
        sim.run()
    # Every S = Q @ K.T read by the softmax was computed from this iteration's
    # K block (and the program's Q block); every P @ V reads this iteration's V.
    s_used = [(p, ivs) for p, ivs in sim.uses if len(p.reads) == 2]
    tags = {p.serial: t for p, t, _ in sim.reads}
    for p, ivs in s_used:
        (_, q), (_, k) = tags[p.serial]
        assert q == (pid * bm, 0) and k == (ivs[-1], 0), (p.serial, q, k, ivs)
    pv = [(t, ivs) for p, t, ivs in sim.reads if len(p.reads) == 1]
    for t, ivs in pv:
        assert t[0][1] == (ivs[-1], 0)
    hi = min((pid + 1) * bm, n_ctx) if causal else n_ctx
    trips = -(-hi // bn) if hi > 0 else 0
    assert sorted(ivs[-1] for _, ivs in pv) == [bn * i for i in range(trips)]
    assert len({p.serial for p, _ in s_used}) == trips
    return sim


def test_forward_first_loop_takes_the_early_product_the_remainder_loop_does_not() -> None:
    text = _ir(128, 128, 128, False, 8, 3, None)   # the default takes 128 x 128 x 128
    first, rest = _loops(text)
    # Iteration j: S of j + 1 issued at the top, the softmax on the carried S
    # of j, P @ V, the early product waited for (P @ V in flight), then P @ V.
    assert re.search(r'"tile\.mma"\(%\d+, %c0_i32\w*, %\d+, %\d+, %cst\w*\) '
                     r'\{kind = "wgmma", tile\.b_kmajor\}', first)
    body = first.split("\n")
    order = [i for i, line in enumerate(body) if '"tile.mma"' in line or
             "math.exp2" in line or '"tile.mma_wait"' in line]
    kinds = ["mma" if '"tile.mma"' in body[i] else "exp2" if "exp2" in body[i] else
             re.search(r"pending = (\d)", body[i]).group(0) for i in order]
    assert kinds == ["mma", "exp2", "exp2", "mma", "pending = 1", "pending = 0"], kinds
    # The remainder loop runs at most once (lb = N / 128 * 128, ub = N): as before.
    assert rest.count('"tile.mma"') == 2 and "pending = 1" not in rest


@pytest.mark.parametrize("d", [128, 64])
def test_no_early_product_where_registers_do_not_allow_it(d: int) -> None:
    # 4 warps: acc 2 d + S 64 (twice) + P 32 + 16 row statistics per thread
    # (D 64: ptxas spilled 4-52 bytes with the early product).
    first, _ = _loops(_ir(d, 128, 64, False, 4, 3, None))
    assert "pending = 1" not in first
    assert re.search(r'tile\.b_kmajor\}.*\n\s*%\S+ = "tile\.mma_wait"', first)


@pytest.mark.parametrize("d,bn", [(64, 128), (128, 64), (64, 64)])
def test_default_leaves_products_under_128_cubed(d: int, bn: int) -> None:
    """D = 64 or 64-column key blocks measured slower with the early product
    (H200, benchmarks/results/README.md: attention variants): the default
    leaves them; overlap_dots=True still asks for it."""
    assert "pending = 1" not in _loops(_ir(d, 128, bn, False, 8, 3, None))[0]
    assert "pending = 1" in _loops(_ir(d, 128, bn, False, 8, 3, True))[0]


@pytest.mark.parametrize("bm,bn,stages,causal", [
    (128, 128, 3, False), (128, 64, 2, False), (128, 64, 4, False), (128, 64, 3, True),
    (128, 128, 3, True)])
def test_barrier_logic_for_every_trip_count(bm: int, bn: int, stages: int,
                                            causal: bool) -> None:
    text = _ir(128, bm, bn, causal, 8, stages)
    assert "pending = 1" in text
    for n_ctx in (0, 16, bn - 16, bn, bn + 16, 2 * bn, 3 * bn + 48, 5 * bn, 7 * bn + 32):
        for pid in ((0, 1, 3) if causal else (0,)):
            if pid * bm >= max(n_ctx, 1) and pid:
                continue
            _simulate(text, n_ctx, pid, bm, bn, causal)


def _broken(text: str, how: str) -> str:
    first = _loops(text)[0]
    if how == "no-free-wait":   # a refill that does not wait for its slot
        return text.replace(re.findall(r'^\s*"tile\.mbarrier_wait".*one_thread.*$', first,
                                       re.M)[0], "", 1)
    if how == "no-release":     # a slot never released
        return text.replace(re.findall(r'^\s*"tile\.mbarrier_arrive".*$', first, re.M)[1],
                            "", 1)
    if how == "short-wait":     # a wait that retires too little
        return text.replace("{pending = 0 : i32}", "{pending = 1 : i32}")
    # The last iteration's wait for the early tiles unflipped: no copy to wait for.
    res, phase, _ = re.findall(r"^\s*(%\d+) = arith\.xori (%\d+), (%\d+) : i32$", first,
                               re.M)[0]
    wait = re.search(r'"tile\.mbarrier_wait"\(%\d+, %\d+, ' + re.escape(res) + r"\)",
                     first).group(0)
    return text.replace(wait, wait.replace(res, phase), 1)


@pytest.mark.parametrize("how,error", [
    ("no-free-wait", "without waiting|released before"), ("no-release", "deadlock"),
    ("short-wait", "in flight"), ("unguarded-last-wait", "deadlock")])
def test_the_model_catches_a_broken_schedule(how: str, error: str) -> None:
    text = _broken(_ir(128, 128, 64, False, 8, 3), how)
    with pytest.raises(SimError, match=error):
        for n_ctx in (64, 6 * 64):
            _simulate(text, n_ctx, 0, 128, 64, False)


def test_overlap_dots_hint_turns_it_off() -> None:
    @tilec.kernel
    def two_dots(Q, K, V, O, N, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                 ON: tl.constexpr):
        q_d = tl.make_tensor_descriptor(Q, shape=[N, D], strides=[D, 1], block_shape=[BM, D])
        k_d = tl.make_tensor_descriptor(K, shape=[N, D], strides=[D, 1], block_shape=[BN, D])
        v_d = tl.make_tensor_descriptor(V, shape=[N, D], strides=[D, 1], block_shape=[BN, D])
        q = q_d.load([0, 0])
        acc = tl.zeros([BM, D], tl.float32)
        for n in tl.range(0, N, BN, overlap_dots=ON):
            s = tl.dot(q, k_d.load([n, 0]).T)
            p = tl.math.exp2(s)
            acc = tl.dot(p.to(tl.float16), v_d.load([n, 0]), acc)
        o = tl.arange(0, BM)[:, None] * D + tl.arange(0, D)[None, :]
        tl.store(O + o, acc)

    sig = "*fp16:16,*fp16:16,*fp16:16,*fp32:16,i32:16"
    for on, early in ((False, False), (True, True)):
        text = two_dots.ir(target="sm90", signature=sig, stage="tiled", num_warps=8,
                           constexprs={"D": 64, "BM": 128, "BN": 64, "ON": on})
        # (False: tile_pipeline_defer's order, which waits for S with P @ V in
        # flight but issues no S early.)
        assert ("tile.deferred_dot" not in text) == early, on
        assert "pending = 1" in text


@pytest.mark.parametrize("d,bm,bn,warps,stages,causal", [
    (128, 128, 128, 8, 3, False), (128, 128, 64, 8, 4, False), (128, 128, 64, 8, 3, True),
    (64, 128, 128, 8, 3, True)])
def test_ptxas_keeps_the_products_in_flight_without_spills(d: int, bm: int, bn: int,
                                                         warps: int, stages: int,
                                                         causal: bool) -> None:
    """ptxas 13.0 on benchmark configurations (benchmarks/h200_attention.py):
    no spills and no serialized wgmma ("Potential Performance Loss", C7514:
    a product's registers read unfinished, C7520: a divergent group)."""
    k = attention._attn_fwd.compile(target="sm90", signature=SIG, num_warps=warps,
                                    num_stages=stages,
                                    constexprs={"HEAD_DIM": d, "BLOCK_M": bm, "BLOCK_N": bn,
                                                "CAUSAL": causal, "OVERLAP": True})
    assert "pending = 1" in k.asm["tiled"]
    if not k.asm.get("cubin"):
        pytest.skip(f"no ptxas: {k.metadata.get('cubin_error')}")
    log = k.metadata.get("ptxas_log", "")
    assert "Potential Performance Loss" not in log, log
    assert k.metadata["spill_stores"] == 0 and k.metadata["stack_bytes"] == 0, log

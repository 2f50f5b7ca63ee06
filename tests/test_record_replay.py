"""Record mode (TILEC_RECORD, tilec/runtime/record.py) and `tilec replay`
(tilec/cli/replay.py): a compiler-less run (simulated with TILEC_NO_COMPILER=1
in a child) records its misses without failing, replay fills a fresh cache
from the recorded script loaded without running it, and the same run then hits."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent('''
    import os
    import numpy as np
    import tilec as triton
    import tilec.language as tl

    FLAG = os.environ.get("PROBE") == "1"   # a capability probe, another value elsewhere

    @triton.jit
    def add(x, y, o, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        v = tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m)
        if FLAG:
            v = v * 2.0
        tl.store(o + offs, v, mask=m)

    @triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})],
                     key=["n"])
    @triton.jit
    def tuned(x, o, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(o + offs, tl.load(x + offs, mask=offs < n) + 1.0, mask=offs < n)

    x = np.ones(100, np.float32)
    o = np.zeros(100, np.float32)
    h = add.warmup(x, x, o, 100, BLOCK=64, target="sm90")
    h2 = add.warmup(x, x, o, 100, BLOCK=64, target="sm90")   # the same: recorded once
    print("FACTS", h.n_regs, h.metadata.shared)
    if os.environ.get("TUNE") == "1":
        tuned[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, o, 100)
        print("TUNED", float(o[0]))
    assert o[0] == 0.0, "the launches of a recorded run were skipped"
    result = 1 / 0
    1 / 0   # a bare expression: skipped while loading
    if __name__ == "__main__":
        raise SystemExit("the main block must not run while loading")
''')


def _child(script: Path, cache: Path, record: Path, **env: str) -> subprocess.CompletedProcess[str]:
    e = {**os.environ, "TILEC_NO_COMPILER": "1", "TILEC_CACHE_DIR": str(cache),
         "TILEC_RECORD": str(record), "PYTHONPATH": str(ROOT), **env}
    return subprocess.run([sys.executable, str(script)], env=e, capture_output=True, text=True,
                          timeout=120)


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture()
def script(tmp_path: Path) -> Path:
    p = tmp_path / "prog.py"
    p.write_text(SCRIPT)
    return p


def test_record_replay_hit(script: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache, record = tmp_path / "cache", tmp_path / "rec.jsonl"
    r = _child(script, cache, record, PROBE="1")
    # The run went on to the end of the script (the ZeroDivisionError) without a TilecError.
    assert "ZeroDivisionError" in r.stderr and "TilecError" not in r.stderr, r.stderr
    assert "FACTS 32 16384" in r.stdout   # the placeholder facts
    assert r.stderr.count("tilec: recording 1 missing specialization in") == 1
    (rec,) = _records(record)
    assert rec["target"] == "sm90" and rec["module"] == "__main__" and rec["qualname"] == "add"
    assert rec["globals"]["FLAG"] == "True" and rec["constexprs"] == {"BLOCK": "64"}
    # The same run again: the key is in the file already, nothing is appended.
    _child(script, cache, record, PROBE="1")
    assert len(_records(record)) == 1

    # Replay here, where PROBE is unset (FLAG is False): the recorded value is set.
    from tilec.cli.replay import replay
    monkeypatch.delenv("PROBE", raising=False)
    fresh = tmp_path / "filled"
    monkeypatch.setenv("TILEC_CACHE_DIR", str(fresh))
    outcomes, programs = replay(str(record), str(fresh), quiet=True)
    (o,) = outcomes
    assert o.status == "compiled", o.message
    assert "set global FLAG = True" in o.message
    (loaded,) = programs.values()
    assert any("ZeroDivisionError" in p for p in loaded.problems)
    assert not any("SystemExit" in p or "main block" in p for p in loaded.problems)
    assert replay(str(record), str(fresh), quiet=True)[0][0].status == "cached"

    # The compiler-less run with the replayed cache: a hit (real facts, nothing recorded).
    record2 = tmp_path / "rec2.jsonl"
    r = _child(script, fresh, record2, PROBE="1")
    assert "FACTS 32 16384" not in r.stdout and "FACTS" in r.stdout, r.stdout + r.stderr
    assert not record2.exists() and "tilec: recording" not in r.stderr


def test_replayed_key_is_the_launch_key(script: Path, tmp_path: Path) -> None:
    """The key replay recomputes from a record equals the one the launch path
    computes (`kernel.cache_key(Specialization.of(...))`) for the same arguments."""
    from tilec.cli.replay import find_kernel, load_program, specialization_of
    from tilec.specialization import Specialization
    record = tmp_path / "rec.jsonl"
    _child(script, tmp_path / "cache", record)
    (rec,) = _records(record)
    k = find_kernel(load_program(script, rec["module"]).namespace, rec["qualname"])
    x, o = np.ones(100, np.float32), np.zeros(100, np.float32)
    values, options = k.plan.bind((x, x, o, 100), {"BLOCK": 64})
    infos, constexprs = k.plan.classify(values)
    launch_key = k.cache_key(Specialization.of(k.plan, infos, constexprs, "sm90",
                                               k.compile_options(options), k.used_globals()))
    assert launch_key == rec["key"] == k.cache_key(specialization_of(rec))


def test_autotune_in_record_mode(script: Path, tmp_path: Path) -> None:
    """Every config is recorded (CPU launches, skipped); no timings are stored."""
    cache, record = tmp_path / "cache", tmp_path / "rec.jsonl"
    r = _child(script, cache, record, TUNE="1")
    assert "TUNED 0.0" in r.stdout, r.stdout + r.stderr
    recs = _records(record)
    assert sorted(r["constexprs"]["BLOCK"] for r in recs if r["kernel"] == "tuned") == ["32", "64"]
    assert not list((cache / "autotune").glob("*.json"))


def test_loader(tmp_path: Path) -> None:
    """load_program: main guards and bare expressions skipped, a raising
    statement reported and passed, launches no-ops, the recorded module name."""
    from tilec.cli.replay import find_kernel, load_program
    p = tmp_path / "prog.py"
    p.write_text(textwrap.dedent('''
        import numpy as np
        import tilec, tilec.language as tl
        @tilec.kernel
        def fill(o, BLOCK: tl.constexpr):
            tl.store(o + tl.arange(0, BLOCK), tl.full((BLOCK,), 7.0, tl.float32))
        o = np.zeros(16, np.float32)
        fill[(1,)](o, BLOCK=16)
        undefined_name + 1
        raise RuntimeError("boom")
        def gpu_only(fn):
            raise RuntimeError("no GPU here")
        @gpu_only
        @tilec.kernel
        def probed(o, BLOCK: tl.constexpr):
            tl.store(o + tl.arange(0, BLOCK), tl.full((BLOCK,), 1.0, tl.float32))
        after = __name__
        if "__main__" == __name__:
            after = "main ran"
    '''))
    loaded = load_program(p, "__main__")
    ns = loaded.namespace
    assert ns["after"] == "__main__"                       # the main block was skipped
    assert "RuntimeError: boom" in loaded.problems[0] and "no GPU here" in loaded.problems[1]
    assert "defined probed without its outer decorator" in loaded.problems[2]
    assert len(loaded.problems) == 3 and find_kernel(ns, "probed") is not None
    assert not ns["o"].any()                               # the launch did nothing
    k = find_kernel(ns, "fill")
    assert k is not None and k.fn.__module__ == "__main__"
    assert sys.modules["__main__"].__name__ == "__main__" and "fill" not in vars(sys.modules["__main__"])


def test_host_descriptor_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel taking host TensorDescriptors (tutorial 06's sm90 path): its
    constexpr DescriptorType and hidden parameters survive record and replay,
    and the replayed entry serves the compiler-less launch with the right result."""
    pytest.importorskip("torch")
    p = tmp_path / "desc.py"
    p.write_text(textwrap.dedent('''
        import torch
        import tilec as triton
        import tilec.language as tl
        from tilec.tools.tensor_descriptor import TensorDescriptor

        @triton.jit
        def scale(a_desc, c_desc, BM: tl.constexpr):
            pm = tl.program_id(0)
            x = a_desc.load([pm * BM, 0])
            c_desc.store([pm * BM, 0], (x * 2 + 1).to(c_desc.dtype))

        a = torch.arange(32 * 16, dtype=torch.float16).reshape(32, 16) / 64
        c = torch.zeros_like(a)
        scale[(2,)](TensorDescriptor.from_tensor(a, [16, 16]), TensorDescriptor.from_tensor(c, [16, 16]), 16)
        print("ERR", float((c - (a * 2 + 1)).abs().max()))
    '''))
    cache, record = tmp_path / "cache", tmp_path / "rec.jsonl"
    r = _child(p, cache, record)
    assert "ERR" in r.stdout, r.stderr
    (rec,) = _records(record)
    assert rec["constexprs"]["a_desc"].startswith("DescriptorType(dtype='float16'")
    assert [q["name"] for q in rec["params"]][2:4] == ["a_desc.base", "a_desc.shape0"]
    from tilec.cli.replay import replay
    monkeypatch.setenv("TILEC_CACHE_DIR", str(cache))
    (o,), _ = replay(str(record), str(cache), quiet=True)
    assert o.status == "compiled", o.message
    record2 = tmp_path / "rec2.jsonl"
    r = _child(p, cache, record2)
    assert "ERR 0.0" in r.stdout and not record2.exists(), r.stdout + r.stderr


def test_warmup_handle_launches_the_warmed_specialization(tmp_path: Path) -> None:
    """Tutorial 02: a parameter named num_stages given to warmup by keyword (the
    option too) and to the handle positionally: one specialization, not two."""
    p = tmp_path / "stages.py"
    p.write_text(textwrap.dedent('''
        import numpy as np, tilec as triton, tilec.language as tl
        @triton.jit
        def k(x, n, BLOCK: tl.constexpr, num_stages: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            for i in tl.range(0, n, 1, num_stages=num_stages):
                tl.store(x + offs, tl.load(x + offs) + 1.0)
        x = np.zeros(16, np.float32)
        h = k.warmup(x, 3, BLOCK=16, num_stages=4, num_warps=8, grid=(1,))
        h[(1,)](x, 3, 16, 4)
    '''))
    record = tmp_path / "rec.jsonl"
    _child(p, tmp_path / "cache", record)
    (rec,) = _records(record)
    assert rec["options"]["num_stages"] == 4 and rec["options"]["num_warps"] == 8


def test_replay_of_a_kernel_whose_decorator_raises_here(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Tutorial 06's `_attn_fwd_tma`: its autotune config list is filtered by a
    function that asks CUDA for the capability, which raises where replay runs;
    the loader defines the kernel again without the autotune decorator.  The
    source hash covers the function from its `def` line on, so the replayed key
    is the recorded one, and the entry replay writes is the one the
    compiler-less launch then finds."""
    p = tmp_path / "tma.py"
    p.write_text(textwrap.dedent('''
        import os
        import numpy as np
        import tilec as triton
        import tilec.language as tl

        configs = [triton.Config({"BLOCK": b}, num_warps=w) for b in [32, 64] for w in [4, 8]]

        def keep(conf):
            if os.environ.get("NO_CUDA") == "1":
                raise RuntimeError("Found no NVIDIA driver on your system")
            return conf.num_warps == 4

        @triton.autotune(configs=list(filter(keep, configs)),
                         key=["n"])
        @triton.jit
        def shifted(x, o, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(o + offs, tl.load(x + offs, mask=offs < n) + 3.0, mask=offs < n)

        x = np.arange(100, dtype=np.float32)
        o = np.zeros(100, np.float32)
        shifted[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, o, 100)
        print("MAXERR", float(np.abs(o - (x + 3.0)).max()))
    '''))
    cache, record = tmp_path / "cache", tmp_path / "rec.jsonl"
    r = _child(p, cache, record)
    recs = _records(record)
    assert sorted(rec["constexprs"]["BLOCK"] for rec in recs) == ["32", "64"], r.stderr
    from tilec.cli.replay import replay
    monkeypatch.setenv("NO_CUDA", "1")
    monkeypatch.setenv("TILEC_CACHE_DIR", str(cache))
    outcomes, programs = replay(str(record), str(cache), quiet=True)
    (loaded,) = programs.values()
    assert any("defined shifted without its outer decorator" in q for q in loaded.problems)
    assert [o.status for o in outcomes] == ["compiled", "compiled"], [o.message for o in outcomes]
    keys = {rec["key"] for rec in recs}
    assert keys <= {e.name for e in cache.glob("*/*")}   # the recorded keys' entries
    record2 = tmp_path / "rec2.jsonl"
    r = _child(p, cache, record2, NO_CUDA="0")   # the device: the filter works there
    assert "MAXERR 0.0" in r.stdout and not record2.exists(), r.stdout + r.stderr

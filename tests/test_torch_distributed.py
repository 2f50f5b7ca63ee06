"""A 2-process torch.distributed job (gloo, CPU): each rank runs a torch.compile'd module
launching a tilec kernel and all-reduces the result; both share one cache directory and
compile the same kernel at the same moment: one compile (the cache's build lock), both
correct."""
from __future__ import annotations

import multiprocessing
import pathlib

import pytest

pytest.importorskip("torch")
import torch.distributed  # noqa: E402

import torch_workers  # noqa: E402
from processes import run_workers  # noqa: E402


@pytest.mark.skipif(not torch.distributed.is_available() or
                    not torch.distributed.is_gloo_available(), reason="no gloo backend")
def test_two_ranks_compile_once_and_all_reduce(tmp_path: pathlib.Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    cache = tmp_path / "cache"
    procs = [ctx.Process(target=torch_workers.distributed_worker,
                         args=(rank, 2, str(cache), str(tmp_path / "rendezvous"), results))
             for rank in range(2)]
    outcomes = sorted(run_workers(procs, results))
    assert [o[1] for o in outcomes] == ["ok", "ok"], outcomes
    assert sum(o[2] for o in outcomes) == 1, outcomes          # one rank compiled
    assert len(list(cache.rglob("manifest.json"))) == 1         # one entry, shared

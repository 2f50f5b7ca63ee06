"""Tests of tilec.cache: keys, round trips, corruption, races, permissions."""
from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import pathlib
import random
import time
import traceback
from collections.abc import Callable
from typing import Any

import pytest

from tilec.cache import CacheEntry, DiskCache, default_cache_dir, make_key

ARTIFACTS = {
    "kernel.mlir": b"module {}\n",
    "kernel.ptx": b".version 8.0\n" * 50,
    "kernel.cubin": bytes(range(256)) * 8,
}
METADATA = {"target": "sm_90", "num_warps": 4, "flags": ["-O3"], "ok": True, "x": None}


def entry_dirs(root: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p for shard in root.iterdir() if shard.is_dir() for p in shard.iterdir())


def hidden_leftovers(root: pathlib.Path) -> list[pathlib.Path]:
    """Temporary or trash directories left under the shards."""
    return [p for p in entry_dirs(root) if p.name.startswith(".")]


# -- make_key ------------------------------------------------------------------

def test_make_key_is_sha256_of_canonical_json() -> None:
    parts = {"b": [1, 2.5, "x", None, True], "a": {"z": 1, "y": (2, 3)}}
    canonical = '{"a":{"y":[2,3],"z":1},"b":[1,2.5,"x",null,true]}'
    assert make_key(parts) == hashlib.sha256(canonical.encode()).hexdigest()


def test_make_key_is_stable_and_order_independent() -> None:
    a = {"source": "def k(): pass", "target": "sm_90", "opts": {"O": 3, "fast": False}}
    b = {"opts": {"fast": False, "O": 3}, "target": "sm_90", "source": "def k(): pass"}
    assert make_key(a) == make_key(b) == make_key(dict(a))
    assert len(make_key(a)) == 64 and all(c in "0123456789abcdef" for c in make_key(a))


def test_make_key_distinguishes_values() -> None:
    keys = {make_key({"v": v}) for v in (1, 1.0, True, "1", [1], None, {"1": 1})}
    assert len(keys) == 7
    assert make_key({"a": [1, 2]}) != make_key({"a": [2, 1]})


@pytest.mark.parametrize("bad", [
    {"a": b"bytes"},
    {"a": {1, 2}},
    {"a": object()},
    {"a": [1, pathlib.Path("/x")]},
    {"a": {1: "int key"}},
    {1: "top-level int key"},
])
def test_make_key_rejects_other_types(bad: Any) -> None:
    with pytest.raises(TypeError):
        make_key(bad)


def test_make_key_rejects_non_mapping() -> None:
    with pytest.raises(TypeError):
        make_key([("a", 1)])  # type: ignore[arg-type]


# -- round trip ----------------------------------------------------------------

def test_put_get_round_trip(tmp_path: pathlib.Path) -> None:
    cache = DiskCache(tmp_path)
    key = make_key({"kernel": "add"})
    put = cache.put(key, ARTIFACTS, METADATA)
    got = cache.get(key)
    assert got is not None
    assert got == put
    assert got.key == key
    assert got.path == tmp_path / key[:2] / key
    assert got.metadata == METADATA
    assert got.artifacts == tuple(sorted(ARTIFACTS))
    for name, data in ARTIFACTS.items():
        assert got.read(name) == data
        assert got.artifact_path(name).read_bytes() == data
    manifest = json.loads((got.path / "manifest.json").read_text())
    assert manifest["format"] == 1 and manifest["key"] == key
    assert manifest["metadata"] == METADATA
    assert manifest["artifacts"]["kernel.ptx"] == {
        "sha256": hashlib.sha256(ARTIFACTS["kernel.ptx"]).hexdigest(),
        "size": len(ARTIFACTS["kernel.ptx"])}
    assert sorted(os.listdir(got.path)) == sorted([*ARTIFACTS, "manifest.json"])


def test_metadata_comes_back_as_json(tmp_path: pathlib.Path) -> None:
    cache = DiskCache(str(tmp_path))
    entry = cache.put("ab12", {"a.bin": b"x"}, {"shape": (4, 8), "nested": {"t": (1,)}})
    assert entry.metadata == {"shape": [4, 8], "nested": {"t": [1]}}
    assert cache.get("ab12") == entry


def test_empty_and_binary_artifacts(tmp_path: pathlib.Path) -> None:
    cache = DiskCache(tmp_path)
    blob = os.urandom(3000)
    cache.put("k1", {"empty": b"", "blob.bin": blob}, {})
    entry = cache.get("k1")
    assert entry is not None
    assert entry.read("empty") == b"" and entry.read("blob.bin") == blob


def test_get_missing_returns_none(tmp_path: pathlib.Path) -> None:
    cache = DiskCache(tmp_path / "does-not-exist-yet")
    assert cache.get(make_key({"x": 1})) is None
    assert not cache.root.exists()
    cache.put("aa11", {"a": b"1"}, {})
    assert cache.get("aa22") is None


def test_unknown_artifact_is_key_error(tmp_path: pathlib.Path) -> None:
    entry = DiskCache(tmp_path).put("abcd", {"a.o": b"1"}, {})
    with pytest.raises(KeyError):
        entry.artifact_path("b.o")
    with pytest.raises(KeyError):
        entry.read("manifest.json")


def test_existing_valid_entry_wins(tmp_path: pathlib.Path) -> None:
    cache = DiskCache(tmp_path)
    first = cache.put("abcd", {"a": b"first"}, {"n": 1})
    second = cache.put("abcd", {"a": b"second"}, {"n": 2})
    assert second == first
    assert second.read("a") == b"first"
    assert hidden_leftovers(tmp_path) == []


def test_no_stray_temporary_directories(tmp_path: pathlib.Path) -> None:
    cache = DiskCache(tmp_path)
    keys = [make_key({"i": i}) for i in range(10)]
    for key in keys:
        cache.put(key, ARTIFACTS, METADATA)
        cache.put(key, ARTIFACTS, METADATA)  # existing entry: temp dir discarded
    (tmp_path / keys[0][:2] / keys[0] / "manifest.json").write_text("junk")
    cache.put(keys[0], ARTIFACTS, METADATA)  # corrupt entry replaced
    assert hidden_leftovers(tmp_path) == []
    assert sorted(p.name for p in entry_dirs(tmp_path)) == sorted(keys)


def test_clear(tmp_path: pathlib.Path) -> None:
    cache = DiskCache(tmp_path)
    keys = [make_key({"i": i}) for i in range(5)]
    for key in keys:
        cache.put(key, ARTIFACTS, METADATA)
    (tmp_path / keys[0][:2] / ".tmp-leftover-1234").mkdir()
    (tmp_path / "README").write_text("not ours")
    (tmp_path / "other-dir").mkdir()
    cache.clear()
    assert all(cache.get(key) is None for key in keys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README", "other-dir"]
    cache.clear()  # idempotent
    DiskCache(tmp_path / "missing").clear()
    assert cache.put(keys[0], ARTIFACTS, METADATA) == cache.get(keys[0])


def test_get_is_fast(tmp_path: pathlib.Path) -> None:
    cache = DiskCache(tmp_path)
    key = make_key({"perf": 1})
    cache.put(key, {f"a{i}.bin": os.urandom(100_000) for i in range(3)}, METADATA)
    timings = []
    for _ in range(30):
        start = time.perf_counter()
        assert cache.get(key) is not None
        timings.append(time.perf_counter() - start)
    assert min(timings) < 0.002, timings


# -- corruption ----------------------------------------------------------------

def _garbage_manifest(d: pathlib.Path) -> None:
    (d / "manifest.json").write_bytes(b"\x00\xff{not json")


def _truncated_artifact(d: pathlib.Path) -> None:
    p = d / "kernel.ptx"
    p.write_bytes(p.read_bytes()[:-7])


def _modified_byte(d: pathlib.Path) -> None:
    p = d / "kernel.cubin"
    data = bytearray(p.read_bytes())
    data[100] ^= 0x01
    p.write_bytes(bytes(data))


def _missing_artifact(d: pathlib.Path) -> None:
    (d / "kernel.mlir").unlink()


def _edit_manifest(change: Callable[[dict[str, Any]], None]) -> Callable[[pathlib.Path], None]:
    def corrupt(d: pathlib.Path) -> None:
        manifest = json.loads((d / "manifest.json").read_text())
        change(manifest)
        (d / "manifest.json").write_text(json.dumps(manifest))
    return corrupt


def _wrong_key(m: dict[str, Any]) -> None:
    m["key"] = make_key({"other": True})


def _wrong_format(m: dict[str, Any]) -> None:
    m["format"] = 2


def _escaping_name(m: dict[str, Any]) -> None:
    m["artifacts"]["../escape"] = m["artifacts"].pop("kernel.ptx")


def _bad_size(m: dict[str, Any]) -> None:
    m["artifacts"]["kernel.ptx"]["size"] = "10"


def _missing_manifest(d: pathlib.Path) -> None:
    (d / "manifest.json").unlink()


def _manifest_not_object(d: pathlib.Path) -> None:
    (d / "manifest.json").write_text("[1, 2, 3]")


def _empty_manifest(d: pathlib.Path) -> None:
    (d / "manifest.json").write_bytes(b"")


CORRUPTIONS = {
    "garbage-manifest": _garbage_manifest,
    "empty-manifest": _empty_manifest,
    "missing-manifest": _missing_manifest,
    "manifest-not-object": _manifest_not_object,
    "truncated-artifact": _truncated_artifact,
    "modified-artifact-byte": _modified_byte,
    "missing-artifact": _missing_artifact,
    "wrong-key": _edit_manifest(_wrong_key),
    "wrong-format": _edit_manifest(_wrong_format),
    "escaping-artifact-name": _edit_manifest(_escaping_name),
    "bad-size": _edit_manifest(_bad_size),
}


@pytest.mark.parametrize("corrupt", CORRUPTIONS.values(), ids=CORRUPTIONS.keys())
def test_corrupt_entry_is_removed_and_rebuilt(
        tmp_path: pathlib.Path, corrupt: Callable[[pathlib.Path], None]) -> None:
    cache = DiskCache(tmp_path)
    key = make_key({"kernel": "corrupt-me"})
    entry = cache.put(key, ARTIFACTS, METADATA)
    corrupt(entry.path)
    assert cache.get(key) is None
    assert not entry.path.exists()
    assert hidden_leftovers(tmp_path) == []
    assert cache.get(key) is None
    rebuilt = cache.put(key, ARTIFACTS, METADATA)
    assert rebuilt == entry
    assert cache.get(key) == rebuilt
    assert all(rebuilt.read(n) == d for n, d in ARTIFACTS.items())


@pytest.mark.parametrize("corrupt", CORRUPTIONS.values(), ids=CORRUPTIONS.keys())
def test_put_replaces_corrupt_entry(
        tmp_path: pathlib.Path, corrupt: Callable[[pathlib.Path], None]) -> None:
    cache = DiskCache(tmp_path)
    key = make_key({"kernel": "corrupt-me"})
    entry = cache.put(key, {"kernel.mlir": b"old", "kernel.ptx": b"old" * 10,
                            "kernel.cubin": b"o" * 200}, {"old": True})
    corrupt(entry.path)
    replaced = cache.put(key, ARTIFACTS, METADATA)
    assert replaced.metadata == METADATA
    got = cache.get(key)
    assert got == replaced
    assert all(got.read(n) == d for n, d in ARTIFACTS.items())
    assert hidden_leftovers(tmp_path) == []


def test_entry_that_is_a_file_is_replaced(tmp_path: pathlib.Path) -> None:
    cache = DiskCache(tmp_path)
    (tmp_path / "ab").mkdir()
    (tmp_path / "ab" / "abcd").write_text("not a directory")
    assert cache.get("abcd") is None
    (tmp_path / "ab" / "abcd").write_text("not a directory")
    assert cache.put("abcd", {"a": b"1"}, {}) == cache.get("abcd")


# -- validation of arguments -------------------------------------------------

@pytest.mark.parametrize("name", [
    "", ".", "..", "a/b", "../x", "/abs", "a\\b", "a b", "caf\u00e9.bin", "x\n",
    "manifest.json", "MANIFEST.json", "a:b", "x" * 256,
])
def test_invalid_artifact_names(tmp_path: pathlib.Path, name: str) -> None:
    cache = DiskCache(tmp_path)
    with pytest.raises(ValueError):
        cache.put("abcd", {"ok.bin": b"1", name: b"2"}, {})
    assert cache.get("abcd") is None
    assert not tmp_path.exists() or hidden_leftovers(tmp_path) == []


def test_artifact_names_differing_in_case_rejected(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError):
        DiskCache(tmp_path).put("abcd", {"a.bin": b"1", "A.bin": b"2"}, {})


def test_valid_artifact_names(tmp_path: pathlib.Path) -> None:
    names = ["kernel.ptx", "a_b-c.1", ".hidden", "X"]
    entry = DiskCache(tmp_path).put("abcd", {n: n.encode() for n in names}, {})
    assert entry.artifacts == tuple(sorted(names))


@pytest.mark.parametrize("key", ["", "a", "../etc", "ab/cd", "ABCD", ".tmp-x", "-abc", "a" * 129])
def test_invalid_keys(tmp_path: pathlib.Path, key: str) -> None:
    cache = DiskCache(tmp_path)
    with pytest.raises(ValueError):
        cache.put(key, {"a": b"1"}, {})
    with pytest.raises(ValueError):
        cache.get(key)


def test_bad_artifact_and_metadata_types(tmp_path: pathlib.Path) -> None:
    cache = DiskCache(tmp_path)
    with pytest.raises(TypeError):
        cache.put("abcd", {"a": "text, not bytes"}, {})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        cache.put("abcd", {"a": b"1"}, {"path": pathlib.Path("/x")})
    assert cache.get("abcd") is None


# -- environment and permissions --------------------------------------------

def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("TILEC_CACHE_DIR")
    assert default_cache_dir() == tmp_path / "xdg" / "tilec"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "tilec"


def test_disk_cache_reads_environment_at_construction(
        monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "one"))
    cache = DiskCache()
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "two"))
    assert cache.root == tmp_path / "one"
    cache.put("abcd", {"a": b"1"}, {})
    assert (tmp_path / "one" / "ab" / "abcd" / "manifest.json").is_file()
    assert DiskCache().root == tmp_path / "two"


def test_unwritable_root_that_is_a_file(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "a-file"
    root.write_text("")
    cache = DiskCache(root)
    assert cache.get("abcd") is None
    with pytest.raises(OSError) as info:
        cache.put("abcd", {"a": b"1"}, {})
    assert str(root) in str(info.value) and "TILEC_CACHE_DIR" in str(info.value)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="needs a non-root POSIX user for permissions to apply")
def test_unwritable_root_permissions(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "ro"
    root.mkdir()
    root.chmod(0o500)
    try:
        with pytest.raises(PermissionError) as info:
            DiskCache(root).put("abcd", {"a": b"1"}, {})
        assert str(root) in str(info.value) and "TILEC_CACHE_DIR" in str(info.value)
    finally:
        root.chmod(0o700)


# -- several processes -------------------------------------------------------

N_KEYS = 8
ITERATIONS = 20


def _race_key(i: int) -> str:
    return make_key({"race": i})


def _race_artifacts(i: int) -> dict[str, bytes]:
    return {"kernel.ptx": f"ptx {i}\n".encode() * 500,
            "kernel.cubin": bytes([i]) * 4096,
            "kernel.mlir": f"// kernel {i}\n".encode()}


def _check_entry(entry: CacheEntry, i: int) -> None:
    assert entry.key == _race_key(i)
    assert entry.metadata == {"i": i}
    for name, data in _race_artifacts(i).items():
        assert entry.read(name) == data


def _race_worker(role: str, seed: int, root: str, start: Any, done: Any, results: Any) -> None:
    try:
        cache = DiskCache(root)
        rng = random.Random(seed)
        start.wait(60)
        count = 0
        if role == "writer":
            for _ in range(ITERATIONS):
                order = list(range(N_KEYS))
                rng.shuffle(order)
                for i in order:
                    _check_entry(cache.put(_race_key(i), _race_artifacts(i), {"i": i}), i)
                    count += 1
        else:
            while not done.is_set() or count == 0:
                for i in range(N_KEYS):
                    entry = cache.get(_race_key(i))
                    if entry is not None:
                        _check_entry(entry, i)
                    count += 1
        results.put((role, seed, "ok", count))
    except BaseException:
        results.put((role, seed, "error", traceback.format_exc()))


def test_concurrent_processes(tmp_path: pathlib.Path) -> None:
    cache = DiskCache(tmp_path)
    # Start some keys out corrupt so that the writers also race on replacing.
    for i in range(0, N_KEYS, 2):
        entry = cache.put(_race_key(i), _race_artifacts(i), {"i": i})
        (entry.path / "manifest.json").write_text("{garbage")
    ctx = multiprocessing.get_context("spawn")
    start, done, results = ctx.Event(), ctx.Event(), ctx.Queue()
    roles = [("writer", 1), ("writer", 2), ("reader", 3), ("reader", 4)]
    procs = [ctx.Process(target=_race_worker, args=(role, seed, str(tmp_path), start, done, results))
             for role, seed in roles]
    for p in procs:
        p.start()
    try:
        start.set()
        outcomes = []
        for _ in roles:
            outcomes.append(results.get(timeout=120))
            if sum(o[0] == "writer" for o in outcomes) == 2:
                done.set()
        for p in procs:
            p.join(60)
    finally:
        done.set()
        for p in procs:
            if p.is_alive():
                p.kill()
    errors = [o[3] for o in outcomes if o[2] != "ok"]
    assert not errors, "\n".join(errors)
    assert [p.exitcode for p in procs] == [0] * len(procs)
    writes = [o[3] for o in outcomes if o[0] == "writer"]
    assert writes == [N_KEYS * ITERATIONS] * 2
    for i in range(N_KEYS):
        final = cache.get(_race_key(i))
        assert final is not None
        _check_entry(final, i)
    assert hidden_leftovers(tmp_path) == []
    assert len(entry_dirs(tmp_path)) == N_KEYS


def test_builder_fingerprint_covers_tool_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another ptxas, ld.lld or C compiler makes entries built before stale."""
    from tilec import builder
    versions = builder.tool_versions()
    assert {"ptxas", "ld.lld", "cc"} <= set(versions)
    before = builder.builder_fingerprint()
    builder.builder_fingerprint.cache_clear()
    monkeypatch.setattr(builder, "tool_versions", lambda: {**versions, "ptxas": "release 99.9"})
    try:
        assert builder.builder_fingerprint() != before
    finally:
        builder.builder_fingerprint.cache_clear()


def test_builder_fingerprint_covers_every_compiler_folder() -> None:
    """dialects/, passes/ and targets/ install as tilec.* from top-level folders:
    the fingerprint must read them (a pass change must invalidate the cache)."""
    from tilec import builder
    for name, module in (("passes", "tile_layout.py"), ("targets", "pipeline.py"),
                         ("dialects", "tile.py"), ("frontend", "grammar.lark")):
        root = builder._package_dir(name)
        assert (root / module).is_file(), (name, root)

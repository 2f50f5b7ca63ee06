"""An on-disk cache of compiled artifacts, safe to share between processes.

Layout
------
Every entry lives in its own directory, sharded by the first two characters
of its key::

    <root>/                         default_cache_dir() unless given
        <key[:2]>/                  shard directory
            <key>/                  one entry (never partially written)
                manifest.json
                <artifact files>    e.g. kernel.ptx, kernel.cubin, kernel.mlir
            .tmp-<key>-<random>/    an entry being written by put()
            .old-<key>-<random>/    a corrupt entry being deleted

``manifest.json``, the keys and the artifact names are described in
tilec/cache_format.py.

Concurrency and crash safety
----------------------------
`DiskCache.put` writes the whole entry into a fresh hidden directory next to
its final place and then renames that directory onto ``<key>`` in a single
``os.rename``, so readers see either no entry or a complete one.  When the
final name is already taken by a valid entry (another process won the race)
that entry is kept and returned: the first writer wins.  A corrupt entry is
renamed aside to a hidden name, the new one renamed in, and the old one
deleted; the loop tolerates any number of processes doing the same at once.
Moving an existing entry aside (here, and when `DiskCache.get` deletes a
corrupt one) is done under an ``flock`` of the shard directory after checking
the entry again, so a valid entry, once in place, stays until
`DiskCache.clear`.  The normal paths take no lock.

`DiskCache.get` checks the manifest and the size and SHA-256 of every
artifact.  A corrupt entry (garbage or missing manifest, wrong format or
key, a missing, truncated or modified artifact) is renamed aside and deleted
on a best-effort basis and reported as a miss, so the caller rebuilds it.
Hidden ``.tmp-``/``.old-`` directories can be left behind only by a process
that dies mid-operation; `DiskCache.clear` removes them.

Only the standard library is used, so importing this module is cheap.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import pathlib
import secrets
import shutil
import stat
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tilec.cache_format import (
    FORMAT, KEY_RE, MANIFEST, SHARD_RE, Corrupt, check_artifact, check_key, is_artifact_name,
    make_key, parse_manifest, to_json,
)

if sys.platform != "win32":
    import fcntl

__all__ = ["CacheEntry", "DiskCache", "default_cache_dir", "make_key"]

_TMP_PREFIX = ".tmp-"
_OLD_PREFIX = ".old-"
# How often put() retries after losing a race (to a concurrent clear(), or to
# writers that keep installing corrupt entries) before it gives up.
_MAX_ATTEMPTS = 64
# rename(2) of a directory onto an existing non-empty directory (or a file).
_TAKEN_ERRNOS = frozenset({errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR})


def default_cache_dir() -> pathlib.Path:
    """Return the cache directory to use when none is given.

    ``$TILEC_CACHE_DIR`` if set (``~`` is expanded), else
    ``$XDG_CACHE_HOME/tilec``, else ``~/.cache/tilec``.  Empty variables
    count as unset, and a relative ``$XDG_CACHE_HOME`` is ignored, as the XDG
    base directory specification requires.
    """
    explicit = os.environ.get("TILEC_CACHE_DIR")
    if explicit:
        return pathlib.Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return pathlib.Path(xdg) / "tilec"
    return pathlib.Path.home() / ".cache" / "tilec"


@dataclass(frozen=True)
class CacheEntry:
    """A valid cache entry on disk."""

    key: str
    path: pathlib.Path
    """The entry directory, ``<root>/<key[:2]>/<key>``."""
    metadata: dict[str, Any]
    """The metadata given to `DiskCache.put` (as read back from JSON)."""
    artifacts: tuple[str, ...]
    """The artifact file names, sorted."""

    def artifact_path(self, name: str) -> pathlib.Path:
        """Return the path of artifact `name`; KeyError if there is none."""
        if name not in self.artifacts:
            raise KeyError(f"{name!r} is not an artifact of cache entry {self.key}; "
                           f"it has {list(self.artifacts)}")
        return self.path / name

    def read(self, name: str) -> bytes:
        """Return the contents of artifact `name`; KeyError if there is none."""
        return self.artifact_path(name).read_bytes()


def _make_hidden_dir(parent: pathlib.Path, prefix: str) -> pathlib.Path:
    """Create a fresh directory ``parent/<prefix><random>`` (like mkdtemp).

    Unlike tempfile.mkdtemp (always mode 0700) the directory gets the usual
    umask-based permissions, because it becomes the entry once renamed.
    """
    for _ in range(100):
        path = parent / f"{prefix}{secrets.token_hex(8)}"
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(errno.EEXIST, f"no free temporary name in {parent}")


def _remove_tree(path: pathlib.Path) -> None:
    """Delete `path` (a directory, or a stray file) if it exists; ignore errors."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


@contextlib.contextmanager
def _shard_lock(directory: pathlib.Path) -> Iterator[None]:
    """Hold an exclusive flock(2) on `directory` (best effort).

    Taken only on the rare paths that move an existing entry aside, never on
    the normal get() and put() paths.  Where locking is unavailable (Windows,
    some network file systems) the code still works, with a small window in
    which a concurrent replacement can make a fresh entry briefly disappear.
    """
    fd = -1
    if sys.platform != "win32":
        try:
            fd = os.open(directory, os.O_RDONLY)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass
    try:
        yield
    finally:
        if fd >= 0:
            os.close(fd)  # releases the lock


@contextlib.contextmanager
def _file_lock(path: pathlib.Path) -> Iterator[None]:
    """Hold an exclusive flock(2) on file `path`, created if missing (best effort:
    without locking, or in a read-only cache, nothing is held)."""
    fd = -1
    if sys.platform != "win32":
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            if fd >= 0:
                os.close(fd)
            fd = -1
    try:
        yield
    finally:
        if fd >= 0:
            os.close(fd)


class DiskCache:
    """A directory of cache entries; see the module docstring for the layout."""

    root: pathlib.Path

    def __init__(self, root: pathlib.Path | str | None = None) -> None:
        """Use `root`, or `default_cache_dir()` (read now) when it is None.

        Nothing is created until the first `put`.  The root is made absolute
        so that a later change of working directory does not move the cache.
        """
        if root is None:
            root = default_cache_dir()
        self.root = pathlib.Path(root).expanduser().absolute()

    def __repr__(self) -> str:
        return f"DiskCache({str(self.root)!r})"

    def _entry_dir(self, key: str) -> pathlib.Path:
        return self.root / key[:2] / key

    # -- reading -------------------------------------------------------------

    def _load(self, key: str, entry_dir: pathlib.Path) -> CacheEntry:
        """Validate the entry in `entry_dir` (known to exist); raise Corrupt."""
        try:
            raw = (entry_dir / MANIFEST).read_bytes()
        except OSError as e:
            raise Corrupt(f"cannot read the manifest: {e}") from None
        metadata, artifacts = parse_manifest(raw, key)
        for name, (size, digest) in artifacts.items():
            check_artifact(entry_dir / name, size, digest)
        return CacheEntry(key=key, path=entry_dir, metadata=metadata,
                          artifacts=tuple(sorted(artifacts)))

    def get(self, key: str) -> CacheEntry | None:
        """Return the valid entry for `key`, or None if there is none.

        A corrupt entry is deleted (best effort) and None returned, so that the
        caller rebuilds it.  ValueError if `key` is not a valid key.
        """
        check_key(key)
        entry_dir = self._entry_dir(key)
        try:
            before = os.lstat(entry_dir)
        except OSError:  # missing (or an unreachable root): a plain miss
            return None
        try:
            if not stat.S_ISDIR(before.st_mode):
                raise Corrupt("the entry is not a directory")
            return self._load(key, entry_dir)
        except Corrupt:
            self._discard(entry_dir, key, before)
            return None

    def invalidate(self, entry: CacheEntry) -> None:
        """Delete a valid but stale entry (e.g. built by another compiler version)."""
        try:
            seen = os.lstat(entry.path)
        except OSError:
            return
        self._discard(entry.path, entry.key, seen)

    def _discard(self, entry_dir: pathlib.Path, key: str, seen: os.stat_result) -> None:
        """Delete the corrupt entry that `seen` describes; ignore all errors.

        Under the shard lock, and only if the name still holds the directory
        that was found corrupt (not a new entry another process put there
        meanwhile), the entry is renamed aside and then deleted, so the final
        name never holds a half deleted directory.
        """
        aside = entry_dir.parent / f"{_OLD_PREFIX}{key}-{secrets.token_hex(8)}"
        with _shard_lock(entry_dir.parent):
            try:
                now = os.lstat(entry_dir)
                if (now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino):
                    return
                os.rename(entry_dir, aside)
            except OSError:
                return  # already gone, or the cache is read-only
        _remove_tree(aside)

    # -- writing -------------------------------------------------------------

    def _unwritable(self, e: OSError) -> OSError:
        reason = e.strerror or str(e)
        where = f" ({e.filename})" if e.filename else ""
        return OSError(
            e.errno,
            f"cannot write to the tilec cache directory {self.root}: {reason}{where}; "
            "set TILEC_CACHE_DIR to a writable directory")

    def _write_temp(self, shard: pathlib.Path, key: str,
                    blobs: Mapping[str, bytes], manifest: bytes) -> pathlib.Path:
        """Write a complete entry into a new hidden directory in `shard`."""
        os.makedirs(shard, exist_ok=True)
        tmp = _make_hidden_dir(shard, f"{_TMP_PREFIX}{key}-")
        try:
            for name, data in blobs.items():
                with open(tmp / name, "xb") as f:
                    f.write(data)
            with open(tmp / MANIFEST, "xb") as f:
                f.write(manifest)
        except BaseException:
            _remove_tree(tmp)
            raise
        return tmp

    def put(self, key: str, artifacts: Mapping[str, bytes],
            metadata: Mapping[str, Any]) -> CacheEntry:
        """Store `artifacts` ({file name: contents}) and `metadata` under `key`.

        Atomic: the entry appears complete or not at all.  If a valid entry
        for `key` already exists (for instance another process stored it
        first) it is kept and returned instead.  A corrupt one is replaced.

        ValueError for a bad key or artifact name, TypeError for non-bytes
        artifacts or metadata that is not plain JSON data (see `make_key`),
        OSError naming the directory when the cache cannot be written.
        """
        check_key(key)
        if not isinstance(metadata, Mapping):
            raise TypeError(f"metadata must be a mapping, not {type(metadata).__name__}")
        meta = to_json(metadata, "metadata", set())
        assert isinstance(meta, dict)
        blobs: dict[str, bytes] = {}
        folded: dict[str, str] = {}
        for name in artifacts:
            if not is_artifact_name(name):
                raise ValueError(
                    f"invalid artifact name {name!r}: use a plain file name of ASCII "
                    "letters, digits, '.', '_' and '-' (not '.', '..' or "
                    f"{MANIFEST!r})")
            # Names that differ only in case would clash on macOS and Windows.
            if name.lower() in folded:
                raise ValueError(f"artifact names {folded[name.lower()]!r} and {name!r} "
                                 "differ only in case")
            folded[name.lower()] = name
        for name in sorted(artifacts):
            data = artifacts[name]
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise TypeError(f"artifact {name!r} must be bytes, not {type(data).__name__}")
            blobs[name] = bytes(data)
        manifest = {
            "format": FORMAT,
            "key": key,
            "metadata": meta,
            "artifacts": {name: {"sha256": hashlib.sha256(data).hexdigest(),
                                 "size": len(data)}
                          for name, data in blobs.items()},
        }
        manifest_bytes = (json.dumps(manifest, sort_keys=True, indent=1) + "\n").encode()
        # Round-trip the metadata so that put() returns what get() will.
        entry = CacheEntry(key=key, path=self._entry_dir(key),
                           metadata=json.loads(json.dumps(meta)),
                           artifacts=tuple(blobs))
        shard = entry.path.parent
        last_error: OSError | None = None
        for _ in range(_MAX_ATTEMPTS):
            try:
                tmp = self._write_temp(shard, key, blobs, manifest_bytes)
            except FileNotFoundError as e:  # shard removed by a concurrent clear()
                last_error = e
                continue
            except OSError as e:
                raise self._unwritable(e) from e
            try:
                installed = self._install(tmp, entry)
            finally:
                _remove_tree(tmp)  # nothing left there once renamed into place
            if installed is not None:
                return installed
        if last_error is not None:
            raise self._unwritable(last_error) from last_error
        raise OSError(errno.EAGAIN, f"could not store cache entry {key} in {self.root}: "
                      f"lost {_MAX_ATTEMPTS} races to concurrent writers")

    def _install(self, tmp: pathlib.Path, entry: CacheEntry) -> CacheEntry | None:
        """Rename `tmp` onto the entry directory, or find a valid entry there.

        Return the installed (or existing valid) entry, or None when `tmp`
        vanished (a concurrent clear()) and has to be written again.
        """
        final = entry.path
        for _ in range(_MAX_ATTEMPTS):
            try:
                os.rename(tmp, final)
                return entry
            except FileNotFoundError:
                return None
            except OSError as e:
                if e.errno not in _TAKEN_ERRNOS:
                    raise self._unwritable(e) from e
            # The name is taken.  Keep a valid entry: the first writer wins.
            try:
                return self._load(entry.key, final)
            except Corrupt:
                pass
            # Replace the corrupt entry under the shard lock, after checking
            # again, so that no writer ever moves a valid entry aside.
            aside = final.parent / f"{_OLD_PREFIX}{entry.key}-{secrets.token_hex(8)}"
            with _shard_lock(final.parent):
                try:
                    return self._load(entry.key, final)
                except Corrupt:
                    pass
                try:
                    os.rename(final, aside)
                except FileNotFoundError:
                    pass  # deleted meanwhile (get() or clear())
                except OSError as e:
                    if e.errno not in _TAKEN_ERRNOS:
                        raise self._unwritable(e) from e
                    continue
                try:
                    os.rename(tmp, final)
                    installed = True
                except FileNotFoundError:
                    return None
                except OSError as e:
                    if e.errno not in _TAKEN_ERRNOS:
                        raise self._unwritable(e) from e
                    installed = False  # a new entry went in first; check it
            _remove_tree(aside)
            if installed:
                return entry
        raise OSError(errno.EAGAIN, f"could not store cache entry {entry.key} in "
                      f"{self.root}: lost {_MAX_ATTEMPTS} races to concurrent writers")

    def build_lock(self, key: str) -> contextlib.AbstractContextManager[None]:
        """An exclusive lock for building the entry of `key` (`<root>/.locks/<key>`):
        processes that miss the same key at once compile it one after the other,
        and the later ones find the first one's entry (one compile).  Best effort,
        like `_shard_lock`; `clear` leaves the lock files."""
        check_key(key)
        return _file_lock(self.root / ".locks" / key)

    def clear(self) -> None:
        """Remove every entry (and leftover temporary directory) under the root.

        Only names that the cache itself creates are touched, so other files
        in the root survive.  The root directory itself is kept.
        """
        try:
            shards = list(os.scandir(self.root))
        except OSError:
            return
        for shard in shards:
            if not (shard.is_dir(follow_symlinks=False)
                    and SHARD_RE.fullmatch(shard.name)):
                continue
            try:
                children = list(os.scandir(shard.path))
            except OSError:
                continue
            for child in children:
                name = child.name
                path = pathlib.Path(child.path)
                if name.startswith((_TMP_PREFIX, _OLD_PREFIX)):
                    _remove_tree(path)
                elif KEY_RE.fullmatch(name) and name.startswith(shard.name):
                    aside = path.parent / f"{_OLD_PREFIX}{name}-{secrets.token_hex(8)}"
                    try:
                        os.rename(path, aside)
                    except OSError:
                        continue
                    _remove_tree(aside)
            try:
                os.rmdir(shard.path)
            except OSError:
                pass

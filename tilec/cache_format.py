"""The disk cache's on-disk format: keys, names and manifests (standard library only).

``manifest.json`` is plain JSON (there are no pickles anywhere)::

    {"format": 1,
     "key": "<key>",
     "metadata": {...},                       # what the caller gave put()
     "artifacts": {"<name>": {"sha256": "<hex>", "size": <bytes>}, ...}}

Keys are normally made by `make_key` (the SHA-256 of a canonical JSON
encoding of everything that determines the artifacts), but any string of
2 to 128 lower-case ASCII letters, digits, ``_`` and ``-`` that starts with a
letter or digit is accepted.  Artifact names are plain file names made of
ASCII letters, digits, ``.``, ``_`` and ``-``.  `parse_manifest` and
`check_artifact` raise `Corrupt` for anything else.
"""
from __future__ import annotations

import hashlib
import json
import os
import pathlib
import re
from collections.abc import Mapping
from typing import Any

FORMAT = 1
"""The ``format`` number written to, and required in, every manifest."""

MANIFEST = "manifest.json"

KEY_RE = re.compile(r"[0-9a-z][0-9a-z_-]{1,127}")
ARTIFACT_RE = re.compile(r"[A-Za-z0-9._-]{1,255}")
SHARD_RE = re.compile(r"[0-9a-z][0-9a-z_-]")
SHA256_RE = re.compile(r"[0-9a-f]{64}")

def to_json(value: object, where: str, active: set[int]) -> object:
    """Return `value` as plain JSON data; TypeError for anything else.

    Accepts None, bool, int, float, str, list, tuple and mappings with str
    keys (tuples become lists).  `where` names the value in error messages;
    `active` holds the ids of the containers being converted, to catch cycles.
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (list, tuple, Mapping)):
        ident = id(value)
        if ident in active:
            raise ValueError(f"{where} contains a reference to itself")
        active.add(ident)
        try:
            if isinstance(value, Mapping):
                out: dict[str, object] = {}
                for k, v in value.items():
                    if not isinstance(k, str):
                        raise TypeError(
                            f"{where} has a key {k!r} of type {type(k).__name__}; "
                            "only str keys are allowed")
                    out[str(k)] = to_json(v, f"{where}[{k!r}]", active)
                return out
            return [to_json(v, f"{where}[{i}]", active) for i, v in enumerate(value)]
        finally:
            active.discard(ident)
    raise TypeError(
        f"{where} is of type {type(value).__name__}; only str, int, float, bool, "
        "None, list, tuple and dict values are allowed")


def make_key(parts: Mapping[str, object]) -> str:
    """Return the SHA-256 hex digest of a canonical JSON encoding of `parts`.

    The encoding sorts keys and uses ``separators=(",", ":")``, so the key
    does not depend on insertion order.  Values may be str, int, float, bool,
    None, list, tuple (encoded like a list) and dict with str keys, nested;
    anything else raises TypeError.
    """
    if not isinstance(parts, Mapping):
        raise TypeError(f"make_key() needs a mapping, not {type(parts).__name__}")
    data = to_json(parts, "parts", set())
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def is_artifact_name(name: object) -> bool:
    return (isinstance(name, str)
            and ARTIFACT_RE.fullmatch(name) is not None
            and name not in (".", "..")
            and name.lower() != MANIFEST)


def check_key(key: object) -> str:
    if not isinstance(key, str) or KEY_RE.fullmatch(key) is None:
        raise ValueError(
            f"invalid cache key {key!r}: use 2 to 128 lower-case ASCII letters, "
            "digits, '_' and '-', starting with a letter or digit (see make_key())")
    return key


class Corrupt(Exception):
    """An entry directory exists but is not a valid entry."""


def parse_manifest(raw: bytes, key: str) -> tuple[dict[str, Any], dict[str, tuple[int, str]]]:
    """Return (metadata, {name: (size, sha256)}) from manifest bytes, or raise Corrupt."""
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as e:  # JSONDecodeError, UnicodeDecodeError
        raise Corrupt(f"manifest is not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise Corrupt("manifest is not a JSON object")
    fmt = doc.get("format")
    if type(fmt) is not int or fmt != FORMAT:
        raise Corrupt(f"manifest format is {fmt!r}, not {FORMAT}")
    if doc.get("key") != key:
        raise Corrupt(f"manifest is for key {doc.get('key')!r}")
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict):
        raise Corrupt("manifest metadata is not an object")
    listed = doc.get("artifacts")
    if not isinstance(listed, dict):
        raise Corrupt("manifest artifacts is not an object")
    artifacts: dict[str, tuple[int, str]] = {}
    for name, record in listed.items():
        if not is_artifact_name(name):
            raise Corrupt(f"manifest lists a bad artifact name {name!r}")
        if not isinstance(record, dict):
            raise Corrupt(f"manifest record of {name!r} is not an object")
        size = record.get("size")
        digest = record.get("sha256")
        if type(size) is not int or size < 0:
            raise Corrupt(f"manifest size of {name!r} is {size!r}")
        if not isinstance(digest, str) or SHA256_RE.fullmatch(digest) is None:
            raise Corrupt(f"manifest sha256 of {name!r} is {digest!r}")
        artifacts[name] = (size, digest)
    return metadata, artifacts


def check_artifact(path: pathlib.Path, size: int, digest: str) -> None:
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size != size:
                raise Corrupt(f"{path.name} does not have the recorded size {size}")
            data = f.read(size + 1)
    except OSError as e:
        raise Corrupt(f"cannot read {path.name}: {e}") from None
    if len(data) != size:
        raise Corrupt(f"{path.name} does not have the recorded size {size}")
    if hashlib.sha256(data).hexdigest() != digest:
        raise Corrupt(f"{path.name} does not match its recorded sha256")

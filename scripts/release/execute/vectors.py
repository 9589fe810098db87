"""What the executed-vector writers share: records folded into an index of outcome ids
(each distinct outcome stored once), a file's SHA-256, and reading or packing a vector
file (older releases are checked in as ``.json.gz``)."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

__all__ = ["index_records", "load_vectors", "pack", "sha256"]


def load_vectors(path: Path) -> dict[str, Any] | None:
    """``path`` (``executed-<kind>.json``) or its packed ``.json.gz``; ``None`` if neither."""
    packed = path.with_name(path.name + ".gz")
    if path.is_file():
        text = path.read_text(encoding="utf-8")
    elif packed.is_file():
        text = gzip.decompress(packed.read_bytes()).decode("utf-8")
    else:
        return None
    data: dict[str, Any] = json.loads(text)
    return data


def pack(path: Path) -> Path:
    """Replace ``path`` by ``path.gz`` (fixed mtime, so the bytes depend on the content
    only)."""
    packed = path.with_name(path.name + ".gz")
    packed.write_bytes(gzip.compress(path.read_bytes(), compresslevel=9, mtime=0))
    path.unlink()
    return packed


def index_records(records: list[list[Any]], prefix: str) -> dict[str, Any]:
    """``[k1, ..., kn, outcome]`` rows -> ``{"index": {k1: ... {kn: id}}, "outcomes":
    {id: outcome}}``; ids are ``prefix`` and a running number."""
    outcomes: dict[str, Any] = {}
    ids: dict[str, str] = {}
    index: dict[str, Any] = {}
    for *keys, outcome in records:
        text = json.dumps(outcome, sort_keys=True)
        oid = ids.get(text)
        if oid is None:
            oid = ids[text] = f"{prefix}{len(ids):05d}"
            outcomes[oid] = outcome
        node = index
        for key in keys[:-1]:
            node = node.setdefault(str(key), {})
        node[str(keys[-1])] = oid
    return {"index": index, "outcomes": outcomes}


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()

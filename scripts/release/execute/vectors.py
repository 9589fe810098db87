"""What the executed-vector writers share: records folded into an index of outcome ids
(each distinct outcome stored once), and a file's SHA-256."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

__all__ = ["index_records", "sha256"]


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

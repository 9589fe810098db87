"""vLLM's compile-cache hash, reproduced: canonical values, factors, digest.

Every function here is pure. The two steps are kept apart so that the factors can be
shown to a person (``hash_factors``) and digested exactly as vLLM does (``digest``):
``sha256(json.dumps(factors, sort_keys=True))`` with ``json``'s default separators.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence, Set
from typing import Any

__all__ = ["digest", "normalize_value"]


def normalize_value(value: Any) -> Any:
    """Return the canonical, JSON-ready form vLLM hashes for ``value``.

    Primitives pass through; a mapping becomes a sorted sequence of ``(str(key),
    value)`` pairs; a set becomes the sorted ``repr`` of its members; any other
    sequence keeps its order and duplicates. Lists come back as lists (JSON arrays),
    which is what vLLM's tuples turn into once dumped.
    """
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return sorted([str(k), normalize_value(v)] for k, v in value.items())
    if isinstance(value, Set):
        return sorted(repr(_frozen(normalize_value(v))) for v in value)
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return [normalize_value(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return value.hex()
    raise TypeError(f"normalize_value: unsupported type {type(value).__name__!r}")


def _frozen(value: Any) -> Any:
    """Lists as tuples, so that ``repr`` matches vLLM's tuple-based canonical form."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def digest(factors: Mapping[str, Any]) -> str:
    """SHA-256 hex digest of ``factors`` as vLLM's ``hash_factors`` computes it."""
    return hashlib.sha256(json.dumps(factors, sort_keys=True).encode()).hexdigest()

"""vLLM's compile-cache hash, reproduced: canonical values, factors, digest.

Every function here is pure. The two steps are kept apart so that the factors can be
shown to a person (``hash_factors``) and digested exactly as vLLM does (``digest``):
``sha256(json.dumps(factors, sort_keys=True))`` with ``json``'s default separators.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence, Set
from typing import TYPE_CHECKING, Any

from kernelcfg.errors import UnknownProviderError

if TYPE_CHECKING:
    from kernelcfg.releases import Release

__all__ = [
    "digest",
    "ignored_factors",
    "ir_factors",
    "ir_hash",
    "kernel_factors",
    "normalize_value",
]


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


def ir_factors(release: Release, lists: Mapping[str, Sequence[str] | None]) -> dict[str, Any]:
    """What ``IrOpPriorityConfig.compute_hash`` digests: the lists, and ``_impls``.

    ``_impls`` maps each op to ``{provider: uuid}`` for the providers its list names
    (a dict, so duplicates collapse). A provider not registered for the op raises
    :class:`UnknownProviderError`, where vLLM raises a bare ``KeyError``.
    """
    factors: dict[str, Any] = {}
    impls: dict[str, dict[str, str]] = {}
    for op in release.ir_ops:
        lst = lists.get(op)
        factors[op] = normalize_value(lst)
        registered = release.providers(op)
        chosen: dict[str, str] = {}
        for provider in lst or ():
            if provider not in registered:
                raise UnknownProviderError(op, provider, registered)
            chosen[provider] = registered[provider]["uuid"]
        impls[op] = chosen
    factors["_impls"] = impls
    return factors


_IR_HASHES: dict[tuple[str, tuple[tuple[str, ...] | None, ...]], str] = {}


def ir_hash(release: Release, lists: Mapping[str, Sequence[str] | None]) -> str:
    """The IR-op sub-hash (memoised: few distinct priority lists occur in practice)."""
    key = (
        release.version,
        tuple(None if lists.get(op) is None else tuple(lists[op]) for op in release.ir_ops),  # type: ignore[arg-type]
    )
    found = _IR_HASHES.get(key)
    if found is None:
        found = _IR_HASHES[key] = digest(ir_factors(release, lists))
    return found


def ignored_factors(release: Release, values: Mapping[str, Any]) -> set[str]:
    """The fields ``KernelConfig.compute_hash`` leaves out for these values."""
    ignored = set(release.hash_ignored)
    ignored.update(n for n in release.hash_ignored_when_none if values.get(n) is None)
    return ignored


def kernel_factors(release: Release, values: Mapping[str, Any]) -> dict[str, Any]:
    """What ``KernelConfig.compute_hash`` digests; the IR op factor is its sub-hash."""
    ignored = ignored_factors(release, values)
    factors = {
        f.name: normalize_value(values[f.name])
        for f in release.kernel_fields
        if f.name not in ignored
    }
    factors["ir_op_priority"] = ir_hash(release, values["ir_op_priority"])
    return factors

"""vLLM's kernel-config hash (a factor of the compile-cache key), reproduced: canonical
values, factors, digest.

Every function here is pure; the IR-op factor of one set of lists is cached (few
distinct lists occur), nothing else is kept. How a release hashes is data: its file
names a scheme of :data:`SCHEMES`, one small function each. The two steps are kept apart
so that the factors can be shown to a person (``hash_factors``) and digested exactly as
vLLM does (``digest``): ``sha256(json.dumps(factors, sort_keys=True))`` with ``json``'s
default separators.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from kernelcfg.base.answers import Answers
from kernelcfg.base.errors import UnknownProviderError
from kernelcfg.base.json_text import canonical

if TYPE_CHECKING:
    from kernelcfg.vllm.releases import Release

__all__ = [
    "SCHEMES",
    "SCHEME_WORDS",
    "digest",
    "ignored_factors",
    "ir_factors",
    "ir_hash",
    "kernel_factors",
    "kernel_hash",
    "normalize_value",
]


def normalize_value(value: Any) -> Any:
    """Return the canonical, JSON-ready form vLLM hashes for ``value``.

    Primitives pass through; a mapping becomes a sorted sequence of ``(str(key),
    value)`` pairs; a set becomes the sorted ``repr`` of its members; any other
    sequence keeps its order and duplicates. Lists come back as lists (JSON arrays),
    which is what vLLM's tuples turn into once dumped.
    """
    if value is None or type(value) in _PRIMITIVES:
        return value
    if isinstance(value, bool | int | float | str):  # a subclass
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


_PRIMITIVES = frozenset({bool, int, float, str})


def _frozen(value: Any) -> Any:
    """Lists as tuples, so that ``repr`` matches vLLM's tuple-based canonical form."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def digest(factors: Mapping[str, Any]) -> str:
    """SHA-256 hex digest of ``factors`` as vLLM's ``hash_factors`` computes it."""
    return hashlib.sha256(canonical(factors).encode()).hexdigest()


def _digest_with(factors: Mapping[str, Any], encoded: Mapping[str, str]) -> str:
    """:func:`digest`, where the values of ``encoded``'s keys are given as their canonical
    JSON already (the same text ``json.dumps(factors, sort_keys=True)`` writes).

    The factors are encoded with ``0`` standing in for those values, which are then put
    in place: the first ``"key": 0`` is the top-level key's, as no other factor holds a
    mapping (:func:`normalize_value` makes them lists of pairs) and strings escape ``"``.
    """
    text = canonical({**factors, **dict.fromkeys(encoded, 0)})
    for key, value in encoded.items():
        name = canonical(key)
        text = text.replace(f"{name}: 0", f"{name}: {value}", 1)
    return hashlib.sha256(text.encode()).hexdigest()


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


@dataclass(frozen=True)
class _IrFactor:
    """The IR-op factor of one set of lists, and its canonical JSON."""

    factors: dict[str, Any]
    """What :func:`ir_factors` gives (shared: never changed)."""
    text: str
    """``json.dumps(factors, sort_keys=True)``."""


@lru_cache(maxsize=256)
def _ir_factor(release: Release, lists: tuple[tuple[str, ...] | None, ...]) -> _IrFactor:
    """The nested IR-op factor of ``lists`` (one per op, in op order), made and encoded
    once: few distinct lists occur, and making and encoding the provider uuids again was
    about a tenth of a batch line's cost (``make bench``)."""
    factors = ir_factors(release, dict(zip(release.ir_ops, lists, strict=True)))
    return _IrFactor(factors, canonical(factors))


def _ir_key(
    release: Release, lists: Mapping[str, Sequence[str] | None]
) -> tuple[tuple[str, ...] | None, ...]:
    return tuple(None if lists.get(op) is None else tuple(lists[op]) for op in release.ir_ops)  # type: ignore[arg-type]


@lru_cache(maxsize=256)
def _ir_hash(release: Release, lists: tuple[tuple[str, ...] | None, ...]) -> str:
    """The IR-op sub-hash of ``lists`` (one per op, in op order)."""
    return hashlib.sha256(_ir_factor(release, lists).text.encode()).hexdigest()


def ir_hash(release: Release, lists: Mapping[str, Sequence[str] | None]) -> str:
    """``IrOpPriorityConfig.compute_hash()``: the digest of :func:`ir_factors`."""
    return _ir_hash(release, _ir_key(release, lists))


def ignored_factors(release: Release, values: Mapping[str, Any]) -> set[str]:
    """The fields the release's kernel-config hash leaves out for these values."""
    ignored = set(release.hash_ignored)
    ignored.update(n for n in release.hash_ignored_when_none if values.get(n) is None)
    return ignored


_Factors = tuple[dict[str, Any], dict[str, str]]
"""A scheme's factors, and the canonical JSON of those values it has already encoded."""


@cache
def _hashed(release: Release) -> tuple[tuple[str, bool], ...]:
    """Each field the hash may digest, the IR-op priority aside, in declaration order,
    and whether it is left out while ``None``: read once per release."""
    return tuple(
        (f.name, f.name in release.hash_ignored_when_none)
        for f in release.kernel_fields
        if f.name not in release.hash_ignored and f.name != release.ir_field
    )


def _fields(release: Release, values: Mapping[str, Any]) -> dict[str, Any]:
    """The fields' canonical values, less those the hash ignores and the IR-op priority."""
    out: dict[str, Any] = {}
    for name, skip_none in _hashed(release):
        value = values[name]
        if value is None and skip_none:
            continue
        out[name] = value if type(value) in _PRIMITIVES else normalize_value(value)
    return out


def _compute_hash_factors(release: Release, values: Mapping[str, Any]) -> _Factors:
    """vLLM 0.29.0-0.33.0, ``KernelConfig.compute_hash()``: the fields, with the
    IR-op priority as the hex digest of its own factors (a sub-hash)."""
    factors = _fields(release, values)
    if release.ir_field is not None:
        factors[release.ir_field] = ir_hash(release, values[release.ir_field])
    return factors, {}


def _hash_config_factors(release: Release, values: Mapping[str, Any]) -> _Factors:
    """vLLM 0.34.0 on, ``hash_config(cfg)`` over ``cfg.compile_factors()``: the fields,
    with the IR-op priority (while the release has it) as its nested factor dict."""
    factors = _fields(release, values)
    ir = release.ir_field
    if ir is None:
        return factors, {}
    found = _ir_factor(release, _ir_key(release, values[ir]))
    factors[ir] = found.factors
    return factors, {ir: found.text}


SCHEMES: dict[str, Callable[[Release, Mapping[str, Any]], _Factors]] = {
    "compute_hash": _compute_hash_factors,
    "hash_config": _hash_config_factors,
}
"""How a release hashes its kernel config, by the name its data file gives."""


SCHEME_WORDS = {
    "compute_hash": "KernelConfig.compute_hash(): sha256 of the kernel config's factors, "
    "with ir_op_priority as the hex digest of its own factors",
    "hash_config": "the kernel config is no longer hashed on its own; kernelcfg reports "
    "sha256 of its compile factors, the value under `kernel` in vLLM's compile-cache key "
    "(ir_op_priority, while the release has it, enters as its lists plus provider uuids)",
}
"""Each scheme in words, for ``versions`` and the docs."""


def kernel_factors(release: Release, values: Mapping[str, Any]) -> dict[str, Any]:
    """Exactly what the release digests for a kernel config (its hash scheme's factors),
    the caller's own to change (the cached IR-op factor is copied)."""
    factors = SCHEMES[release.hash_scheme](release, values)[0]
    ir = release.ir_field
    if ir is not None and isinstance(factors.get(ir), dict):
        factors[ir] = copy.deepcopy(factors[ir])
    return factors


def kernel_hash(release: Release, values: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """:func:`kernel_factors` and their :func:`digest`, made together (the parts the
    scheme has already encoded are not encoded again). Equal configurations get the
    same answer, made once: a batch repeats them (the bench's 20,000 lines hold 8,384),
    so the factors are shared (read them, never change them)."""
    try:
        key = _values_key(release, values)
        found = _HASHES.find(key)
    except TypeError:  # a mapping among the values (linear_backend_per_quant): not kept
        return _kernel_hash(release, values)
    if found is None:
        found = _kernel_hash(release, values)
        _HASHES.keep(key, found)
    return found


_HASHES: Answers[tuple[object, ...], tuple[dict[str, Any], str]] = Answers(8192)
"""The factors and digest of each configuration already hashed, by what the hash reads."""


def _values_key(release: Release, values: Mapping[str, Any]) -> tuple[object, ...]:
    """What the hash reads of ``values`` (unhashable where a value is a mapping)."""
    names, ir = _key_plan(release)
    fields = tuple(map(values.__getitem__, names))
    if ir is None:
        return (release, fields)
    return (release, fields, _ir_key(release, values[ir]))


@cache
def _key_plan(release: Release) -> tuple[tuple[str, ...], str | None]:
    """The fields :func:`_values_key` reads (in order) and the IR-op priority field."""
    return tuple(name for name, _ in _hashed(release)), release.ir_field


def _kernel_hash(release: Release, values: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    factors, encoded = SCHEMES[release.hash_scheme](release, values)
    return factors, _digest_with(factors, encoded)

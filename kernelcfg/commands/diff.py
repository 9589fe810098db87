"""Why two configurations hash differently: the kernel-config hash factors that differ,
the fields that differ but cannot explain a compile-cache miss, and (through
``commands.cache_key``, the engine of ``cache explain``) the env and config parts of the
compile-cache key that differ.

A side is a set of vLLM flags, a ``--config`` YAML file, or a saved
``kernelcfg resolve --format json`` output. Context flags (target, release,
environment) given to the command apply to both flag sides.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kernelcfg.base.bounded import loads_json, one_line, read_text, shown
from kernelcfg.base.errors import ArgumentError
from kernelcfg.commands.pipeline import Failure, resolve_args
from kernelcfg.vllm import releases
from kernelcfg.vllm.compile_cache.key import CacheKey
from kernelcfg.vllm.kernel_config import attention as attention_config

__all__ = ["Side", "compare", "load_side"]


@dataclass(frozen=True)
class Side:
    """One resolved configuration, as much of it as a diff needs."""

    label: str
    """What the user gave (flags, a file)."""
    vllm_version: str
    """The release it was resolved for."""
    platform: dict[str, Any] | None
    """The target."""
    kernel_config: dict[str, Any]
    """Every resolved field."""
    hash: str
    """The kernel-config hash."""
    hash_factors: dict[str, Any]
    """What was hashed."""
    attention_config: dict[str, Any] | None = None
    """The attention config (the release's defaults where none was given)."""
    attention_hash: str | None = None
    """Its hash; ``None`` where the release or the saved output has none."""
    cache_key: CacheKey | None = None
    """The launch's compile-cache key parts (env and config); ``None`` for a saved
    output that holds none."""


MAX_SAVED_BYTES = 2 * 1024 * 1024
"""The largest saved resolve ``diff`` reads (a resolve with a model's walks is ~11 KB)."""
MAX_FACTORS = 10_000
"""The most hash factors (and kernel-config fields) a saved resolve may hold."""


_SAVED_SHAPE: dict[str, type | tuple[type, ...]] = {
    "vllm_version": str,
    "kernel_config": dict,
    "hash": str,
    "hash_factors": dict,
}


def _from_saved(path: str) -> Side:
    what = f"saved resolve {shown(path)}"
    data = loads_json(read_text(path, "diff", limit=MAX_SAVED_BYTES), what)
    if not isinstance(data, dict):
        raise ArgumentError(f"{what} is not a `kernelcfg resolve --format json` output")
    for key, kind in _SAVED_SHAPE.items():
        if not isinstance(data.get(key), kind):
            raise ArgumentError(
                f"{what}: {key!r} is missing or not a {getattr(kind, '__name__', kind)}; "
                "save it with `kernelcfg resolve --format json` (a line without a hash "
                "cannot be compared)"
            )
    if len(data["hash_factors"]) > MAX_FACTORS or len(data["kernel_config"]) > MAX_FACTORS:
        raise ArgumentError(
            f"{what}: {len(data['hash_factors']):,} hash factors and "
            f"{len(data['kernel_config']):,} fields; a saved resolve has at most "
            f"{MAX_FACTORS:,} of each (vLLM's kernel config has a few dozen)"
        )
    _check_ir_lists(data["kernel_config"], what)
    platform = data.get("platform")
    attention = data.get("attention_config")
    found = attention_config.facts(data["vllm_version"]) if attention is None else None
    hashed = data.get("attention_hash")
    return Side(
        path,
        data["vllm_version"],
        platform if isinstance(platform, dict) else None,
        data["kernel_config"],
        data["hash"],
        data["hash_factors"],
        attention if isinstance(attention, dict) else (found.defaults if found else None),
        hashed if isinstance(hashed, str) else None,
        _saved_key(data.get("compile_cache"), data["vllm_version"]),
    )


def _saved_key(saved: Any, version: str) -> CacheKey | None:
    """The key parts a saved resolve's ``compile_cache`` holds, if any."""
    from kernelcfg.commands.cache_key import key_scheme

    if not isinstance(saved, dict):
        return None
    env = saved.get("env_factors")
    parts = saved.get("config_parts")
    factors = saved.get("config_factors")
    config_hash = saved.get("config_hash")
    return CacheKey(
        key_scheme(version),
        env_factors=env if isinstance(env, dict) else None,
        config_factors=factors if isinstance(factors, dict) else None,
        config_parts=parts if isinstance(parts, dict) else {},
        config_hash=config_hash if isinstance(config_hash, str) else None,
        version=version,
    )


def _check_ir_lists(config: dict[str, Any], what: str) -> None:
    """Refuse a saved output whose IR-op lists are not lists of provider names."""
    lists = config.get("ir_op_priority")
    if lists is None:
        return
    if not isinstance(lists, dict):
        raise ArgumentError(f"{what}: 'kernel_config.ir_op_priority' is not an object")
    for op, providers in lists.items():
        if providers is not None and not (
            isinstance(providers, list) and all(isinstance(p, str) for p in providers)
        ):
            raise ArgumentError(
                f"{what}: 'kernel_config.ir_op_priority.{one_line(op)[:100]}' is not a list of "
                f"provider names: {shown(providers)}"
            )


def load_side(spec: str, common: Sequence[str] = ()) -> Side:
    """Resolve one side: a saved JSON output, a YAML config file, or flags."""
    if spec.endswith(".json") and not spec.startswith("-"):
        return _from_saved(spec)
    if spec.endswith((".yaml", ".yml")) and not spec.startswith("-"):
        args = [*common, "--config", spec]
    else:
        try:
            args = [*common, *shlex.split(spec)]
        except ValueError as exc:
            raise ArgumentError(f"{shown(spec)}: cannot split into flags ({exc})") from None
    result = resolve_args(args)
    if isinstance(result, Failure):
        raise ArgumentError(f"{shown(spec)}: {result.problem.message}")
    if result.hash is None or result.hash_factors is None or result.kernel_config is None:
        reason = next((p.message for p in result.problems if p.severity == "error"), "")
        raise ArgumentError(f"{shown(spec)} has no hash: {reason}")
    import os

    from kernelcfg.commands.cache_key import launch_key

    found = attention_config.facts(result.release.version)
    attention = result.attention
    key, notes = launch_key(result, os.environ)
    if notes.get("refused"):
        refused = notes["refused"]
        raise ArgumentError(
            f"{shown(spec)}: vLLM refuses this launch while building its config "
            f"({refused['kind']}: {refused['message']})"
        )
    return Side(
        spec,
        result.release.version,
        result.target.as_dict(),
        result.kernel_config,
        result.hash,
        result.hash_factors,
        (attention.config or (found.defaults if found else None)) if attention else None,
        attention.hash if attention else None,
        key,
    )


def _ir_lists(config: dict[str, Any]) -> dict[str, list[str]]:
    """The IR-op lists of a side (none where the release has no IR-op priority)."""
    found = config.get("ir_op_priority")
    if not isinstance(found, dict):
        return {}
    return {op: lst for op, lst in found.items() if isinstance(lst, list)}


def _ir_detail(a: Side, b: Side) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """IR lists that differ, and providers whose implementation file differs."""
    lists_a = _ir_lists(a.kernel_config)
    lists_b = _ir_lists(b.kernel_config)
    lists = [
        {"op": op, "a": lists_a.get(op), "b": lists_b.get(op)}
        for op in dict.fromkeys([*lists_a, *lists_b])
        if lists_a.get(op) != lists_b.get(op)
    ]
    rel_a, rel_b = releases.load(a.vllm_version), releases.load(b.vllm_version)
    files = []
    for op in dict.fromkeys([*lists_a, *lists_b]):
        for provider in dict.fromkeys([*(lists_a.get(op) or []), *(lists_b.get(op) or [])]):
            pa, pb = rel_a.providers(op).get(provider), rel_b.providers(op).get(provider)
            if pa and pb and pa["uuid"] != pb["uuid"]:
                files.append(
                    {
                        "op": op,
                        "provider": provider,
                        "file": pb["file"],
                        "a": pa["uuid"],
                        "b": pb["uuid"],
                    }
                )
    return lists, files


def _attention_differences(a: Side, b: Side) -> list[dict[str, Any]]:
    """The attention-config fields that differ (every field enters its hash)."""
    left, right = a.attention_config or {}, b.attention_config or {}
    return [
        {"field": key, "a": left.get(key), "b": right.get(key)}
        for key in dict.fromkeys([*left, *right])
        if left.get(key) != right.get(key)
    ]


MAX_ROWS = 1000
"""The most rows of each kind of difference a diff lists (``omitted`` counts the rest)."""
_NAMED = 10
"""The most field names the summary line names."""


def _names(rows: list[dict[str, Any]]) -> str:
    """The differing fields, for the summary line: the first few, then how many more."""
    names = ", ".join(one_line(str(row["field"]))[:100] for row in rows[:_NAMED])
    return names + (f" and {len(rows) - _NAMED:,} more" if len(rows) > _NAMED else "")


def compare(a: Side, b: Side) -> dict[str, Any]:
    """The difference between two sides, as data."""
    hashed = [
        {"field": key, "a": a.hash_factors.get(key), "b": b.hash_factors.get(key)}
        for key in dict.fromkeys([*a.hash_factors, *b.hash_factors])
        if a.hash_factors.get(key) != b.hash_factors.get(key)
    ]
    hashed_names = set(a.hash_factors) | set(b.hash_factors)
    not_hashed = [
        {"field": key, "a": a.kernel_config.get(key), "b": b.kernel_config.get(key)}
        for key in dict.fromkeys([*a.kernel_config, *b.kernel_config])
        if key not in hashed_names and a.kernel_config.get(key) != b.kernel_config.get(key)
    ]
    ir_lists, ir_files = _ir_detail(a, b)
    same = a.hash == b.hash
    attention = _attention_differences(a, b)
    same_attention = a.attention_hash == b.attention_hash
    if same:
        why = (
            "same kernel-config and attention hashes (the rest of the compile-cache key "
            "is not compared)"
            if same_attention
            else "same kernel-config hash"
        )
    elif hashed:
        why = "the kernel-config hash differs because of: " + _names(hashed)
    else:
        why = "the kernel-config hash differs"
    if not same_attention:
        why += "; the attention hash differs" + (
            " because of: " + _names(attention) if attention else ""
        )
    cache = _cache_part(a, b)
    if cache["same"] is True and same and same_attention:
        why = (
            "same kernel-config and attention hashes and the same launch-dependent "
            "compile-cache key (env and config parts; the code and compiler parts are the "
            "install's)"
        )
    elif cache["same"] is False:
        if same and same_attention:
            why = "same kernel-config and attention hashes"
        why += "; the compile-cache key differs: " + _cache_summary(cache["findings"])
    elif same and same_attention:
        why += "; compile-cache key not compared: " + cache["why"]
    lists = {
        "hashed_differences": hashed,
        "ir_op_priority_lists": ir_lists,
        "ir_provider_files": ir_files,
        "attention_differences": attention,
        "not_hashed_differences": not_hashed,
    }
    return {
        "same_hash": same,
        "same_attention_hash": same_attention,
        "same_compile_cache_key": cache["same"],
        "summary": why,
        "compile_cache": cache,
        "a": {
            "label": a.label,
            "vllm_version": a.vllm_version,
            "platform": a.platform,
            "hash": a.hash,
            "attention_hash": a.attention_hash,
        },
        "b": {
            "label": b.label,
            "vllm_version": b.vllm_version,
            "platform": b.platform,
            "hash": b.hash,
            "attention_hash": b.attention_hash,
        },
        **{key: rows[:MAX_ROWS] for key, rows in lists.items()},
        "omitted": {
            key: len(rows) - MAX_ROWS for key, rows in lists.items() if len(rows) > MAX_ROWS
        },
        "note": (
            "fields outside the hash cannot explain a compile-cache miss" if not_hashed else None
        ),
    }


def _cache_summary(findings: list[dict[str, Any]]) -> str:
    """The differing parts of the key in a few words: another release, or how many
    differences each part has and the first few names."""
    if any(f["part"] == "scheme" for f in findings):
        release = next(f for f in findings if f["part"] == "scheme")
        return f"another vLLM release ({release['a']} vs {release['b']})"
    counts: dict[str, int] = {}
    for found in findings:
        counts[found["part"]] = counts.get(found["part"], 0) + 1
    parts = ", ".join(f"{part} {count}" for part, count in counts.items())
    names = ", ".join(one_line(str(f["what"]))[:100] for f in findings[:_NAMED])
    more = f" and {len(findings) - _NAMED:,} more" if len(findings) > _NAMED else ""
    return f"{parts} ({names}{more})"


def _cache_part(a: Side, b: Side) -> dict[str, Any]:
    """The env and config parts of the compile-cache key compared (``cache explain``'s
    engine): ``same`` is ``None`` when a side lacks them."""
    from kernelcfg.commands.cache_key import finding_data
    from kernelcfg.vllm.compile_cache.key import differences

    ka, kb = a.cache_key, b.cache_key
    if ka is None or kb is None:
        return {"same": None, "findings": [], "why": "a saved side holds no compile_cache"}
    missing = [
        f"{part} ({side})"
        for side, key in (("A", ka), ("B", kb))
        for part in ("env", "config")
        if part in key.unknown and not (part == "config" and key.config_parts)
    ]
    found = [finding_data(f) for f in differences(ka, kb)]
    if found:
        return {"same": False, "findings": found[:MAX_ROWS], "why": None}
    if missing:
        return {"same": None, "findings": [], "why": "unknown " + ", ".join(missing)}
    return {"same": True, "findings": [], "why": None}

"""The releases kernelcfg knows, and what changed in the kernel config between two."""

from __future__ import annotations

from typing import Any

from kernelcfg.vllm import releases
from kernelcfg.vllm.kernel_config.hashing import SCHEME_WORDS

__all__ = ["compare", "summary"]


def summary() -> list[dict[str, Any]]:
    """One row per known release: its fields, choice counts and IR ops, and the user's
    folder its data comes from (``None``: kernelcfg's own)."""
    rows = []
    for version in releases.known_versions():
        release = releases.load(version)
        rows.append(
            {
                "version": version,
                "fields": [f.name for f in release.kernel_fields],
                "ir_ops": list(release.ir_ops),
                "choices": {name: len(values) for name, values in release.data["choices"].items()},
                "hashed_fields": list(release.hashed_fields),
                "hash_scheme": release.hash_scheme,
                "data_from": releases.data_source(version),
            }
        )
    return rows


def _added_removed(old: Any, new: Any) -> dict[str, list[Any]]:
    old_set, new_set = set(old), set(new)
    return {
        "added": [x for x in new if x not in old_set],
        "removed": [x for x in old if x not in new_set],
    }


def _fields(a: releases.Release, b: releases.Release) -> dict[str, Any]:
    old = {f.name: f for f in a.kernel_fields}
    new = {f.name: f for f in b.kernel_fields}
    changed = []
    for name in old.keys() & new.keys():
        before, after = old[name], new[name]
        for attr in ("kind", "default", "choices", "nullable"):
            if getattr(before, attr) != getattr(after, attr):
                changed.append(
                    {
                        "field": name,
                        "what": attr,
                        "old": getattr(before, attr),
                        "new": getattr(after, attr),
                    }
                )
    return {**_added_removed(list(old), list(new)), "changed": sorted(changed, key=str)}


def _providers(a: releases.Release, b: releases.Release) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for op in dict.fromkeys([*a.ir_ops, *b.ir_ops]):
        old, new = a.providers(op), b.providers(op)
        changed = [
            {
                "provider": p,
                "file": new[p]["file"],
                "old_uuid": old[p]["uuid"],
                "new_uuid": new[p]["uuid"],
            }
            for p in old.keys() & new.keys()
            if old[p]["uuid"] != new[p]["uuid"]
        ]
        entry = {**_added_removed(list(old), list(new)), "uuid_changed": sorted(changed, key=str)}
        if any(entry.values()):
            out[op] = entry
    return out


def compare(old_version: str, new_version: str) -> dict[str, Any]:
    """What changed in the kernel config from one release to another."""
    a, b = releases.load(old_version), releases.load(new_version)
    choices = {}
    for name in dict.fromkeys([*a.data["choices"], *b.data["choices"]]):
        diff = _added_removed(a.choices(name), b.choices(name))
        if diff["added"] or diff["removed"]:
            choices[name] = diff
    constants = {
        k: {"old": a.constant(k), "new": b.constant(k)}
        for k in dict.fromkeys([*a.data["constants"], *b.data["constants"]])
        if a.constant(k) != b.constant(k)
    }
    functions = {
        k: {"old": a.data["functions"].get(k), "new": b.data["functions"].get(k)}
        for k in dict.fromkeys([*a.data["functions"], *b.data["functions"]])
        if a.data["functions"].get(k) != b.data["functions"].get(k)
    }
    platform_rules = sorted(
        kind
        for kind in a.rules["ir_defaults"].keys() | b.rules["ir_defaults"].keys()
        if a.rules["ir_defaults"].get(kind) != b.rules["ir_defaults"].get(kind)
    )
    scheme = None
    if a.hash_scheme != b.hash_scheme:
        scheme = {"old": a.hash_scheme, "new": b.hash_scheme, "means": SCHEME_WORDS[b.hash_scheme]}
    return {
        "old": a.version,
        "new": b.version,
        "hash_scheme": scheme,
        "fields": _fields(a, b),
        "choices": choices,
        "hash_inputs": {
            **_added_removed(a.hashed_fields, b.hashed_fields),
            "ignored_when_none": _added_removed(
                sorted(a.hash_ignored_when_none), sorted(b.hash_ignored_when_none)
            ),
        },
        "ir_ops": _added_removed(list(a.ir_ops), list(b.ir_ops)),
        "ir_providers": _providers(a, b),
        "constants": constants,
        "functions": functions,
        "platform_ir_defaults_changed": platform_rules,
        "environment": {
            **_added_removed(sorted(a.envs), sorted(b.envs)),
            "refused": sorted(b.refused_envs - a.refused_envs),
        },
    }

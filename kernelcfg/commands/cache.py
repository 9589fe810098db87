"""``cache explain``: what separates two compile-cache keys. A side is a cache folder,
a ``cache_key_factors.json``, or a launch (flags or a ``vllm serve`` line)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from typing import Any

from kernelcfg.base.bounded import shown
from kernelcfg.base.errors import ArgumentError
from kernelcfg.commands.cache_key import finding_data, launch_key
from kernelcfg.commands.pipeline import Failure, Request, resolve_args
from kernelcfg.vllm.compile_cache.key import (
    FACTORS_FILE,
    CacheKey,
    differences,
    read_factors_file,
)

__all__ = ["explain", "load_side"]


def load_side(spec: str, common: Sequence[str], request: Request) -> tuple[CacheKey, str]:
    """One side of ``cache explain``: a cache folder or factors file, else a launch
    (flags or a ``vllm serve`` line, with the context flags ``common``); and its label."""
    if os.path.exists(spec):
        found = read_factors_file(spec)
        return found, found.source
    if _looks_like_path(spec):
        raise ArgumentError(
            f"{shown(spec)}: no such cache folder or {FACTORS_FILE} (a launch is flags or a "
            "quoted `vllm serve` line)",
            field="cache",
        )
    try:
        words = shlex.split(spec)
    except ValueError as exc:
        raise ArgumentError(f"{shown(spec)}: cannot split into words ({exc})") from None
    serve = next((i for i in range(len(words) - 1) if words[i : i + 2] == ["vllm", "serve"]), None)
    if serve is not None:  # kernelcfg's options for this side, then the vllm serve line
        words = [*common, *words[:serve], "--", *words[serve:]]
    else:
        words = [*common, *words]
    result = resolve_args(words, request)
    if isinstance(result, Failure):
        raise ArgumentError(f"{shown(spec)}: {result.problem.message}")
    key, notes = launch_key(result, request.process_environ)
    if notes.get("refused"):
        raise ArgumentError(
            f"{shown(spec)}: vLLM refuses this launch while building its config "
            f"({notes['refused']['kind']}: {notes['refused']['message']})"
        )
    return key, f"launch {spec}"


def _looks_like_path(spec: str) -> bool:
    """Whether a side is written as a path (one word, a folder or a ``.json`` file),
    not as a launch."""
    if not spec or spec.startswith("-") or any(char.isspace() for char in spec):
        return False
    return spec.startswith(("/", "./", "../", "~")) or spec.endswith((".json", "/"))


def explain(a: tuple[CacheKey, str], b: tuple[CacheKey, str]) -> dict[str, Any]:
    """What separates two keys: ``same`` (every part known on both sides is equal),
    ``findings``, and the parts that could not be compared."""
    (ka, la), (kb, lb) = a, b
    found = differences(ka, kb)
    unknown = sorted(set(ka.unknown) | set(kb.unknown))
    return {
        "a": {"label": la, "key": ka.key, "unknown": ka.unknown},
        "b": {"label": lb, "key": kb.key, "unknown": kb.unknown},
        "same": not found,
        "same_key": ka.key is not None and ka.key == kb.key,
        "compared": [p for p in ("env", "config", "code", "compiler") if p not in unknown],
        "not_compared": unknown,
        "findings": [finding_data(f) for f in found],
    }

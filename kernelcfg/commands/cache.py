"""``cache explain``: what separates two compile-cache keys. A side is a cache folder,
a ``cache_key_factors.json``, or a launch (flags or a ``vllm serve`` line)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from typing import Any

from kernelcfg.base.bounded import loads_json, read_text, shown
from kernelcfg.base.errors import ArgumentError
from kernelcfg.commands.cache_key import finding_data, launch_key
from kernelcfg.commands.diff import MAX_SAVED_BYTES
from kernelcfg.commands.diff import load_side as load_diff_side
from kernelcfg.commands.pipeline import Failure, Request, resolve_args
from kernelcfg.vllm.compile_cache.key import (
    FACTORS_FILE,
    CacheKey,
    differences,
    read_factors_file,
)

__all__ = ["explain", "load_side"]


def load_side(spec: str, common: Sequence[str], request: Request) -> tuple[CacheKey, str]:
    """One side of ``cache explain``: a cache folder or factors file; a saved
    ``resolve --format json`` output or a ``--config`` YAML file (as ``diff`` takes
    them); else a launch (flags or a ``vllm serve`` line, with the context flags
    ``common``); and its label."""
    if os.path.isfile(spec) and spec.endswith((".yaml", ".yml")):
        return _launch([*common, "--config", spec], spec, request), f"config {spec}"
    if os.path.isfile(spec) and spec.endswith(".json") and not _is_factors_file(spec):
        return _saved(spec), f"saved resolve {spec}"
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
    return _launch(words, spec, request), f"launch {spec}"


def _launch(words: list[str], spec: str, request: Request) -> CacheKey:
    """The key parts of a launch resolved from ``words``."""
    result = resolve_args(words, request)
    if isinstance(result, Failure):
        raise ArgumentError(f"{shown(spec)}: {result.problem.message}")
    key, notes = launch_key(result, request.process_environ)
    if notes.get("refused"):
        raise ArgumentError(
            f"{shown(spec)}: vLLM refuses this launch while building its config "
            f"({notes['refused']['kind']}: {notes['refused']['message']})"
        )
    return key


def _is_factors_file(path: str) -> bool:
    """Whether a ``.json`` file is one vLLM wrote into a cache (its name, or ``env``
    factors at the top), not a saved resolve."""
    if os.path.basename(path) == FACTORS_FILE:
        return True
    try:
        data = loads_json(read_text(path, "cache explain", limit=MAX_SAVED_BYTES), shown(path))
    except ArgumentError:
        return True  # read_factors_file says what is wrong with it
    return isinstance(data, dict) and isinstance(data.get("env"), dict)


def _saved(path: str) -> CacheKey:
    """The key parts a saved ``resolve --format json`` holds (``compile_cache``)."""
    side = load_diff_side(path)
    if side.cache_key is None:
        raise ArgumentError(
            f"saved resolve {shown(path)} holds no compile_cache; save it with a kernelcfg "
            "that writes one (`kernelcfg resolve --format json` with the model)",
            field="cache",
        )
    return side.cache_key


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

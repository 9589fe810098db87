"""The compile-cache key of a resolved launch: ``resolve``'s ``compile_cache`` object.

A launch's key has the env part (``vllm.compile_cache.env``: the engine's environment)
and the config part (``vllm.compile_cache.config``: every sub-config vLLM hashes)
computed here; its code and compiler parts depend on the install and are taken from an
existing cache of that install (``--compile-cache``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, replace
from typing import Any

from kernelcfg.base.answers import LARGE, Answers
from kernelcfg.base.errors import KernelcfgError
from kernelcfg.engine.resolution import Resolution
from kernelcfg.vllm.compile_cache.key import (
    CacheKey,
    Finding,
    differences,
    directory,
    read_factors_file,
)
from kernelcfg.vllm.inputs import Inputs

__all__ = ["compile_cache_of", "finding_data", "key_scheme", "launch_key", "refusal_of"]

STAND_IN: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 32,
    "max_position_embeddings": 131072,
    "vocab_size": 128256,
    "rms_norm_eps": 1e-05,
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
"""A dense model's config.json (Llama 3.1 8B's shape) that stands in for a launch's
model when none is known: two launches of the same unknown model are compared field by
field through it; no hash is given for it."""

_ENV: Answers[tuple[Any, ...], Any] = Answers(256, text=LARGE)
"""The env factors per release, platform and environment already worked out in this
process (a batch's lines mostly share one environment)."""


def key_scheme(version: str) -> str:
    """How release ``version`` builds the key: ``factors`` (the factor dicts themselves,
    in the releases whose configs hash ``compile_factors()``: ``hash_config``) or
    ``hashes`` (a list of four hashes, with ``compute_hash()``)."""
    from kernelcfg.vllm.releases import load

    return "factors" if load(version).hash_scheme == "hash_config" else "hashes"


def _environ(result: Resolution, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment the engine sees: this process's, under the launch's ``--env``."""
    inputs = result.inputs
    return {**environ, **(inputs.env if inputs is not None else {})}


def _started(result: Resolution, engine: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The environment once vLLM has started (its own writes applied), and the
    variables it may write on a condition kernelcfg cannot know here, with why."""
    from kernelcfg.vllm.compile_cache.start_up import Launch, writes

    inputs = result.inputs
    mode = result.sources.get("compilation.mode", "")
    launch = Launch(
        platform=result.target.kind,
        quantized=inputs is not None and inputs.quantization is not None,
        breakable_auto=mode.startswith("breakable CUDA graphs ("),
        host=result.target.host_features,
    )
    found = writes(result.release.version, engine, launch)
    return {**engine, **found.written}, found.unknown


NO_MODEL = (
    "config: no config.json for the model (give a local MODEL folder, --hf-config-path, "
    "or a hub id with --download)"
)
"""Why the config part is unknown when the model's config.json is not known."""
NO_CACHE = "no reference cache of this install (give --compile-cache DIR)"
"""Why the code and compiler parts are unknown without ``--compile-cache``."""


def launch_key(
    result: Resolution, environ: Mapping[str, str], *, env_only: bool = False
) -> tuple[CacheKey, dict[str, Any]]:
    """The key of a resolved launch (env and config parts), and what was found out along
    the way: ``config_parts`` (each sub-config's hash), ``unknown`` (parts or factors not
    computable here, with why), ``refused`` (vLLM's refusal while building its config),
    ``transformers`` (the version that wrote the model's text). ``env_only``: the env
    part alone, the config part unknown for want of the model's config.json."""
    from kernelcfg.vllm.compile_cache.config import ConfigRefusal
    from kernelcfg.vllm.compile_cache.env import EnvInputs, compute

    version = result.release.version
    notes: dict[str, Any] = {"unknown": []}
    engine, unsure = _started(result, _environ(result, environ))
    notes["unknown"] += [f"env {name}: {why}" for name, why in unsure.items()]
    question = (version, result.target.kind, tuple(sorted(engine.items())))
    try:
        env = _ENV.get(
            question, lambda: compute(version, engine, EnvInputs(platform=result.target.kind))
        )
    except KernelcfgError as exc:  # a release without env-factor data
        notes["unknown"].append(f"env: {exc.message}")
        return CacheKey(key_scheme(version), version=version), notes
    notes["unknown"] += [f"env {name}" for name in env.unknown]
    env_known = not env.unknown and not unsure
    key = CacheKey(
        key_scheme(version), env_factors=env.factors if env_known else None, version=version
    )
    if result.inputs is None or env_only:
        notes["unknown"] += [NO_MODEL] if env_only else []
        return key, notes
    inputs = result.inputs
    overridden = inputs.hf_config is not None and _overridden(inputs)
    stand_in = inputs.hf_config is None or overridden
    if stand_in:
        inputs = replace(inputs, hf_config=STAND_IN, model=inputs.model or "stand-in")
    try:
        found = _config(result, inputs, use_transformers=not stand_in)
    except KernelcfgError as exc:  # a release without config-factor data
        notes["unknown"].append(f"config: {exc.message}")
        return key, notes
    if isinstance(found, ConfigRefusal):
        if not stand_in:
            notes["refused"] = {"kind": found.kind, "message": found.text}
        else:
            notes["unknown"].append("config: no config.json for the model")
        return key, notes
    known = {name: part.factors for name, part in found.parts.items() if part.hash is not None}
    if stand_in:
        known.pop("model_config", None)
        why = "--architecture overrides its config.json" if overridden else "no config.json"
        notes["unknown"].append(
            f"config: {why} for the model (fields compared as for a stand-in dense model; no hash)"
        )
        return replace(key, config_known=known), notes
    notes["config_parts"] = {name: part.hash for name, part in found.parts.items()}
    notes["unknown"] += [f"config {why}" for why in found.unknown]
    notes["transformers"] = found.transformers
    key = replace(
        key,
        config_factors=found.config_factors,
        config_parts=notes["config_parts"],
        config_known=known,
        config_hash=found.config_hash,
    )
    return key, notes


def _overridden(inputs: Inputs) -> bool:
    """Whether kernelcfg's ``--architecture`` stands in for the config.json's own: the
    file then does not describe the launch, and its config part is not worked out."""
    return inputs.sources.get("architectures") == "flag"


def _config(result: Resolution, inputs: Inputs, *, use_transformers: bool) -> Any:
    """The config part of ``result``'s launch read from ``inputs`` (``CompileConfig`` or
    ``ConfigRefusal``); raises where the release has no config-factor data."""
    from kernelcfg.vllm.compile_cache.config import compile_config

    return compile_config(
        result.release,
        result.target,
        inputs,
        kernel_config=result.kernel_config,
        attention_config=result.attention.config if result.attention is not None else None,
        use_transformers=use_transformers,
    )


def refusal_of(result: Resolution) -> dict[str, str] | None:
    """vLLM's refusal of the launch while building its config (``kind``, ``message``),
    where the model's config.json is known and kernelcfg's ``--architecture`` does not
    override it; ``None`` where vLLM builds it (or the release has no config data)."""
    from kernelcfg.vllm.compile_cache.config import ConfigRefusal

    inputs = result.inputs
    if inputs is None or inputs.hf_config is None or _overridden(inputs):
        return None
    try:
        found = _config(result, inputs, use_transformers=False)
    except KernelcfgError:
        return None
    if isinstance(found, ConfigRefusal):
        return {"kind": found.kind, "message": found.text}
    return None


def compile_cache_of(
    result: Resolution, environ: Mapping[str, str], cache: str | None
) -> dict[str, Any]:
    """``resolve``'s ``compile_cache`` object: the launch's key parts, and with a cache
    of the install (``cache``) the directory the launch compiles into and whether it
    reuses that cache. Without the model's config.json, the env part alone (the config
    part unknown, and why)."""
    inputs = result.inputs
    env_only = inputs is not None and inputs.hf_config is None
    key, notes = launch_key(result, environ, env_only=env_only)
    unknown = list(notes["unknown"])
    out: dict[str, Any] = {
        "env_hash": key.env_hash,
        "config_hash": key.config_hash,
        "env_factors": key.env_factors,
        "config_parts": notes.get("config_parts"),
        "config_factors": key.config_factors,
        "transformers": notes.get("transformers"),
        "refused": notes.get("refused"),
        "key": None,
        "directory": None,
        "reuses": None,
        "differences": [],
        "unknown": unknown,
    }
    if cache is None:
        out["unknown"] = [
            *unknown,
            f"code: {NO_CACHE}",
            f"compiler: {NO_CACHE}",
        ]
        return out
    existing = read_factors_file(cache)
    full = key.with_install(existing)
    root = _cache_root(existing.source)
    out["key"] = full.key
    out["directory"] = {"jit": directory(full, root) if root else None, "aot": None}
    out["reuses"] = None if full.key is None else full.key == existing.key
    if out["reuses"] is False:
        out["differences"] = [finding_data(f) for f in differences(existing, full)]
    return out


def _cache_root(factors_file: str) -> str | None:
    """``VLLM_CACHE_ROOT`` of a factors file written at
    ``<root>/torch_compile_cache/<key>/rank_R_D/<prefix>/``; ``None`` when laid out
    otherwise."""
    parts = os.path.normpath(factors_file).split(os.sep)
    if len(parts) >= 5 and parts[-5] == "torch_compile_cache":
        return os.sep.join(parts[:-5]) or os.sep
    return None


def finding_data(found: Finding) -> dict[str, Any]:
    """A finding as JSON."""
    return asdict(found)

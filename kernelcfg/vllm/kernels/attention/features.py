"""The selector's inputs, as vLLM derives them: a model's decoder attention layers
(head size, dtype, MLA, sparse, sinks, heads per rank) from its ``config.json`` and the
command line, and a target as the platform the selector sees.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernelcfg.base.answers import LARGE, Answers
from kernelcfg.targets.presets import Target, gfx_capability
from kernelcfg.vllm.inputs import Inputs
from kernelcfg.vllm.kernels.attention.facts import Features, ModelFacts, Platform
from kernelcfg.vllm.kernels.attention.selector import Selector

__all__ = ["features", "features_of", "platform_of"]


_DTYPES = {"half": "float16", "float16": "float16", "bfloat16": "bfloat16", "float": "float32"}
_DTYPES["float32"] = "float32"


def _text_config(hf: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """``hf_text_config``: a multimodal model's ``text_config``, else the config."""
    if hf is None:
        return None
    text = hf.get("text_config")
    return text if isinstance(text, dict) else hf


def _model_dtype(dtype: str, hf: Mapping[str, Any] | None) -> str | None:
    """``--dtype`` as vLLM resolves it (``auto``: the config's, float32 as bfloat16)."""
    if dtype != "auto":
        return _DTYPES.get(dtype)
    if hf is None:
        return None
    found = hf.get("torch_dtype") or hf.get("dtype")
    if found in ("float16", "bfloat16"):
        return str(found)
    return "bfloat16" if found in (None, "float32") else None


def features(  # noqa: PLR0913 - the selector's inputs, each from its own flag
    found: Selector,
    hf_config: Mapping[str, Any] | None,
    architectures: list[str] | None,
    *,
    dtype: str = "auto",
    kv_cache_dtype: str = "auto",
    block_size: int | None = None,
    tensor_parallel_size: int = 1,
    env: Mapping[str, str] | None = None,
    flash_attn_version: int | None = None,
) -> Features:
    """The selector's inputs for a model's decoder attention layers, as vLLM derives them."""
    hf = _text_config(hf_config)
    facts = found.models
    traits = _traits(facts, hf, architectures, env or {})
    head_size: int | None = None
    if hf is not None:
        head_size = _head_size(hf, bool(traits.get("use_mla")))
    heads = hf.get("num_attention_heads") if hf is not None else None
    return Features(
        head_size=head_size,
        dtype=_model_dtype(dtype, hf),
        kv_cache_dtype=kv_cache_dtype,
        block_size=block_size,
        use_mla=traits.get("use_mla"),
        use_sparse=traits.get("use_sparse"),
        has_sink=traits.get("has_sink"),
        num_heads=heads // tensor_parallel_size if isinstance(heads, int) else None,
        hf=hf,
        flash_attn_version=flash_attn_version,
    )


def features_of(found: Selector, inputs: Inputs, flash_attn_version: int | None = None) -> Features:
    """:func:`features` of what a command line says about the model; worked out once per
    config.json file (as read) and flags (a batch names the same model line after line:
    about 4% of such a line, ``make bench``)."""
    if inputs.model_config_key is None:
        return _features_of(found, inputs, flash_attn_version)
    key = (
        found.version,
        inputs.model_config_key,
        None if inputs.architectures is None else tuple(inputs.architectures),
        inputs.dtype,
        inputs.kv_cache_dtype,
        inputs.block_size,
        inputs.tensor_parallel_size,
        tuple(sorted(inputs.env.items())),
        flash_attn_version,
    )
    return _FEATURES.get(key, lambda: _features_of(found, inputs, flash_attn_version))


_FEATURES: Answers[tuple[Any, ...], Features] = Answers(256, text=LARGE)


def _features_of(found: Selector, inputs: Inputs, flash_attn_version: int | None) -> Features:
    return features(
        found,
        inputs.hf_config,
        inputs.architectures,
        dtype=inputs.dtype,
        kv_cache_dtype=inputs.kv_cache_dtype,
        block_size=inputs.block_size,
        tensor_parallel_size=inputs.tensor_parallel_size,
        env=inputs.env,
        flash_attn_version=flash_attn_version,
    )


def _traits(
    facts: ModelFacts,
    hf: Mapping[str, Any] | None,
    architectures: list[str] | None,
    env: Mapping[str, str],
) -> dict[str, bool]:
    """MLA, sparse and sinks: from the config when read, else from the architecture."""
    archs = list(architectures or ()) or list((hf or {}).get("architectures") or ())
    known = next((facts.architectures[a] for a in archs if a in facts.architectures), None)
    traits: dict[str, bool] = dict(known or {})
    if hf is not None:
        traits["use_mla"] = (
            hf.get("model_type") in facts.mla_model_types and hf.get("kv_lora_rank") is not None
        )
        traits["use_sparse"] = traits["use_mla"] and "index_topk" in hf
        traits.setdefault("has_sink", False)
    if traits.get("use_mla") and env.get("VLLM_MLA_DISABLE", "0") not in ("", "0"):
        traits["use_mla"] = traits["use_sparse"] = False
    return traits


def _head_size(hf: Mapping[str, Any], use_mla: bool) -> int | None:
    """``get_head_size``: MLA's latent plus rope dims, else ``head_dim``, else hidden
    size over heads."""
    if use_mla:
        rank, rope = hf.get("kv_lora_rank"), hf.get("qk_rope_head_dim", 0)
        return rank + rope if isinstance(rank, int) and isinstance(rope, int) else None
    head_dim = hf.get("head_dim")
    if isinstance(head_dim, int) and head_dim > 0:
        return head_dim
    hidden, heads = hf.get("hidden_size"), hf.get("num_attention_heads")
    if isinstance(hidden, int) and isinstance(heads, int) and heads > 0:
        return hidden // heads
    return None


def platform_of(
    model: Selector, target: Target, install: str, env: Mapping[str, str] | None = None
) -> Platform:
    """A target as the selector sees it, under one install."""
    capability: tuple[int, int] | None = None
    if target.capability is not None:
        major, _, minor = target.capability.partition(".")
        capability = (int(major), int(minor or 0))
    elif target.gfx_arch is not None:
        capability = gfx_capability(target.gfx_arch)
    return Platform(
        target.kind,
        capability,
        target.device,
        model.libraries(target.kind, install),
        env or {},
        target.gfx_arch,
        target.host_features,
    )

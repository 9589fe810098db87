"""What kernelcfg's config rules model, and what they leave unknown: the options a rule
reads, the parts an option adds, the models whose config hooks are not modelled. An
option that reaches a hashed field no rule derives makes its part unknown instead of a
wrong hash.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernelcfg.vllm.compile_cache.state import Build

__all__ = ["BEYOND_THE_FIELD", "OPTIONAL_PARTS", "RULED", "unmodelled"]

RULED = frozenset(
    {
        "model",
        "model_tag",
        "dtype",
        "max_model_len",
        "quantization",
        "kv_cache_dtype",
        "block_size",
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "data_parallel_size",
        "enable_expert_parallel",
        "all2all_backend",
        "max_num_batched_tokens",
        "max_num_seqs",
        "enable_chunked_prefill",
        "async_scheduling",
        "enforce_eager",
        "compilation_config",
        "cudagraph_capture_sizes",
        "max_cudagraph_capture_size",
        "optimization_level",
        "trust_remote_code",
        "kernel_config",
        "moe_backend",
        "linear_backend",
        "sparse_indexer_topk_backend",
        "ir_op_priority",
        "enable_flashinfer_autotune",
        "monokernel",
        "attention_backend",
        "attention_config",
        "distributed_executor_backend",
    }
)
"""Options a rule (or kernelcfg's kernel and attention configs) reads itself."""

OPTIONAL_PARTS = {
    "enable_lora": "lora_config",
    "speculative_config": "speculative_config",
    "kv_transfer_config": "kv_transfer_config",
    "ec_transfer_config": "ec_transfer_config",
    "engram_config": "engram_config",
    "additional_config": "additional_config",
}
"""Options that make ``create_engine_config`` build a part that is otherwise absent."""

BEYOND_THE_FIELD: dict[str, tuple[str, ...]] = {
    "disable_sliding_window": ("model_config",),
    "hf_overrides": ("model_config",),
    "hf_config_path": ("model_config",),
    "config_format": ("model_config",),
    "runner": ("model_config",),
    "convert": ("model_config",),
    "tokens_only": ("model_config",),
    "enable_eplb": ("parallel_config",),
    "performance_mode": ("scheduler_config", "compilation_config"),
}
"""Options that change more than the field they are passed to (the loaded ``hf_config``,
the length, the runner, the EPLB communicator NIXL decides, the batch and capture sizes
of a performance mode): their parts are unknown when given (a performance mode other
than ``balanced``)."""

_HYBRID_KEYS = (
    "mamba_d_state",
    "ssm_state_size",
    "layers_block_type",
    "hybrid_override_pattern",
    "linear_attn_config",
)
"""config.json keys of hybrid (state-space) models, whose config hooks kernelcfg does not
model."""


def unmodelled(b: Build) -> None:
    """Parts kernelcfg cannot derive for this launch: an option no rule reads that
    reaches a hashed field, a part the launch adds, a hybrid or multimodal model, the
    external launcher's world."""
    if b.options.get("distributed_executor_backend") == "external_launcher":
        b.unknown.setdefault("parallel_config", "the external launcher's world size")
    for dest, value in b.options.items():
        if dest in RULED or value is None or value is False:
            continue
        if dest == "performance_mode" and value == "balanced":
            continue
        flag = f"--{dest.replace('_', '-')}"
        if dest in OPTIONAL_PARTS or dest in BEYOND_THE_FIELD:
            for part in BEYOND_THE_FIELD.get(dest, (OPTIONAL_PARTS.get(dest, ""),)):
                b.unknown.setdefault(part, flag)
            continue
        _unmodelled_option(b, dest)
    text = (b.hf or {}).get("text_config") or b.hf or {}
    if any(key in text for key in _HYBRID_KEYS):
        for part in ("cache_config", "compilation_config", "scheduler_config"):
            b.unknown.setdefault(part, "a hybrid (state-space) model")
    if b.hf is not None and any(k in b.hf for k in ("vision_config", "audio_config")):
        b.unknown.setdefault("model_config", "a multimodal model")


def _unmodelled_option(b: Build, dest: str) -> None:
    """An option outside :data:`RULED`: its part is unknown when it reaches a hashed field that is
    not passed on as given."""
    arg = b.data["engine_args"].get(dest)
    if arg is None:
        return  # not a config field (the server's own options)
    cls, name = arg["owner"]
    if cls == "VllmConfig":
        _whole_sub_config(b, dest, name)
        return
    part = _part_of(b.data, cls)
    if part is None:
        return
    owner, attr = part
    how = b.data["configs"][owner]["hash"]
    hashed = how["kind"] in ("fields", "str_list", "unknown", "elsewhere")
    if how["kind"] == "str_list":
        hashed = owner != cls or name in how["items"]
    elif how["kind"] == "fields" and owner == cls:
        hashed = name not in how.get("ignored", ()) and (
            how.get("only") is None or name in how["only"]
        )
    if hashed and not (arg["passed"] and owner == cls):
        b.unknown.setdefault(attr, f"--{dest.replace('_', '-')} (no rule reads it)")


def _whole_sub_config(b: Build, dest: str, name: str) -> None:
    """A sub-config given whole (``--aux-output-config '{…}'``): its part is unknown
    unless the release hashes that class as nothing."""
    for part in b.data["parts"]:
        if part["attribute"] != name or "class" not in part:
            continue
        how = b.data["configs"][part["class"]]["hash"]
        if how["kind"] != "empty" and not (how["kind"] == "str_list" and not how["items"]):
            b.unknown.setdefault(name, f"--{dest.replace('_', '-')} (no rule reads it)")


def _part_of(data: Mapping[str, Any], cls: str) -> tuple[str, str] | None:
    """The part (class, ``VllmConfig`` attribute) a config class belongs to."""
    for part in data["parts"]:
        if part.get("class") == cls:
            return cls, part["attribute"]
    for part in data["parts"]:
        owner = part.get("class")
        if owner is None or owner not in data["configs"]:
            continue
        for f in data["configs"][owner]["fields"]:
            default = f.get("default")
            nested = f.get("nested") or (
                default[0].rsplit(".", 1)[-1]
                if isinstance(default, list) and default and isinstance(default[0], str)
                else None
            )
            if nested == cls:
                return owner, part["attribute"]
    return None

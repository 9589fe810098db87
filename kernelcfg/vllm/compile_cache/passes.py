"""The fusion passes an optimisation level fills in (``OPTIMIZATION_LEVEL_0N``'s
``pass_config``): a constant, or one of vLLM's functions of the config, written once here
(:data:`LEVEL_RULES`, by the name the release data gives).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernelcfg.vllm.compile_cache.state import Build

__all__ = ["LEVEL_RULES", "custom_op_enabled", "level_defaults"]


def custom_op_enabled(custom_ops: list[str], op: str) -> bool:
    """``CompilationConfig.is_custom_op_enabled``."""
    if "all" in custom_ops:
        return f"-{op}" not in custom_ops
    return f"+{op}" in custom_ops


def _ir_first(b: Build, op: str) -> str | None:
    """The first provider of an IR op's resolved priority list."""
    lists = (b.kernel or {}).get("ir_op_priority") or {}
    found = lists.get(op) or []
    return found[0] if found else None


def _splitting_ops_contain_kv_cache_update(b: Build) -> bool:
    """``splitting_ops_contain_kv_cache_update``: true while the KV-cache update ops will be split
    out."""
    cc = b.cc
    if (
        not cc["use_inductor_graph_partition"]
        and cc["splitting_ops"] is None
        and not cc["pass_config"].get("fuse_attn_quant")
    ):
        return True
    ops = cc["splitting_ops"] or []
    return all(
        op in ops for op in ("vllm::unified_kv_cache_update", "vllm::unified_mla_kv_cache_update")
    )


def _norm_fusion(b: Build) -> bool:
    """``enable_norm_fusion``: the RMS norm or FP8 quant custom op, or a non-native RMS norm
    provider."""
    ops = b.cc["custom_ops"]
    first = _ir_first(b, "rms_norm")
    if b.kernel is None:
        b.unknown.setdefault("compilation_config", "the kernel config (IR op priority)")
    return (
        custom_op_enabled(ops, "rms_norm")
        or custom_op_enabled(ops, "quant_fp8")
        or (first is not None and first != "native")
    )


def _act_fusion(b: Build) -> bool:
    """``enable_act_fusion``: the SiLU-and-mul or FP8 quant custom op, or an NVFP4 model."""
    ops = b.cc["custom_ops"]
    nvfp4 = b.model is not None and _is_nvfp4(b)
    return custom_op_enabled(ops, "silu_and_mul") or custom_op_enabled(ops, "quant_fp8") or nvfp4


def _is_nvfp4(b: Build) -> bool:
    """``ModelConfig.is_nvfp4_quantized``."""
    m = b.model
    assert m is not None
    if m.quantization == "modelopt_fp4":
        return True
    quant = m.quant_config or {}
    return (
        m.quantization == "compressed-tensors" and "nvfp4" in str(quant.get("format", "")).lower()
    )


def _allreduce_fusion(b: Build) -> bool | None:
    """``enable_allreduce_rms_fusion``: tensor parallel on Hopper or Blackwell with FlashInfer
    (ROCm: AITER)."""
    if b.envs("VLLM_BATCH_INVARIANT"):
        return False
    tp = b.pc["tensor_parallel_size"]
    if b.kind == "rocm":
        enabled = b.aiter_enabled()
        return enabled and tp > 1
    return (
        tp > 1
        and b.kind == "cuda"
        and b.has_flashinfer()
        and (b.capability_family(100) or b.capability_is(90))
    )


def _norm_pad_fusion(b: Build) -> bool:
    """``enable_norm_pad_fusion``: AITER's fused add RMS norm on a 2880-wide model."""
    return (
        _ir_first(b, "fused_add_rms_norm") == "aiter"
        and b.model is not None
        and b.model.hidden_size == 2880
    )


def _rope_kvcache_fusion(b: Build) -> bool | None:
    """``enable_rope_kvcache_fusion``: AITER with the RoPE custom op, the KV-cache update not split
    out."""
    enabled = b.aiter_enabled()
    return enabled and (
        custom_op_enabled(b.cc["custom_ops"], "rotary_embedding")
        and (b.cc["use_inductor_graph_partition"] or not _splitting_ops_contain_kv_cache_update(b))
    )


def _rope_kvcache_mla_fusion(b: Build) -> bool:
    """``enable_rope_kvcache_mla_fusion``: the KV-cache update not split out."""
    return bool(
        b.cc["use_inductor_graph_partition"] or not _splitting_ops_contain_kv_cache_update(b)
    )


def _qk_norm_rope_kvcache(b: Build) -> bool | None:
    """``enable_qk_norm_rope_kvcache``: AITER with the RoPE custom op."""
    if not b.aiter_enabled():
        return False
    return custom_op_enabled(b.cc["custom_ops"], "rotary_embedding")


LEVEL_RULES: dict[str, Callable[[Build], Any]] = {
    "enable_norm_fusion": _norm_fusion,
    "enable_act_fusion": _act_fusion,
    "enable_allreduce_rms_fusion": _allreduce_fusion,
    "enable_norm_pad_fusion": _norm_pad_fusion,
    "enable_mla_dual_rms_norm_fusion": lambda b: b.aiter_enabled(),
    "enable_rope_kvcache_fusion": _rope_kvcache_fusion,
    "enable_rope_kvcache_mla_fusion": _rope_kvcache_mla_fusion,
    "enable_qk_norm_rope_kvcache": _qk_norm_rope_kvcache,
}
"""The functions ``OPTIMIZATION_LEVEL_0N`` names, by name (the release data names them)."""


def level_defaults(b: Build) -> None:
    """``_apply_optimization_level_defaults``: every field still ``None`` takes the
    level's value (a function of the config where the table names one)."""
    from kernelcfg.vllm import releases

    table = b.data["levels"][str(b.level)]
    for key, value in table.items():
        if key == "pass_config":
            for flag, default in value.items():
                if flag in b.cc["pass_config"] and b.cc["pass_config"][flag] is None:
                    b.cc["pass_config"][flag] = _level_value(b, default)
        elif key in b.cc and b.cc[key] is None:
            b.cc[key] = _level_value(b, value)
    if b.cc["cudagraph_mode"] is None:
        release = releases.load(b.data["vllm_version"])
        b.cc["cudagraph_mode"] = release.level_defaults(b.level)["cudagraph_mode"]


def _level_value(b: Build, value: Any) -> Any:
    """A level table's value: a constant, or its rule's answer for this launch."""
    if isinstance(value, dict) and "rule" in value:
        rule = LEVEL_RULES.get(value["rule"])
        if rule is None:
            b.unknown.setdefault("compilation_config", f"the -O rule {value['rule']}")
            return None
        return rule(b)
    return value

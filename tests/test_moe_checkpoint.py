"""kernelcfg.vllm.kernels.moe.variant and layer: config.json snippets of well-known MoE checkpoints
(written from their model cards) -> the golden variant and the MoE layer features."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.vllm.checkpoint import quantization_config_of
from kernelcfg.vllm.kernels.moe.layer import moe_model_features
from kernelcfg.vllm.kernels.moe.variant import variant_of

GOLDEN = Path(__file__).resolve().parent / "golden" / "vllm-0.33.0" / "auto-picks-moe.json"

# ------------------------------------------------------------------ model configs

QWEN3_235B: dict[str, Any] = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "model_type": "qwen3_moe",
    "hidden_size": 4096,
    "moe_intermediate_size": 1536,
    "intermediate_size": 12288,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "norm_topk_prob": True,
    "decoder_sparse_step": 1,
    "torch_dtype": "bfloat16",
}
QWEN3_30B: dict[str, Any] = {**QWEN3_235B, "hidden_size": 2048, "moe_intermediate_size": 768}
DEEPSEEK_R1: dict[str, Any] = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "moe_intermediate_size": 2048,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "n_group": 8,
    "topk_group": 4,
    "topk_method": "noaux_tc",
    "scoring_func": "sigmoid",
    "norm_topk_prob": True,
    "routed_scaling_factor": 2.5,
    "first_k_dense_replace": 3,
    "torch_dtype": "bfloat16",
    "quantization_config": {
        "activation_scheme": "dynamic",
        "fmt": "e4m3",
        "quant_method": "fp8",
        "weight_block_size": [128, 128],
    },
}
KIMI_K2: dict[str, Any] = {
    **DEEPSEEK_R1,
    "model_type": "kimi_k2",
    "n_routed_experts": 384,
    "n_group": 1,
    "topk_group": 1,
}
GPT_OSS_120B: dict[str, Any] = {
    "architectures": ["GptOssForCausalLM"],
    "model_type": "gpt_oss",
    "hidden_size": 2880,
    "intermediate_size": 2880,
    "num_local_experts": 128,
    "num_experts_per_tok": 4,
    "swiglu_limit": 7.0,
    "torch_dtype": "bfloat16",
    "quantization_config": {
        "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router"],
        "quant_method": "mxfp4",
    },
}
QWEN3_5_MOE: dict[str, Any] = {
    "architectures": ["Qwen3_5MoeForConditionalGeneration"],
    "model_type": "qwen3_5_moe",
    "text_config": {
        "model_type": "qwen3_5_moe_text",
        "hidden_size": 4096,
        "moe_intermediate_size": 1536,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "dtype": "bfloat16",
    },
    "vision_config": {"depth": 27},
}
DEEPSEEK_V4: dict[str, Any] = {
    "architectures": ["DeepseekV4ForCausalLM"],
    "model_type": "deepseek_v4",
    "hidden_size": 7168,
    "moe_intermediate_size": 2048,
    "n_routed_experts": 256,
    "num_experts_per_tok": 6,
    "scoring_func": "sqrtsoftplus",
    "topk_method": "noaux_tc",
    "norm_topk_prob": True,
    "num_hash_layers": 3,
    "swiglu_limit": 10.0,
    "torch_dtype": "bfloat16",
    "quantization_config": {
        "activation_scheme": "dynamic",
        "fmt": "e4m3",
        "quant_method": "fp8",
        "scale_fmt": "ue8m0",
        "weight_block_size": [128, 128],
    },
}
MIXTRAL: dict[str, Any] = {
    "architectures": ["MixtralForCausalLM"],
    "model_type": "mixtral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "torch_dtype": "bfloat16",
}
LLAMA4_SCOUT: dict[str, Any] = {
    "architectures": ["Llama4ForConditionalGeneration"],
    "model_type": "llama4",
    "text_config": {
        "model_type": "llama4_text",
        "hidden_size": 5120,
        "intermediate_size": 8192,
        "num_local_experts": 16,
        "num_experts_per_tok": 1,
        "interleave_moe_layer_step": 1,
        "torch_dtype": "bfloat16",
    },
}
LLAMA3_DENSE: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
}

# --------------------------------------------------------------- quant configs


def _ct(weights: dict[str, Any], inputs: dict[str, Any] | None, fmt: str) -> dict[str, Any]:
    """A compressed-tensors quantization_config with one Linear group."""
    return {
        "quant_method": "compressed-tensors",
        "format": fmt,
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": weights,
                "input_activations": inputs,
                "format": fmt,
            }
        },
        "ignore": ["lm_head", "re:.*mlp.gate$"],
    }


CT_FP8_DYNAMIC = _ct(
    {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True, "dynamic": False},
    {"num_bits": 8, "type": "float", "strategy": "token", "symmetric": True, "dynamic": True},
    "float-quantized",
)
CT_FP8_STATIC = _ct(
    {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True},
    {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True, "dynamic": False},
    "float-quantized",
)
CT_FP8_BLOCK = _ct(
    {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]},
    {"num_bits": 8, "type": "float", "strategy": "group", "group_size": 128, "dynamic": True},
    "float-quantized",
)
CT_W4A16_G128 = _ct(
    {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True},
    None,
    "pack-quantized",
)
CT_W4A16_G32 = _ct(
    {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 32, "symmetric": True},
    None,
    "pack-quantized",
)
CT_NVFP4 = _ct(
    {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16},
    {
        "num_bits": 4,
        "type": "float",
        "strategy": "tensor_group",
        "group_size": 16,
        "dynamic": "local",
    },
    "nvfp4-pack-quantized",
)
CT_NVFP4A16 = _ct(
    {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16},
    None,
    "nvfp4-pack-quantized",
)
CT_MXFP4 = _ct(
    {"num_bits": 4, "type": "float", "strategy": "group", "group_size": 32},
    None,
    "mxfp4-pack-quantized",
)
CT_MXFP8 = _ct(
    {
        "num_bits": 8,
        "type": "float",
        "strategy": "group",
        "group_size": 32,
        "scale_dtype": "torch.uint8",
    },
    {"num_bits": 8, "type": "float", "strategy": "group", "group_size": 32, "dynamic": True},
    "mxfp8-quantized",
)
CT_W8A8_INT8 = _ct(
    {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True},
    {"num_bits": 8, "type": "int", "strategy": "token", "symmetric": True, "dynamic": True},
    "int-quantized",
)
CT_W4A8_FP8 = _ct(
    {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True},
    {"num_bits": 8, "type": "float", "strategy": "token", "symmetric": True, "dynamic": True},
    "int-quantized",
)
CT_W4A8_INT8 = _ct(
    {"num_bits": 4, "type": "int", "strategy": "channel", "symmetric": True},
    {"num_bits": 8, "type": "int", "strategy": "token", "symmetric": True, "dynamic": True},
    "int-quantized",
)
GPTQ_INT4 = {
    "quant_method": "gptq",
    "bits": 4,
    "group_size": 128,
    "sym": True,
    "desc_act": False,
    "checkpoint_format": "gptq",
}
AWQ_INT4 = {
    "quant_method": "awq",
    "bits": 4,
    "group_size": 128,
    "zero_point": True,
    "version": "gemm",
}
MODELOPT_NVFP4 = {
    "quant_method": "modelopt",
    "quant_algo": "NVFP4",
    "group_size": 16,
    "kv_cache_scheme": None,
    "ignore": ["lm_head"],
    "config_groups": {
        "group_0": {
            "input_activations": {"num_bits": 4, "type": "float", "group_size": 16},
            "weights": {"num_bits": 4, "type": "float", "group_size": 16},
            "targets": ["Linear"],
        }
    },
}
MODELOPT_NVFP4_LEGACY = {
    "producer": {"name": "modelopt", "version": "0.29.0"},
    "quantization": {
        "quant_algo": "NVFP4",
        "kv_cache_quant_algo": None,
        "group_size": 16,
        "exclude_modules": ["lm_head"],
    },
}
MODELOPT_W4A16 = {"quant_method": "modelopt", "quant_algo": "W4A16_NVFP4", "group_size": 16}
MODELOPT_FP8 = {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}
MODELOPT_MXFP8 = {"quant_method": "modelopt", "quant_algo": "MXFP8"}
QUARK_FP8_TENSOR = {
    "quant_method": "quark",
    "global_quant_config": {
        "weight": {"dtype": "fp8_e4m3", "qscheme": "per_tensor", "is_dynamic": False},
        "input_tensors": {"dtype": "fp8_e4m3", "qscheme": "per_tensor", "is_dynamic": False},
    },
}
QUARK_FP8_CHANNEL = {
    "quant_method": "quark",
    "global_quant_config": {
        "weight": {"dtype": "fp8_e4m3", "qscheme": "per_channel", "is_dynamic": False},
        "input_tensors": {"dtype": "fp8_e4m3", "qscheme": "per_channel", "is_dynamic": True},
    },
}


def _quark_mx(inputs: dict[str, Any] | None) -> dict[str, Any]:
    """A Quark OCP-MX MXFP4-weight config."""
    weight = {
        "dtype": "fp4",
        "qscheme": "per_group",
        "group_size": 32,
        "scale_format": "e8m0",
        "is_dynamic": False,
    }
    return {
        "quant_method": "quark",
        "global_quant_config": {"weight": weight, "input_tensors": inputs},
    }


QUARK_W4A16 = _quark_mx(None)
QUARK_W4A4 = _quark_mx(
    {"dtype": "fp4", "qscheme": "per_group", "group_size": 32, "is_dynamic": True}
)
QUARK_W4A8 = _quark_mx(
    {"dtype": "fp8_e4m3", "qscheme": "per_tensor", "symmetric": True, "is_dynamic": False}
)
INC_MXFP4 = {
    "quant_method": "auto-round",
    "data_type": "mx_fp",
    "bits": 4,
    "group_size": 32,
    "sym": True,
}


def _with(cfg: dict[str, Any], quant: dict[str, Any] | None) -> dict[str, Any]:
    """A model config with its quantization_config replaced."""
    out = {k: v for k, v in cfg.items() if k != "quantization_config"}
    if quant is not None:
        out["quantization_config"] = quant
    return out


def _variant(
    hf: dict[str, Any], quantization: str | None = None, tp: int = 1, kind: str | None = None
) -> tuple[str | None, str]:
    """variant_of read the way kernelcfg will call it."""
    return variant_of(
        quantization_config_of(hf),
        quantization,
        hf.get("model_type"),
        tp,
        hf_config=hf,
        platform_kind=kind,
    )


# (model config, --quantization, tp, platform kind, expected variant)
CASES: list[tuple[str, dict[str, Any], str | None, int, str | None, str | None]] = [
    ("bf16", QWEN3_235B, None, 1, None, "unquantized/bf16"),
    ("r1-fp8", DEEPSEEK_R1, None, 8, None, "fp8_block/fp8_config"),
    (
        "qwen3-fp8",
        _with(
            QWEN3_235B,
            {
                "quant_method": "fp8",
                "activation_scheme": "dynamic",
                "weight_block_size": [128, 128],
            },
        ),
        None,
        1,
        None,
        "fp8_block/fp8_config",
    ),
    (
        "fp8-static",
        _with(QWEN3_235B, {"quant_method": "fp8", "activation_scheme": "static"}),
        None,
        1,
        None,
        "fp8_tensor/fp8_config.static",
    ),
    (
        "fp8-dynamic",
        _with(QWEN3_235B, {"quant_method": "fp8", "activation_scheme": "dynamic"}),
        None,
        1,
        None,
        "fp8_tensor/fp8_config.dynamic",
    ),
    ("modelopt-fp8", _with(QWEN3_235B, MODELOPT_FP8), None, 1, None, "fp8_tensor/modelopt"),
    (
        "ct-fp8-static",
        _with(QWEN3_235B, CT_FP8_STATIC),
        None,
        1,
        None,
        "fp8_tensor/compressed_tensors.static",
    ),
    ("online-fp8", QWEN3_235B, "fp8", 1, None, "fp8_tensor/online"),
    ("online-fp8-per-tensor", QWEN3_235B, "fp8_per_tensor", 1, None, "fp8_tensor/online"),
    ("quark-fp8-tensor", _with(QWEN3_235B, QUARK_FP8_TENSOR), None, 1, None, "fp8_tensor/quark"),
    (
        "ct-fp8-dynamic",
        _with(QWEN3_235B, CT_FP8_DYNAMIC),
        None,
        1,
        None,
        "fp8_channel/compressed_tensors.dynamic",
    ),
    ("online-ptpc", QWEN3_235B, "fp8_per_channel", 1, None, "fp8_channel/online.ptpc"),
    ("quark-fp8-channel", _with(QWEN3_235B, QUARK_FP8_CHANNEL), None, 1, None, "fp8_channel/quark"),
    (
        "ct-fp8-block",
        _with(QWEN3_235B, CT_FP8_BLOCK),
        None,
        1,
        None,
        "fp8_block/compressed_tensors",
    ),
    ("online-fp8-block", QWEN3_235B, "fp8_per_block", 1, None, "fp8_block/online"),
    ("modelopt-mxfp8", _with(QWEN3_235B, MODELOPT_MXFP8), None, 1, None, "mxfp8/any"),
    ("ct-mxfp8", _with(QWEN3_235B, CT_MXFP8), None, 1, None, "mxfp8/any"),
    ("online-mxfp8", QWEN3_235B, "mxfp8", 1, None, "mxfp8/any"),
    ("modelopt-nvfp4", _with(QWEN3_235B, MODELOPT_NVFP4), None, 1, None, "nvfp4/modelopt"),
    (
        "modelopt-nvfp4-legacy",
        _with(QWEN3_235B, MODELOPT_NVFP4_LEGACY),
        None,
        1,
        None,
        "nvfp4/modelopt",
    ),
    ("modelopt-w4a16", _with(QWEN3_235B, MODELOPT_W4A16), None, 1, None, "nvfp4/modelopt.w4a16"),
    ("ct-nvfp4", _with(QWEN3_235B, CT_NVFP4), None, 1, None, "nvfp4/compressed_tensors"),
    ("ct-nvfp4a16", _with(QWEN3_235B, CT_NVFP4A16), None, 1, None, "nvfp4/modelopt.w4a16"),
    ("online-nvfp4", QWEN3_235B, "nvfp4_per_token", 1, None, "nvfp4/online.per_token"),
    ("gpt-oss", GPT_OSS_120B, None, 1, None, "mxfp4/gpt_oss"),
    ("gpt-oss-explicit-mxfp4", GPT_OSS_120B, "mxfp4", 1, None, "mxfp4/gpt_oss"),
    ("deepseek-v4", DEEPSEEK_V4, None, 8, None, "mxfp4/mxfp4_config"),
    (
        "mxfp4-other",
        _with(QWEN3_235B, {"quant_method": "mxfp4"}),
        None,
        1,
        None,
        "mxfp4/mxfp4_config",
    ),
    ("quark-w4a16", _with(QWEN3_235B, QUARK_W4A16), None, 1, None, "mxfp4/quark.w4a16"),
    ("quark-w4a4", _with(QWEN3_235B, QUARK_W4A4), None, 1, None, "mxfp4/quark.w4a4"),
    ("quark-w4a8", _with(QWEN3_235B, QUARK_W4A8), None, 1, None, "mxfp4/quark.w4a8_fp8"),
    ("online-mxfp4", QWEN3_235B, "mxfp4", 1, None, "mxfp4/online"),
    ("ct-mxfp4", _with(QWEN3_235B, CT_MXFP4), None, 1, None, "mxfp4/compressed_tensors.w4a4"),
    ("inc-mxfp4", _with(QWEN3_235B, INC_MXFP4), None, 1, None, "mxfp4/inc"),
    (
        "ct-w8a8-int8",
        _with(QWEN3_235B, CT_W8A8_INT8),
        None,
        1,
        None,
        "int8_w8a8/compressed_tensors",
    ),
    ("online-int8", QWEN3_235B, "int8_per_channel_weight_only", 1, None, "int8_w8a8/online"),
    ("gptq", _with(QWEN3_30B, GPTQ_INT4), None, 1, None, "int4_w4a16/gptq"),
    ("awq", _with(QWEN3_30B, AWQ_INT4), None, 1, None, "int4_w4a16/awq"),
    (
        "ct-g128",
        _with(QWEN3_235B, CT_W4A16_G128),
        None,
        1,
        None,
        "int4_w4a16/compressed_tensors.g128",
    ),
    ("ct-g32", _with(QWEN3_235B, CT_W4A16_G32), None, 1, None, "int4_w4a16/compressed_tensors.g32"),
    ("moe-wna16", _with(QWEN3_30B, GPTQ_INT4), "moe_wna16", 1, None, "int4_w4a16/moe_wna16"),
    ("ct-w4a8-fp8", _with(QWEN3_235B, CT_W4A8_FP8), None, 1, None, "w4a8_fp8/compressed_tensors"),
    (
        "ct-w4a8-int8",
        _with(QWEN3_235B, CT_W4A8_INT8),
        None,
        1,
        None,
        "w4a8_int8/compressed_tensors",
    ),
    # vLLM's own fallbacks and refusals
    ("gptq-rocm-falls-back", _with(QWEN3_30B, GPTQ_INT4), None, 1, "rocm", "int4_w4a16/moe_wna16"),
    ("awq-tp8-shard-192", _with(QWEN3_235B, AWQ_INT4), None, 8, None, "int4_w4a16/moe_wna16"),
    ("mismatch", DEEPSEEK_R1, "awq", 1, None, None),
    (
        "modelopt-overrides-fp8-flag",
        _with(QWEN3_235B, MODELOPT_FP8),
        "fp8",
        1,
        None,
        "fp8_tensor/modelopt",
    ),
    ("gptq-8bit", _with(QWEN3_30B, {**GPTQ_INT4, "bits": 8}), None, 1, None, None),
    ("online-needs-config", QWEN3_235B, "online", 1, None, None),
    (
        "dsv4-nvfp4-experts",
        _with(DEEPSEEK_V4, {**DEEPSEEK_V4["quantization_config"], "moe_quant_algo": "NVFP4"}),
        None,
        1,
        None,
        "nvfp4/modelopt",
    ),
    (
        "dsv4-fp8-experts",
        {**DEEPSEEK_V4, "expert_dtype": "fp8"},
        None,
        1,
        None,
        "fp8_block/fp8_config",
    ),
]


@pytest.mark.parametrize(
    ("hf", "quantization", "tp", "kind", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_variant(
    hf: dict[str, Any], quantization: str | None, tp: int, kind: str | None, expected: str | None
) -> None:
    """Each checkpoint/flag reaches the expected variant, with a reason."""
    variant, why = _variant(hf, quantization, tp, kind)
    assert variant == expected, why
    assert why


def test_reason_names_block_size() -> None:
    """The reason carries what the variant name does not."""
    _, why = _variant(DEEPSEEK_R1)
    assert "[128, 128]" in why
    assert "dynamic" in why


def test_every_golden_variant_reachable() -> None:
    """Every meta.moe_variants name is reached by some case."""
    names = set(json.loads(GOLDEN.read_text())["meta"]["moe_variants"])
    reached = {case[5] for case in CASES}
    assert names - reached == set()
    assert reached - {None} <= names


FEATURES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "qwen3_moe",
        QWEN3_235B,
        {
            "model_type": "qwen3_moe",
            "num_experts": 128,
            "top_k": 8,
            "hidden_dim": 4096,
            "intermediate_size": 1536,
            "activation": "SILU",
            "routing_method": "RenormalizeNaive",
            "has_bias": False,
            "router_logits_dtype": "bfloat16",
            "is_act_and_mul": True,
        },
    ),
    (
        "deepseek_v3",
        DEEPSEEK_R1,
        {
            "model_type": "deepseek_v3",
            "num_experts": 256,
            "top_k": 8,
            "hidden_dim": 7168,
            "intermediate_size": 2048,
            "routing_method": "DeepSeekV3",
            "has_bias": False,
            "router_logits_dtype": "bfloat16",
        },
    ),
    (
        "kimi_k2",
        KIMI_K2,
        {"model_type": "kimi_k2", "num_experts": 384, "routing_method": "DeepSeekV3"},
    ),
    (
        "gpt_oss",
        GPT_OSS_120B,
        {
            "model_type": "gpt_oss",
            "num_experts": 128,
            "top_k": 4,
            "hidden_dim": 2880,
            "intermediate_size": 2880,
            "activation": "SWIGLUOAI",
            "routing_method": "RenormalizeNaive",
            "has_bias": True,
        },
    ),
    (
        "qwen3_5_moe",
        QWEN3_5_MOE,
        {
            "model_type": "qwen3_5_moe_text",
            "num_experts": 128,
            "top_k": 8,
            "hidden_dim": 4096,
            "intermediate_size": 1536,
            "routing_method": "RenormalizeNaive",
        },
    ),
    (
        "deepseek_v4",
        DEEPSEEK_V4,
        {
            "model_type": "deepseek_v4",
            "num_experts": 256,
            "top_k": 6,
            "routing_method": "DeepseekV4",
            "router_logits_dtype": "float32",
            "has_hash_routing": False,
            "hash_layers": 3,
            "swiglu_limit": 10.0,
        },
    ),
    (
        "mixtral",
        MIXTRAL,
        {
            "num_experts": 8,
            "top_k": 2,
            "intermediate_size": 14336,
            "routing_method": "RenormalizeNaive",
        },
    ),
    (
        "llama4",
        LLAMA4_SCOUT,
        {"model_type": "llama4_text", "num_experts": 16, "top_k": 1, "routing_method": "Llama4"},
    ),
]


@pytest.mark.parametrize(
    ("hf", "expected"), [f[1:] for f in FEATURES], ids=[f[0] for f in FEATURES]
)
def test_features(hf: dict[str, Any], expected: dict[str, Any]) -> None:
    """The MoE layer's features as vLLM's model code builds them."""
    features = moe_model_features(hf)
    assert features is not None
    assert {k: features.get(k) for k in expected} == expected
    assert "unknown" not in features


def test_dense_model_has_no_moe() -> None:
    """A dense model has no fused-MoE layer."""
    assert moe_model_features(LLAMA3_DENSE) is None


def test_unknown_family() -> None:
    """An unregistered MoE family keeps its shape and says what is unknown."""
    hf = {
        "architectures": ["FooMoeForCausalLM"],
        "model_type": "foo_moe",
        "num_experts": 64,
        "num_experts_per_tok": 4,
        "hidden_size": 2048,
        "moe_intermediate_size": 512,
    }
    features = moe_model_features(hf)
    assert features is not None
    assert features["routing_method"] is None
    assert features["num_experts"] == 64
    assert "routing_method" in features["unknown"]


def test_routing_softmax_without_renormalize() -> None:
    """qwen3_moe with norm_topk_prob false routes Default (softmax -> topk)."""
    features = moe_model_features({**QWEN3_235B, "norm_topk_prob": False})
    assert features is not None
    assert features["routing_method"] == "Default"

"""One fused-MoE layer as vLLM's selection sees it: the model's side from its
``config.json`` (:func:`moe_model_features`: experts, routing, activation, dtype, read
the way each model file builds its ``FusedMoE``) and the launch's side from the parallel
flags (:func:`layer_features`: ``FusedMoEParallelConfig`` and ``FusedMoEConfig``).

Sources (paths relative to ``vllm/`` of the 0.33.0 wheel): ``model_executor/models/
registry.py`` -> the model file's ``FusedMoEFactory(...)`` call,
``layers/fused_moe/layer.py:92`` (factory defaults),
``layers/fused_moe/router/router_factory.py:40``, ``layers/fused_moe/config.py``
(``get_routing_method_type``, ``FusedMoEParallelConfig``, ``FusedMoEConfig``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MODEL_KEYS",
    "Layout",
    "layer_features",
    "moe_model_features",
    "routing_method_type",
]

_Cfg = Mapping[str, Any]

# ---------------------------------------------------------------- the launch's side
_SP_BACKENDS = frozenset(
    {  # config/parallel.py:768 use_sequence_parallel_moe
        "allgather_reducescatter",
        "deepep_high_throughput",
        "deepep_low_latency",
        "deepep_v2",
        "flashinfer_nvlink_one_sided",
        "passthrough",
        "mori_high_throughput",
        "mori_low_latency",
        "mori",  # 0.34's all2all value (config/parallel.py:871); unknown to 0.33
        "nixl_ep",
    }
)
_A2A = {  # config.py:1041-1103: FusedMoEParallelConfig properties -> the backends they test
    "use_deepep_ht_kernels": ("deepep_high_throughput",),
    "use_deepep_ll_kernels": ("deepep_low_latency",),
    "use_fi_nvl_two_sided_kernels": ("flashinfer_all2allv", "flashinfer_nvlink_two_sided"),
    "use_fi_nvl_one_sided_kernels": ("flashinfer_nvlink_one_sided",),
    "use_ag_rs_all2all_kernels": ("allgather_reducescatter",),
    "use_mori_kernels": ("mori_high_throughput", "mori_low_latency"),
    "use_nixl_ep_kernels": ("nixl_ep",),
    "use_deepep_v2_kernels": ("deepep_v2",),
    "use_moonep_kernels": ("moonep",),
}
_LAYER_DEFAULTS: dict[str, Any] = {  # FusedMoEConfig field defaults (config.py:1288-1335)
    "pcp_size": 1,
    "enable_eplb": False,
    "is_lora_enabled": False,
    "has_hash_routing": False,
    "require_decomposed_backend": False,
    "swiglu_limit": None,
    "swiglu_alpha": None,
    "swiglu_beta": None,
    "activation_situ_beta": None,
    "activation_situ_linear_beta": None,
    "skip_final_all_reduce": False,
    "moe_backend": "auto",
    "enable_dbo": False,  # ParallelConfig.enable_dbo
    "weight_transfer_config_set": False,  # vllm_config.weight_transfer_config is not None
    "user_moe_weight_override": None,
    "mori_ep_v2": False,  # FusedMoEParallelConfig.mori_ep_v2 (0.34, config.py:1059)
    "qat_activation_key": None,  # FusedMoEConfig.qat_activation_key (0.34, config.py:1386)
    "is_requantization_source": False,  # online requantization's source method (0.34)
}


def _parallel(tp_: int, dp_: int, pcp_: int, expert_parallel: bool, backend: str) -> dict[str, Any]:
    """FusedMoEParallelConfig.make (config.py:1117-1210) and its properties (:1030-1103)."""
    sp = tp_ if (backend in _SP_BACKENDS and expert_parallel and tp_ > 1 and dp_ > 1) else 1
    use_ep = dp_ * pcp_ * tp_ > 1 and expert_parallel  # :1180
    flat = dp_ * pcp_ * tp_  # flatten_tp_across_dp_and_pcp (:1106)
    out: dict[str, Any] = {
        "tp_size": 1 if use_ep else flat,
        "ep_size": flat if use_ep else 1,
        "dp_size": dp_,
        "pcp_size": pcp_,
        "sp_size": sp,
        "use_ep": use_ep,
        "all2all_backend": backend,
        "is_sequence_parallel": sp > 1,  # :1031
    }
    a2a = use_ep and (dp_ > 1 or pcp_ > 1 or sp > 1)  # :1035
    out["use_all2all_kernels"] = a2a
    for prop, names in _A2A.items():
        out[prop] = a2a and backend in names
    out["use_passthrough_all2all"] = backend == "passthrough"  # :1082 (not gated)
    batched = out["use_deepep_ll_kernels"] or out["use_nixl_ep_kernels"]  # :1066
    out["use_batched_activation_format"] = batched
    out["needs_round_robin_routing_tables"] = batched  # :1070
    out["activation_format"] = "batched" if batched else "standard"
    return out


@dataclass(frozen=True)
class Layout:
    """The parallel flags of a ``vllm serve`` line, as an MoE layer reads them."""

    tensor_parallel_size: int = 1
    """``--tensor-parallel-size``."""
    data_parallel_size: int = 1
    """``--data-parallel-size``."""
    enable_expert_parallel: bool = False
    """``--enable-expert-parallel``."""
    all2all_backend: str = "allgather_reducescatter"
    """``--all2all-backend`` (as resolved)."""


MODEL_KEYS = (
    "hidden_dim",
    "intermediate_size",
    "num_experts",
    "top_k",
    "activation",
    "routing_method",
    "has_bias",
    "in_dtype",
    "model_type",
)
"""What :func:`layer_features` needs of the model (:func:`moe_model_features`)."""


def layer_features(model: Mapping[str, Any], layout: Layout) -> dict[str, Any]:
    """The features the selection data reads for one MoE layer of ``model`` (its keys
    :data:`MODEL_KEYS`, optionally ``router_logits_dtype`` and any other FusedMoEConfig
    field it sets, e.g. ``swiglu_limit``, ``has_hash_routing``): FusedMoEParallelConfig
    (make and properties) and the FusedMoEConfig fields (config.py:1273-1367)."""
    missing = [k for k in MODEL_KEYS if model.get(k) is None]
    if missing:
        raise ValueError(f"MoE layer features need {', '.join(missing)}")
    feats = dict(_LAYER_DEFAULTS)
    feats.update({k: v for k, v in model.items() if k in _LAYER_DEFAULTS})
    feats.update(
        _parallel(
            layout.tensor_parallel_size,
            layout.data_parallel_size,
            int(feats["pcp_size"]),
            layout.enable_expert_parallel,
            layout.all2all_backend,
        )
    )
    tp_size, ep_size = int(feats["tp_size"]), int(feats["ep_size"])
    activation, in_dtype = str(model["activation"]), str(model["in_dtype"])
    feats.update({k: model[k] for k in MODEL_KEYS})
    feats.update(
        # config.py:1353 intermediate_size // tp_size; :1366 the unpadded one defaults to it
        intermediate_size_per_partition=model["intermediate_size"] // tp_size,
        intermediate_size_per_partition_unpadded=model["intermediate_size"] // tp_size,
        num_local_experts=model["num_experts"] // ep_size,  # without redundant experts
        # config.py:1418 is_act_and_mul = MoEActivation.is_gated (value not ``*_no_mul``)
        is_act_and_mul=not activation.upper().endswith("_NO_MUL"),
        activation_value=activation.lower(),
        router_logits_dtype=model.get("router_logits_dtype") or in_dtype,  # config.py:1362
    )
    return feats


def routing_method_type(
    scoring_func: str,
    top_k: int,
    renormalize: bool,
    num_expert_group: int | None,
    has_e_score_bias: bool,
) -> str:
    """config.py:135 get_routing_method_type, as the RoutingMethodType member name."""
    del top_k  # read by vLLM's signature only
    if scoring_func == "sqrtsoftplus":
        return "DeepseekV4" if renormalize else "Unspecified"
    if has_e_score_bias:
        if scoring_func != "sigmoid" or not renormalize:
            return "Unspecified"
        return "DeepSeekV3" if (num_expert_group or 0) > 0 else "MiniMax2"
    if scoring_func == "sigmoid":
        return "SigmoidRenorm" if renormalize else "Sigmoid"
    if scoring_func == "softmax":
        return "RenormalizeNaive" if renormalize else "Default"
    return "Unspecified"


# ----------------------------------------------------------------- the model's side
def _in_dtype(text: _Cfg, top: _Cfg) -> str:
    """Model dtype under ``--dtype auto``: config dtype, float32 downcast to the
    platform's first dtype (bfloat16 on GPUs) (config/model.py:2423)."""
    raw = (
        text.get("dtype")
        or text.get("torch_dtype")
        or top.get("dtype")
        or top.get("torch_dtype")
        or "bfloat16"
    )
    raw = str(raw).replace("torch.", "")
    return "float16" if raw in ("float16", "half") else "bfloat16"


def _qwen3_moe(c: _Cfg) -> dict[str, Any]:
    """qwen3_moe.py:203 (renormalize=norm_topk_prob; HF default False)."""
    return {"num_experts": c.get("num_experts"), "renormalize": bool(c.get("norm_topk_prob"))}


def _qwen3_next(c: _Cfg) -> dict[str, Any]:
    """qwen3_next.py:223 (renormalize=getattr(norm_topk_prob, True)); qwen3_5.py:173 builds
    the same block for model_type qwen3_5_moe_text."""
    return {"num_experts": c.get("num_experts"), "renormalize": bool(c.get("norm_topk_prob", True))}


def _deepseek_v2(c: _Cfg) -> dict[str, Any]:
    """deepseek_v2.py:374: grouped top-k, n_group/topk_group default 1, scoring_func default
    softmax, e_score_correction_bias iff topk_method noaux_tc (:327), router dtype fp32 iff
    moe_router_dtype float32 or glm_moe_dsa (:135)."""
    fp32 = c.get("moe_router_dtype") == "float32" or c.get("model_type") == "glm_moe_dsa"
    return {
        "num_experts": c.get("n_routed_experts"),
        "renormalize": bool(c.get("norm_topk_prob")),
        "scoring": c.get("scoring_func", "softmax"),
        "groups": c.get("n_group", 1),
        "bias": c.get("topk_method") == "noaux_tc",
        "router_logits_dtype": "float32" if fp32 else None,
    }


def _fam_deepseek_v4(c: _Cfg) -> dict[str, Any]:
    """models/deepseek_v4/nvidia/model.py:241-447: scoring_func default sqrtsoftplus,
    router_logits_dtype float32, hash routing (gate.tid2eid) on the first num_hash_layers
    MoE layers, swiglu_limit from config."""
    hash_layers = int(c.get("num_hash_layers") or 0)
    return {
        "num_experts": c.get("n_routed_experts"),
        "renormalize": bool(c.get("norm_topk_prob")),
        "scoring": c.get("scoring_func", "sqrtsoftplus"),
        "bias": c.get("topk_method") == "noaux_tc",
        "router_logits_dtype": "float32",
        "has_hash_routing": False,
        "hash_layers": hash_layers,
        "swiglu_limit": c.get("swiglu_limit"),
    }


def _gpt_oss(c: _Cfg) -> dict[str, Any]:
    """gpt_oss.py:390: renormalize True, has_bias True, activation swigluoai."""
    return {
        "num_experts": c.get("num_local_experts"),
        "renormalize": True,
        "has_bias": True,
        "activation": "SWIGLUOAI",
        "intermediate": c.get("intermediate_size"),
    }


def _mixtral(c: _Cfg) -> dict[str, Any]:
    """mixtral.py:118: renormalize True, softmax."""
    return {
        "num_experts": c.get("num_local_experts"),
        "renormalize": True,
        "intermediate": c.get("intermediate_size"),
    }


def _llama4(c: _Cfg) -> dict[str, Any]:
    """llama4.py:132: custom_routing_function Llama4MoE.custom_routing_function ->
    RoutingMethodType.Llama4 (router/custom_routing_router.py:37); MoE layers only when
    interleave_moe_layer_step > 0 (:340)."""
    experts = c.get("num_local_experts") if (c.get("interleave_moe_layer_step", 1) or 0) > 0 else 0
    return {
        "num_experts": experts,
        "renormalize": False,
        "routing": "Llama4",
        "intermediate": c.get("intermediate_size"),
    }


_FAMILIES: dict[str, Callable[[_Cfg], dict[str, Any]]] = {
    "Qwen3MoeForCausalLM": _qwen3_moe,
    "Qwen3NextForCausalLM": _qwen3_next,
    "Qwen3_5MoeForCausalLM": _qwen3_next,
    "Qwen3_5MoeForConditionalGeneration": _qwen3_next,
    "DeepseekV2ForCausalLM": _deepseek_v2,
    "DeepseekV3ForCausalLM": _deepseek_v2,
    "DeepseekV4ForCausalLM": _fam_deepseek_v4,
    "GptOssForCausalLM": _gpt_oss,
    "MixtralForCausalLM": _mixtral,
    "Llama4ForCausalLM": _llama4,
    "Llama4ForConditionalGeneration": _llama4,
}
"""registry.py architectures -> the model file whose FusedMoEFactory call is read."""

_EXPERT_KEYS = ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")


def _text_config(hf_config: _Cfg) -> tuple[_Cfg, str | None]:
    """hf_text_config (transformers_utils/config.py:1258 get_text_config) and its
    model_type; a text_config without one gets the class default ``<top>_text``."""
    text = hf_config.get("text_config")
    if not isinstance(text, Mapping):
        return _aliased(hf_config, hf_config.get("model_type")), hf_config.get("model_type")
    top = hf_config.get("model_type")
    model_type = text.get("model_type") or (f"{top}_text" if top else None)
    return _aliased(text, model_type), model_type


def _aliased(config: _Cfg, model_type: object) -> _Cfg:
    """``config`` answering to the names transformers' config class of ``model_type``
    maps (``attribute_map``: a transformers 5.x Qwen3-MoE config.json holds
    ``num_local_experts``, the model code reads ``num_experts``); the data is
    ``attribute-maps.json``, read from transformers."""
    from kernelcfg.vllm.releases import data_file

    maps = data_file("attribute-maps.json")["maps"].get(model_type) if model_type else None
    missing = {a: s for a, s in (maps or {}).items() if a not in config and s in config}
    if not missing:
        return config
    return {**config, **{alias: config[stored] for alias, stored in missing.items()}}


def _routing_of(fam: Mapping[str, Any]) -> str:
    """The routing method of a family's factory arguments."""
    if "routing" in fam:
        return str(fam["routing"])
    return routing_method_type(
        str(fam.get("scoring", "softmax")),
        0,
        bool(fam.get("renormalize")),
        fam.get("groups"),
        bool(fam.get("bias")),
    )


def moe_model_features(hf_config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The fused-MoE layer's features the selection walk reads, or ``None`` when the model
    has no fused-MoE layer. Unknown families keep the shape keys, ``routing_method``
    None, and list what could not be read under ``unknown``."""
    text, model_type = _text_config(hf_config)
    arch = next((a for a in hf_config.get("architectures") or [] if a in _FAMILIES), None)
    if arch is None:
        experts = next((text.get(k) for k in _EXPERT_KEYS if text.get(k)), None)
        if not experts:
            return None
        fam: dict[str, Any] = {"num_experts": experts}
    else:
        fam = _FAMILIES[arch](text)
        if not fam.get("num_experts"):
            return None
    dtype = _in_dtype(text, hf_config)
    activation = str(fam.get("activation", "SILU"))
    features: dict[str, Any] = {
        "model_type": model_type,
        "architecture": arch,
        "num_experts": fam["num_experts"],
        "top_k": text.get("num_experts_per_tok"),
        "hidden_dim": text.get("hidden_size"),
        "intermediate_size": fam.get("intermediate", text.get("moe_intermediate_size")),
        "activation": activation,
        "is_act_and_mul": not activation.endswith("_NO_MUL"),
        "routing_method": _routing_of(fam) if arch else None,
        "has_bias": bool(fam.get("has_bias", False)),
        "router_logits_dtype": fam.get("router_logits_dtype") or dtype,
        "in_dtype": dtype,
        "has_hash_routing": bool(fam.get("has_hash_routing", False)),
        "swiglu_limit": fam.get("swiglu_limit"),
    }
    if "hash_layers" in fam:
        features["hash_layers"] = fam["hash_layers"]
    if arch is None:
        features["unknown"] = ["routing_method", "activation", "has_bias", "router_logits_dtype"]
    return features

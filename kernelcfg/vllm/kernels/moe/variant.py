"""Which quantisation *variant* of vLLM's fused-MoE selection an MoE checkpoint's
experts are (read from 0.33.0): the variant reaches its oracle (:func:`variant_of`), read
from the model's Hugging Face ``config.json`` (its ``quantization_config``) and
``--quantization`` the way vLLM reads them.

Sources (paths relative to ``vllm/`` of the 0.33.0 wheel):

- checkpoint method: ``config/model.py:1383 _verify_quantization`` (override order,
  mismatch error), ``transformers_utils/model_arch_config_convertor.py:241
  _normalize_quantization_config``, ``model_executor/model_loader/weight_utils.py:200
  get_quant_config`` (online shorthands), ``config/quantization.py`` (``_ONLINE_SHORTHANDS``),
  ``model_executor/layers/quantization/online/base.py:96 _ONLINE_MOE_METHODS``;
- each config's ``get_quant_method`` for ``RoutedExperts`` (cited per function below).

A variant name is kernelcfg's name for (quant method class, weight key, activation key)
as in the golden ``meta.moe_variants``; the reason string carries what the variant name
does not (block size, group size, bits, zero points).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kernelcfg.vllm.checkpoint import (
    ct_args,
    map_of,
    modelopt_algo,
    resolve_quant_method,
)
from kernelcfg.vllm.kernels.moe.layer import moe_model_features

__all__ = ["variant_of"]

Variant = tuple[str | None, str]
_Cfg = Mapping[str, Any]

# ------------------------------------------------------------- online methods

_ONLINE_SHORTHANDS = {
    "fp8_per_tensor": ("fp8_tensor/online", "Fp8PerTensorOnlineMoEMethod"),
    "fp8_per_block": ("fp8_block/online", "Fp8PerBlockOnlineMoEMethod"),
    "fp8_per_channel": ("fp8_channel/online.ptpc", "Fp8PtpcOnlineMoEMethod"),
    "mxfp8": ("mxfp8/any", "Mxfp8OnlineMoEMethod"),
    "mxfp4": ("mxfp4/online", "Mxfp4OnlineMoEMethod"),
    "int8_per_channel_weight_only": ("int8_w8a8/online", "Int8OnlineMoEMethod"),
    "nvfp4_per_token": ("nvfp4/online.per_token", "Nvfp4OnlineMoEMethod"),
}
"""``config/quantization.py:_ONLINE_SHORTHANDS`` (the moe QuantSpec weight key) through
``online/base.py:_ONLINE_MOE_METHODS``."""

# ---------------------------------------------------------------- per method


def _marlin_ok(
    group_size: int, shape: tuple[int, int] | None, kind: str | None, padding: bool
) -> bool:
    """``check_moe_marlin_supports_config`` (utils/marlin_utils.py:356); unknown shape
    counts as supported."""
    if kind == "rocm":
        return False
    if shape is None:
        return group_size in (-1, 32, 64, 128)
    hidden, ispp = shape
    if padding:
        fits = hidden % 128 == 0 and (group_size <= 0 or ispp % group_size == 0)
    else:
        fits = hidden % 128 == 0 and ispp % max(64, group_size) == 0
    return fits and group_size in (-1, 32, 64, 128)


class _Ctx:
    """What a method's ``get_quant_method`` may read besides its own config."""

    def __init__(
        self, hf_config: _Cfg | None, tp: int, kind: str | None, model_type: str | None
    ) -> None:
        self.hf_config: _Cfg = hf_config or {}
        self.kind = kind
        self.model_type = model_type
        feats = moe_model_features(self.hf_config) if hf_config else None
        self.shape: tuple[int, int] | None = None
        if feats and feats.get("hidden_dim") and feats.get("intermediate_size"):
            self.shape = (int(feats["hidden_dim"]), int(feats["intermediate_size"]) // max(tp, 1))


def _fp8_config(cfg: _Cfg, _ctx: _Ctx) -> Variant:
    """Fp8Config (fp8.py:92-205): block -> Fp8MoEMethod block path; else per-tensor with
    the checkpoint's activation_scheme; ``store_dtype: mxfp4`` -> Mxfp4MoEMethod."""
    if cfg.get("store_dtype") == "mxfp4":
        return "mxfp4/mxfp4_config", "quant_method fp8 with store_dtype mxfp4 (Mxfp4MoEMethod)"
    scheme = cfg.get("activation_scheme")
    if scheme not in ("static", "dynamic"):
        return None, f"Fp8Config raises: activation_scheme {scheme!r} (fp8.py:114, :160)"
    block = cfg.get("weight_block_size")
    if block is not None:
        if scheme != "dynamic" or len(block) != 2:
            return None, f"Fp8Config raises: weight_block_size {block} with {scheme} (fp8.py:122)"
        return "fp8_block/fp8_config", (
            f"quant_method fp8 with weight_block_size {list(block)}, activation_scheme dynamic"
        )
    return f"fp8_tensor/fp8_config.{scheme}", (
        f"quant_method fp8, per-tensor weights, activation_scheme {scheme}"
    )


def _deepseek_v4(cfg: _Cfg, ctx: _Ctx) -> Variant:
    """DeepseekV4FP8Config.get_quant_method (models/deepseek_v41/quant_config.py:220):
    hf_config.expert_dtype fp4 (default) -> Mxfp4MoEMethod, or ModelOptNvFp4FusedMoE
    (W4A4) when quantization_config.moe_quant_algo is NVFP4; fp8 -> Fp8Config's path."""
    expert_dtype = ctx.hf_config.get("expert_dtype", "fp4")
    if expert_dtype == "fp8":
        variant, why = _fp8_config(cfg, ctx)
        return variant, f"deepseek_v4_fp8, expert_dtype fp8: {why}"
    if expert_dtype != "fp4":
        return None, f"DeepseekV4FP8Config raises: expert_dtype {expert_dtype!r}"
    if str(cfg.get("moe_quant_algo") or "").upper() == "NVFP4":
        return "nvfp4/modelopt", "deepseek_v4_fp8 with moe_quant_algo NVFP4 (W4A4)"
    return "mxfp4/mxfp4_config", "deepseek_v4_fp8, expert_dtype fp4 (Mxfp4MoEMethod)"


def _modelopt(cfg: _Cfg, _ctx: _Ctx) -> Variant:
    """ModelOptFp8MoEMethod (modelopt.py:491): per-tensor keys for every FP8 algo."""
    algo = modelopt_algo(cfg)
    if algo not in ("FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO"):
        return None, f"ModelOptFp8Config raises: quant_algo {algo} (modelopt.py:428)"
    note = "" if algo == "FP8" else " (vLLM still passes per-tensor keys to the oracle)"
    return "fp8_tensor/modelopt", f"ModelOpt quant_algo {algo}{note}"


def _modelopt_fp4(cfg: _Cfg, _ctx: _Ctx) -> Variant:
    """ModelOptNvFp4FusedMoE (modelopt.py:850); NVFP4 with every config group's
    input_activations null is rerouted to W4A16_NVFP4 (modelopt.py:797-811)."""
    algo = modelopt_algo(cfg)
    groups = cfg.get("config_groups")
    weight_only = (
        bool(groups)
        and isinstance(groups, Mapping)
        and all(
            isinstance(g, Mapping) and g.get("input_activations") is None for g in groups.values()
        )
    )
    if algo == "W4A16_NVFP4" or (algo == "NVFP4" and weight_only):
        return "nvfp4/modelopt.w4a16", f"ModelOpt quant_algo {algo}, weight-only NVFP4"
    if algo == "NVFP4":
        return "nvfp4/modelopt", "ModelOpt quant_algo NVFP4 (W4A4)"
    return None, f"ModelOptNvFp4Config raises: quant_algo {algo} (modelopt.py:757)"


_MIXED_ALGOS = {
    "FP8_PB_WO": "fp8_block/fp8_config",
    "FP8_BLOCK_SCALES": "fp8_block/fp8_config",
    "FP8": "fp8_tensor/modelopt",
    "NVFP4": "nvfp4/modelopt",
    "W4A16_NVFP4": "nvfp4/modelopt.w4a16",
    "MXFP8": "mxfp8/any",
}
"""ModelOptMixedPrecisionConfig.get_quant_method for RoutedExperts (modelopt.py:1889)."""


def _modelopt_mixed(cfg: _Cfg, _ctx: _Ctx) -> Variant:
    """The algo of the ``quantized_layers`` entries that name experts; vLLM resolves it
    per layer prefix, here all expert entries must agree."""
    layers = map_of(
        cfg.get("quantized_layers") or map_of(cfg.get("quantization")).get("quantized_layers")
    )
    algos = {
        str(map_of(info).get("quant_algo", "")).upper()
        for name, info in layers.items()
        if "expert" in name and "shared" not in name
    }
    if len(algos) != 1:
        return None, f"modelopt_mixed: expert layers carry algos {sorted(algos)} (per layer)"
    algo = algos.pop()
    found = _MIXED_ALGOS.get(algo)
    return found, f"modelopt_mixed, expert layers quant_algo {algo}" + (
        "" if found else " (no MoE method or not a variant)"
    )


def _wna16_fallback(bits: int, group: int, zp: bool, why: str) -> Variant:
    """MoeWNA16Method (moe_wna16.py:234): int4 key kInt4Static unless group 32."""
    if bits != 4 or group == 32:
        return None, f"{why}; MoeWNA16Method with bits {bits}, group {group}: no variant"
    return "int4_w4a16/moe_wna16", f"{why}; MoeWNA16Method, group {group}, zero points {zp}"


def _gptq(cfg: _Cfg, ctx: _Ctx) -> Variant:
    """AutoGPTQConfig.get_quant_method (auto_gptq.py:236): Marlin-unsupported layer
    (always on ROCm) -> MoeWNA16; else AutoGPTQMoEMethod (int4 -> uint4b8 key)."""
    bits, group = int(cfg.get("bits", 4)), int(cfg.get("group_size", 128))
    sym, desc = bool(cfg.get("sym", True)), bool(cfg.get("desc_act", False))
    if (bits, sym) not in ((4, True), (8, True)):
        return None, f"AutoGPTQConfig raises: bits {bits}, sym {sym}"
    if not _marlin_ok(group, ctx.shape, ctx.kind, padding=True):
        return _wna16_fallback(bits, group, not sym, "GPTQ layer not Marlin-compatible")
    if bits != 4:
        return None, "GPTQ 8-bit: AutoGPTQMoEMethod with uint8b128 key, no variant"
    return "int4_w4a16/gptq", f"GPTQ 4-bit sym, group {group}, desc_act {desc}"


def _awq(cfg: _Cfg, ctx: _Ctx) -> Variant:
    """AutoAWQConfig.get_quant_method (auto_awq.py:337) and AutoAWQMoEMethod (:525)."""
    bits = int(cfg.get("bits", cfg.get("w_bit", 4)))
    group = int(cfg.get("group_size", cfg.get("q_group_size", 128)))
    zp = bool(cfg.get("zero_point", True))
    if not _marlin_ok(group, ctx.shape, ctx.kind, padding=True):
        return _wna16_fallback(bits, group, zp, "AWQ layer not Marlin-compatible")
    if bits != 4:
        return None, "AutoAWQMoEMethod raises: only 4-bit (auto_awq.py:533)"
    return "int4_w4a16/awq", f"AWQ 4-bit, group {group}, zero points {zp}"


def _moe_wna16(cfg: _Cfg, _ctx: _Ctx) -> Variant:
    """--quantization moe_wna16 (MoeWNA16Config, moe_wna16.py:227)."""
    method = str(cfg.get("quant_method", "")).lower()
    zp = (not cfg.get("sym", True)) if method == "gptq" else bool(cfg.get("zero_point"))
    return _wna16_fallback(
        int(cfg.get("bits", 4)), int(cfg.get("group_size", 128)), zp, f"moe_wna16 over {method}"
    )


def _inc_int(cfg: _Cfg, ctx: _Ctx, bits: int, group: int) -> Variant:
    """INCWNA16MoEScheme.get_method (inc/schemes/inc_wna16_moe.py:331): CPU ->
    unquantized; gptq/awq packing -> Marlin check WITHOUT tile padding."""
    if ctx.kind == "cpu":
        return "unquantized/bf16", "INC int weights on CPU: UnquantizedFusedMoEMethod"
    packing = str(cfg.get("packing_format") or "auto_round:auto_gptq")
    backend = str(cfg.get("backend") or cfg.get("vllm_backend") or "auto")
    sym = bool(cfg.get("sym", True))
    ok = _marlin_ok(group, ctx.shape, ctx.kind, padding=False)
    if "gptq" in packing or "gptq" in backend:
        if not (ok and sym and bits in (4, 8)):
            return _wna16_fallback(bits, group, not sym, "INC gptq, no Marlin")
        return (
            ("int4_w4a16/gptq", f"INC gptq {bits}-bit group {group}")
            if bits == 4
            else (None, "INC gptq 8-bit: no variant")
        )
    if "awq" in packing or "awq" in backend:
        if not (ok and bits in (4, 8)):
            return _wna16_fallback(bits, group, True, "INC awq, no Marlin")
        return (
            ("int4_w4a16/awq", f"INC awq group {group}")
            if bits == 4
            else (None, "AutoAWQMoEMethod raises: only 4-bit")
        )
    return None, f"INC WNA16 MoE raises: packing {packing}"


def _inc(cfg: _Cfg, ctx: _Ctx) -> Variant:
    """INCConfig -> resolve_scheme (inc/schemes/factory.py): fp8 block (no MoE method),
    MXFP8, WNA16 int, MXFP4. Per-layer extra_config is not read."""
    data_type = str(cfg.get("data_type", "int"))
    data_type = "fp" if data_type == "fp8" else data_type
    bits, group = int(cfg.get("bits", 4)), cfg.get("group_size", 128)
    if "mx_fp" in data_type:
        if bits == 8:
            return "mxfp8/any", "INC/AutoRound MXFP8 (INCMxfp8MoEMethod)"
        return (
            ("mxfp4/inc", "INC/AutoRound MXFP4")
            if bits == 4
            else (None, f"INC mx_fp {bits}-bit: no scheme")
        )
    if data_type == "fp":
        return None, "INC FP8 block: INCFp8Scheme has no MoE method (raises)"
    if data_type == "int" and bits < 16:
        if ctx.kind == "cuda" and bits in (2, 3, 5, 6, 7):
            return None, f"INC int{bits}: humming MoE method, not a variant"
        return _inc_int(cfg, ctx, bits, int(group))
    return "unquantized/bf16", f"INC data_type {data_type} bits {bits}: not quantized"


# ------------------------------------------------------- compressed-tensors


def _ct_scheme(cfg: _Cfg) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str] | None:
    """The config group that covers the experts: one whose targets name experts, else
    one targeting ``Linear`` (compressed_tensors.py get_scheme_dict)."""
    groups = [g for g in map_of(cfg.get("config_groups")).values() if isinstance(g, Mapping)]
    if not groups:
        return None
    targets = [" ".join(map(str, g.get("targets") or [])) for g in groups]
    pick = next((g for g, t in zip(groups, targets, strict=True) if "expert" in t), None)
    if pick is None:
        pick = next((g for g, t in zip(groups, targets, strict=True) if "Linear" in t), None)
    if pick is None:
        return None
    fmt = str(pick.get("format") or cfg.get("format") or "")
    return ct_args(pick.get("weights")), ct_args(pick.get("input_activations")), fmt


def _ct_fp8(w: _Cfg, a: _Cfg) -> Variant:
    """CompressedTensorsW8A8Fp8MoEMethod.__init__ keys
    (compressed_tensors_moe_w8a8_fp8.py:66-99)."""
    ws, st, dyn = w["strategy"], a["strategy"], bool(a.get("dynamic"))
    if ws == "tensor" and st == "tensor":
        if dyn:
            return (
                None,
                "CT FP8 tensor weights, dynamic tensor activations: keys "
                "(kFp8StaticTensorSym, kFp8Dynamic128Sym), no variant",
            )
        return "fp8_tensor/compressed_tensors.static", "CT FP8 tensor weights, static tensor acts"
    if ws == "channel" and st == "token":
        if not dyn:
            return None, "CT FP8 raises: channel weights need dynamic per-token activations"
        return "fp8_channel/compressed_tensors.dynamic", "CT FP8_DYNAMIC (channel, per-token)"
    if ws == "block":
        block = w.get("block_structure")
        return (
            "fp8_block/compressed_tensors",
            f"CT FP8_BLOCK block_structure {block} "
            "(vLLM passes kFp8Static128BlockSym whatever the block)",
        )
    return None, f"CT FP8 asserts: weight {ws} / activation {st} (not tensor/channel/block)"


def _ct_wna16(w: _Cfg, fmt: str) -> Variant:
    """WNA16 branch (compressed_tensors_moe.py:90-144; CompressedTensorsWNA16MoEMethod keys:
    int4 group 32 -> kInt4Static32GroupScale, other int4 groups -> kInt4StaticGroupScale)."""
    bits, sym, group = w["num_bits"], w["symmetric"], w.get("group_size") or -1
    if bits not in (4, 8) or fmt != "pack-quantized":
        return None, f"CT WNA16 raises: bits {bits}, format {fmt} (needs pack-quantized)"
    if bits != 4 or not sym or group not in (32, 128):
        return None, f"CT W{bits}A16 sym {sym} group {group}: no variant"
    return f"int4_w4a16/compressed_tensors.g{group}", f"CT W4A16 symmetric group {group}"


def _ct_int(w: _Cfg, a: _Cfg) -> Variant:
    """INT8 / W4A8 branches (compressed_tensors_moe.py:173-200)."""
    bits, group = w["num_bits"], w.get("group_size") or -1
    dynamic_token = bool(a.get("dynamic")) and a["strategy"] == "token"
    if a["type"] == "float" and bits == 4 and w["strategy"] == "group" and dynamic_token:
        return "w4a8_fp8/compressed_tensors", f"CT W4A8 int4 group {group} + FP8 per-token"
    if a["type"] == "int" and bits == 4 and dynamic_token:
        return "w4a8_int8/compressed_tensors", f"CT W4A8 INT8, weight group {group}"
    if bits == 8 and a["num_bits"] == 8 and dynamic_token:
        return "int8_w8a8/compressed_tensors", "CT W8A8 INT8 (channel, dynamic per-token)"
    return None, f"CT raises: unsupported FusedMoe scheme {dict(w)}, {dict(a)}"


def _ct_float4(w: _Cfg, a: _Cfg | None) -> Variant | None:
    """MXFP4 / MXFP8 / NVFP4 branches (compressed_tensors_moe.py:66-88, :145-160)."""
    fp4 = w["type"] == "float" and w["num_bits"] == 4
    if fp4 and w["strategy"] == "group" and w.get("group_size") == 32:
        if a is not None and a["type"] == "float" and a["num_bits"] == 8 and a.get("dynamic"):
            return None, "CT MXFP4 W4A8-FP8 (CompressedTensorsW4A8Mxfp4MoEMethod): no variant"
        return "mxfp4/compressed_tensors.w4a4", "CT MXFP4 weights"
    mx8 = w["type"] == "float" and w["num_bits"] == 8 and w["strategy"] == "group"
    if mx8 and w.get("group_size") == 32 and "uint8" in str(w.get("scale_dtype")):
        return "mxfp8/any", "CT MXFP8"
    if fp4 and w["strategy"] == "tensor_group" and w.get("group_size") == 16:
        if a is None:
            return "nvfp4/modelopt.w4a16", "CT NVFP4A16: same oracle call as ModelOpt W4A16_NVFP4"
        return "nvfp4/compressed_tensors", "CT NVFP4 W4A4"
    return None


def _ct_classify(w: dict[str, Any], a: dict[str, Any] | None, fmt: str) -> Variant:
    """``get_moe_method`` branch order (compressed_tensors_moe.py:66-200)."""
    found = _ct_float4(w, a)
    if found is not None:
        return found
    if w["strategy"] in ("channel", "group") and a is None and not w.get("dynamic"):
        return _ct_wna16(w, fmt)
    if a is None:
        return None, f"CT raises: unsupported FusedMoe scheme {dict(w)}, None"
    fp8 = w["type"] == "float" and a["type"] == "float" and w["symmetric"]
    if (
        fp8
        and w["strategy"] in ("tensor", "channel", "block")
        and (a.get("dynamic") or a["strategy"] == "tensor")
    ):
        return _ct_fp8(w, a)
    return _ct_int(w, a)


def _compressed_tensors(cfg: _Cfg, _ctx: _Ctx) -> Variant:
    """CompressedTensorsConfig -> CompressedTensorsMoEMethod.get_moe_method."""
    scheme = _ct_scheme(cfg)
    weights, inputs, fmt = scheme if scheme is not None else (None, None, "")
    if weights is None:
        return "unquantized/bf16", "compressed-tensors: no config group covers the experts"
    return _ct_classify(weights, inputs, fmt)


# ------------------------------------------------------------------------ quark


def _quark_layer(cfg: _Cfg) -> _Cfg:
    """The experts' Quark config: a layer_quant_config pattern naming experts, else the
    global one (quark.py:764 _find_matched_config; the layer name is not known here)."""
    for pattern, layer in map_of(cfg.get("layer_quant_config")).items():
        if "expert" in pattern:
            return map_of(layer)
    return map_of(cfg.get("global_quant_config"))


def _quark_mx(a: _Cfg | None) -> Variant:
    """``_is_w_ocp_mx_a_x`` (quark.py:653) for fp4 weights."""
    if a is None:
        return "mxfp4/quark.w4a16", "Quark OCP-MX w_mxfp4 (weight-only)"
    if not a.get("is_dynamic"):
        if a.get("dtype") == "fp8_e4m3" and a.get("qscheme") == "per_tensor":
            return "mxfp4/quark.w4a8_fp8", "Quark w_mxfp4_a_fp8 (static FP8 per-tensor)"
        return None, "Quark OCP-MX with static non-FP8 inputs: not matched"
    if a.get("dtype") == "fp4":
        return "mxfp4/quark.w4a4", "Quark w_mxfp4_a_mxfp4"
    return None, f"Quark mxfp4 weights with {a.get('dtype')} dynamic inputs: no variant"


def _quark_fp8(w: _Cfg, a: _Cfg) -> Variant:
    """``_is_fp8_w8a8`` (quark.py:416) -> QuarkW8A8Fp8MoEMethod keys."""
    qs, dyn = w.get("qscheme"), bool(a.get("is_dynamic"))
    if qs == "per_tensor" and not dyn and a.get("qscheme") == "per_tensor":
        return "fp8_tensor/quark", "Quark FP8 per-tensor, static activations"
    if qs == "per_channel" and dyn and a.get("qscheme") == "per_channel":
        return "fp8_channel/quark", "Quark FP8 per-channel, dynamic per-token"
    return None, f"Quark FP8 weight {qs} / input {a.get('qscheme')} dynamic {dyn}: no variant"


def _quark(cfg: _Cfg, _ctx: _Ctx) -> Variant:
    """QuarkMoEMethod.get_moe_method_target (quark/quark_moe.py:167)."""
    layer = _quark_layer(cfg)
    w, a = layer.get("weight"), layer.get("input_tensors")
    if (isinstance(w, list) and len(w) > 1) or (isinstance(a, list) and len(a) > 1):
        return None, "Quark multi-spec (W4A8-FP8 / NVFP4) MoE: no variant"
    w = w[0] if isinstance(w, list) and w else w
    a = a[0] if isinstance(a, list) and a else a
    if not isinstance(w, Mapping):
        return "unquantized/bf16", "Quark: experts not quantized"
    a = a if isinstance(a, Mapping) else None
    if w.get("dtype") == "fp8_e4m3" and a is not None and a.get("dtype") == "fp8_e4m3":
        return _quark_fp8(w, a)
    if w.get("dtype") == "fp4" and w.get("qscheme") == "per_group":
        return _quark_mx(a)
    if w.get("dtype") == "fp8_e4m3" and w.get("group_size") == 32:
        return "mxfp8/any", "Quark MXFP8 (QuarkW8A8Mxfp8MoEMethod)"
    return None, f"Quark weight {w.get('dtype')} {w.get('qscheme')}: int4/int8 method, no variant"


# --------------------------------------------------------------------- dispatch

_BY_METHOD: dict[str, Callable[[_Cfg, _Ctx], Variant]] = {
    "fp8": _fp8_config,
    "deepseek_v4_fp8": _deepseek_v4,
    "modelopt": _modelopt,
    "modelopt_fp4": _modelopt_fp4,
    "modelopt_mixed": _modelopt_mixed,
    "auto_gptq": _gptq,
    "gptq": _gptq,
    "gptq_marlin": _gptq,
    "auto_awq": _awq,
    "awq": _awq,
    "awq_marlin": _awq,
    "moe_wna16": _moe_wna16,
    "inc": _inc,
    "compressed-tensors": _compressed_tensors,
    "quark": _quark,
}

_FIXED: dict[str, Variant] = {
    "unquantized": ("unquantized/bf16", "BF16/FP16 checkpoint (UnquantizedFusedMoEMethod)"),
    "gpt_oss_mxfp4": ("mxfp4/gpt_oss", "gpt-oss mxfp4 checkpoint (GptOssMxfp4MoEMethod)"),
    "mxfp4": ("mxfp4/mxfp4_config", "quant_method mxfp4, not gpt-oss (Mxfp4MoEMethod)"),
    "modelopt_mxfp8": ("mxfp8/any", "ModelOpt MXFP8 (ModelOptMxFp8FusedMoE)"),
}


def _online(method: str) -> Variant | None:
    """``--quantization`` with no checkpoint config (weight_utils.py:355-367)."""
    if method == "fp8":
        return "fp8_tensor/online", "--quantization fp8 (deprecated alias of fp8_per_tensor)"
    found = _ONLINE_SHORTHANDS.get(method)
    if found is None:
        return None
    return found[0], f"--quantization {method} online ({found[1]})"


def variant_of(
    quantization_config: Mapping[str, Any] | None,
    quantization: str | None,
    model_type: str | None,
    tensor_parallel_size: int = 1,
    *,
    hf_config: Mapping[str, Any] | None = None,
    platform_kind: str | None = None,
) -> tuple[str | None, str]:
    """The golden variant whose oracle call vLLM makes for this checkpoint and
    ``--quantization``, with a short reason; ``(None, why)`` when vLLM raises or its MoE
    path is not one of the variants.

    ``quantization_config`` as :func:`quantization_config_of` gives it; ``model_type``
    the top-level hf_config model_type (the overrides read it); ``tensor_parallel_size``
    the MoE layer's TP shard count (FusedMoEParallelConfig.tp_size: 1 with expert
    parallel), used with ``hf_config``'s shape for the GPTQ/AWQ/INC Marlin fallback;
    ``platform_kind`` cuda|rocm|cpu|xpu where known (ROCm never takes Marlin)."""
    method, why = resolve_quant_method(quantization_config, quantization, model_type, platform_kind)
    if method is None:
        return None, why
    if not quantization_config and method != "unquantized":
        return _online(method) or (None, f"--quantization {method} needs a checkpoint config")
    if method in _FIXED:
        return _FIXED[method]
    handler = _BY_METHOD.get(method)
    if handler is None:
        return None, f"quant method {method}: its MoE method is not one of the variants"
    ctx = _Ctx(hf_config, tensor_parallel_size, platform_kind, model_type)
    return handler(quantization_config or {}, ctx)

"""How vLLM reads a checkpoint's quantisation, in one place: where it finds the
quantisation dict (:func:`quantization_config_of`), which method loads it
(:func:`resolve_quant_method`: the overrides and the ``--quantization`` mismatch), and
which kinds of linear layer that method builds (:func:`linear_layers`). The MoE side
(``vllm.kernels.moe.variant``) reads the same dict and method from here.

Sources (paths relative to ``vllm/`` of the 0.34.0 wheel, unchanged since 0.33.0 where
not said): ``config/model.py _verify_quantization`` (override order, mismatch error),
``transformers_utils/config.py:997-1007`` (ModelOpt's separate ``hf_quant_config.json``),
``transformers_utils/model_arch_config_convertor.py _normalize_quantization_config``,
and each method's ``get_quant_method`` for ``LinearBase`` (cited per reader below):
``fp8.py``, ``fbgemm_fp8.py``, ``modelopt.py``, ``auto_gptq.py``, ``auto_awq.py``,
``moe_wna16.py``, ``inc/inc.py``, ``compressed_tensors/compressed_tensors.py
_get_scheme_from_parts``, ``quark/quark.py _get_scheme_cls_from_config``, ``mxfp4.py``.

A linear *kind* is kernelcfg's name for a (weight, activation) pair vLLM's linear-kernel
choice starts from, as the release files' ``layers`` name them (``fp8_tensor/static_act``,
``int4_w4a16/gptq_sym``, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "LinearRead",
    "ct_args",
    "kv_cache_dtype_of",
    "linear_layers",
    "map_of",
    "modelopt_algo",
    "quantization_config_of",
    "resolve_quant_method",
    "scheme_of_kind",
]

_Cfg = Mapping[str, Any]

# ------------------------------------------------------------------ finding it


def map_of(value: Any) -> _Cfg:
    """``value`` when it is a mapping, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def quantization_config_of(hf_config: _Cfg) -> dict[str, Any] | None:
    """The checkpoint's quantisation dict as vLLM finds it: ``quantization_config``, else
    the text config's, else ``compression_config`` (model_arch_config_convertor.py:241-292,
    weight_utils.py:240-247), normalised as ``_normalize_quantization_config`` does
    (ModelOpt ``producer``/legacy layout -> quant_method; lower-case; compressed_tensors
    -> compressed-tensors)."""
    found = hf_config.get("quantization_config")
    if found is None:
        found = map_of(hf_config.get("text_config")).get("quantization_config")
    if found is None:
        found = hf_config.get("compression_config")
    if not isinstance(found, Mapping):
        return None
    cfg = dict(found)
    inner = cfg.get("quantization")
    producer = map_of(cfg.get("producer")).get("name")
    legacy = isinstance(inner, Mapping) and "modelopt_quant_config" in inner
    if (producer == "modelopt" or legacy) and isinstance(inner, Mapping):
        algo = str(inner.get("quant_algo") or "").upper()
        cfg["quant_method"] = {
            "NVFP4": "modelopt_fp4",
            "MIXED_PRECISION": "modelopt_mixed",
        }.get(algo, "modelopt" if algo else cfg.get("quant_method", ""))
    method = str(cfg.get("quant_method", "")).lower()
    cfg["quant_method"] = method.replace("compressed_tensors", "compressed-tensors")
    return cfg


def modelopt_algo(cfg: _Cfg) -> str | None:
    """``ModelOptQuantConfigBase._extract_modelopt_quant_algo`` (modelopt.py:288)."""
    if not str(cfg.get("quant_method", "")).lower().startswith("modelopt"):
        return None
    if "quantization" in cfg:
        inner = cfg["quantization"]
        return str(inner.get("quant_algo", "")).upper() if isinstance(inner, Mapping) else None
    return str(cfg.get("quant_algo", "")).upper()


_GPTQ_USER = (None, "gptq", "gptq_marlin", "auto_gptq", "marlin")
_AWQ_USER = (None, "awq", "awq_marlin", "auto_awq", "marlin")
_DSV4_TYPES = ("deepseek_v4", "deepseek_v4_text", "deepseek_v41", "deepseek_v41_text")


def _override_gptq_awq(cfg: _Cfg, user: str | None, kind: str | None) -> str | None:
    """AutoGPTQ / AutoAWQ / MoeWNA16 overrides (auto_gptq.py:214, auto_awq.py:263,
    moe_wna16.py:145)."""
    method = str(cfg.get("quant_method", "")).lower()
    if method == "gptq" and user in _GPTQ_USER:
        return "auto_gptq"
    if method == "awq" and user in _AWQ_USER and kind != "cpu":
        return "auto_awq"
    if user == "moe_wna16":
        gptq_ok = method == "gptq" and cfg.get("bits") in (4, 8)
        awq_ok = method == "awq" and cfg.get("bits") == 4
        return "moe_wna16" if gptq_ok or awq_ok else None
    return None


def _override_modelopt(cfg: _Cfg) -> str | None:
    """ModelOpt overrides in list order (modelopt.py:453, :776, :1236, :1658)."""
    algo = modelopt_algo(cfg)
    if algo is None:
        return None
    if algo == "FP8":
        return "modelopt"
    if "NVFP4" in algo or "FP4" in algo:
        return "modelopt_fp4"
    if "MXFP8" in algo:
        return "modelopt_mxfp8"
    return "modelopt_mixed" if algo == "MIXED_PRECISION" else None


def _override_mx_dsv4(cfg: _Cfg, user: str | None, model_type: str | None) -> str | None:
    """GptOssMxfp4Config (mxfp4.py:129) and DeepseekV4FP8Config
    (models/deepseek_v41/quant_config.py:164; the v41 class serves CUDA/ROCm)."""
    method = cfg.get("quant_method")
    if method in ("mxfp4", "gpt_oss_mxfp4") and model_type == "gpt_oss":
        return "gpt_oss_mxfp4"
    if method in ("fp8", "deepseek_v4_fp8") and (
        model_type in _DSV4_TYPES or user == "deepseek_v4_fp8"
    ):
        return "deepseek_v4_fp8"
    return None


def _override(cfg: _Cfg, user: str | None, model_type: str | None, kind: str | None) -> str | None:
    """The first override that claims the checkpoint, in ``_verify_quantization``'s order
    (config/model.py:1396-1448: auto_gptq ... awq_marlin, inc, moe_wna16, modelopt*,
    mxfp8, modelopt_mixed, mxfp4, gpt_oss_mxfp4, deepseek_v4_fp8, humming)."""
    if user == "humming":
        return "humming"
    found = _override_gptq_awq(cfg, user, kind)
    if found is None and cfg.get("quant_method") == "auto-round":
        found = "inc"
    return found or _override_modelopt(cfg) or _override_mx_dsv4(cfg, user, model_type)


def resolve_quant_method(
    quantization_config: _Cfg | None,
    quantization: str | None,
    model_type: str | None,
    platform_kind: str | None = None,
) -> tuple[str | None, str]:
    """The quantisation method vLLM loads (``ModelConfig.quantization`` after
    ``_verify_quantization``), or ``(None, error)`` where vLLM raises. ``"unquantized"``
    when neither the checkpoint nor ``--quantization`` names one."""
    user = quantization
    if not quantization_config:
        return (user or "unquantized"), "no checkpoint quantization_config"
    override = _override(quantization_config, user, model_type, platform_kind)
    if override is not None:
        return override, f"checkpoint claimed by the {override} override"
    method = str(quantization_config.get("quant_method") or "") or None
    if method is None and user is None:
        return "unquantized", "checkpoint quant_method empty"
    if user is not None and user != method:
        return None, (
            f"vLLM raises: quantization method in the model config ({method}) does not "
            f"match --quantization {user} (config/model.py:1453)"
        )
    return method, f"checkpoint quant_method {method}"


def ct_args(raw: Any) -> dict[str, Any] | None:
    """A compressed-tensors QuantizationArgs with its defaults (num_bits 8, type int,
    symmetric, static; strategy from group_size when absent)."""
    if not isinstance(raw, Mapping):
        return None
    args = {"num_bits": 8, "type": "int", "symmetric": True, "dynamic": False, **raw}
    if not args.get("strategy"):
        group = args.get("group_size")
        args["strategy"] = "tensor" if group is None else ("channel" if group < 0 else "group")
    args["strategy"] = str(args["strategy"]).lower()
    args["type"] = str(args["type"]).lower()
    return args


def kv_cache_dtype_of(quant: Mapping[str, Any] | None) -> str | None:
    """``get_kv_cache_quant_algo_string`` (utils/torch_utils.py, 0.29-0.34): a ModelOpt
    checkpoint's KV-cache scheme as the cache dtype ``--kv-cache-dtype auto`` becomes
    (``EngineArgs.create_engine_config``: ``resolve_kv_cache_dtype_string``, before the
    attention backend is chosen); ``auto`` for a scheme vLLM does not know; ``None`` for
    other methods. ``quant`` as :func:`quantization_config_of` gives it."""
    if not quant or not str(quant.get("quant_method", "")).startswith("modelopt"):
        return None
    inner = quant.get("quantization", quant)
    algo = (
        inner.get("kv_cache_scheme")
        or quant.get("kv_cache_scheme")
        or inner.get("kv_cache_quant_algo")
        or quant.get("kv_cache_quant_algo")
    )
    if isinstance(algo, Mapping):
        if (
            algo.get("dynamic") is False
            and algo.get("num_bits") == 8
            and algo.get("type") == "float"
        ):
            algo = "fp8"
        elif algo.get("num_bits") == 4 and algo.get("type") == "float":
            algo = "nvfp4"
        else:
            return "auto"
    if isinstance(algo, str):
        return {"fp8": "fp8_e4m3", "nvfp4": "nvfp4"}.get(algo.lower(), "auto")
    return None


# ------------------------------------------------------------------ linear layers


@dataclass(frozen=True)
class LinearRead:
    """What the checkpoint's method builds for its linear layers."""

    method: str | None
    """vLLM's quantisation method after the overrides; ``None`` where vLLM raises."""
    kinds: tuple[str, ...]
    """The linear layer kinds, in the checkpoint's order, each once; empty where the
    method runs its own kernels (bitsandbytes, GGUF, ...) or vLLM raises."""
    scheme: str | None
    """kernelcfg's scheme name of the first quantised kind (``unquantized`` when none is
    quantised), or the method's own name where it has no linear-kernel choice."""
    reason: str
    """How it was read, in a few words."""


Kinds = tuple[tuple[str, ...], str]
"""Linear kinds and a short reason."""

_KIND_SCHEMES = {"nvfp4/w4a16": "nvfp4_w4a16", "int8_w8a16/gptq": "int8_w8a16"}
"""Kinds whose scheme is not the part before the slash."""


def scheme_of_kind(kind: str) -> str:
    """kernelcfg's scheme name of a linear kind."""
    return _KIND_SCHEMES.get(kind, kind.split("/", 1)[0])


def _int_kind(bits: int, group: int, sym: bool, dtype: str | None) -> Kinds:
    """A weight-only integer layer through ``choose_mp_linear_kernel``: zero points
    (AWQ, asymmetric GPTQ/CT) or symmetric; a per-channel or grouped scale; FP16 or BF16."""
    if bits == 8:
        return ("int8_w8a16/gptq",), f"INT8 weight-only, group {group}"
    if bits != 4:
        return (), f"INT{bits} weight-only: no kind kernelcfg's data has"
    if not sym:
        return ("int4_w4a16/awq_zp",), f"INT4 with zero points, group {group}"
    if group == -1:
        return ("int4_w4a16/channelwise",), "INT4 symmetric, per-channel"
    if dtype in ("float16", "half"):
        return ("int4_w4a16/gptq_sym_fp16",), f"INT4 symmetric, group {group}, FP16 model"
    return ("int4_w4a16/gptq_sym",), f"INT4 symmetric, group {group}"


def _fp8(cfg: _Cfg, _dtype: str | None) -> Kinds:
    """Fp8Config -> Fp8LinearMethod (fp8.py): block weights; else per-tensor weights
    with the checkpoint's activation scheme."""
    if cfg.get("weight_block_size") is not None:
        return ("fp8_block/128x128",), f"FP8 block {list(cfg['weight_block_size'])}"
    scheme = cfg.get("activation_scheme")
    if scheme not in ("static", "dynamic"):
        return (), f"Fp8Config raises: activation_scheme {scheme!r}"
    return (f"fp8_tensor/{scheme}_act",), f"FP8 per-tensor, {scheme} activations"


_MODELOPT_ALGOS = {
    "FP8": "fp8_tensor/static_act",
    "FP8_PER_CHANNEL_PER_TOKEN": "fp8_channel/dynamic_token",
    "FP8_PB_WO": "fp8_block/128x128",
    "FP8_BLOCK_SCALES": "fp8_block/128x128",
    "NVFP4": "nvfp4/w4a4",
    "W4A16_NVFP4": "nvfp4/w4a16",
    "MXFP8": "mxfp8/1x32",
}
"""ModelOpt ``quant_algo`` -> the linear kind its linear method builds (modelopt.py)."""


def _modelopt(cfg: _Cfg, _dtype: str | None) -> Kinds:
    """ModelOpt FP8 / NVFP4 / MXFP8 (one algo for every quantised layer); NVFP4 whose
    config groups all lack input activations is weight-only (modelopt.py:797-811)."""
    algo = modelopt_algo(cfg) or ""
    groups = map_of(cfg.get("config_groups"))
    if (
        algo == "NVFP4"
        and groups
        and all(map_of(g).get("input_activations") is None for g in groups.values())
    ):
        algo = "W4A16_NVFP4"
    kind = _MODELOPT_ALGOS.get(algo)
    return ((kind,), f"ModelOpt {algo}") if kind else ((), f"ModelOpt raises: quant_algo {algo}")


def _modelopt_mixed(cfg: _Cfg, _dtype: str | None) -> Kinds:
    """ModelOptMixedPrecisionConfig: each quantised layer's own algo (modelopt.py:1889)."""
    layers = map_of(
        cfg.get("quantized_layers") or map_of(cfg.get("quantization")).get("quantized_layers")
    )
    algos = [str(map_of(info).get("quant_algo", "")).upper() for info in layers.values()]
    kinds = tuple(dict.fromkeys(_MODELOPT_ALGOS[a] for a in algos if a in _MODELOPT_ALGOS))
    return kinds, f"ModelOpt mixed precision: {', '.join(sorted(set(algos))) or 'no layers'}"


def _gptq(cfg: _Cfg, dtype: str | None) -> Kinds:
    """GPTQ (AutoGPTQConfig -> Marlin linear; auto_gptq.py): bits, group, symmetry."""
    return _int_kind(
        int(cfg.get("bits", 4)), int(cfg.get("group_size", 128)), bool(cfg.get("sym", True)), dtype
    )


def _awq(cfg: _Cfg, dtype: str | None) -> Kinds:
    """AWQ (AutoAWQConfig -> Marlin linear with zero points; auto_awq.py)."""
    bits = int(cfg.get("bits", cfg.get("w_bit", 4)))
    group = int(cfg.get("group_size", cfg.get("q_group_size", 128)))
    return _int_kind(bits, group, not bool(cfg.get("zero_point", True)), dtype)


def _moe_wna16(cfg: _Cfg, dtype: str | None) -> Kinds:
    """MoeWNA16Config: linear layers go to the GPTQ or AWQ config (moe_wna16.py:196)."""
    inner = str(cfg.get("quant_method", "")).lower()
    return _awq(cfg, dtype) if inner.startswith("awq") else _gptq(cfg, dtype)


def _inc(cfg: _Cfg, dtype: str | None) -> Kinds:
    """INCConfig (AutoRound; inc/inc.py): int weights by packing format, FP8 block,
    MXFP8 and MXFP4."""
    data_type = str(cfg.get("data_type", "int"))
    bits = int(cfg.get("bits", 4))
    if "mx_fp" in data_type:
        if bits == 8:
            return ("mxfp8/1x32",), "AutoRound MXFP8"
        act = str(cfg.get("act_data_type") or "")
        return ((f"mxfp4/{'w4a4' if 'mx_fp' in act else 'w4a16'}",), "AutoRound MXFP4")
    if data_type in ("fp", "fp8"):
        return ("fp8_block/128x128",), "AutoRound FP8 block"
    packing = str(cfg.get("packing_format") or "auto_round:auto_gptq")
    sym = bool(cfg.get("sym", True)) and "awq" not in packing
    found, why = _int_kind(bits, int(cfg.get("group_size", 128)), sym, dtype)
    return found, f"AutoRound {packing}: {why}"


def _ct_kind(w: _Cfg, a: _Cfg | None, fmt: str, dtype: str | None) -> Kinds:
    """One compressed-tensors scheme (``_get_scheme_from_parts``' order)."""
    if w["type"] == "float":
        return _ct_float(w, a)
    bits, strategy = w["num_bits"], w["strategy"]
    if a is not None and bits == 4:
        kind = a["type"] == "float" and a["num_bits"] == 8
        return (
            (("w4a8_fp8/int4_fp8",), "INT4 weights, FP8 activations")
            if kind
            else (
                (),
                f"INT4 weights, {a['type'].upper()}{a['num_bits']} activations",
            )
        )
    if a is None and strategy in ("group", "channel"):
        if fmt != "pack-quantized":
            return (), f"INT{bits} weight-only in format {fmt or 'none'}"
        group = -1 if strategy == "channel" else int(w.get("group_size") or -1)
        return _int_kind(bits, group, bool(w.get("symmetric", True)), dtype)
    if a is not None and a.get("dynamic"):
        return ("int8_w8a8/channel_dynamic",), "INT8, dynamic per-token activations"
    return ("int8_w8a8/tensor_static",), "INT8, static activations"


def _ct_float(w: _Cfg, a: _Cfg | None) -> Kinds:
    """Float weights: NVFP4, MXFP4, MXFP8, FP8 weight-only and FP8 W8A8."""
    bits, strategy = w["num_bits"], w["strategy"]
    if bits == 4 and strategy == "tensor_group":
        return ((f"nvfp4/{'w4a16' if a is None else 'w4a4'}",), "NVFP4")
    if bits == 4 and strategy == "group":
        fp8_in = a is not None and a["type"] == "float" and a["num_bits"] == 8
        return ((), "MXFP4 weights, FP8 activations") if fp8_in else (("mxfp4/w4a4",), "MXFP4")
    if bits == 8 and strategy == "group" and w.get("group_size") == 32:
        return ("mxfp8/1x32",), "MXFP8"
    if a is None:
        return (f"w8a16_fp8/{'tensor' if strategy == 'tensor' else 'channel'}",), "FP8 weights"
    return _ct_fp8(strategy, a)


def _ct_fp8(strategy: str, a: _Cfg) -> Kinds:
    """CompressedTensorsW8A8Fp8's weight and activation keys."""
    if strategy == "block":
        return ("fp8_block/128x128",), "FP8 block"
    if a.get("dynamic"):
        kind = "fp8_channel/dynamic_token" if strategy == "channel" else "fp8_tensor/dynamic_act"
        return (kind,), f"FP8 {strategy} weights, dynamic activations"
    return ("fp8_tensor/static_act",), f"FP8 {strategy} weights, static activations"


def _compressed_tensors(cfg: _Cfg, dtype: str | None) -> Kinds:
    """Every config group that targets linear layers (not only experts)."""
    kinds: list[str] = []
    whys: list[str] = []
    for group in map_of(cfg.get("config_groups")).values():
        targets = " ".join(map(str, map_of(group).get("targets") or []))
        weights = ct_args(map_of(group).get("weights"))
        if weights is None or ("expert" in targets and "Linear" not in targets):
            continue
        fmt = str(map_of(group).get("format") or cfg.get("format") or "")
        found, why = _ct_kind(weights, ct_args(map_of(group).get("input_activations")), fmt, dtype)
        kinds += found
        whys.append(why)
    if not whys:
        return ("unquantized/bf16",), "compressed-tensors: no config group for linear layers"
    return tuple(dict.fromkeys(kinds)), "compressed-tensors " + "; ".join(dict.fromkeys(whys))


def _quark_entries(cfg: _Cfg) -> list[_Cfg]:
    """The global layer config and every per-layer one (quark.py _find_matched_config)."""
    found = [map_of(cfg.get("global_quant_config"))]
    found += [map_of(v) for v in map_of(cfg.get("layer_quant_config")).values()]
    found += [map_of(v) for v in map_of(cfg.get("layer_type_quant_config")).values()]
    return [entry for entry in found if entry]


def _quark_kind(w: Any, a: Any) -> Kinds:
    """``_get_scheme_cls_from_config`` (quark.py:884): NVFP4 multi-entry, FP8 W8A8,
    INT8 W8A8, INT4 W4A16, OCP MX."""
    if isinstance(w, list) and len(w) > 1:
        return ("nvfp4/w4a4",), "Quark NVFP4"
    w = w[0] if isinstance(w, list) and w else w
    a = a[0] if isinstance(a, list) and a else a
    if not isinstance(w, Mapping):
        return ("unquantized/bf16",), "Quark: not quantised"
    a = a if isinstance(a, Mapping) else {}
    wd, ad = w.get("dtype"), a.get("dtype")
    if wd in ("fp8_e4m3", "int8") and ad in ("fp8_e4m3", "int8", "uint8"):
        found = _quark_w8a8(w, a)
        if found is not None:
            return found
    if wd in ("int4", "uint4") and not ad:
        group = int(w.get("group_size") or 128)
        return _int_kind(4, group, bool(w.get("symmetric", wd == "int4")), None)
    return _quark_mx(wd, ad, w.get("qscheme"))


def _quark_w8a8(w: _Cfg, a: _Cfg) -> Kinds | None:
    """Quark FP8 W8A8 (per tensor, channel or block) and INT8 W8A8."""
    qs, dynamic = w.get("qscheme"), bool(a.get("is_dynamic"))
    if w.get("dtype") == "int8":
        kind = "int8_w8a8/channel_dynamic" if dynamic else "int8_w8a8/tensor_static"
        return (kind,), "Quark INT8 W8A8"
    if qs == "per_block":
        return ("fp8_block/128x128",), "Quark FP8 per-block"
    if qs == "per_channel":
        return ("fp8_channel/dynamic_token",), "Quark FP8 per-channel"
    if qs == "per_tensor":
        return (f"fp8_tensor/{'dynamic' if dynamic else 'static'}_act",), "Quark FP8 per-tensor"
    return None


def _quark_mx(wd: Any, ad: Any, qs: Any) -> Kinds:
    """Quark OCP MX (quark_ocp_mx.py:240-250): MXFP4, MXFP6, MXFP8 weights."""
    if wd == "fp4" and qs == "per_group":
        act = {None: "w4a16", "fp4": "w4a4", "fp8_e4m3": "w4a8_mxfp8"}.get(ad)
        return ((f"mxfp4/{act}",), "Quark OCP MX fp4") if act else ((), "Quark MXFP4, other inputs")
    if wd in ("fp6_e3m2", "fp6_e2m3"):
        return (f"mxfp6/{wd[4:]}",), f"Quark OCP MX {wd}"
    if wd == "fp8_e4m3" and qs == "per_group":
        return ("mxfp8/1x32",), "Quark OCP MX fp8"
    return (), f"Quark weights {wd} {qs}: no kind kernelcfg's data has"


def _quark(cfg: _Cfg, _dtype: str | None) -> Kinds:
    """QuarkConfig: every layer config that names weights."""
    kinds: list[str] = []
    whys: list[str] = []
    for entry in _quark_entries(cfg):
        found, why = _quark_kind(entry.get("weight"), entry.get("input_tensors"))
        kinds += found
        whys.append(why)
    return tuple(dict.fromkeys(kinds)), "; ".join(dict.fromkeys(whys)) or "Quark: no layers"


_UNQUANTIZED_LINEAR = ("unquantized/bf16",)

_READERS: dict[str, Callable[[_Cfg, str | None], Kinds]] = {
    "fp8": _fp8,
    "deepseek_v4_fp8": lambda _c, _d: (("fp8_block/128x128",), "DeepSeek V4 FP8 block"),
    "fbgemm_fp8": lambda _c, _d: (("fp8_channel/dynamic_token",), "FBGEMM FP8"),
    "modelopt": _modelopt,
    "modelopt_fp4": _modelopt,
    "modelopt_mxfp8": _modelopt,
    "modelopt_mixed": _modelopt_mixed,
    "gptq": _gptq,
    "auto_gptq": _gptq,
    "gptq_marlin": _gptq,
    "awq": _awq,
    "auto_awq": _awq,
    "awq_marlin": _awq,
    "moe_wna16": _moe_wna16,
    "inc": _inc,
    "compressed-tensors": _compressed_tensors,
    "quark": _quark,
    "mxfp4": lambda _c, _d: (_UNQUANTIZED_LINEAR, "MXFP4: linear layers unquantised"),
    "gpt_oss_mxfp4": lambda _c, _d: (_UNQUANTIZED_LINEAR, "MXFP4: linear layers unquantised"),
    "experts_int8": lambda _c, _d: (_UNQUANTIZED_LINEAR, "INT8 experts only"),
}
"""Each method's linear reader (its ``get_quant_method`` for ``LinearBase``)."""

_ONLINE = {
    "fp8": "fp8_tensor/dynamic_act",
    "fp8_per_tensor": "fp8_tensor/dynamic_act",
    "fp8_per_block": "fp8_block/128x128",
    "fp8_per_channel": "fp8_channel/dynamic_token",
    "ptpc_fp8": "fp8_channel/dynamic_token",
    "mxfp8": "mxfp8/1x32",
}
"""``--quantization`` on an unquantised checkpoint: the kind of its online method."""

_METHOD_SCHEMES = {"mxfp4": "mxfp4", "gpt_oss_mxfp4": "mxfp4", "experts_int8": "int8_w8a8"}
"""Methods that quantise only the experts: the scheme named is the experts'."""


def linear_layers(
    quantization_config: _Cfg | None,
    quantization: str | None,
    model_type: str | None,
    dtype: str | None = None,
) -> LinearRead:
    """The linear kinds vLLM builds for this checkpoint and ``--quantization``.
    ``quantization_config`` as :func:`quantization_config_of` gives it; ``dtype`` the
    model's activation dtype (``--dtype``, else the checkpoint's)."""
    method, why = resolve_quant_method(quantization_config, quantization, model_type)
    if method is None:
        return LinearRead(None, (), None, why)
    if method == "unquantized":
        return LinearRead(method, _UNQUANTIZED_LINEAR, "unquantized", "not quantised")
    if not quantization_config:
        kind = _ONLINE.get(method)
        if kind is None:
            return LinearRead(method, (), None, f"online {method}")
        return LinearRead(method, (kind,), scheme_of_kind(kind), f"online {method}")
    reader = _READERS.get(method)
    if reader is None:
        return LinearRead(method, (), method, f"{method} runs its own linear kernels")
    kinds, how = reader(quantization_config, dtype)
    quantised = [k for k in kinds if k != "unquantized/bf16"]
    scheme = _METHOD_SCHEMES.get(method) or (
        scheme_of_kind(quantised[0]) if quantised else ("unquantized" if kinds else method)
    )
    return LinearRead(method, kinds, scheme, how)

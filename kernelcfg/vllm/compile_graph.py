"""The compilation config vLLM hashes: ``-cc``, ``CompilationConfig.__post_init__``, then
the steps of ``VllmConfig.__post_init__`` that change it (``-O`` and its fusion passes,
the base custom ops, breakable CUDA graphs, the CUDA-graph mode and capture sizes, the
compile ranges, the splitting ops), written once, in vLLM's order.

The optimisation-level tables are release data: the CUDA-graph mode in
``vllm-X.Y.Z.json``, the fusion passes in ``compile-config-X.Y.Z.json`` (``levels``:
a constant, or the name of one of the functions of :data:`LEVEL_RULES`).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kernelcfg.targets.presets import Target
from kernelcfg.vllm.compile_model import ConfigRefusedError, ModelFacts

if TYPE_CHECKING:
    from kernelcfg.vllm.compile_rules import Build
    from kernelcfg.vllm.inputs import Inputs

__all__ = [
    "LEVEL_RULES",
    "batch_invariant_breakable",
    "construct",
    "gpt_oss_hook",
    "post_init",
    "tuned_batch_invariant_shape",
]

NONE, VLLM_COMPILE, STOCK = 0, 3, 1
"""``CompilationMode`` values."""


def _mode(value: Any) -> int:
    """``-cc.mode`` (a name in any case, or 0-3) as ``CompilationMode``'s int."""
    if isinstance(value, str):
        names = ("NONE", "STOCK_TORCH_COMPILE", "DYNAMO_TRACE_ONCE", "VLLM_COMPILE")
        return names.index(value.upper())
    return int(value)


def _cudagraph(value: Any) -> str:
    """``-cc.cudagraph_mode`` (a name in any case, or 0-2) as a ``CUDAGraphMode`` name."""
    if isinstance(value, str):
        return value.upper()
    return ("NONE", "PIECEWISE", "FULL")[int(value)]


_SEPARATE = {"FULL_DECODE_ONLY": ("FULL", "NONE"), "FULL_AND_PIECEWISE": ("FULL", "PIECEWISE")}


def _has(mode: str, part: str) -> bool:
    """``CUDAGraphMode.has_mode``."""
    return part in _SEPARATE.get(mode, (mode,))


def _without_piecewise(mode: str) -> str:
    """``CUDAGraphMode.without_piecewise``."""
    return {"PIECEWISE": "NONE", "FULL_AND_PIECEWISE": "FULL_DECODE_ONLY"}.get(mode, mode)


def _mixed(mode: str) -> str:
    """``CUDAGraphMode.mixed_mode``."""
    return _SEPARATE[mode][1] if mode in _SEPARATE else mode


# ----------------------------------------------------------------- construction


def construct(b: Build) -> None:
    """``create_engine_config``'s compilation config: ``-cc``, the top-level capture
    size flags, then ``CompilationConfig.__post_init__``."""
    cc = b.cc
    given = b.options.get("compilation_config") or {}
    for key, value in given.items():
        if key == "mode":
            cc["mode"] = _mode(value)
        elif key == "cudagraph_mode":
            cc["cudagraph_mode"] = _cudagraph(value)
        elif key in ("pass_config", "dynamic_shapes_config") and isinstance(value, dict):
            cc[key].update(value)
        elif key in ("inductor_passes",) and value:
            b.unknown["compilation_config"] = "-cc.inductor_passes"
        else:
            cc[key] = value
    _top_level_sizes(b, given)
    if cc.get("compile_cache_save_format", 0) is not None and "compile_cache_save_format" not in given:
        cc["compile_cache_save_format"] = b.envs("VLLM_COMPILE_CACHE_SAVE_FORMAT")
    _compilation_post_init(b)


def _top_level_sizes(b: Build, given: dict[str, Any]) -> None:
    """``--cudagraph-capture-sizes`` / ``--max-cudagraph-capture-size``: one or the
    ``-cc`` field, not both."""
    for name in ("cudagraph_capture_sizes", "max_cudagraph_capture_size"):
        value = b.options.get(name)
        if value is None:
            continue
        if name in given and given[name] is not None:
            raise ConfigRefusedError(
                "ValueError",
                f"{name} and compilation_config.{name} are mutually exclusive",
                "",
            )
        b.cc[name] = value


def _compilation_post_init(b: Build) -> None:
    """``CompilationConfig.__post_init__``: the inductor config defaults, the RoPE
    custom op the requested fusions need, combo kernels, the platform's backend."""
    cc = b.cc
    inductor = cc["inductor_compile_config"]
    if isinstance(inductor, list):
        inductor = dict(inductor)
    inductor.setdefault("enable_auto_functionalized_v2", False)
    passes = cc["pass_config"]
    for flag in ("enable_qk_norm_rope_fusion", "fuse_rope_kvcache", "fuse_qk_norm_rope_kvcache"):
        if passes.get(flag) and "+rotary_embedding" not in cc["custom_ops"]:
            cc["custom_ops"].append("+rotary_embedding")
    if (
        b.kind != "cpu"
        and "combo_kernels" not in inductor
        and "benchmark_combo_kernel" not in inductor
    ):
        inductor["combo_kernels"] = True
        inductor["benchmark_combo_kernel"] = not inductor.get("deterministic", False)
    cc["inductor_compile_config"] = inductor
    if cc["backend"] == "":
        cc["backend"] = "inductor"
    _pass_platform(b)


def _pass_platform(b: Build) -> None:
    """``PassConfig.__post_init__``: fusions the platform cannot run are switched off."""
    passes = b.cc["pass_config"]
    rocm_only = ("fuse_act_padding", "fuse_mla_dual_rms_norm", "fuse_rope_kvcache")
    for flag in (*rocm_only, "fuse_qk_norm_rope_kvcache"):
        if passes.get(flag) and b.kind != "rocm":
            passes[flag] = False
    if passes.get("enable_qk_norm_rope_fusion") and b.kind not in ("cuda", "rocm", "xpu"):
        passes["enable_qk_norm_rope_fusion"] = False
    if passes.get("fuse_rope_kvcache_cat_mla") and b.kind not in ("cuda", "rocm"):
        passes["fuse_rope_kvcache_cat_mla"] = False


def gpt_oss_hook(b: Build) -> None:
    """``GptOssForCausalLMConfig.verify_and_update_config``: the capture sizes widened
    to the legacy 1024-token cap, unless a size was given or on SM100."""
    cc = b.cc
    split = "prefill_cudagraph_capture_token_sizes" in cc
    names = ["cudagraph_capture_sizes", "max_cudagraph_capture_size"]
    if split:
        names += [
            "prefill_cudagraph_capture_token_sizes",
            "max_prefill_cudagraph_capture_tokens",
            "decode_cudagraph_capture_request_sizes",
            "max_decode_cudagraph_capture_requests",
        ]
    if any(cc.get(n) is not None for n in names):
        return
    if not split:
        cc["max_cudagraph_capture_size"] = 1024
        return
    if b.capability_family(100):
        return
    tokens = min(b.values["SchedulerConfig"]["max_num_batched_tokens"], 1024)
    sizes = {1, 2, 4, *range(8, 256, 8), *range(256, 1024, 16)}
    cc["prefill_cudagraph_capture_token_sizes"] = sorted({s for s in sizes if s < tokens} | {tokens})
    cc["max_decode_cudagraph_capture_requests"] = 1024 // 1


# ----------------------------------------------------------------- __post_init__


def _custom_op_enabled(custom_ops: list[str], op: str) -> bool:
    """``CompilationConfig.is_custom_op_enabled``."""
    if "all" in custom_ops:
        return f"-{op}" not in custom_ops
    return f"+{op}" in custom_ops


def _batch_invariant_breakable(b: Build) -> bool:
    """``_uses_breakable_cudagraph_for_batch_invariance`` for the launch being built."""
    if b.model is None or b.hf is None or b.options.get("enforce_eager"):
        return False
    return tuned_batch_invariant_shape(
        b.data, b.target, b.hf, b.pc["tensor_parallel_size"], b.model
    )


def batch_invariant_breakable(version: str, target: Target, inputs: Inputs) -> bool:
    """Whether ``VLLM_BATCH_INVARIANT=1`` turns breakable CUDA graphs on for this
    launch (``_uses_breakable_cudagraph_for_batch_invariance``): read from the model's
    config.json; ``False`` without one, or where vLLM refuses the model."""
    from kernelcfg.vllm.compile_config import config_data
    from kernelcfg.vllm.compile_model import model_facts
    from kernelcfg.vllm.compile_rules import supported_dtypes

    if inputs.hf_config is None or inputs.enforce_eager or target.kind != "cuda":
        return False
    data = config_data(version)
    try:
        facts = model_facts(
            data["model_facts"],
            inputs.hf_config,
            inputs.options,
            (target.kind, supported_dtypes(target)),
            mla_disabled=False,
        )
    except ConfigRefusedError:
        return False
    return tuned_batch_invariant_shape(
        data, target, inputs.hf_config, inputs.tensor_parallel_size, facts
    )


def tuned_batch_invariant_shape(
    data: Mapping[str, Any],
    target: Target,
    hf: Mapping[str, Any],
    tp: int,
    model: ModelFacts,
) -> bool:
    """``_uses_breakable_cudagraph_for_batch_invariance`` (without the variable and
    ``--enforce-eager``): an unquantised bf16 model on CUDA whose qkv, o, gate_up or down
    projection has a tuned batch-invariant matmul shape on the device's family."""
    if target.kind != "cuda" or model.dtype != "torch.bfloat16" or model.quantization:
        return False
    major, _, minor = (target.capability or "").partition(".")
    family = {"12": "sm120", "10": "blackwell", "9": "hopper"}.get(major)
    if major == "8" and minor == "9":
        family = "ada"
    table = data.get("batch_invariant_shapes", {}).get(family or "")
    if not table:
        return False
    shapes = {tuple(s) for s in table}
    return bool(shapes & set(_matmul_shapes(hf, tp)))


def _matmul_shapes(hf: Mapping[str, Any], tp: int) -> Iterable[tuple[int, int]]:
    """The qkv, o, gate_up and down projection shapes per tensor-parallel rank."""
    text = hf.get("text_config") or hf
    hidden = int(text.get("hidden_size", 0))
    total_heads = int(text.get("num_attention_heads", 0))
    head = int(text.get("head_dim") or (hidden // total_heads if total_heads else 0))
    heads = total_heads // tp
    total_kv = int(text.get("num_key_value_heads") or total_heads)
    kv = max(1, total_kv // tp)
    yield ((heads + 2 * kv) * head, hidden)
    yield (hidden, heads * head)
    inter = text.get("intermediate_size")
    if isinstance(inter, int):
        yield (2 * inter // tp, hidden)
        yield (hidden, inter // tp)


def _breakable(b: Build) -> bool:
    """``_maybe_enable_breakable_cudagraph``: the variable, the model's default, or
    batch invariance on a tuned shape."""
    from kernelcfg.vllm import releases

    if "VLLM_USE_BREAKABLE_CUDAGRAPH" in b.env:
        enabled = bool(b.envs("VLLM_USE_BREAKABLE_CUDAGRAPH"))
    elif b.model is not None and b.model.architecture in releases.load(
        b.data["vllm_version"]
    ).breakable_architectures(b.kind):
        enabled = True
    else:
        enabled = b.envs("VLLM_BATCH_INVARIANT") and _batch_invariant_breakable(b)
    if "use_breakable_cudagraph" in b.cc:
        b.cc["use_breakable_cudagraph"] = enabled
    if enabled:
        b.cc["mode"] = NONE
    return enabled


def _blocked_weights(b: Build) -> bool:
    """``has_blocked_weights``: the checkpoint's quantisation uses weight blocks."""
    quant = None if b.model is None else b.model.quant_config
    if not quant or b.model is None or b.model.quantization is None:
        return False
    if b.model.quantization in ("fp8", "deepseek_v4_fp8") or "weight_block_size" in quant:
        return quant.get("weight_block_size") is not None
    if b.model.quantization == "compressed-tensors":
        groups = quant.get("config_groups") or {}
        return any(
            (g.get("weights") or {}).get("strategy") == "block"
            for g in groups.values()
            if isinstance(g, dict)
        )
    return False


def _quant_fp8(b: Build) -> None:
    if _blocked_weights(b) and "-quant_fp8" not in b.cc["custom_ops"]:
        b.cc["custom_ops"].append("+quant_fp8")


def _rocm_platform_defaults(b: Build) -> None:
    """``RocmPlatform.apply_config_platform_defaults``: the custom ops AITER and the
    platform default on."""
    ops = b.cc["custom_ops"]
    aiter = b.aiter_found() and b.envs("VLLM_ROCM_USE_AITER")
    if aiter and b.envs("VLLM_ROCM_USE_AITER_LINEAR") and "-quant_fp8" not in ops:
        ops.append("+quant_fp8")
    if b.envs("VLLM_BATCH_INVARIANT") and "-rms_norm" not in ops:
        ops.append("+rms_norm")
    moe = aiter and b.envs("VLLM_ROCM_USE_AITER_MOE")
    if moe and "+grouped_topk" not in ops and "-grouped_topk" not in ops:
        ops.append("+grouped_topk")
    ops.append("+sparse_attn_indexer")
    quantized = b.model is None or b.model.quantization is not None
    if not quantized and "+rms_norm_gated" not in ops and "-rms_norm_gated" not in ops:
        ops.append("+rms_norm_gated")
    if b.model is None:
        b.unknown.setdefault("compilation_config", "the model's quantisation (ROCm custom ops)")


def _ir_first(b: Build, op: str) -> str | None:
    lists = (b.kernel or {}).get("ir_op_priority") or {}
    found = lists.get(op) or []
    return found[0] if found else None


def _splitting_ops_contain_kv_cache_update(b: Build) -> bool:
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
    ops = b.cc["custom_ops"]
    first = _ir_first(b, "rms_norm")
    if b.kernel is None:
        b.unknown.setdefault("compilation_config", "the kernel config (IR op priority)")
    return (
        _custom_op_enabled(ops, "rms_norm")
        or _custom_op_enabled(ops, "quant_fp8")
        or (first is not None and first != "native")
    )


def _act_fusion(b: Build) -> bool:
    ops = b.cc["custom_ops"]
    nvfp4 = b.model is not None and _is_nvfp4(b)
    return _custom_op_enabled(ops, "silu_and_mul") or _custom_op_enabled(ops, "quant_fp8") or nvfp4


def _is_nvfp4(b: Build) -> bool:
    m = b.model
    assert m is not None
    if m.quantization == "modelopt_fp4":
        return True
    quant = m.quant_config or {}
    return m.quantization == "compressed-tensors" and "nvfp4" in str(quant.get("format", "")).lower()


def _allreduce_fusion(b: Build) -> bool | None:
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
    return (
        _ir_first(b, "fused_add_rms_norm") == "aiter"
        and b.model is not None
        and b.model.hidden_size == 2880
    )


def _rope_kvcache_fusion(b: Build) -> bool | None:
    enabled = b.aiter_enabled()
    return enabled and (
        _custom_op_enabled(b.cc["custom_ops"], "rotary_embedding")
        and (b.cc["use_inductor_graph_partition"] or not _splitting_ops_contain_kv_cache_update(b))
    )


def _rope_kvcache_mla_fusion(b: Build) -> bool:
    return bool(
        b.cc["use_inductor_graph_partition"] or not _splitting_ops_contain_kv_cache_update(b)
    )


def _qk_norm_rope_kvcache(b: Build) -> bool | None:
    if not b.aiter_enabled():
        return False
    return _custom_op_enabled(b.cc["custom_ops"], "rotary_embedding")


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


def _level_defaults(b: Build) -> None:
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
    if isinstance(value, dict) and "rule" in value:
        rule = LEVEL_RULES.get(value["rule"])
        if rule is None:
            b.unknown.setdefault("compilation_config", f"the -O rule {value['rule']}")
            return None
        return rule(b)
    return value


def _normalize_piecewise(b: Build) -> None:
    """``_normalize_piecewise_cudagraph_mode``."""
    cc = b.cc
    if _has(cc["cudagraph_mode"], "PIECEWISE") and cc["mode"] != VLLM_COMPILE and not b.breakable:
        cc["cudagraph_mode"] = _without_piecewise(cc["cudagraph_mode"])
        if cc["cudagraph_mode"] == "NONE":
            cc["max_cudagraph_capture_size"] = 0
            cc["cudagraph_capture_sizes"] = []


def _torch_at_least(b: Build, version: str) -> bool:
    from kernelcfg.vllm.compile_env import env_data, version_order

    pin = env_data(b.data["vllm_version"])["torch_pin"]
    return bool(version_order(pin) >= version_order(version))


def post_init(b: Build) -> None:
    """The compilation steps of ``VllmConfig.__post_init__``, in its order."""
    cc = b.cc
    eager = bool(b.options.get("enforce_eager"))
    if eager:
        cc["mode"], cc["cudagraph_mode"] = NONE, "NONE"
    if b.env.get("TORCH_COMPILE_DISABLE") == "1":
        cc["mode"] = NONE
    b.breakable = _breakable(b)
    _quant_fp8(b)
    if b.kind == "rocm":
        _rocm_platform_defaults(b)
    if cc["mode"] is None:
        cc["mode"] = VLLM_COMPILE if b.level > 0 else NONE
    if cc.get("ir_enable_torch_wrap", 0) is None:
        cc["ir_enable_torch_wrap"] = cc["mode"] == VLLM_COMPILE and cc["backend"] == "inductor"
    if all(s not in cc["custom_ops"] for s in ("all", "none")):
        inductor = cc["backend"] == "inductor" and cc["mode"] != NONE
        cc["custom_ops"].append("none" if inductor else "all")
    _level_defaults(b)
    _normalize_piecewise(b)
    if "fast_moe_cold_start" in cc:
        if _torch_at_least(b, "2.11"):
            cc["fast_moe_cold_start"] = False
        elif cc["fast_moe_cold_start"] is None:
            cc["fast_moe_cold_start"] = True
    _graph_sizes(b, eager)
    if b.kind == "rocm" and _has(cc["cudagraph_mode"], "FULL"):
        if b.pc.get("prefill_context_parallel_size", 1) > 1:
            cc["cudagraph_mode"] = "PIECEWISE"
    if b.kind == "cpu":
        cpu_platform(b)
    _normalize_piecewise(b)
    if cc["mode"] == STOCK and cc["cudagraph_mode"] != "NONE":
        cc["cudagraph_mode"] = "NONE"
        cc["max_cudagraph_capture_size"] = 0
        cc["cudagraph_capture_sizes"] = []
    _compile_ranges(b)
    _splitting_ops(b)
    _quant_fp8(b)


def cpu_platform(b: Build) -> None:
    """``CpuPlatform.check_and_update_config``: no capture sizes; ``VLLM_COMPILE``
    becomes a single Dynamo trace with the CPU's inductor options; MLA without AMX
    (the reference kernel) takes block size 16 and no chunked prefill."""
    cc = b.cc
    cc["cudagraph_capture_sizes"] = []
    if cc["mode"] == VLLM_COMPILE:
        cc["mode"] = 2
        cc["backend"] = "eager" if b.envs("VLLM_CPU_CI_ENV") else "inductor"
        cc["inductor_compile_config"].update(
            {
                "dce": True,
                "size_asserts": False,
                "nan_asserts": False,
                "epilogue_fusion": True,
                "cpp.dynamic_threads": True,
            }
        )
        cc["ir_enable_torch_wrap"] = False
    machine = b.target.device
    if machine.startswith(("aarch64", "arm")):
        b.unknown.setdefault("compilation_config", "the ARM CPU's custom ops")
    c = b.values["CacheConfig"]
    if b.cpu_avx512_bf16 and c.get("mamba_ssm_cache_dtype") not in ("float32", None):
        if c["mamba_ssm_cache_dtype"] in ("float16", "bfloat16"):
            b.unknown.setdefault("cache_config", "the CPU's mamba backend")
        c["mamba_ssm_cache_dtype"] = "float32"
    m = b.model
    if m is not None and m.use_mla:
        c["block_size"] = 16
        s = b.values["SchedulerConfig"]
        s["max_num_batched_tokens"] = max(
            m.max_model_len, b.const("SchedulerConfig", "DEFAULT_MAX_NUM_BATCHED_TOKENS")
        )


def _graph_sizes(b: Build, eager: bool) -> None:
    """The static-graph platforms' step: warm-ups and the capture sizes (the CPU has
    no CUDA graphs)."""
    cc = b.cc
    if b.kind not in ("cuda", "rocm"):
        cc["cudagraph_mode"] = "NONE"
        return
    if eager:
        cc["cudagraph_mode"] = "NONE"
        cc["max_cudagraph_capture_size"] = 0
        cc["cudagraph_capture_sizes"] = []
    else:
        cc["cudagraph_num_of_warmups"] = 1
    _set_cudagraph_sizes(b, eager)


def _set_cudagraph_sizes(b: Build, eager: bool) -> None:
    """``VllmConfig._set_cudagraph_sizes`` (one decode token per request: no
    speculative decoding)."""
    cc = b.cc
    s = b.values["SchedulerConfig"]
    if eager or cc["cudagraph_mode"] == "NONE" or b.model is None:
        cc["max_cudagraph_capture_size"] = 0
        cc["cudagraph_capture_sizes"] = []
        _compile_sizes(b)
        return
    legacy = cc["max_cudagraph_capture_size"] is not None or cc["cudagraph_capture_sizes"] is not None
    max_size = cc["max_cudagraph_capture_size"]
    decode: list[int] = []
    seqs, tokens = s["max_num_seqs"], s["max_num_batched_tokens"]
    if max_size is None:
        default = 1024 if b.capability_family(100) else 512
        max_size = min(seqs * 2, default)
        if seqs <= max_size:
            decode = [seqs]
    max_size = min(tokens, max_size)
    if cc["cudagraph_capture_sizes"] is not None:
        sizes = sorted(i for i in set(cc["cudagraph_capture_sizes"]) if i <= tokens)
    else:
        sizes = [i for i in (1, 2, 4) if i <= max_size]
        if max_size >= 8:
            sizes += list(range(8, min(max_size + 1, 256), 8))
        if max_size >= 256:
            sizes += list(range(256, max_size + 1, 16))
        if tokens <= max_size and tokens not in sizes:
            sizes.append(tokens)
        sizes = sorted(set(sizes + [d for d in decode if d <= tokens]))
    valid = sizes[-1] if sizes else 0
    if (
        cc["max_cudagraph_capture_size"] is not None
        and cc["max_cudagraph_capture_size"] != valid
        and cc["cudagraph_capture_sizes"] is not None
    ):
        raise ConfigRefusedError(
            "ValidationError",
            f"customized max_cudagraph_capture_size(={cc['max_cudagraph_capture_size']}) "
            f"should be consistent with the max value of cudagraph_capture_sizes(={valid})",
        )
    cc["max_cudagraph_capture_size"] = valid
    cc["cudagraph_capture_sizes"] = sizes
    if "prefill_cudagraph_capture_token_sizes" in cc:
        _split_sizes(b, legacy)
    _compile_sizes(b)


def _compile_sizes(b: Build) -> None:
    """``post_init_cudagraph_sizes``: ``compile_sizes`` (``cudagraph_capture_sizes``
    stands for the capture sizes)."""
    cc = b.cc
    out: list[int] = []
    for x in list(dict.fromkeys(cc["compile_sizes"] or [])):
        out.extend(cc["cudagraph_capture_sizes"] if isinstance(x, str) else [x])
    cc["compile_sizes"] = out
    cc["cudagraph_capture_sizes"] = sorted(cc["cudagraph_capture_sizes"])


def _walk_grid(limit: int, step: Callable[[float], float]) -> list[int]:
    """``_walk_grid``: 1 to ``limit``, each size the next multiple of the largest power
    of two not above ``step(size)``."""
    grid, size = [], 1
    while size < limit:
        grid.append(size)
        stride = 1 << max(0, math.floor(math.log2(max(1.0, step(size)))))
        size = (size // stride + 1) * stride
    return [*grid, limit] if limit else []


def _prefill_grid(max_tokens: int) -> list[int]:
    """``prefill_cudagraph_capture_grid`` (not the interactivity mode)."""
    return _walk_grid(max_tokens, lambda t: min(t, max(8, t / 4), 0.07 * max(t, 4096)))


def _decode_grid(max_requests: int) -> list[int]:
    """``decode_cudagraph_capture_grid``."""
    return _walk_grid(max_requests, lambda n: 0.65 * n ** (2 / 3))


def _decode_shapes(sizes: list[int], max_reqs: int, max_tokens: int) -> set[int]:
    """``decode_cudagraph_capture_shapes`` for one token per request: the request
    counts captured, the first above the limit captured at the limit."""
    ordered = sorted(set(sizes))
    limit = min(max_reqs, max_tokens)
    if limit < 1:
        return set()
    reachable = ordered[: bisect.bisect_left(ordered, limit) + 1]
    return {min(n, limit) for n in reachable}


def _split_sizes(b: Build, legacy: bool) -> None:
    """``_split_cudagraph_capture_sizes`` (one decode token per request)."""
    cc = b.cc
    s = b.values["SchedulerConfig"]
    seqs, tokens = s["max_num_seqs"], s["max_num_batched_tokens"]
    prefill = cc["prefill_cudagraph_capture_token_sizes"]
    max_prefill = cc["max_prefill_cudagraph_capture_tokens"]
    decode = cc["decode_cudagraph_capture_request_sizes"]
    max_decode = cc["max_decode_cudagraph_capture_requests"]
    split = any(x is not None for x in (prefill, max_prefill, decode, max_decode))
    shared, shared_max = list(cc["cudagraph_capture_sizes"]), cc["max_cudagraph_capture_size"]
    wide = not legacy and b.capability_family(100)
    if wide and cc["max_decode_cudagraph_capture_tokens"] is None:
        cc["max_decode_cudagraph_capture_tokens"] = 8192
    if prefill is not None:
        prefill = _explicit(prefill, tokens, max_prefill, "prefill_cudagraph_capture_token_sizes")
    elif max_prefill is not None or wide:
        prefill = _prefill_grid(min(8192 if max_prefill is None else max_prefill, tokens))
    else:
        prefill = list(shared)
    if decode is not None:
        decode = _explicit(decode, seqs, max_decode, "decode_cudagraph_capture_request_sizes")
    elif max_decode is not None or wide:
        decode = _decode_grid(seqs if max_decode is None else min(max_decode, seqs))
    else:
        decode = sorted({min(x, seqs) for x in shared if x <= shared_max})
    cc["prefill_cudagraph_capture_token_sizes"] = prefill
    cc["max_prefill_cudagraph_capture_tokens"] = max(prefill, default=0)
    cc["decode_cudagraph_capture_request_sizes"] = decode
    cc["max_decode_cudagraph_capture_requests"] = max(decode, default=0)
    decode_max = min(tokens, cc["max_decode_cudagraph_capture_tokens"] or tokens)
    decode_tokens = _decode_shapes(decode, seqs, decode_max)
    token_sizes = decode_tokens | set(prefill)
    if not (legacy and not split) and _mixed(cc["cudagraph_mode"]) == "NONE":
        token_sizes = set(decode_tokens)
    if legacy and split:
        token_sizes = set(shared)
    cc["cudagraph_capture_sizes"] = sorted(token_sizes)
    cc["max_cudagraph_capture_size"] = max(token_sizes, default=0)
    if not token_sizes:
        cc["cudagraph_mode"] = "NONE"


def _explicit(sizes: list[int], limit: int, cap: int | None, name: str) -> list[int]:
    kept = sorted({x for x in sizes if 1 <= x <= limit})
    if cap is not None and kept and kept[-1] > cap:
        cap_name = name.replace("_sizes", "s").replace("capture_token", "capture_tokens")
        raise ConfigRefusedError("ValidationError", f"{name} holds {kept[-1]}, above {cap_name}={cap}.")
    return kept


def _compile_ranges(b: Build) -> None:
    """``_set_compile_ranges``: up to ``max_num_batched_tokens``, with the fusion
    passes' bounds below it."""
    cc = b.cc
    end = b.values["SchedulerConfig"]["max_num_batched_tokens"]
    points = [end]
    passes = cc["pass_config"]
    if passes.get("fuse_allreduce_rms"):
        b.unknown.setdefault("compilation_config", "the all-reduce fusion's token bound")
    for flag in ("fuse_rope_kvcache", "fuse_qk_norm_rope_kvcache"):
        bound = passes.get("rope_kvcache_fusion_max_token_num")
        if passes.get(flag) and bound is not None and bound < end:
            points.append(bound)
    for x in cc["compile_ranges_endpoints"] or []:
        if 1 < x < end:
            points.append(x)
    cc["compile_ranges_endpoints"] = sorted(points)


def _splitting_ops(b: Build) -> None:
    """``set_splitting_ops_for_v1``: the attention ops split the graph (and the KV-cache
    update ops, without inductor graph partition)."""
    cc = b.cc
    p = b.pc
    dp = p["data_parallel_size"] if b.model is None or b.model.is_moe else 1
    if cc["mode"] != VLLM_COMPILE:
        if cc["splitting_ops"] is None:
            cc["splitting_ops"] = []
        _deepep_ht(b, dp)
        return
    if cc["pass_config"].get("fuse_attn_quant") and not cc["use_inductor_graph_partition"]:
        if cc["splitting_ops"] is None:
            cc["splitting_ops"] = []
            if _has(cc["cudagraph_mode"], "PIECEWISE"):
                cc["cudagraph_mode"] = "FULL"
    elif cc["splitting_ops"] is None:
        cc["splitting_ops"] = list(b.const("CompilationConfig", "_attention_ops"))
        if not cc["use_inductor_graph_partition"]:
            cc["pass_config"]["fuse_rope_kvcache"] = _off(cc["pass_config"], "fuse_rope_kvcache")
            cc["pass_config"]["fuse_qk_norm_rope_kvcache"] = _off(
                cc["pass_config"], "fuse_qk_norm_rope_kvcache"
            )
            cc["splitting_ops"] += ["vllm::unified_kv_cache_update", "vllm::unified_mla_kv_cache_update"]
    elif len(cc["splitting_ops"]) == 0:
        if cc["cudagraph_mode"] == "PIECEWISE":
            cc["cudagraph_mode"] = "NONE"
        elif cc["cudagraph_mode"] == "FULL_AND_PIECEWISE":
            cc["cudagraph_mode"] = "FULL"
    _deepep_ht(b, dp)


def _off(passes: dict[str, Any], flag: str) -> Any:
    """A fusion switched off when on (``None`` stays ``None``)."""
    value = passes.get(flag)
    return False if value else value


def _deepep_ht(b: Build, dp: int) -> None:
    if b.pc["all2all_backend"] == "deepep_high_throughput" and dp > 1:
        b.cc["cudagraph_mode"] = "NONE"


def ceil_div(a: int, c: int) -> int:
    """``cdiv``."""
    return math.ceil(a / c)

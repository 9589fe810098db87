"""The compilation config vLLM hashes: ``-cc``, ``CompilationConfig.__post_init__``, then
the steps of ``VllmConfig.__post_init__`` that change it (``-O`` and its fusion passes,
the base custom ops, breakable CUDA graphs, the CUDA-graph mode, the platform's changes,
the compile ranges, the splitting ops), written once, in vLLM's order. The capture sizes
are :mod:`kernelcfg.vllm.compile_cache.capture`'s, the fusion passes of ``-O``
:mod:`kernelcfg.vllm.compile_cache.passes`'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kernelcfg.targets.presets import Target
from kernelcfg.vllm.compile_cache.capture import graph_sizes, has_mode, without_piecewise
from kernelcfg.vllm.compile_cache.model import ConfigRefusedError, ModelFacts
from kernelcfg.vllm.compile_cache.passes import level_defaults

if TYPE_CHECKING:
    from kernelcfg.vllm.compile_cache.state import Build
    from kernelcfg.vllm.inputs import Inputs

__all__ = [
    "batch_invariant_breakable",
    "construct",
    "cpu_platform",
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
    if (
        cc.get("compile_cache_save_format", 0) is not None
        and "compile_cache_save_format" not in given
    ):
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
    from kernelcfg.vllm.compile_cache.model import model_facts
    from kernelcfg.vllm.compile_cache.state import config_data, supported_dtypes

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
    """The ``+quant_fp8`` custom op blocked weights turn on (unless ``-quant_fp8``)."""
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


def _normalize_piecewise(b: Build) -> None:
    """``_normalize_piecewise_cudagraph_mode``."""
    cc = b.cc
    if (
        has_mode(cc["cudagraph_mode"], "PIECEWISE")
        and cc["mode"] != VLLM_COMPILE
        and not b.breakable
    ):
        cc["cudagraph_mode"] = without_piecewise(cc["cudagraph_mode"])
        if cc["cudagraph_mode"] == "NONE":
            cc["max_cudagraph_capture_size"] = 0
            cc["cudagraph_capture_sizes"] = []


def _torch_at_least(b: Build, version: str) -> bool:
    """Whether the torch the release pins is at least ``version``."""
    from kernelcfg.vllm.compile_cache.env import env_data, version_order

    pin = env_data(b.data["vllm_version"])["torch_pin"]
    return bool(version_order(pin) >= version_order(version))


def post_init(b: Build) -> None:
    """The compilation steps of ``VllmConfig.__post_init__``, in its order."""
    eager = bool(b.options.get("enforce_eager"))
    _mode_and_custom_ops(b, eager)
    level_defaults(b)
    _normalize_piecewise(b)
    cc = b.cc
    if "fast_moe_cold_start" in cc:
        if _torch_at_least(b, "2.11"):
            cc["fast_moe_cold_start"] = False
        elif cc["fast_moe_cold_start"] is None:
            cc["fast_moe_cold_start"] = True
    graph_sizes(b, eager)
    _platform_check(b)
    _normalize_piecewise(b)
    if cc["mode"] == STOCK and cc["cudagraph_mode"] != "NONE":
        cc["cudagraph_mode"] = "NONE"
        cc["max_cudagraph_capture_size"] = 0
        cc["cudagraph_capture_sizes"] = []
    _compile_ranges(b)
    _splitting_ops(b)
    _quant_fp8(b)


def _mode_and_custom_ops(b: Build, eager: bool) -> None:
    """``--enforce-eager``, ``TORCH_COMPILE_DISABLE``, breakable CUDA graphs, the custom
    ops blocked weights and the platform turn on, then the mode ``-O`` gives, the IR
    torch wrap and the base custom op (``none`` under inductor, else ``all``)."""
    cc = b.cc
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


def _platform_check(b: Build) -> None:
    """``check_and_update_config``: prefill context parallelism has no full CUDA graphs
    on ROCm; the CPU's own changes."""
    cc = b.cc
    pcp = b.pc.get("prefill_context_parallel_size", 1)
    if b.kind == "rocm" and has_mode(cc["cudagraph_mode"], "FULL") and pcp > 1:
        cc["cudagraph_mode"] = "PIECEWISE"
    if b.kind == "cpu":
        cpu_platform(b)


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
    if b.cpu_arm:
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
    else:
        _compiled_splitting_ops(b)
    _deepep_ht(b, dp)


def _compiled_splitting_ops(b: Build) -> None:
    """The split under ``VLLM_COMPILE``: none when attention and quantisation fuse outside
    an inductor partition (piecewise graphs then become full ones), else the attention
    ops (and the KV-cache update ops, their rope fusions off, without a partition); an
    empty list given leaves nothing piecewise."""
    cc = b.cc
    if cc["pass_config"].get("fuse_attn_quant") and not cc["use_inductor_graph_partition"]:
        if cc["splitting_ops"] is None:
            cc["splitting_ops"] = []
            if has_mode(cc["cudagraph_mode"], "PIECEWISE"):
                cc["cudagraph_mode"] = "FULL"
    elif cc["splitting_ops"] is None:
        ops = list(b.const("CompilationConfig", "_attention_ops"))
        if not cc["use_inductor_graph_partition"]:
            cc["pass_config"]["fuse_rope_kvcache"] = _off(cc["pass_config"], "fuse_rope_kvcache")
            cc["pass_config"]["fuse_qk_norm_rope_kvcache"] = _off(
                cc["pass_config"], "fuse_qk_norm_rope_kvcache"
            )
            ops += ["vllm::unified_kv_cache_update", "vllm::unified_mla_kv_cache_update"]
        cc["splitting_ops"] = ops
    elif len(cc["splitting_ops"]) == 0:
        if cc["cudagraph_mode"] == "PIECEWISE":
            cc["cudagraph_mode"] = "NONE"
        elif cc["cudagraph_mode"] == "FULL_AND_PIECEWISE":
            cc["cudagraph_mode"] = "FULL"


def _off(passes: dict[str, Any], flag: str) -> Any:
    """A fusion switched off when on (``None`` stays ``None``)."""
    value = passes.get(flag)
    return False if value else value


def _deepep_ht(b: Build, dp: int) -> None:
    """DeepEP high-throughput kernels take no CUDA graphs (data parallel MoE)."""
    if b.pc["all2all_backend"] == "deepep_high_throughput" and dp > 1:
        b.cc["cudagraph_mode"] = "NONE"

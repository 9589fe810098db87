"""The values vLLM derives while building its config, for the config hash: the steps of
``EngineArgs.create_engine_config`` and ``VllmConfig.__post_init__`` that change a
hashed field, written once, in vLLM's order.

:func:`run` takes a :class:`~kernelcfg.vllm.compile_cache.state.Build` (every config class at
its release defaults), applies the launch's options the way ``create_engine_config``
passes them on, then the derivations: the model, cache, parallel and scheduler steps are
here, the compilation config's in :mod:`kernelcfg.vllm.compile_cache.graph`. What a rule cannot
know is recorded in ``Build.unknown`` (attribute name to the reason) instead of being
guessed; where vLLM refuses the launch, :class:`ConfigRefusedError` carries its reason.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial

from kernelcfg.vllm.checkpoint import kv_cache_dtype_of
from kernelcfg.vllm.compile_cache import graph
from kernelcfg.vllm.compile_cache.capture import gpt_oss_hook
from kernelcfg.vllm.compile_cache.model import ConfigRefusedError, model_facts
from kernelcfg.vllm.compile_cache.scope import unmodelled
from kernelcfg.vllm.compile_cache.state import Build, capability

__all__ = ["DEVICE_MEMORY_GIB", "ConfigRefusedError", "run"]

DEVICE_MEMORY_GIB: dict[str, float] = {
    "Tesla V100-SXM2-32GB": 31.7,
    "Tesla T4": 14.6,
    "NVIDIA A100-SXM4-80GB": 80.0,
    "NVIDIA A100-SXM4-40GB": 40.0,
    "NVIDIA A10G": 22.0,
    "NVIDIA GeForce RTX 4090": 23.6,
    "NVIDIA L4": 22.0,
    "NVIDIA L40S": 45.0,
    "NVIDIA H100 80GB HBM3": 79.6,
    "NVIDIA H100 PCIe": 79.6,
    "NVIDIA H200": 140.4,
    "NVIDIA GH200 480GB": 95.0,
    "NVIDIA B200": 179.1,
    "NVIDIA GB200": 184.0,
    "NVIDIA B300 SXM6 AC": 268.0,
    "NVIDIA GB300": 268.0,
    "NVIDIA Jetson AGX Thor": 122.0,
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": 94.97,
    "NVIDIA GeForce RTX 5090": 31.4,
    "NVIDIA GB10": 119.7,
    "AMD Instinct MI210": 64.0,
    "AMD Instinct MI250X": 64.0,
    "AMD Instinct MI300X": 192.0,
    "AMD Instinct MI325X": 256.0,
    "AMD Instinct MI350X": 288.0,
    "AMD Instinct MI355X": 288.0,
    "AMD Radeon RX 7900 XTX": 24.0,
    "AMD Radeon RX 9070 XT": 16.0,
}
"""Total memory (GiB) each preset device reports: only the tier matters to vLLM
(``EngineArgs.get_batch_defaults``: at least 160 GiB; at least 70 GiB and not an A100
nor a GB10; else the small tier)."""

_MODEL_DEPENDENT = (
    "model_config",
    "cache_config",
    "parallel_config",
    "compilation_config",
    "attention_config",
)
"""Parts that read the model's config.json (the scheduler's only while a bound is not
given: :meth:`Build.scheduler_config` says so itself)."""


def run(b: Build) -> None:
    """Every step, in vLLM's order (raises :class:`ConfigRefusedError` where vLLM
    refuses)."""
    for step in steps(b):
        step()


def steps(b: Build) -> list[Callable[[], None]]:
    """``create_engine_config``, then ``VllmConfig.__post_init__``."""
    return [
        partial(validate_environ, b),
        partial(model_config, b),
        partial(cache_config, b),
        partial(parallel_config, b),
        partial(scheduler_config, b),
        partial(offload_and_others, b),
        partial(graph.construct, b),
        partial(model_hooks, b),
        partial(parallel_post_init, b),
        partial(verify_with_parallel, b),
        partial(quant_config, b),
        partial(graph.post_init, b),
        partial(attention_post_init, b),
        partial(unmodelled, b),
    ]


def validate_environ(b: Build) -> None:
    """``Platform.validate_environ``: removed or refused variables."""
    from kernelcfg.vllm import releases
    from kernelcfg.vllm.kernel_config import rules

    release = releases.load(b.data["vllm_version"])
    for problem in rules.environment_problems(release, b.env):
        if problem.severity == "error":
            raise ConfigRefusedError("ValueError", problem.message, "")


# ----------------------------------------------------------------- model


def model_config(b: Build) -> None:
    """``create_model_config``: the model as written, the options passed as given,
    and the facts read from config.json."""
    pass_options(b, "ModelConfig")
    model = b.options.get("model_tag") or b.options.get("model")
    b.set("ModelConfig", "model", model)
    if isinstance(model, str) and _hub_id(model):
        # resolve_revision: the Hub's answer is a str equal to the revision asked for
        # ("main" when none was); a local folder keeps the revision as given.
        b.set("ModelConfig", "revision", b.options.get("revision") or "main")
    if b.hf is None:
        for part in _MODEL_DEPENDENT:
            b.unknown[part] = "no config.json for the model"
        return
    b.model = model_facts(
        b.data["model_facts"],
        b.hf,
        b.options,
        (b.kind, b.supported_dtypes()),
        mla_disabled=bool(b.envs("VLLM_MLA_DISABLE")),
    )
    m = b.values["ModelConfig"]
    m["dtype"] = b.model.dtype
    m["max_model_len"] = b.model.max_model_len
    m["quantization"] = b.model.quantization


def _hub_id(model: str) -> bool:
    """Whether vLLM takes ``model`` for a Hugging Face Hub id: no folder of that name
    here, and not written as a path (an absolute path names a folder on the machine the
    launch is for)."""
    if model.startswith(("/", ".", "~")) or os.path.exists(model):
        return False
    return model.count("/") <= 1


def pass_options(b: Build, cls: str) -> None:
    """Options ``create_engine_config`` hands to ``cls`` unchanged."""
    for dest, value in b.options.items():
        arg = b.data["engine_args"].get(dest)
        if arg is None or arg["owner"][0] != cls or not arg["passed"]:
            continue
        b.set(cls, arg["owner"][1], value)


# ----------------------------------------------------------------- cache


def cache_config(b: Build) -> None:
    """``CacheConfig``: the block size (the release's default unless given), the KV
    cache dtype (``auto``: the checkpoint's KV-cache scheme), the sliding window."""
    pass_options(b, "CacheConfig")
    c = b.values["CacheConfig"]
    given = b.options.get("block_size")
    c["block_size"] = given if given is not None else b.const("CacheConfig", "DEFAULT_BLOCK_SIZE")
    dtype = b.options.get("kv_cache_dtype") or "auto"
    if dtype == "auto" and b.model is not None:
        dtype = kv_cache_dtype_of(b.model.quant_config) or "auto"
    c["cache_dtype"] = dtype
    if b.model is not None:
        c["sliding_window"] = b.model.sliding_window


# -------------------------------------------------------------- parallel


def parallel_config(b: Build) -> None:
    """``ParallelConfig`` and its ``__post_init__``: the world size, the elastic-EP
    bound, the data-parallel size, whether the model is a mixture of experts."""
    pass_options(b, "ParallelConfig")
    p = b.pc
    for name in ("tensor_parallel_size", "data_parallel_size"):
        if name in b.options:
            p[name] = int(b.options[name])
    if "enable_expert_parallel" in b.options:
        p["enable_expert_parallel"] = bool(b.options["enable_expert_parallel"])
    p["all2all_backend"] = b.options.get("all2all_backend_resolved", p["all2all_backend"])
    p["is_moe_model"] = None if b.model is None else b.model.is_moe
    pcp = p.get("prefill_context_parallel_size", 1)
    p["world_size"] = p["pipeline_parallel_size"] * p["tensor_parallel_size"] * pcp
    if p["data_parallel_size"] <= 1 and p.get("data_parallel_size_local", 1) != 0:
        p["data_parallel_size"] = int(b.envs("VLLM_DP_SIZE"))
    if "elastic_ep_max_dp_size" in p:
        bound = p["elastic_ep_max_dp_size"]
        p["elastic_ep_max_dp_size"] = (
            bound if p.get("enable_elastic_ep") and bound is not None else p["data_parallel_size"]
        )
    _world_fits(b)


def _world_fits(b: Build) -> None:
    """``ParallelConfig.__post_init__``: a CUDA world larger than the node's GPUs."""
    p = b.pc
    across = p["world_size"] * p["data_parallel_size"]
    count = 8
    if b.kind == "cuda" and across > 1 and p["world_size"] > count:
        raise ConfigRefusedError(
            "ValidationError",
            f"World size ({p['world_size']}) is larger than the number of available "
            f"GPUs ({count}) in this node. If this is intentional and you are using:\n"
            "- ray, set '--distributed-executor-backend ray'.\n"
            "- multiprocessing, set '--nnodes' appropriately.",
            "ParallelConfig",
        )


def parallel_post_init(b: Build) -> None:
    """``set_dcp_defaults``, the EPLB redundant experts, ``is_moe_model``, the DP
    synchronisation switch and batch-sharded sampling (``VllmConfig.__post_init__``)."""
    p = b.pc
    if p.get("dcp_comm_backend", 0) is None:
        p["dcp_comm_backend"] = "ag_rs"
    if p.get("dcp_q_replicate", 0) is None:
        p["dcp_q_replicate"] = False
    if b.model is not None:
        _eplb_redundant(b, b.model.num_experts)
        p["is_moe_model"] = b.model.is_moe
    if p.get("disable_nccl_for_dp_synchronization", 0) is None:
        p["disable_nccl_for_dp_synchronization"] = async_scheduling(b)
    if p.get("enable_batch_sharded_sampling", 0) is None:
        p["enable_batch_sharded_sampling"] = False


def async_scheduling(b: Build) -> bool:
    """Whether async scheduling is on when the DP switch is decided: as given (the Ray
    executor refuses it), else on, except with the Ray executor or with pipeline
    parallelism on the V1 model runner."""
    given = b.options.get("async_scheduling")
    ray = b.options.get("distributed_executor_backend") == "ray"
    if given and ray:
        raise ConfigRefusedError("ValueError", "`ray` does not support async scheduling yet.", "")
    if given is not None:
        return bool(given)
    return not (ray or (b.pc["pipeline_parallel_size"] > 1 and v1_model_runner(b)))


def v1_model_runner(b: Build) -> bool:
    """Whether the release's V1 model runner runs the launch (0.33 and before):
    ``VLLM_USE_V2_MODEL_RUNNER=0``, or unset without Triton (a CPU target: kernelcfg
    takes the CPU install to have no triton-cpu, as the reference vectors' had)."""
    from kernelcfg.vllm import releases

    release = releases.load(b.data["vllm_version"])
    if "VLLM_USE_V2_MODEL_RUNNER" in release.rules.get("env_validation", {}):
        return False  # the release has no V1 runner
    if "VLLM_USE_V2_MODEL_RUNNER" in b.env:
        return not b.envs("VLLM_USE_V2_MODEL_RUNNER")
    return b.kind == "cpu"


def _eplb_redundant(b: Build, experts: int) -> None:
    """``compute_eplb_num_redundant_experts``: 0 unless EPLB is on."""
    eplb = b.pc.get("eplb_config")
    if not isinstance(eplb, list):
        return
    items = dict(eplb[1])
    if items.get("num_redundant_experts") is not None:
        return
    p = b.pc
    if p.get("enable_eplb"):
        ep = p["tensor_parallel_size"] * p.get("prefill_context_parallel_size", 1)
        ep *= p["data_parallel_size"]
        items["num_redundant_experts"] = (ep - experts % ep) % ep
    else:
        items["num_redundant_experts"] = 0
    b.pc["eplb_config"] = [eplb[0], sorted([k, v] for k, v in items.items())]


def verify_with_parallel(b: Build) -> None:
    """``ModelConfig.verify_with_parallel_config``: heads divisible by the tensor
    parallel size; expert parallelism only for a mixture of experts."""
    if b.model is None:
        return
    p = b.pc
    heads = b.model.num_attention_heads
    tp = p["tensor_parallel_size"]
    if heads is not None and heads % tp != 0:
        raise ConfigRefusedError(
            "ValidationError",
            f"Total number of attention heads ({heads}) must be divisible by tensor "
            f"parallel size ({tp}).",
        )
    if p["enable_expert_parallel"] and not b.model.is_moe:
        raise ConfigRefusedError(
            "ValidationError",
            "Number of experts in the model must be greater than 0 when expert "
            "parallelism is enabled.",
        )


def quant_config(b: Build) -> None:
    """``VllmConfig._get_quantization_config``: the activation dtypes the method
    takes."""
    m = b.model
    if m is None or m.quantization is None:
        return
    dtypes = b.data.get("quant_act_dtypes", {}).get(m.quantization)
    if dtypes is not None and m.dtype not in dtypes:
        raise ConfigRefusedError(
            "ValidationError",
            f"{m.dtype} is not supported for quantization method {m.quantization}. "
            f"Supported dtypes: [{', '.join(dtypes)}]",
        )


# ------------------------------------------------------------- scheduler


def scheduler_config(b: Build) -> None:
    """``_set_default_max_num_seqs_and_batched_tokens_args``: the memory tier's
    defaults, bounded by the model length."""
    pass_options(b, "SchedulerConfig")
    s = b.values["SchedulerConfig"]
    tokens = b.options.get("max_num_batched_tokens")
    seqs = b.options.get("max_num_seqs")
    if tokens is not None and seqs is not None:
        s["max_num_batched_tokens"], s["max_num_seqs"] = tokens, seqs
        return
    tier = _batch_defaults(b)
    if tier is None or (tokens is None and b.model is None):
        b.unknown["scheduler_config"] = (
            "the device's memory" if tier is None else "the model's maximum length"
        )
        tier = tier or (0, 0)
    default_tokens, default_seqs = tier
    s["max_num_batched_tokens"] = default_tokens if tokens is None else tokens
    s["max_num_seqs"] = default_seqs if seqs is None else seqs
    if tokens is None and b.model is not None:
        if b.options.get("enable_chunked_prefill") is False:
            s["max_num_batched_tokens"] = max(b.model.max_model_len, s["max_num_batched_tokens"])
        s["max_num_batched_tokens"] = min(
            s["max_num_seqs"] * b.model.max_model_len, s["max_num_batched_tokens"]
        )
    if seqs is None:
        s["max_num_seqs"] = min(s["max_num_seqs"], s["max_num_batched_tokens"])


def _batch_defaults(b: Build) -> tuple[int, int] | None:
    """``get_batch_defaults`` for ``vllm serve`` (OPENAI_API_SERVER)."""
    p = b.pc
    if b.kind == "cpu":
        world = p["pipeline_parallel_size"] * p["tensor_parallel_size"]
        return 2048 * world, 128 * world
    if (
        p["enable_expert_parallel"]
        and p["data_parallel_size"] > 1
        and p["all2all_backend"] in ("deepep_low_latency", "nixl_ep")
    ):
        return b.const("SchedulerConfig", "DEFAULT_MAX_NUM_BATCHED_TOKENS_FOR_BATCHED_DP"), 1024
    memory = DEVICE_MEMORY_GIB.get(b.target.device)
    if memory is None:
        return None
    name = b.target.device.lower()
    small = capability(b.target) == (12, 1)
    if memory >= 160:
        return 16384, 1024
    if memory >= 70 and "a100" not in name and not small:
        return 8192, 1024
    return 2048, 256


# ------------------------------------------------------------------ rest


def offload_and_others(b: Build) -> None:
    """Options passed as given to the configs no rule derives."""
    for cls in ("LoadConfig", "OffloadConfig", "AuxOutputConfig", "StructuredOutputsConfig"):
        if cls in b.values:
            pass_options(b, cls)


def model_hooks(b: Build) -> None:
    """``try_verify_and_update_config``: the model's own hook (GPT-OSS widens the
    capture sizes); a hook kernelcfg does not model makes the parts it may change
    unknown."""
    if b.model is None:
        return
    arch = b.model.architecture
    if arch == "GptOssForCausalLM":
        gpt_oss_hook(b)
    elif arch in b.data.get("model_hooks", ()):
        for part in ("compilation_config", "cache_config", "scheduler_config"):
            b.unknown.setdefault(part, f"{arch}'s config hook")


def attention_post_init(b: Build) -> None:
    """``sparse_mla_prefill_workspace_factor``: 5 up to 256K tokens, else 2."""
    if b.model is not None and "AttentionConfig" in b.values:
        a = b.values["AttentionConfig"]
        if a.get("sparse_mla_prefill_workspace_factor", 0) is None:
            a["sparse_mla_prefill_workspace_factor"] = (
                5 if b.model.max_model_len <= 256 * 1024 else 2
            )

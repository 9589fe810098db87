"""The values vLLM derives while building its config, for the config hash: the steps of
``EngineArgs.create_engine_config`` and ``VllmConfig.__post_init__`` that change a
hashed field, written once, in vLLM's order.

A :class:`Build` starts from every config class's defaults (release data,
``compile-config-X.Y.Z.json``), applies the launch's options the way
``create_engine_config`` passes them on, then the derivations. What a rule cannot know
is recorded in :attr:`Build.unknown` (attribute name to the reason) instead of being
guessed; where vLLM refuses the launch, :class:`ConfigRefusedError` carries its reason.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from kernelcfg.targets.presets import Target
from kernelcfg.vllm.compile_model import ConfigRefusedError, ModelFacts, model_facts

__all__ = ["UNSET", "Build", "ConfigRefusedError", "supported_dtypes"]

UNSET = object()
"""A field whose default is not a constant and that no rule has set."""

GIB = 1 << 30

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

_CUDA_LIKE = ("cuda", "rocm")


def _capability(target: Target) -> tuple[int, int] | None:
    if target.capability:
        major, _, minor = target.capability.partition(".")
        return int(major), int(minor or 0)
    if target.kind == "rocm" and target.gfx_arch:
        from kernelcfg.targets.presets import gfx_capability

        return gfx_capability(target.gfx_arch)
    return None


def supported_dtypes(target: Target) -> list[str]:
    """``current_platform.supported_dtypes``: no bfloat16 on CUDA before 8.0."""
    cap = _capability(target)
    if target.kind == "cuda" and cap is not None and cap[0] * 10 + cap[1] < 80:
        return ["torch.float16", "torch.float32"]
    return ["torch.bfloat16", "torch.float16", "torch.float32"]


class Build:
    """One launch's config, as vLLM builds it: field values per config class."""

    def __init__(
        self,
        data: Mapping[str, Any],
        target: Target,
        options: Mapping[str, Any],
        env: Mapping[str, str],
        hf: Mapping[str, Any] | None,
        *,
        install: str = "pip",
        kernel: Mapping[str, Any] | None = None,
    ) -> None:
        self.data = data
        self.target = target
        self.options = dict(options)
        self.env = env
        self.hf = hf
        self.install = install
        self.kernel = kernel
        self.unknown: dict[str, str] = {}
        self.values: dict[str, dict[str, Any]] = {
            name: self._defaults(name) for name in data["configs"]
        }
        self.model: ModelFacts | None = None
        self.level = int(options.get("optimization_level", 2))
        self.breakable = False
        self.cpu_avx512_bf16 = True
        """Whether an x86 CPU target has AVX512-BF16 (vLLM asks torch; kernelcfg
        assumes a current server CPU, as the reference vectors' host had)."""

    # ------------------------------------------------------------------ data

    def _defaults(self, name: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in self.data["configs"][name]["fields"]:
            default = f.get("default")
            if "nested" in f and f["nested"] in self.data["configs"]:
                out[f["name"]] = self._defaults(f["nested"])
            elif self._config_instance(default):
                out[f["name"]] = self._defaults(default[0].rsplit(".", 1)[-1])
            elif "default" in f:
                out[f["name"]] = copy.deepcopy(f["default"])
            else:
                out[f["name"]] = UNSET
        return out

    def _config_instance(self, default: Any) -> bool:
        """Whether a normalised default is an instance of a config class the data
        describes (``[fqn, items]``): it is then held as that class's values."""
        return (
            isinstance(default, list)
            and len(default) == 2
            and isinstance(default[0], str)
            and default[0].rsplit(".", 1)[-1] in self.data["configs"]
        )

    def const(self, cls: str, name: str) -> Any:
        """A class constant of the release (``CacheConfig.DEFAULT_BLOCK_SIZE`` …)."""
        return self.data["configs"][cls].get("constants", {})[name]

    @property
    def cc(self) -> dict[str, Any]:
        """``CompilationConfig``'s values."""
        return self.values["CompilationConfig"]

    @property
    def pc(self) -> dict[str, Any]:
        """``ParallelConfig``'s values."""
        return self.values["ParallelConfig"]

    def has(self, cls: str, name: str) -> bool:
        """Whether the release's ``cls`` has the field ``name``."""
        return name in self.values[cls]

    def set(self, cls: str, name: str, value: Any) -> None:
        """Set a field the release has (fields it lacks are skipped)."""
        if name in self.values[cls]:
            self.values[cls][name] = value

    # -------------------------------------------------------------- platform

    @property
    def kind(self) -> str:
        """vLLM's platform: ``cuda``, ``rocm``, ``cpu`` …"""
        return self.target.kind

    def capability_family(self, family: int) -> bool:
        """``is_device_capability_family(100)``: the same major."""
        cap = _capability(self.target)
        return self.kind == "cuda" and cap is not None and cap[0] * 10 == family

    def capability_is(self, value: int) -> bool:
        """``is_device_capability(90)``."""
        cap = _capability(self.target)
        return self.kind == "cuda" and cap is not None and cap[0] * 10 + cap[1] == value

    def supported_dtypes(self) -> list[str]:
        """``current_platform.supported_dtypes``."""
        return supported_dtypes(self.target)

    def aiter_found(self) -> bool:
        """``is_aiter_found_and_supported``: ROCm, a CDNA3+ gfx9 device, and the aiter
        library (the official ROCm image, or every optional library)."""
        arch = self.target.gfx_arch or ""
        return (
            self.kind == "rocm"
            and arch.startswith(("gfx94", "gfx95"))
            and self.install in ("image", "all")
        )

    def aiter_enabled(self) -> bool | None:
        """``rocm_aiter_ops.is_enabled()``: ``None`` where aiter is not supported (its
        decorator returns ``None``)."""
        if not self.aiter_found():
            return None
        return bool(self.envs("VLLM_ROCM_USE_AITER"))

    def envs(self, name: str) -> Any:
        """A variable as the release's ``envs`` reads it (its default when unset)."""
        from kernelcfg.vllm.compile_env import env_value

        return env_value(self.data["vllm_version"], self.env, name)

    def has_flashinfer(self) -> bool:
        """``has_flashinfer()``: the package with its kernels (the official image, or
        every optional library); ``pip install vllm`` alone has no usable kernels."""
        return self.kind == "cuda" and self.install in ("image", "all")

    # ------------------------------------------------------------------ run

    def run(self) -> None:
        """Every step, in vLLM's order."""
        for step in self.steps():
            step()

    def steps(self) -> list[Callable[[], None]]:
        """``create_engine_config``, then ``VllmConfig.__post_init__``."""
        from kernelcfg.vllm import compile_graph as graph

        return [
            self.validate_environ,
            self.model_config,
            self.cache_config,
            self.parallel_config,
            self.scheduler_config,
            self.offload_and_others,
            lambda: graph.construct(self),
            self.model_hooks,
            self.parallel_post_init,
            self.verify_with_parallel,
            self.quant_config,
            lambda: graph.post_init(self),
            self.attention_post_init,
        ]

    def validate_environ(self) -> None:
        """``Platform.validate_environ``: removed or refused variables."""
        from kernelcfg.vllm import releases, rules

        release = releases.load(self.data["vllm_version"])
        for problem in rules.environment_problems(release, self.env):
            if problem.severity == "error":
                raise ConfigRefusedError("ValueError", problem.message, "")

    # ----------------------------------------------------------------- model

    def model_config(self) -> None:
        """``create_model_config``: the model as written, the options passed as given,
        and the facts read from config.json."""
        self.pass_options("ModelConfig")
        model = self.options.get("model_tag") or self.options.get("model")
        self.set("ModelConfig", "model", model)
        if self.hf is None:
            self.unknown["model_config"] = "no config.json for the model"
            return
        self.model = model_facts(
            self.data["model_facts"],
            self.hf,
            self.options,
            (self.kind, self.supported_dtypes()),
            mla_disabled=bool(self.envs("VLLM_MLA_DISABLE")),
        )
        m = self.values["ModelConfig"]
        m["dtype"] = self.model.dtype
        m["max_model_len"] = self.model.max_model_len
        m["quantization"] = self.model.quantization

    def pass_options(self, cls: str) -> None:
        """Options ``create_engine_config`` hands to ``cls`` unchanged."""
        for dest, value in self.options.items():
            arg = self.data["engine_args"].get(dest)
            if arg is None or arg["owner"][0] != cls or not arg["passed"]:
                continue
            self.set(cls, arg["owner"][1], value)

    # ----------------------------------------------------------------- cache

    def cache_config(self) -> None:
        """``CacheConfig``: the block size (the release's default unless given), the KV
        cache dtype (``auto``: the checkpoint's KV-cache scheme), the sliding window."""
        self.pass_options("CacheConfig")
        c = self.values["CacheConfig"]
        given = self.options.get("block_size")
        c["block_size"] = given if given is not None else self.const(
            "CacheConfig", "DEFAULT_BLOCK_SIZE"
        )
        dtype = self.options.get("kv_cache_dtype") or "auto"
        if dtype == "auto" and self.model is not None:
            dtype = _kv_cache_algo(self.model.quant_config) or "auto"
        c["cache_dtype"] = dtype
        if self.model is not None:
            c["sliding_window"] = self.model.sliding_window
        elif self.hf is None:
            self.unknown.setdefault("cache_config", "the model's sliding window (no config.json)")

    # -------------------------------------------------------------- parallel

    def parallel_config(self) -> None:
        """``ParallelConfig`` and its ``__post_init__``: the world size, the elastic-EP
        bound, the data-parallel size, whether the model is a mixture of experts."""
        self.pass_options("ParallelConfig")
        p = self.pc
        for name in ("tensor_parallel_size", "data_parallel_size"):
            if name in self.options:
                p[name] = int(self.options[name])
        if "enable_expert_parallel" in self.options:
            p["enable_expert_parallel"] = bool(self.options["enable_expert_parallel"])
        p["all2all_backend"] = self.options.get("all2all_backend_resolved", p["all2all_backend"])
        p["is_moe_model"] = None if self.model is None else self.model.is_moe
        pcp = p.get("prefill_context_parallel_size", 1)
        p["world_size"] = p["pipeline_parallel_size"] * p["tensor_parallel_size"] * pcp
        if p["data_parallel_size"] <= 1 and p.get("data_parallel_size_local", 1) != 0:
            p["data_parallel_size"] = int(self.envs("VLLM_DP_SIZE"))
        if "elastic_ep_max_dp_size" in p:
            bound = p["elastic_ep_max_dp_size"]
            p["elastic_ep_max_dp_size"] = (
                bound if p.get("enable_elastic_ep") and bound is not None else p["data_parallel_size"]
            )
        self._world_fits()

    def _world_fits(self) -> None:
        """``ParallelConfig.__post_init__``: a CUDA world larger than the node's GPUs."""
        p = self.pc
        across = p["world_size"] * p["data_parallel_size"]
        count = 8
        if self.kind == "cuda" and across > 1 and p["world_size"] > count:
            raise ConfigRefusedError(
                "ValidationError",
                f"World size ({p['world_size']}) is larger than the number of available "
                f"GPUs ({count}) in this node. If this is intentional and you are using:\n"
                "- ray, set '--distributed-executor-backend ray'.\n"
                "- multiprocessing, set '--nnodes' appropriately.",
                "ParallelConfig",
            )

    def parallel_post_init(self) -> None:
        """``set_dcp_defaults``, the EPLB redundant experts, ``is_moe_model``, the DP
        synchronisation switch and batch-sharded sampling (``VllmConfig.__post_init__``)."""
        p = self.pc
        if p.get("dcp_comm_backend", 0) is None:
            p["dcp_comm_backend"] = "ag_rs"
        if p.get("dcp_q_replicate", 0) is None:
            p["dcp_q_replicate"] = False
        if self.model is not None:
            self._eplb_redundant(self.model.num_experts)
            p["is_moe_model"] = self.model.is_moe
        if p.get("disable_nccl_for_dp_synchronization", 0) is None:
            p["disable_nccl_for_dp_synchronization"] = self.async_scheduling()
        if p.get("enable_batch_sharded_sampling", 0) is None:
            p["enable_batch_sharded_sampling"] = False

    def async_scheduling(self) -> bool:
        """Whether async scheduling is on when the DP switch is decided: as given, else
        on, except with pipeline parallelism on the V1 model runner."""
        given = self.options.get("async_scheduling")
        if given is not None:
            return bool(given)
        return not (self.pc["pipeline_parallel_size"] > 1 and self.v1_model_runner())

    def v1_model_runner(self) -> bool:
        """Whether the release's V1 model runner runs the launch (0.33 and before):
        ``VLLM_USE_V2_MODEL_RUNNER=0``, or unset without Triton (a CPU target: kernelcfg
        takes the CPU install to have no triton-cpu, as the reference vectors' had)."""
        from kernelcfg.vllm import releases

        release = releases.load(self.data["vllm_version"])
        if "VLLM_USE_V2_MODEL_RUNNER" in release.rules.get("env_validation", {}):
            return False  # the release has no V1 runner
        if "VLLM_USE_V2_MODEL_RUNNER" in self.env:
            return not self.envs("VLLM_USE_V2_MODEL_RUNNER")
        return self.kind == "cpu"

    def _eplb_redundant(self, experts: int) -> None:
        """``compute_eplb_num_redundant_experts``: 0 unless EPLB is on."""
        eplb = self.pc.get("eplb_config")
        if not isinstance(eplb, list):
            return
        items = dict(eplb[1])
        if items.get("num_redundant_experts") is not None:
            return
        p = self.pc
        if p.get("enable_eplb"):
            ep = p["tensor_parallel_size"] * p.get("prefill_context_parallel_size", 1)
            ep *= p["data_parallel_size"]
            items["num_redundant_experts"] = (ep - experts % ep) % ep
        else:
            items["num_redundant_experts"] = 0
        self.pc["eplb_config"] = [eplb[0], sorted([k, v] for k, v in items.items())]

    def verify_with_parallel(self) -> None:
        """``ModelConfig.verify_with_parallel_config``: heads divisible by the tensor
        parallel size; expert parallelism only for a mixture of experts."""
        if self.model is None:
            return
        p = self.pc
        heads = self.model.num_attention_heads
        tp = p["tensor_parallel_size"]
        if heads is not None and heads % tp != 0:
            raise ConfigRefusedError(
                "ValidationError",
                f"Total number of attention heads ({heads}) must be divisible by tensor "
                f"parallel size ({tp}).",
            )
        if p["enable_expert_parallel"] and not self.model.is_moe:
            raise ConfigRefusedError(
                "ValidationError",
                "Number of experts in the model must be greater than 0 when expert "
                "parallelism is enabled.",
            )

    def quant_config(self) -> None:
        """``VllmConfig._get_quantization_config``: the activation dtypes the method
        takes."""
        m = self.model
        if m is None or m.quantization is None:
            return
        dtypes = self.data.get("quant_act_dtypes", {}).get(m.quantization)
        if dtypes is not None and m.dtype not in dtypes:
            raise ConfigRefusedError(
                "ValidationError",
                f"{m.dtype} is not supported for quantization method {m.quantization}. "
                f"Supported dtypes: [{', '.join(dtypes)}]",
            )

    # ------------------------------------------------------------- scheduler

    def scheduler_config(self) -> None:
        """``_set_default_max_num_seqs_and_batched_tokens_args``: the memory tier's
        defaults, bounded by the model length."""
        self.pass_options("SchedulerConfig")
        s = self.values["SchedulerConfig"]
        tokens = self.options.get("max_num_batched_tokens")
        seqs = self.options.get("max_num_seqs")
        if tokens is not None and seqs is not None:
            s["max_num_batched_tokens"], s["max_num_seqs"] = tokens, seqs
            return
        tier = self._batch_defaults()
        if tier is None or (tokens is None and self.model is None):
            self.unknown["scheduler_config"] = (
                "the device's memory" if tier is None else "the model's maximum length"
            )
            tier = tier or (0, 0)
        default_tokens, default_seqs = tier
        s["max_num_batched_tokens"] = default_tokens if tokens is None else tokens
        s["max_num_seqs"] = default_seqs if seqs is None else seqs
        if tokens is None and self.model is not None:
            if self.options.get("enable_chunked_prefill") is False:
                s["max_num_batched_tokens"] = max(
                    self.model.max_model_len, s["max_num_batched_tokens"]
                )
            s["max_num_batched_tokens"] = min(
                s["max_num_seqs"] * self.model.max_model_len, s["max_num_batched_tokens"]
            )
        if seqs is None:
            s["max_num_seqs"] = min(s["max_num_seqs"], s["max_num_batched_tokens"])

    def _batch_defaults(self) -> tuple[int, int] | None:
        """``get_batch_defaults`` for ``vllm serve`` (OPENAI_API_SERVER)."""
        p = self.pc
        if self.kind == "cpu":
            world = p["pipeline_parallel_size"] * p["tensor_parallel_size"]
            return 2048 * world, 128 * world
        if p["enable_expert_parallel"] and p["data_parallel_size"] > 1 and p[
            "all2all_backend"
        ] in ("deepep_low_latency", "nixl_ep"):
            return self.const("SchedulerConfig", "DEFAULT_MAX_NUM_BATCHED_TOKENS_FOR_BATCHED_DP"), 1024
        memory = DEVICE_MEMORY_GIB.get(self.target.device)
        if memory is None:
            return None
        name = self.target.device.lower()
        small = (12, 1) == _capability(self.target)
        if memory >= 160:
            return 16384, 1024
        if memory >= 70 and "a100" not in name and not small:
            return 8192, 1024
        return 2048, 256

    # ------------------------------------------------------------------ rest

    def offload_and_others(self) -> None:
        """Options passed as given to the configs no rule derives."""
        for cls in ("LoadConfig", "OffloadConfig", "AuxOutputConfig", "StructuredOutputsConfig"):
            if cls in self.values:
                self.pass_options(cls)

    def model_hooks(self) -> None:
        """``try_verify_and_update_config``: the model's own hook (GPT-OSS widens the
        capture sizes); a hook kernelcfg does not model makes the parts it may change
        unknown."""
        if self.model is None:
            return
        arch = self.model.architecture
        from kernelcfg.vllm import compile_graph as graph

        if arch == "GptOssForCausalLM":
            graph.gpt_oss_hook(self)
        elif arch in self.data.get("model_hooks", ()):
            for part in ("compilation_config", "cache_config", "scheduler_config"):
                self.unknown.setdefault(part, f"{arch}'s config hook")

    def attention_post_init(self) -> None:
        """``sparse_mla_prefill_workspace_factor``: 5 up to 256K tokens, else 2."""
        if self.model is not None and "AttentionConfig" in self.values:
            a = self.values["AttentionConfig"]
            if a.get("sparse_mla_prefill_workspace_factor", 0) is None:
                a["sparse_mla_prefill_workspace_factor"] = (
                    5 if self.model.max_model_len <= 256 * 1024 else 2
                )


def _kv_cache_algo(quant: Mapping[str, Any] | None) -> str | None:
    """``get_kv_cache_quant_algo_string``: a ModelOpt checkpoint's KV-cache scheme as a
    cache dtype (other methods: none)."""
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
        if algo.get("dynamic") is False and algo.get("num_bits") == 8 and algo.get("type") == "float":
            algo = "fp8"
        elif algo.get("num_bits") == 4 and algo.get("type") == "float":
            algo = "nvfp4"
        else:
            return "auto"
    if isinstance(algo, str):
        return {"fp8": "fp8_e4m3", "nvfp4": "nvfp4"}.get(algo.lower(), "auto")
    return None

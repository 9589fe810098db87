"""Inputs to a resolved kernel configuration, in vLLM's start-up order. Pure.

The steps follow ``EngineArgs.create_engine_config`` and ``VllmConfig.__post_init__``:
build the kernel config (``--kernel-config``, then top-level overrides), the LoRA
rule, the compilation mode, ``set_platform_defaults`` (the DeepSeek-V4 check, the
passthrough binding, the platform's IR-op defaults), the optimisation-level table,
the platform's later adjustments, and the hash. Each step's refusals become
problems; what could be resolved is always returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from kernelcfg.config import KernelConfigBase, config_classes
from kernelcfg.context import Compilation, ResolutionContext
from kernelcfg.errors import KernelcfgError
from kernelcfg.inputs import Inputs
from kernelcfg.platforms import Target
from kernelcfg.problems import EXIT_USAGE, Problem, exit_code
from kernelcfg.releases import Release

__all__ = ["Resolution", "resolve"]

_PIECEWISE = {"PIECEWISE": "NONE", "FULL_AND_PIECEWISE": "FULL_DECODE_ONLY"}


@dataclass
class Resolution:
    """What vLLM would make of one set of kernel flags on one target."""

    release: Release
    """The vLLM release resolved for."""
    target: Target
    """The platform resolved for."""
    kernel_config: dict[str, Any] | None = None
    """Every field of the resolved kernel config; ``None`` if it could not be built."""
    parallel: dict[str, Any] = field(default_factory=dict)
    """The parallel settings that bear on kernels (all2all backend after binding)."""
    compilation: dict[str, Any] = field(default_factory=dict)
    """Compilation mode, backend and CUDA-graph mode, as finally reported."""
    ir_dispatch: dict[str, list[str]] = field(default_factory=dict)
    """Per IR op, the providers dispatch would try on the target, in order."""
    hash: str | None = None
    """The compile-cache hash of the kernel config, when vLLM could compute it."""
    hash_factors: dict[str, Any] | None = None
    """Exactly what was hashed."""
    ir_hash_factors: dict[str, Any] | None = None
    """What the IR-op sub-hash digested."""
    problems: list[Problem] = field(default_factory=list)
    """Everything found, errors first in the order found."""
    sources: dict[str, str] = field(default_factory=dict)
    """Where each resolved value came from."""
    inputs: Inputs | None = None
    """The inputs resolved."""

    @property
    def valid(self) -> bool:
        """No errors."""
        return not any(p.severity == "error" for p in self.problems)

    def exit_code(self, *, strict: bool = False) -> int:
        """0 valid, 1 refused at engine build or by the target, 2 refused while reading."""
        return exit_code(self.problems, strict=strict)


def _validation_problem(exc: ValidationError, flag: str) -> Problem:
    """A pydantic error from ``--kernel-config`` as vLLM's parser would report it."""
    lines = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"])
        lines.append(f"{loc}: {err['msg']} (got {err['input']!r})")
    return Problem(
        "error",
        "invalid-kernel-config",
        str(exc.errors()[0]["loc"][0]) if exc.errors() else None,
        f"argument {flag}: " + "; ".join(lines),
        EXIT_USAGE,
    )


def _build_kernel_config(
    release: Release, inputs: Inputs, result: Resolution
) -> KernelConfigBase | None:
    classes = config_classes(release)
    try:
        config = classes.KernelConfig(**inputs.kernel_config)
    except ValidationError as exc:
        result.problems.append(_validation_problem(exc, "--kernel-config"))
        return None
    for name in inputs.kernel_config:
        result.sources[name] = inputs.sources.get(f"kernel_config.{name}", "--kernel-config")

    if inputs.enable_flashinfer_autotune is not None:
        if config.values()["enable_flashinfer_autotune"] is not None:
            result.problems.append(
                Problem(
                    "error",
                    "autotune-given-twice",
                    "enable_flashinfer_autotune",
                    "enable_flashinfer_autotune and kernel_config.enable_flashinfer_autotune "
                    "are mutually exclusive: give --enable-flashinfer-autotune or "
                    "--kernel-config.enable_flashinfer_autotune, not both (vLLM refuses "
                    "both even when they agree)",
                )
            )
        else:
            config.enable_flashinfer_autotune = inputs.enable_flashinfer_autotune  # type: ignore[attr-defined]
            result.sources["enable_flashinfer_autotune"] = "flag"
    if inputs.monokernel:
        config.monokernel = True  # type: ignore[attr-defined]
        result.sources["monokernel"] = "flag"
    for name in ("moe_backend", "linear_backend", "sparse_indexer_topk_backend"):
        value = getattr(inputs, name)
        if value != "auto":
            setattr(config, name, value)
            result.sources[name] = inputs.sources.get(name, "flag")
    ir = config.ir_op_priority
    for op, lst in inputs.ir_op_priority.items():
        if not lst:
            continue
        if getattr(ir, op):
            result.problems.append(
                Problem(
                    "error",
                    "ir-priority-given-twice",
                    f"ir_op_priority.{op}",
                    f"Op priority for {op} specified via both ir_op_priority and "
                    "KernelConfig.ir_op_priority, only one allowed at a time: give it "
                    f"with --ir-op-priority.{op} or --kernel-config.ir_op_priority.{op}",
                )
            )
            continue
        setattr(ir, op, list(lst))
        result.sources[f"ir_op_priority.{op}"] = "flag"
    if any(ir.op_lists().values()):
        message = release.rules.get("engine", {}).get("ir_op_priority_deprecation")
        if message:
            result.problems.append(
                Problem("warning", "ir-op-priority-deprecated", "ir_op_priority", message)
            )
    return config


def _compilation(
    release: Release, inputs: Inputs, result: Resolution, config: KernelConfigBase | None
) -> tuple[Compilation, bool]:
    """Compilation settings as decided before the platform defaults (step 3)."""
    rules = release.rules.get("compilation", {})
    mode = inputs.compilation_mode
    cudagraph = inputs.cudagraph_mode
    backend = inputs.compile_backend or "inductor"
    if inputs.enforce_eager:
        mode, cudagraph = "NONE", "NONE"
        result.sources["compilation.mode"] = "--enforce-eager"
        result.sources["compilation.cudagraph_mode"] = "--enforce-eager"
        if (
            config is not None
            and rules.get("enforce_eager_disables_jit_warmup")
            and not inputs.enable_fault_tolerance
        ):
            config.enable_jit_warmup = False  # type: ignore[attr-defined]
            result.sources["enable_jit_warmup"] = "--enforce-eager"
    if inputs.env.get("TORCH_COMPILE_DISABLE") == "1":
        mode = "NONE"
        result.sources["compilation.mode"] = "environment (TORCH_COMPILE_DISABLE=1)"
    breakable = _breakable(release, inputs, result)
    if breakable:
        mode = "NONE"
    if mode is None:
        mode = "NONE" if inputs.optimization_level == 0 else "VLLM_COMPILE"
        result.sources.setdefault("compilation.mode", f"-O{inputs.optimization_level}")
    return Compilation(backend, mode, cudagraph), breakable  # type: ignore[arg-type]


def _breakable(release: Release, inputs: Inputs, result: Resolution) -> bool:
    value = inputs.env.get("VLLM_USE_BREAKABLE_CUDAGRAPH")
    if value is not None:
        if value == "1":
            result.sources["compilation.mode"] = "environment (VLLM_USE_BREAKABLE_CUDAGRAPH=1)"
        return value == "1"
    defaults = release.rules.get("compilation", {}).get("breakable_cudagraph_architectures", {})
    archs = defaults.get(result.target.kind, defaults.get("default", []))
    if inputs.architectures is None:
        return False
    hit = sorted(set(inputs.architectures) & set(archs))
    if hit:
        result.sources["compilation.mode"] = "breakable CUDA graphs (model default)"
        result.problems.append(
            Problem(
                "info",
                "breakable-cudagraph-auto",
                "compilation.mode",
                f"{hit[0]} turns on breakable CUDA graphs by default, so vLLM compiles "
                "nothing (mode NONE); set VLLM_USE_BREAKABLE_CUDAGRAPH=0 to opt out",
            )
        )
        return True
    return False


def _late_compilation(
    release: Release, comp: Compilation, inputs: Inputs, breakable: bool, result: Resolution
) -> None:
    """The optimisation-level CUDA-graph default and the platform's later changes."""
    levels = release.rules.get("compilation", {}).get("optimization_levels", {})
    table = levels.get(str(inputs.optimization_level), {})
    if comp.cudagraph_mode is None:
        comp.cudagraph_mode = table.get("cudagraph_mode")
        result.sources.setdefault(
            "compilation.cudagraph_mode", f"-O{inputs.optimization_level} default"
        )
    else:
        result.sources.setdefault("compilation.cudagraph_mode", "flag")
    piecewise = comp.cudagraph_mode in _PIECEWISE
    if piecewise and comp.mode != "VLLM_COMPILE" and not breakable:
        comp.cudagraph_mode = _PIECEWISE[comp.cudagraph_mode]  # type: ignore[assignment]
    if result.target.kind == "cpu":
        comp.cudagraph_mode = "NONE"
        if comp.mode == "VLLM_COMPILE":
            comp.mode = "DYNAMO_TRACE_ONCE"
            comp.backend = "eager" if inputs.env.get("VLLM_CPU_CI_ENV") else "inductor"


def resolve(inputs: Inputs, target: Target, release: Release) -> Resolution:
    """Resolve ``inputs`` for ``target`` as ``release`` would, problems included."""
    result = Resolution(release, target, problems=list(inputs.notes), inputs=inputs)
    config = _build_kernel_config(release, inputs, result)

    all2all = inputs.all2all_backend
    removed = release.rules.get("engine", {}).get("removed_all2all_backends", [])
    if all2all in removed:
        result.problems.append(
            Problem(
                "warning",
                "all2all-backend-removed",
                "all2all_backend",
                f"The {all2all!r} all2all backend has been removed; vLLM falls back to "
                "'allgather_reducescatter'",
            )
        )
        all2all = "allgather_reducescatter"

    if config is not None and inputs.enable_lora:
        forbidden = release.rules.get("engine", {}).get("lora_forbidden_moe_backends", [])
        if config.moe_backend in forbidden:
            result.problems.append(
                Problem(
                    "error",
                    "lora-with-mega-moe",
                    "moe_backend",
                    f"LoRA is not supported with moe_backend={config.moe_backend!r}. "
                    "Disable LoRA or select a MoE backend that supports LoRA.",
                )
            )

    comp, breakable = _compilation(release, inputs, result, config)
    ctx = ResolutionContext(
        target=target,
        compilation=comp,
        all2all_backend=all2all,
        architectures=inputs.architectures,
        env=inputs.env,
    )
    if config is not None:
        checked = release.moe_ep_model_checked
        if inputs.architectures is None and config.moe_backend in checked:
            result.problems.append(
                Problem(
                    "warning",
                    "architectures-unknown",
                    "moe_backend",
                    f"moe_backend={config.moe_backend!r} is only for DeepSeek-V4 models; "
                    "the model's architectures are unknown, so this could not be checked "
                    "(give --architecture or --hf-config-path)",
                )
            )
        before = {op: list(v) for op, v in config.ir_op_priority.op_lists().items()}
        try:
            config.set_platform_defaults(ctx)
        except KernelcfgError as exc:
            result.problems.append(Problem.from_error(exc))
        for op, lst in config.ir_op_priority.op_lists().items():
            if lst != before[op]:
                result.sources.setdefault(f"ir_op_priority.{op}", "platform default")
                if before[op]:
                    result.sources[f"ir_op_priority.{op}"] = "flag + platform default"

        levels = release.rules.get("compilation", {}).get("optimization_levels", {})
        table = levels.get(str(inputs.optimization_level), {})
        if (
            config.values().get("enable_flashinfer_autotune") is None
            and "enable_flashinfer_autotune" in table
        ):
            config.enable_flashinfer_autotune = table["enable_flashinfer_autotune"]  # type: ignore[attr-defined]
            result.sources["enable_flashinfer_autotune"] = f"-O{inputs.optimization_level} default"

    _late_compilation(release, comp, inputs, breakable, result)
    result.compilation = {
        "mode": comp.mode,
        "backend": comp.backend,
        "cudagraph_mode": comp.cudagraph_mode,
        "optimization_level": inputs.optimization_level,
    }
    result.parallel = {
        "all2all_backend": ctx.all2all_backend,
        "enable_expert_parallel": inputs.enable_expert_parallel,
        "data_parallel_size": inputs.data_parallel_size,
        "tensor_parallel_size": inputs.tensor_parallel_size,
    }
    if ctx.all2all_backend != all2all:
        result.sources["all2all_backend"] = "bound by moe_backend"
    if config is None:
        return result

    result.kernel_config = config.values()
    try:
        result.ir_hash_factors = config.ir_op_priority.hash_factors()
        result.hash_factors = config.hash_factors()
        result.hash = config.compute_hash()
    except KernelcfgError as exc:
        result.problems.append(Problem.from_error(exc))
        return result
    from kernelcfg.ir import registry

    ops = registry(release, target)
    result.ir_dispatch = {
        op: ops.op(op).chain(lst or []) for op, lst in config.ir_op_priority.op_lists().items()
    }
    return result

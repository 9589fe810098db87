"""Inputs to a resolved kernel configuration, in vLLM's start-up order. Pure.

The steps follow ``EngineArgs.create_engine_config`` and ``VllmConfig.__post_init__``:
build the kernel config (``--kernel-config``, then top-level overrides), the LoRA
rule, the compilation mode, ``set_platform_defaults`` (the DeepSeek-V4 check, the
passthrough binding, the platform's IR-op defaults), the optimisation-level table,
the platform's later adjustments, and the hash. Each step's refusals become
problems; what could be resolved is always returned.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kernelcfg.base.answers import LARGE, Answers
from kernelcfg.base.errors import KernelcfgError
from kernelcfg.base.problems import Problem, exit_code
from kernelcfg.engine.attention import AttentionResult, resolve_attention
from kernelcfg.targets.presets import Target
from kernelcfg.vllm.context import Compilation, ResolutionContext
from kernelcfg.vllm.inputs import DEFAULT_ALL2ALL_BACKEND, Inputs
from kernelcfg.vllm.kernel_config import hashing, rules, values
from kernelcfg.vllm.kernel_config.ir import registry
from kernelcfg.vllm.releases import Release

if TYPE_CHECKING:
    from kernelcfg.checks import constraints

__all__ = ["Resolution", "check_context", "resolve"]

_TOP_LEVEL_BACKENDS = ("moe_backend", "linear_backend", "sparse_indexer_topk_backend")


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
    """The kernel-config hash (one factor of the compile-cache key), when vLLM could
    compute it."""
    hash_factors: dict[str, Any] | None = None
    """Exactly what was hashed (one object for equal configurations: read, never change)."""
    problems: list[Problem] = field(default_factory=list)
    """Everything found, in the order found."""
    sources: dict[str, str] = field(default_factory=dict)
    """Where each resolved value came from."""
    inputs: Inputs | None = None
    """The inputs resolved."""
    attention: AttentionResult | None = None
    """The attention config, its hash and selection (releases with attention facts)."""
    selection: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per field left to vLLM's choice (``attention``, ``sparse_indexer_topk_backend``),
    what vLLM picks and the candidates it walks; empty when nothing was asked."""
    compile_cache: dict[str, Any] | None = None
    """The launch's compile-cache key parts (``commands.cache_key``), when asked for."""

    @property
    def valid(self) -> bool:
        """No errors."""
        return not any(p.severity == "error" for p in self.problems)

    def exit_code(self, *, strict: bool = False) -> int:
        """0 valid, 1 refused at engine build or by the target, 2 refused while reading."""
        return exit_code(self.problems, strict=strict)


def _kernel_values(release: Release, inputs: Inputs, result: Resolution) -> dict[str, Any] | None:
    """Step 1: ``--kernel-config``, then the top-level flags over it."""
    config = _validated_kernel_config(release, inputs, result)
    if config is None:
        return None
    for name in inputs.kernel_config:
        result.sources[name] = inputs.sources.get(f"kernel_config.{name}", "--kernel-config")
    _top_level_flags(inputs, config, result)
    ir = config.get("ir_op_priority", {})
    _top_level_ir(inputs, ir, result)
    if any(ir.values()):
        deprecation = release.engine_rules.get("ir_op_priority_deprecation")
        if deprecation:
            result.problems.append(
                Problem("warning", "ir-op-priority-deprecated", "ir_op_priority", deprecation)
            )
    return config


def _validated_kernel_config(
    release: Release, inputs: Inputs, result: Resolution
) -> dict[str, Any] | None:
    """The ``--kernel-config`` values (a copy: later steps change it); ``None`` when
    vLLM refuses them."""
    config = inputs.kernel_values
    if config is None and not inputs.kernel_config:  # nothing given: the defaults
        return values.defaults(release)
    if config is None:
        from kernelcfg.vllm.kernel_config.validation import validate_kernel_config

        try:
            return validate_kernel_config(release, inputs.kernel_config, "--kernel-config")
        except KernelcfgError as exc:
            result.problems.append(
                Problem("error", "invalid-kernel-config", exc.field, exc.message, exc.exit_code)
            )
            return None
    config = {k: (dict(v) if isinstance(v, dict) else v) for k, v in config.items()}
    if "ir_op_priority" in config:
        config["ir_op_priority"] = {op: list(v) for op, v in config["ir_op_priority"].items()}
    return config


def _top_level_flags(inputs: Inputs, config: dict[str, Any], result: Resolution) -> None:
    """``--enable-flashinfer-autotune``, ``--monokernel`` and the backend flags over the
    kernel config, as ``EngineArgs.create_engine_config`` lays them."""
    if inputs.enable_flashinfer_autotune is not None:
        if config.get("enable_flashinfer_autotune") is not None:
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
            config["enable_flashinfer_autotune"] = inputs.enable_flashinfer_autotune
            result.sources["enable_flashinfer_autotune"] = "flag"
    if inputs.monokernel:
        config["monokernel"] = True
        result.sources["monokernel"] = "flag"
    for name in _TOP_LEVEL_BACKENDS:
        value = getattr(inputs, name)
        if value != "auto":
            config[name] = value
            result.sources[name] = inputs.sources.get(name, "flag")


def _top_level_ir(inputs: Inputs, ir: dict[str, Any], result: Resolution) -> None:
    """``--ir-op-priority.OP`` over the kernel config's lists; both for one op is an error."""
    for op, lst in inputs.ir_op_priority.items():
        if not lst:
            continue
        if ir.get(op):
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
        ir[op] = list(lst)
        result.sources[f"ir_op_priority.{op}"] = "flag"


def _breakable(release: Release, inputs: Inputs, result: Resolution) -> bool:
    """Whether breakable CUDA graphs are on (the env, or the model's default)."""
    value = inputs.env.get("VLLM_USE_BREAKABLE_CUDAGRAPH")
    if value is not None:
        if value == "1":
            result.sources["compilation.mode"] = "environment (VLLM_USE_BREAKABLE_CUDAGRAPH=1)"
        return value == "1"
    if inputs.architectures is None:
        return False
    hit = sorted(set(inputs.architectures) & release.breakable_architectures(result.target.kind))
    if not hit:
        return _batch_invariant(release, inputs, result)
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


def _batch_invariant(release: Release, inputs: Inputs, result: Resolution) -> bool:
    """``VLLM_BATCH_INVARIANT=1`` on a model with a tuned batch-invariant matmul shape:
    breakable CUDA graphs, so vLLM compiles nothing (mode NONE)."""
    if "VLLM_BATCH_INVARIANT" not in inputs.env or inputs.hf_config is None:
        return False
    from kernelcfg.vllm import releases
    from kernelcfg.vllm.compile_cache.env import env_value

    if releases.release_data("compile-config", release.version) is None:
        return False
    if not env_value(release.version, inputs.env, "VLLM_BATCH_INVARIANT"):
        return False
    from kernelcfg.vllm.compile_cache.graph import batch_invariant_breakable  # only then

    if not batch_invariant_breakable(release.version, result.target, inputs):
        return False
    result.sources["compilation.mode"] = "breakable CUDA graphs (VLLM_BATCH_INVARIANT=1)"
    result.problems.append(
        Problem(
            "info",
            "breakable-cudagraph-auto",
            "compilation.mode",
            "VLLM_BATCH_INVARIANT=1 on a model with tuned batch-invariant matmul shapes "
            "turns on breakable CUDA graphs, so vLLM compiles nothing (mode NONE); set "
            "VLLM_USE_BREAKABLE_CUDAGRAPH=0 to opt out",
        )
    )
    return True


def _compilation(
    release: Release, inputs: Inputs, result: Resolution, config: dict[str, Any] | None
) -> tuple[Compilation, bool]:
    """Step 3: the compilation mode, decided before the platform defaults."""
    mode = inputs.compilation_mode
    cudagraph = inputs.cudagraph_mode
    if inputs.enforce_eager:
        mode, cudagraph = "NONE", "NONE"
        result.sources["compilation.mode"] = "--enforce-eager"
        result.sources["compilation.cudagraph_mode"] = "--enforce-eager"
        jit_off = release.compilation_rules.get("enforce_eager_disables_jit_warmup")
        if config is not None and jit_off and not inputs.enable_fault_tolerance:
            config["enable_jit_warmup"] = False
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
    compilation = Compilation(inputs.compile_backend or "inductor", mode, cudagraph)  # type: ignore[arg-type]
    return compilation, breakable


def _late_compilation(
    release: Release, comp: Compilation, inputs: Inputs, breakable: bool, result: Resolution
) -> None:
    """Step 5: the level's CUDA-graph default, then what the platform changes later."""
    if comp.cudagraph_mode is None:
        comp.cudagraph_mode = release.level_defaults(inputs.optimization_level).get(
            "cudagraph_mode"
        )
        result.sources.setdefault(
            "compilation.cudagraph_mode", f"-O{inputs.optimization_level} default"
        )
    else:
        result.sources.setdefault("compilation.cudagraph_mode", "flag")
    fallback = release.compilation_rules.get("piecewise_fallback", {})
    if comp.cudagraph_mode in fallback and comp.mode != "VLLM_COMPILE" and not breakable:
        comp.cudagraph_mode = fallback[comp.cudagraph_mode]
    if result.target.kind == "cpu":
        comp.cudagraph_mode = "NONE"
        if comp.mode == "VLLM_COMPILE":
            comp.mode = "DYNAMO_TRACE_ONCE"
            comp.backend = "eager" if inputs.env.get("VLLM_CPU_CI_ENV") else "inductor"


def _all2all(release: Release, inputs: Inputs, result: Resolution) -> str:
    """``naive`` and ``pplx`` are gone: vLLM falls back, with a warning."""
    value = inputs.all2all_backend
    if value in release.engine_rules.get("removed_all2all_backends", []):
        result.problems.append(
            Problem(
                "warning",
                "all2all-backend-removed",
                "all2all_backend",
                f"The {value!r} all2all backend has been removed; vLLM falls back to "
                f"{DEFAULT_ALL2ALL_BACKEND!r}",
            )
        )
        return DEFAULT_ALL2ALL_BACKEND
    return value


def _lora(release: Release, inputs: Inputs, config: dict[str, Any], result: Resolution) -> None:
    forbidden = release.engine_rules.get("lora_forbidden_moe_backends", [])
    if inputs.enable_lora and config["moe_backend"] in forbidden:
        result.problems.append(
            Problem(
                "error",
                "lora-with-mega-moe",
                "moe_backend",
                f"LoRA is not supported with moe_backend={config['moe_backend']!r}. "
                "Disable LoRA or select a MoE backend that supports LoRA.",
            )
        )


def _platform_defaults(
    release: Release,
    inputs: Inputs,
    config: dict[str, Any],
    ctx: ResolutionContext,
    result: Resolution,
) -> None:
    """Step 4: ``set_platform_defaults``, with a warning where the model is unknown."""
    if inputs.architectures is None and config["moe_backend"] in release.moe_ep_model_checked:
        result.problems.append(
            Problem(
                "warning",
                "architectures-unknown",
                "moe_backend",
                f"moe_backend={config['moe_backend']!r} is only for DeepSeek-V4 models; "
                "the model's architectures are unknown, so this could not be checked "
                "(give --architecture or --hf-config-path, or --download for a hub id)",
            )
        )
    lists = config.get("ir_op_priority", {})
    before = {op: bool(lst) for op, lst in lists.items()}
    try:
        rules.set_platform_defaults(release, config["moe_backend"], lists, ctx)
    except KernelcfgError as exc:
        result.problems.append(Problem.from_error(exc))
        return
    for op, given in before.items():
        key = f"ir_op_priority.{op}"
        result.sources[key] = "flag + platform default" if given else "platform default"


def check_context(
    target: Target, version: str, inputs: Inputs, all2all: str | None = None
) -> constraints.Context:
    """The backend-check context of a command line's inputs (the scheme as far as the
    flags and the model's config say)."""
    from kernelcfg.checks.constraints import Context  # from a module: no fromlist walk
    from kernelcfg.vllm.kernels.quantization import (
        scheme_from_quantization,
        schemes_of_quantization,
    )

    method = inputs.quantization  # most lines name none: no lookups then
    scheme = inputs.quant_scheme or (None if method is None else scheme_from_quantization(method))
    return Context(
        target,
        version,
        scheme,
        None if scheme is not None or method is None else schemes_of_quantization(method),
        inputs.env,
        tuple(inputs.architectures) if inputs.architectures is not None else None,
        inputs.enable_expert_parallel,
        all2all,
        _layers(inputs.hf_config),
    )


def _layers(hf_config: dict[str, Any] | None) -> tuple[str, ...] | None:
    """The kinds of layer a backend field is read in that the known model has (``moe``:
    a fused-MoE layer); ``None`` without the model's config.json."""
    if hf_config is None:
        return None
    from kernelcfg.vllm.kernels.moe.layer import moe_model_features  # a model only

    return ("moe",) if moe_model_features(hf_config) is not None else ()


def _constraints(
    release: Release, inputs: Inputs, config: dict[str, Any], all2all: str, result: Resolution
) -> None:
    """Step 6 (kernelcfg's own): can the chosen backends run on the target?"""
    named = [
        (name, value)
        for name in _TOP_LEVEL_BACKENDS
        if (value := config.get(name)) not in (None, "auto")
    ]
    per_quant = config.get("linear_backend_per_quant") or {}
    if not named and not per_quant:
        return
    # Only when a backend is named: keeps cold start lean.
    from kernelcfg.checks.constraints import check
    from kernelcfg.vllm.kernels.quantization import per_quant_keys

    ctx = check_context(result.target, release.version, inputs, all2all)
    verdicts = [(None, check(name, str(value), ctx)) for name, value in named]
    keys = per_quant_keys(release.version) if per_quant else {}
    for key, value in per_quant.items():
        if key not in keys:
            result.problems.append(
                Problem(
                    "warning",
                    "per-quant-key-unknown",
                    f"linear_backend_per_quant.{key}",
                    f"linear_backend_per_quant key {key!r} is never looked up by vLLM "
                    f"{release.version} (silently ignored); keys: {', '.join(keys)}",
                )
            )
            continue
        if value == "auto" or (ctx.scheme is not None and ctx.scheme not in keys[key]):
            continue
        verdict = check("linear_backend_per_quant", value, ctx, schemes=keys[key])
        verdicts.append((key, verdict))
    for key, verdict in verdicts:
        problem = verdict.named_problem
        if problem is not None and key is not None:  # the key it is for, as its field
            problem = dataclasses.replace(problem, field=f"{problem.field}.{key}")
        if problem is not None:
            result.problems.append(problem)


def _selections(
    inputs: Inputs, config: dict[str, Any] | None, result: Resolution, all2all: str
) -> None:
    """Step 7 (kernelcfg's own): the attention config and hash, and what vLLM picks for
    the fields left to its choice (for ``result``'s release and target)."""
    release, target = result.release, result.target
    result.attention = resolve_attention(release, inputs, target, result.problems)
    if result.attention is not None and result.attention.selection is not None:
        result.selection["attention"] = result.attention.selection
    if config is None:
        return
    if inputs.hf_config is not None:
        from kernelcfg.engine.indexer_topk import topk_selection  # cold start: a model only

        picked = topk_selection(release, inputs, target, config)
        if picked is not None:
            result.selection["sparse_indexer_topk_backend"] = picked
    if inputs.quant_scheme or inputs.quantization or inputs.hf_config is not None:
        from kernelcfg.engine.linear import linear_selection  # cold start: a model only

        kernel = linear_selection(release, inputs, target, config, result.problems)
        if kernel is not None:
            result.selection["linear_backend"] = kernel
    if config.get("linear_backend", "auto") != "auto":
        from kernelcfg.engine.linear import explicit_problems as linear_problems

        found = linear_problems(release, inputs, target, config["linear_backend"])
        if any(p.code == "linear-backend-raises" for p in found):
            # the walk says why vLLM raises: the catalogue's word on it (falls back, or
            # refused for the scheme) is replaced, not repeated
            result.problems = [
                p
                for p in result.problems
                if p.field != "linear_backend"
                or p.code not in ("backend-falls-back", "backend-cannot-run")
            ]
        result.problems += found
    _moe_selection(inputs, config, result, all2all)


def _moe_selection(
    inputs: Inputs, config: dict[str, Any], result: Resolution, all2all: str
) -> None:
    """The MoE part of step 7: an explicit value no install can run, the all2all
    backend's library, and what ``--moe-backend auto`` takes for the model's layers."""
    release, target = result.release, result.target
    if config.get("moe_backend", "auto") != "auto" and _layers(inputs.hf_config) != ():
        from kernelcfg.engine.moe import explicit_problems  # cold start

        result.problems += explicit_problems(release, inputs, target, config["moe_backend"])
    if inputs.hf_config is not None:
        from kernelcfg.engine.moe import all2all_problems, moe_selection  # cold start

        result.problems += all2all_problems(release, inputs, target, all2all)
        experts = moe_selection(release, inputs, target, config, all2all, result.problems)
        if experts is not None:
            result.selection["moe_backend"] = experts


_IGNORED: Answers[tuple[str, tuple[tuple[str, str], ...]], tuple[Problem, ...]] = Answers(
    256, text=LARGE
)
"""The warnings of :func:`_ignored_variables`, per release and environment: a batch
gives every line the same ``--env``."""


def _ignored_variables(release: Release, env: dict[str, str]) -> tuple[Problem, ...]:
    """A warning for each ``VLLM_*`` variable that ``release`` ignores (unknown or
    removed), worded as ``lint-env`` words it; nothing to do unless one is set."""
    known = release.envs
    if all(name in known or not name.startswith("VLLM_") for name in env):
        return ()

    def warn() -> tuple[Problem, ...]:
        from kernelcfg.checks.lint_env import ignored

        found = ignored(env, release)
        return tuple(Problem("warning", f.code, f.variable, f.message) for f in found)

    return _IGNORED.get((release.version, tuple(sorted(env.items()))), warn)


def resolve(inputs: Inputs, target: Target, release: Release) -> Resolution:
    """Resolve ``inputs`` for ``target`` as ``release`` would, problems included."""
    result = Resolution(release, target, problems=list(inputs.notes), inputs=inputs)
    result.problems += rules.environment_problems(release, inputs.env)
    result.problems += _ignored_variables(release, inputs.env)
    config = _kernel_values(release, inputs, result)
    all2all = _all2all(release, inputs, result)
    if config is not None:
        _lora(release, inputs, config, result)
    comp, breakable = _compilation(release, inputs, result, config)
    ctx = ResolutionContext(target, comp, all2all, inputs.architectures, inputs.env)
    if config is not None:
        _platform_defaults(release, inputs, config, ctx, result)
        _level_defaults(release, inputs, config, result)
    _late_compilation(release, comp, inputs, breakable, result)
    if config is not None:
        _constraints(release, inputs, config, ctx.all2all_backend, result)
    _selections(inputs, config, result, ctx.all2all_backend)
    _alternatives(inputs, result, ctx.all2all_backend, config)
    _summary(inputs, comp, result, ctx.all2all_backend, all2all)
    if config is None:
        return result

    result.kernel_config = config
    try:
        result.hash_factors, result.hash = hashing.kernel_hash(release, config)
    except KernelcfgError as exc:
        result.problems.append(Problem.from_error(exc))
        return result
    if "ir_op_priority" in config:
        ops = registry(release, target)
        result.ir_dispatch = {
            op: ops.op(op).chain(lst) for op, lst in config["ir_op_priority"].items()
        }
    return result


def _alternatives(
    inputs: Inputs, result: Resolution, all2all: str, config: dict[str, Any] | None
) -> None:
    """Each refusal of an explicit backend names what runs here instead."""
    if not any(p.severity == "error" for p in result.problems):
        return  # no refusal: the catalogue is not read (a resolve reads its release alone)
    from kernelcfg.engine import instead  # only a refusal pays for it

    if not instead.refuses_a_backend(result.problems):
        return
    ctx = check_context(result.target, result.release.version, inputs, all2all)
    result.problems = instead.with_alternatives(
        result.release, inputs, ctx, result.problems, result.selection, config
    )


def _level_defaults(
    release: Release, inputs: Inputs, config: dict[str, Any], result: Resolution
) -> None:
    """The optimisation level's default of the FlashInfer autotune, where not given."""
    level = release.level_defaults(inputs.optimization_level)
    if config.get("enable_flashinfer_autotune") is None and "enable_flashinfer_autotune" in level:
        config["enable_flashinfer_autotune"] = level["enable_flashinfer_autotune"]
        result.sources["enable_flashinfer_autotune"] = f"-O{inputs.optimization_level} default"


def _summary(inputs: Inputs, comp: Compilation, result: Resolution, bound: str, given: str) -> None:
    """The compilation and parallel parts of ``result``, with where each came from
    (``bound``: the all2all backend after the MoE backend's binding, ``given`` before)."""
    result.compilation = {
        "mode": comp.mode,
        "backend": comp.backend,
        "cudagraph_mode": comp.cudagraph_mode,
        "optimization_level": inputs.optimization_level,
    }
    result.parallel = {
        "all2all_backend": bound,
        "enable_expert_parallel": inputs.enable_expert_parallel,
        "data_parallel_size": inputs.data_parallel_size,
        "tensor_parallel_size": inputs.tensor_parallel_size,
    }
    for key in (*result.parallel, "optimization_level"):
        if key in inputs.sources:
            name = key if key in result.parallel else f"compilation.{key}"
            result.sources[name] = inputs.sources[key]
    if bound != given:
        result.sources["all2all_backend"] = "bound by moe_backend"

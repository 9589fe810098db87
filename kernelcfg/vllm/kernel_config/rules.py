"""vLLM's cross-field rules of ``vllm.config.kernel``, with vLLM's own messages.

Each function takes the release whose constants it applies; the errors are
:class:`RuleError`, both kernelcfg's ``EngineError`` (exit 1) and the
``ValueError`` vLLM raises.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

from kernelcfg.base.errors import EngineError
from kernelcfg.base.problems import Problem
from kernelcfg.vllm.inputs import DEFAULT_ALL2ALL_BACKEND
from kernelcfg.vllm.kernel_config.values import append_platform_defaults
from kernelcfg.vllm.releases import Release

if TYPE_CHECKING:
    from kernelcfg.vllm.context import ResolutionContext

__all__ = [
    "HasAll2All",
    "RuleError",
    "bind_passthrough_all2all_backend",
    "environment_problems",
    "set_platform_defaults",
    "validate_flashinfer_moe_ep_model",
]


class HasAll2All(Protocol):
    """Anything with an ``all2all_backend`` (vLLM's ``ParallelConfig``, a context)."""

    all2all_backend: str


class RuleError(EngineError, ValueError):
    """A cross-field rule vLLM enforces at start-up was broken."""


def validate_flashinfer_moe_ep_model(
    release: Release, moe_backend: str, architectures: Iterable[str]
) -> None:
    """Refuse a DeepSeek-V4-only MoE backend for a model that is not DeepSeek-V4."""
    if moe_backend not in release.moe_ep_model_checked:
        return
    allowed = release.constant("FLASHINFER_MOE_EP_ARCHITECTURES", [])
    architectures = list(architectures)
    if not any(arch in allowed for arch in architectures):
        raise RuleError(
            f"moe_backend={moe_backend!r} is only supported for DeepSeek-V4 "
            f"models ({sorted(allowed)}), but the model is {architectures}.",
            field="moe_backend",
            code="moe-backend-needs-deepseek-v4",
        )


def bind_passthrough_all2all_backend(
    release: Release, moe_backend: str, parallel_config: HasAll2All
) -> None:
    """Give MoE backends that dispatch and combine themselves the passthrough all2all.

    Left at its default, the all2all backend becomes ``passthrough``; any other
    explicit choice is refused, and ``passthrough`` with any other MoE backend too.
    Calling it again changes nothing.
    """
    own = release.constant("FLASHINFER_MOE_EP_BACKENDS", [])
    passthrough = release.constant("PASSTHROUGH_ALL2ALL_BACKEND", "passthrough")
    a2a = parallel_config.all2all_backend
    if moe_backend in own:
        if a2a == passthrough:
            return
        if a2a != DEFAULT_ALL2ALL_BACKEND:
            raise RuleError(
                f"moe_backend={moe_backend!r} dispatches and combines itself and "
                f"cannot be paired with all2all_backend={a2a!r}; leave "
                f"--all2all-backend unset.",
                field="all2all_backend",
                code="all2all-conflicts-with-moe-backend",
            )
        parallel_config.all2all_backend = passthrough
    elif a2a == passthrough:
        raise RuleError(
            f"all2all_backend={a2a!r} is only valid with a moe_backend that "
            f"dispatches and combines itself ({sorted(own)}),"
            f" got moe_backend={moe_backend!r}.",
            field="all2all_backend",
            code="passthrough-needs-moe-ep-backend",
        )


def set_platform_defaults(
    release: Release,
    moe_backend: str,
    lists: dict[str, list[str] | None],
    ctx: ResolutionContext,
) -> None:
    """``KernelConfig.set_platform_defaults``: the DeepSeek-V4 check (when the model
    is known), the passthrough binding (where the release has it), then the
    platform's IR-op defaults merged into ``lists`` (mutated in place)."""
    if ctx.architectures is not None:
        validate_flashinfer_moe_ep_model(release, moe_backend, ctx.architectures)
    if release.has_function("bind_passthrough_all2all_backend"):
        bind_passthrough_all2all_backend(release, moe_backend, ctx)
    # the platform's IR-op defaults: loaded by a resolve, not by the Python API's classes
    from kernelcfg.vllm.kernel_config.defaults import default_ir_op_priority

    append_platform_defaults(lists, default_ir_op_priority(release, ctx))


def environment_problems(release: Release, env: Mapping[str, str]) -> list[Problem]:
    """What ``Platform.validate_environ`` says at engine start-up: removed variables
    and refused values are errors (whatever ``--fail-on-environ-validation`` says),
    redundant ones warnings. Nothing before the release that introduced the check."""
    rules = release.rules.get("env_validation", {})
    found: list[Problem] = []
    for name, hint in release.data.get("envs_removed", {}).items():
        if name in env:
            message = rules.get("removed_error", "{env} has been removed. {hint}")
            found.append(
                Problem("error", "removed-variable", name, message.format(env=name, hint=hint))
            )
    for name, rule in rules.items():
        if not isinstance(rule, dict) or name not in env:
            continue
        value = env[name]
        if value not in rule["ok_values"]:
            found.append(
                Problem("error", "refused-variable", name, rule["error"].format(value=value))
            )
        elif rule.get("warning"):
            found.append(Problem("warning", "redundant-variable", name, rule["warning"]))
    return found

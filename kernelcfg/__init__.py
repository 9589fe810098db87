"""kernelcfg: what vLLM will do with its kernel flags, known before a GPU is booked.

The top-level ``KernelConfig`` and ``IrOpPriorityConfig`` are those of the newest
vLLM release kernelcfg knows; :func:`for_version` gives any other. Names are
loaded on first use, so ``import kernelcfg`` stays cheap and never imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernelcfg._version import __version__

if TYPE_CHECKING:
    from kernelcfg.base.errors import ArgumentError, EngineError, KernelcfgError
    from kernelcfg.base.problems import Problem
    from kernelcfg.commands.pipeline import Failure, Request, resolve_args
    from kernelcfg.engine.resolution import Resolution, resolve
    from kernelcfg.targets.presets import PRESETS, Target, detect, resolve_target
    from kernelcfg.vllm.context import Compilation, ResolutionContext
    from kernelcfg.vllm.inputs import Inputs
    from kernelcfg.vllm.kernel_config.api import ReleaseAPI, for_version
    from kernelcfg.vllm.kernel_config.config import IrOpPriorityBase, KernelConfigBase

    KernelConfig: type[KernelConfigBase]
    IrOpPriorityConfig: type[IrOpPriorityBase]

__all__ = [
    "PRESETS",
    "ArgumentError",
    "Compilation",
    "EngineError",
    "Failure",
    "Inputs",
    "IrOpPriorityConfig",
    "KernelConfig",
    "KernelcfgError",
    "Problem",
    "ReleaseAPI",
    "Request",
    "Resolution",
    "ResolutionContext",
    "Target",
    "__version__",
    "bind_passthrough_all2all_backend",
    "detect",
    "for_version",
    "resolve",
    "resolve_args",
    "resolve_target",
    "validate_flashinfer_moe_ep_model",
]

_LAZY = {
    "ReleaseAPI": "kernelcfg.vllm.kernel_config.api",
    "for_version": "kernelcfg.vllm.kernel_config.api",
    "Compilation": "kernelcfg.vllm.context",
    "ResolutionContext": "kernelcfg.vllm.context",
    "ArgumentError": "kernelcfg.base.errors",
    "EngineError": "kernelcfg.base.errors",
    "KernelcfgError": "kernelcfg.base.errors",
    "Inputs": "kernelcfg.vllm.inputs",
    "Failure": "kernelcfg.commands.pipeline",
    "Request": "kernelcfg.commands.pipeline",
    "resolve_args": "kernelcfg.commands.pipeline",
    "PRESETS": "kernelcfg.targets.presets",
    "Target": "kernelcfg.targets.presets",
    "detect": "kernelcfg.targets.presets",
    "resolve_target": "kernelcfg.targets.presets",
    "Problem": "kernelcfg.base.problems",
    "Resolution": "kernelcfg.engine.resolution",
    "resolve": "kernelcfg.engine.resolution",
}
_NEWEST = (
    "KernelConfig",
    "IrOpPriorityConfig",
    "bind_passthrough_all2all_backend",
    "validate_flashinfer_moe_ep_model",
)


def __getattr__(name: str) -> Any:
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _NEWEST:
        from kernelcfg.vllm.kernel_config.api import for_version

        return getattr(for_version(None), name)
    raise AttributeError(f"module 'kernelcfg' has no attribute {name!r}")

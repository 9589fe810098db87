"""kernelcfg: what vLLM will do with its kernel flags, known before a GPU is booked.

The top-level ``KernelConfig`` and ``IrOpPriorityConfig`` are those of the newest
vLLM release kernelcfg knows; :func:`for_version` gives any other. Names are
loaded on first use, so ``import kernelcfg`` stays cheap and never imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernelcfg._version import __version__

if TYPE_CHECKING:
    from kernelcfg.api import ReleaseAPI, for_version
    from kernelcfg.config import IrOpPriorityBase, KernelConfigBase
    from kernelcfg.context import Compilation, ResolutionContext
    from kernelcfg.errors import ArgumentError, EngineError, KernelcfgError
    from kernelcfg.inputs import Inputs
    from kernelcfg.pipeline import Failure, Request, resolve_args
    from kernelcfg.platforms import PRESETS, Target, detect, resolve_target
    from kernelcfg.problems import Problem
    from kernelcfg.resolution import Resolution, resolve

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
    "ReleaseAPI": "kernelcfg.api",
    "for_version": "kernelcfg.api",
    "Compilation": "kernelcfg.context",
    "ResolutionContext": "kernelcfg.context",
    "ArgumentError": "kernelcfg.errors",
    "EngineError": "kernelcfg.errors",
    "KernelcfgError": "kernelcfg.errors",
    "Inputs": "kernelcfg.inputs",
    "Failure": "kernelcfg.pipeline",
    "Request": "kernelcfg.pipeline",
    "resolve_args": "kernelcfg.pipeline",
    "PRESETS": "kernelcfg.platforms",
    "Target": "kernelcfg.platforms",
    "detect": "kernelcfg.platforms",
    "resolve_target": "kernelcfg.platforms",
    "Problem": "kernelcfg.problems",
    "Resolution": "kernelcfg.resolution",
    "resolve": "kernelcfg.resolution",
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
        from kernelcfg.api import for_version

        return getattr(for_version(None), name)
    raise AttributeError(f"module 'kernelcfg' has no attribute {name!r}")

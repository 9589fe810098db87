"""The small piece of vLLM's engine config that kernel resolution reads.

vLLM hands ``KernelConfig.set_platform_defaults`` its whole ``VllmConfig``; the
rules only look at the platform, the compilation settings, the all2all backend,
the model's architectures and a few environment variables, so that is what a
:class:`ResolutionContext` holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from kernelcfg.targets.presets import Target
from kernelcfg.vllm.inputs import DEFAULT_ALL2ALL_BACKEND

__all__ = ["COMPILATION_MODES", "CUDAGRAPH_MODES", "Compilation", "ResolutionContext"]

COMPILATION_MODES = ("NONE", "STOCK_TORCH_COMPILE", "DYNAMO_TRACE_ONCE", "VLLM_COMPILE")
"""vLLM's ``CompilationMode`` names, by value (0 to 3)."""

CUDAGRAPH_MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")
"""vLLM's ``CUDAGraphMode`` names."""

CudagraphMode = Literal["NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"]
CompilationMode = Literal["NONE", "STOCK_TORCH_COMPILE", "DYNAMO_TRACE_ONCE", "VLLM_COMPILE"]


@dataclass
class Compilation:
    """The compilation settings the IR-op defaults depend on."""

    backend: str = "inductor"
    """The compile backend; ``""`` until vLLM fills in the platform's (``inductor``)."""
    mode: CompilationMode | None = "VLLM_COMPILE"
    """The compilation mode, ``None`` while start-up has not decided it."""
    cudagraph_mode: CudagraphMode | None = "PIECEWISE"
    """The CUDA-graph mode, ``None`` while start-up has not decided it."""

    @property
    def using_inductor(self) -> bool:
        """vLLM's test: backend ``inductor`` and a mode other than NONE."""
        return self.backend == "inductor" and self.mode != "NONE"


@dataclass
class ResolutionContext:
    """What ``set_platform_defaults`` and the rules around it look at."""

    target: Target
    """The platform the engine would run on."""
    compilation: Compilation = field(default_factory=Compilation)
    """Compilation settings, as decided before the platform defaults apply."""
    all2all_backend: str = DEFAULT_ALL2ALL_BACKEND
    """The parallel config's all2all backend; the passthrough rule may rebind it."""
    architectures: list[str] | None = None
    """The model's architectures; ``None`` when there is no model config."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Environment variables as the engine would see them."""

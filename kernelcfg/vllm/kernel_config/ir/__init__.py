"""vLLM's IR ops as kernelcfg models them: registry, native ops, dispatch."""

from kernelcfg.vllm.kernel_config.ir.ops import IrOp, Provider, Registry, registry

__all__ = ["IrOp", "Provider", "Registry", "registry"]

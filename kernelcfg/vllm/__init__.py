"""The model of vLLM, by concern, top floor first (an import never climbs; the
contract is in ``pyproject.toml``):

- ``compile_cache/``: the compile-cache key, its env, config and model parts;
- ``kernels/``: what each backend field picks (``attention/``, ``moe/``, ``linear``,
  ``topk``) and the words their data is written in;
- ``kernel_config/``: ``KernelConfig`` and ``IrOpPriorityConfig`` per release, their
  validation, hashes, start-up rules and IR ops;
- the ground floor: per-release facts as data (``releases/``), how vLLM reads a
  checkpoint's quantisation (``checkpoint``), the engine-args subset kernels read
  (``inputs``) and the resolution's context (``context``).

Imports only ``kernelcfg.base`` and ``kernelcfg.targets``; never the flag parser, the
checks or the resolution.
"""

"""The config classes vLLM's kernels read, per release: ``KernelConfig`` and
``IrOpPriorityConfig`` built from a release file (``config``), their values and
validation, the hash schemes (``hashing``), the start-up rules and the platform's IR-op
defaults (``rules``, ``defaults``, ``conditions``), the JSON Schema (``schema``), the
Python API (``api``), the IR ops and their dispatch (``ir``); and ``AttentionConfig``
(``attention``: ``--attention-config`` and its hash, from ``attention-X.Y.Z.json``).

Imports only the ground floor of :mod:`kernelcfg.vllm` (``releases``, ``inputs``,
``context``), ``kernelcfg.targets`` and ``kernelcfg.base``.
"""

"""vLLM's ``KernelConfig`` and ``IrOpPriorityConfig`` per release: the config classes
built from a release file (``config``), their values and validation, the hash schemes
(``hashing``), the start-up rules and the platform's IR-op defaults (``rules``,
``defaults``, ``conditions``), the JSON Schema (``schema``), the Python API
(``api``) and the IR ops and their dispatch (``ir``).

Imports only the ground floor of :mod:`kernelcfg.vllm` (``releases``, ``inputs``,
``context``), ``kernelcfg.targets`` and ``kernelcfg.base``.
"""

"""The model of vLLM: per-release facts (``releases/``), the config classes, their
validation and hashes, the start-up rules, the IR ops and the quantisation schemes.

Imports only ``kernelcfg.base`` and ``kernelcfg.targets``; never the flag parser, the
checks or the resolution.
"""

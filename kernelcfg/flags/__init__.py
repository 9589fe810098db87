"""vLLM's flag language: a ``vllm serve`` line, config files and the model's
``config.json`` read the way the chosen release reads them, into ``Inputs``.

Imports ``kernelcfg.vllm`` and below; never the checks or the resolution.
"""

"""The engine's start-up, as far as kernels go: ``Inputs`` on a target to the
configuration vLLM would build (``resolution``), in vLLM's start-up order, with every
problem found on the way.

Imports ``kernelcfg.checks`` and below; never the flag parser.
"""

"""Targets: the GPU (or CPU) the engine would run on, named, flagged or detected.

Imports only ``kernelcfg.base``.
"""

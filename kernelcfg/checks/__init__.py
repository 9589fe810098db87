"""Checks over the model: can a backend value run on a target (``constraints``), what
an environment file says (``lint_env``), and what a field means (``explain``).

Imports ``kernelcfg.vllm`` and below; never the flag parser or the resolution.
"""

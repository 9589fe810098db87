"""Checks over the model: can a backend value run on a target (``constraints``, over
what one catalogue rule requires, ``requirements``, and what a verdict is, ``verdicts``;
``attention`` for ``--attention-backend``), what an environment file says
(``lint_env``), and what a field means (``explain``).

Imports ``kernelcfg.vllm`` and below; never the flag parser or the resolution.
"""

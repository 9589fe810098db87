"""kernelcfg's exceptions: one base, a few kinds, each message naming the fix.

The exit code a command-line user sees is part of each kind: ``2`` for input vLLM
would refuse (or crash on) while reading its arguments, ``1`` for what it would refuse
while building the engine.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "ArgumentError",
    "EngineError",
    "KernelcfgError",
    "UnknownProviderError",
    "UnknownVersionError",
    "closest",
]


_LONGEST_GUESS = 100
"""Longer values get no suggestion: difflib's cost grows with the square of the length."""


def closest(value: str, allowed: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The allowed value nearest to ``value``, when one is near enough (``cutoff``:
    difflib's similarity ratio) to suggest."""
    choices = list(allowed)
    if len(value) > _LONGEST_GUESS:
        return None
    lowered = {c.lower(): c for c in choices}
    if value.lower() in lowered:
        return lowered[value.lower()]
    # what was typed is the first word of allowed values (``fp8`` of fp8_tensor,
    # fp8_channel, fp8_block): the first of them, before a near spelling that starts
    # otherwise (mxfp8); a mere start of a word (``VLLM_X`` of VLLM_XPU_...) is not one
    head = value.lower()
    starting = [c for c in choices if any(c.lower().startswith(head + s) for s in "_-.")]
    if head and starting:
        return starting[0]
    # difflib's ratio is 2*M/(len(a)+len(b)) with M <= the shorter length, so a choice
    # whose length is too far off can never reach the cutoff: skip it (same answer).
    # Compared case-blind: an upper-case enum name is as near to a lower-case typo.
    size = len(value)
    near = [c for c in lowered if 2 * min(size, len(c)) >= cutoff * (size + len(c))]
    found = difflib.get_close_matches(value.lower(), near, n=1, cutoff=cutoff)
    if not found:
        found = difflib.get_close_matches(value.lower().replace("-", "_"), near, n=1, cutoff=cutoff)
    return lowered[found[0]] if found else None


class KernelcfgError(Exception):
    """Base of every error kernelcfg raises for bad input."""

    exit_code = 2
    code = "error"

    def __init__(self, message: str, *, field: str | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field
        if code is not None:
            self.code = code


class ArgumentError(KernelcfgError):
    """Input vLLM would refuse, or crash on, while reading its arguments (exit 2)."""

    exit_code = 2
    code = "bad-argument"


class EngineError(KernelcfgError):
    """Input vLLM would refuse while building or starting the engine (exit 1)."""

    exit_code = 1
    code = "engine-refuses"


class UnknownVersionError(ArgumentError):
    """A vLLM release kernelcfg has no data for."""

    code = "unknown-version"

    def __init__(self, given: str, known: Iterable[str], *, message: str | None = None):
        known = list(known)
        super().__init__(
            message
            or f"unknown vLLM version {given!r}; kernelcfg knows {', '.join(known)}"
            " (write it as 0.33, 0.33.0 or v0.33.0)",
            field="vllm_version",
        )
        self.given = given
        self.known = known


class UnknownProviderError(EngineError, KeyError):
    """An IR-op priority names a provider not registered for that op.

    vLLM accepts such a name at construction and fails later: ``compute_hash``
    raises a bare ``KeyError``, worker start-up an ``AssertionError``.
    """

    code = "unknown-ir-provider"

    def __init__(self, op: str, provider: str, registered: Iterable[str]):
        known = sorted(registered)
        hint = closest(provider, known)
        message = (
            f"IR op {op!r} has no provider {provider!r} in this release; registered: "
            f"{', '.join(known)}"
            + (f" (did you mean {hint!r}?)" if hint else "")
            + ". vLLM would accept it here and fail at compute_hash (KeyError) or "
            "worker start-up."
        )
        EngineError.__init__(self, message, field=f"ir_op_priority.{op}")
        self.op = op
        self.provider = provider

    def __str__(self) -> str:
        return self.message

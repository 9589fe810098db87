"""kernelcfg's own plain reason before a reason quoted from vLLM that misleads out of
context ("only Hopper and Blackwell GPUs are supported" on an H100 without deep_gemm).

The quotes and the conditions under which they mislead sit in ``releases/glosses.json``;
a condition is read with the selection data's words (:mod:`kernelcfg.vllm.kernels.words`)
against the target under one install.
"""

from __future__ import annotations

from typing import Any

from kernelcfg.vllm import releases
from kernelcfg.vllm.kernels.words import Where, holds

__all__ = ["gloss", "once"]


def gloss(reason: str | None, where: Where) -> str | None:
    """``reason`` preceded by kernelcfg's plain reason where vLLM's alone misleads on
    ``where``; unchanged otherwise."""
    if not reason:
        return reason
    entries: list[dict[str, Any]] = releases.data_file("glosses.json")["glosses"]
    for entry in entries:
        if entry["quote"] in reason and holds(entry["when"], where, {}):
            return f"{entry['say']} (vLLM: {reason})"
    return reason


def once(reasons: list[str]) -> list[str]:
    """The reasons in order, each said once."""
    return list(dict.fromkeys(reasons))

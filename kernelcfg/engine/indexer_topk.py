"""The sparse-indexer top-k pick of a resolution: what ``auto`` resolves to for the
model's top-k on the target, per band of decode rows.

Only for a model with a sparse indexer (``index_topk`` in its ``config.json``) and the
field on ``auto``; an explicit value is judged by the backend catalogue instead.
"""

from __future__ import annotations

from typing import Any

from kernelcfg.targets.presets import Target
from kernelcfg.vllm.inputs import Inputs
from kernelcfg.vllm.releases import Release

__all__ = ["topk_selection"]


def topk_selection(
    release: Release, inputs: Inputs, target: Target, config: dict[str, Any]
) -> dict[str, Any] | None:
    """``selection.sparse_indexer_topk_backend``, or ``None`` when it does not apply."""
    hf: dict[str, Any] = inputs.hf_config or {}
    text = hf.get("text_config")
    topk = (text if isinstance(text, dict) else hf).get("index_topk")
    if config.get("sparse_indexer_topk_backend") != "auto" or not isinstance(topk, int):
        return None
    from kernelcfg.vllm.kernels import topk as topk_model

    found = topk_model.facts(release.version)
    if found is None:
        return None
    major, _, minor = (target.capability or "").partition(".")
    capability = (int(major), int(minor or 0)) if major.isdigit() else None
    bands = topk_model.picks_by_rows(found, target.kind, capability, topk)
    first, chain = next(iter(bands.values()))
    return {
        "requested": "auto",
        "status": "selected",
        "backend": first,
        "kernel": None,
        "value": first,
        "candidates": [
            {"backend": name, "kernel": None, "verdict": verdict, "reason": reason}
            for name, verdict, reason in chain
        ],
        "install": inputs.install,
        "install_given": inputs.install_given,
        "install_source": inputs.install_source,
        "message": None,
        "topk": topk,
        "by_rows": {band: backend for band, (backend, _) in bands.items()},
    }

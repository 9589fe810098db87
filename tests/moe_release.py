"""What the per-release MoE tests share: one release's selection, a golden target under
an install, and a golden model and layout as a layer (``test_moe_golden``'s inputs)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from kernelcfg.vllm.kernels import words as kernel_words
from kernelcfg.vllm.kernels.moe import oracle
from kernelcfg.vllm.kernels.words import Where

from .test_moe_golden import META, layer

__all__ = ["MoeRelease", "reasons"]


class MoeRelease:
    """One release's MoE selection, walked on the golden grid's targets and models."""

    def __init__(self, version: str) -> None:
        found = oracle.model(version)
        assert found is not None, version
        self.model = found

    def where(
        self,
        target: str,
        install: str,
        env: Mapping[str, str] | None = None,
        *,
        capability: str | None = None,
        add: Iterable[str] = (),
        features: Mapping[str, bool] | None = None,
    ) -> Where:
        """A golden target (or a CUDA device of ``capability``) under one install, with
        extra libraries and host features where a case needs them."""
        spec = META["targets"].get(target, {"kind": "cuda", "device_name": target})
        found = kernel_words.where(
            self.model.data,
            spec["kind"],
            capability or spec.get("capability"),
            spec.get("gfx_arch"),
            install,
            dict(env or {}),
        )
        return dataclasses.replace(
            found,
            libraries=found.libraries | frozenset(add),
            features={**found.features, **(features or {})},
            device_name=spec["device_name"],
        )

    def pick(self, variant: str, model: str, layout: str, at: Where, **rest: Any) -> oracle.Pick:
        """The pick for a golden model and layout (``rest`` overrides layer features)."""
        feats = layer(model, layout)
        feats.update(rest)
        return self.model.pick(variant, feats, at)


def reasons(found: oracle.Pick) -> dict[tuple[str, str | None], str | None]:
    """Each trial's reason, by (backend, class)."""
    return {(t.backend, t.kernel): t.reason for t in found.trials}

"""Quantisation schemes: the names kernelcfg gives the layer types vLLM's kernels serve,
and how a ``--quantization`` method maps to them (a checkpoint's: ``vllm.checkpoint``)
(from the backend catalogue, ``releases/constraints.json``)."""

from __future__ import annotations

from functools import cache

from kernelcfg.vllm.releases import catalogue, version_key

__all__ = [
    "SCHEMES",
    "per_quant_keys",
    "scheme_from_quantization",
    "schemes_of_quantization",
]

SCHEMES: tuple[str, ...] = tuple(catalogue()["schemes"])
"""The quantisation schemes kernelcfg names."""


@cache
def per_quant_keys(version: str) -> dict[str, list[str]]:
    """The ``linear_backend_per_quant`` keys vLLM looks up in ``version``, to schemes."""
    data = catalogue()
    since: dict[str, str] = data["per_quant_keys_since"]
    return {
        key: schemes
        for key, schemes in data["per_quant_keys"].items()
        if key not in since or version_key(version) >= version_key(since[key])
    }


def scheme_from_quantization(method: str | None) -> str | None:
    """The scheme a ``--quantization`` method means, where the method alone says so."""
    if method is None:
        return None
    found: str | None = catalogue()["quantization_methods"].get(method)
    return found


def schemes_of_quantization(method: str | None) -> tuple[str, ...] | None:
    """The schemes a ``--quantization`` method may mean; ``None`` when it could be any."""
    if method is None:
        return None
    single = scheme_from_quantization(method)
    if single is not None:
        return (single,)
    family = catalogue()["quantization_families"].get(method)
    return tuple(family) if family else None

"""Quantisation schemes: the names kernelcfg gives the layer types vLLM's kernels serve,
and how a ``--quantization`` method or a checkpoint's ``quantization_config`` maps to them
(from the backend catalogue, ``releases/constraints.json``)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from kernelcfg.vllm.releases import catalogue, version_key

__all__ = [
    "SCHEMES",
    "per_quant_keys",
    "scheme_from_model",
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


def scheme_from_model(quant_config: Mapping[str, Any] | None) -> str | None:
    """The scheme of a ``config.json``'s ``quantization_config``, where it is certain."""
    if not quant_config:
        return "unquantized"
    method = str(quant_config.get("quant_method", "")).lower()
    if method == "fp8":
        return "fp8_block" if quant_config.get("weight_block_size") else "fp8_tensor"
    if method in ("modelopt", "modelopt_fp4"):
        algo = str(quant_config.get("quant_algo", "")).upper()
        return {
            "FP8": "fp8_tensor",
            "FP8_PER_CHANNEL_PER_TOKEN": "fp8_channel",
            "FP8_PB_WO": "fp8_block",
            "MXFP8": "mxfp8",
            "W4A16_NVFP4": "nvfp4_w4a16",
        }.get(algo)
    if method in ("gptq", "auto_gptq", "gptq_marlin"):
        return "int4_w4a16" if quant_config.get("bits") == 4 else None
    return scheme_from_quantization(method)

"""What vLLM's attention selector reads and answers, as data: the layer's features, the
platform, one backend's verdict and a platform's pick; the release's model-family facts
and the gfx-architecture families ROCm's backends test.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "PLATFORM_NAMES",
    "Check",
    "Features",
    "ModelFacts",
    "Platform",
    "Selection",
    "Tri",
    "Verdict",
    "cdna_version",
    "kv_quantized",
    "rdna",
    "rdna_version",
]

Tri = bool | None
"""A check's answer: true, false, or unknown (``None``)."""

Verdict = Literal["ok", "refused", "unknown"]

PLATFORM_NAMES = {"cuda": "CUDA", "rocm": "ROCm", "cpu": "CPU", "xpu": "XPU", "tpu": "TPU"}
"""How vLLM names each platform kind in words."""

_UNQUANTIZED_KV = frozenset({"auto", "float16", "bfloat16"})


def kv_quantized(kv_cache_dtype: str) -> bool:
    """``is_quantized_kv_cache``: every KV-cache dtype but auto, float16 and bfloat16."""
    return kv_cache_dtype not in _UNQUANTIZED_KV


@dataclass(frozen=True)
class Features:
    """What an attention layer hands vLLM's selector; ``None`` where not known."""

    head_size: int | None = None
    """The head size the layer declares (MLA: ``kv_lora_rank + qk_rope_head_dim``)."""
    dtype: str | None = None
    """The model dtype: ``bfloat16``, ``float16`` or ``float32``."""
    kv_cache_dtype: str = "auto"
    """``--kv-cache-dtype``, as given."""
    block_size: int | None = None
    """``--block-size``; ``None`` unless given."""
    use_mla: bool | None = None
    """Multi-head latent attention (DeepSeek-style)."""
    use_sparse: bool | None = None
    """Sparse (DSA) attention: the model has an ``index_topk`` indexer."""
    has_sink: bool | None = None
    """Attention sinks (gpt-oss)."""
    num_heads: int | None = None
    """Query heads per tensor-parallel rank."""
    attn_type: str = "decoder"
    """decoder, encoder, encoder_only or encoder_decoder."""
    hf: Mapping[str, Any] | None = None
    """The model's ``config.json`` (``None`` when it was not read)."""
    flash_attn_version: int | None = None
    """``-ac.flash_attn_version`` (``None``: vLLM chooses)."""

    def hf_value(self, name: str, default: Any) -> Any:
        """``getattr(hf_text_config, name, default)``; ``None`` when no config was read."""
        if self.hf is None:
            return None
        return self.hf.get(name, default)


@dataclass(frozen=True)
class Platform:
    """The target as the selector sees it."""

    kind: str
    """cuda, rocm, cpu, xpu or tpu."""
    capability: tuple[int, int] | None
    """Compute capability (ROCm: from the gfx arch)."""
    device_name: str
    """The name vLLM's messages use."""
    libraries: frozenset[str]
    """The optional libraries installed (from ``--install``)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """The engine's environment variables."""
    arch: str | None = None
    """ROCm's gfx architecture (``gfx942``)."""
    host: Mapping[str, bool] | None = None
    """A CPU target's host-feature words (AMX, AVX-512, the architecture); ``None``:
    not known."""

    @property
    def key(self) -> tuple[Any, ...]:
        """Everything the selector reads of the platform, hashable."""
        return (
            self.kind,
            self.capability,
            self.device_name,
            self.libraries,
            tuple(sorted(self.env.items())),
            self.arch,
            None if self.host is None else tuple(sorted(self.host.items())),
        )

    @property
    def major(self) -> int | None:
        """The capability's major number."""
        return None if self.capability is None else self.capability[0]

    def capability_text(self) -> str:
        """As vLLM prints a ``DeviceCapability``."""
        if self.capability is None:
            return "None"
        return f"DeviceCapability(major={self.capability[0]}, minor={self.capability[1]})"


@dataclass(frozen=True)
class Check:
    """One backend's ``validate_configuration`` on a platform, for a model."""

    backend: str
    """The backend's enum name."""
    verdict: Verdict
    """ok, refused, or unknown (it depends on what was not given)."""
    reasons: tuple[str, ...]
    """vLLM's reasons (refused), or what is not known (unknown)."""


@dataclass(frozen=True)
class Selection:
    """What vLLM takes for one install: an explicit backend's fate or the ``auto`` pick."""

    requested: str
    """``auto`` or the backend asked for."""
    status: Literal["selected", "error", "depends", "ignored"]
    """selected (vLLM uses ``backend``), error (vLLM raises), depends (on something not
    given), ignored (an explicit value the platform does not read)."""
    backend: str | None
    """The backend vLLM uses."""
    candidates: tuple[Check, ...]
    """The candidates in the order vLLM tries them, each with its verdict."""
    message: str | None = None
    """vLLM's error (error) or what the pick depends on (depends)."""


@dataclass(frozen=True)
class ModelFacts:
    """What the release knows about model families, for the selector's features."""

    mla_model_types: frozenset[str]
    """``is_deepseek_mla``'s model types (MLA when ``kv_lora_rank`` is set)."""
    architectures: Mapping[str, Mapping[str, bool]]
    """Per architecture, the attention traits it always has (``use_mla``, ``has_sink``,
    ``use_sparse``), for when no ``config.json`` was read."""


def cdna_version(arch: str | None) -> int:
    """``get_cdna_version``: gfx90a 2, gfx942 3, gfx950 4, gfx1250 5, else 0."""
    table = {"gfx90a": 2, "gfx942": 3, "gfx950": 4, "gfx1250": 5}
    return next((v for k, v in table.items() if k in (arch or "")), 0)


def rdna(arch: str | None) -> bool:
    """``on_gfx1x``: gfx11 or gfx12, not CDNA (gfx1250 is CDNA)."""
    text = arch or ""
    return ("gfx11" in text or "gfx12" in text) and not ("gfx9" in text or "gfx1250" in text)


def rdna_version(arch: str | None) -> int:
    """``get_rdna_version``: RDNA4 (gfx1200, gfx1201) 4, gfx11 3, else 0."""
    text = arch or ""
    if "gfx1200" in text or "gfx1201" in text:
        return 4
    return 3 if "gfx11" in text else 0

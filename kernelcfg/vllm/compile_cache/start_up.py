"""What vLLM writes into its own environment while it starts, before it computes the
env part of the compile-cache key: those writes enter the key as if the launch had set
them (a real start of vLLM's CPU build hashed ``VLLM_DISABLE_SHARED_EXPERTS_STREAM=1``
that no launch sets).

The writes are release data (``releases/start-up-env.json``, read from each release's
platforms and ``VllmConfig``): the variable, the value, the platforms, the condition and
whether a value the launch set is kept. A condition kernelcfg cannot know for another
machine (the host CPU's AVX512-BF16, or its AMX tiles in vLLM 0.27.0 and 0.28.0: the
data's ``host_words``, where the target does not state its CPU features) leaves that
variable unknown, with why, unless the launch set it and vLLM keeps it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from kernelcfg.vllm import releases

__all__ = ["Launch", "StartUpWrites", "writes"]


@dataclass(frozen=True)
class Launch:
    """What the writes' conditions read of a launch."""

    platform: str
    """vLLM's platform: ``cuda``, ``rocm``, ``cpu``, ``xpu``, ``tpu``."""
    quantized: bool
    """Whether the model has a quantization method (``--quantization`` or its checkpoint)."""
    breakable_auto: bool
    """Whether vLLM turned breakable CUDA graphs on itself (the model's default, or
    ``VLLM_BATCH_INVARIANT``), not the launch's ``VLLM_USE_BREAKABLE_CUDAGRAPH``."""
    host: Mapping[str, bool] | None = None
    """A CPU target's host-feature words (``avx512_bf16``, ...); ``None``: not known."""


@dataclass(frozen=True)
class StartUpWrites:
    """The variables vLLM sets while this launch starts."""

    written: dict[str, str]
    """Each variable vLLM sets, and its value."""
    unknown: dict[str, str]
    """Each variable vLLM may set on a condition kernelcfg cannot know here, and why."""


_HOST_FEATURE = (
    "vLLM's CPU platform sets it to {value} where the host CPU has {feature}, which "
    "kernelcfg does not know for this target (give --cpu-features or a CPU preset, e.g. "
    "--device xeon-spr)"
)


def writes(version: str, environ: Mapping[str, str], launch: Launch) -> StartUpWrites:
    """The start-up writes of release ``version`` for ``launch`` over ``environ``."""
    written: dict[str, str] = {}
    unknown: dict[str, str] = {}
    for entry in _entries(version):
        if entry["platforms"] != ["*"] and launch.platform not in entry["platforms"]:
            continue
        name = entry["variable"]
        if entry["keeps_user_value"] and name in environ:
            continue
        when = entry["when"]
        if when.startswith("host_") and launch.host is None:
            kept = " (or set it in the launch's environment)" if entry["keeps_user_value"] else ""
            feature = _host_word(when.removeprefix("host_"))
            unknown[name] = _HOST_FEATURE.format(value=entry["value"], feature=feature) + kept
        elif _holds(when, launch):
            written[name] = entry["value"]
    return StartUpWrites(written, unknown)


def _holds(when: str, launch: Launch) -> bool:
    """Whether a condition kernelcfg knows holds for ``launch``."""
    if when.startswith("host_"):
        return bool(launch.host and launch.host.get(when.removeprefix("host_")))
    return {
        "always": True,
        "quantized": launch.quantized,
        "breakable_auto": launch.breakable_auto,
    }[when]


def _host_word(word: str) -> str:
    """A host-feature word as the data's ``host_words`` names it (``AVX512-BF16``)."""
    said = str(releases.data_file("start-up-env.json")["host_words"][word])
    return said.split(" (", maxsplit=1)[0]


@cache
def _entries(version: str) -> tuple[dict[str, Any], ...]:
    """The entries that hold for ``version``."""
    key = releases.version_key(version)
    return tuple(
        entry
        for entry in releases.data_file("start-up-env.json")["writes"]
        if releases.version_key(entry["releases"][0])
        <= key
        <= releases.version_key(entry["releases"][1])
    )

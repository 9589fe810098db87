"""The CPU and XPU platforms' attention choice: decision trees that never validate a
backend (``CpuPlatform``/``XPUPlatform.get_attn_backend_cls``); an explicit value a tree
does not take is ignored (CPU) or refused (XPU).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernelcfg.vllm.kernels.attention.facts import Features, Selection, kv_quantized

__all__ = ["cpu", "xpu"]


def cpu(
    platform: Mapping[str, Any],
    requested: str | None,
    f: Features,
    host: Mapping[str, bool] | None = None,
) -> Selection:
    """``CpuPlatform.get_attn_backend_cls``: a decision tree that never validates and
    ignores a backend it does not take; the host's ISA (AMX, AVX-512) decides the rest.
    ``platform``: the release's CPU facts (``kv_cache_dtypes``, the KV-cache dtypes the
    tree accepts, absent before vLLM 0.33.0, which checks none while selecting; ``host``,
    what the host's features decide). ``host``: the target's host-feature words
    (``None``: not known, and what they decide "depends"). ``mla_refused``, where a
    release has it: the error every MLA model meets, checked first (vLLM 0.27.0 has no CPU
    MLA backend)."""
    asked = requested or "auto"
    kv = f.kv_cache_dtype
    listed = platform.get("kv_cache_dtypes")
    if f.use_mla and platform.get("mla_refused") is not None:
        refusal = str(platform["mla_refused"])
    elif f.use_sparse:
        refusal = "NotImplementedError: Sparse Attention is not supported on CPU."
    elif listed is None:
        return _cpu_pick(asked, requested, f, platform.get("host", {}), host)
    elif f.use_mla and kv_quantized(kv):
        refusal = f"ValueError: --kv-cache-dtype {kv} is not supported by MLA attention on CPU."
    elif f.use_mla is False and kv not in listed:
        refusal = (
            f"ValueError: --kv-cache-dtype {kv} is not supported by the CPU attention backend "
            "on this host."
        )
    else:
        return _cpu_pick(asked, requested, f, platform.get("host", {}), host)
    return Selection(asked, "error", None, (), refusal)


def _cpu_pick(
    asked: str,
    requested: str | None,
    f: Features,
    facts: Mapping[str, Any],
    host: Mapping[str, bool] | None,
) -> Selection:
    if f.use_mla is None or f.use_sparse is None:
        return Selection(asked, "depends", None, (), "the model's attention kind decides")
    if f.use_mla:
        return _cpu_mla(asked, requested, facts, host)
    needs = facts.get("kv_quantized_needs_any", ["amx_tile", "avx512"])
    if not kv_quantized(f.kv_cache_dtype):
        pick = Selection(asked, "selected", "CPU_ATTN", ())
    elif host is None:
        text = f"--kv-cache-dtype {f.kv_cache_dtype} needs a host with AVX-512 or AMX; "
        pick = Selection(asked, "depends", "CPU_ATTN", (), text + "elsewhere vLLM refuses it")
    elif any(host.get(n, False) for n in needs):
        pick = Selection(asked, "selected", "CPU_ATTN", ())
    else:
        refusal = str(facts["kv_quantized_refusal"]).format(kv_cache_dtype=f.kv_cache_dtype)
        return Selection(asked, "error", None, (), refusal)
    return _ignored(asked, requested, pick, ("CPU_ATTN",))


def _cpu_mla(
    asked: str, requested: str | None, facts: Mapping[str, Any], host: Mapping[str, bool] | None
) -> Selection:
    """The MLA branch: the first backend of the release's list whose host features the
    host has (an explicit one of the list skips those before it: vLLM's ``CPU_MLA``
    asked on an AMX host is taken)."""
    order: list[Mapping[str, Any]] = facts.get(
        "mla", [{"backend": "AMX_MLA", "needs": ["x86", "amx_tile"]}, {"backend": "CPU_MLA"}]
    )
    takes = tuple(str(step["backend"]) for step in order)
    if requested in takes:
        order = order[takes.index(requested) :]
    if host is None:
        first, *rest = order
        if not first.get("needs"):
            pick = Selection(asked, "selected", str(first["backend"]), ())
            return _ignored(asked, requested, pick, takes)
        text = (
            f"{first['backend']} on a host with {' and '.join(first['needs'])} (AMX tiles: Intel "
            f"Xeon 4th generation and newer), {rest[-1]['backend'] if rest else 'none'} "
            "elsewhere; give --cpu-features or a CPU preset"
        )
        pick = Selection(asked, "depends", None, (), text)
    else:
        found = next(s for s in order if all(host.get(n, False) for n in s.get("needs", ())))
        backend = str(found["backend"])
        if requested is not None and requested != backend:
            # AMX_MLA asked on a host without AMX: vLLM takes CPU_MLA, saying nothing
            return Selection(asked, "ignored", backend, ())
        pick = Selection(asked, "selected", backend, ())
    return _ignored(asked, requested, pick, takes)


def _ignored(
    asked: str, requested: str | None, pick: Selection, takes: tuple[str, ...]
) -> Selection:
    """A decision tree's pick, with an explicit value it does not take marked ignored."""
    if requested is None or requested in takes:
        return pick
    return Selection(asked, "ignored", pick.backend, pick.candidates, pick.message)


def xpu(requested: str | None, f: Features, mla_only: str | None = None) -> Selection:
    """``XPUPlatform.get_attn_backend_cls``: a decision tree; an explicit value it has no
    branch for is refused. ``mla_only``: the one backend every MLA model takes, whatever
    is asked (vLLM 0.29.0-0.31.0: TRITON_MLA)."""
    asked = requested or "auto"
    if f.kv_cache_dtype.startswith("turboquant_"):
        return _ignored(asked, requested, Selection(asked, "selected", "TURBOQUANT", ()), ())
    if f.use_sparse:
        pick = Selection(asked, "selected", "XPU_MLA_SPARSE", ())
        return _ignored(asked, requested, pick, ("XPU_MLA_SPARSE",))
    if f.use_mla is None or f.use_sparse is None:
        return Selection(asked, "depends", None, (), "the model's attention kind decides")
    taken = (mla_only or _xpu_mla(requested, f)) if f.use_mla else _xpu_mha(requested, f)
    if taken is None:
        refusal = f"ValueError: Invalid attention backend for xpu, with use_mla: {f.use_mla}"
        return Selection(asked, "error", None, (), refusal)
    if taken.startswith("ValueError"):
        return Selection(asked, "error", None, (), taken)
    return _ignored(asked, requested, Selection(asked, "selected", taken, ()), (taken,))


def _xpu_mla(requested: str | None, f: Features) -> str | None:
    """The MLA branch: TRITON_MLA when asked, else FlashAttention MLA when its KV-cache
    dtype check passes (an explicit FLASH_ATTN_MLA that fails it is refused)."""
    if requested not in (None, "TRITON_MLA", "FLASH_ATTN_MLA"):
        return None
    if requested == "TRITON_MLA":
        return "TRITON_MLA"
    if not kv_quantized(f.kv_cache_dtype):
        return "FLASH_ATTN_MLA"
    if requested == "FLASH_ATTN_MLA":
        return (
            "ValueError: FlashAttnMLA on XPU is not valid for this configuration: "
            "['kv_cache_dtype not supported']"
        )
    return "TRITON_MLA"


def _xpu_mha(requested: str | None, f: Features) -> str | None:
    """The decoder branch: TRITON_ATTN when asked or for float32, else FLASH_ATTN."""
    if requested == "TRITON_ATTN" or f.dtype == "float32":
        return "TRITON_ATTN"
    if requested not in (None, "FLASH_ATTN"):
        return None
    return "FLASH_ATTN"

"""The CPU and XPU platforms' attention choice: decision trees that never validate a
backend (``CpuPlatform``/``XPUPlatform.get_attn_backend_cls``); an explicit value a tree
does not take is ignored (CPU) or refused (XPU).
"""

from __future__ import annotations

from kernelcfg.vllm.kernels.attention.facts import Features, Selection, kv_quantized

__all__ = ["cpu", "xpu"]


def cpu(
    listed: list[str] | None,
    requested: str | None,
    f: Features,
    mla_only: str | None = None,
    mla_refused: str | None = None,
) -> Selection:
    """``CpuPlatform.get_attn_backend_cls``: a decision tree that never validates and
    ignores a backend it does not take; the host's ISA (AMX, AVX-512) decides the rest.
    ``listed``: the KV-cache dtypes the tree accepts (``None``: before vLLM 0.33.0 it
    checks none while selecting). ``mla_only``: the one backend every MLA model takes,
    whatever the host (vLLM 0.28.0: CPU_MLA, before AMX_MLA existed). ``mla_refused``:
    the error an MLA model meets, checked first (vLLM 0.27.0 has no CPU MLA backend)."""
    asked = requested or "auto"
    kv = f.kv_cache_dtype
    if mla_refused is not None and f.use_mla:
        refusal = mla_refused
    elif f.use_sparse:
        refusal = "NotImplementedError: Sparse Attention is not supported on CPU."
    elif listed is None:
        return _cpu_pick(asked, requested, f, mla_only)
    elif f.use_mla and kv_quantized(kv):
        refusal = f"ValueError: --kv-cache-dtype {kv} is not supported by MLA attention on CPU."
    elif f.use_mla is False and kv not in listed:
        refusal = (
            f"ValueError: --kv-cache-dtype {kv} is not supported by the CPU attention backend "
            "on this host."
        )
    else:
        return _cpu_pick(asked, requested, f, mla_only)
    return Selection(asked, "error", None, (), refusal)


def _cpu_pick(
    asked: str, requested: str | None, f: Features, mla_only: str | None = None
) -> Selection:
    if f.use_mla is None or f.use_sparse is None:
        return Selection(asked, "depends", None, (), "the model's attention kind decides")
    if f.use_mla and mla_only is not None:
        return _ignored(asked, requested, Selection(asked, "selected", mla_only, ()), (mla_only,))
    if f.use_mla:
        if requested == "CPU_MLA":
            return Selection(asked, "selected", "CPU_MLA", ())
        host = "AMX_MLA on a host with AMX tiles (Intel Xeon 4th generation and newer), CPU_MLA "
        pick = Selection(asked, "depends", None, (), host + "elsewhere")
        return _ignored(asked, requested, pick, ("AMX_MLA", "CPU_MLA"))
    if kv_quantized(f.kv_cache_dtype):
        needs = f"--kv-cache-dtype {f.kv_cache_dtype} needs a host with AVX-512 or AMX; "
        pick = Selection(asked, "depends", "CPU_ATTN", (), needs + "elsewhere vLLM refuses it")
    else:
        pick = Selection(asked, "selected", "CPU_ATTN", ())
    return _ignored(asked, requested, pick, ("CPU_ATTN",))


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

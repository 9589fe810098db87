"""One attention backend's ``validate_configuration``, from its facts in
``selector-X.Y.Z.json``: the declared dtypes, KV-cache dtypes, head and block sizes, MLA,
sparse, sinks and compute capability, then its ``supports_combination`` rules, each a
condition of the selector data's words (:data:`_PREDICATES`). What is not known (no
``config.json`` was read, say) makes a check *unknown*, never a refusal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kernelcfg.vllm.kernels.attention.facts import (
    PLATFORM_NAMES,
    Check,
    Features,
    Platform,
    Tri,
    cdna_version,
    kv_quantized,
    rdna,
    rdna_version,
)

__all__ = ["Context", "check", "holds"]


def _cap(value: list[int]) -> tuple[int, int]:
    return value[0], value[1]


class Context:
    """A check's inputs: the features, the platform, and what vLLM derives from them."""

    def __init__(self, features: Features, platform: Platform, facts: Mapping[str, Any]):
        self.f = features
        self.p = platform
        self.facts = facts

    def has(self, library: str) -> bool:
        return library in self.p.libraries

    def fa_available(self, version: int) -> bool:
        """``is_fa_version_supported``: the extension or files ship in the CUDA wheel;
        the capability decides (ROCm has none of vLLM's FlashAttention builds)."""
        families = self.facts["flash_attn"]["families"][str(version)]
        return (
            self.p.kind == "cuda"
            and self.p.major in families
            and (self.p.capability is not None and self.p.capability >= (8, 0))
        )

    def env_on(self, name: str) -> bool:
        """A ``VLLM_ROCM_USE_AITER*`` switch as vLLM reads it (``1``/``true``), with the
        release's default."""
        default = self.facts["env_defaults"].get(name, "0")
        return self.p.env.get(name, default).lower() in ("1", "true")

    def aiter(self, switch: str | None = None) -> bool:
        """``is_aiter_found_and_supported`` (aiter installed, CDNA3 or newer), and with
        ``switch`` also ``VLLM_ROCM_USE_AITER`` and that switch on."""
        found = self.has("aiter") and cdna_version(self.p.arch) >= 3
        if switch is None or not found:
            return found
        return self.env_on("VLLM_ROCM_USE_AITER") and self.env_on(switch)

    def fa_version(
        self,
        head_size: int | None = None,
        has_sinks: bool = False,
        block_size: int | None = None,
        hd256: bool = False,
        head_size_v: int | None = None,
    ) -> int | None:
        """``get_flash_attn_version`` on CUDA (``None``: no usable version);
        ``head_size_v``: the V head size where it may differ from ``head_size``
        (FlashAttention-DiffKV's), ``None`` where it is the same."""
        major = self.p.major
        if major is None:
            return None
        version = self._fa_requested(major)
        if version == 3 and major == 9 and self.fa_available(4):
            version = 4 if _fa3_to_fa4(head_size, head_size_v, has_sinks) else 3
        kernel_256 = self._fa4_hd256_kernel()
        if (
            version == 4
            and major in (10, 11)
            and kernel_256 is True
            and _fa4_hd256(head_size, head_size_v)
            and (not hd256 or self._hd256_fallback(has_sinks, block_size))
        ):
            version = 2
        hd192_any_v = self.facts["flash_attn"].get("fa4_hd192") == "any_v"
        if (
            version == 4
            and major >= 10
            and not _fa4_tmem_fits(head_size, head_size_v, kernel_256, hd192_any_v)
        ):
            version = 2
        return version if self.fa_available(version) else None

    def _fa_requested(self, major: int) -> int:
        """The version before the shape's fallbacks: the platform's default (FA3 on
        SM90, FA4 on SM100), or ``-ac.flash_attn_version``; FA3 asked on SM10x+ is FA4
        where available, else FA2."""
        if major == 9 and self.fa_available(3):
            version = 3
        elif major == 10 and self.fa_available(4):
            version = 4
        else:
            version = 2
        if self.f.flash_attn_version is not None:
            version = self.f.flash_attn_version
        if major >= 10 and version == 3:
            version = 4 if self.fa_available(4) else 2
        return version

    def _hd256_fallback(self, has_sinks: bool, block_size: int | None) -> bool:
        if has_sinks or kv_quantized(self.f.kv_cache_dtype):
            return True
        if self.f.hf_value("attn_logit_softcapping", None):
            return True
        return block_size is not None and block_size % 128 != 0

    def fa_supports_kv(self, *, shaped: bool = True, head_size_v: int | None = None) -> Tri:
        """``flash_attn_supports_kv_cache_dtype``: with the layer's shape (its
        ``supports_combination``; ``head_size_v`` the backend's V head size where it has
        its own), or without one (``supports_kv_cache_dtype``)."""
        if self.f.kv_cache_dtype == "fp8_e5m2":
            return False
        head_size: int | None = None
        version = self.fa_version()
        if shaped:
            if self.f.head_size is None or self.f.has_sink is None:
                return None
            head_size = self.f.head_size
            version = self.fa_version(
                head_size, self.f.has_sink, self.f.block_size, True, head_size_v
            )
        major = self.p.major
        sm90_fa4 = (
            version == 4
            and head_size in (None, 512)
            and head_size_v in (None, 512)
            and self._fa4_fp8_kv_on_sm90()
        )
        sm100 = bool(self.facts["flash_attn"].get("fp8_kv_sm100_fa4", True))
        return ((version == 3 or sm90_fa4) and major == 9) or (
            version == 4 and major == 10 and sm100
        )

    def _fa4_hd256_kernel(self) -> bool | str:
        """How FA4 serves head size 256 on Blackwell: ``True``, its dedicated kernel, with
        the fallbacks to FA2 (vLLM 0.29.0 on); ``False``, not at all (0.28.0);
        ``"any_v"``, whatever the V head size, without those fallbacks (0.27.0, which
        falls back for local attention only, a layer fact kernelcfg does not read)."""
        found: bool | str = self.facts["flash_attn"].get("fa4_hd256", True)
        return found

    def _fa4_fp8_kv_on_sm90(self) -> bool:
        """Whether FA4 serves an FP8 KV cache on SM90 (head size 512, from vLLM 0.31.0);
        0.29.0 and 0.30.0 take FP8 KV on SM90 from FA3 only."""
        return bool(self.facts["flash_attn"].get("fp8_kv_sm90_fa4", True))


def _fa3_to_fa4(head_size: int | None, head_size_v: int | None, has_sinks: bool) -> bool:
    """SM90 shapes FA3 cannot serve and FA4 can: a head size over 256, or sinks with a V
    head size unlike the QK one (DiffKV)."""
    if head_size is None:
        return False
    diff_kv = head_size_v is not None and head_size_v != head_size
    return head_size > 256 or (has_sinks and diff_kv)


def _fa4_hd256(head_size: int | None, head_size_v: int | None) -> bool:
    """``uses_fa4_hd256_kernel``: FA4's dedicated head size 256 kernel (V 256 too)."""
    return head_size == 256 and head_size_v in (None, 256)


def _fa4_tmem_fits(
    head_size: int | None,
    head_size_v: int | None,
    kernel_256: bool | str,
    hd192_any_v: bool = False,
) -> bool:
    """FA4's head sizes on Blackwell, bounded by TMEM: up to 128, 256 (V 256 where the
    release has the dedicated kernel, any V where ``kernel_256`` is ``"any_v"``, none where
    it is ``False``), or 192 with V 128 (any V where the release's ``fa4_hd192`` is
    ``"any_v"``: vLLM 0.26.0's fa_utils.py:239-243 tests ``head_size != 192`` alone)."""
    if head_size is None or head_size <= 128:
        return True
    if kernel_256 == "any_v":
        hd256 = head_size == 256
    else:
        hd256 = kernel_256 is True and _fa4_hd256(head_size, head_size_v)
    return hd256 or (head_size == 192 and (hd192_any_v or head_size_v == 128))


def _tri_in(value: Any, allowed: list[Any]) -> Tri:
    return None if value is None else value in allowed


def _not(value: Tri) -> Tri:
    return None if value is None else not value


def _hf_in(ctx: Context, spec: Mapping[str, Any] | list[Mapping[str, Any]]) -> Tri:
    """The config.json's value (``getattr`` with a default) in, or not in, a list; a list
    of such tests must all hold."""
    if ctx.f.hf is None:
        return None
    for one in spec if isinstance(spec, list) else [spec]:
        value = ctx.f.hf.get(one["attr"], one.get("default"))
        if ("in" in one) != (value in one.get("in", one.get("not_in"))):
            return False
    return True


def _hf_not_multiple(ctx: Context, spec: Mapping[str, Any]) -> Tri:
    if ctx.f.hf is None:
        return None
    value = ctx.f.hf.get(spec["attr"])
    return not isinstance(value, int) or value % spec["of"] != 0


def _has_attr(ctx: Context, name: str) -> Tri:
    return None if ctx.f.hf is None else name in ctx.f.hf


_ARCH_RULES: dict[str, Callable[[str | None, Any], bool]] = {
    "cdna_at_least": lambda arch, n: cdna_version(arch) >= n,
    "cdna_or_rdna": lambda arch, n: n in (cdna_version(arch), rdna_version(arch)),
    "gfx_in": lambda arch, names: any(name in (arch or "") for name in names),
}
"""Capability rules of ROCm backends that read the gfx architecture, not the capability."""


def _fa_version_not_in(ctx: Context, versions: list[int]) -> Tri:
    if ctx.f.head_size is None or ctx.f.has_sink is None:
        return None
    version = ctx.fa_version(ctx.f.head_size, ctx.f.has_sink, ctx.f.block_size, True)
    return version not in versions


_PREDICATES: dict[str, Callable[[Context, Any], Tri]] = {
    "mla": lambda c, v: None if c.f.use_mla is None else c.f.use_mla == v,
    "sparse": lambda c, v: None if c.f.use_sparse is None else c.f.use_sparse == v,
    "sink": lambda c, v: None if c.f.has_sink is None else c.f.has_sink == v,
    "dtype_not": lambda c, v: None if c.f.dtype is None else c.f.dtype != v,
    "head_size": lambda c, v: None if c.f.head_size is None else c.f.head_size == v,
    "head_size_not": lambda c, v: None if c.f.head_size is None else c.f.head_size != v,
    "kv_in": lambda c, v: c.f.kv_cache_dtype in v,
    "kv_not_in": lambda c, v: c.f.kv_cache_dtype not in v,
    "kv_prefix": lambda c, v: c.f.kv_cache_dtype.startswith(v),
    "kv_quantized": lambda c, v: kv_quantized(c.f.kv_cache_dtype) == v,
    "major_in": lambda c, v: _tri_in(c.p.major, v),
    "major_not_in": lambda c, v: _not(_tri_in(c.p.major, v)),
    "capability_below": lambda c, v: None if c.p.capability is None else c.p.capability < _cap(v),
    "capability_is": lambda c, v: None if c.p.capability is None else c.p.capability == _cap(v),
    "num_heads_at_most": lambda c, v: None if c.f.num_heads is None else c.f.num_heads <= v,
    "num_heads_over": lambda c, v: None if c.f.num_heads is None else c.f.num_heads > v,
    "missing": lambda c, v: not c.has(v),
    "hf": _hf_in,
    "hf_lacks": lambda c, v: _not(_has_attr(c, v)),
    "hf_not_multiple": _hf_not_multiple,
    "num_heads_not_in": lambda c, v: _not(_tri_in(c.f.num_heads, v)),
    "fa_kv_refused": lambda c, v: _not(c.fa_supports_kv()) if v else c.fa_supports_kv(),
    "fa_kv_refused_v": lambda c, v: _not(c.fa_supports_kv(head_size_v=v)),
    "fa_version_not_in": _fa_version_not_in,
    "kind_not": lambda c, v: c.p.kind != v,
    "block_size_not_multiple_of": lambda c, v: (
        c.f.block_size is not None and c.f.block_size % v != 0
    ),
    "fa_mla": lambda c, v: (c.fa_available(3) and c.p.major == 9) == v,
    "rdna": lambda c, v: rdna(c.p.arch) == v,
    "gfx12": lambda c, v: (rdna(c.p.arch) and "gfx12" in (c.p.arch or "")) == v,
    "arch_in": lambda c, v: None if c.p.arch is None else any(a in c.p.arch for a in v),
    "aiter_supported": lambda c, v: c.aiter() == v,
    "aiter_mla": lambda c, v: c.aiter("VLLM_ROCM_USE_AITER_MLA") == v,
    "aiter_mha": lambda c, v: c.aiter("VLLM_ROCM_USE_AITER_MHA") == v,
    "aiter_rdna": lambda c, v: (
        (c.has("aiter") and rdna_version(c.p.arch) == 4 and c.env_on("VLLM_ROCM_USE_AITER")) == v
    ),
}
"""The condition words of the selector data: each is one test on the model, the target
or the install; a condition holds when all of its words hold."""


def holds(condition: Mapping[str, Any], ctx: Context) -> Tri:
    """Whether every word of ``condition`` holds (``None`` if one is unknown and none
    is false)."""
    answer: Tri = True
    for word, value in condition.items():
        found = _PREDICATES[word](ctx, value)
        if found is False:
            return False
        if found is None:
            answer = None
    return answer


def _format(template: str, ctx: Context, defaults: Mapping[str, Any]) -> str:
    """A reason's template filled as vLLM's f-string would be (``defaults``: the values
    vLLM's ``getattr`` falls back to)."""
    if "{" not in template:
        return template
    return template.format_map(
        _Fill(
            {
                "kv_cache_dtype": ctx.f.kv_cache_dtype,
                "device_capability": ctx.p.capability_text(),
                "head_size": ctx.f.head_size,
                "num_heads": ctx.f.num_heads,
                **defaults,
                **(ctx.f.hf or {}),
            }
        )
    )


class _Fill(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "None"


def check(data: Mapping[str, Any], name: str, features: Features, platform: Platform) -> Check:
    """``validate_configuration`` of one backend (an import failure is its one reason)."""
    facts = data["backends"].get(name)
    if facts is None:
        return Check(name, "unknown", ("kernelcfg has no facts for this backend",))
    early = _unloadable(data, facts, platform)
    if early is not None:
        return Check(name, "refused", (early,))
    ctx = Context(features, platform, data)
    refused: list[str] = []
    unknown: list[str] = []
    for reason, answer in _checks(facts, ctx):
        if answer is False:
            refused.append(reason)
        elif answer is None:
            unknown.append(reason)
    if refused:
        return Check(name, "refused", tuple(refused))
    if unknown:
        return Check(name, "unknown", tuple(unknown))
    return Check(name, "ok", ())


def _unloadable(
    data: Mapping[str, Any], facts: Mapping[str, Any], platform: Platform
) -> str | None:
    """Why the backend cannot even be loaded here (no class, another platform's
    backend, a library missing), or ``None``."""
    if "refuse" in facts:
        return str(facts["refuse"])
    owner = facts.get("platform", platform.kind)
    if owner != platform.kind:
        return (
            f"a {PLATFORM_NAMES[owner]} backend; {platform.device_name} runs "
            f"{PLATFORM_NAMES[platform.kind]} (vLLM refuses it or fails loading)"
        )
    for library in facts.get("imports", ()):
        if library not in platform.libraries:
            if platform.kind == "rocm":  # RocmPlatform reports the bare exception name
                return "ImportError"
            return str(data["import_errors"].get(library, f"ImportError: {library}"))
    return None


def _checks(facts: Mapping[str, Any], ctx: Context) -> Iterator[tuple[str, Tri]]:
    """Each test of ``validate_configuration`` in vLLM's order: its reason, and
    whether the backend passes it."""
    f = ctx.f
    yield "head_size not supported", _head_size_ok(facts, ctx)
    yield "dtype not supported", _tri_in(f.dtype, facts["dtypes"])
    yield "kv_cache_dtype not supported", _kv(facts, ctx)
    yield "block_size not supported", _block(facts, f.block_size)
    mla = facts.get("mla", False)
    if f.use_mla is None or f.use_mla != mla:
        reason = "MLA not supported" if f.use_mla or mla is False else "non-MLA not supported"
        yield reason, None if f.use_mla is None else False
    if f.has_sink is not False:
        yield "attention sinks not supported", _sink(facts, ctx)
    sparse = facts.get("sparse", False)
    if f.use_sparse is None or f.use_sparse != sparse:
        said = "sparse" if f.use_sparse or sparse is False else "non-sparse"
        yield f"{said} not supported", None if f.use_sparse is None else False
    yield "compute capability not supported", _capability(facts, ctx)
    yield (
        f"attention type {f.attn_type} not supported",
        f.attn_type in facts.get("attn_types", ["decoder"]),
    )
    for rule in facts.get("combination", ()):
        answer = holds(rule["if"], ctx)
        if answer is not False:
            yield _format(rule["reason"], ctx, rule.get("defaults", {})), _not(answer)
            if answer:
                break


def _head_size_ok(facts: Mapping[str, Any], ctx: Context) -> Tri:
    rule = facts.get("head_size_rule")
    size = ctx.f.head_size
    sizes = facts.get("head_sizes", [])
    listed = True if not sizes else _tri_in(size, sizes)
    if rule is None or listed is not True or size is None:
        return listed if size is not None or listed is not True else None
    if rule == "flash_attn":
        return size % 8 == 0 and (size <= 256 or (size <= 512 and ctx.fa_available(4)))
    if rule == "at_least_32":
        return size >= 32
    return size > 0  # "positive"


def _kv(facts: Mapping[str, Any], ctx: Context) -> Tri:
    kv = ctx.f.kv_cache_dtype
    rule = facts.get("kv_rule")
    listed = facts.get("kv_cache_dtypes", [])
    if rule == "prefix":
        return kv.startswith(facts["kv_prefix"])
    if listed and kv not in listed:
        return False
    if rule == "flash_attn" and kv_quantized(kv):
        return ctx.fa_supports_kv(shaped=False)
    if rule in ("flashinfer", "flashinfer_trtllm") and kv.startswith("nvfp4"):
        if rule == "flashinfer" and ctx.p.major in (8, 9, 12):
            return kv == "nvfp4"  # FA2's NVFP4 path (from vLLM 0.32.0)
        return ctx.p.major == 10 and ctx.has("flashinfer")  # TRT-LLM on SM100
    return True


def _capability(facts: Mapping[str, Any], ctx: Context) -> Tri:
    """``supports_compute_capability``: by capability, or (ROCm) by architecture."""
    rule = facts.get("capability")
    if rule is None:
        return True
    kind = next(iter(rule))
    if kind in _ARCH_RULES:
        return _ARCH_RULES[kind](ctx.p.arch, rule[kind])
    cap = ctx.p.capability
    if cap is None:
        return None
    if kind == "majors":
        return cap[0] in rule["majors"]
    if kind == "exact":
        return [cap[0], cap[1]] in rule["exact"]
    return _cap(rule.get("min", [0, 0])) <= cap <= _cap(rule.get("max", [99, 99]))


def _block(facts: Mapping[str, Any], block_size: int | None) -> Tri:
    """``supports_block_size``: a multiple of one of the kernel's block sizes."""
    if block_size is None:
        return True
    sizes = facts.get("block_sizes") or []
    if not sizes:
        return True
    return any(block_size % (s["multiple_of"] if isinstance(s, dict) else s) == 0 for s in sizes)


def _sink(facts: Mapping[str, Any], ctx: Context) -> Tri:
    """``supports_sink`` (when the layer has sinks, or may have)."""
    rule = facts.get("sink", False)
    if rule == "flash_attn":
        answer: Tri = ctx.fa_version() in (3, 4)
    elif rule == "mi3xx":
        answer = any(g in (ctx.p.arch or "") for g in ("gfx942", "gfx950"))
    elif rule == "trtllm":
        answer = ctx.has("flashinfer") and (ctx.p.capability == (9, 0) or ctx.p.major in (10, 12))
    elif rule == "trtllm_sm100_sm120":  # vLLM 0.29.0: no TRT-LLM sinks on SM90 yet
        answer = ctx.has("flashinfer") and ctx.p.major in (10, 12)
    elif rule == "trtllm_sm100":  # vLLM 0.27.0: the SM100 trtllm-gen path only
        answer = ctx.has("flashinfer") and ctx.p.major == 10
    else:
        answer = bool(rule)
    if ctx.f.has_sink is None:
        return None if not answer else True
    return answer

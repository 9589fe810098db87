"""vLLM's attention selector, modelled: which backend a platform takes for a model.

The facts of a release sit in ``selector-X.Y.Z.json`` (read by a maintainer from
vLLM's backend classes and platforms): per backend what it declares (dtypes, KV-cache
dtypes, head sizes, kernel block sizes, MLA, sparse, sinks, compute capability) and its
extra checks (``supports_combination``) as conditions; per platform the ordered
candidates, also as conditions. The code is the walk vLLM makes:
``AttentionBackend.validate_configuration`` for one backend, the platform's priority
walk for ``auto``. What is not known (no ``config.json`` was read, say) makes a check
*unknown*, never a refusal: kernelcfg refuses only what vLLM certainly refuses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

from kernelcfg.base.answers import LARGE, Answers
from kernelcfg.targets.presets import Target, gfx_capability
from kernelcfg.vllm import releases
from kernelcfg.vllm.inputs import Inputs

__all__ = [
    "PLATFORM_NAMES",
    "Check",
    "Features",
    "Platform",
    "Selection",
    "Selector",
    "feature_key",
    "features",
    "features_of",
    "platform_of",
    "selector",
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


def _cap(value: list[int]) -> tuple[int, int]:
    return value[0], value[1]


class _Context:
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
        if (
            version == 4
            and major in (10, 11)
            and _fa4_hd256(head_size, head_size_v)
            and (not hd256 or self._hd256_fallback(has_sinks, block_size))
        ):
            version = 2
        if version == 4 and major >= 10 and not _fa4_tmem_fits(head_size, head_size_v):
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
        return ((version == 3 or sm90_fa4) and major == 9) or (version == 4 and major == 10)

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


def _fa4_tmem_fits(head_size: int | None, head_size_v: int | None) -> bool:
    """FA4's head sizes on Blackwell, bounded by TMEM: up to 128, 256 (V 256), or 192
    with V 128."""
    if head_size is None or head_size <= 128:
        return True
    return _fa4_hd256(head_size, head_size_v) or (head_size == 192 and head_size_v == 128)


def _tri_in(value: Any, allowed: list[Any]) -> Tri:
    return None if value is None else value in allowed


def _not(value: Tri) -> Tri:
    return None if value is None else not value


def _hf_in(ctx: _Context, spec: Mapping[str, Any] | list[Mapping[str, Any]]) -> Tri:
    """The config.json's value (``getattr`` with a default) in, or not in, a list; a list
    of such tests must all hold."""
    if ctx.f.hf is None:
        return None
    for one in spec if isinstance(spec, list) else [spec]:
        value = ctx.f.hf.get(one["attr"], one.get("default"))
        if ("in" in one) != (value in one.get("in", one.get("not_in"))):
            return False
    return True


def _hf_not_multiple(ctx: _Context, spec: Mapping[str, Any]) -> Tri:
    if ctx.f.hf is None:
        return None
    value = ctx.f.hf.get(spec["attr"])
    return not isinstance(value, int) or value % spec["of"] != 0


def _has_attr(ctx: _Context, name: str) -> Tri:
    return None if ctx.f.hf is None else name in ctx.f.hf


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


_ARCH_RULES: dict[str, Callable[[str | None, int], bool]] = {
    "cdna_at_least": lambda arch, n: cdna_version(arch) >= n,
    "cdna_or_rdna": lambda arch, n: n in (cdna_version(arch), rdna_version(arch)),
}
"""Capability rules of ROCm backends that read the gfx architecture, not the capability."""


def _fa_version_not_in(ctx: _Context, versions: list[int]) -> Tri:
    if ctx.f.head_size is None or ctx.f.has_sink is None:
        return None
    version = ctx.fa_version(ctx.f.head_size, ctx.f.has_sink, ctx.f.block_size, True)
    return version not in versions


_PREDICATES: dict[str, Callable[[_Context, Any], Tri]] = {
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


def holds(condition: Mapping[str, Any], ctx: _Context) -> Tri:
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


def _format(template: str, ctx: _Context, defaults: Mapping[str, Any]) -> str:
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


class Selector:
    """One release's attention selector: the backends' declarations and the platforms'
    candidate lists."""

    def __init__(self, version: str, data: Mapping[str, Any]) -> None:
        self.version = version
        self.data = data
        self.backends: Mapping[str, Mapping[str, Any]] = data["backends"]
        models = data["models"]
        self.models = ModelFacts(
            frozenset(models["mla_model_types"]), dict(models["architectures"])
        )
        self.hf_attrs = _hf_attrs(data)
        self._picks: Answers[tuple[Any, ...], Selection] = Answers(512, text=LARGE)

    def kernel(self, name: str | None) -> str | None:
        """The backend's class name, as vLLM's log names it."""
        from kernelcfg.vllm.kernels.attention.config import facts

        found = facts(self.version)
        path = found.backends.get(name) if found is not None and name else None
        return path.rsplit(".", 1)[-1] if path else None

    def needs(self, name: str) -> str | None:
        """A backend's compute-capability requirement in words (``SM10x``)."""
        rule = (self.backends.get(name) or {}).get("capability")
        if rule is None:
            return None
        if "majors" in rule:
            return " or ".join(f"SM{m}x" for m in rule["majors"])
        if "exact" in rule:
            return " or ".join(f"SM{a}{b}" for a, b in rule["exact"])
        low, high = rule.get("min"), rule.get("max")
        if high is None:
            return f"SM{low[0]}{low[1]} or newer"
        return f"SM{low[0]}{low[1]} to SM{high[0]}{high[1]}"

    def libraries(self, kind: str, install: str) -> frozenset[str]:
        """The optional libraries an install has on a platform kind."""
        return frozenset(self.data["installs"].get(kind, {}).get(install, ()))

    # -- one backend ---------------------------------------------------------------

    def check(self, name: str, features: Features, platform: Platform) -> Check:
        """``validate_configuration`` of one backend (an import failure is its one reason)."""
        facts = self.backends.get(name)
        if facts is None:
            return Check(name, "unknown", ("kernelcfg has no facts for this backend",))
        early = self._unloadable(facts, platform)
        if early is not None:
            return Check(name, "refused", (early,))
        ctx = _Context(features, platform, self.data)
        refused: list[str] = []
        unknown: list[str] = []
        for reason, answer in self._checks(facts, ctx):
            if answer is False:
                refused.append(reason)
            elif answer is None:
                unknown.append(reason)
        if refused:
            return Check(name, "refused", tuple(refused))
        if unknown:
            return Check(name, "unknown", tuple(unknown))
        return Check(name, "ok", ())

    def _unloadable(self, facts: Mapping[str, Any], platform: Platform) -> str | None:
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
                return str(self.data["import_errors"].get(library, f"ImportError: {library}"))
        return None

    def _checks(self, facts: Mapping[str, Any], ctx: _Context) -> Iterator[tuple[str, Tri]]:
        """Each test of ``validate_configuration`` in vLLM's order: its reason, and
        whether the backend passes it."""
        f = ctx.f
        yield "head_size not supported", self._head_size(facts, ctx)
        yield "dtype not supported", _tri_in(f.dtype, facts["dtypes"])
        yield "kv_cache_dtype not supported", self._kv(facts, ctx)
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
        yield "compute capability not supported", self._capability(facts, ctx)
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

    @staticmethod
    def _head_size(facts: Mapping[str, Any], ctx: _Context) -> Tri:
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

    @staticmethod
    def _kv(facts: Mapping[str, Any], ctx: _Context) -> Tri:
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

    @staticmethod
    def _capability(facts: Mapping[str, Any], ctx: _Context) -> Tri:
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

    # -- a platform's walk -----------------------------------------------------------

    def priorities(self, features: Features, platform: Platform) -> list[str] | None:
        """The platform's candidates in order (``None``: they depend on what is unknown)."""
        ctx = _Context(features, platform, self.data)
        facts = self.data["platforms"].get(platform.kind, {})
        for entry in facts.get("priorities", []):
            answer = holds(entry["when"], ctx)
            if answer is None:
                return None
            if answer:
                order = self._entries(entry["order"], ctx)
                return None if order is None else _swapped(order, facts.get("swaps", []), ctx)
        return []

    @staticmethod
    def _entries(order: list[Any], ctx: _Context) -> list[str] | None:
        out: list[str] = []
        for item in order:
            if isinstance(item, str):
                out.append(item)
                continue
            answer = holds(item["if"], ctx)
            if answer is None:
                return None
            if answer:
                out.append(item["backend"])
        return out

    def select(self, requested: str | None, features: Features, platform: Platform) -> Selection:
        """What the platform does with ``requested`` (``None``: auto). A batch asks the
        same question line after line: answers are kept (a few hundred at most), keyed
        by everything the walk reads (``make bench``: a resolve with a selection costs 3x
        a plain one without this)."""
        key = (requested, feature_key(self, features), platform.key)
        return self._picks.get(key, lambda: self._select(requested, features, platform))

    def _select(self, requested: str | None, features: Features, platform: Platform) -> Selection:
        if platform.kind == "cpu":
            return _cpu(self.data["platforms"]["cpu"].get("kv_cache_dtypes"), requested, features)
        if platform.kind == "xpu":
            return _xpu(requested, features, self.data["platforms"].get("xpu", {}).get("mla"))
        if platform.kind not in self.data["platforms"]:
            return Selection(
                requested or "auto",
                "depends",
                None,
                (),
                f"kernelcfg does not model "
                f"{PLATFORM_NAMES.get(platform.kind, platform.kind)} attention selection yet",
            )
        if requested is not None:
            return self._explicit(requested, features, platform)
        return self._auto(features, platform)

    def _explicit(self, requested: str, features: Features, platform: Platform) -> Selection:
        found = self.check(requested, features, platform)
        if found.verdict == "ok":
            return Selection(requested, "selected", requested, (found,))
        if found.verdict == "unknown":
            return Selection(requested, "depends", requested, (found,), _depends(found))
        return Selection(
            requested,
            "error",
            None,
            (found,),
            f"Selected backend AttentionBackendEnum.{requested} is not valid for this "
            f"configuration. Reason: {list(found.reasons)}",
        )

    def _auto(self, features: Features, platform: Platform) -> Selection:
        order = self.priorities(features, platform)
        if order is None:
            return Selection("auto", "depends", None, (), "the model's shape decides the list")
        checks: list[Check] = []
        for name in order:
            found = self.check(name, features, platform)
            checks.append(found)
            if found.verdict == "ok":
                return Selection("auto", "selected", name, tuple(checks))
            if found.verdict == "unknown":
                return Selection("auto", "depends", None, tuple(checks), _depends(found))
        reasons = ", ".join(f"{c.backend}: [{', '.join(c.reasons)}]" for c in checks)
        return Selection(
            "auto",
            "error",
            None,
            tuple(checks),
            f"No valid attention backend found for {platform.device_name}. Reasons: {{{reasons}}}.",
        )


def _swapped(order: list[str], swaps: list[Mapping[str, Any]], ctx: _Context) -> list[str] | None:
    """The list after the platform's in-place swaps (ROCm 0.34.0 on gfx1100 and gfx1201:
    TRITON_ATTN takes ROCM_ATTN's place and back, every other backend keeps its own),
    each made when both backends are listed and its condition holds."""
    for swap in swaps:
        first, second = swap["backends"]
        if first not in order or second not in order:
            continue
        answer = holds(swap["when"], ctx)
        if answer is None:
            return None
        if answer:
            i, j = order.index(first), order.index(second)
            order[i], order[j] = second, first
    return order


def _cpu(listed: list[str] | None, requested: str | None, f: Features) -> Selection:
    """``CpuPlatform.get_attn_backend_cls``: a decision tree that never validates and
    ignores a backend it does not take; the host's ISA (AMX, AVX-512) decides the rest.
    ``listed``: the KV-cache dtypes the tree accepts (``None``: before vLLM 0.33.0 it
    checks none while selecting)."""
    asked = requested or "auto"
    kv = f.kv_cache_dtype
    if f.use_sparse:
        refusal = "NotImplementedError: Sparse Attention is not supported on CPU."
    elif listed is None:
        return _cpu_pick(asked, requested, f)
    elif f.use_mla and kv_quantized(kv):
        refusal = f"ValueError: --kv-cache-dtype {kv} is not supported by MLA attention on CPU."
    elif f.use_mla is False and kv not in listed:
        refusal = (
            f"ValueError: --kv-cache-dtype {kv} is not supported by the CPU attention backend "
            "on this host."
        )
    else:
        return _cpu_pick(asked, requested, f)
    return Selection(asked, "error", None, (), refusal)


def _cpu_pick(asked: str, requested: str | None, f: Features) -> Selection:
    if f.use_mla is None or f.use_sparse is None:
        return Selection(asked, "depends", None, (), "the model's attention kind decides")
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


def _xpu(requested: str | None, f: Features, mla_only: str | None = None) -> Selection:
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


_UNKNOWN_WORDS = (
    ("head_size", "head size"),
    ("dtype not", "dtype"),
    ("MLA", "attention kind (MLA or not)"),
    ("sink", "attention sinks"),
    ("sparse", "sparse attention"),
)


def _depends(found: Check) -> str:
    """What a backend's verdict waits for, in words."""
    words: list[str] = []
    for reason in found.reasons:
        word = next((w for key, w in _UNKNOWN_WORDS if key in reason), "config.json")
        if word not in words:
            words.append(word)
    fix = "give its config.json (a local model folder, --hf-config-path, --download)"
    return (
        f"{found.backend} depends on the model's {', '.join(words)}; "
        + fix
        + (" or --dtype" if words == ["dtype"] else "")
    )


def _block(facts: Mapping[str, Any], block_size: int | None) -> Tri:
    """``supports_block_size``: a multiple of one of the kernel's block sizes."""
    if block_size is None:
        return True
    sizes = facts.get("block_sizes") or []
    if not sizes:
        return True
    return any(block_size % (s["multiple_of"] if isinstance(s, dict) else s) == 0 for s in sizes)


def _sink(facts: Mapping[str, Any], ctx: _Context) -> Tri:
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
    else:
        answer = bool(rule)
    if ctx.f.has_sink is None:
        return None if not answer else True
    return answer


def feature_key(found: Selector, features: Features) -> tuple[Any, ...]:
    """The features as a hashable key: the config.json enters by the attributes the
    release's checks read."""
    hf = features.hf
    read = None if hf is None else tuple(repr(hf.get(a)) for a in found.hf_attrs)
    return (
        features.head_size,
        features.dtype,
        features.kv_cache_dtype,
        features.block_size,
        features.use_mla,
        features.use_sparse,
        features.has_sink,
        features.num_heads,
        features.attn_type,
        features.flash_attn_version,
        read,
    )


def _hf_attrs(data: Mapping[str, Any]) -> tuple[str, ...]:
    """Every config.json attribute the release's checks and reasons read."""
    import re

    found: set[str] = {"attn_logit_softcapping"}
    for facts in data["backends"].values():
        for rule in facts.get("combination", ()):
            condition = rule["if"]
            specs = condition.get("hf", [])
            for spec in specs if isinstance(specs, list) else [specs]:
                found.add(spec["attr"])
            if "hf_lacks" in condition:
                found.add(condition["hf_lacks"])
            if "hf_not_multiple" in condition:
                found.add(condition["hf_not_multiple"]["attr"])
            found.update(re.findall(r"{(\w+)}", rule["reason"]))
    return tuple(sorted(found))


@cache
def selector(version: str) -> Selector | None:
    """The release's selector model; ``None`` when kernelcfg has none for it."""
    data = releases.release_data("selector", version)
    return None if data is None else Selector(version, data)


_DTYPES = {"half": "float16", "float16": "float16", "bfloat16": "bfloat16", "float": "float32"}
_DTYPES["float32"] = "float32"


def _text_config(hf: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """``hf_text_config``: a multimodal model's ``text_config``, else the config."""
    if hf is None:
        return None
    text = hf.get("text_config")
    return text if isinstance(text, dict) else hf


def _model_dtype(dtype: str, hf: Mapping[str, Any] | None) -> str | None:
    """``--dtype`` as vLLM resolves it (``auto``: the config's, float32 as bfloat16)."""
    if dtype != "auto":
        return _DTYPES.get(dtype)
    if hf is None:
        return None
    found = hf.get("torch_dtype") or hf.get("dtype")
    if found in ("float16", "bfloat16"):
        return str(found)
    return "bfloat16" if found in (None, "float32") else None


@dataclass(frozen=True)
class ModelFacts:
    """What the release knows about model families, for the selector's features."""

    mla_model_types: frozenset[str]
    """``is_deepseek_mla``'s model types (MLA when ``kv_lora_rank`` is set)."""
    architectures: Mapping[str, Mapping[str, bool]]
    """Per architecture, the attention traits it always has (``use_mla``, ``has_sink``,
    ``use_sparse``), for when no ``config.json`` was read."""


def features(  # noqa: PLR0913 - the selector's inputs, each from its own flag
    found: Selector,
    hf_config: Mapping[str, Any] | None,
    architectures: list[str] | None,
    *,
    dtype: str = "auto",
    kv_cache_dtype: str = "auto",
    block_size: int | None = None,
    tensor_parallel_size: int = 1,
    env: Mapping[str, str] | None = None,
    flash_attn_version: int | None = None,
) -> Features:
    """The selector's inputs for a model's decoder attention layers, as vLLM derives them."""
    hf = _text_config(hf_config)
    facts = found.models
    traits = _traits(facts, hf, architectures, env or {})
    head_size: int | None = None
    if hf is not None:
        head_size = _head_size(hf, bool(traits.get("use_mla")))
    heads = hf.get("num_attention_heads") if hf is not None else None
    return Features(
        head_size=head_size,
        dtype=_model_dtype(dtype, hf),
        kv_cache_dtype=kv_cache_dtype,
        block_size=block_size,
        use_mla=traits.get("use_mla"),
        use_sparse=traits.get("use_sparse"),
        has_sink=traits.get("has_sink"),
        num_heads=heads // tensor_parallel_size if isinstance(heads, int) else None,
        hf=hf,
        flash_attn_version=flash_attn_version,
    )


def features_of(found: Selector, inputs: Inputs, flash_attn_version: int | None = None) -> Features:
    """:func:`features` of what a command line says about the model; worked out once per
    config.json file (as read) and flags (a batch names the same model line after line:
    about 4% of such a line, ``make bench``)."""
    if inputs.model_config_key is None:
        return _features_of(found, inputs, flash_attn_version)
    key = (
        found.version,
        inputs.model_config_key,
        None if inputs.architectures is None else tuple(inputs.architectures),
        inputs.dtype,
        inputs.kv_cache_dtype,
        inputs.block_size,
        inputs.tensor_parallel_size,
        tuple(sorted(inputs.env.items())),
        flash_attn_version,
    )
    return _FEATURES.get(key, lambda: _features_of(found, inputs, flash_attn_version))


_FEATURES: Answers[tuple[Any, ...], Features] = Answers(256, text=LARGE)


def _features_of(found: Selector, inputs: Inputs, flash_attn_version: int | None) -> Features:
    return features(
        found,
        inputs.hf_config,
        inputs.architectures,
        dtype=inputs.dtype,
        kv_cache_dtype=inputs.kv_cache_dtype,
        block_size=inputs.block_size,
        tensor_parallel_size=inputs.tensor_parallel_size,
        env=inputs.env,
        flash_attn_version=flash_attn_version,
    )


def _traits(
    facts: ModelFacts,
    hf: Mapping[str, Any] | None,
    architectures: list[str] | None,
    env: Mapping[str, str],
) -> dict[str, bool]:
    """MLA, sparse and sinks: from the config when read, else from the architecture."""
    archs = list(architectures or ()) or list((hf or {}).get("architectures") or ())
    known = next((facts.architectures[a] for a in archs if a in facts.architectures), None)
    traits: dict[str, bool] = dict(known or {})
    if hf is not None:
        traits["use_mla"] = (
            hf.get("model_type") in facts.mla_model_types and hf.get("kv_lora_rank") is not None
        )
        traits["use_sparse"] = traits["use_mla"] and "index_topk" in hf
        traits.setdefault("has_sink", False)
    if traits.get("use_mla") and env.get("VLLM_MLA_DISABLE", "0") not in ("", "0"):
        traits["use_mla"] = traits["use_sparse"] = False
    return traits


def _head_size(hf: Mapping[str, Any], use_mla: bool) -> int | None:
    """``get_head_size``: MLA's latent plus rope dims, else ``head_dim``, else hidden
    size over heads."""
    if use_mla:
        rank, rope = hf.get("kv_lora_rank"), hf.get("qk_rope_head_dim", 0)
        return rank + rope if isinstance(rank, int) and isinstance(rope, int) else None
    head_dim = hf.get("head_dim")
    if isinstance(head_dim, int) and head_dim > 0:
        return head_dim
    hidden, heads = hf.get("hidden_size"), hf.get("num_attention_heads")
    if isinstance(hidden, int) and isinstance(heads, int) and heads > 0:
        return hidden // heads
    return None


def platform_of(
    model: Selector, target: Target, install: str, env: Mapping[str, str] | None = None
) -> Platform:
    """A target as the selector sees it, under one install."""
    capability: tuple[int, int] | None = None
    if target.capability is not None:
        major, _, minor = target.capability.partition(".")
        capability = (int(major), int(minor or 0))
    elif target.gfx_arch is not None:
        capability = gfx_capability(target.gfx_arch)
    return Platform(
        target.kind,
        capability,
        target.device,
        model.libraries(target.kind, install),
        env or {},
        target.gfx_arch,
    )

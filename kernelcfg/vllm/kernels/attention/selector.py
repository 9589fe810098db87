"""vLLM's attention selector, modelled: which backend a platform takes for a model.

The facts of a release sit in ``selector-X.Y.Z.json`` (read by a maintainer from
vLLM's backend classes and platforms): per backend what it declares (dtypes, KV-cache
dtypes, head sizes, kernel block sizes, MLA, sparse, sinks, compute capability) and its
extra checks (``supports_combination``) as conditions; per platform the ordered
candidates, also as conditions. The code is the walk vLLM makes: one backend's
``AttentionBackend.validate_configuration`` (:mod:`.checks`), the platform's priority
walk for ``auto`` (here), the CPU and XPU decision trees (:mod:`.trees`). kernelcfg
refuses only what vLLM certainly refuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from kernelcfg.base.answers import LARGE, Answers
from kernelcfg.vllm import releases
from kernelcfg.vllm.kernels.attention import checks
from kernelcfg.vllm.kernels.attention.checks import Context, holds
from kernelcfg.vllm.kernels.attention.facts import (
    PLATFORM_NAMES,
    Check,
    Features,
    ModelFacts,
    Platform,
    Selection,
)
from kernelcfg.vllm.kernels.attention.trees import cpu, xpu

__all__ = ["Selector", "feature_key", "selector"]


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
        from kernelcfg.vllm.kernel_config.attention import facts

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

    def check(self, name: str, features: Features, platform: Platform) -> Check:
        """``validate_configuration`` of one backend (an import failure is its one reason)."""
        return checks.check(self.data, name, features, platform)

    # -- a platform's walk -----------------------------------------------------------

    def priorities(self, features: Features, platform: Platform) -> list[str] | None:
        """The platform's candidates in order (``None``: they depend on what is unknown)."""
        ctx = Context(features, platform, self.data)
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
    def _entries(order: list[Any], ctx: Context) -> list[str] | None:
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
            tree = self.data["platforms"]["cpu"]
            listed = tree.get("kv_cache_dtypes")
            return cpu(listed, requested, features, tree.get("mla"), tree.get("mla_refused"))
        if platform.kind == "xpu":
            return xpu(requested, features, self.data["platforms"].get("xpu", {}).get("mla"))
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


def _swapped(order: list[str], swaps: list[Mapping[str, Any]], ctx: Context) -> list[str] | None:
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

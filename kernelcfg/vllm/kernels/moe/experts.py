"""One experts class's ``FusedMoEExperts.is_supported_config``, from the MoE selection
data: the base checks in vLLM's order and texts (``base_checks``), each class's
``_supports_*`` answers (``supports``) and its override's own refusals (``extra``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernelcfg.vllm.kernels.moe.texts import Texts
from kernelcfg.vllm.kernels.words import Where, holds

__all__ = ["Experts"]


class Experts:
    """The experts classes of one release, each asked whether it takes a layer."""

    def __init__(self, data: Mapping[str, Any], texts: Texts) -> None:
        self.data = data
        """The release's MoE selection data (``moe-X.Y.Z.json``)."""
        self.texts = texts
        """How the release's reasons are filled."""

    def supported(
        self, cls: str, feats: Mapping[str, Any], where: Where
    ) -> tuple[bool, str | None]:
        """``is_supported_config`` of one experts class (modular_kernel.py:580 and its
        override, as the class's ``extra`` rules)."""
        spec = self.data["experts"][cls]
        reason = self._extras(spec, "start", feats, where)
        for check in self.data["base_checks"]:
            if reason is None and self._fails(check, spec, feats, where):
                reason = self.texts.fill(check["reason"], feats, where)
            if reason is None:
                reason = self._extras(spec, check["name"], feats, where)
        if reason is None:
            reason = self._extras(spec, "all", feats, where)
        if reason is None:
            return True, None
        for rule in spec.get("extra", ()):
            if "append" in rule and holds(rule["append_if_rejected"], where, feats):
                reason += rule["append"]
        return False, reason

    def _fails(
        self,
        check: Mapping[str, Any],
        spec: Mapping[str, Any],
        feats: Mapping[str, Any],
        where: Where,
    ) -> bool:
        """Whether one base check of is_supported_config refuses the class."""
        if "class_field" in check:
            # the class's value accepts the layout's when equal or listed in
            # ``accepts`` (0.34's FusedMoEActivationFormat.is_superset)
            name = check["class_field"]
            accepted = check.get("accepts", {}).get(spec[name], [spec[name]])
            return feats.get(name) not in accepted
        if not holds(check.get("applies_when", True), where, feats):
            return False
        if check.get("monolithic_only") and not spec["monolithic"]:
            return False
        return not holds(spec["supports"].get(check["name"], check["default"]), where, feats)

    def _extras(
        self, spec: Mapping[str, Any], after: str, feats: Mapping[str, Any], where: Where
    ) -> str | None:
        """The class override's own refusals that run at ``after``."""
        for rule in spec.get("extra", ()):
            if rule["after"] != after:
                continue
            if "collect" in rule:
                items = [
                    self.texts.fill(c["text"], feats, where)
                    for c in rule["collect"]
                    if holds(c["if"], where, feats)
                ]
                if items:
                    return self.texts.fill(rule["reason"], feats, where, collected=", ".join(items))
            elif "reject_if" in rule and holds(rule["reject_if"], where, feats):
                return self.texts.fill(str(rule["reason"]), feats, where)
        return None

"""vLLM's linear-kernel selection on ``--linear-backend auto``, modelled.

The facts of a release sit in ``linear-X.Y.Z.json`` (read by a maintainer from
``vllm/model_executor/kernels/linear/``): per layer kind the chooser vLLM calls, per
chooser and platform the ordered kernel list, per kernel its ``is_supported`` /
``can_implement`` checks as conditions with vLLM's reason text, and the NVFP4
weight-only rule that forces one kernel. The code is the walk: reorder for Humming on
SM90, then the first kernel whose checks pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from kernelcfg.base.answers import LARGE, Answers
from kernelcfg.vllm import releases
from kernelcfg.vllm.kernels import words as kernel_words
from kernelcfg.vllm.kernels.words import Where, holds

__all__ = ["LinearModel", "Pick", "Where", "model"]

Trial = tuple[str, str, str | None]


@dataclass(frozen=True)
class Pick:
    """What vLLM takes for one layer kind."""

    status: str
    """selected or error."""
    kernel: str | None
    """The kernel class vLLM uses."""
    candidates: tuple[str, ...]
    """The list vLLM walks, in order."""
    trials: tuple[Trial, ...]
    """Each kernel tried: name, ok or refused, vLLM's reason."""
    values: tuple[str, ...] = ()
    """The ``--linear-backend`` values that name the kernel."""
    message: str | None = None
    """vLLM's error, where it raises one of its own (a forced kernel it cannot use)."""
    runs: str | None = None
    """The kernel a dispatched one runs in its place, where the data says so
    (``dispatch_runs``: ``cpu_unquantized_gemm`` calls zentorch's linear op on vLLM's
    Zen platform)."""


class LinearModel:
    """One release's linear-kernel selection."""

    def __init__(self, version: str, data: Mapping[str, Any]) -> None:
        self.version = version
        self.data = data
        self.kernels: Mapping[str, Mapping[str, Any]] = data["kernels"]
        self._picks: Answers[tuple[Any, ...], Pick] = Answers(512, text=LARGE)

    def where(
        self,
        kind: str,
        capability: str | None,
        gfx: str | None,
        install: str,
        env: Mapping[str, str],
    ) -> Where:
        """The target under one install, with the engine's environment."""
        return kernel_words.where(self.data, kind, capability, gfx, install, env)

    def _check(
        self, name: str, where: Where, layer: Mapping[str, Any], walk: str, stages: tuple[str, ...]
    ) -> tuple[bool, str | None, str | None]:
        """One kernel's checks: passed, the stage that refused it, vLLM's reason."""
        facts = self.kernels[name]
        if "composite" in facts:
            return self._composite(facts["composite"], where, layer)
        minimum = facts.get("min_capability")
        if walk == "mp" and minimum is not None and where.cc is not None and minimum > where.cc:
            return False, "min_capability", None
        for stage in stages:
            for rule in facts["checks"]:
                if rule["stage"] == stage and holds(rule["reject_if"], where, layer):
                    return False, stage, _fill(rule["reason"], layer, where.cc)
        return True, None, None

    def _composite(
        self, parts: Mapping[str, str], where: Where, layer: Mapping[str, Any]
    ) -> tuple[bool, str | None, str | None]:
        """A kernel made of a base and a fallback: both must pass, stage by stage."""
        for stage, verb in (
            ("is_supported", "is not supported"),
            ("can_implement", "cannot implement"),
        ):
            said = []
            for part in ("base", "fallback"):
                ok, _, why = self._check(parts[part], where, layer, "x", (stage,))
                if not ok:
                    said.append(f"{part} {verb} due to {why}")
            if said:
                return False, stage, "; ".join(said)
        return True, None, None

    def _reason(self, stage: str | None, raw: str | None, name: str, where: Where) -> str:
        formats = self.data["reason_format"]
        if stage == "min_capability":
            return str(formats["min_capability"]).format(
                min_cc=self.kernels[name]["min_capability"], cc=where.cc
            )
        if stage == "quant_scheme":
            return str(formats["quant_scheme"])
        return str(formats[stage or "is_supported"]).format(reason=raw)

    def _candidates(self, chooser: Mapping[str, Any], where: Where) -> list[str]:
        found = list(self.data["candidate_lists"][chooser["list"]].get(where.kind, []))
        if (
            not chooser.get("prioritize_humming")
            or where.cc not in self.data["humming_preferred_cc"]
        ):
            return found
        lowered = [n.lower() for n in found]
        humming = next((i for i, n in enumerate(lowered) if "humming" in n), None)
        marlin = next((i for i, n in enumerate(lowered) if "marlin" in n), None)
        if humming is not None and marlin is not None and humming > marlin:
            found.insert(marlin, found.pop(humming))
        return found

    def pick(self, layer_kind: str, where: Where) -> Pick:
        """What vLLM takes for one layer kind on ``where`` (answers are kept per process,
        a few hundred at most: a batch asks the same question line after line)."""
        return self._picks.get((layer_kind, where.key), lambda: self._pick(layer_kind, where))

    def pick_named(
        self,
        layer_kind: str,
        where: Where,
        backend: str,
        features: Mapping[str, Any] | None = None,
    ) -> Pick | None:
        """What vLLM takes for one layer kind on ``where`` with ``--linear-backend
        backend``: the walk over the list narrowed to that backend's kernels; ``None``
        where the list has none of them (vLLM warns and walks the whole list, as on
        auto). ``features``: layer features to read in place of the kind's own (the
        activation dtype of a float16 model, say)."""
        layer = {**self.data["layers"][layer_kind], **(features or {})}
        chooser = self.data["selectors"][layer["selector"]]
        if "dispatch" in chooser:
            return None
        candidates = self._candidates(chooser, where)
        if chooser["list"] == "nvfp4" and layer.get("a16"):
            candidates = [
                k for k in candidates if k in self.data["nvfp4_w4a16_rule"]["a16_kernels"]
            ]
        named = [
            k for k in candidates if backend in self.kernels[k].get("linear_backend_values", ())
        ]
        return self._walk(named, where, layer, chooser) if named else None

    def _pick(self, layer_kind: str, where: Where) -> Pick:
        layer = self.data["layers"][layer_kind]
        chooser = self.data["selectors"][layer["selector"]]
        if "dispatch" in chooser:
            runs = next(
                (
                    str(entry["kernel"])
                    for entry in chooser.get("dispatch_runs", {}).get(where.kind, ())
                    if holds(entry["when"], where, layer)
                ),
                None,
            )
            return Pick("selected", chooser["dispatch"][where.kind], (), (), runs=runs)
        candidates = self._candidates(chooser, where)
        if chooser["list"] == "nvfp4":
            forced = self._forced(where, layer, candidates)
            if forced is not None:
                return forced
            if layer.get("a16"):
                rule = self.data["nvfp4_w4a16_rule"]
                candidates = [k for k in candidates if k in rule["a16_kernels"]]
        return self._walk(candidates, where, layer, chooser)

    def _walk(
        self,
        candidates: list[str],
        where: Where,
        layer: Mapping[str, Any],
        chooser: Mapping[str, Any],
    ) -> Pick:
        """The first of ``candidates`` whose checks pass, with every kernel tried."""
        trials: list[Trial] = []
        for name in candidates:
            ok, stage, why = self._check(
                name,
                where,
                layer,
                chooser["walk"],
                ("is_supported", "quant_scheme", "can_implement"),
            )
            if ok:
                trials.append((name, "ok", None))
                values = tuple(sorted(self.kernels[name].get("linear_backend_values", ())))
                return Pick("selected", name, tuple(candidates), tuple(trials), values)
            trials.append((name, "refused", self._reason(stage, why, name, where)))
        return Pick("error", None, tuple(candidates), tuple(trials))

    def _forced(self, where: Where, layer: Mapping[str, Any], listed: list[str]) -> Pick | None:
        """NVFP4: vLLM forces one kernel instead of walking the list (weight-only layers
        off SM90; every NVFP4 layer under ``VLLM_BATCH_INVARIANT``, the entries marked
        ``"layers": "all"``)."""
        rule = self.data["nvfp4_w4a16_rule"]
        forced = None
        for entry in rule["force"]:
            if not layer.get("a16") and entry.get("layers") != "all":
                continue
            if not holds(entry["when"], where, layer):
                continue
            if "if_supported" in entry:
                if self._check(entry["if_supported"], where, layer, "x", ("is_supported",))[0]:
                    forced = entry["if_supported"]
                    break
                continue
            forced = entry["kernel"]
            break
        if forced is None:
            return None
        if layer.get("a16") and forced not in rule["a16_kernels"]:
            said = str(rule["a16_unsupported_error"]).format(kernel=forced)
            skipped = str(self.data["reason_format"]["not_evaluated"])
            trials = tuple((k, "refused", skipped) for k in listed)
            return Pick("error", None, tuple(listed), trials, message=said)
        ok, _, why = self._check(forced, where, layer, "x", ("is_supported",))
        if ok:
            values = tuple(sorted(self.kernels[forced].get("linear_backend_values", ())))
            return Pick("selected", forced, (forced,), ((forced, "ok", None),), values)
        skipped = str(self.data["reason_format"]["not_evaluated"])
        said = str(rule["forced_unsupported_error"]).format(kernel=forced, reason=why)
        trials = tuple((k, "refused", skipped) for k in listed)
        return Pick("error", None, tuple(listed), trials, message=said)


def _fill(template: str, layer: Mapping[str, Any], cc: int | None) -> str:
    try:
        return template.format(**{**layer, "cc": cc})
    except (KeyError, IndexError):
        return template


@cache
def model(version: str) -> LinearModel | None:
    """The release's linear selection; ``None`` when kernelcfg has none for it."""
    data = releases.release_data("linear", version)
    return None if data is None else LinearModel(version, data)

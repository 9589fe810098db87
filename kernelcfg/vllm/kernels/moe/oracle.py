"""vLLM's fused-MoE backend selection on ``--moe-backend auto``, walked from data.

The data (``releases/moe-<version>.json``) holds, read from vLLM's source, how each
quantisation method reaches its oracle (``variants``), each oracle's priority list,
reorders, drops, forced backends and backend-to-experts mapping (``oracles``), and every
experts class's ``_supports_*`` checks (``experts``), with the order and texts of
``FusedMoEExperts.is_supported_config`` (``base_checks``). This module walks the oracle
the way vLLM does; one experts class's checks are :mod:`.experts`, the texts
:mod:`.texts`, the layer's features :mod:`.layer`. It names no backend itself.
Conditions are :mod:`kernelcfg.vllm.kernels.words`.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kernelcfg.base.answers import LARGE, Answers
from kernelcfg.vllm import releases
from kernelcfg.vllm.kernels.moe.experts import Experts
from kernelcfg.vllm.kernels.moe.texts import Texts, fill
from kernelcfg.vllm.kernels.words import Where, holds

__all__ = [
    "MoeModel",
    "Pick",
    "Trial",
    "model",
    "releases_with_data",
]


@dataclass(frozen=True)
class Trial:
    """One experts class (or a backend-level check) as the oracle tried it."""

    backend: str
    """The oracle's backend enum member (``TRITON``)."""
    kernel: str | None
    """The experts class tried; ``None`` for a backend-level refusal."""
    verdict: str
    """``ok`` or ``refused``."""
    reason: str | None
    """vLLM's reason for a refusal, as it prints it."""


@dataclass(frozen=True)
class Pick:
    """What vLLM selects for one MoE layer."""

    status: str
    """``selected``, ``no_kernel`` (the oracle returned its NONE member) or ``error``."""
    oracle: str | None
    """The oracle walked (``fp8``, ``mxfp4`` ...); ``None`` when none ran."""
    enum: str | None
    """The oracle's backend enum class (``Fp8MoeBackend``)."""
    backend: str | None
    """The picked backend's enum member, or ``None``."""
    kernel: str | None
    """The picked experts class, or ``None``."""
    candidates: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """The ordered list the oracle walks: (backend, its experts classes)."""
    dropped: tuple[tuple[str, str], ...] = ()
    """Backends removed from the priority list before the loop, with why."""
    moved: tuple[tuple[str, str], ...] = ()
    """The reorders of the priority list that applied: (backend or ``HUMMING``, why)."""
    trials: tuple[Trial, ...] = ()
    """Every check in the order vLLM made it, up to the pick."""
    values: tuple[str, ...] = ()
    """The ``--moe-backend`` values that map to the picked backend."""
    message: str | None = None
    """vLLM's error text (``Type: message``) when the status is ``error``."""
    chosen_by: str = "oracle"
    """``oracle`` (the oracle's walk) or ``inline`` (the quantisation method or the layer
    config decided without it)."""
    load_error: str | None = None
    """For ``no_kernel``: how vLLM then fails while loading the model (the quantisation
    method needs the experts class the oracle did not give), when it does."""

    @property
    def fails(self) -> bool:
        """Whether vLLM fails to start with this layer: the selection raised, or it found
        no kernel and loading the weights then fails."""
        return self.status == "error" or self.load_error is not None


@dataclass
class _Run:
    """The state of one oracle walk."""

    oracle: str
    spec: Mapping[str, Any]
    feats: dict[str, Any]
    key: str | None
    """The activation key the caller passed."""
    order: list[str] = field(default_factory=list)
    moved: list[tuple[str, str]] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    trials: list[Trial] = field(default_factory=list)
    extra_candidates: list[str] = field(default_factory=list)


class MoeModel:
    """One release's MoE selection data and its walk."""

    def __init__(self, data: Mapping[str, Any], accepted: frozenset[str] | None = None) -> None:
        self.data = data
        self.accepted = accepted
        """The ``--moe-backend`` values the release's parser accepts (``None``: any)."""
        self._picks: Answers[tuple[Any, ...], Pick] = Answers(4096, text=LARGE)
        self.texts = Texts(data)
        """The release's reasons and messages, filled as vLLM formats them."""
        self.experts = Experts(data, self.texts)
        """The release's experts classes and their ``is_supported_config``."""

    def _values(self, oracle: Mapping[str, Any], backend: str | None) -> tuple[str, ...]:
        """The ``--moe-backend`` values that map to ``backend`` and the parser accepts:
        vLLM's own map names some (``cpu``, ``xpu``) that ``MoEBackend`` lacks."""
        if backend is None:
            return ()
        named = oracle.get("values", {}).items()
        return tuple(
            v
            for v, names in named
            if backend in names and (self.accepted is None or v in self.accepted)
        )

    # ---------------------------------------------------------------- inputs
    def pick(self, variant: str, layer: Mapping[str, Any], where: Where) -> Pick:
        """What vLLM selects for ``variant`` (a quantisation method's entry) on ``layer``
        (:func:`layer_features`) under ``where``."""
        key = (variant, tuple(sorted(layer.items(), key=lambda kv: kv[0])), where.key)
        return self._picks.get(key, lambda: self._pick(variant, layer, where))

    def probe(
        self, variant: str, layer: Mapping[str, Any], where: Where, backends: Iterable[str]
    ) -> dict[str, Trial]:
        """Whether each backend's experts classes take the layer, as when it is asked for
        by name (``_return_or_raise``: the first class that passes; else the last reason).
        Only the classes' checks: an oracle may also remap or refuse the value first."""
        spec = self.data["variants"][variant]
        feats = self._features(spec, layer, where)
        name = spec["oracle"]
        oracle = self.data["oracles"][name]
        if "batched_when" in oracle:
            feats["activation_format"] = (
                "batched" if holds(oracle["batched_when"], where, feats) else "standard"
            )
        out: dict[str, Trial] = {}
        for backend in backends:
            run = _Run(name, oracle, feats, feats["activation_key"])
            found = Trial(backend, None, "refused", f"{backend} is not a backend of {name}")
            for cls in oracle["backend_classes"].get(backend, ()):
                ok, _ = self._try(run, backend, cls, where)
                found = run.trials[-1]
                if ok:
                    break
            out[backend] = found
        return out

    def _keyed(
        self, feats: Mapping[str, Any], weight: str | None, act: str | None
    ) -> dict[str, Any]:
        """The features with the two quantisation keys (names and canonical strings)."""
        strings = self.data["key_strings"]
        out = dict(feats)
        out["weight_key"], out["activation_key"] = weight, act
        out["weight_key_str"] = None if weight is None else strings.get(weight, weight)
        out["activation_key_str"] = None if act is None else strings.get(act, act)
        return out

    def _derive(self, feats: dict[str, Any], where: Where) -> None:
        """The ``derived`` features: first holding rule's value (``{name}`` filled)."""
        for name, spec in self.data["derived"].items():
            for rule in spec["rules"]:
                if holds(rule["when"], where, feats):
                    value = rule["value"]
                    if isinstance(value, str):
                        value = fill(value, feats)
                        value = re.sub(
                            r"\{env:(\w+)\}",
                            lambda m: (where.env_raw.get(m.group(1)) or "").strip().lower(),
                            value,
                        )
                    feats[name] = value
                    break

    def _features(
        self, spec: Mapping[str, Any], layer: Mapping[str, Any], where: Where
    ) -> dict[str, Any]:
        """The layer as the variant's quantisation method hands it to its oracle."""
        feats: dict[str, Any] = {**spec.get("args", {}), **layer}
        weight, act = spec.get("weight_key"), spec.get("activation_key")
        feats = self._keyed(feats, weight, act)
        done: set[str] = set()
        for rule in spec.get("key_rules", ()):
            for role in ("weight_key", "activation_key"):
                if role in rule and role not in done and holds(rule["when"], where, feats):
                    done.add(role)
                    weight = fill(rule[role], feats) if role == "weight_key" else weight
                    act = rule[role] if role == "activation_key" else act
        feats = self._keyed(feats, weight, act)
        self._derive(feats, where)
        return feats

    # ---------------------------------------------------------------- the walk
    def _pick(self, variant: str, layer: Mapping[str, Any], where: Where) -> Pick:
        spec = self.data["variants"][variant]
        feats = self._features(spec, layer, where)
        for check in self.data["config_checks"]:
            if holds(check["when"], where, feats):
                return Pick(
                    "error",
                    None,
                    None,
                    None,
                    None,
                    message=self.texts.fill(check["error"], feats, where),
                    chosen_by="inline",
                )
        oracle, key = spec["oracle"], feats["activation_key"]
        for rule in spec.get("inline", ()):
            if not holds(rule["when"], where, feats):
                continue
            if "oracle" in rule:
                oracle, key = rule["oracle"], rule.get("activation_key")
                break
            return self._inline(rule, self.data["oracles"][oracle], feats, where)
        return self._oracle(oracle, feats, key, where, spec)

    def _inline(
        self,
        rule: Mapping[str, Any],
        oracle: Mapping[str, Any],
        feats: Mapping[str, Any],
        where: Where,
    ) -> Pick:
        """A pick the quantisation method makes without the oracle (or its raise)."""
        if "error" in rule:
            return Pick(
                "error",
                None,
                None,
                None,
                None,
                message=self.texts.fill(rule["error"], feats, where),
                chosen_by="inline",
            )
        backend = rule["backend"]
        return Pick(
            "selected",
            None,
            oracle["enum"],
            backend,
            rule["experts"],
            values=self._values(oracle, backend),
            chosen_by="inline",
        )

    def _oracle(
        self,
        name: str,
        feats: dict[str, Any],
        key: str | None,
        where: Where,
        variant: Mapping[str, Any],
    ) -> Pick:
        spec = self.data["oracles"][name]
        for rule in spec.get("inline", ()):
            if holds(rule["when"], where, feats) and self._inline_ok(rule, feats, where):
                if "error" in rule:  # the oracle raises before its loop
                    message = self.texts.fill(rule["error"], feats, where)
                    return Pick("error", name, spec["enum"], None, None, message=message)
                status = "selected" if rule["experts"] else "no_kernel"
                return Pick(
                    status,
                    name,
                    spec["enum"],
                    rule["backend"],
                    rule["experts"],
                    values=self._values(spec, rule["backend"]),
                )
        feats = dict(feats)
        if "batched_when" in spec:
            feats["activation_format"] = (
                "batched" if holds(spec["batched_when"], where, feats) else "standard"
            )
        run = _Run(name, spec, self._keyed(feats, feats["weight_key"], key), key)
        run.order = self._priority(spec, where, run.feats, run.moved)
        if not run.order and "empty_priority_error" in spec:
            return self._finish(run, "error", None, None, spec["empty_priority_error"])
        self._filter(run)
        found = self._stages(run, where)
        if found is None:
            found = self._loop(run, where)
        if found is None:
            found = self._after_loop(run, where)
        return (
            self._refuse_after(found, variant, run) if found is not None else self._none(run, where)
        )

    def _inline_ok(self, rule: Mapping[str, Any], feats: Mapping[str, Any], where: Where) -> bool:
        """An oracle-level inline pick that asks an experts class first (``if_supported``)."""
        cls = rule.get("if_supported")
        if cls is None:
            return True
        standard = self._keyed(dict(feats, activation_format="standard"), None, None)
        return self.experts.supported(cls, standard, where)[0]

    def _priority(
        self,
        spec: Mapping[str, Any],
        where: Where,
        feats: Mapping[str, Any],
        moved: list[tuple[str, str]],
    ) -> list[str]:
        """The priority list with its reorders (``only_default``: on the default list only);
        the reorders that changed it go to ``moved``."""
        order: list[str] | None = None
        for rule in spec.get("priority_by", ()):
            if holds(rule["when"], where, feats):
                order = list(rule["priority"])
                break
        default = order is None
        order = list(spec["priority"]) if order is None else order
        for rule in spec.get("reorder", ()):
            if (default or not rule.get("only_default")) and holds(rule["when"], where, feats):
                before = list(order)
                _reorder(order, rule)
                if order != before:
                    moved.append((rule.get("backend", "HUMMING"), str(rule.get("why", ""))))
        return order

    def _filter(self, run: _Run) -> None:
        """MXFP4's ``_filter_by_activation`` (oracle/mxfp4.py:614), where the oracle has one;
        ``bf16_fallback: false`` (0.31 and older): no BF16 variants after the matching ones."""
        spec = run.spec
        if "activation_filter" not in spec:
            return
        own = spec["activation_keys"]
        bf16 = [b for b in run.order if own.get(b) is None]
        if run.key is not None:
            kept = [b for b in run.order if own.get(b) == run.key or b == "EMULATION"]
            if spec["activation_filter"].get("bf16_fallback", True):
                # 0.32+: the BF16-activation variants follow as a fallback
                kept += [b for b in bf16 if b not in kept]
        else:
            kept = bf16 or list(run.order)
        why = spec["activation_filter"]["why"]
        run.dropped += [(b, why) for b in run.order if b not in kept]
        run.order = kept

    def _stages(self, run: _Run, where: Where) -> Pick | None:
        """Forced backends and drops, stage by stage (a forced one first in its stage)."""
        spec = run.spec
        stages = sorted(
            {e["stage"] for e in (*spec["drop"], *spec["forced"]) if e["stage"] != "after_loop"}
        )
        before = list(run.order)
        dropped: list[tuple[str, str]] = []
        for stage in stages:
            for force in spec["forced"]:
                if force["stage"] == stage and holds(force["when"], where, run.feats):
                    found = self._force(run, force, where, before)
                    if found is not None:
                        return found
            for drop in spec["drop"]:
                if drop["stage"] == stage and holds(drop["when"], where, run.feats):
                    gone = [b for b in drop["backends"] if b in run.order]
                    dropped += [(b, drop["why"]) for b in gone]
                    run.order = [b for b in run.order if b not in gone]
        run.dropped += sorted(dropped, key=lambda d: before.index(d[0]))
        return None

    def _force(
        self, run: _Run, force: Mapping[str, Any], where: Where, before: list[str]
    ) -> Pick | None:
        """``_return_or_raise`` (on_fail raise: nothing else is tried) or a first try that
        falls back to the loop (on_fail continue)."""
        backend = force["backend"]
        raising = force["on_fail"] == "raise"
        if raising:
            run.dropped = [(b, "forced " + backend) for b in before if b != backend]
            run.order = [backend]
        reason = None
        for cls in run.spec["backend_classes"][backend]:
            ok, reason = self._try(run, backend, cls, where)
            if ok:
                return self._finish(run, "selected", backend, cls, None)
        if raising:
            return self._finish(
                run, "error", None, None, self._forced_error(run, force, reason, where)
            )
        run.order = [b for b in run.order if b != backend]
        return None

    def _forced_error(
        self, run: _Run, force: Mapping[str, Any], reason: str | None, where: Where
    ) -> str:
        spec, backend = run.spec, force["backend"]
        value = spec.get("enum_values", {}).get(backend, backend)
        if "error" in force:
            template = force["error"]
        else:
            template = spec["forced_error"]["with_reason" if reason else "without_reason"]
        return self.texts.fill(template, run.feats, where, backend_value=value, reason=reason)

    def _loop(self, run: _Run, where: Where) -> Pick | None:
        """The oracle's loop: backend-level checks, then each class in order."""
        checks = run.spec.get("backend_checks", {})
        for backend in run.order:
            refusal = next(
                (
                    c["reason"]
                    for c in checks.get(backend, ())
                    if holds(c["reject_if"], where, run.feats)
                ),
                None,
            )
            if refusal is not None:
                run.trials.append(
                    Trial(backend, None, "refused", self.texts.fill(refusal, run.feats, where))
                )
                continue
            for cls in run.spec["backend_classes"][backend]:
                if self._try(run, backend, cls, where)[0]:
                    return self._finish(run, "selected", backend, cls, None)
        return None

    def _after_loop(self, run: _Run, where: Where) -> Pick | None:
        """A backend forced only after the loop found nothing (mxfp4's XPU)."""
        for force in run.spec["forced"]:
            if force["stage"] == "after_loop" and holds(force["when"], where, run.feats):
                run.extra_candidates.append(force["backend"])
                if force.get("unchecked"):  # 0.26.0's ROCm MXFP8 fallback asks no class
                    return self._finish(run, "selected", force["backend"], force["experts"], None)
                saved = run.key
                run.key = force.get("activation_key")
                reason = None
                for cls in run.spec["backend_classes"][force["backend"]]:
                    ok, reason = self._try(run, force["backend"], cls, where, fixed=True)
                    if ok:
                        return self._finish(run, "selected", force["backend"], cls, None)
                run.key = saved
                return self._finish(
                    run, "error", None, None, self._forced_error(run, force, reason, where)
                )
        return None

    def _trial_key(self, run: _Run, backend: str) -> str | None:
        """The activation key a trial is checked with (``trial_activation_key``)."""
        mode = run.spec.get("trial_activation_key")
        own = run.spec.get("activation_keys", {})
        if mode == "own" or (mode == "requested_for_EMULATION" and backend != "EMULATION"):
            found = own.get(backend)
            return None if found is None else str(found)
        return run.key

    def _try(
        self, run: _Run, backend: str, cls: str, where: Where, fixed: bool = False
    ) -> tuple[bool, str | None]:
        key = run.key if fixed else self._trial_key(run, backend)
        feats = self._keyed(run.feats, run.feats["weight_key"], key)
        ok, reason = self.experts.supported(cls, feats, where)
        name = self.data["experts"][cls].get("name", cls)
        run.trials.append(Trial(backend, name, "ok" if ok else "refused", reason))
        return ok, reason

    def _none(self, run: _Run, where: Where) -> Pick:
        """No class accepted: the oracle raises, or returns its NONE member. The error
        template may use {candidates}, {unsupported_log}, {class_reasons} and
        {last_reason} (the last class's reason alone: 0.30's W4A8 oracle)."""
        spec = run.spec["no_candidate"]
        if not holds(spec["raises_when"], where, run.feats):
            found = self._finish(run, "no_kernel", "NONE", None, None)
            return dataclasses.replace(found, load_error=spec.get("load_error"))
        refused = [t for t in run.trials if t.verdict == "refused" and t.kernel is not None]
        message = self.texts.fill(
            spec["error"],
            run.feats,
            where,
            candidates="[" + ", ".join(repr(b) for b in run.order) + "]",
            unsupported_log="; ".join(f"backend: {t.backend}, reason: {t.reason}" for t in refused),
            class_reasons="; ".join(f"{t.kernel}: {t.reason}" for t in refused),
            last_reason=refused[-1].reason if refused else None,
        )
        return self._finish(run, "error", None, None, message)

    def _refuse_after(self, found: Pick, variant: Mapping[str, Any], run: _Run) -> Pick:
        """The quantisation method refusing the oracle's pick (``reject_after``)."""
        rule = variant.get("reject_after")
        if rule is None or found.status != "selected" or found.backend not in rule["backends"]:
            return found
        message = fill(rule["error"], {"backend": found.backend})
        return Pick(
            "error",
            run.oracle,
            found.enum,
            None,
            None,
            found.candidates,
            found.dropped,
            found.moved,
            found.trials,
            (),
            message,
        )

    def _finish(
        self, run: _Run, status: str, backend: str | None, kernel: str | None, message: str | None
    ) -> Pick:
        classes = run.spec["backend_classes"]
        names = [*run.order, *run.extra_candidates]
        candidates = tuple(
            (b, tuple(self.data["experts"][c].get("name", c) for c in classes[b])) for b in names
        )
        if kernel is not None:
            kernel = self.data["experts"][kernel].get("name", kernel)
        return Pick(
            status,
            run.oracle,
            run.spec["enum"],
            backend,
            kernel,
            candidates,
            tuple(run.dropped),
            tuple(run.moved),
            tuple(run.trials),
            self._values(run.spec, backend),
            message,
        )


def _reorder(order: list[str], rule: Mapping[str, Any]) -> None:
    """One reorder of the priority list, in place."""
    op = rule["op"]
    if op == "prioritize_humming":
        # quantization/utils/humming/priority.py:26: the first *humming* entry goes just
        # before the first *marlin* one when it comes later
        hum = next((i for i, b in enumerate(order) if "humming" in b.lower()), None)
        mar = next((i for i, b in enumerate(order) if "marlin" in b.lower()), None)
        if hum is not None and mar is not None and hum > mar:
            order.insert(mar, order.pop(hum))
        return
    backend = rule["backend"]
    if backend not in order:
        return
    order.remove(backend)
    if op == "front":
        order.insert(0, backend)
    elif op == "back":
        order.append(backend)
    else:  # move_after
        order.insert(order.index(rule["after"]) + 1, backend)


@functools.cache
def releases_with_data() -> tuple[str, ...]:
    """The releases kernelcfg has MoE selection data for."""
    return tuple(
        v for v in releases.known_versions() if releases.data_path(f"moe-{v}.json").is_file()
    )


@functools.cache
def model(version: str) -> MoeModel | None:
    """The MoE selection of one release, or ``None`` without data for it."""
    data = releases.release_data("moe", version)
    if data is None:
        return None
    return MoeModel(data, frozenset(releases.load(version).choices("moe_backend")))

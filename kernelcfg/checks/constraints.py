"""Can a backend value run on the target? The catalogue, and verdicts with reasons.

vLLM accepts ``--moe-backend flashinfer_trtllm`` on an MI300X at parse time and fails
minutes later, at model load. The catalogue (``releases/constraints.json``) records
what each value needs — platform, compute capability or gfx architecture, the
quantisation schemes it serves, expert parallelism, architectures, environment —
and how vLLM reacts when it cannot honour an explicit value: MoE and sparse top-k
values raise; a linear backend with no kernel for a layer type on the platform is
ignored with a warning, one whose kernel cannot run raises. A certain failure is an
error; anything that depends on what cannot be known offline is a warning that names
the unknown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernelcfg.checks.requirements import (
    Outcome,
    device_outcome,
    for_release,
    launch_requirements,
    scheme_rule,
    target_label,
    why_not,
)
from kernelcfg.checks.verdicts import SEVERITY, Context, Status, Verdict
from kernelcfg.vllm.kernels.quantization import SCHEMES
from kernelcfg.vllm.releases import catalogue

__all__ = [
    "FIELDS",
    "SEVERITY",
    "Context",
    "Verdict",
    "check",
    "describe",
    "matrix",
    "when_unmet",
]

FIELDS = ("moe_backend", "linear_backend", "sparse_indexer_topk_backend")
"""The backend fields the catalogue covers (``linear_backend_per_quant`` uses linear's)."""


def _field_rules(field_name: str) -> dict[str, Any]:
    found: dict[str, Any] = catalogue()["fields"][
        "linear_backend" if field_name == "linear_backend_per_quant" else field_name
    ]
    return found


def _no_effect(field_name: str, value: str, ctx: Context) -> Verdict | None:
    table = _field_rules(field_name)
    layer = table.get("layer")
    if layer is not None and ctx.layers is not None and layer not in ctx.layers:
        return Verdict(
            field_name, value, "no-effect", f"'{value}' has no effect: {table['layer_text']}"
        )
    unread = table.get("unread_on", {}).get(ctx.target.kind)
    if unread is not None:
        return Verdict(field_name, value, "no-effect", f"'{value}' has no effect: {unread}")
    users = table.get("architectures")
    if not users or ctx.architectures is None:
        return None
    if not set(ctx.architectures) & set(users):
        return Verdict(
            field_name,
            value,
            "no-effect",
            f"'{value}' only matters for models with a DSA sparse indexer; "
            f"{', '.join(ctx.architectures)} has none",
        )
    ignored = table.get("rocm_ignored_architectures", [])
    if ctx.target.kind == "rocm" and set(ctx.architectures) <= set(ignored):
        return Verdict(
            field_name,
            value,
            "no-effect",
            f"on ROCm, {', '.join(ctx.architectures)} chooses its top-k kernel "
            f"itself and never reads '{value}'",
        )
    return None


def check(
    field_name: str, value: str, ctx: Context, *, schemes: Sequence[str] | None = None
) -> Verdict:
    """The verdict on ``field_name=value`` in ``ctx`` (memoised: verdicts are pure).

    ``schemes`` narrows the candidate schemes (a ``linear_backend_per_quant`` key);
    otherwise the context's scheme, or every scheme the value serves.
    """
    known = ctx.verdicts
    key = (field_name, value, tuple(schemes) if schemes is not None else None)
    found = known.get(key)
    if found is None:
        found = known[key] = _check(field_name, value, ctx, schemes)
    return found


def _check(field_name: str, value: str, ctx: Context, schemes: Sequence[str] | None) -> Verdict:
    table = _field_rules(field_name)
    raw = table["values"].get(value)
    if value == "auto":
        return Verdict(
            field_name, value, "runs", "automatic selection", source=(raw or {}).get("source", "")
        )
    if raw is None:
        return Verdict(
            field_name,
            value,
            "depends",
            f"kernelcfg has no constraint data for '{value}'",
            unknowns=("the value's requirements",),
        )
    muted = _no_effect(field_name, value, ctx)
    if muted is not None:
        return muted
    walk = _Walk(field_name, value, ctx, for_release(raw, ctx.version), schemes)
    walk.run()
    return walk.verdict()


@dataclass
class _Walk:
    """One value judged scheme by scheme: which schemes run, fail or fall back."""

    field: str
    value: str
    ctx: Context
    rule: dict[str, Any]
    narrowed: Sequence[str] | None
    """Schemes a ``linear_backend_per_quant`` key narrows to, if any."""
    runs: list[str] = dataclasses.field(default_factory=list)
    failures: list[tuple[str, Outcome]] = dataclasses.field(default_factory=list)
    fallback: list[str] = dataclasses.field(default_factory=list)
    unknowns: list[str] = dataclasses.field(default_factory=list)

    @property
    def linear(self) -> bool:
        return self.field in ("linear_backend", "linear_backend_per_quant")

    @property
    def served(self) -> list[str] | None:
        found: list[str] | None = self.rule.get("schemes")
        return found

    @property
    def scheme_certain(self) -> bool:
        return self.narrowed is not None or self.ctx.scheme is not None

    @property
    def quant_unknown(self) -> str:
        return (
            f"the model's quantisation ('{self.value}' serves {', '.join(self.served or ())}; "
            "give --quant-scheme or --quantization)"
        )

    def candidates(self) -> list[str]:
        """The schemes to try: the one given, those a method may mean, or every one the
        value serves."""
        if self.narrowed is not None:
            return list(self.narrowed)
        if self.ctx.scheme is not None:
            return [self.ctx.scheme]
        if self.ctx.possible is not None:
            return list(self.ctx.possible)
        return list(self.served) if self.served else [""]

    @property
    def others_fall_back(self) -> bool:
        """A linear value is read per layer type and ignored for the types it has no
        kernel for: with the scheme unknown, a model of such a type still starts (an
        unquantized one, say)."""
        served = self.served
        return (
            self.linear
            and not self.scheme_certain
            and self.ctx.possible is None
            and served is not None
            and any(s not in served for s in SCHEMES)
        )

    def run(self) -> None:
        candidates = self.candidates()
        if not self.scheme_certain and self.ctx.possible is None and self.served:
            self.unknowns.append(self.quant_unknown)
        for scheme in candidates:
            self._one(scheme, single=len(candidates) == 1)
        self.unknowns = list(dict.fromkeys(self.unknowns))

    def _not_served(self, scheme: str) -> Outcome | None:
        """Why ``scheme`` is not the value's: its kernels are tried on such layers and
        refuse them (``refuses``), or it serves other schemes only."""
        refuses = self.rule.get("refuses", {}).get(scheme)
        if refuses:
            return Outcome(False, str(refuses))
        served = self.served
        if served is not None and scheme and scheme not in served:
            reason = f"'{self.value}' serves {', '.join(served)}; not {scheme}"
            return Outcome(False, reason, platform=self.linear)
        return None

    def _one(self, scheme: str, *, single: bool) -> None:
        value = self.value
        refused = self._not_served(scheme)
        if refused is not None:
            self.failures.append((scheme, refused))
            return
        merged = scheme_rule(self.rule, scheme, self.ctx.version) if scheme else self.rule
        if merged.get("absent"):
            reason = f"'{value}' has no {scheme} kernel in vLLM {self.ctx.version}"
            self.failures.append((scheme, Outcome(False, reason, platform=self.linear)))
            return
        if merged.get("fallback"):
            self.fallback.append(scheme)
            return
        if merged.get("refused"):
            self.failures.append(
                (scheme, Outcome(False, f"'{value}' is refused for {scheme} layers"))
            )
            return
        outcome = device_outcome(merged, value, self.ctx.target)
        if outcome.unknown:
            self.unknowns.append(outcome.unknown)
        if not outcome.ok:
            self.failures.append((scheme, outcome))
            return
        # a scheme's own requirements decide whether it fails; when the scheme is not
        # known, only the value's shared ones are named as still unknown
        failed, extra = launch_requirements(merged, value, self.ctx)
        if not single:
            extra = launch_requirements(self.rule, value, self.ctx)[1]
        if failed:
            self.failures.append((scheme, Outcome(False, failed)))
            return
        self.unknowns.extend(extra)
        self.runs.append(scheme)

    def _make(self, status: Status, reason: str, *, soft: bool = False) -> Verdict:
        quantisation_only = (
            soft and not self.scheme_certain and set(self.unknowns) <= {self.quant_unknown}
        )
        return Verdict(
            self.field,
            self.value,
            status,
            reason,
            tuple(self.unknowns) if soft else (),
            self.rule.get("source", ""),
            quantisation_only,
        )

    def _refused(self) -> Verdict:
        """No scheme runs or falls back: an error, unless vLLM ignores the value for
        some layer type the model may have."""
        failures = self.failures
        reason = why_not(self.value, self.served, failures)
        if self.linear and all(o.platform for _, o in failures):
            raised = (
                load_error(self.ctx.version, self.value, [s for s, _ in failures])
                if self.scheme_certain
                else None
            )
            if raised is not None:
                return self._make("cannot-run", f"{reason}: vLLM raises while loading ({raised})")
            return self._make("falls-back", f"{reason}: vLLM warns and chooses automatically")
        if self.others_fall_back or (
            self.linear and not self.scheme_certain and any(o.platform for _, o in failures)
        ):
            return self._make(
                "falls-back",
                f"{reason}; for other layer types vLLM ignores '{self.value}' and chooses "
                "automatically",
            )
        return self._make("cannot-run", reason)

    def verdict(self) -> Verdict:
        value, served, failures = self.value, self.served, self.failures
        if not self.runs and not self.fallback:
            return self._refused()
        if failures:
            names = ", ".join(s for s in self.runs + self.fallback if s)
            not_for = " or ".join(s for s, _ in failures if s)
            failed = why_not(value, served, failures)
            return self._make(
                "depends",
                f"runs for {names or 'some layers'}; not for {not_for}: {failed}",
                soft=True,
            )
        if self.unknowns:
            return self._make(
                "depends",
                f"'{value}' fits {target_label(self.ctx.target)}; it still needs "
                + "; ".join(self.unknowns),
                soft=True,
            )
        if self.fallback and not self.runs:
            return self._make(
                "falls-back",
                f"'{value}' is ignored for {', '.join(self.fallback)} layers; "
                "vLLM chooses automatically",
            )
        return self._make("runs", f"'{value}' fits {target_label(self.ctx.target)}")


def load_error(version: str, value: str, schemes: Sequence[str]) -> str | None:
    """vLLM's load-time error for a ``--linear-backend`` value with no kernel for these
    schemes' layers, where the release raises for every kernel list they walk instead of
    warning (``no_named_kernel_error`` in ``linear-X.Y.Z.json``: every list in 0.26.0-0.27.0,
    MXFP6's in 0.28.0); ``None`` where some layer falls back or the release has no data."""
    from kernelcfg.vllm import releases

    data = releases.release_data("linear", version)
    if data is None or not schemes:
        return None
    said = []
    for scheme in schemes:
        kinds = data["scheme_layers"].get(scheme, ())
        selectors = [data["selectors"][data["layers"][k]["selector"]] for k in kinds]
        if not selectors or any("list" not in s for s in selectors):
            return None
        said += [data["no_named_kernel_error"][s["list"]] for s in selectors]
    if not all("error" in s for s in said):
        return None
    return str(said[0]["error"]).format(value=value)


def matrix(ctx: Context, choices: Mapping[str, Sequence[str]]) -> list[Verdict]:
    """The verdict on every value of every backend field, for one target."""
    return [check(name, value, ctx) for name in FIELDS for value in choices.get(name, ())]


def describe(field_name: str, value: str) -> dict[str, Any]:
    """A value's requirements as the catalogue states them (for ``explain``)."""
    raw = _field_rules(field_name)["values"].get(value)
    return dict(raw) if raw else {}


def when_unmet(field_name: str) -> str:
    """What vLLM does when a value of ``field_name`` cannot run (for ``explain``)."""
    text: str = _field_rules(field_name)["reaction_text"]
    return text

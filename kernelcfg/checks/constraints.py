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
import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any, Literal

from kernelcfg.base.answers import Answers
from kernelcfg.base.problems import Problem
from kernelcfg.targets.presets import Target, capability_int
from kernelcfg.vllm.kernels.quantization import SCHEMES
from kernelcfg.vllm.releases import catalogue, version_key

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

Status = Literal["runs", "cannot-run", "falls-back", "depends", "no-effect"]

SEVERITY: dict[str, Literal["error", "warning", "info"]] = {
    "cannot-run": "error",
    "falls-back": "warning",
    "depends": "warning",
    "no-effect": "info",
}
"""How each verdict is reported as a problem (``runs`` is not one)."""


def _applies(span: str, version: str) -> bool:
    low, _, high = span.partition("..")
    return version_key(low) <= version_key(version) <= version_key(high or low)


def _merged(rule: Mapping[str, Any], version: str) -> dict[str, Any]:
    out = {k: v for k, v in rule.items() if k != "versions"}
    for span, override in rule.get("versions", {}).items():
        if _applies(span, version):
            out.update(override)
    return out


@dataclass(frozen=True)
class Verdict:
    """Whether one value can run on one target, and why."""

    field: str
    """The field (``moe_backend``, ...)."""
    value: str
    """The value judged."""
    status: Status
    """``runs``, ``cannot-run`` (vLLM refuses), ``falls-back`` (vLLM ignores it with a
    warning), ``depends`` (on something unknown), ``no-effect`` (nothing reads it)."""
    reason: str
    """One line that names the requirement and what the target has."""
    unknowns: tuple[str, ...] = ()
    """What could not be checked offline."""
    source: str = ""
    """Where in vLLM the rule comes from."""
    quantisation_only: bool = False
    """``depends`` only on the model's quantisation, which was not given: a note."""

    def as_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "field": self.field,
            "value": self.value,
            "verdict": self.status,
            "reason": self.reason,
            "unknowns": list(self.unknowns),
            "source": self.source,
            "quantisation_only": self.quantisation_only,
        }

    def problem(self, message: str | None = None) -> Problem | None:
        """The problem this verdict stands for (``message`` default: the reason);
        ``None`` for ``runs``."""
        severity = SEVERITY.get(self.status)
        if severity is None:
            return None
        if self.quantisation_only:
            severity = "info"
        return Problem(severity, f"backend-{self.status}", self.field, message or self.reason)

    @cached_property
    def named_problem(self) -> Problem | None:
        """:meth:`problem` with a message that names the field and value first
        (``moe_backend='x': reason``), as ``resolve`` reports it; made once per verdict."""
        return self.problem(f"{self.field}={self.value!r}: {self.reason}")


def _cap_holds(condition: str, target: Target) -> bool | None:
    """Whether ``target`` meets a capability condition; ``None`` when unknown."""
    have = target.capability_int
    if have is None:
        return None
    for term in condition.split("|"):
        if term.startswith("family:"):
            if have // 10 == int(term[7:]) // 10:
                return True
        elif term.startswith(">="):
            if have >= capability_int(term[2:]):
                return True
        elif term.startswith("=="):
            if have == capability_int(term[2:]):
                return True
        elif ".." in term:
            low, high = term.split("..<")
            if capability_int(low) <= have < capability_int(high):
                return True
    return False


def _describe_cap(condition: str) -> str:
    words = []
    for term in condition.split("|"):
        if term.startswith("family:"):
            words.append(f"an SM{int(term[7:]) // 10}x GPU")
        elif term.startswith(">="):
            words.append(f"compute capability {term[2:]} or newer")
        elif term.startswith("=="):
            words.append(f"SM{term[2:].replace('.', '')}")
        else:
            low, high = term.split("..<")
            words.append(f"compute capability from {low} up to (not incl.) {high}")
    return " or ".join(words)


def _target_text(target: Target) -> str:
    """``NVIDIA H100 80GB HBM3 is SM90``: what a failure compares against."""
    if target.kind == "cuda":
        return f"{target.device} is SM{(target.capability or '?').replace('.', '')}"
    if target.kind == "rocm":
        return f"{target.device} is {target.gfx_arch}"
    if target.source == "fallback":
        return f"the target is {target.kind} (no GPU detected and no --device given)"
    return f"the target is {target.kind}"


def _target_label(target: Target) -> str:
    """``NVIDIA B200 (SM100)``."""
    if target.kind == "cuda":
        return f"{target.device} (SM{(target.capability or '?').replace('.', '')})"
    if target.kind == "rocm":
        return f"{target.device} ({target.gfx_arch})"
    return target.device


@dataclass
class _Outcome:
    ok: bool
    reason: str = ""
    platform: bool = False
    unknown: str | None = None


def _device(rule: Mapping[str, Any], value: str, target: Target) -> _Outcome:
    """Platform, capability and gfx checks of one (merged) rule."""
    platforms = rule.get("platforms")
    if platforms is not None and target.kind not in platforms:
        return _Outcome(
            False,
            f"'{value}' runs on {', '.join(platforms)}; {_target_text(target)}",
            platform=True,
        )
    cond = rule.get("cap")
    if cond and target.kind == "cuda":
        holds = _cap_holds(cond, target)
        if holds is None:
            return _Outcome(True, unknown="the compute capability")
        if not holds:
            return _Outcome(False, f"'{value}' needs {_describe_cap(cond)}; {_target_text(target)}")
    gfx = rule.get("gfx")
    if gfx and target.kind == "rocm":
        arch = target.gfx_arch
        if arch is None:
            return _Outcome(True, unknown="the gfx architecture")
        if not any(fnmatch.fnmatch(arch, pattern) for pattern in gfx):
            return _Outcome(False, f"'{value}' needs {', '.join(gfx)}; {_target_text(target)}")
    return _Outcome(True)


def _scheme_rule(rule: Mapping[str, Any], scheme: str, version: str) -> dict[str, Any]:
    base = {k: v for k, v in rule.items() if k not in ("per_scheme", "schemes")}
    return {**base, **_merged(rule.get("per_scheme", {}).get(scheme, {}), version)}


def _env_on(env: Mapping[str, str], name: str, wanted: str) -> bool:
    return env.get(name, "").strip().lower() in ({wanted, "true"} if wanted == "1" else {wanted})


@dataclass(frozen=True)
class Context:
    """What a verdict looks at besides the value."""

    target: Target
    """The platform."""
    version: str
    """The vLLM release."""
    scheme: str | None = None
    """The quantisation scheme, when known."""
    possible: tuple[str, ...] | None = None
    """The schemes the model may have, when the method narrows them (``fp8``)."""
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """The engine's environment."""
    architectures: tuple[str, ...] | None = None
    """The model's architectures, when known."""
    expert_parallel: bool = False
    """Whether ``--enable-expert-parallel`` is on."""
    all2all_backend: str | None = None
    """The all2all backend, when it matters."""

    @property
    def key(self) -> tuple[object, ...]:
        """Everything a verdict reads here (of the environment, only the variables a
        rule looks at): equal keys, equal verdicts."""
        return (
            self.target,
            self.version,
            self.scheme,
            self.possible,
            tuple(map(self.env.get, _env_names())),
            self.architectures,
            self.expert_parallel,
            self.all2all_backend,
        )

    @property
    def verdicts(self) -> dict[tuple[object, ...], Verdict]:
        """The verdicts already given in an equal context (found by one lookup of the
        key per context, however many values are checked in it). Kept on the instance
        by hand: ``functools.cached_property`` takes a lock on Python 3.11, and a
        context lives for one line."""
        found: dict[tuple[object, ...], Verdict] | None = self.__dict__.get("_verdicts")
        if found is None:
            key = self.key
            found = _VERDICTS.find(key)
            if found is None:
                found = {}
                _VERDICTS.keep(key, found)
            object.__setattr__(self, "_verdicts", found)
        return found


def _extra(rule: Mapping[str, Any], value: str, ctx: Context) -> tuple[str | None, list[str]]:
    """Requirements beyond the device: a certain failure, and unknowns."""
    unknowns = list(rule.get("needs", []))
    for name, bad in rule.get("env_off", {}).items():
        if ctx.env.get(name) == bad:
            return f"'{value}' is off while {name}={bad}", unknowns
    failed = _parallel_failure(rule, value, ctx, unknowns) or _model_failure(
        rule, value, ctx, unknowns
    )
    if failed:
        return failed, unknowns
    if not rule.get("no_env"):
        for name, wanted in rule.get("env", {}).items():
            if not _env_on(ctx.env, name, wanted):
                unknowns.append(f"{name}={wanted} in the deployment's environment (not set here)")
    if rule.get("runtime"):
        unknowns.append("the library's own device check, made at run time")
    return None, unknowns


def _parallel_failure(
    rule: Mapping[str, Any], value: str, ctx: Context, unknowns: list[str]
) -> str | None:
    """Expert parallelism and the all2all backend a value needs or refuses."""
    ep = rule.get("expert_parallel")
    if ep == "required" and not ctx.expert_parallel:
        return f"'{value}' needs expert parallelism (--enable-expert-parallel)"
    if ep == "forbidden" and ctx.expert_parallel:
        return f"'{value}' runs without expert parallelism only; drop --enable-expert-parallel"
    wanted_a2a = rule.get("all2all")
    if wanted_a2a and ctx.all2all_backend not in wanted_a2a:
        needed = f"--all2all-backend {' or '.join(wanted_a2a)}"
        if not rule.get("all2all_model_path"):
            return f"'{value}' needs {needed}"
        unknowns.append(f"{needed} (the model's own code path checks it, not the MoE oracle)")
    return None


def _model_failure(
    rule: Mapping[str, Any], value: str, ctx: Context, unknowns: list[str]
) -> str | None:
    """The model architectures a value is for."""
    archs = rule.get("architectures")
    if not archs:
        return None
    if ctx.architectures is None:
        unknowns.append(f"the model's architecture ({', '.join(archs)} only)")
    elif not set(ctx.architectures) & set(archs):
        return f"'{value}' is for {', '.join(archs)}; the model is {', '.join(ctx.architectures)}"
    return None


def _why_not(value: str, served: Sequence[str] | None, failures: list[tuple[str, _Outcome]]) -> str:
    """One line for the schemes that failed: shared reasons once, others per scheme."""
    unserved = [s for s, o in failures if served is not None and s and s not in served]
    others = [(s, o) for s, o in failures if s not in unserved]
    parts = []
    if unserved:
        parts.append(f"'{value}' serves {', '.join(served or ())}; not {' or '.join(unserved)}")
    reasons = list(dict.fromkeys(o.reason for _, o in others))
    if len(reasons) == 1 and not unserved:
        parts.append(reasons[0])
    else:
        parts += [f"for {s}, {o.reason}" if s else o.reason for s, o in others]
    return "; ".join(parts)


def _field_rules(field_name: str) -> dict[str, Any]:
    found: dict[str, Any] = catalogue()["fields"][
        "linear_backend" if field_name == "linear_backend_per_quant" else field_name
    ]
    return found


def _no_effect(field_name: str, value: str, ctx: Context) -> Verdict | None:
    table = _field_rules(field_name)
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


@cache
def _env_names() -> tuple[str, ...]:
    """Every environment variable a rule looks at."""
    names: set[str] = set()
    for table in catalogue()["fields"].values():
        for rule in table["values"].values():
            for part in [rule, *rule.get("per_scheme", {}).values()]:
                names.update(part.get("env", {}))
                names.update(part.get("env_off", {}))
    return tuple(sorted(names))


_VERDICTS: Answers[tuple[object, ...], dict[tuple[object, ...], Verdict]] = Answers(4096)
"""The verdicts given in each context (by its key), by field, value and schemes."""


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
    walk = _Walk(field_name, value, ctx, _merged(raw, ctx.version), schemes)
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
    failures: list[tuple[str, _Outcome]] = dataclasses.field(default_factory=list)
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

    def _not_served(self, scheme: str) -> _Outcome | None:
        """Why ``scheme`` is not the value's: its kernels are tried on such layers and
        refuse them (``refuses``), or it serves other schemes only."""
        refuses = self.rule.get("refuses", {}).get(scheme)
        if refuses:
            return _Outcome(False, str(refuses))
        served = self.served
        if served is not None and scheme and scheme not in served:
            reason = f"'{self.value}' serves {', '.join(served)}; not {scheme}"
            return _Outcome(False, reason, platform=self.linear)
        return None

    def _one(self, scheme: str, *, single: bool) -> None:
        value = self.value
        refused = self._not_served(scheme)
        if refused is not None:
            self.failures.append((scheme, refused))
            return
        merged = _scheme_rule(self.rule, scheme, self.ctx.version) if scheme else self.rule
        if merged.get("absent"):
            reason = f"'{value}' has no {scheme} kernel in vLLM {self.ctx.version}"
            self.failures.append((scheme, _Outcome(False, reason, platform=self.linear)))
            return
        if merged.get("fallback"):
            self.fallback.append(scheme)
            return
        if merged.get("refused"):
            self.failures.append(
                (scheme, _Outcome(False, f"'{value}' is refused for {scheme} layers"))
            )
            return
        outcome = _device(merged, value, self.ctx.target)
        if outcome.unknown:
            self.unknowns.append(outcome.unknown)
        if not outcome.ok:
            self.failures.append((scheme, outcome))
            return
        # a scheme's own requirements decide whether it fails; when the scheme is not
        # known, only the value's shared ones are named as still unknown
        failed, extra = _extra(merged, value, self.ctx)
        if not single:
            extra = _extra(self.rule, value, self.ctx)[1]
        if failed:
            self.failures.append((scheme, _Outcome(False, failed)))
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
        reason = _why_not(self.value, self.served, failures)
        if self.linear and all(o.platform for _, o in failures):
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
            failed = _why_not(value, served, failures)
            return self._make(
                "depends",
                f"runs for {names or 'some layers'}; not for {not_for}: {failed}",
                soft=True,
            )
        if self.unknowns:
            return self._make(
                "depends",
                f"'{value}' fits {_target_label(self.ctx.target)}; it still needs "
                + "; ".join(self.unknowns),
                soft=True,
            )
        if self.fallback and not self.runs:
            return self._make(
                "falls-back",
                f"'{value}' is ignored for {', '.join(self.fallback)} layers; "
                "vLLM chooses automatically",
            )
        return self._make("runs", f"'{value}' fits {_target_label(self.ctx.target)}")


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

"""What one catalogue rule requires of a target and a launch, and why it fails: the
rule for a release (``versions`` spans) and a scheme (``per_scheme``), the platform,
compute capability and gfx architecture (:func:`device_outcome`), then expert
parallelism, the all2all backend, the model's architectures and the environment
(:func:`extra`); each failure as one line naming the requirement and what the target has.
"""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernelcfg.checks.verdicts import Context
from kernelcfg.targets.presets import Target, capability_int
from kernelcfg.vllm.releases import version_key

__all__ = [
    "Outcome",
    "device_outcome",
    "for_release",
    "launch_requirements",
    "scheme_rule",
    "target_label",
    "why_not",
]


def _applies(span: str, version: str) -> bool:
    """Whether a ``versions`` span (``0.30.0..0.32.0``, or one release) holds ``version``.
    A span that ends at a minor's ``.0`` (``..0.27.0``, ``0.25.0``) holds that minor's patch
    releases too (0.27.1: the patch releases checked changed no selection code,
    docs/releases.md 'Patch releases'); one whose selection code does change is named by
    a span of its own, after the minor's, which it then overrides."""
    low, _, high = span.partition("..")
    end = version_key(high or low)
    if end[2:] == (0,):
        end = (*end[:2], sys.maxsize)
    return version_key(low) <= version_key(version) <= end


def for_release(rule: Mapping[str, Any], version: str) -> dict[str, Any]:
    """A rule as it stands for one release: its ``versions`` overrides applied."""
    out = {k: v for k, v in rule.items() if k != "versions"}
    for span, override in rule.get("versions", {}).items():
        if _applies(span, version):
            out.update(override)
    return out


_CAP_TERMS: tuple[tuple[str, Callable[[int, str], bool]], ...] = (
    ("family:", lambda have, major: have // 10 == int(major) // 10),
    (">=", lambda have, low: have >= capability_int(low)),
    ("==", lambda have, exact: have == capability_int(exact)),
)
"""The capability terms by their prefix, each a test of the target's capability (as an
integer, ``90``) against the rest of the term."""


def _term_holds(term: str, have: int) -> bool:
    """One ``|``-separated term of a capability condition (``low..<high`` a range)."""
    for prefix, test in _CAP_TERMS:
        if term.startswith(prefix):
            return test(have, term[len(prefix) :])
    if ".." in term:
        low, high = term.split("..<")
        return capability_int(low) <= have < capability_int(high)
    return False


def _cap_holds(condition: str, target: Target) -> bool | None:
    """Whether ``target`` meets a capability condition; ``None`` when unknown."""
    have = target.capability_int
    if have is None:
        return None
    return any(_term_holds(term, have) for term in condition.split("|"))


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
    return f"the target is {target.kind}"  # a fallback target is said once, in a note


def target_label(target: Target) -> str:
    """``NVIDIA B200 (SM100)``."""
    if target.kind == "cuda":
        return f"{target.device} (SM{(target.capability or '?').replace('.', '')})"
    if target.kind == "rocm":
        return f"{target.device} ({target.gfx_arch})"
    return target.device


@dataclass
class Outcome:
    """One rule's answer for one scheme."""

    ok: bool
    """Whether the value may run (``unknown`` names what was not checked)."""
    reason: str = ""
    """Why it cannot, in one line."""
    platform: bool = False
    """The failure is the platform's or the layer type's: a linear value is then ignored
    with a warning, not refused."""
    unknown: str | None = None
    """What could not be checked offline (the compute capability, the gfx architecture)."""


def device_outcome(rule: Mapping[str, Any], value: str, target: Target) -> Outcome:
    """Platform, capability and gfx checks of one (merged) rule."""
    platforms = rule.get("platforms")
    if platforms is not None and target.kind not in platforms:
        return Outcome(
            False,
            f"'{value}' runs on {', '.join(platforms)}; {_target_text(target)}",
            platform=True,
        )
    cond = rule.get("cap")
    if cond and target.kind == "cuda":
        holds = _cap_holds(cond, target)
        if holds is None:
            return Outcome(True, unknown="the compute capability")
        if not holds:
            return Outcome(False, f"'{value}' needs {_describe_cap(cond)}; {_target_text(target)}")
    gfx = rule.get("gfx")
    if gfx and target.kind == "rocm":
        arch = target.gfx_arch
        if arch is None:
            return Outcome(True, unknown="the gfx architecture")
        if not any(fnmatch.fnmatch(arch, pattern) for pattern in gfx):
            return Outcome(False, f"'{value}' needs {', '.join(gfx)}; {_target_text(target)}")
    return Outcome(True)


def scheme_rule(rule: Mapping[str, Any], scheme: str, version: str) -> dict[str, Any]:
    """A value's rule for one quantisation scheme: its ``per_scheme`` entry over the rest."""
    base = {k: v for k, v in rule.items() if k not in ("per_scheme", "schemes")}
    return {**base, **for_release(rule.get("per_scheme", {}).get(scheme, {}), version)}


def _env_on(env: Mapping[str, str], name: str, wanted: str) -> bool:
    """Whether the variable is set as wanted (``1`` also as ``true``, any case)."""
    return env.get(name, "").strip().lower() in ({wanted, "true"} if wanted == "1" else {wanted})


def launch_requirements(
    rule: Mapping[str, Any], value: str, ctx: Context
) -> tuple[str | None, list[str]]:
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
        refusal = rule.get("unlisted_refusal")
        return (
            f"'{value}' is for {', '.join(archs)}; the model is {', '.join(ctx.architectures)}"
            + (f"; {refusal}" if refusal else "")
        )
    return None


def why_not(value: str, served: Sequence[str] | None, failures: list[tuple[str, Outcome]]) -> str:
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

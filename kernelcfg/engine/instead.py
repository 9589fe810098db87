"""What would work instead: the values of a backend field that run for the target, the
install and the checkpoint, judged by the same rules that refuse one (the catalogue,
then the install's libraries), and what vLLM picks on ``auto``. ``backends`` lists the
same verdicts; ``resolve`` names them after each refusal of an explicit backend.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from kernelcfg.base.problems import Problem
from kernelcfg.checks.constraints import FIELDS, Context, Verdict, check
from kernelcfg.targets.presets import Target
from kernelcfg.vllm.inputs import Inputs
from kernelcfg.vllm.releases import Release

__all__ = ["judged", "matrix", "refuses_a_backend", "with_alternatives"]

_REFUSALS = {
    "backend-cannot-run": None,
    "moe-backend-needs-install": "moe_backend",
    "linear-backend-needs-install": "linear_backend",
    "linear-backend-raises": "linear_backend",
    "attention-needs-install": "attention_backend",
    "attention-backend-refused": "attention_backend",
}
"""The problem codes that refuse an explicit backend, and the field each is about
(``None``: the problem's own field)."""


def _install_problems(field: str) -> Callable[[Release, Inputs, Target, str], list[Problem]] | None:
    """The install check of a field's named value (MoE, linear), if it has one."""
    if field == "moe_backend":
        from kernelcfg.engine.moe import explicit_problems

        return explicit_problems
    if field == "linear_backend":
        from kernelcfg.engine.linear import explicit_problems as linear_problems

        return linear_problems
    return None


def judged(
    release: Release, target: Target, inputs: Inputs, ctx: Context, field: str, value: str
) -> Verdict:
    """The catalogue's verdict on ``field=value``, then the install's: a value whose
    kernels all need a library the install lacks cannot run."""
    verdict = check(field, value, ctx)
    installed = _install_problems(field)
    if verdict.status not in ("runs", "depends") or installed is None or value == "auto":
        return verdict
    errors = [p for p in installed(release, inputs, target, value) if p.severity == "error"]
    if not errors:
        return verdict
    return dataclasses.replace(verdict, status="cannot-run", reason=errors[0].message)


def matrix(release: Release, target: Target, inputs: Inputs, ctx: Context) -> list[Verdict]:
    """Every value of every backend field judged for the target and install."""
    from kernelcfg.checks import attention

    return [
        judged(release, target, inputs, ctx, name, value)
        for name in FIELDS
        for value in release.choices(name)
    ] + attention.matrix(release.version, target, inputs)


def _running(
    release: Release, target: Target, inputs: Inputs, ctx: Context, field: str
) -> list[str]:
    """The values of ``field`` (not ``auto``) that run here."""
    if field == "attention_backend":
        from kernelcfg.checks import attention

        found = attention.matrix(release.version, target, inputs)
        return [v.value for v in found if v.status == "runs"]
    return [
        value
        for value in release.choices(field)
        if value != "auto" and _runs(judged(release, target, inputs, ctx, field, value))
    ]


def _runs(verdict: Verdict) -> bool:
    """Runs here, or runs for some of the schemes the unknown quantisation may be."""
    return verdict.status == "runs" or (verdict.status == "depends" and verdict.quantisation_only)


def with_alternatives(
    release: Release,
    target: Target,
    inputs: Inputs,
    ctx: Context,
    problems: list[Problem],
    selection: dict[str, Any],
) -> list[Problem]:
    """``problems`` with each refusal of an explicit backend naming the values that run
    here instead (checked by the same rules) and vLLM's ``auto`` pick, where known."""
    out = []
    for problem in problems:
        field = _refused_field(problem)
        if field is None:
            out.append(problem)
            continue
        running = _running(release, target, inputs, ctx, field)
        picked = selection.get("attention" if field == "attention_backend" else field) or {}
        auto = picked.get("value") if picked.get("requested") == "auto" else None
        said = f"; runs here instead: {', '.join(running) if running else 'no named value'}"
        said += f"; auto picks {auto}" if auto else "; or leave it on auto"
        out.append(dataclasses.replace(problem, message=problem.message + said))
    return out


def _refused_field(problem: Problem) -> str | None:
    """The backend field an error refuses an explicit value of, if it is one."""
    if problem.severity != "error" or problem.code not in _REFUSALS:
        return None
    return _REFUSALS[problem.code] or (problem.field if problem.field in FIELDS else None)


def refuses_a_backend(problems: list[Problem]) -> bool:
    """Whether some problem refuses an explicit backend (then :func:`with_alternatives`
    has something to add)."""
    return any(_refused_field(p) is not None for p in problems)

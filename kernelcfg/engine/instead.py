"""What would work instead: the values of a backend field that run for the target, the
install and the checkpoint, judged by the same rules that refuse one (the catalogue,
then the install's libraries), and what vLLM picks on ``auto``. ``backends`` lists the
same verdicts; ``resolve`` names them after each refusal of an explicit backend.

``--all2all-backend`` has no ``auto``: its values are judged by the rules that refuse
one (the passthrough binding with the MoE backend, the library its manager asserts
under data parallel, an MoE backend's own need of one), and the value vLLM takes when
it is left unset is named.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from kernelcfg.base.problems import RUNS_INSTEAD, Problem
from kernelcfg.checks.constraints import FIELDS, Context, Verdict, check
from kernelcfg.targets.presets import Target
from kernelcfg.vllm.inputs import DEFAULT_ALL2ALL_BACKEND, Inputs
from kernelcfg.vllm.releases import Release

__all__ = [
    "INSTEAD",
    "VERBATIM",
    "all2all_running",
    "auto_pick",
    "judged",
    "matrix",
    "refuses_a_backend",
    "with_alternatives",
]

_REFUSALS = {
    "backend-cannot-run": None,
    "moe-backend-needs-install": "moe_backend",
    "linear-backend-needs-install": "linear_backend",
    "linear-backend-raises": "linear_backend",
    "attention-needs-install": "attention_backend",
    "attention-backend-refused": "attention_backend",
    "all2all-conflicts-with-moe-backend": "all2all_backend",
    "passthrough-needs-moe-ep-backend": "all2all_backend",
    "all2all-library-missing": "all2all_backend",
}
"""The problem codes that refuse an explicit backend, and the field each is about
(``None``: the problem's own field)."""


VERBATIM = frozenset({"all2all-conflicts-with-moe-backend", "passthrough-needs-moe-ep-backend"})
"""The refusals worded as vLLM words them (its ``ValueError``): what runs instead follows
them as a note of its own (code :data:`INSTEAD`), not in their text."""
INSTEAD = RUNS_INSTEAD
"""The code of that note."""


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
) -> tuple[list[str], list[str]]:
    """The values of ``field`` (not ``auto``) that run here, and those that may (their
    verdict depends on something not known here, such as the model)."""
    if field == "attention_backend":
        from kernelcfg.checks import attention

        verdicts = attention.matrix(release.version, target, inputs)
    elif field.startswith(_PER_QUANT):  # judged for the key's schemes, as resolve judges it
        from kernelcfg.vllm.kernels.quantization import per_quant_keys

        schemes = per_quant_keys(release.version)[field.removeprefix(_PER_QUANT)]
        verdicts = [
            check("linear_backend_per_quant", value, ctx, schemes=schemes)
            for value in release.choices("linear_backend")
            if value != "auto"
        ]
    else:
        verdicts = [
            judged(release, target, inputs, ctx, field, value)
            for value in release.choices(field)
            if value != "auto"
        ]
    running = [v.value for v in verdicts if _runs(v)]
    maybe = [v.value for v in verdicts if v.status == "depends" and not _runs(v)]
    return running, maybe


def _named(running: list[str], maybe: list[str]) -> str:
    """``; runs here instead: A, B``, or the values that may run where none is sure."""
    if running:
        return f"; runs here instead: {', '.join(running)}"
    if maybe:
        return f"; runs here instead: none for certain (may run: {', '.join(maybe)})"
    return "; runs here instead: no named value"


def _runs(verdict: Verdict) -> bool:
    """Runs here, or runs for some of the schemes the unknown quantisation may be."""
    return verdict.status == "runs" or (verdict.status == "depends" and verdict.quantisation_only)


def with_alternatives(
    release: Release,
    inputs: Inputs,
    ctx: Context,
    problems: list[Problem],
    selection: dict[str, Any],
    config: dict[str, Any] | None = None,
) -> list[Problem]:
    """``problems`` with each refusal of an explicit backend naming the values that run
    here instead (checked by the same rules) and vLLM's ``auto`` pick, where known
    (``config``: the resolved kernel config, whose MoE backend the all2all rules read
    and whose other fields the ``auto`` walks keep)."""
    out = []
    config = config or {}
    target = ctx.target
    for problem in problems:
        field = _refused_field(problem)
        if field is None:
            out.append(problem)
            continue
        if field == "all2all_backend":
            moe_backend = str(config.get("moe_backend") or "auto")
            running, unset = all2all_running(release, target, inputs, ctx, moe_backend)
            said = _named(running, [])
            tail = f"; unset, vLLM takes {unset}"
        elif field.startswith(_PER_QUANT):
            said = _named(*_running(release, target, inputs, ctx, field))
            tail = "; or leave the key out (linear_backend decides)"
        else:
            said = _named(*_running(release, target, inputs, ctx, field))
            key = "attention" if field == "attention_backend" else field
            picked = selection.get(key) or {}
            auto = picked.get("value") if picked.get("requested") == "auto" else None
            auto = auto or auto_pick(release, target, inputs, ctx, field, config)
            tail = f"; auto picks {auto}" if auto else "; or leave it on auto"
        if problem.code in VERBATIM:  # vLLM's own words stay whole; a note follows
            flag = "--" + field.replace("_", "-")
            out += [problem, Problem("info", INSTEAD, field, f"{flag}: {said[2:]}{tail}")]
            continue
        message = problem.message.rstrip(".") + said + tail
        out.append(dataclasses.replace(problem, message=message))
    return out


def auto_pick(
    release: Release,
    target: Target,
    inputs: Inputs,
    ctx: Context,
    field: str,
    config: dict[str, Any],
) -> str | None:
    """The value vLLM takes for ``field`` on ``auto`` (the walk ``resolve`` makes when the
    field is left to it, the other fields as given), where the walk picks one by a
    name the flag takes; ``None`` where it does not apply or picks nothing."""
    picked: dict[str, Any] | None = None
    walked = {**config, field: "auto"}
    if field == "moe_backend":
        from kernelcfg.engine.moe import moe_selection

        all2all = ctx.all2all_backend or DEFAULT_ALL2ALL_BACKEND
        picked = moe_selection(release, inputs, target, walked, all2all, [])
    elif field == "linear_backend":
        from kernelcfg.engine.linear import linear_selection

        picked = linear_selection(release, inputs, target, walked, [])
    elif field == "sparse_indexer_topk_backend":
        from kernelcfg.engine.indexer_topk import topk_selection

        picked = topk_selection(release, inputs, target, walked)
    elif field == "attention_backend":
        from kernelcfg.engine.attention import resolve_attention

        plain = {k: v for k, v in inputs.attention_config.items() if k != "backend"}
        unset = dataclasses.replace(inputs, attention_backend=None, attention_config=plain)
        found = resolve_attention(release, unset, target, [])
        picked = found.selection if found is not None else None
    if not picked or picked.get("status") != "selected":
        return None
    value = picked.get("value")
    return str(value) if value else None


def _bound(release: Release, moe_backend: str, all2all: str) -> str | None:
    """The all2all backend vLLM keeps for ``all2all`` given with ``moe_backend`` (the
    passthrough binding), ``None`` where the binding refuses the pair."""
    from kernelcfg.vllm.kernel_config.rules import RuleError, bind_passthrough_all2all_backend

    if not release.has_function("bind_passthrough_all2all_backend"):
        return all2all
    parallel = SimpleNamespace(all2all_backend=all2all)
    try:
        bind_passthrough_all2all_backend(release, moe_backend, parallel)
    except RuleError:
        return None
    return str(parallel.all2all_backend)


def all2all_running(
    release: Release, target: Target, inputs: Inputs, ctx: Context, moe_backend: str
) -> tuple[list[str], str]:
    """The ``--all2all-backend`` values that run here, judged by the rules that refuse
    one: the passthrough binding with ``moe_backend`` (a value it refuses or rebinds is
    not one), the library the manager asserts under data parallel (the install's), and
    the MoE backend's own need of an all2all backend (where some value meets it); and
    the value vLLM takes when the flag is left unset."""
    from kernelcfg.engine.moe import all2all_problems

    passthrough = release.constant("PASSTHROUGH_ALL2ALL_BACKEND", "passthrough")
    removed = {passthrough, *release.engine_rules.get("removed_all2all_backends", [])}
    unset = _bound(release, moe_backend, DEFAULT_ALL2ALL_BACKEND) or DEFAULT_ALL2ALL_BACKEND
    kept = [
        value
        for value in release.choices("all2all_backend")
        if value not in removed
        and _bound(release, moe_backend, value) == value
        and not all2all_problems(release, inputs, target, value)
    ]
    if moe_backend in ("auto", ""):
        return kept, unset
    fits = {
        value: check("moe_backend", moe_backend, dataclasses.replace(ctx, all2all_backend=value))
        for value in kept
    }
    meets = [value for value, verdict in fits.items() if verdict.status != "cannot-run"]
    return (meets if meets else kept), unset


_PER_QUANT = "linear_backend_per_quant."
"""The field of a refused ``linear_backend_per_quant`` value, before its key."""


def _refused_field(problem: Problem) -> str | None:
    """The backend field an error refuses an explicit value of, if it is one (a
    ``linear_backend_per_quant`` value: ``linear_backend_per_quant.KEY``)."""
    if problem.severity != "error" or problem.code not in _REFUSALS:
        return None
    if _REFUSALS[problem.code] is None and (problem.field or "").startswith(_PER_QUANT):
        return problem.field
    return _REFUSALS[problem.code] or (problem.field if problem.field in FIELDS else None)


def refuses_a_backend(problems: list[Problem]) -> bool:
    """Whether some problem refuses an explicit backend (then :func:`with_alternatives`
    has something to add)."""
    return any(_refused_field(p) is not None for p in problems)

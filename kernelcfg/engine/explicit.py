"""A backend named by flag, walked: the checks ``resolve`` makes of an explicit
``--moe-backend``, ``--linear-backend`` or ``--sparse-indexer-topk-backend``, in its
order, each with its answer (``kernelcfg why FIELD --FIELD VALUE``).

vLLM reads the value (its choice list), builds the kernel config under its start-up
rules (LoRA with a mega-MoE backend, the passthrough all2all binding, a model-specific
backend), then kernelcfg judges it for the target (the catalogue) and the install (the
libraries its kernels need), and for the model (a field no layer reads is ignored).
Each check is read off the resolve itself, so ``why`` and ``resolve`` cannot disagree.
"""

from __future__ import annotations

from typing import Any

from kernelcfg.base.problems import Problem
from kernelcfg.engine.instead import INSTEAD
from kernelcfg.engine.resolution import Resolution, check_context

__all__ = ["CHECKS", "explicit_walk"]

CHECKS = ("flag", "start-up rules", "target", "install", "model")
"""The checks, in the order ``resolve`` makes them."""

_RULES = {
    "moe_backend": (
        "lora-with-mega-moe",
        "moe-backend-needs-deepseek-v4",
        "all2all-conflicts-with-moe-backend",
        "passthrough-needs-moe-ep-backend",
    ),
}
"""The codes of vLLM's start-up rules that refuse a field's value (kernel_config.rules,
resolution's LoRA rule)."""


def explicit_walk(result: Resolution, field: str, value: str) -> dict[str, Any]:
    """``why``'s answer for a value named by flag: ``status`` (``selected`` when every
    check passes, ``error`` at the first that refuses, ``ignored`` where vLLM warns and
    chooses automatically instead, ``depends`` where a check cannot be decided here) and
    ``checks``: one ``{check, verdict, reason}`` per check made, in order (``ok``,
    ``refused``, ``ignored``, ``unknown``), up to the first refusal."""
    inputs = result.inputs
    assert inputs is not None  # a resolve that got as far as a kernel config
    mine = [p for p in result.problems if p.field == field or p.code in _RULES.get(field, ())]
    flag = "--" + field.replace("_", "-")
    checks = [
        _check("flag", "ok", f"{value} is one of vLLM {result.release.version}'s {flag} values")
    ]
    checks.append(_rules(mine, field))
    checks.append(_target(result, field, value))
    checks += _install(mine)
    checks.append(_model(mine, inputs.hf_config is not None))
    walked: list[dict[str, str]] = []
    for check in checks:
        walked.append(check)
        if check["verdict"] == "refused":
            break
    verdicts = {c["verdict"] for c in walked}
    status = "error" if "refused" in verdicts else "ignored" if "ignored" in verdicts else None
    status = status or ("depends" if "unknown" in verdicts else "selected")
    refusal = next((p for p in result.problems if _SAID in p.message and p in mine), None)
    refusal = refusal or next(
        (p for p in result.problems if p.code == INSTEAD and _SAID in p.message), None
    )
    return {
        "requested": value,
        "status": status,
        "backend": value if status in ("selected", "depends") else None,
        "kernel": None,
        "value": value if status in ("selected", "depends") else None,
        "candidates": [],
        "checks": walked,
        "instead": _instead(refusal, field),
        "install": inputs.install,
        "install_given": inputs.install_given,
        "install_source": inputs.install_source,
    }


def _check(name: str, verdict: str, reason: str) -> dict[str, str]:
    return {"check": name, "verdict": verdict, "reason": reason}


def _rules(mine: list[Problem], field: str) -> dict[str, str]:
    codes = _RULES.get(field, ())
    refused = [p for p in mine if p.code in codes and p.severity == "error"]
    if refused:
        return _check("start-up rules", "refused", _first_clause(refused[0].message))
    if codes:
        return _check(
            "start-up rules",
            "ok",
            "no start-up rule refuses it (LoRA, the all2all binding, a model-specific backend)",
        )
    return _check("start-up rules", "ok", "vLLM's start-up rules do not read it")


def _target(result: Resolution, field: str, value: str) -> dict[str, str]:
    """The catalogue's verdict for the target (resolve's step 6)."""
    from kernelcfg.checks.constraints import check

    inputs = result.inputs
    assert inputs is not None
    all2all = str(result.parallel.get("all2all_backend") or inputs.all2all_backend)
    ctx = check_context(result.target, result.release.version, inputs, all2all)
    verdict = check(field, value, ctx)
    said = {"runs": "ok", "cannot-run": "refused", "no-effect": "ok", "falls-back": "ignored"}
    if verdict.quantisation_only:
        return _check("target", "ok", verdict.reason)
    return _check("target", said.get(verdict.status, "unknown"), verdict.reason)


def _install(mine: list[Problem]) -> list[dict[str, str]]:
    """The install's libraries (resolve's step 7), where the field has that check."""
    found = [p for p in mine if p.code.endswith("-needs-install")]
    if found:
        verdict = "refused" if found[0].severity == "error" else "unknown"
        return [_check("install", verdict, _first_clause(found[0].message))]
    return [_check("install", "ok", "the install has what its kernels need")]


def _model(mine: list[Problem], known: bool) -> dict[str, str]:
    """Whether a layer of the model reads the field."""
    ignored = next((p for p in mine if p.code == "backend-no-effect"), None)
    if ignored is not None:
        return _check("model", "ok", f"vLLM ignores it: {ignored.message}")
    if not known:
        return _check("model", "unknown", "the model is not known (give its config.json)")
    return _check("model", "ok", "a layer of the model reads it")


def _first_clause(message: str) -> str:
    """A refusal without what ``resolve`` adds after it (what runs instead)."""
    return message.split("; runs here instead: ", 1)[0]


_SAID = "runs here instead: "
"""What a refusal (or the note after one in vLLM's words) says before the values."""


def _instead(refusal: Problem | None, field: str) -> str | None:
    """What runs instead, as the refusal (or its note) names it (with its flag, where
    it refuses another field: the all2all backend paired with an MoE backend)."""
    if refusal is None or _SAID not in refusal.message:
        return None
    said = _SAID + refusal.message.split(_SAID, 1)[1]
    if refusal.field and refusal.field != field:
        said = f"--{refusal.field.replace('_', '-')} {said}"
    return said

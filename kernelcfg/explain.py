"""``kernelcfg explain FIELD[=VALUE]``: what a field or value means, release by release."""

from __future__ import annotations

from typing import Any

from kernelcfg import constraints, releases
from kernelcfg.errors import ArgumentError, closest

__all__ = ["explain"]

_EXAMPLES = {
    "moe_backend": "kernelcfg resolve --device b200 --moe-backend {value} --quant-scheme nvfp4",
    "linear_backend": (
        "kernelcfg resolve --device h100 --linear-backend {value} --quant-scheme fp8_block"
    ),
    "sparse_indexer_topk_backend": (
        "kernelcfg resolve --device b200 --sparse-indexer-topk-backend {value} "
        "--architecture DeepseekV32ForCausalLM"
    ),
}


def _span(versions: list[str]) -> str:
    known = list(releases.known_versions())
    if not versions:
        return "no release kernelcfg knows"
    first, last = versions[0], versions[-1]
    if last == known[-1]:
        return f"since vLLM {first}" if first != known[0] else f"vLLM {first} and later"
    return f"vLLM {first} to {last}"


def explain(text: str) -> dict[str, Any]:
    """Everything kernelcfg knows about a field (``moe_backend``) or a value of it."""
    name, _, value = text.partition("=")
    name = name.strip().lstrip("-").replace("-", "_")
    all_fields = list(
        dict.fromkeys(
            f.name for v in releases.known_versions() for f in releases.load(v).kernel_fields
        )
    )
    if name not in all_fields:
        hint = closest(name, all_fields)
        raise ArgumentError(
            f"unknown field {name!r}; fields: {', '.join(all_fields)}"
            + (f" (did you mean {hint!r}?)" if hint else ""),
            field=name,
        )
    newest = releases.load(None)
    having = releases.versions_where(lambda r: name in r.field_facts)
    facts = releases.load(having[-1]).field_facts[name]
    out: dict[str, Any] = {
        "field": name,
        "doc": facts.doc,
        "releases": _span(having),
        "default": facts.default,
        "hashed": {v: name not in releases.load(v).hash_ignored for v in having},
        "flag": f"--{name.replace('_', '-')}"
        if name in constraints.FIELDS
        else f"--kernel-config.{name}",
    }
    if facts.choices is not None:
        kind = facts.choices
        everything = dict.fromkeys(c for v in having for c in releases.load(v).choices(kind))

        def offering(choice: str) -> list[str]:
            return releases.versions_where(lambda r: choice in r.choices(kind))

        out["choices"] = {c: _span(offering(c)) for c in everything}
    if not value:
        if name in _EXAMPLES:
            out["example"] = _EXAMPLES[name].format(value=newest.choices(name)[1])
        return out
    value = value.strip()
    if facts.choices is None or value not in out["choices"]:
        allowed = list(out.get("choices", {}))
        hint = closest(value, allowed) if allowed else None
        raise ArgumentError(
            f"{name} has no value {value!r}; values: {', '.join(allowed) or '(not a choice field)'}"
            + (f" (did you mean {hint!r}?)" if hint else ""),
            field=name,
        )
    rule = constraints.describe(name, value)
    out["value"] = value
    out["value_releases"] = out["choices"][value]
    out["requirements"] = {
        key: rule[key]
        for key in (
            "platforms",
            "cap",
            "gfx",
            "schemes",
            "per_scheme",
            "expert_parallel",
            "architectures",
            "env",
            "env_off",
            "all2all",
            "needs",
            "ships",
            "note",
            "versions",
        )
        if key in rule
    }
    out["when_unmet"] = constraints.when_unmet(name)
    out["source"] = rule.get("source", "")
    if name in _EXAMPLES:
        out["example"] = _EXAMPLES[name].format(value=value)
    return out

"""``kernelcfg explain FIELD[=VALUE]``: what a field or value means, release by release."""

from __future__ import annotations

from typing import Any

from kernelcfg.base.errors import ArgumentError, closest
from kernelcfg.checks import attention, constraints
from kernelcfg.vllm import releases

__all__ = ["explain"]

_FLAGS = {
    "moe_backend": "--moe-backend",
    "linear_backend": "--linear-backend",
    "sparse_indexer_topk_backend": "--sparse-indexer-topk-backend",
}
_EXAMPLE_DEVICES = ("h100", "b200", "mi300x", "mi355x", "rtx-pro-6000", "a100", "cpu")
_DEFAULT_VALUE = {
    "moe_backend": "flashinfer_trtllm",
    "linear_backend": "cutlass",
    "sparse_indexer_topk_backend": "flashinfer",
}


def _example(name: str, value: str, version: str) -> str | None:
    """A command that resolves ``name=value`` where it runs (a preset and a scheme
    where the catalogue says it runs, every optional library installed), so the
    example itself exits 0."""
    from kernelcfg.targets.presets import PRESETS

    rule = constraints.describe(name, value)
    schemes = [None, *rule.get("schemes", [])]
    ep = rule.get("expert_parallel") == "required"
    fallback = None
    for device in _EXAMPLE_DEVICES:
        for scheme in schemes:
            ctx = constraints.Context(PRESETS[device], version, scheme, expert_parallel=ep)
            status = constraints.check(name, value, ctx).status
            if status not in ("runs", "depends"):
                continue
            command = f"kernelcfg resolve --device {device} --install all {_FLAGS[name]} {value}"
            command += (f" --quant-scheme {scheme}" if scheme else "") + (
                " --enable-expert-parallel" if ep else ""
            )
            if status == "runs":
                return command
            fallback = fallback or command
    return fallback


_CONFIG_PATHS = ("kernel_config.", "kernel.")
"""A field's dotted path, taken as the field: ``VllmConfig``'s attribute (the one
spelling kernelcfg prints) and 0.34's factor tree's key (still accepted)."""


def explain(text: str) -> dict[str, Any]:
    """Everything kernelcfg knows about a field (``moe_backend``) or a value of it."""
    name, _, value = text.partition("=")
    name = name.strip().lstrip("-").replace("-", "_")
    for prefix in _CONFIG_PATHS:  # as diff and cache explain name it, or 0.34's factor tree
        name = name.removeprefix(prefix)
    if name == attention.FIELD:
        return attention.explain(value)
    out = _field(name)
    if value:
        value = value.strip()
        _value(out, name, value)
    if name in _FLAGS:
        found = _example(name, value or _DEFAULT_VALUE[name], releases.load(None).version)
        if found:
            out["example"] = found
    return out


def _field(name: str) -> dict[str, Any]:
    """A field's doc, releases, default, hashing, flag and choices; refused, with the
    closest field, when no release has it."""
    all_fields = list(
        dict.fromkeys(
            f.name for v in releases.known_versions() for f in releases.load(v).kernel_fields
        )
    )
    if name not in all_fields:
        hint = closest(name, [*all_fields, attention.FIELD])
        raise ArgumentError(
            f"unknown field {name!r}; fields: {', '.join(all_fields)}"
            + (f" (did you mean {hint!r}?)" if hint else ""),
            field=name,
        )
    having = releases.versions_where(lambda r: name in r.field_facts)
    facts = releases.load(having[-1]).field_facts[name]
    out: dict[str, Any] = {
        "field": name,
        "doc": facts.doc,
        "releases": attention.span(having),
        "default": facts.default,
        "hashed": {v: name in releases.load(v).hashed_fields for v in having},
        "hash": "kernel_config",
        "hashed_by": {v: HASHED_BY[releases.load(v).hash_scheme] for v in having},
        "flag": f"--{name.replace('_', '-')}"
        if name in constraints.FIELDS
        else f"--kernel-config.{name}",
    }
    if facts.choices is not None:
        kind = facts.choices
        everything = dict.fromkeys(c for v in having for c in releases.load(v).choices(kind))

        def offering(choice: str) -> list[str]:
            return releases.versions_where(lambda r: choice in r.choices(kind))

        out["choices"] = {c: attention.span(offering(c)) for c in everything}
    return out


HASHED_BY = {
    "compute_hash": "KernelConfig.compute_hash()",
    "hash_config": "hash_config(KernelConfig.compile_factors())",
}
"""How each hash scheme (``kernel_config.hash_scheme`` of a release) hashes the kernel
config, in words."""


_REQUIREMENTS = (
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
"""The catalogue keys a value's requirements are shown by, in this order."""


def _value(out: dict[str, Any], name: str, value: str) -> None:
    """A value's releases, requirements and what vLLM does when they are not met, added
    to its field's ``out``; refused, with the closest value, when the field has none such."""
    if "choices" not in out or value not in out["choices"]:
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
    out["requirements"] = {key: rule[key] for key in _REQUIREMENTS if key in rule}
    out["when_unmet"] = constraints.when_unmet(name)
    out["source"] = rule.get("source", "")

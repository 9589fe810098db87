"""``--attention-backend`` for ``explain`` and ``backends``: what a backend declares,
release by release, and its verdict on a target when the model is not known."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernelcfg.base.errors import ArgumentError, closest
from kernelcfg.checks.constraints import Verdict
from kernelcfg.targets.presets import PRESETS, Target
from kernelcfg.vllm import releases
from kernelcfg.vllm.inputs import INSTALLS, Inputs
from kernelcfg.vllm.kernel_config import attention as attention_config
from kernelcfg.vllm.kernels.attention.facts import Features
from kernelcfg.vllm.kernels.attention.features import features_of, platform_of
from kernelcfg.vllm.kernels.attention.selector import Selector, selector

__all__ = ["FIELD", "explain", "matrix", "span"]

FIELD = "attention_backend"
"""The field name ``explain`` and ``backends`` use for ``--attention-backend``."""

_EXAMPLE_DEVICES = ("h100", "b200", "rtx-pro-6000", "a100", "cpu")
_WHEN_UNMET = (
    "vLLM raises ValueError in the attention selector while it loads the model "
    '("Selected backend … is not valid for this configuration"); the CPU platform '
    "ignores a backend it does not take, XPU refuses names it has no branch for"
)


def span(versions: list[str]) -> str:
    """Releases as words: ``vLLM 0.29.0 and later``, ``since vLLM 0.32.0``, ``vLLM A to B``."""
    known = list(releases.known_versions())
    if not versions:
        return "no release kernelcfg knows"
    first, last = versions[0], versions[-1]
    if last == known[-1]:
        return f"since vLLM {first}" if first != known[0] else f"vLLM {first} and later"
    return f"vLLM {first} to {last}"


def _facts(version: str) -> attention_config.AttentionFacts:
    found = attention_config.facts(version)
    assert found is not None
    return found


def _having(name: str | None = None) -> list[str]:
    """The releases with attention facts (and, with ``name``, that backend)."""
    out = []
    for version in releases.known_versions():
        found = attention_config.facts(version)
        if found is not None and (name is None or name in found.backends):
            out.append(version)
    return out


_HASHED_BY = {
    "compute_hash": "AttentionConfig.compute_hash()",
    "hash_config": "hash_config(AttentionConfig.compile_factors())",
}
"""How each release's hash scheme hashes the attention config: never in the kernel
config's hash."""


def explain(value: str) -> dict[str, Any]:
    """``explain attention_backend[=VALUE]`` in the shape of the kernel-config fields."""
    having = _having()
    newest = attention_config.facts(having[-1])
    assert newest is not None
    spec = next(f for f in newest.fields if f["name"] == "backend")
    names = dict.fromkeys(n for v in having for n in _facts(v).backends)
    out: dict[str, Any] = {
        "field": FIELD,
        "doc": spec.get("doc", ""),
        "releases": span(having),
        "default": "auto",
        "hashed": dict.fromkeys(having, True),
        "hash": "attention",
        "hashed_by": {v: _HASHED_BY[releases.load(v).hash_scheme] for v in having},
        "flag": "--attention-backend",
        "choices": {n: span(_having(n)) for n in names},
    }
    if not value:
        out["example"] = (
            "kernelcfg resolve --device rtx-pro-6000 --architecture "
            "GptOssForCausalLM --explain-sources"
        )
        return out
    name = value.strip().upper()
    if name not in names:
        hint = closest(value, names)
        raise ArgumentError(
            f"attention_backend has no value {value!r}; values: {', '.join(names)}"
            + (f" (did you mean {hint!r}?)" if hint else ""),
            field=FIELD,
        )
    out["value"] = name
    out["value_releases"] = out["choices"][name]
    model = _newest_selector(name)
    out["requirements"] = _requirements(model, name) if model is not None else {}
    out["when_unmet"] = _WHEN_UNMET
    path = newest.backends.get(name) or ""
    out["source"] = path.rsplit(".", 1)[0].replace(".", "/").removeprefix("vllm/") + ".py"
    example = _example(model, name) if model is not None else None
    if example:
        out["example"] = example
    return out


def _newest_selector(name: str) -> Selector | None:
    for version in reversed(releases.known_versions()):
        model = selector(version)
        if model is not None and name in model.backends:
            return model
    return None


def _requirements(model: Selector, name: str) -> dict[str, Any]:
    facts = model.backends[name]
    out: dict[str, Any] = {"checked_for": f"vLLM {model.version}"}
    if "refuse" in facts:
        out["refused"] = facts["refuse"]
        return out
    out["platforms"] = [facts.get("platform", "cuda")]
    needs = model.needs(name)
    if needs:
        out["capability"] = needs
    for key, label in (
        ("dtypes", "dtypes"),
        ("kv_cache_dtypes", "kv_cache_dtypes"),
        ("head_sizes", "head_sizes"),
        ("head_size_rule", "head_size_rule"),
    ):
        if facts.get(key):
            out[label] = facts[key]
    out["attention"] = ("MLA" if facts.get("mla") else "MHA/GQA") + (
        ", sparse" if facts.get("sparse") else ""
    )
    out["sinks"] = (
        bool(facts.get("sink"))
        if not isinstance(facts.get("sink"), str)
        else (f"when {facts['sink']} allows")
    )
    libraries = [*facts.get("imports", ()), *_libraries(facts.get("combination", ()))]
    if libraries:
        out["needs"] = [model.data["libraries"].get(lib, lib) for lib in dict.fromkeys(libraries)]
    checks = [rule["reason"] for rule in facts.get("combination", ())]
    if checks:
        out["checks"] = checks
    return out


def _libraries(rules: Any) -> list[str]:
    return [rule["if"]["missing"] for rule in rules if "missing" in rule["if"]]


def _example(model: Selector, name: str) -> str | None:
    """A command where the backend is not refused (the model left open)."""
    for device in _EXAMPLE_DEVICES:
        where = platform_of(model, PRESETS[device], "image")
        if model.select(name, Features(), where).status != "error":
            return f"kernelcfg resolve --device {device} --attention-backend {name}"
    return None


def matrix(version: str, target: Target, inputs: Inputs) -> list[Verdict]:
    """Every ``--attention-backend`` value's verdict on the target for what is known of
    the model: cannot run (refused under every install), runs, depends, or no effect."""
    model = selector(version)
    found = attention_config.facts(version)
    if model is None or found is None:
        return []
    shape = features_of(model, inputs)
    verdicts = []
    for name in found.backends:
        picks = {
            install: model.select(name, shape, platform_of(model, target, install, inputs.env))
            for install in INSTALLS
        }
        verdicts.append(_verdict(name, picks, inputs.install))
    return verdicts


def _verdict(name: str, picks: Mapping[str, Any], install: str) -> Verdict:
    pip = picks[install]
    if all(p.status == "error" for p in picks.values()):
        reasons = [r for c in pip.candidates for r in c.reasons] or [pip.message or ""]
        return Verdict(FIELD, name, "cannot-run", "; ".join(reasons))
    if pip.status == "ignored":
        return Verdict(FIELD, name, "no-effect", f"ignored: vLLM uses {pip.backend or 'its own'}")
    works = [i for i, p in picks.items() if p.status != "error"]
    if pip.status == "error":
        return Verdict(
            FIELD,
            name,
            "depends",
            f"refused with --install {install}; may run with --install {' or '.join(works)}",
        )
    if pip.status == "selected":
        return Verdict(FIELD, name, "runs", "vLLM honours it on this target")
    unknown = [r for c in pip.candidates for r in c.reasons]
    return Verdict(
        FIELD, name, "depends", "depends on the model (give its config.json)", tuple(unknown)
    )

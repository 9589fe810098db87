"""The MoE pick of a resolution: what ``--moe-backend auto`` takes for the model's fused-MoE
layers on the target, install by install, and why each earlier candidate was passed over.

The model's MoE layer (experts, top-k, routing, activation) and the checkpoint's format
come from its ``config.json`` (``vllm.kernels.moe.layer`` and ``variant``); the parallel
flags give the layer's layout; the release's MoE data gives vLLM's walk
(``vllm.kernels.moe.oracle``). Without a checkpoint
format but with ``--quant-scheme``, every format of that scheme is walked and the pick
is ``depends`` where they disagree.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kernelcfg.base.answers import LARGE, Answers
from kernelcfg.base.problems import Problem
from kernelcfg.targets.presets import Target
from kernelcfg.vllm.inputs import INSTALLS, Inputs
from kernelcfg.vllm.releases import Release

if TYPE_CHECKING:
    from kernelcfg.vllm.kernels.moe.layer import Layout
    from kernelcfg.vllm.kernels.moe.oracle import MoeModel, Pick, Trial
    from kernelcfg.vllm.kernels.words import Where

__all__ = ["all2all_problems", "explicit_problems", "moe_selection"]


def moe_selection(
    release: Release,
    inputs: Inputs,
    target: Target,
    config: Mapping[str, Any],
    all2all: str,
    problems: list[Problem],
) -> dict[str, Any] | None:
    """``selection.moe_backend``, or ``None`` when it does not apply (an explicit value,
    no model config, or a model without fused-MoE layers); ``depends`` when kernelcfg
    cannot walk it (no MoE data for the release, a model it cannot read)."""
    if config.get("moe_backend") != "auto" or inputs.hf_config is None:
        return None
    front = (
        inputs.model_config_key,
        release.version,
        inputs.quantization,
        inputs.quant_scheme,
        inputs.tensor_parallel_size,
        inputs.data_parallel_size,
        inputs.enable_expert_parallel,
        all2all,
        target.kind,
        inputs.install,
    )
    if inputs.model_config_key is None:
        ready = _prepare(release, inputs, target, all2all)
    else:
        ready = _READY.get(front, lambda: _prepare(release, inputs, target, all2all))
    if not isinstance(ready, _Ready):
        return ready
    found, variants, why, layer = ready.found, ready.variants, ready.why, ready.layer
    key = (
        release.version,
        tuple(variants),
        why,
        ready.layer_key,
        target,
        inputs.install,
        inputs.install_given,
        inputs.install_source,
        tuple(sorted(inputs.env.items())),
    )
    data, problem = _ANSWERS.get(key, lambda: _select(found, variants, why, layer, inputs, target))
    if problem is not None:
        problems.append(problem)
    return data


@dataclasses.dataclass(frozen=True)
class _Ready:
    """What the walk starts from for one model, format and layout."""

    found: MoeModel
    variants: list[str]
    why: str
    layer: dict[str, Any]
    layer_key: tuple[Any, ...]


def _prepare(
    release: Release, inputs: Inputs, target: Target, all2all: str
) -> _Ready | dict[str, Any] | None:
    """The model's MoE layer and checkpoint format(s), or the ``depends`` selection (or
    ``None``: no fused-MoE layer) when there is nothing to walk."""
    from kernelcfg.vllm.kernels.moe import layer as moe_layer
    from kernelcfg.vllm.kernels.moe import oracle

    model = moe_layer.moe_model_features(inputs.hf_config or {})
    if model is None:
        return None
    found = oracle.model(release.version)
    unusable = _unusable(found, model, release, inputs)
    if unusable is not None or found is None:
        return unusable
    layout = moe_layer.Layout(
        inputs.tensor_parallel_size,
        inputs.data_parallel_size,
        inputs.enable_expert_parallel,
        all2all,
    )
    variants, why = _variants(found, inputs, layout, target)
    if not variants:
        return _depends(inputs, why)
    layer = moe_layer.layer_features(model, layout)
    return _Ready(found, variants, why, layer, tuple(sorted(layer.items())))


_READY: Answers[tuple[Any, ...], _Ready | dict[str, Any] | None] = Answers(256, text=LARGE)
"""The walks' starting points already worked out in this process, by the config.json
file read and the flags that shape the layer."""


def _unusable(
    found: MoeModel | None, model: Mapping[str, Any], release: Release, inputs: Inputs
) -> dict[str, Any] | None:
    """A ``depends`` selection when the walk cannot be made, with what is missing."""
    from kernelcfg.vllm.kernels.moe.layer import MODEL_KEYS
    from kernelcfg.vllm.kernels.moe.oracle import releases_with_data

    if found is None:
        known = ", ".join(releases_with_data()) or "none"
        return _depends(
            inputs, f"kernelcfg has no MoE selection data for vLLM {release.version} ({known})"
        )
    if model.get("unknown"):
        return _depends(
            inputs,
            f"kernelcfg does not know how {model.get('architecture') or model['model_type']} "
            f"routes its experts ({', '.join(model['unknown'])} unknown)",
        )
    lacking = [k for k in MODEL_KEYS if model.get(k) is None]
    if lacking:
        return _depends(inputs, f"the model's config.json does not give {', '.join(lacking)}")
    return None


_ANSWERS: Answers[tuple[Any, ...], tuple[dict[str, Any], Problem | None]] = Answers(256, text=LARGE)
"""Selections already made in this process (a batch asks the same question line after
line)."""


def _variants(
    found: MoeModel, inputs: Inputs, layout: Layout, target: Target
) -> tuple[list[str], str]:
    """The checkpoint format(s) the layer may have, and how that was read."""
    from kernelcfg.vllm.checkpoint import quantization_config_of
    from kernelcfg.vllm.kernels.moe.variant import variant_of

    hf = inputs.hf_config or {}
    quant = quantization_config_of(hf)
    if quant is None and inputs.quantization is None and inputs.quant_scheme is not None:
        scheme = inputs.quant_scheme
        names = [v for v in found.data["variants"] if v.split("/", 1)[0] == scheme]
        return names, f"--quant-scheme {scheme} (checkpoint format not given)"
    shards = layout.tensor_parallel_size * layout.data_parallel_size
    variant, why = variant_of(
        quant,
        inputs.quantization,
        hf.get("model_type"),
        1 if layout.enable_expert_parallel else shards,  # the layer's TP shard count
        hf_config=hf,
        platform_kind=target.kind,
    )
    if variant is None or variant not in found.data["variants"]:
        return [], why
    return [variant], why


def _depends(inputs: Inputs, message: str) -> dict[str, Any]:
    return {
        "requested": "auto",
        "status": "depends",
        "backend": None,
        "kernel": None,
        "value": None,
        "candidates": [],
        "install": inputs.install,
        "install_given": inputs.install_given,
        "install_source": inputs.install_source,
        "message": message,
    }


def _wheres(found: MoeModel, target: Target, inputs: Inputs) -> dict[str, Where]:
    """The target under each install, as the MoE data describes it (with the device
    name vLLM prints in its reasons)."""
    from kernelcfg.vllm.kernels import words as kernel_words

    return {
        install: dataclasses.replace(
            kernel_words.on_host(
                kernel_words.where(
                    found.data,
                    target.kind,
                    target.capability,
                    target.gfx_arch,
                    install,
                    inputs.env,
                ),
                target.host_features,
            ),
            device_name=target.device,
        )
        for install in INSTALLS
    }


def _outcome(pick: Pick) -> str:
    """One install's pick in a few words."""
    if pick.status == "selected":
        return f"{pick.backend} ({pick.kernel})" if pick.kernel else str(pick.backend)
    return pick.status


def _candidates(
    pick: Pick,
    probe: Callable[[list[str], Where], dict[str, Trial]],
    wheres: dict[str, Where],
    install: str,
) -> list[dict[str, Any]]:
    """The trials in vLLM's order, then the candidates it never reached, each with
    whether its classes would take the layer if it were asked for by name (and the
    installs under which they would)."""
    from kernelcfg.vllm.kernels.glosses import gloss

    here = wheres[install]
    out: list[dict[str, Any]] = [
        {
            "backend": t.backend,
            "kernel": t.kernel,
            "verdict": t.verdict,
            "reason": gloss(t.reason, here),
        }
        for t in pick.trials
    ]
    tried = {t.backend for t in pick.trials}
    later = [(b, classes) for b, classes in pick.candidates if b not in tried]
    names = [b for b, _ in later]
    asked = {i: probe(names, where) for i, where in wheres.items()} if names else {}
    for backend, classes in later:
        trial = asked[install][backend]
        entry: dict[str, Any] = {
            "backend": backend,
            "kernel": trial.kernel if trial.verdict == "ok" else "/".join(classes),
            "verdict": "not_tried",
            "reason": None,
            "if_asked": trial.verdict,
            "if_asked_reason": gloss(trial.reason, here),
        }
        if trial.verdict != "ok":
            entry["if_asked_installs"] = [
                i for i in INSTALLS if i != install and asked[i][backend].verdict == "ok"
            ]
        out.append(entry)
    return out


def _select(
    found: MoeModel,
    variants: list[str],
    why: str,
    layer: Mapping[str, Any],
    inputs: Inputs,
    target: Target,
) -> tuple[dict[str, Any], Problem | None]:
    """Walk every format under every install; the data and the problem, if any."""
    from kernelcfg.vllm.kernels.glosses import gloss

    wheres = _wheres(found, target, inputs)
    picks = {
        install: {v: found.pick(v, layer, where) for v in variants}
        for install, where in wheres.items()
    }
    chosen = picks[inputs.install]
    first = chosen[variants[0]]
    agree = len({_outcome(p) for p in chosen.values()}) == 1
    data: dict[str, Any] = {
        "requested": "auto",
        "status": first.status if agree else "depends",
        "backend": first.backend if agree else None,
        "kernel": first.kernel if agree else None,
        "value": first.values[0] if first.values and agree else None,
        "candidates": (
            _candidates(
                first,
                lambda backends, where: found.probe(variants[0], layer, where, backends),
                wheres,
                inputs.install,
            )
            if len(variants) == 1
            else []
        ),
        "install": inputs.install,
        "install_given": inputs.install_given,
        "install_source": inputs.install_source,
        "message": gloss(first.message or first.load_error, wheres[inputs.install])
        if agree
        else "the checkpoint's format decides",
        "checkpoint": why,
        "variant": variants[0] if len(variants) == 1 else None,
        "oracle": first.oracle,
        "moved": [{"backend": b, "reason": r} for b, r in first.moved],
        "dropped": [{"backend": b, "reason": r} for b, r in first.dropped],
    }
    if target.kind == "cpu" and target.cpu is None and agree:
        others = _other_hosts(found, variants[0], layer, wheres[inputs.install], first)
        if others:
            data["by_host"] = others
    runs = _runs_inside(found, data["kernel"], layer, wheres[inputs.install])
    if runs is not None:
        data["runs"] = runs
    if len(variants) > 1:
        data["by_variant"] = {v: _outcome(p) for v, p in chosen.items()}
    outcomes = {
        install: "/".join(dict.fromkeys(_outcome(p) for p in by_variant.values()))
        for install, by_variant in picks.items()
    }
    if len(set(outcomes.values())) > 1:
        data["by_install"] = outcomes
    message = data["message"] if agree else first.message or first.load_error
    return data, _problem(picks, inputs, target, message)


_OTHER_HOSTS = {
    "x86_64 without AMX": "x86_64 avx512 avx512_bf16",
    "aarch64": "aarch64",
    "ppc64le": "ppc64le",
}
"""Hosts a CPU target whose features are not stated may be, beside the one the release
data assumes (x86_64 with AMX tiles), as ``--cpu-features`` states them."""


def _other_hosts(
    found: MoeModel, variant: str, layer: Mapping[str, Any], where: Where, first: Pick
) -> dict[str, str]:
    """The picks on the other hosts a CPU target of unknown features may be, where they
    differ from the assumed host's (an AMD EPYC has no AMX: vLLM passes over the AMX
    experts)."""
    from kernelcfg.targets.cpu import parse
    from kernelcfg.vllm.kernels.words import on_host

    mine = _outcome(first)
    found_elsewhere = {
        name: _outcome(found.pick(variant, layer, on_host(where, parse(text).words)))
        for name, text in _OTHER_HOSTS.items()
    }
    return {name: said for name, said in found_elsewhere.items() if said != mine}


def _runs_inside(
    found: MoeModel, kernel: str | None, layer: Mapping[str, Any], where: Where
) -> str | None:
    """The kernel an experts class runs in place of its own where the release's data
    says so (``runs``: CPUUnquantizedExperts calls zentorch's fused MoE on vLLM's Zen
    platform); ``None`` otherwise."""
    from kernelcfg.vllm.kernels.words import holds

    for entry in found.data["experts"].get(kernel or "", {}).get("runs", ()):
        if holds(entry["when"], where, layer):
            return str(entry["kernel"])
    return None


def _problem(
    picks: Mapping[str, Mapping[str, Pick]], inputs: Inputs, target: Target, message: str | None
) -> Problem | None:
    """An error when vLLM raises under the install named, or under every install; a
    warning naming the installs that raise otherwise. Raising includes finding no
    kernel where the quantisation method then fails to load the weights."""
    first = next(iter(picks[inputs.install].values()))
    if not first.fails:
        return None
    works = [
        install
        for install, by_variant in picks.items()
        if not any(p.fails for p in by_variant.values())
    ]
    severity, refusing = inputs.refused_under(works)
    return Problem(
        severity,
        "moe-no-kernel",
        "moe_backend",
        f"MoE layers on {target.device}: {refusing} vLLM raises while "
        "loading the model"
        + (f" (with --install {' or '.join(works)} it picks a kernel)" if works else "")
        + f": {message or 'no MoE kernel supports the layer'}",
    )


def all2all_problems(
    release: Release, inputs: Inputs, target: Target, all2all: str
) -> list[Problem]:
    """The all2all backend's library, missing from the install: vLLM builds the expert-
    parallel group's all2all manager for an MoE model whenever data parallel is above 1,
    and the manager asserts its library at start-up. Judged by the install rule (an
    error under the install judged, named or default), naming the installs that have
    it."""
    if inputs.data_parallel_size <= 1 or inputs.hf_config is None:
        return []
    from kernelcfg.vllm.kernels.moe.layer import moe_model_features
    from kernelcfg.vllm.kernels.moe.oracle import model as moe_model

    found = moe_model(release.version)
    needs = (found.data.get("all2all_libraries", {}) if found else {}).get("backends", {})
    library = needs.get(all2all)
    if found is None or library is None:
        return []
    installs = found.data["installs"].get(target.kind, {})
    if library in installs.get(inputs.install, ()):
        return []
    if moe_model_features(inputs.hf_config) is None:
        return []  # a dense model builds no expert-parallel group
    having = [i for i in INSTALLS if library in installs.get(i, ())]
    severity, refusing = inputs.refused_under(having)
    return [
        Problem(
            severity,
            "all2all-library-missing",
            "all2all_backend",
            f"--all2all-backend {all2all} with data parallel: vLLM stops at start-up "
            f"{refusing} ({library} is not installed)"
            + (f"; with --install {' or '.join(having)} it is" if having else ""),
        )
    ]


def explicit_problems(
    release: Release, inputs: Inputs, target: Target, value: str
) -> list[Problem]:
    """A ``--moe-backend`` value none of whose experts classes can run on the target under
    the install (a library they need is not there) while under another install one can:
    an error when the install was named, else a warning naming the installs that lack
    it. The device itself is judged by the catalogue (``checks.constraints``)."""
    from kernelcfg.vllm.kernels.moe.oracle import model as moe_model

    found = moe_model(release.version)
    if found is None:
        return []
    key = (release.version, value, target, tuple(sorted(inputs.env.items())))
    works = _WORKS.get(key, lambda: _installs_running(found, value, target, inputs))
    return inputs.named_backend_problems("moe_backend", value, target.device, works)


_WORKS: Answers[tuple[Any, ...], list[str]] = Answers(4096, text=LARGE)
"""The installs under which a ``--moe-backend`` value may run, by release, value, target
and environment: a batch names the same value line after line (the walk over every
experts class was a fifth of a batch line's time, ``make bench``)."""


def _installs_running(found: MoeModel, value: str, target: Target, inputs: Inputs) -> list[str]:
    """The installs under which some experts class of ``value`` passes its device check."""
    wheres = _wheres(found, target, inputs)
    return [i for i in INSTALLS if _runs_somewhere(found, value, wheres[i])]


def _runs_somewhere(found: MoeModel, value: str, where: Where) -> bool:
    """Whether some experts class of ``value``, for some checkpoint format, passes its
    device check (platform, capability, libraries) under ``where``."""
    from kernelcfg.vllm.kernels.words import holds

    experts = found.data["experts"]
    return any(
        holds(experts[cls]["supports"].get("current_device", True), where, {})
        for oracle in found.data["oracles"].values()
        for backend in oracle.get("values", {}).get(value) or ()
        for cls in oracle["backend_classes"].get(backend, ())
    )

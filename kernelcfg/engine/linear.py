"""The linear-kernel pick of a resolution: what ``--linear-backend auto`` takes for the
model's quantised layers on the target, install by install.

The layer kinds are the checkpoint's, as ``vllm.checkpoint`` reads them (every config
group, per-layer scheme or algorithm it holds); without a checkpoint, every kind of the
scheme ``--quant-scheme`` or ``--quantization`` names. When the kinds walked pick
differently, the pick depends on the layer and says so, layer by layer.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kernelcfg.base.answers import LARGE, Answers
from kernelcfg.base.problems import Problem
from kernelcfg.targets.presets import Target
from kernelcfg.vllm.inputs import INSTALLS, Inputs
from kernelcfg.vllm.releases import Release

__all__ = ["explicit_problems", "linear_selection"]


def _layer_kinds(found: Any, scheme: str, inputs: Inputs) -> list[str]:
    """The layer kinds to walk: the checkpoint's (``vllm.checkpoint`` read them) where
    the release knows them, else every kind of the scheme, narrowed by what the flags say
    (``--quantization fp8`` on an unquantised checkpoint: dynamic activations)."""
    known = found.data["layers"]
    if inputs.linear_kinds:
        kinds = [k for k in inputs.linear_kinds if k in known]
        if kinds:
            return kinds
    kinds = list(found.data["scheme_layers"].get(scheme, ()))
    if inputs.quantization == "fp8" and inputs.hf_config is None:
        kinds = [k for k in kinds if not k.startswith("fp8_tensor/") or k.endswith("dynamic_act")]
    return kinds


def _scheme(inputs: Inputs) -> str | None:
    """The scheme of the linear layers; ``--quantization fp8`` without a quantised
    checkpoint is vLLM's online FP8 (per-tensor weights, dynamic activations)."""
    from kernelcfg.vllm.kernels.quantization import scheme_from_quantization

    if inputs.quantization == "fp8" and inputs.hf_config is None and not inputs.quant_scheme:
        return "fp8_tensor"
    return inputs.quant_scheme or scheme_from_quantization(inputs.quantization)


def linear_selection(
    release: Release,
    inputs: Inputs,
    target: Target,
    config: dict[str, Any],
    problems: list[Problem],
) -> dict[str, Any] | None:
    """``selection.linear_backend``, or ``None`` when it does not apply (an explicit
    value, no linear facts for the release, or the scheme unknown)."""
    scheme = _scheme(inputs)
    if config.get("linear_backend") != "auto" or scheme is None:
        return None
    from kernelcfg.vllm.kernels.linear import model

    found = model(release.version)
    if found is None:
        return None
    kinds = _layer_kinds(found, scheme, inputs)
    if not kinds:
        return None
    key = (
        release.version,
        scheme,
        tuple(kinds),
        target,
        inputs.install,
        inputs.install_given,
        inputs.install_source,
        tuple(sorted(inputs.env.items())),
    )
    data, problem = _ANSWERS.get(key, lambda: _select(found, scheme, kinds, inputs, target))
    if problem is not None:
        problems.append(problem)
    return data


_ANSWERS: Answers[tuple[Any, ...], tuple[dict[str, Any], Problem | None]] = Answers(256, text=LARGE)
"""Selections already made in this process: a batch asks the same question line after
line (``make bench``: a resolve with a selection costs 1.1x a plain one with it, 3x
without)."""


def _select(
    found: Any, scheme: str, kinds: list[str], inputs: Inputs, target: Target
) -> tuple[dict[str, Any], Problem | None]:
    """Walk every layer kind under every install; the data and the problem, if any."""
    from kernelcfg.vllm.kernels.glosses import gloss

    wheres = {install: _where(found, target, inputs, install) for install in INSTALLS}
    picks = {
        install: {kind: found.pick(kind, where) for kind in kinds}
        for install, where in wheres.items()
    }
    here = wheres[inputs.install]
    chosen = picks[inputs.install]
    first = chosen[kinds[0]]
    agree = len({p.kernel for p in chosen.values()}) == 1
    status = first.status if agree else "depends"
    data: dict[str, Any] = {
        "requested": "auto",
        "status": status,
        "backend": first.values[0] if first.values and agree else None,
        "kernel": first.kernel if agree else None,
        "value": first.values[0] if first.values and agree else None,
        "candidates": [
            {"backend": name, "kernel": name, "verdict": verdict, "reason": gloss(reason, here)}
            for name, verdict, reason in first.trials
        ],
        "install": inputs.install,
        "install_given": inputs.install_given,
        "install_source": inputs.install_source,
        "message": None if agree else "the checkpoint's layer kind decides",
        "scheme": scheme,
        "layers": {kind: pick.kernel or "error" for kind, pick in chosen.items()},
    }
    if agree and first.runs is not None:
        data["runs"] = first.runs
    own = found.data["scheme_layers"].get(scheme, ())
    if not any(kind in own for kind in kinds):
        data["experts_only"] = (
            f"the checkpoint's {scheme} quantises its MoE experts only; vLLM builds its "
            f"linear layers as {', '.join(kinds)}"
        )
    outcomes = {
        install: "/".join(dict.fromkeys(p.kernel or "error" for p in by_kind.values()))
        for install, by_kind in picks.items()
    }
    if len(set(outcomes.values())) > 1:
        data["by_install"] = outcomes
    if status != "error":
        return data, None
    works = [
        i for i, by_kind in picks.items() if all(p.status != "error" for p in by_kind.values())
    ]
    said = [f"{n}: {gloss(r, here)}" for n, _, r in first.trials]
    reasons = first.message or "; ".join(said)
    severity, refusing = inputs.refused_under(works)
    problem = Problem(
        severity,
        "linear-no-kernel",
        "linear_backend",
        f"linear layers ({scheme}) on {target.device}: vLLM finds no kernel {refusing} "
        f"({reasons or 'no kernel in its list'})"
        + (f"; with --install {' or '.join(works)} it does" if works else ""),
    )
    return data, problem


def explicit_problems(
    release: Release, inputs: Inputs, target: Target, value: str
) -> list[Problem]:
    """A ``--linear-backend`` value whose kernels cannot run on the target under the
    install (a library they need is not there) while under another install one can: an
    error when the install was named, else a warning naming the installs that refuse.
    Where no install runs it and vLLM walks the value's kernels alone for the model's
    layers, vLLM's load-time refusal (:func:`_raises`); where the release raises for a
    layer list the value has no kernel in (:func:`_none_named`), that refusal. The layer
    kinds walked are the scheme's where it is known, else every kind (for some
    checkpoint, one may run); the device itself is judged by the catalogue otherwise."""
    from kernelcfg.vllm.kernels.linear import model

    found = model(release.version)
    if found is None:
        return []
    scheme = _scheme(inputs)
    kinds = (_layer_kinds(found, scheme, inputs) if scheme else []) or list(found.data["layers"])
    none_named = _none_named(found, kinds, value, target, inputs) if scheme else None
    if none_named is not None:
        return [none_named]
    key = (release.version, tuple(kinds), target, tuple(sorted(inputs.env.items())), value)
    works = _WORKS.get(key, lambda: _works(found, kinds, value, target, inputs))
    if works:  # another install runs it: a library this one lacks (said below)
        return inputs.named_backend_problems("linear_backend", value, target.device, works)
    raises = _raises(found, kinds, value, target, inputs) if scheme else None
    if raises is not None:
        return [raises]
    return inputs.named_backend_problems("linear_backend", value, target.device, works)


def _raises(
    found: Any, kinds: list[str], value: str, target: Target, inputs: Inputs
) -> Problem | None:
    """vLLM's load-time refusal of ``--linear-backend value`` for the model's layers: it
    narrows a layer's kernel list to the value's kernels wherever the list has one
    (``_filter_kernels_by_backend``: by kernel, not by scheme) and raises when none of
    them can implement the layer, instead of falling back to auto. Only where that holds
    whatever is not known here: a switch of the environment (``VLLM_ROCM_USE_AITER``
    ...: the catalogue warns of those), the activation dtype (float16 or bfloat16), and,
    without the checkpoint's own layer kinds, which kind of the scheme it is (every kind
    must raise)."""
    from kernelcfg.vllm.kernels.glosses import gloss

    where = _where(found, target, inputs, inputs.install)
    envs = (
        where,
        dataclasses.replace(where, env=dict.fromkeys(where.env, True)),
        dataclasses.replace(where, env=dict.fromkeys(where.env, False)),
    )
    raising = [(k, p) for k in kinds if (p := _raising(found, k, value, envs)) is not None]
    from_checkpoint = bool(inputs.linear_kinds)
    if not raising or (not from_checkpoint and len(raising) < len(kinds)):
        return None
    kind, (here, switched) = raising[0]
    listed = found.data["selectors"][found.data["layers"][kind]["selector"]]["list"]
    error = found.data["no_kernel_error"][listed]["error"]
    reasons = "; ".join(f"{n}: {gloss(r, where)}" for n, _, r in here.trials)
    if switched.trials != here.trials:
        said = "; ".join(f"{n}: {gloss(r, where)}" for n, _, r in switched.trials)
        reasons += f" (with every switch on: {said})"
    return Problem(
        "error",
        "linear-backend-raises",
        "linear_backend",
        f"--linear-backend {value} on {target.device}: vLLM raises while loading the "
        f"model under every install: it walks only {value}'s kernels for the {kind} layers "
        f"and none can implement them ({error} Reasons: {reasons})",
    )


def _none_named(
    found: Any, kinds: list[str], value: str, target: Target, inputs: Inputs
) -> Problem | None:
    """vLLM's load-time refusal of ``--linear-backend value`` where a layer's kernel
    list on the platform holds none of the value's kernels and the release raises for
    that list instead of warning and walking it whole (``no_named_kernel_error``: every
    list in vLLM 0.26.0-0.27.0, MXFP6's in 0.28.0). With the checkpoint's own layer kinds one such
    layer is enough; without them every listed kind of the scheme must raise. Layers
    outside any list (the unquantised GEMM dispatch) are not narrowed."""
    where = _where(found, target, inputs, inputs.install)
    listed = [
        k for k in kinds if "list" in found.data["selectors"][found.data["layers"][k]["selector"]]
    ]
    raising = []
    for kind in listed:
        chosen = found.data["selectors"][found.data["layers"][kind]["selector"]]["list"]
        said = found.data["no_named_kernel_error"][chosen]
        if "error" in said and found.pick_named(kind, where, value) is None:
            raising.append((kind, said["error"].format(value=value)))
    if not raising or (not inputs.linear_kinds and len(raising) < len(listed)):
        return None
    kind, error = raising[0]
    return Problem(
        "error",
        "linear-backend-raises",
        "linear_backend",
        f"--linear-backend {value} on {target.device}: vLLM raises while loading the "
        f"model: none of {value}'s kernels is in its list for the {kind} layers on "
        f"{target.kind} ({error})",
    )


def _raising(found: Any, kind: str, value: str, envs: tuple[Any, ...]) -> Any:
    """The walks narrowed to ``value``'s kernels for one layer kind under the engine's
    environment and with every switch on, where it finds none under each environment
    (``envs``: the engine's, every switch on, every switch off) and with either
    activation dtype; else ``None``."""
    picks = [found.pick_named(kind, where, value) for where in envs]
    if any(p is None or p.status != "error" for p in picks):
        return None
    if found.data["layers"][kind].get("act_type") in ("bf16", "fp16"):
        for dtype in ("bf16", "fp16"):
            for where in envs:
                other = found.pick_named(kind, where, value, {"act_type": dtype})
                if other is not None and other.status != "error":
                    return None
    return picks[0], picks[1]


_WORKS: Answers[tuple[Any, ...], tuple[str, ...]] = Answers(4096, text=LARGE)
"""The installs under which a named linear backend runs, per question already asked in
this process (a batch asks the same one line after line)."""


def _works(
    found: Any, kinds: list[str], value: str, target: Target, inputs: Inputs
) -> tuple[str, ...]:
    """The installs under which ``value`` runs for one of the layer kinds."""
    return tuple(
        i for i in INSTALLS if _runs(found, kinds, value, _where(found, target, inputs, i))
    )


def _where(found: Any, target: Target, inputs: Inputs, install: str) -> Any:
    """The target under one install, with the engine's environment."""
    from kernelcfg.vllm.kernels.words import on_host

    return on_host(
        found.where(target.kind, target.capability, target.gfx_arch, install, inputs.env),
        target.host_features,
    )


def _runs(found: Any, kinds: list[str], value: str, where: Any) -> bool:
    """Whether, for one of the layer kinds, vLLM's walk narrowed to ``value`` takes a
    kernel under ``where`` (a kind with no kernel of ``value`` falls back to auto and is
    no verdict on it)."""
    picks = [found.pick_named(kind, where, value) for kind in kinds]
    return any(p is not None and p.status == "selected" for p in picks)

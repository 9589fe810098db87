"""The attention part of a resolution: the attention config, its hash, and the backend
vLLM's selector takes for the model on the target, with the problems that follow.

The config is built the way ``EngineArgs.create_engine_config`` builds it; the selector is
walked once per install (``--install`` picks the one reported, the others show whether
the pick depends on what is installed). An explicit backend is an error only when vLLM
refuses it under every install; ``auto`` is an error only when no install has a backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from kernelcfg.base.answers import LARGE, Answers
from kernelcfg.base.errors import EngineError, KernelcfgError
from kernelcfg.base.problems import Problem
from kernelcfg.targets.presets import Target
from kernelcfg.vllm.inputs import INSTALLS, Inputs
from kernelcfg.vllm.kernel_config import attention as attention_config
from kernelcfg.vllm.kernel_config import hashing
from kernelcfg.vllm.releases import Release

if TYPE_CHECKING:
    from kernelcfg.vllm.kernels.attention.facts import Selection
    from kernelcfg.vllm.kernels.attention.selector import Selector

__all__ = ["AttentionResult", "resolve_attention", "selection_data"]


@dataclass
class AttentionResult:
    """The attention config vLLM builds, its hash, and (when asked) the selection."""

    config: dict[str, Any] | None
    """Every field of the attention config (backends by enum name); ``None`` when no
    attention flag was given (every field at the release's default)."""
    hash: str
    """The digest vLLM computes for it (0.34.0: of its compile factors)."""
    selection: dict[str, Any] | None = None
    """``selection.attention`` of the JSON output; ``None`` when nothing about the model
    or the backend was given."""


@cache
def _default_hash(version: str) -> str:
    """The hash of the default attention config, the same on every line of a batch."""
    found = attention_config.facts(version)
    assert found is not None
    return hashing.digest(attention_config.factors(found, found.defaults))


def resolve_attention(
    release: Release, inputs: Inputs, target: Target, problems: list[Problem]
) -> AttentionResult | None:
    """The attention config, its hash and selection; ``None`` where the release has no
    attention facts or vLLM refuses the flags."""
    found = attention_config.facts(release.version)
    if found is None:
        return None
    plain = inputs.attention_backend is None and not inputs.attention_config
    try:
        if plain:
            values, digest = {}, _default_hash(release.version)
        else:
            values = attention_config.build(
                found, inputs.attention_backend, inputs.attention_config
            )
            digest = hashing.digest(attention_config.factors(found, values))
        _check_cache_dtype(found, inputs.kv_cache_dtype)
    except KernelcfgError as exc:
        problems.append(Problem.from_error(exc))
        return None
    result = AttentionResult(None if plain else values, digest)
    if not plain or _model_known(inputs):
        # only when asked: keeps cold start lean
        from kernelcfg.vllm.kernels.attention.selector import selector

        model = selector(release.version)
        if model is not None:
            result.selection = _select(model, inputs, target, values, problems)
    return result


def _check_cache_dtype(found: attention_config.AttentionFacts, kv: str) -> None:
    """``CacheConfig``'s validator: a known ``--kv-cache-dtype``."""
    if kv not in found.cache_dtypes:
        from kernelcfg.base.errors import closest

        hint = closest(kv, found.cache_dtypes)
        raise EngineError(
            f"--kv-cache-dtype: invalid kv_cache_dtype {kv!r}; valid values: "
            f"{', '.join(found.cache_dtypes)}" + (f" (did you mean {hint!r}?)" if hint else ""),
            field="kv_cache_dtype",
        )


def _model_known(inputs: Inputs) -> bool:
    return inputs.hf_config is not None or bool(inputs.architectures)


def _select(
    model: Selector,
    inputs: Inputs,
    target: Target,
    values: dict[str, Any],
    problems: list[Problem],
) -> dict[str, Any]:
    """Walk the selector under every install; report the chosen one, problems for all.
    The answer (data and problem, both read-only) is kept per question: a batch of one
    model asks it line after line."""
    from kernelcfg.vllm.kernels.attention.features import features_of, platform_of
    from kernelcfg.vllm.kernels.attention.selector import feature_key

    feats = features_of(model, inputs, values.get("flash_attn_version"))
    requested = values.get("backend")
    key = (
        model.version,
        requested,
        feature_key(model, feats),
        target,
        inputs.install,
        inputs.install_given,
        inputs.install_source,
        tuple(sorted(inputs.env.items())),
    )

    def walk() -> tuple[dict[str, Any], Problem | None]:
        picks = {
            install: model.select(requested, feats, platform_of(model, target, install, inputs.env))
            for install in INSTALLS
        }
        chosen = picks[inputs.install]
        return (
            selection_data(model, chosen, picks, inputs, target),
            _problem(model, requested, chosen, picks, inputs, target),
        )

    data, problem = _ANSWERS.get(key, walk)
    if problem is not None:
        problems.append(problem)
    return data


_ANSWERS: Answers[tuple[Any, ...], tuple[dict[str, Any], Problem | None]] = Answers(256, text=LARGE)
"""Selections already made in this process: a batch asks the same question line after
line (``make bench``: a resolve with a selection costs 1.1-1.5x a plain one with it, 3x
without)."""


def selection_data(
    model: Selector,
    chosen: Selection,
    picks: dict[str, Selection],
    inputs: Inputs,
    target: Target,
) -> dict[str, Any]:
    """``selection.attention`` of the JSON output."""
    install = inputs.install
    data: dict[str, Any] = {
        "requested": chosen.requested,
        "status": "selected" if chosen.status == "ignored" else chosen.status,
        "backend": chosen.backend,
        "kernel": model.kernel(chosen.backend),
        "value": chosen.backend,
        "candidates": [
            {
                "backend": c.backend,
                "kernel": model.kernel(c.backend),
                "verdict": "refused" if c.verdict == "refused" else c.verdict,
                "reason": "; ".join(_plain(model, c.backend, list(c.reasons), target, install))
                or None,
            }
            for c in chosen.candidates
        ],
        "install": install,
        "install_given": inputs.install_given,
        "install_source": inputs.install_source,
        "message": chosen.message,
    }
    outcomes = {name: _outcome(pick) for name, pick in picks.items()}
    if len(set(outcomes.values())) > 1:
        data["by_install"] = outcomes
    needs = _run_time_needs(chosen.backend, install)
    if needs is not None:
        data["run_time"] = needs
    return data


RUN_TIME_NEEDS = {
    "FLASHINFER": (
        "FlashInfer's kernels need flashinfer-cubin, or nvcc and ninja for its JIT; vLLM's "
        "selector does not check them (a plain pip install brings neither, vLLM's image both)"
    ),
}
"""What a backend vLLM's selector picks under an install still needs at run time, by
the backend's name prefix: the selector checks the platform, not the libraries, so the
pick stands, and this says what the install must add."""
_NEEDS_CHECKED = frozenset({"image", "all"})
"""The installs that bring what :data:`RUN_TIME_NEEDS` names."""


def _run_time_needs(backend: str | None, install: str) -> str | None:
    """What ``backend`` needs at run time that ``install`` does not bring, if anything."""
    if backend is None or install in _NEEDS_CHECKED:
        return None
    return next((v for k, v in RUN_TIME_NEEDS.items() if backend.startswith(k)), None)


def _outcome(pick: Selection) -> str:
    return pick.backend if pick.status in ("selected", "ignored") and pick.backend else pick.status


def _problem(
    model: Selector,
    requested: str | None,
    chosen: Selection,
    picks: dict[str, Selection],
    inputs: Inputs,
    target: Target,
) -> Problem | None:
    """The one problem the selection makes, if any: refused under the install named, or
    under every install, an error; under some installs only, a warning naming them."""
    install = inputs.install
    flag = f"--attention-backend {requested}" if requested else "attention (auto)"
    works = [name for name, pick in picks.items() if pick.status != "error"]
    where = _where(target)
    if chosen.status == "ignored":
        return Problem(
            "warning",
            "attention-backend-ignored",
            "attention_backend",
            f"{flag} is ignored on {where}: vLLM uses {chosen.backend or 'its own choice'}",
        )
    if chosen.status == "depends":
        return Problem(
            "info", "attention-depends", "attention_backend", f"{flag} on {where}: {chosen.message}"
        )
    if chosen.status != "error":
        return None
    reasons = [r for c in chosen.candidates for r in c.reasons] or [chosen.message or ""]
    reasons = _plain(model, requested, reasons, target, install)
    if requested is None:
        reasons = ["no candidate is valid"]
    if works:
        severity, refusing = inputs.refused_under(works)
        return Problem(
            severity,
            "attention-needs-install",
            "attention_backend",
            f"{flag} on {where}: vLLM refuses it {refusing} "
            f"({'; '.join(reasons)}); with --install {' or '.join(works)} it may run",
        )
    return _refused(model, requested, chosen, reasons, where)


def _plain(
    model: Selector, requested: str | None, reasons: list[str], target: Target, install: str
) -> list[str]:
    """The reasons, each once; vLLM's bare ``ImportError`` (ROCm reports only the
    exception's name) preceded by the library the backend imports and where it is."""
    from kernelcfg.vllm.kernels.attention.facts import PLATFORM_NAMES

    libraries = [] if requested is None else model.backends.get(requested, {}).get("imports", [])
    missing = [lib for lib in libraries if lib not in model.libraries(target.kind, install)]
    if not missing:
        return list(dict.fromkeys(reasons))
    anywhere = [i for i in INSTALLS if set(missing) <= model.libraries(target.kind, i)]
    where = (
        f"not installed with --install {install}"
        if anywhere
        else f"which no {PLATFORM_NAMES[target.kind]} install of vLLM has"
    )
    said = f"{requested} imports {', '.join(missing)}, {where} (vLLM: ImportError)"
    return list(dict.fromkeys(said if r == "ImportError" else r for r in reasons))


def _refused(
    model: Selector, requested: str | None, chosen: Selection, reasons: list[str], where: str
) -> Problem:
    """The error: vLLM refuses under every install."""
    if requested is None:
        return Problem(
            "error",
            "attention-no-backend",
            "attention_backend",
            f"no attention backend on {where} for this model: {chosen.message}",
        )
    needs = model.needs(requested)
    said = "; ".join(reasons)
    if needs and "compute capability not supported" in reasons:
        said += f" ({requested} needs {needs})"
    return Problem(
        "error",
        "attention-backend-refused",
        "attention_backend",
        f"--attention-backend {requested} is refused on {where}: {said}",
    )


def _where(target: Target) -> str:
    if target.capability is not None:
        return f"{target.device} (SM{target.capability.replace('.', '')})"
    if target.gfx_arch is not None:
        return f"{target.device} ({target.gfx_arch})"
    return target.device

"""What the ``vllm serve`` options that bear on kernels mean, once the line is read
(:mod:`kernelcfg.flags.serve_line`): the backend choices (normalised, refused with the
closest allowed value), the parallel sizes, ``-O``, ``--kernel-config``,
``--ir-op-priority``, ``--compilation-config`` and ``--attention-config`` checked with
kernelcfg's messages (values through :mod:`kernelcfg.vllm.kernel_config.validation`),
and every option put on the :class:`Inputs`; the others are accepted silently.
"""

from __future__ import annotations

import contextlib
import json
from functools import cache
from typing import Any

from kernelcfg.base import bounded
from kernelcfg.base.answers import Answers
from kernelcfg.base.errors import ArgumentError, EngineError, closest
from kernelcfg.base.problems import Problem
from kernelcfg.flags.serve_line.parser import RAW_DESTS, options
from kernelcfg.flags.serve_line.preprocess import Token, parsed_of
from kernelcfg.flags.serve_line.value_types import unknown_key
from kernelcfg.vllm.context import COMPILATION_MODES, CUDAGRAPH_MODES
from kernelcfg.vllm.inputs import Inputs
from kernelcfg.vllm.kernel_config import attention as attention_config
from kernelcfg.vllm.kernel_config import values
from kernelcfg.vllm.kernel_config.validation import (
    elsewhere,
    validate_ir_priority,
    validate_kernel_config,
)
from kernelcfg.vllm.releases import Release

__all__ = ["apply"]

_NORMALISED = {"moe_backend", "linear_backend", "sparse_indexer_topk_backend"}
"""The backend fields whose values vLLM normalises (lower case, ``-`` to ``_``) before
checking them against the release's choices."""


_MODEL_OPTIONS = frozenset(
    {
        "quantization",
        "attention_backend",
        "attention_config",
        "dtype",
        "kv_cache_dtype",
        "block_size",
    }
)
"""vLLM options kept as parsed on the inputs: what they mean is decided later, by the
release's model of vLLM (the attention config, the selection)."""


_KERNEL_BOOLEANS = (
    "enable_flashinfer_autotune",
    "enforce_eager",
    "enable_lora",
    "enable_fault_tolerance",
    "enable_expert_parallel",
    "monokernel",
)
"""The on/off options kept on the inputs as given."""


def apply(release: Release, inputs: Inputs, given: dict[str, Any]) -> None:
    """What the parsed options mean for kernels; other options are accepted silently."""
    origins: dict[str, str] = given.pop("_origins", {})
    for dest, occurrences in given.pop("_earlier", {}).items():
        for value in occurrences[:-1]:  # each is checked as vLLM checks it; the last counts
            with contextlib.suppress(EngineError):
                _apply(release, Inputs(), dest, value, "flag")
    for dest, value in given.items():
        origin = origins.get(dest, "flag")
        if dest in RAW_DESTS:
            try:
                _apply(release, inputs, dest, value, origin)
            except EngineError as exc:  # read fine; vLLM refuses it building the engine
                inputs.notes.append(Problem.from_error(exc))
        elif dest in _KERNEL_BOOLEANS:
            setattr(inputs, dest, value)
            inputs.sources[dest] = origin
            inputs.options[dest] = value
        elif dest in _MODEL_OPTIONS:
            if dest == "attention_config" and value:
                _check_attention_config(release, value)
            setattr(inputs, dest, value)
            inputs.sources[dest] = origin
            inputs.options[dest] = value
        elif dest == "model_tag" or (dest == "model" and "model_tag" not in given):
            inputs.model = value
            inputs.options["model"] = str(value)
        else:
            inputs.other_options[dest] = origin
            inputs.options[dest] = _option_value(value)


@cache
def _flag(release: Release, dest: str) -> str:
    """The option string vLLM names an option by (its first long form); asked for every
    option of every line, so answered once per release and option."""
    return options(release).flag(dest)


def _apply(release: Release, inputs: Inputs, dest: str, tok: str, origin: str) -> None:
    """One option whose raw text kernelcfg checks (RAW_DESTS)."""
    flag = _flag(release, dest)
    value = str(tok)
    inputs.sources[dest] = origin
    if dest in _NORMALISED or dest == "all2all_backend":
        setattr(inputs, dest, _choice(release, dest, flag, value))
        if dest == "all2all_backend":
            inputs.all2all_given = True
    elif dest in ("data_parallel_size", "tensor_parallel_size"):
        number = _int(flag, value)
        if number < 1:
            raise EngineError(
                f"{dest} must be at least 1, got {number}; vLLM's ParallelConfig refuses it "
                "while building the engine config",
                field=dest,
            )
        setattr(inputs, dest, number)
    elif dest == "optimization_level":
        inputs.optimization_level = _optimization_level(value)
    elif dest == "kernel_config":
        mapping = _json(flag, tok)
        inputs.kernel_values = validate_kernel_config(release, mapping, flag)
        inputs.kernel_config = mapping
        for key in mapping:
            inputs.sources[f"kernel_config.{key}"] = (
                "--kernel-config" if origin == "flag" else origin
            )
    elif dest == "ir_op_priority":
        inputs.ir_op_priority = validate_ir_priority(release, _json(flag, tok), flag)
    elif dest == "compilation_config":
        _compilation(release, _json(flag, tok), flag, inputs)


def _option_value(value: Any) -> Any:
    """An option's value as vLLM holds it: a gathered dotted value as its mapping, a
    word from a config file as plain text."""
    if type(value) is not Token:
        return value
    parsed = parsed_of(value)
    return str(value) if parsed is None else parsed


def _check_attention_config(release: Release, value: dict[str, Any]) -> None:
    """``-ac`` as vLLM's parser validates it (its type is the config's JSON validator)."""
    found = attention_config.facts(release.version)
    if found is not None:
        attention_config.from_json(found, value, "--attention-config")


_CHOSEN: Answers[tuple[Release, str, str], str] = Answers(1024)
"""Backend values already accepted, by release, option and the value as written."""


def _choice(release: Release, dest: str, flag: str, value: str) -> str:
    """The value of a choice option as vLLM keeps it (normalised); refused with the
    allowed values and the closest one when it is not among them."""
    key = (release, dest, value)
    found = _CHOSEN.find(key)
    if found is None:
        found = _choose(release, dest, flag, value)
        _CHOSEN.keep(key, found)
    return found


def _choose(release: Release, dest: str, flag: str, value: str) -> str:
    normalised = values.normalize_backend(value) if dest in _NORMALISED else value
    allowed = list(release.choices(dest))
    if dest == "all2all_backend":
        allowed = [c for c in allowed if c != release.constant("PASSTHROUGH_ALL2ALL_BACKEND")]
    if normalised in allowed:
        return normalised
    hint = closest(normalised, allowed)
    extra = ""
    if dest == "all2all_backend" and value == release.constant("PASSTHROUGH_ALL2ALL_BACKEND"):
        extra = " ('passthrough' is bound automatically for MoE backends that dispatch themselves)"
    else:
        other = elsewhere(release, repr(normalised), lambda r: normalised in r.choices(dest))
        if other:
            extra = f" ({other})"
    raise ArgumentError(
        f"argument {flag}: invalid choice {value!r}; allowed: {', '.join(sorted(allowed))}"
        + (f" (did you mean {hint!r}?)" if hint else "")
        + extra,
        field=dest,
    )


def _int(flag: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ArgumentError(f"argument {flag}: invalid int value: {value!r}", field=flag) from None


def _optimization_level(value: str) -> int:
    text = value.strip()
    level: int | None = None
    try:
        level = int(text)
    except ValueError:
        try:
            number = float(text)
            level = int(number) if number.is_integer() else None
        except ValueError:
            level = None
    if level is None or level not in (0, 1, 2, 3):
        raise EngineError(
            f"-O/--optimization-level: {bounded.shown(value)} is not an optimisation level; "
            "allowed: 0, 1, 2, 3 (vllm serve reads it as text, then refuses it while building "
            "its config)",
            field="optimization_level",
        )
    return level


def _json(flag: str, token: str) -> Any:
    parsed = parsed_of(token)
    if parsed is not None:
        return parsed
    try:
        value = json.loads(token)
    except json.JSONDecodeError as exc:
        raise ArgumentError(
            f"argument {flag}: {bounded.shown(str(token))} is not valid JSON ({exc.msg} at "
            f"column {exc.colno}); for one field write {flag}.FIELD=VALUE",
            field=flag,
        ) from None
    except (RecursionError, ValueError) as exc:
        raise ArgumentError(
            f"argument {flag}: unusable JSON ({bounded.reason(exc)})", field=flag
        ) from None
    if not isinstance(value, dict):
        raise ArgumentError(
            f"argument {flag}: expected a JSON object, got {bounded.shown(str(token))}",
            field=flag,
        )
    bounded.check_depth(value, f"argument {flag}")
    return value


def _compilation(release: Release, value: dict[str, Any], flag: str, inputs: Inputs) -> None:
    known = set(release.data.get("compilation_fields", ()))
    for key in value:
        if known and key not in known:
            hint = closest(key, known)
            raise ArgumentError(
                f"argument {flag}: unknown compilation-config field {key!r}"
                + (f" (did you mean {hint!r}?)" if hint else ""),
                field=f"compilation_config.{key}",
            )
    fields = options(release).fields("compilation_config")
    nested = unknown_key(value, fields) if fields is not None else None
    if nested:  # a key inside pass_config and the like
        raise ArgumentError(f"argument {flag}: {nested}", field="compilation_config")
    mode = _compilation_mode(value.get("mode"), flag)
    cudagraph = _cudagraph_mode(value.get("cudagraph_mode"), flag)
    backend = value.get("backend", "")
    if not isinstance(backend, str):
        raise ArgumentError(
            f"argument {flag}: backend: Input should be a valid string, got {backend!r}",
            field="compilation_config.backend",
        )
    if mode == "VLLM_COMPILE" and backend not in ("", "eager", "inductor"):
        raise ArgumentError(
            f"argument {flag}: Invalid backend for piecewise compilation: {backend} "
            "(with mode 3 the backend must be '', 'eager' or 'inductor')",
            field="compilation_config.backend",
        )
    inputs.compilation_mode = mode
    inputs.cudagraph_mode = cudagraph
    inputs.compile_backend = backend
    inputs.options["compilation_config"] = value


def _compilation_mode(mode: Any, flag: str) -> str | None:
    """``-cc.mode`` as a ``CompilationMode`` name (vLLM takes the name in any case, or 0-3)."""
    if mode is None:
        return None
    if isinstance(mode, str):
        if mode.upper() not in COMPILATION_MODES:
            raise ArgumentError(
                f"argument {flag}: Invalid compilation mode: {mode}. Valid modes are: "
                f"{', '.join(COMPILATION_MODES)}",
                field="compilation_config.mode",
            )
        return mode.upper()
    if isinstance(mode, int) and not isinstance(mode, bool) and 0 <= mode <= 3:
        return COMPILATION_MODES[mode]
    raise ArgumentError(
        f"argument {flag}: mode: Input should be 0, 1, 2 or 3, got {mode!r}",
        field="compilation_config.mode",
    )


def _cudagraph_mode(cudagraph: Any, flag: str) -> str | None:
    """``-cc.cudagraph_mode`` as a ``CUDAGraphMode`` name (any case, or 0-2)."""
    if cudagraph is None:
        return None
    if isinstance(cudagraph, str):
        if cudagraph.upper() not in CUDAGRAPH_MODES:
            hint = closest(cudagraph.upper(), CUDAGRAPH_MODES)
            raise ArgumentError(
                f"argument {flag}: unknown cudagraph_mode {cudagraph!r}; allowed: "
                f"{', '.join(CUDAGRAPH_MODES)} (any case) or 0, 1, 2"
                + (f" (did you mean {hint!r}?)" if hint else "")
                + "; vLLM itself crashes here with a bare KeyError",
                field="compilation_config.cudagraph_mode",
            )
        return cudagraph.upper()
    if isinstance(cudagraph, int) and not isinstance(cudagraph, bool) and cudagraph in (0, 1, 2):
        return CUDAGRAPH_MODES[cudagraph]
    raise ArgumentError(
        f"argument {flag}: cudagraph_mode: Input should be 0, 1, 2, (2, 0) or (2, 1), "
        f"got {cudagraph!r}",
        field="compilation_config.cudagraph_mode",
    )

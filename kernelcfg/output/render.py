"""A resolution as data (the JSON contract) and as text: json, yaml, env, args.

The machine formats never import rich; the tables for people are in
:mod:`kernelcfg.output.tables`.
"""

from __future__ import annotations

import json
import shlex
from functools import cache
from typing import Any

from kernelcfg.base.answers import Answers
from kernelcfg.base.bounded import one_line
from kernelcfg.base.json_text import compact
from kernelcfg.commands.pipeline import Failure
from kernelcfg.engine.resolution import Resolution
from kernelcfg.vllm.inputs import DEFAULT_ALL2ALL_BACKEND, Inputs

__all__ = [
    "FORMAT_VERSION",
    "all_sources",
    "as_args",
    "as_data",
    "as_env",
    "as_json",
    "as_yaml",
    "exit_code_of",
    "json_body",
    "json_line",
    "with_extra",
]

FORMAT_VERSION = "1"


def as_data(
    result: Resolution | Failure, *, strict: bool = False, sources: bool = False
) -> dict[str, Any]:
    """The JSON contract's object for one resolution (or unusable input)."""
    if isinstance(result, Failure):
        return {
            "format_version": FORMAT_VERSION,
            "vllm_version": result.release.version if result.release else None,
            "valid": False,
            "platform": result.target.as_dict() if result.target else None,
            "kernel_config": None,
            "parallel_config": None,
            "compilation": None,
            "ir_dispatch": None,
            "hash": None,
            "hash_scheme": result.release.hash_scheme if result.release else None,
            "hash_factors": None,
            "problems": [result.problem.as_dict()],
            "vllm_version_source": None,
            "model": None,
            "attention_config": None,
            "attention_hash": None,
            "selection": None,
            "compile_cache": None,
        }
    problems = result.problems
    valid = result.exit_code(strict=strict) == 0
    data: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "vllm_version": result.release.version,
        "valid": valid,
        "platform": result.target.as_dict(),
        "kernel_config": result.kernel_config,
        "parallel_config": result.parallel or None,
        "compilation": result.compilation or None,
        "ir_dispatch": result.ir_dispatch or None,
        "hash": result.hash,
        "hash_scheme": result.release.hash_scheme,
        "hash_factors": result.hash_factors,
        "problems": [p.as_dict() for p in problems],
        "vllm_version_source": _version_source(result),
        "model": model_data(result),
        **attention_data(result),
        "compile_cache": result.compile_cache,
    }
    if sources:
        data["sources"] = all_sources(result)
        data["other_options"] = dict(result.inputs.other_options) if result.inputs else {}
    return data


def model_data(result: Resolution) -> dict[str, Any] | None:
    """What was read about the model (``None`` when nothing was given about it)."""
    inputs = result.inputs
    if inputs is None or not (
        inputs.model or inputs.architectures or inputs.quantization or inputs.quant_scheme
    ):
        return None
    return {
        "id": inputs.model,
        "architectures": inputs.architectures,
        "quantization": inputs.quantization,
        "quant_scheme": inputs.quant_scheme,
        "source": inputs.model_source,
        "config_file": inputs.model_config_file,
    }


def attention_data(result: Resolution) -> dict[str, Any]:
    """The attention keys of the contract (the config and its hash) and the selection."""
    found = result.attention
    return {
        "attention_config": found.config if found else None,
        "attention_hash": found.hash if found else None,
        "selection": result.selection or None,
    }


def _version_source(result: Resolution) -> str:
    """What chose the release: flag, environment, installed or newest."""
    inputs = result.inputs
    return inputs.sources.get("vllm_version", "newest") if inputs else "newest"


def all_sources(result: Resolution) -> dict[str, str]:
    """Where every resolved value came from; ``default`` where nothing set it."""
    names: list[str] = []
    for name, value in (result.kernel_config or {}).items():
        if name == "ir_op_priority":
            names += [f"ir_op_priority.{op}" for op in value]
        else:
            names.append(name)
    names += [f"compilation.{k}" for k in result.compilation]
    names += list(result.parallel)
    return {name: result.sources.get(name, "default") for name in names}


_ENCODE = compact
_FRAGMENTS: Answers[object, str] = Answers(4096)
"""The JSON of values that repeat from line to line (a release, a platform, the parallel
and compilation settings, the dispatch chains, a key), by a key that says them."""


def _fragment(key: object, value: Any) -> str:
    """The compact JSON of a value that repeats across lines, encoded once."""
    found = _FRAGMENTS.find(key)
    if found is None:
        found = _ENCODE(value)
        _FRAGMENTS.keep(key, found)
    return found


_SHARED: dict[int, tuple[object, str]] = {}
"""Encoded selections and hash factors, by the identity of the (cached, never changed)
object: batch lines repeat the same walk and the same configuration, and the walk's
JSON (kilobytes of candidates) was a third of the cost of a line with a model (``make
bench``). The entry holds the object, so its id is never reused while the entry stands."""


def _shared(value: Any) -> str:
    """The compact JSON of an object the selection caches hand out again and again."""
    found = _SHARED.get(id(value))
    if found is not None and found[0] is value:
        return found[1]
    text = _ENCODE(value)
    if len(_SHARED) < 8192:
        _SHARED[id(value)] = (value, text)
    return text


def _selection_json(selection: dict[str, Any] | None) -> str:
    if not selection:
        return "null"
    parts = (f"{_ENCODE(key)}:{_shared(value)}" for key, value in selection.items())
    return "{" + ",".join(parts) + "}"


def _factors_json(result: Resolution) -> str:
    """The hash factors' compact JSON: one object per distinct configuration (``hashing``
    makes each once), so each is encoded once."""
    return "null" if result.hash_factors is None else _shared(result.hash_factors)


def _platform_json(result: Resolution) -> str:
    return _FRAGMENTS.get(result.target, lambda: _ENCODE(result.target.as_dict()))


def json_line(result: Resolution | Failure, extra: dict[str, Any], *, strict: bool = False) -> str:
    """One compact JSON line of the contract object plus ``extra`` keys (``--batch``):
    :func:`json_body` closed by :func:`with_extra`."""
    return with_extra(json_body(result, strict=strict), extra)


def with_extra(body: str, extra: dict[str, Any]) -> str:
    """A :func:`json_body` with ``extra`` keys added and the object closed."""
    parts = [body]
    for key, value in extra.items():
        parts += [",", _fragment(("k", key), key), ":", _ENCODE(value)]
    parts.append("}")
    return "".join(parts)


def json_body(result: Resolution | Failure, *, strict: bool = False) -> str:
    """The contract object (:func:`as_data`) as compact JSON, still open (no closing
    brace) so that a batch line's keys can follow. Parts that repeat from line to line
    (the platform, the dispatch chains, the compilation settings, the problems the
    caches hand out) are encoded once."""
    if isinstance(result, Failure):
        return _ENCODE(as_data(result, strict=strict))[:-1]
    release = result.release
    comp = result.compilation
    par = result.parallel
    chains = result.ir_dispatch
    attention = result.attention
    model = model_data(result)
    source = _version_source(result)
    parts = [
        '{"format_version":"1","vllm_version":',
        _fragment(("v", release.version), release.version),
        ',"valid":',
        "true" if result.exit_code(strict=strict) == 0 else "false",
        ',"platform":',
        _platform_json(result),
        ',"kernel_config":',
        _ENCODE(result.kernel_config),
        ',"parallel_config":',
        _fragment(("p", *par.values()), par) if par else "null",
        ',"compilation":',
        _fragment(("c", *comp.values()), comp) if comp else "null",
        ',"ir_dispatch":',
        _fragment(("d", *(tuple(c) for c in chains.values())), chains) if chains else "null",
        ',"hash":',
        f'"{result.hash}"' if result.hash is not None else "null",
        ',"hash_scheme":',
        _fragment(("s", release.hash_scheme), release.hash_scheme),
        ',"hash_factors":',
        _factors_json(result),
        ',"problems":[',
        ",".join([p.json for p in result.problems]),
        '],"vllm_version_source":',
        _fragment(("vs", source), source),
        ',"model":',
        "null" if model is None else _ENCODE(model),
        ',"attention_config":',
        _ENCODE(attention.config) if attention else "null",
        ',"attention_hash":',
        _ENCODE(attention.hash) if attention else "null",
        ',"selection":',
        _selection_json(result.selection or None),
        ',"compile_cache":',
        _ENCODE(result.compile_cache),
    ]
    return "".join(parts)


def exit_code_of(result: Resolution | Failure, *, strict: bool = False) -> int:
    """The exit code a resolution (or failure) stands for."""
    if isinstance(result, Failure):
        return result.problem.exit_code
    return result.exit_code(strict=strict)


def exit_code_under(result: Resolution | Failure, *, strict: bool, never: bool) -> int:
    """The exit code under a run's policy: 2 and 70 always stand; 1 unless ``never``
    (``strict``: warnings count as errors)."""
    code = exit_code_of(result, strict=strict)
    return 0 if code == 1 and never else code


def as_json(data: dict[str, Any], *, indent: int | None = 2) -> str:
    """JSON text of a contract object."""
    return json.dumps(data, indent=indent, allow_nan=False)


def as_yaml(data: dict[str, Any]) -> str:
    """YAML text of a contract object: a string holding a line break or another control
    character is written double-quoted, escaped, on its one line (never folded), so every
    value stays on its key's line."""
    import yaml

    return str(
        yaml.dump(
            data,
            Dumper=_one_line_dumper(),
            sort_keys=False,
            default_flow_style=False,
            width=1 << 30,
        )
    )


@cache
def _one_line_dumper() -> Any:
    """PyYAML's safe dumper, with strings that are not all printable double-quoted."""
    import yaml

    def represent(dumper: yaml.SafeDumper, value: str) -> Any:
        style = None if value.isprintable() else '"'
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    class OneLine(yaml.SafeDumper):
        """Safe YAML, one line per value."""

    OneLine.add_representer(str, represent)
    return OneLine


def _env_name(*parts: str) -> str:
    return "KERNELCFG_" + "_".join(p.upper().replace(".", "_").replace("-", "_") for p in parts)


def _env_value(value: Any) -> str:
    """A value as one line of text (control characters escaped: the line stays one)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return one_line(",".join(str(v) for v in value))
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return one_line(str(value))


_ENV_PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("platform", ("platform",)),
    ("model", ("model",)),
    ("kernel_config", ()),
    ("parallel_config", ()),
    ("compilation", ("compilation",)),
    ("ir_dispatch", ("ir_dispatch",)),
)
"""The parts of a resolution's JSON written as variables, in this order, with the words
their names start with (``KERNELCFG_PLATFORM_…``; the kernel and parallel configs' fields
by their own names, ``ir_op_priority`` one variable per op)."""


def as_env(data: dict[str, Any], *, exit_code: int | None = None) -> str:
    """``KERNELCFG_…=…`` lines, shell-quoted, for ``eval`` or ``source``; with
    ``exit_code``, a last ``KERNELCFG_EXIT`` line (``set -e`` cannot see the code of a
    command inside ``eval "$(…)"``)."""
    pairs: list[tuple[str, Any]] = [
        (_env_name("valid"), data["valid"]),
        (_env_name("vllm_version"), data["vllm_version"]),
        (_env_name("kernel_config_hash"), data["hash"]),
        (_env_name("hash"), data["hash"]),  # deprecated: KERNELCFG_KERNEL_CONFIG_HASH
        (_env_name("attention_hash"), data.get("attention_hash")),
    ]
    for part, prefix in _ENV_PARTS:
        for key, value in (data.get(part) or {}).items():
            if part == "kernel_config" and key == "ir_op_priority":
                pairs += [(_env_name(key, op), lst) for op, lst in value.items()]
            else:
                pairs.append((_env_name(*prefix, key), value))
    picked = ((data.get("selection") or {}).get("attention")) or {}
    if picked:
        pairs.append((_env_name("attention_backend"), picked.get("backend")))
        pairs.append((_env_name("attention_status"), picked.get("status")))
    pairs += _env_picks(data.get("selection") or {})
    pairs += _env_compile_cache(data.get("compile_cache"))
    errors = [p for p in data["problems"] if p["severity"] == "error"]
    pairs.append((_env_name("errors"), len(errors)))
    if exit_code is not None:
        pairs.append((_env_name("exit"), exit_code))
    return "".join(f"{name}={shlex.quote(_env_value(value))}\n" for name, value in pairs)


_PICKS = (
    ("attention", "attention"),
    ("moe_backend", "moe"),
    ("linear_backend", "linear"),
    ("sparse_indexer_topk_backend", "topk"),
)
"""The selections ``--format env`` names, with the word after ``KERNELCFG_PICKED_``."""


def _env_picks(selection: dict[str, Any]) -> list[tuple[str, Any]]:
    """What vLLM picks, per selection: ``KERNELCFG_PICKED_MOE_BACKEND``, ``…_KERNEL``,
    ``…_STATUS``; the linear kernel per kind of layer
    (``KERNELCFG_PICKED_LINEAR_KERNEL_FP8_BLOCK_128X128``); the top-k backend per band of
    decode rows (``KERNELCFG_PICKED_TOPK_BY_ROWS``, JSON)."""
    pairs: list[tuple[str, Any]] = []
    for key, word in _PICKS:
        picked = selection.get(key)
        if not picked:
            continue
        for part in ("backend", "kernel", "status"):
            pairs.append((_env_name("picked", word, part), picked.get(part)))
        for kind, kernel in (picked.get("layers") or {}).items():
            pairs.append((_env_name("picked", word, "kernel", _env_word(kind)), kernel))
        if picked.get("by_rows"):
            pairs.append((_env_name("picked", word, "by_rows"), picked["by_rows"]))
    return pairs


def _env_word(text: str) -> str:
    """``text`` as a part of a variable name: every other character an ``_``."""
    return "".join(c if c.isascii() and c.isalnum() else "_" for c in text)


def _env_compile_cache(found: dict[str, Any] | None) -> list[tuple[str, Any]]:
    """The compile-cache key (empty while a part is unknown), its env and config hashes,
    and why the key is unknown."""
    if not found:
        return []
    return [
        (_env_name("compile_cache_key"), found.get("key")),
        (_env_name("compile_cache_env_hash"), found.get("env_hash")),
        (_env_name("compile_cache_config_hash"), found.get("config_hash")),
        (_env_name("compile_cache_unknown"), "; ".join(found.get("unknown") or [])),
    ]


def _derived(source: str) -> bool:
    """A value start-up filled in itself, which the flags reproduce without naming it."""
    return source.endswith(" default") or source == "--enforce-eager"


def as_args(result: Resolution) -> list[str]:
    """Canonical vLLM flags that reproduce the resolved kernel config (and its hash)."""
    inputs = result.inputs
    if inputs is None or result.kernel_config is None:
        return []
    out: list[str] = []
    kernel = _kernel_given(result, inputs)
    if kernel:
        out += ["--kernel-config", json.dumps(kernel, separators=(",", ":"))]
    if inputs.optimization_level != 2:
        out.append(f"-O{inputs.optimization_level}")
    compilation = {
        key: value
        for key, value in (
            ("mode", inputs.compilation_mode),
            ("cudagraph_mode", inputs.cudagraph_mode),
            ("backend", inputs.compile_backend or None),
        )
        if value is not None
    }
    if compilation:
        out += ["--compilation-config", json.dumps(compilation, separators=(",", ":"))]
    for flag, on in (
        ("--enforce-eager", inputs.enforce_eager),
        ("--enable-fault-tolerance", inputs.enable_fault_tolerance),
        ("--enable-lora", inputs.enable_lora),
    ):
        if on:
            out.append(flag)
    return out + _parallel_args(result, inputs) + _attention_args(inputs)


def _attention_args(inputs: Inputs) -> list[str]:
    """The attention flags as given (they enter the attention hash)."""
    out: list[str] = []
    if inputs.attention_backend is not None:
        out += ["--attention-backend", inputs.attention_backend]
    if inputs.attention_config:
        out += ["--attention-config", json.dumps(inputs.attention_config, separators=(",", ":"))]
    return out


def _kernel_given(result: Resolution, inputs: Inputs) -> dict[str, Any]:
    """The kernel-config fields the flags must name: those not at their default, and
    not filled in by start-up itself."""
    facts = result.release.field_facts
    kernel: dict[str, Any] = {}
    for name, value in (result.kernel_config or {}).items():
        if name == "ir_op_priority":
            given = {
                op: lst
                for op, lst in value.items()
                if "flag" in result.sources.get(f"ir_op_priority.{op}", "")
                or op in inputs.kernel_config.get("ir_op_priority", {})
            }
            if given:
                kernel[name] = given
        elif value != facts[name].default and not _derived(result.sources.get(name, "")):
            kernel[name] = value
    return kernel


def _parallel_args(result: Resolution, inputs: Inputs) -> list[str]:
    out: list[str] = []
    a2a = result.parallel.get("all2all_backend")
    passthrough = result.release.constant("PASSTHROUGH_ALL2ALL_BACKEND")
    if a2a not in (None, DEFAULT_ALL2ALL_BACKEND, passthrough):
        out += ["--all2all-backend", str(a2a)]
    if inputs.enable_expert_parallel:
        out.append("--enable-expert-parallel")
    if inputs.tensor_parallel_size != 1:
        out += ["--tensor-parallel-size", str(inputs.tensor_parallel_size)]
    if inputs.data_parallel_size != 1:
        out += ["--data-parallel-size", str(inputs.data_parallel_size)]
    return out

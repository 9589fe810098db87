"""vLLM's flag language, read the way ``vllm serve`` reads it, into :class:`Inputs`.

The steps follow vLLM's ``FlexibleArgumentParser``: a ``--config`` YAML file is
expanded in front of the command line; in option names, ``_`` becomes ``-`` before
the first ``.``; ``-O3``/``-O=3``/``-O 3`` become ``--optimization-level``; dotted
keys (``--kernel-config.moe_backend=x``) are gathered into one JSON value per option,
appended last (so it replaces a whole-JSON value); then options are matched, by
unambiguous prefix too, as argparse does. Flags that do not bear on kernels are
noted and skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import Any, Literal

from kernelcfg import bounded, values
from kernelcfg.context import COMPILATION_MODES, CUDAGRAPH_MODES
from kernelcfg.errors import ArgumentError, EngineError, closest
from kernelcfg.inputs import Inputs
from kernelcfg.problems import Problem
from kernelcfg.releases import Release

__all__ = ["CONTEXT_OPTIONS", "ContextOptions", "parse", "split_version", "validate_kernel_config"]

Kind = Literal["bool", "value", "json", "list"]


@dataclass(frozen=True)
class _Option:
    """One option string and what it does."""

    dest: str
    kind: Kind
    flag_value: bool = True
    kernel: bool = True


@dataclass
class ContextOptions:
    """kernelcfg's own options that may appear among the flags (``--batch`` lines)."""

    device: str | None = None
    """``--device``: a preset name."""
    platform: str | None = None
    """``--platform``: cuda, rocm, xpu, cpu or tpu."""
    capability: str | None = None
    """``--capability``: CUDA compute capability."""
    gfx_arch: str | None = None
    """``--gfx-arch``: ROCm architecture."""
    vllm_version: str | None = None
    """``--vllm-version``."""
    architectures: list[str] = field(default_factory=list)
    """``--architecture`` (repeatable)."""
    env: dict[str, str] = field(default_factory=dict)
    """``--env KEY=VALUE`` (repeatable)."""
    quant_scheme: str | None = None
    """``--quant-scheme``: the model's quantisation scheme."""


CONTEXT_OPTIONS = {
    "--device": "device",
    "--platform": "platform",
    "--capability": "capability",
    "--gfx-arch": "gfx_arch",
    "--vllm-version": "vllm_version",
    "--architecture": "architectures",
    "--env": "env",
    "--quant-scheme": "quant_scheme",
}
"""kernelcfg's context options, by option string, to the ContextOptions field."""

_BOOL_FLAGS = {  # dest: long option name
    "enable_flashinfer_autotune": "enable-flashinfer-autotune",
    "enforce_eager": "enforce-eager",
    "enable_lora": "enable-lora",
    "enable_fault_tolerance": "enable-fault-tolerance",
    "enable_expert_parallel": "enable-expert-parallel",
    "monokernel": "monokernel",
}
_VALUE_FLAGS = {
    "moe_backend": "moe-backend",
    "linear_backend": "linear-backend",
    "sparse_indexer_topk_backend": "sparse-indexer-topk-backend",
    "all2all_backend": "all2all-backend",
    "data_parallel_size": "data-parallel-size",
    "tensor_parallel_size": "tensor-parallel-size",
    "optimization_level": "optimization-level",
    "model": "model",
    "hf_config_path": "hf-config-path",
    "quantization": "quantization",
}
_JSON_FLAGS = {
    "kernel_config": "kernel-config",
    "ir_op_priority": "ir-op-priority",
    "compilation_config": "compilation-config",
}
_SHORT = {
    "-tp": "--tensor-parallel-size",
    "-dp": "--data-parallel-size",
    "-ep": "--enable-expert-parallel",
    "-cc": "--compilation-config",
    "-q": "--quantization",
}
_NORMALISED = {"moe_backend", "linear_backend", "sparse_indexer_topk_backend"}
_KERNEL_FIELDS_AS_FLAGS = {"enable_flashinfer_autotune", "monokernel", *_NORMALISED}


@cache
def _options(release: Release) -> dict[str, _Option]:
    """Every long option string of this release's ``vllm serve`` that kernelcfg knows."""
    engine = set(release.data.get("engine_args", ()))
    fields = release.field_facts
    table: dict[str, _Option] = {}
    for dest in engine:
        table["--" + dest.replace("_", "-")] = _Option(dest, "value", kernel=False)

    def present(dest: str) -> bool:
        if dest in _KERNEL_FIELDS_AS_FLAGS and dest not in fields:
            return False
        return dest in engine or not engine

    for dest, name in _BOOL_FLAGS.items():
        if not present(dest):
            continue
        table["--" + name] = _Option(dest, "bool", True)
        table["--no-" + name] = _Option(dest, "bool", False)
        if name.startswith("enable-"):
            table["--disable-" + name[len("enable-") :]] = _Option(dest, "bool", False)
    for dest, name in _VALUE_FLAGS.items():
        if present(dest):
            table["--" + name] = _Option(dest, "value")
    for dest, name in _JSON_FLAGS.items():
        if present(dest):
            table["--" + name] = _Option(dest, "json")
    for name, dest in CONTEXT_OPTIONS.items():
        table[name] = _Option(dest, "list" if dest in ("architectures", "env") else "value")
    return table


class _Token(str):
    """A word that came from a config file, or a gathered dotted value; plain words
    of the command line stay plain ``str`` (read with :func:`_origin`, :func:`_parsed`)."""

    origin: str
    parsed: Any


def _token(text: str, origin: str = "flag", parsed: Any = None) -> str:
    if origin == "flag" and parsed is None:
        return text
    tok = _Token(text)
    tok.origin = origin
    tok.parsed = parsed
    return tok


def _origin(word: str) -> str:
    return word.origin if type(word) is _Token else "flag"


def _parsed(word: str) -> Any:
    return word.parsed if type(word) is _Token else None


def split_version(argv: Sequence[str]) -> str | None:
    """The ``--vllm-version`` a line asks for (the last one), read before anything else."""
    found = None
    for i, arg in enumerate(argv):
        if arg.startswith("--vllm-version="):
            found = arg.split("=", 1)[1]
        elif arg == "--vllm-version" and i + 1 < len(argv):
            found = argv[i + 1]
    return found


def _load_yaml(path_text: str, notes: list[Problem]) -> list[str]:
    """``--config FILE``'s keys as options, the way vLLM's parser turns them."""
    if path_text.rsplit(".", 1)[-1] not in ("yaml", "yml"):
        raise ArgumentError(
            f"--config: config file must be a .yaml or .yml file, got {path_text!r}",
            field="config",
        )
    path = Path(path_text)
    data = bounded.loads_yaml(bounded.read_text(path_text, "--config"), f"--config {path.name}")
    if data is None:
        return []
    if not isinstance(data, dict):
        raise ArgumentError(
            f"--config: {path_text!r} must hold a mapping of option names to values",
            field="config",
        )
    origin = f"config file {path.name}"
    out: list[str] = []
    for key, value in data.items():
        name = f"--{key}"
        if isinstance(value, bool):
            if value:
                out.append(_token(name, origin))
            else:
                notes.append(
                    Problem(
                        "warning",
                        "yaml-false-dropped",
                        str(key),
                        f"{path.name}: '{key}: false' is dropped by vllm serve (it has no "
                        f"--no-{key} at the top level); the setting keeps its default",
                    )
                )
        elif isinstance(value, list):
            if value:
                out.append(_token(name, origin))
                out.extend(_token(str(v), origin) for v in value)
        elif isinstance(value, dict):
            text = _yaml_json(value, path.name, key)
            out.extend([_token(name, origin), _token(text, origin)])
        else:
            out.extend([_token(name, origin), _token(_yaml_scalar(value, path.name, key), origin)])
    return out


def _yaml_scalar(value: Any, file: str, key: object) -> str:
    """A YAML scalar as vLLM passes it on (``str()``); binary and sets are refused."""
    if isinstance(value, bytes | set):
        raise ArgumentError(
            f"--config {file}: {key!s} holds a YAML {type(value).__name__}, which vllm serve "
            "cannot pass on as an option value",
            field=str(key),
        )
    try:
        return str(value)
    except ValueError as exc:  # an integer beyond Python's digit limit
        raise ArgumentError(
            f"--config {file}: {key!s}: {bounded.one_line(str(exc))}", field=str(key)
        ) from None


def _yaml_json(value: dict[Any, Any], file: str, key: object) -> str:
    """A YAML mapping as the JSON text vLLM makes of it; values JSON cannot hold refused."""
    try:
        return json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ArgumentError(
            f"--config {file}: {key!s} holds a value JSON cannot carry "
            f"({bounded.one_line(str(exc))}); vLLM itself would crash on it",
            field=str(key),
        ) from None


def _expand_config(tokens: list[str], notes: list[Problem]) -> list[str]:
    for t in tokens:
        if t.startswith("--config="):
            notes.append(
                Problem(
                    "warning",
                    "config-equals-ignored",
                    "config",
                    f"{t!r}: vLLM only reads '--config FILE' (with a space); with '=' the "
                    "file is silently ignored, and so kernelcfg ignores it",
                )
            )
    if "--config" not in tokens:
        return tokens
    if tokens.count("--config") > 1:
        raise ArgumentError("--config: more than one config file specified", field="config")
    idx = tokens.index("--config")
    if idx + 1 >= len(tokens):
        raise ArgumentError("--config: no config file specified", field="config")
    loaded = _load_yaml(tokens[idx + 1], notes)
    return loaded + tokens[:idx] + tokens[idx + 2 :]


_NUMBER = re.compile(r"-\d+(\.\d+)?")


def _dash_name(arg: str) -> str:
    """``--a_b.c_d=v`` to ``--a-b.c_d=v``: only the name before the first ``.``."""
    key, eq, value = arg.partition("=")
    head, dot, tail = key.partition(".")
    return head.replace("_", "-") + dot + tail + eq + value


def _rewrite(tokens: list[str]) -> list[str]:
    """``_`` to ``-`` before the first ``.`` of ``--`` options; the ``-O`` forms."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        arg = tokens[i]
        if arg.startswith("--"):
            out.append(_token(_dash_name(arg), _origin(arg)) if "_" in arg else arg)
        elif arg.startswith("-O") and arg != "-O":
            value = arg[3:] if arg[2] == "=" else arg[2:]
            origin = _origin(arg)
            out.extend([_token("--optimization-level", origin), _token(value, origin)])
        elif arg == "-O" and i + 1 < len(tokens) and tokens[i + 1] in ("0", "1", "2", "3"):
            out.append(_token("--optimization-level", _origin(arg)))
        elif arg == "-O":
            raise ArgumentError(
                "unrecognized arguments: -O"
                + (f" {tokens[i + 1]}" if i + 1 < len(tokens) else "")
                + " (with a space, -O takes only 0, 1, 2 or 3; write -O3 or "
                "--optimization-level 3)",
                field="optimization_level",
            )
        else:
            out.append(arg)
        i += 1
    return out


def _human_int(text: str) -> int:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", text.strip())
    if not match:
        return int(text)
    number, suffix = match.groups()
    power = "kmgt".index(suffix.lower()) + 1
    if suffix.islower():
        return int(float(number) * int(1000**power))
    if "." in number:
        raise ValueError(text)
    return int(number) * int(1024**power)


def _dotted_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    except (RecursionError, ValueError) as exc:
        reason = "nested too deep" if isinstance(exc, RecursionError) else str(exc)
        raise ArgumentError(
            f"dotted value {bounded.shown(text)}: unusable JSON ({bounded.one_line(reason)})"
        ) from None
    try:
        return _human_int(text)
    except (ValueError, OverflowError):
        return text


def _merge(into: dict[str, Any], new: dict[str, Any], path: str, dupes: list[str]) -> None:
    for key, value in new.items():
        here = f"{path}.{key}"
        if key in into and isinstance(into[key], dict) and isinstance(value, dict):
            _merge(into[key], value, here, dupes)
        elif key in into and isinstance(into[key], list) and isinstance(value, list):
            into[key] = into[key] + value
        else:
            if key in into:
                dupes.append(here)
            into[key] = value


def _warn_duplicates(dupes: list[str], notes: list[Problem]) -> None:
    """vLLM's one-line warning about keys given more than once."""
    if dupes:
        notes.append(
            Problem(
                "warning",
                "duplicate-keys",
                None,
                f"Found duplicate keys {', '.join(dict.fromkeys(dupes))}: the last value wins",
            )
        )


def _gather_dotted(tokens: list[str], notes: list[Problem]) -> list[str]:
    """Gather ``--opt.a.b=v`` into one JSON value per option, placed last."""
    if not any("." in t for t in tokens):  # the common case: only repeats to warn about
        names = [t.partition("=")[0] for t in tokens if t.startswith("--")]
        if len(set(names)) != len(names):
            seen_once: set[str] = set()
            repeated: list[str] = []
            for name in names:
                if name in seen_once:
                    repeated.append(name)
                seen_once.add(name)
            _warn_duplicates(repeated, notes)
        return tokens
    gathered: dict[str, dict[str, Any]] = {}
    origins: dict[str, str] = {}
    dupes: list[str] = []
    seen: set[str] = set()
    out: list[str] = []
    i = 0
    while i < len(tokens):
        arg = tokens[i]
        if arg.startswith("--") and "." not in arg:
            name = arg.split("=", 1)[0]
            if name in seen:
                dupes.append(name)
            seen.add(name)
        if "." in arg and arg.startswith("-") and not _NUMBER.fullmatch(arg):
            if "=" in arg:
                key_path, value_text = arg.split("=", 1)
                if "." not in key_path:
                    out.append(arg)
                    i += 1
                    continue
            else:
                if i + 1 >= len(tokens):
                    raise ArgumentError(f"argument {arg}: expected one argument", field=arg)
                key_path, value_text = arg, str(tokens[i + 1])
                i += 1
            value: Any
            if key_path.endswith("+"):
                key_path = key_path[:-1]
                value = value_text.split(",")
            else:
                value = _dotted_value(value_text)
            key, *keys = key_path.split(".")
            nested: dict[str, Any] = {}
            cursor = nested
            for k in keys[:-1]:
                cursor[k] = {}
                cursor = cursor[k]
            cursor[keys[-1]] = value
            _merge(gathered.setdefault(key, {}), nested, key, dupes)
            origins.setdefault(key, _origin(arg))
        else:
            out.append(arg)
        i += 1
    _warn_duplicates(dupes, notes)
    for key, value in gathered.items():
        out.append(_token(key, origins[key]))
        out.append(_token(json.dumps(value), origins[key], parsed=value))
    return out


def _match(arg: str, table: Mapping[str, _Option]) -> str | None:
    """The option string ``arg`` names, exactly or by unambiguous prefix."""
    if arg in table:
        return arg
    if arg in _SHORT:
        return _SHORT[arg]
    if not arg.startswith("--"):
        return None
    hits = [name for name in table if name.startswith(arg)]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise ArgumentError(
            f"ambiguous option: {arg} could match {', '.join(sorted(hits)[:6])}", field=arg
        )
    return None


def _choice(release: Release, dest: str, flag: str, value: str) -> str:
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
        elsewhere = _elsewhere(release, repr(normalised), lambda r: normalised in r.choices(dest))
        if elsewhere:
            extra = f" ({elsewhere})"
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
        raise ArgumentError(
            f"-O/--optimization-level: {value!r} is not an optimisation level; allowed: "
            "0, 1, 2, 3 (vLLM accepts it while parsing and fails building its config)",
            field="optimization_level",
        )
    return level


def _json(flag: str, token: str) -> Any:
    parsed = _parsed(token)
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
        reason = "nested too deep" if isinstance(exc, RecursionError) else str(exc)
        raise ArgumentError(
            f"argument {flag}: unusable JSON ({bounded.one_line(reason)})", field=flag
        ) from None
    if not isinstance(value, dict):
        raise ArgumentError(
            f"argument {flag}: expected a JSON object, got {bounded.shown(str(token))}",
            field=flag,
        )
    bounded.check_depth(value, f"argument {flag}")
    return value


def _pydantic_errors(exc: ValueError) -> list[Any] | None:
    """The errors of a pydantic ``ValidationError`` (a ``ValueError``), else ``None``."""
    errors = getattr(exc, "errors", None)
    return errors(include_url=False) if callable(errors) else None


def _crash(flag: str, exc: TypeError) -> ArgumentError:
    return ArgumentError(
        f"argument {flag}: a value has the wrong shape ({exc}); vLLM itself would crash "
        "here with a TypeError",
        field=flag,
    )


def _validated(flag: str, check: Callable[[], Any], explain: Callable[[Any], str]) -> Any:
    """Run a pydantic-backed check; its refusal as one ``ArgumentError`` line."""
    try:
        return check()
    except TypeError as exc:
        raise _crash(flag, exc) from None
    except ValueError as exc:
        errors = _pydantic_errors(exc)
        if errors is None:
            raise
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        loc = ".".join(str(p) for p in errors[0]["loc"])
        raise ArgumentError(f"argument {flag}: {explain(errors[0])}{more}", field=loc) from None


def validate_kernel_config(release: Release, value: dict[str, Any], flag: str) -> dict[str, Any]:
    """A ``--kernel-config`` mapping's values; one ``ArgumentError`` line when invalid.

    vLLM validates every ``--kernel-config`` occurrence while parsing; the Python API's
    raw mappings go through here too.
    """

    def explain(err: Any) -> str:
        loc = ".".join(str(p) for p in err["loc"])
        hint = ""
        if err["type"] == "unexpected_keyword_argument":
            known = [f.name for f in release.kernel_fields]
            suggestion = closest(loc.replace("-", "_"), known)
            hint = f"; fields: {', '.join(known)}" + (
                f" (did you mean {suggestion!r}?)" if suggestion else ""
            )
            other = _elsewhere(release, repr(loc), lambda r: loc in r.field_facts)
            if other:
                hint += f"; {other}"
        elif err["type"] == "literal_error" and err["loc"]:
            facts = release.field_facts.get(err["loc"][0])
            if facts is not None and facts.choices is not None:
                suggestion = closest(str(err["input"]), release.choices(facts.choices))
                if suggestion:
                    hint = f" (did you mean {suggestion!r}?)"
        return f"{loc}: {err['msg']}, got {err['input']!r}{hint}"

    result: dict[str, Any] = _validated(
        flag, lambda: values.validate_kernel(release, value), explain
    )
    return result


def _elsewhere(release: Release, what: str, has: Callable[[Release], bool]) -> str | None:
    """Which other releases have something this one lacks, said as a fix."""
    from kernelcfg import releases

    if has(release):
        return None
    having = releases.versions_where(lambda r: r.version != release.version and has(r))
    if not having:
        return None
    return f"{what} exists in vLLM {', '.join(having)}; you are resolving for {release.version}"


def _ir_priority(release: Release, value: dict[str, Any], flag: str) -> dict[str, list[str]]:
    def explain(err: Any) -> str:
        loc = ".".join(str(p) for p in err["loc"])
        hint = (
            f"; ops: {', '.join(release.ir_ops)}"
            if err["type"] == "unexpected_keyword_argument"
            else ""
        )
        return f"{loc}: {err['msg'] or 'every entry must be a string'}{hint}"

    result: dict[str, list[str]] = _validated(
        flag, lambda: values.validate_ir(release, value), explain
    )
    return result


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
    mode = value.get("mode")
    if mode is not None:
        if isinstance(mode, str):
            if mode.upper() not in COMPILATION_MODES:
                raise ArgumentError(
                    f"argument {flag}: Invalid compilation mode: {mode}. Valid modes are: "
                    f"{', '.join(COMPILATION_MODES)}",
                    field="compilation_config.mode",
                )
            mode = mode.upper()
        elif isinstance(mode, int) and not isinstance(mode, bool) and 0 <= mode <= 3:
            mode = COMPILATION_MODES[mode]
        else:
            raise ArgumentError(
                f"argument {flag}: mode: Input should be 0, 1, 2 or 3, got {mode!r}",
                field="compilation_config.mode",
            )
    cudagraph = value.get("cudagraph_mode")
    if cudagraph is not None:
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
            cudagraph = cudagraph.upper()
        elif (
            isinstance(cudagraph, int)
            and not isinstance(cudagraph, bool)
            and cudagraph in (0, 1, 2)
        ):
            cudagraph = CUDAGRAPH_MODES[cudagraph]
        else:
            raise ArgumentError(
                f"argument {flag}: cudagraph_mode: Input should be 0, 1, 2, (2, 0) or (2, 1), "
                f"got {cudagraph!r}",
                field="compilation_config.cudagraph_mode",
            )
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


def _iter_values(tokens: list[str], i: int) -> Iterator[str]:
    while i < len(tokens) and not tokens[i].startswith("-"):
        yield tokens[i]
        i += 1


def parse(
    argv: Sequence[str],
    release: Release,
    *,
    env: Mapping[str, str] | None = None,
    context: ContextOptions | None = None,
) -> tuple[Inputs, ContextOptions]:
    """Read ``argv`` (vLLM flags, optionally ``vllm serve MODEL …``) into inputs."""
    inputs = Inputs(env=dict(env) if env is not None else {})
    ctx = context or ContextOptions()
    notes = inputs.notes
    prefix, serve_args = _split_serve(list(argv))
    if serve_args is not None:
        inputs.model = _serve_model(serve_args, notes)
    tokens = [*prefix, *(serve_args or ())]
    if any(t.startswith("--config") for t in tokens):
        tokens = _expand_config(tokens, notes)
    if any("_" in t or t.startswith("-O") for t in tokens):
        tokens = _rewrite(tokens)
    tokens = _gather_dotted(tokens, notes)
    table = _options(release)

    i = 0
    hf_config_path: str | None = None
    ignored: list[str] = []
    while i < len(tokens):
        tok = tokens[i]
        arg = str(tok)
        if not arg.startswith("-") or _NUMBER.fullmatch(arg):
            if inputs.model is None and not ignored:
                inputs.model = arg
            else:
                ignored.append(arg)
            i += 1
            continue
        name, eq, inline = arg.partition("=")
        matched = _match(name, table)
        if matched is None:
            elsewhere = _elsewhere(release, name, partial(_is_kernel_flag, name=name))
            if elsewhere:
                raise ArgumentError(f"unrecognized option {name}: {elsewhere}", field=name)
            known_kernel = [o for o, spec in table.items() if spec.kernel]
            hint = closest(name, known_kernel)
            if hint is not None and _similar(name, hint):
                raise ArgumentError(
                    f"unrecognized option {name}; did you mean {hint!r}?", field=name
                )
            ignored.append(name)
            i += 1
            if not eq:
                i += sum(1 for _ in _iter_values(tokens, i))
            continue
        spec = table[matched]
        flag = matched
        if spec.kind == "bool":
            if eq:
                raise ArgumentError(
                    f"argument {flag}: ignored explicit argument {inline!r}", field=flag
                )
            setattr(inputs, spec.dest, spec.flag_value)
            inputs.sources[spec.dest] = _origin(tok)
            i += 1
            continue
        if eq:
            value_tok = _token(inline, _origin(tok))
            i += 1
        else:
            if i + 1 >= len(tokens) or (
                tokens[i + 1].startswith("-")
                and _parsed(tokens[i + 1]) is None
                and not _NUMBER.fullmatch(tokens[i + 1])
            ):
                raise ArgumentError(f"argument {flag}: expected one argument", field=flag)
            value_tok = tokens[i + 1]
            i += 2
        if not spec.kernel:
            ignored.append(flag)
            continue
        _apply(release, inputs, ctx, spec, flag, value_tok)
        if spec.dest == "hf_config_path":
            hf_config_path = str(value_tok)

    if ignored:
        notes.append(
            Problem(
                "info",
                "ignored-flags",
                None,
                "not kernel-related, ignored: " + " ".join(dict.fromkeys(ignored)),
            )
        )
    _read_model_config(inputs, hf_config_path)
    return inputs, ctx


def _is_kernel_flag(release: Release, *, name: str) -> bool:
    spec = _options(release).get(name)
    return spec is not None and spec.kernel


def _split_serve(args: list[str]) -> tuple[list[str], list[str] | None]:
    """kernelcfg's own flags, and what follows ``[vllm] serve`` (``None``: no serve)."""
    for idx, arg in enumerate(args):
        if arg == "serve" and (idx == 0 or args[idx - 1] == "vllm"):
            head = idx - 1 if idx and args[idx - 1] == "vllm" else idx
            return args[:head], args[idx + 1 :]
    return args, None


def _serve_model(args: list[str], notes: list[Problem]) -> str | None:
    """Take the model off a ``serve`` line: the positional, or ``--model`` (moved)."""
    if args and not args[0].startswith("-"):
        return args.pop(0)
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name != "--model":
            continue
        if not eq:
            if i + 1 >= len(args):
                return None
            value = args[i + 1]
        del args[i : i + (1 if eq else 2)]
        notes.append(
            Problem(
                "info",
                "model-option",
                "model",
                "With vllm serve the model goes first, as a positional argument; "
                "--model counts as it",
            )
        )
        return value
    return None


def _similar(given: str, known: str) -> bool:
    import difflib

    return difflib.SequenceMatcher(None, given, known).ratio() >= 0.85


def _apply(
    release: Release,
    inputs: Inputs,
    ctx: ContextOptions,
    spec: _Option,
    flag: str,
    tok: str,
) -> None:
    dest, value = spec.dest, str(tok)
    if flag in CONTEXT_OPTIONS:
        if dest == "architectures":
            ctx.architectures.append(value)
        elif dest == "env":
            key, sep, val = value.partition("=")
            if not sep or not key:
                raise ArgumentError(f"--env: expected KEY=VALUE, got {value!r}", field="env")
            ctx.env[key] = val
        elif dest == "quant_scheme":
            from kernelcfg.constraints import SCHEMES

            if value not in SCHEMES:
                hint = closest(value, SCHEMES)
                raise ArgumentError(
                    f"--quant-scheme: unknown scheme {value!r}; allowed: {', '.join(SCHEMES)}"
                    + (f" (did you mean {hint!r}?)" if hint else ""),
                    field="quant_scheme",
                )
            ctx.quant_scheme = value
        else:
            setattr(ctx, dest, value)
        return
    inputs.sources[dest] = _origin(tok)
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
    elif dest == "quantization":
        inputs.quantization = None if value in ("", "None") else value
    elif dest in ("model", "hf_config_path"):
        if dest == "model":
            inputs.model = value
    elif dest == "kernel_config":
        mapping = _json(flag, tok)
        inputs.kernel_values = validate_kernel_config(release, mapping, flag)
        inputs.kernel_config = mapping
        for key in mapping:
            inputs.sources[f"kernel_config.{key}"] = (
                "--kernel-config" if _origin(tok) == "flag" else _origin(tok)
            )
    elif dest == "ir_op_priority":
        inputs.ir_op_priority = _ir_priority(release, _json(flag, tok), flag)
    elif dest == "compilation_config":
        _compilation(release, _json(flag, tok), flag, inputs)


def _read_model_config(inputs: Inputs, hf_config_path: str | None) -> None:
    """Architectures and quantisation from a local ``config.json``; hub ids are noted."""
    for candidate in (hf_config_path, inputs.model):
        if not candidate:
            continue
        config_file = _local_config(candidate)
        if config_file is None:
            _note_not_local(inputs, candidate, given=candidate is hf_config_path)
            continue
        data = bounded.loads_json(
            bounded.read_text(config_file, "config.json"),
            f"config.json {bounded.shown(config_file)}",
        )
        if not isinstance(data, dict):
            raise ArgumentError(
                f"{bounded.shown(config_file)} holds a JSON {type(data).__name__}, not the "
                "mapping a model's config.json is; vLLM cannot load it either",
                field="hf_config_path",
            )
        _apply_model_config(inputs, data, config_file)
        return


def _local_config(candidate: str) -> str | None:
    """The ``config.json`` a model path names, or ``None`` when it names none here."""
    if bounded.file_problem(candidate) is None:
        return candidate if Path(candidate).name == "config.json" else None
    inside = str(Path(candidate) / "config.json")
    return inside if bounded.file_problem(inside) is None else None


def _note_not_local(inputs: Inputs, candidate: str, *, given: bool) -> None:
    problem = bounded.file_problem(candidate)
    if given or (problem is not None and _looks_like_path(candidate)):
        reason = problem or "it holds no config.json"
        inputs.notes.append(
            Problem(
                "warning",
                "model-config-unreadable",
                "hf_config_path" if given else "model",
                f"{bounded.shown(candidate)}: {reason}; kernelcfg cannot read the model's "
                "architectures or quantisation from it (vLLM would fail to load it)",
            )
        )
        return
    inputs.notes.append(
        Problem(
            "info",
            "model-not-local",
            "model",
            f"{bounded.shown(candidate)} is not a local folder; kernelcfg never downloads, so "
            "its architectures are unknown unless given with --architecture",
        )
    )


def _looks_like_path(text: str) -> bool:
    return text.startswith(("/", "./", "../", "~")) or text.count("/") > 1


def _apply_model_config(inputs: Inputs, data: dict[str, Any], config_file: str) -> None:
    archs = data.get("architectures")
    if isinstance(archs, list) and inputs.architectures is None:
        inputs.architectures = [str(a) for a in archs]
        inputs.sources["architectures"] = config_file
    quant = data.get("quantization_config")
    if isinstance(quant, dict) and inputs.quantization is None:
        method = quant.get("quant_method")
        if isinstance(method, str):
            inputs.quantization = method
    if inputs.quant_scheme is None and (isinstance(quant, dict) or not inputs.quantization):
        from kernelcfg.constraints import scheme_from_model

        inputs.quant_scheme = scheme_from_model(quant if isinstance(quant, dict) else None)
        if inputs.quant_scheme:
            inputs.sources["quant_scheme"] = config_file
